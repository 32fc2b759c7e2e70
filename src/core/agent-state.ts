/**
 * Why this file: the in-project agent's state as one service (`services.agentState`, the
 * `AgentState` of src/domain/agent/contract.ts plus what the `agent.*` operations need): settings,
 * memory, skills, daily usage and budget stage, conversations, and outbound channels with a
 * delivery log and retries. Signals (what the agent makes of project events) live in
 * src/core/agent-signals.ts and use this service. Rules are pure functions in src/domain/agent/.
 */
import { randomBytes } from 'node:crypto';
import { ConflictError, NotFoundError, UnprocessableError, ValidationError } from './errors.js';
import type { Scheduler } from './scheduler.js';
import { signatureHeader, SIGNATURE_HEADER, type WebhookSender } from './webhooks.js';
import type { AgentContext, AgentState, ChannelMessage, ConversationRecord } from '../domain/agent/contract.js';
import { invalidSetting, settingsFromRule, SETTING_KEYS, type AgentSettingsValues, type SettingKey } from '../domain/agent/settings.js';
import { MAX_MEMORY_CONTENT, MEMORY_CAP, normalizeMemory, safetyRuleIn, secretIn } from '../domain/agent/memory-rules.js';
import { PLATFORM_SKILLS } from '../domain/agent/skills.js';
import { mayAutoFix, mayInvestigate, stageFor, STAGE_THRESHOLDS, usedPercent, utcDay, type Stage } from '../domain/agent/budget.js';
import type { AgentRepo, ChannelRow, MemoryRow, SkillRow } from '../storage/agent-repo.js';
import { sealSecret, openSecret } from '../domain/revenue/secret-box.js';

export const DELIVER_JOB = 'agent.deliver';
/** Delivery attempts: the first and 5 retries (the scheduler's backoff: 5 s, 10 s, 20 s, 40 s, 80 s). */
const DELIVERY_ATTEMPTS = 6;

export interface AgentUsage {
  day: string;
  used_percent: number;
  stage: Stage;
  wakes: number;
  alerts_posted: number;
  units_used: number;
  daily_budget: number;
}

export interface AgentStateService extends AgentState {
  repo: AgentRepo;
  webhooks: WebhookSender;
  settings(projectId: string): AgentSettingsValues;
  /** Applies the sent fields; 422 when none is valid (or any is invalid). */
  updateSettings(projectId: string, patch: Record<string, unknown>, now: number): AgentSettingsValues;
  addMemory(
    project: { id: string; orgId: string },
    m: { kind: string; content: string; scope: 'project' | 'organization'; replaces_id?: string },
    now: number,
  ): { entry: MemoryRow; settings_applied: Partial<AgentSettingsValues> | null };
  retireMemory(project: { id: string; orgId: string }, id: string, now: number): MemoryRow;
  /** Project skills override organization skills of the same name; platform skills come last. */
  effectiveSkills(projectId: string, orgId: string): AgentContext['skills'];
  usage(projectId: string, now: number): AgentUsage;
  stage(projectId: string, now: number): Stage;
  createChannel(projectId: string, c: { name: string; kind: 'slack' | 'webhook'; url: string }, now: number): { channel: ChannelRow; secret: string | null };
  /** The channel alerts go to: the configured one, else the first one; null when there is none. */
  alertChannel(projectId: string): ChannelRow | null;
  orgOf(projectId: string): string | null;
}

export interface AgentStateDeps {
  repo: AgentRepo;
  scheduler: Scheduler;
  webhooks: WebhookSender;
  dailyBudget: number;
  /** Seals webhook secrets at rest when SIGHTLINE_SECRET_KEY is set. */
  secretKey: string | null;
  now: () => number;
}

export function createAgentState(d: AgentStateDeps): AgentStateService {
  const { repo } = d;
  const dayIso = (day: number) => new Date(day * 86_400_000).toISOString().slice(0, 10);
  const openChannelSecret = (c: ChannelRow): string | null =>
    c.secret === null ? null : c.secret.startsWith('plain:') ? c.secret.slice(6) : d.secretKey ? openSecret(c.secret, d.secretKey) : null;

  const svc: AgentStateService = {
    repo,
    webhooks: d.webhooks,

    settings: (projectId) => repo.settings(projectId),

    updateSettings(projectId, patch, now) {
      const keys = Object.keys(patch).filter((k) => patch[k] !== undefined) as SettingKey[];
      if (!keys.length) throw new UnprocessableError('no_valid_value', `Send at least one setting to change: ${SETTING_KEYS.join(', ')}.`);
      const next = { ...repo.settings(projectId) };
      for (const k of keys) {
        const why = invalidSetting(k, patch[k], (id) => !!repo.channel(projectId, id));
        if (why) throw new UnprocessableError('no_valid_value', `\`${k}\` ${why}.`, k);
        (next as Record<string, unknown>)[k] = patch[k];
      }
      repo.putSettings(projectId, next, now);
      return next;
    },

    addMemory(project, m, now) {
      if (m.content.length > MAX_MEMORY_CONTENT)
        throw new UnprocessableError('memory_too_long', `\`content\` is ${m.content.length} characters; the limit is ${MAX_MEMORY_CONTENT}.`, 'content');
      const secret = secretIn(m.content);
      if (secret) throw new UnprocessableError('memory_holds_secret', `\`content\` looks like it holds ${secret}; the agent does not remember secrets.`, 'content');
      const safety = safetyRuleIn(m.content);
      if (safety)
        throw new UnprocessableError('memory_changes_safety_rule', `\`content\` tries to change a safety rule (${safety}); approvals, remediation, budget and scopes are set by owners, not by memory.`, 'content');
      const replaced = m.replaces_id ? repo.memory(project.id, project.orgId, m.replaces_id) : undefined;
      if (m.replaces_id && (!replaced || replaced.retired_at !== null)) throw new NotFoundError('The memory entry named by `replaces_id`', 'replaces_id');
      const norm = normalizeMemory(m.content);
      const visible = repo.visibleMemory(project.id, project.orgId).filter((e) => e.id !== m.replaces_id);
      const copy = visible.find((e) => e.norm === norm);
      if (copy) throw new ConflictError('memory_duplicate', `An active entry already says this (${copy.id}); retire or replace it instead.`, 'content');
      const cap = MEMORY_CAP[m.scope];
      const count = repo.activeMemoryCount(m.scope, project.id, project.orgId) - (replaced && replaced.scope === m.scope ? 1 : 0);
      if (count >= cap) throw new ConflictError('memory_scope_full', `The ${m.scope} memory holds its ${cap} active entries; retire or replace one first.`, 'scope');
      let applied: Partial<AgentSettingsValues> | null = null;
      if (m.kind === 'rule') {
        applied = settingsFromRule(m.content);
        if (applied) repo.putSettings(project.id, { ...repo.settings(project.id), ...applied }, now);
      }
      if (replaced) repo.retireMemory(replaced.id, now);
      const entry = repo.addMemory({
        project_id: m.scope === 'project' ? project.id : null,
        org_id: project.orgId,
        scope: m.scope,
        kind: m.kind,
        content: m.content,
        norm,
        replaces_id: m.replaces_id ?? null,
        created_at: now,
      });
      return { entry, settings_applied: applied };
    },

    retireMemory(project, id, now) {
      const e = repo.memory(project.id, project.orgId, id);
      if (!e || e.retired_at !== null) throw new NotFoundError('Memory entry', 'memory_id');
      repo.retireMemory(id, now);
      return { ...e, retired_at: now };
    },

    effectiveSkills(projectId, orgId) {
      const rows: SkillRow[] = repo.visibleSkills(projectId, orgId);
      const byName = new Map<string, AgentContext['skills'][number]>();
      for (const p of PLATFORM_SKILLS) byName.set(p.name, { ...p, source: 'platform' });
      for (const r of rows.filter((r) => r.scope === 'organization')) byName.set(r.name, { name: r.name, description: r.description, content: r.content, source: 'organization' });
      for (const r of rows.filter((r) => r.scope === 'project')) byName.set(r.name, { name: r.name, description: r.description, content: r.content, source: 'project' });
      return [...byName.values()].sort((a, b) => (a.name < b.name ? -1 : 1));
    },

    usage(projectId, now) {
      const day = utcDay(now);
      const u = repo.usage(projectId, day);
      const pct = usedPercent(u.units, d.dailyBudget);
      return { day: dayIso(day), used_percent: Math.min(pct, 100), stage: stageFor(pct), wakes: u.wakes, alerts_posted: u.alerts_posted, units_used: u.units, daily_budget: d.dailyBudget };
    },

    stage: (projectId, now) => svc.usage(projectId, now).stage,

    orgOf(projectId) {
      return repo.orgOf(projectId);
    },

    context(projectId, now) {
      const orgId = svc.orgOf(projectId) ?? '';
      const s = repo.settings(projectId);
      const u = svc.usage(projectId, now);
      return {
        settings: {
          proactive_alerts: s.proactive_alerts,
          // Reviews are proactive work: kept while conserving, stopped from notify_only on.
          pr_review: s.pr_review === 'comment_on_risk' && mayInvestigate(u.stage),
          auto_fix: s.auto_fix === 'project_policy' && mayAutoFix(u.stage),
          reply_style: s.reply_style,
          daily_alert_cap: s.daily_alert_cap,
          alert_channel_id: svc.alertChannel(projectId)?.id ?? null,
        },
        memory: repo.visibleMemory(projectId, orgId).map((m) => ({ id: m.id, kind: m.kind, content: m.content, scope: m.scope })),
        skills: svc.effectiveSkills(projectId, orgId),
        usage: { stage: u.stage, used_percent: u.used_percent, wakes: u.wakes, alerts_posted: u.alerts_posted },
      };
    },

    recordWake(projectId, now, cost) {
      repo.addUsage(projectId, utcDay(now), { wakes: 1, units: Math.max(0, cost.units) });
    },

    recordConversation(projectId, c: ConversationRecord) {
      return repo.addConversation({
        project_id: projectId,
        kind: c.kind,
        title: c.title.slice(0, 200),
        thread_id: c.thread_id ?? null,
        signal_id: c.signal_id ?? null,
        status: c.status,
        answered_by: c.answered_by,
        started_at: c.started_at,
        ended_at: c.ended_at ?? null,
      });
    },

    finishConversation(projectId, id, patch) {
      if (!repo.finishConversation(projectId, id, patch.status, patch.ended_at)) throw new NotFoundError('Conversation');
    },

    alertChannel(projectId) {
      const s = repo.settings(projectId);
      return (s.alert_channel_id ? repo.channel(projectId, s.alert_channel_id) : undefined) ?? repo.channels(projectId)[0] ?? null;
    },

    createChannel(projectId, c, now) {
      const refused = d.webhooks.refuse(c.url);
      if (refused) throw new ValidationError(`\`url\` ${refused.reason}.`, 'url', refused.code === 'invalid_url' ? 'invalid_parameter' : 'address_not_allowed');
      const secret = c.kind === 'webhook' ? `whsec_${randomBytes(24).toString('base64url')}` : null;
      const stored = secret === null ? null : d.secretKey ? sealSecret(secret, d.secretKey) : `plain:${secret}`;
      const channel = repo.addChannel({ project_id: projectId, name: c.name, kind: c.kind, url: c.url, secret: stored, created_at: now });
      return { channel, secret };
    },

    sendToChannel(projectId, channelId, message: ChannelMessage, now) {
      const ch = repo.channel(projectId, channelId);
      if (!ch) throw new NotFoundError('Channel', 'channel_id');
      const id = repo.addDelivery({ project_id: projectId, channel_id: ch.id, title: message.title.slice(0, 300), message: JSON.stringify(message), created_at: now });
      d.scheduler.enqueue(DELIVER_JOB, id, { projectId, deliveryId: id }, now, { maxAttempts: DELIVERY_ATTEMPTS });
      return id;
    },
  };

  /** Posts one delivery; a failure throws so the scheduler retries it with backoff. */
  d.scheduler.register(DELIVER_JOB, async (job) => {
    const { projectId, deliveryId } = job.payload as { projectId: string; deliveryId: string };
    const del = repo.delivery(projectId, deliveryId);
    if (!del || del.status !== 'pending') return;
    const ch = repo.channel(projectId, del.channel_id);
    if (!ch) {
      repo.recordAttempt(del.id, 'failed', null, 'the channel was deleted', null);
      return;
    }
    const msg = JSON.parse(del.message) as ChannelMessage;
    const now = d.now();
    let body: string;
    const headers: Record<string, string> = {};
    if (ch.kind === 'slack') {
      body = JSON.stringify({ text: `*${msg.title}*\n${msg.text}${msg.url ? `\n<${msg.url}>` : ''}` });
    } else {
      body = JSON.stringify({ id: del.id, type: 'agent.message', created_at: new Date(del.created_at).toISOString(), project_id: projectId, channel_id: ch.id, ...msg });
      const secret = openChannelSecret(ch);
      if (secret) headers[SIGNATURE_HEADER] = signatureHeader(secret, body, now);
      headers['Sightline-Delivery'] = del.id;
    }
    const r = await d.webhooks.post(ch.url, body, headers);
    if (r.ok) return { commit: () => repo.recordAttempt(del.id, 'delivered', r.status, null, d.now()) };
    const last = job.attempts >= job.max_attempts;
    repo.recordAttempt(del.id, last ? 'failed' : 'pending', r.status, r.error, null);
    throw new Error(`delivery ${del.id}: ${r.error}`);
  });

  return svc;
}

export { STAGE_THRESHOLDS };
