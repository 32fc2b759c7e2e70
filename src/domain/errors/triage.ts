/**
 * The deterministic built-in triager (`builtin-v1`). Pure: the same group, latest event, other
 * groups and clock give the same result. A model-backed triager can produce the same result shape
 * under another `triager` name; the run lifecycle (queued → running → completed | failed) is kept by
 * the caller.
 *
 * - summary: one or two sentences from type, title, culprit, event count, first/last seen, service
 *   and environment.
 * - probable_cause: the newest in-app frame of the latest event's raised exception (file, function,
 *   line) with the exception message; null when the event has no stack trace.
 * - suggested_priority: points from level (fatal 3, error 2, warning 1), volume (≥ 1,000 events +2,
 *   ≥ 100 +1), recency (seen in the last hour +1, not for a week −1) and status (resolved, ignored or
 *   muted −1); ≥ 5 critical, 4 high, 2–3 medium, below low.
 * - similar_groups: the project's other groups scored 0.4 for the same exception type plus 0.6 × the
 *   Jaccard similarity of their title words; those scoring ≥ 0.35, best 5.
 */
import type { StackFrame } from '../telemetry-types.js';
import { formatDuration, times } from './format.js';
import { raisedException, topInAppFrame } from './payload.js';

export const BUILTIN_TRIAGER = 'builtin-v1';

export type Priority = 'low' | 'medium' | 'high' | 'critical';

export interface TriageGroup {
  id: string;
  short_id: string;
  type: string;
  title: string;
  culprit: string;
  level: string;
  status: string;
  priority: string;
  service_name: string;
  environment: string;
  event_count: number;
  first_seen: number;
  last_seen: number;
}

export interface TriageEvent {
  message: string;
  payload: unknown;
}

export interface TriageResult {
  triager: string;
  summary: string;
  probable_cause: {
    file: string | null;
    function: string | null;
    line: number | null;
    column: number | null;
    in_app: boolean | null;
    exception_type: string | null;
    message: string;
    explanation: string;
  } | null;
  suggested_priority: { priority: Priority; points: number; reasons: string[] };
  similar_groups: { id: string; short_id: string; title: string; type: string; score: number; reason: string }[];
  generated_at: number;
}

const LEVEL_POINTS: Record<string, number> = { fatal: 3, error: 2, warning: 1 };
const HOUR = 3_600_000;

export function suggestPriority(g: Pick<TriageGroup, 'level' | 'event_count' | 'last_seen' | 'status'>, now: number): TriageResult['suggested_priority'] {
  const reasons: string[] = [];
  let points = LEVEL_POINTS[g.level] ?? 0;
  reasons.push(`level ${g.level || 'unknown'}: +${points}`);
  if (g.event_count >= 1000) {
    points += 2;
    reasons.push(`${g.event_count} events (≥ 1000): +2`);
  } else if (g.event_count >= 100) {
    points += 1;
    reasons.push(`${g.event_count} events (≥ 100): +1`);
  }
  const age = now - g.last_seen;
  if (age <= HOUR) {
    points += 1;
    reasons.push('seen within the last hour: +1');
  } else if (age > 7 * 24 * HOUR) {
    points -= 1;
    reasons.push('not seen for over a week: −1');
  }
  if (g.status === 'resolved' || g.status === 'ignored' || g.status === 'muted') {
    points -= 1;
    reasons.push(`status ${g.status}: −1`);
  }
  const priority: Priority = points >= 5 ? 'critical' : points >= 4 ? 'high' : points >= 2 ? 'medium' : 'low';
  return { priority, points, reasons };
}

function words(title: string): Set<string> {
  return new Set(
    title
      .toLowerCase()
      .split(/[^a-z0-9_]+/)
      .filter((w) => w.length >= 2 && !/^\d+$/.test(w)),
  );
}

export function titleSimilarity(a: string, b: string): number {
  const wa = words(a);
  const wb = words(b);
  if (!wa.size || !wb.size) return 0;
  let inter = 0;
  for (const w of wa) if (wb.has(w)) inter++;
  return inter / (wa.size + wb.size - inter);
}

export function similarGroups(g: Pick<TriageGroup, 'id' | 'type' | 'title'>, others: readonly Pick<TriageGroup, 'id' | 'short_id' | 'type' | 'title' | 'last_seen'>[], max = 5): TriageResult['similar_groups'] {
  const scored = others
    .filter((o) => o.id !== g.id)
    .map((o) => {
      const sameType = !!g.type && g.type !== 'message' && o.type === g.type;
      const sim = titleSimilarity(g.title, o.title);
      const score = Math.round(((sameType ? 0.4 : 0) + 0.6 * sim) * 1000) / 1000;
      const parts = [];
      if (sameType) parts.push(`same type ${o.type}`);
      if (sim > 0) parts.push(`title ${Math.round(sim * 100)}% similar`);
      return { o, score, reason: parts.join('; ') };
    })
    .filter((x) => x.score >= 0.35)
    .sort((a, b) => b.score - a.score || b.o.last_seen - a.o.last_seen || a.o.id.localeCompare(b.o.id));
  return scored.slice(0, max).map(({ o, score, reason }) => ({ id: o.id, short_id: o.short_id, title: o.title, type: o.type, score, reason }));
}

function fileOf(f: StackFrame): string | null {
  return f.filename || f.abs_path || f.module || null;
}

export function probableCause(event: TriageEvent | null): TriageResult['probable_cause'] {
  if (!event) return null;
  const ex = raisedException(event.payload);
  const message = (ex?.value || event.message || '').slice(0, 1000);
  const frame = ex ? topInAppFrame(ex.frames) : null;
  if (!frame) {
    if (!ex) return null;
    return {
      file: null,
      function: null,
      line: null,
      column: null,
      in_app: null,
      exception_type: ex.type || null,
      message,
      explanation: `${ex.type || 'The exception'} was raised${message ? ` with "${message}"` : ''}; the event carries no stack trace to point at the code.`,
    };
  }
  const file = fileOf(frame);
  const fn = frame.function && frame.function !== '?' ? frame.function : null;
  const at = [fn ? `${fn}()` : 'code', file ? `in ${file}` : '', frame.lineno !== undefined ? `at line ${frame.lineno}` : ''].filter(Boolean).join(' ');
  return {
    file,
    function: fn,
    line: frame.lineno ?? null,
    column: frame.colno ?? null,
    in_app: frame.in_app ?? null,
    exception_type: ex?.type || null,
    message,
    explanation: `${ex?.type || 'The error'} is raised by ${at}${message ? `: "${message}"` : ''}. Start there.`,
  };
}

export function summarize(g: TriageGroup, now: number): string {
  const where = [g.service_name ? `service ${g.service_name}` : '', g.environment ? `environment ${g.environment}` : ''].filter(Boolean).join(', ');
  const first = `${g.type && g.type !== 'message' ? `${g.type} ` : ''}"${g.title}" has occurred ${times(g.event_count)}${where ? ` in ${where}` : ''} since ${new Date(g.first_seen).toISOString()}, last seen ${formatDuration(now - g.last_seen)} ago.`;
  return g.culprit ? `${first} Culprit: ${g.culprit}.` : first;
}

export function runBuiltinTriage(input: { group: TriageGroup; latestEvent: TriageEvent | null; otherGroups: readonly TriageGroup[]; now: number }): TriageResult {
  const { group, latestEvent, otherGroups, now } = input;
  return {
    triager: BUILTIN_TRIAGER,
    summary: summarize(group, now),
    probable_cause: probableCause(latestEvent),
    suggested_priority: suggestPriority(group, now),
    similar_groups: similarGroups(group, otherGroups),
    generated_at: now,
  };
}
