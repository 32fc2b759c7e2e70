/**
 * Why this file: the agent notices what happens in the project. Domain events (src/core/events.ts)
 * become signals (src/domain/agent/signals.ts decides action, severity and reason); a signal to
 * `investigate` queues a scheduler job that asks the runner (`services.agentRunner`) with the
 * matching platform skill, records the conversation, stores the answer on the signal and posts an
 * alert to the alert channel, subject to `proactive_alerts`, `daily_alert_cap` (per UTC day) and the
 * budget stage. It also publishes the two events nobody else can: `error.spike` (a recurring spike
 * detector over recent error groups) and `release.regressed` (a recurring watcher over release
 * health verdicts, once per release).
 */
import { randomUUID } from 'node:crypto';
import type { EventBus, DomainEvent } from './events.js';
import type { Scheduler } from './scheduler.js';
import type { AgentStateService } from './agent-state.js';
import type { AgentRunner } from '../domain/agent/contract.js';
import { alertWanted, classify, isSpike, SPIKE, subjectOf, type SignalEvent } from '../domain/agent/signals.js';
import { mayAlert, mayInvestigate } from '../domain/agent/budget.js';
import { platformSkill } from '../domain/agent/skills.js';
import type { SignalRow } from '../storage/agent-repo.js';

export const INVESTIGATE_JOB = 'agent.investigate';
export const SPIKE_JOB = 'agent.spikes';
export const RELEASE_JOB = 'agent.releases';
/** Investigations wait this long so that related events (an incident after its monitor, a spike after a new group) attach first. */
export const INVESTIGATE_DELAY_MS = 30_000;
const SPIKE_EVERY_MS = 60_000;
const INVESTIGATION_TIMEOUT_MS = 100_000;
const RELEASE_EVERY_MS = 5 * 60_000;
const RECENT_MS = 24 * 3_600_000;
const MIN = 60_000;

/** A regressed release the watcher found (from the releases operations, handed in by the caller). */
export interface RegressedRelease {
  releaseId: string;
  service: string;
  environment: string;
  version: string;
  reasons: string[];
}

export interface AgentSignalsDeps {
  state: AgentStateService;
  events: EventBus;
  scheduler: Scheduler;
  atomic: <T>(fn: () => T) => T;
  runner: () => AgentRunner | undefined;
  /** Current releases of a project whose health verdict is `regressed`. */
  regressedReleases: (projectId: string, orgId: string, now: number) => Promise<RegressedRelease[]>;
  baseUrl: string;
  now: () => number;
}

const SIGNAL_EVENTS = ['error.group.created', 'error.group.reopened', 'error.spike', 'release.regressed', 'monitor.down', 'incident.opened', 'feedback.received'] as const;

export function createAgentSignals(d: AgentSignalsDeps) {
  const repo = d.state.repo;

  /** Posts the alert for a signal if settings, budget and today's cap allow; returns what happened. */
  const alert = (sig: SignalRow, answer: string | null, now: number): string => {
    const settings = repo.settings(sig.project_id);
    if (!alertWanted(settings.proactive_alerts, sig.severity)) return `not_sent:proactive_alerts_${settings.proactive_alerts}`;
    const usage = d.state.usage(sig.project_id, now);
    if (!mayAlert(usage.stage)) return 'not_sent:budget_exhausted';
    if (usage.alerts_posted >= settings.daily_alert_cap) return 'not_sent:daily_alert_cap';
    const ch = d.state.alertChannel(sig.project_id);
    if (!ch) return 'not_sent:no_channel';
    d.state.sendToChannel(
      sig.project_id,
      ch.id,
      {
        title: `[${sig.severity}] ${sig.title}`,
        text: answer ? `${sig.reason}\n\n${answer}` : sig.reason,
        url: `${d.baseUrl}/v1/projects/${sig.project_id}/agent/signals`,
        data: { signal_id: sig.id, source: sig.source, subject: sig.subject, action: sig.action, severity: sig.severity, reason: sig.reason, answer },
      },
      now,
    );
    repo.addUsage(sig.project_id, Math.floor(now / 86_400_000), { alerts: 1 });
    return 'posted';
  };

  /** Creates the signal for an event (after the event's own write committed). */
  const onEvent = (projectId: string, e: SignalEvent): SignalRow => {
    const now = d.now();
    return d.atomic(() => {
      const earlier = repo.latestSignalAbout(projectId, subjectOf(e), now - RECENT_MS);
      const draft = classify(e, { earlier: earlier ? { id: earlier.id, action: earlier.action } : null });
      const investigate = draft.action === 'investigate' && mayInvestigate(d.state.stage(projectId, now));
      const status = draft.action === 'investigate' ? (investigate ? 'queued' : 'not_investigated:budget') : draft.action === 'attach_to_existing' ? 'attached' : 'ignored';
      const sig = repo.addSignal({ id: randomUUID(), project_id: projectId, ...draft, status, created_at: now });
      if (investigate) d.scheduler.enqueue(INVESTIGATE_JOB, sig.id, { projectId, signalId: sig.id }, now + INVESTIGATE_DELAY_MS, { maxAttempts: 3 });
      else if (draft.action === 'investigate') repo.updateSignal(projectId, sig.id, { alert: alert(sig, null, now) }, now);
      return sig;
    });
  };

  const toSignalEvent = (e: DomainEvent): SignalEvent | null => {
    switch (e.type) {
      case 'error.group.created':
      case 'error.group.reopened':
        return { type: e.type, groupId: e.groupId, shortId: e.shortId, title: e.title, level: e.level, environment: e.environment };
      case 'error.spike':
        return { type: e.type, groupId: e.groupId, shortId: e.shortId, title: e.title, count: e.count, baseline: e.baseline, windowMinutes: e.windowMinutes };
      case 'release.regressed':
        return { type: e.type, releaseId: e.releaseId, service: e.service, environment: e.environment, version: e.version, reasons: e.reasons };
      case 'monitor.down':
        return { type: e.type, monitorId: e.monitorId, monitorName: e.monitorName, reason: e.reason, incidentId: e.incidentId };
      case 'incident.opened':
        return { type: e.type, incidentId: e.incidentId, displayId: e.displayId, title: e.title };
      case 'feedback.received':
        return { type: e.type, feedbackId: e.feedbackId, message: e.message, errorGroupId: e.errorGroupId };
      default:
        return null;
    }
  };

  /** One investigation: the runner with the signal's skill, a conversation, the answer, the alert. */
  const investigate = async (projectId: string, signalId: string) => {
    const sig = repo.signal(projectId, signalId);
    if (!sig || sig.status !== 'queued') return;
    const started = d.now();
    if (!mayInvestigate(d.state.stage(projectId, started))) {
      return { commit: () => repo.updateSignal(projectId, sig.id, { status: 'not_investigated:budget', alert: alert(sig, null, started) }, started) };
    }
    const convId =
      sig.conversation_id ??
      d.state.recordConversation(projectId, { kind: 'investigation', title: sig.title, signal_id: sig.id, status: 'running', answered_by: 'deterministic', started_at: started });
    if (!sig.conversation_id) repo.updateSignal(projectId, sig.id, { conversation_id: convId }, started);
    const skill = sig.skill ? platformSkill(sig.skill) : undefined;
    const runner = d.runner();
    let text: string;
    let answeredBy = 'deterministic';
    let status: 'answered' | 'failed' = 'answered';
    if (!runner) {
      text = `No agent runner is configured. ${sig.reason}${skill ? ` Follow the \`${skill.name}\` skill to investigate.` : ''}`;
    } else {
      try {
        const r = await runner.run({
          projectId,
          prompt: `Investigate this signal and answer for the team's alert channel.\nSignal: ${sig.title}\nSeverity: ${sig.severity}\nWhy: ${sig.reason}\nSubject: ${sig.subject}`,
          kind: 'investigation',
          scopes: ['read'],
          instructions: skill?.content,
          // Give up before the scheduler's 2-minute job lease ends, so a second runner never starts the same investigation.
          signal: AbortSignal.timeout(INVESTIGATION_TIMEOUT_MS),
          now: started,
        });
        text = r.text;
        answeredBy = r.answered_by;
      } catch (err) {
        status = 'failed';
        text = `The investigation failed (${err instanceof Error ? err.message.slice(0, 200) : 'unknown error'}).`;
      }
    }
    return {
      commit: () => {
        const now = d.now();
        repo.finishConversation(projectId, convId, status, now, answeredBy);
        repo.updateSignal(projectId, sig.id, { status, answer: text, alert: alert(sig, status === 'answered' ? text : null, now) }, now);
      },
    };
  };

  /** Spike detection over groups seen in the window (every project); publishes after commit. */
  const detectSpikes = async () => {
    const now = d.now();
    const from = now - SPIKE.windowMinutes * MIN;
    const found: DomainEvent[] = [];
    for (const g of repo.groupsSeenSince(from)) {
      const count = await repo.groupEventCount(g.project_id, g.id, from, now + MIN);
      if (count < SPIKE.minCount) continue;
      const before = await repo.groupEventCount(g.project_id, g.id, from - SPIKE.baselineHours * 3_600_000, from);
      const v = isSpike(count, before);
      if (!v.spike) continue;
      const last = repo.watchMark(g.project_id, `spike:${g.id}`);
      if (last !== null && now - last < SPIKE.cooldownMinutes * MIN) continue;
      found.push({ type: 'error.spike', projectId: g.project_id, at: now, groupId: g.id, shortId: g.short_id, title: g.title, count, baseline: v.baseline, windowMinutes: SPIKE.windowMinutes });
    }
    return {
      commit: () => {
        for (const e of found) if (e.type === 'error.spike') repo.setWatchMark(e.projectId, `spike:${e.groupId}`, now);
        return () => found.forEach((e) => d.events.publish(e));
      },
      nextRunAt: now + SPIKE_EVERY_MS,
    };
  };

  /** Publishes `release.regressed` once per release whose current verdict is `regressed`. */
  const watchReleases = async () => {
    const now = d.now();
    const found: DomainEvent[] = [];
    for (const p of repo.projects()) {
      let regressed: RegressedRelease[];
      try {
        regressed = await d.regressedReleases(p.id, p.org_id, now);
      } catch (err) {
        d.scheduler.onError(err, { kind: RELEASE_JOB, key: p.id } as never); // one project's failure does not stop the others
        continue;
      }
      for (const r of regressed) {
        if (repo.watchMark(p.id, `release:${r.releaseId}`) !== null) continue;
        found.push({ type: 'release.regressed', projectId: p.id, at: now, ...r });
      }
    }
    return {
      commit: () => {
        for (const e of found) if (e.type === 'release.regressed') repo.setWatchMark(e.projectId, `release:${e.releaseId}`, now);
        return () => found.forEach((e) => d.events.publish(e));
      },
      nextRunAt: now + RELEASE_EVERY_MS,
    };
  };

  return {
    onEvent,
    register() {
      for (const type of SIGNAL_EVENTS) {
        d.events.subscribe(type, (e: DomainEvent) => {
          const se = toSignalEvent(e);
          if (se) onEvent(e.projectId, se);
        });
      }
      d.scheduler.register(INVESTIGATE_JOB, (job) => {
        const { projectId, signalId } = job.payload as { projectId: string; signalId: string };
        return investigate(projectId, signalId);
      });
      d.scheduler.register(SPIKE_JOB, detectSpikes);
      d.scheduler.register(RELEASE_JOB, watchReleases);
      const now = d.now();
      d.scheduler.ensure(SPIKE_JOB, 'all', {}, now + SPIKE_EVERY_MS);
      d.scheduler.ensure(RELEASE_JOB, 'all', {}, now + RELEASE_EVERY_MS);
    },
  };
}
