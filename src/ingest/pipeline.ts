import { randomBytes } from 'node:crypto';
import type { ErrorEventRecord, SpanRecord } from '../domain/telemetry-types.js';
import { groupKeyFor, type GroupKey } from '../domain/grouping/fingerprint.js';
import { parseStackTrace } from '../domain/grouping/stacktrace.js';
import { environmentOf, serviceVersionOf } from '../storage/sqlite-telemetry-store.js';
import type { Services } from '../core/services.js';
import type { ProjectRow } from '../storage/identity-repo.js';
import type { GroupChange, KeyedErrorEvent } from '../storage/errors-repo.js';
import { userFromOtelAttributes } from '../domain/errors/users.js';

/** Span `exception` events (OTel semantic conventions) become error events. */
export function errorEventsFromSpans(spans: SpanRecord[], receivedMs: number): ErrorEventRecord[] {
  const out: ErrorEventRecord[] = [];
  for (const sp of spans) {
    for (const ev of sp.events) {
      if (ev.name !== 'exception') continue;
      const a = ev.attributes;
      const type = typeof a['exception.type'] === 'string' ? (a['exception.type'] as string) : '';
      const value = typeof a['exception.message'] === 'string' ? (a['exception.message'] as string) : '';
      const stack = typeof a['exception.stacktrace'] === 'string' ? (a['exception.stacktrace'] as string) : '';
      if (!type && !value) continue;
      out.push({
        event_id: randomBytes(16).toString('hex'),
        timestamp_ms: ev.time_ms || sp.end_ms,
        received_ms: receivedMs,
        source: 'otlp',
        platform: typeof sp.resource['telemetry.sdk.language'] === 'string' ? (sp.resource['telemetry.sdk.language'] as string) : 'other',
        level: 'error',
        message: value,
        exceptions: [{ type: type || 'Error', value, frames: parseStackTrace(stack) }],
        fingerprint: null,
        environment: environmentOf(sp.resource) || 'production',
        release: serviceVersionOf(sp.resource),
        service_name: sp.service_name,
        server_name: typeof sp.resource['host.name'] === 'string' ? (sp.resource['host.name'] as string) : '',
        transaction: sp.name,
        tags: {},
        user: userFromOtelAttributes(a, sp.attributes, sp.resource),
        trace_id: sp.trace_id,
        span_id: sp.span_id,
        payload: { span: { trace_id: sp.trace_id, span_id: sp.span_id, name: sp.name, attributes: sp.attributes }, exception: a },
      });
    }
  }
  return out;
}

/**
 * Spike protection: per project, error events above the threshold within one clock minute are
 * dropped and counted. In memory: the threshold protects this process; counts reset each minute.
 */
export class SpikeGuard {
  private counts = new Map<string, { minute: number; n: number }>();

  /** How many of `n` events may be accepted now; the rest are dropped. */
  admit(project: ProjectRow, n: number, now: number): number {
    if (!project.spike_protection_enabled || project.spike_threshold_per_minute === null) return n;
    const minute = Math.floor(now / 60_000);
    let c = this.counts.get(project.id);
    if (!c || c.minute !== minute) {
      c = { minute, n: 0 };
      this.counts.set(project.id, c);
    }
    const room = Math.max(0, project.spike_threshold_per_minute - c.n);
    const admitted = Math.min(room, n);
    c.n += admitted;
    return admitted;
  }

  /** Seconds until the current minute ends (when spike protection admits events again). */
  static secondsToNextMinute(now: number): number {
    return Math.max(1, Math.ceil((60_000 - (now % 60_000)) / 1000));
  }
}

export interface ErrorIngestResult {
  accepted: number;
  dropped: number;
  groups: string[];
  /** Groups this write created or reopened: publish them (publishGroupChanges) once committed. */
  created: GroupChange[];
  reopened: GroupChange[];
}

/** After the write committed: `error.group.created` / `error.group.reopened` for signals and automations. */
export function publishGroupChanges(services: Services, projectId: string, r: Pick<ErrorIngestResult, 'created' | 'reopened'>, at: number): void {
  for (const g of r.created) services.events.publish({ type: 'error.group.created', projectId, at, ...g });
  for (const g of r.reopened) services.events.publish({ type: 'error.group.reopened', projectId, at, ...g });
}

/** Group and store error events, after spike protection. Committed when this returns. */
export function ingestErrorEvents(services: Services, spike: SpikeGuard, project: ProjectRow, events: ErrorEventRecord[], now: number): ErrorIngestResult {
  return ingestKeyedErrorEvents(services, spike, project, events.map((event) => ({ event, key: groupKeyFor(event) })), now);
}

/**
 * A write batch job's `prepare` (services.writeBatch's second argument) for ingesting these events:
 * their groups are read with those of the batch's other jobs, at once (with error groups in
 * PostgreSQL a round trip per 100 groups instead of one per job).
 */
export function expectErrorGroups(services: Services, project: ProjectRow, keyed: readonly KeyedErrorEvent[]): () => void {
  return () => services.errorsIngest.expect(project.id, keyed);
}

/** The same with grouping keys already computed (by a decode worker). */
export function ingestKeyedErrorEvents(services: Services, spike: SpikeGuard, project: ProjectRow, keyed: KeyedErrorEvent[], now: number): ErrorIngestResult {
  if (!keyed.length) return { accepted: 0, dropped: 0, groups: [], created: [], reopened: [] };
  const admitted = spike.admit(project, keyed.length, now);
  const dropped = keyed.length - admitted;
  if (dropped) services.ingestMisc.recordOutcome(project.id, now, 'error', 'spike_protection', dropped);
  const items = admitted < keyed.length ? keyed.slice(0, admitted) : keyed;
  if (!items.length) return { accepted: admitted, dropped, groups: [], created: [], reopened: [] };
  const { groups, created, reopened } = services.errorsIngest.ingest(project.id, project.slug, items, now);
  return { accepted: admitted, dropped, groups, created, reopened };
}
