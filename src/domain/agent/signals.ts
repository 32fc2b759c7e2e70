/**
 * Why this file: what the agent makes of something that happened in the project (spec, In-project
 * agent: signals with `action`, `severity` and `reason`), and when a group's error rate is a spike.
 * Pure: the caller supplies the facts (earlier signals, counts) and stores the result.
 *
 * Severity: `sev1` (people are affected now: a monitor down, a fatal error), `sev2` (an error group
 * that is new, reopened or spiking, a regressed release), `sev3` (warnings), `sev4` (info and
 * feedback). `important` alerts are sev1 and sev2.
 */

export type Severity = 'sev1' | 'sev2' | 'sev3' | 'sev4';
export type SignalAction = 'investigate' | 'attach_to_existing' | 'ignore';

export interface SignalDraft {
  source: string;
  /** What the signal is about (`group:<id>`, `release:<id>`, `monitor:<id>`, `incident:<id>`). */
  subject: string;
  title: string;
  action: SignalAction;
  severity: Severity;
  reason: string;
  /** The platform skill an investigation uses. */
  skill: string | null;
}

export interface SignalFacts {
  /** An earlier signal about the same subject, still recent (24 h), if any. */
  earlier: { id: string; action: SignalAction } | null;
}

const levelSeverity = (level: string): Severity => (level === 'fatal' ? 'sev1' : level === 'error' ? 'sev2' : level === 'warning' ? 'sev3' : 'sev4');
const NON_PRODUCTION = /^(dev|development|local|test|testing)$/i;

/** The input a signal is made from: the domain events the agent listens to (src/core/events.ts). */
export type SignalEvent =
  | { type: 'error.group.created' | 'error.group.reopened'; groupId: string; shortId: string; title: string; level: string; environment: string }
  | { type: 'error.spike'; groupId: string; shortId: string; title: string; count: number; baseline: number; windowMinutes: number }
  | { type: 'release.regressed'; releaseId: string; service: string; environment: string; version: string; reasons: string[] }
  | { type: 'monitor.down'; monitorId: string; monitorName: string; reason: string; incidentId: string | null }
  | { type: 'incident.opened'; incidentId: string; displayId: string; title: string }
  | { type: 'feedback.received'; feedbackId: string; message: string; errorGroupId: string | null };

export function subjectOf(e: SignalEvent): string {
  switch (e.type) {
    case 'error.group.created':
    case 'error.group.reopened':
    case 'error.spike':
      return `group:${e.groupId}`;
    case 'release.regressed':
      return `release:${e.releaseId}`;
    case 'monitor.down':
      // The incident it opened is the same outage: its `incident.opened` attaches to this signal.
      return e.incidentId ? `incident:${e.incidentId}` : `monitor:${e.monitorId}`;
    case 'incident.opened':
      return `incident:${e.incidentId}`;
    case 'feedback.received':
      return e.errorGroupId ? `group:${e.errorGroupId}` : `feedback:${e.feedbackId}`;
  }
}

export function classify(e: SignalEvent, f: SignalFacts): SignalDraft {
  const subject = subjectOf(e);
  const attach = (d: Omit<SignalDraft, 'action' | 'source' | 'subject'>): SignalDraft =>
    f.earlier && f.earlier.action !== 'ignore'
      ? { ...d, source: e.type, subject, action: 'attach_to_existing', reason: `${d.reason} Attached to the earlier signal ${f.earlier.id} about the same subject.`, skill: null }
      : { ...d, source: e.type, subject, action: 'investigate' };
  switch (e.type) {
    case 'error.group.created': {
      const severity = levelSeverity(e.level);
      if (severity === 'sev4' || NON_PRODUCTION.test(e.environment))
        return { source: e.type, subject, title: `New ${e.shortId}: ${e.title}`, action: 'ignore', severity, reason: `New ${e.level} group in ${e.environment || 'no environment'}: not worth an investigation.`, skill: null };
      return attach({ title: `New ${e.shortId}: ${e.title}`, severity, reason: `A new ${e.level} group appeared${e.environment ? ` in ${e.environment}` : ''}.`, skill: 'triage-new-issue' });
    }
    case 'error.group.reopened':
      // Always investigated: whatever was concluded before the group was resolved no longer holds.
      return { source: e.type, subject, title: `Reopened ${e.shortId}: ${e.title}`, action: 'investigate', severity: e.level === 'fatal' ? 'sev1' : 'sev2', reason: 'A resolved group got a new event: the fix did not hold or the problem came back.', skill: 'triage-new-issue' };
    case 'error.spike':
      return attach({
        title: `Spike ${e.shortId}: ${e.title}`,
        severity: e.count >= 10 * SPIKE.minCount ? 'sev1' : 'sev2',
        reason: `${e.count} events in ${e.windowMinutes} minutes against a usual ${e.baseline.toFixed(1)}.`,
        skill: 'triage-new-issue',
      });
    case 'release.regressed':
      return attach({ title: `Release ${e.service}@${e.version} regressed`, severity: 'sev2', reason: `Health verdict \`regressed\` in ${e.environment || 'no environment'} (${e.reasons.join(', ')}).`, skill: 'release-regression' });
    case 'monitor.down':
      return attach({ title: `Monitor down: ${e.monitorName}`, severity: 'sev1', reason: e.reason, skill: 'monitor-down' });
    case 'incident.opened':
      return attach({ title: `Incident ${e.displayId}: ${e.title}`, severity: 'sev1', reason: 'An incident was opened.', skill: 'monitor-down' });
    case 'feedback.received':
      return e.errorGroupId
        ? { source: e.type, subject, title: 'Feedback on an error', action: 'attach_to_existing', severity: 'sev4', reason: 'User feedback linked to an error group: kept with it as context.', skill: null }
        : { source: e.type, subject, title: 'User feedback', action: 'ignore', severity: 'sev4', reason: 'User feedback with no linked error: left to people.', skill: null };
  }
}

/**
 * Spike detection, in the spirit of Sentry's: a group's events over the last `windowMinutes` are
 * a spike when there are at least `minCount` of them and at least `factor` times the group's usual
 * count for such a window (its events over the previous `baselineHours`, scaled down). One spike
 * per group per `cooldownMinutes`.
 */
export const SPIKE = { windowMinutes: 5, minCount: 20, factor: 10, baselineHours: 24, cooldownMinutes: 60 } as const;

export function isSpike(windowCount: number, baselineCount: number): { spike: boolean; baseline: number } {
  const windows = (SPIKE.baselineHours * 60) / SPIKE.windowMinutes;
  const baseline = baselineCount / windows;
  return { spike: windowCount >= SPIKE.minCount && windowCount >= SPIKE.factor * baseline, baseline };
}

/** Does a proactive alert setting let this severity through? */
export function alertWanted(setting: 'all' | 'important' | 'sev1_only' | 'off', severity: Severity): boolean {
  if (setting === 'off') return false;
  if (setting === 'sev1_only') return severity === 'sev1';
  if (setting === 'important') return severity === 'sev1' || severity === 'sev2';
  return true;
}
