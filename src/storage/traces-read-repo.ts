import type { Db } from './db.js';
import { createSqliteErrorEventsReader, type ErrorEventsReader } from './error-events-read.js';
import type { Statement } from 'better-sqlite3';
import type { Attributes } from '../domain/telemetry-types.js';
import type { MapSpan } from '../domain/traces/service-map.js';
import { SPARKLINE_BUCKETS, selectPercentile } from '../domain/traces/operation-stats.js';
import { createTraceSpans } from './trace-spans.js';
import { attrValueAtSql, createAttrDecoder, createKeyPositions, scopeNameSql, scopeVersionSql, type KeyPositions } from './attr-keysets.js';
import { idEqSql, idTextSql } from './compact-ids.js';

import { SPAN_END_SQL, SPAN_NAME_SQL, SPAN_VERSION_SQL } from './trace-spans.js';
export { SPAN_END_SQL, SPAN_NAME_SQL, SPAN_VERSION_SQL };

/**
 * Reads of the spans the ingest path writes (traces.* operations). Every method takes the project id
 * first.
 *
 * Index use (migrations 002, 005 and 007):
 * - `spans_entry` (project, service, operation, start, duration, status, environment, kind, parent;
 *   entry spans only): a (service, operation) group's rows in a window are one range. Distinct groups
 *   are found by skipping from one group to the next (a seek each), so the cost follows the number
 *   of groups and the rows inside the window, not the project's history. Queries repeat the index's
 *   WHERE clause (`ENTRY`) and name the index, so they are answered from it alone.
 * - `spans_time` (project, start): the unfiltered trace list and the service-map sample.
 * - `spans_error` (project, start; error spans only): traces with errors.
 * - `trace_chunks` (project, trace; migration 007): one trace's spans, as rowid ranges written one
 *   per trace and ingest batch (see trace-spans.ts), and the trace's span count, errors and times.
 * Aggregates stay in SQL; a group's durations and sparkline buckets come back as one compact text
 * each (group_concat), which costs far less than one row per span across the driver.
 */

export const ENTRY = '(kind IN (2, 5) OR parent_span_id IS NULL)';
const BY_ENTRY = 'INDEXED BY spans_entry';

export interface EntryFilter {
  fromMs: number;
  toMs: number;
  environment?: string;
  status?: 'ok' | 'error';
  minDurationMs?: number;
}

export interface EntryGroupKey {
  service_name: string;
  operation: string;
}

export interface GroupCounts {
  count: number;
  errors: number;
}

export interface GroupDetail extends GroupCounts {
  /** Latest start in the window; null when the group has no matching span. */
  last_ms: number | null;
  /**
   * Durations in ms (µs precision), in no particular order; may be empty when the store computed the
   * percentiles itself (ClickHouse): read `p50`/`p95`.
   */
  durations: Float64Array;
  /** Median and 95th percentile of the durations (linear interpolation between closest ranks); null when none. */
  p50: number | null;
  p95: number | null;
  /** Entry spans per sparkline bucket (60 equal slices of the window); null when not asked for. */
  buckets: Uint32Array | null;
}

/** The span fields trace summaries read. */
export interface SpanLiteRow {
  span_id: string;
  parent_span_id: string | null;
  name: string;
  operation: string;
  kind: number;
  service_name: string;
  environment: string;
  start_ms: number;
  end_ms: number;
  duration_ms: number;
  status_code: number;
}

export interface SpanFullRow extends SpanLiteRow {
  service_version: string;
  status_message: string;
  attributes: Attributes;
  events: { time_ms: number; name: string; attributes: Attributes }[];
  links: { trace_id: string; span_id: string; trace_state: string; attributes: Attributes }[];
  scope_name: string;
  scope_version: string;
}

export interface TraceAggregate {
  span_count: number;
  error_count: number;
  started_ms: number | null;
  ended_ms: number | null;
}

/** A trace's aggregate and its root span's name and service (null without spans). */
export interface TraceSummary extends TraceAggregate {
  root_span_name: string | null;
  root_service_name: string | null;
}

/** A span of a newest-first candidate stream (trace list). */
export interface StreamRow {
  rowid: number;
  start_ms: number;
  trace_id: string;
}

/** Which spans feed the trace list, newest first. */
export type ListStream =
  | { kind: 'all'; where?: SpanWhere }
  | { kind: 'errors' }
  | { kind: 'entry'; groups: EntryGroupKey[]; environment?: string; minDurationMs?: number };

/** Conditions on one span of the `all` stream: each attribute equal (as text) and the environment. */
export interface SpanWhere {
  attributes?: { key: string; value: string }[];
  environment?: string;
}

/** SQL (and its arguments) of a {@link SpanWhere} on span rows. */
function spanWhereSql(w: SpanWhere | undefined, keyPos: KeyPositions): { sql: string; args: unknown[] } {
  let sql = '';
  const args: unknown[] = [];
  if (w?.environment !== undefined) {
    sql += ' AND environment = ?';
    args.push(w.environment);
  }
  for (const a of w?.attributes ?? []) {
    const key = a.key.replace(/"/g, '');
    sql += ` AND CAST(${attrValueAtSql('spans', '?', keyPos(key), true)} AS TEXT) = ?`;
    args.push(`$."${key}"`, a.value);
  }
  return { sql, args };
}

export interface TraceErrorGroupRow {
  id: string;
  short_id: string;
  title: string;
  type: string;
  culprit: string;
  level: string;
  status: string;
  service_name: string;
  first_seen: number;
  last_seen: number;
  /** Events of this group (including events counted on its merged duplicates) carrying the trace id. */
  trace_event_count: number;
  first_event_ms: number;
  last_event_ms: number;
  span_ids: string[];
}

/** Parses the text of `group_concat` over integers (`"12,7,300"`) without intermediate strings. */
function parseIntList(text: string | null, scale: number): Float64Array {
  if (!text) return new Float64Array(0);
  let n = 1;
  for (let i = 0; i < text.length; i++) if (text.charCodeAt(i) === 44) n++;
  const out = new Float64Array(n);
  let v = 0;
  let neg = false;
  let k = 0;
  for (let i = 0; i < text.length; i++) {
    const c = text.charCodeAt(i);
    if (c === 44) {
      out[k++] = (neg ? -v : v) / scale;
      v = 0;
      neg = false;
    } else if (c === 45) neg = true;
    else v = v * 10 + (c - 48);
  }
  out[k] = (neg ? -v : v) / scale;
  return out;
}

/** Sparkline buckets from one character per span (`'0'` + bucket index). */
function bucketsOf(text: string | null): Uint32Array {
  const out = new Uint32Array(SPARKLINE_BUCKETS);
  if (text) for (let i = 0; i < text.length; i++) out[Math.min(SPARKLINE_BUCKETS - 1, Math.max(0, text.charCodeAt(i) - 48))]!++;
  return out;
}

/* eslint-disable @typescript-eslint/no-explicit-any */
const json = (t: string | null): any => (t ? JSON.parse(t) : null);

/**
 * A newest-first cursor over one ordered range, read in batches that grow (×4 up to 1,024 rows).
 * `fetch(upper, inclusive, n)` returns up to n rows starting before (or at, when inclusive) `upper`,
 * newest first; rows already returned at the boundary time are skipped, and a batch made only of
 * such rows is retried larger, so equal start times never stall the cursor.
 */
function* newestFirst<R extends { rowid: number; start_ms: number }>(
  fetch: (upper: number, inclusive: boolean, n: number) => R[],
  toMs: number,
  firstBatch: number,
): Generator<R> {
  let upper = toMs;
  let inclusive = false;
  let n = firstBatch;
  let atUpper = new Set<number>();
  for (;;) {
    const rows = fetch(upper, inclusive, n);
    let fresh = 0;
    for (const r of rows) {
      if (inclusive && r.start_ms === upper && atUpper.has(r.rowid)) continue;
      fresh++;
      if (r.start_ms !== upper) {
        upper = r.start_ms;
        atUpper = new Set();
      }
      atUpper.add(r.rowid);
      inclusive = true;
      yield r;
    }
    if (rows.length < n) return;
    if (fresh === 0) {
      n *= 4; // a full batch of rows already seen: all at the boundary time
      continue;
    }
    n = Math.min(n * 4, 1024);
  }
}

/** Merges newest-first cursors into one newest-first sequence (a binary max-heap on start time). */
function* mergeNewestFirst<R extends { start_ms: number }>(cursors: Iterator<R>[]): Generator<R> {
  const heap: { row: R; it: Iterator<R> }[] = [];
  const up = (i: number) => {
    while (i > 0) {
      const p = (i - 1) >> 1;
      if (heap[p]!.row.start_ms >= heap[i]!.row.start_ms) break;
      [heap[p], heap[i]] = [heap[i]!, heap[p]!];
      i = p;
    }
  };
  const down = (i: number) => {
    for (;;) {
      const l = 2 * i + 1;
      const r = l + 1;
      let m = i;
      if (l < heap.length && heap[l]!.row.start_ms > heap[m]!.row.start_ms) m = l;
      if (r < heap.length && heap[r]!.row.start_ms > heap[m]!.row.start_ms) m = r;
      if (m === i) return;
      [heap[m], heap[i]] = [heap[i]!, heap[m]!];
      i = m;
    }
  };
  for (const it of cursors) {
    const n = it.next();
    if (!n.done) {
      heap.push({ row: n.value, it });
      up(heap.length - 1);
    }
  }
  while (heap.length) {
    const top = heap[0]!;
    yield top.row;
    const n = top.it.next();
    if (n.done) {
      const last = heap.pop()!;
      if (heap.length) {
        heap[0] = last;
        down(0);
      }
    } else {
      top.row = n.value;
      down(0);
    }
  }
}

export function createTracesReadRepo(db: Db, opts: { errorEvents?: ErrorEventsReader } = {}) {
  // A trace's error events are read where they are stored: SQLite, or ClickHouse (issue 20).
  const errorEvents = opts.errorEvents ?? createSqliteErrorEventsReader(db);
  const cache = new Map<string, Statement>();
  /** Statements vary with the optional filters; each variant is prepared once. */
  const stmt = (sql: string): Statement => {
    let s = cache.get(sql);
    if (!s) {
      s = db.prepare(sql);
      cache.set(sql, s);
    }
    return s;
  };

  function entryClauses(f: Partial<EntryFilter>): string {
    const w: string[] = [];
    if (f.environment !== undefined) w.push('environment = @environment');
    if (f.status === 'error') w.push('status_code = 2');
    if (f.status === 'ok') w.push('status_code <> 2');
    if (f.minDurationMs !== undefined) w.push('duration_ms >= @minDurationMs');
    return w.length ? ` AND ${w.join(' AND ')}` : '';
  }
  const entryArgs = (projectId: string, g: EntryGroupKey, f: EntryFilter) => ({
    p: Number(projectId),
    s: g.service_name,
    o: g.operation,
    from: f.fromMs,
    to: f.toMs,
    environment: f.environment,
    minDurationMs: f.minDurationMs,
  });
  const groupRange = `FROM spans ${BY_ENTRY} WHERE project_id = @p AND service_name = @s AND operation = @o AND start_ms >= @from AND start_ms < @to AND ${ENTRY}`;

  const s = {
    firstService: db.prepare(`SELECT min(service_name) FROM spans ${BY_ENTRY} WHERE project_id = ? AND service_name >= '' AND ${ENTRY}`).pluck(),
    nextService: db.prepare(`SELECT min(service_name) FROM spans ${BY_ENTRY} WHERE project_id = ? AND service_name > ? AND ${ENTRY}`).pluck(),
    firstOp: db.prepare(`SELECT min(operation) FROM spans ${BY_ENTRY} WHERE project_id = ? AND service_name = ? AND operation >= '' AND ${ENTRY}`).pluck(),
    nextOp: db.prepare(`SELECT min(operation) FROM spans ${BY_ENTRY} WHERE project_id = ? AND service_name = ? AND operation > ? AND ${ENTRY}`).pluck(),
    hasOp: db.prepare(`SELECT 1 FROM spans ${BY_ENTRY} WHERE project_id = ? AND service_name = ? AND operation = ? AND ${ENTRY} LIMIT 1`).pluck(),
    rowTrace: db.prepare(`SELECT ${idTextSql('trace_id')} FROM spans WHERE rowid = ?`).pluck(),
    group: db.prepare(`SELECT id, short_id, title, type, culprit, level, status, service_name, first_seen, last_seen, merged_into
      FROM error_groups WHERE project_id = ? AND id = ?`),
    sample: db
      .prepare(`SELECT ${idTextSql('trace_id')}, ${idTextSql('span_id')}, ${idTextSql('parent_span_id')}, service_name, kind, duration_ms, status_code, start_ms, CASE WHEN kind IN (3, 4) THEN attributes END, attr_keys
      FROM spans WHERE project_id = ? AND start_ms >= ? AND start_ms < ?`)
      .raw(),
    countUpTo: db.prepare('SELECT count(*) FROM (SELECT 1 FROM spans INDEXED BY spans_time WHERE project_id = ? AND start_ms >= ? AND start_ms < ? LIMIT ?)').pluck(),
    startAtRank: db.prepare('SELECT start_ms FROM spans INDEXED BY spans_time WHERE project_id = ? AND start_ms >= ? AND start_ms < ? ORDER BY start_ms LIMIT 1 OFFSET ?').pluck(),
  };
  const traces = createTraceSpans(db);
  const IDS = `${idTextSql('s.span_id')} AS span_id, ${idTextSql('s.parent_span_id')} AS parent_span_id`;
  const LITE = `${IDS}, ${SPAN_NAME_SQL} AS name, s.operation, s.kind, s.service_name, s.environment, s.start_ms, ${SPAN_END_SQL} AS end_ms, s.duration_ms, s.status_code`;
  const FULL = `${IDS}, ${SPAN_NAME_SQL} AS name, s.operation, s.kind, s.service_name, s.environment, ${SPAN_VERSION_SQL} AS service_version, s.start_ms, ${SPAN_END_SQL} AS end_ms,
    s.duration_ms, s.status_code, s.status_message, s.attributes, s.attr_keys, s.events, s.links, ${scopeNameSql('s')} AS scope_name, ${scopeVersionSql('s')} AS scope_version`;
  const decode = createAttrDecoder(db);
  const keyPos = createKeyPositions(db);

  return {
    /** Services with entry spans (at any time), sorted. A seek per service. */
    entryServices(projectId: string): string[] {
      const pid = Number(projectId);
      const out: string[] = [];
      let svc = s.firstService.get(pid) as string | null;
      while (svc !== null && svc !== undefined) {
        out.push(svc);
        svc = s.nextService.get(pid, svc) as string | null;
      }
      return out;
    },

    /**
     * Distinct (service, operation) groups of entry spans (at any time), sorted. A seek per group;
     * `service`/`operation` narrow the walk. Stops after `max` groups (the caller decides what to do
     * with a truncated walk).
     */
    entryGroups(projectId: string, opts: { service?: string; operation?: string; max?: number } = {}): { groups: EntryGroupKey[]; truncated: boolean } {
      const pid = Number(projectId);
      const max = opts.max ?? Infinity;
      const services = opts.service !== undefined ? [opts.service] : this.entryServices(projectId);
      const groups: EntryGroupKey[] = [];
      for (const service_name of services) {
        if (opts.operation !== undefined) {
          if (s.hasOp.get(pid, service_name, opts.operation)) groups.push({ service_name, operation: opts.operation });
        } else {
          let op = s.firstOp.get(pid, service_name) as string | null;
          while (op !== null && op !== undefined) {
            groups.push({ service_name, operation: op });
            if (groups.length >= max) return { groups, truncated: true };
            op = s.nextOp.get(pid, service_name, op) as string | null;
          }
        }
        if (groups.length >= max) return { groups, truncated: true };
      }
      return { groups, truncated: false };
    },

    /** Latest start of the group's matching entry spans in the window; null when none. */
    groupLastSeen(projectId: string, g: EntryGroupKey, f: EntryFilter): number | null {
      return (stmt(`SELECT max(start_ms) ${groupRange}${entryClauses(f)}`).pluck().get(entryArgs(projectId, g, f)) as number | null) ?? null;
    },

    /** Matching entry spans of the group in the window, and how many of them failed. */
    groupCounts(projectId: string, g: EntryGroupKey, f: EntryFilter): GroupCounts {
      return stmt(`SELECT count(*) AS count, total(status_code = 2) AS errors ${groupRange}${entryClauses(f)}`).get(entryArgs(projectId, g, f)) as GroupCounts;
    },

    /**
     * Counts plus every duration (unordered) of the group's matching entry spans and, unless
     * `sparkline` is false, their sparkline buckets.
     */
    groupDetail(projectId: string, g: EntryGroupKey, f: EntryFilter, sparkline = true): GroupDetail {
      const spark = sparkline
        ? `, group_concat(char(48 + CAST((start_ms - @from) * ${SPARKLINE_BUCKETS} / (@to - @from) AS INTEGER)), '') AS b`
        : '';
      const r = stmt(
        `SELECT count(*) AS count, total(status_code = 2) AS errors, max(start_ms) AS last_ms,
          group_concat(CAST(round(duration_ms * 1000) AS INTEGER)) AS d${spark}
        ${groupRange}${entryClauses(f)}`,
      ).get(entryArgs(projectId, g, f)) as { count: number; errors: number; last_ms: number | null; d: string | null; b?: string | null };
      const durations = parseIntList(r.d, 1000);
      const p50 = selectPercentile(durations, 0.5);
      const p95 = selectPercentile(durations, 0.95);
      return { count: r.count, errors: r.errors, last_ms: r.last_ms ?? null, durations, p50, p95, buckets: r.b === undefined ? null : bucketsOf(r.b) };
    },

    /** Sparkline buckets of the group's matching entry spans. */
    groupSparkline(projectId: string, g: EntryGroupKey, f: EntryFilter): Uint32Array {
      const b = stmt(
        `SELECT group_concat(char(48 + CAST((start_ms - @from) * ${SPARKLINE_BUCKETS} / (@to - @from) AS INTEGER)), '') ${groupRange}${entryClauses(f)}`,
      )
        .pluck()
        .get(entryArgs(projectId, g, f)) as string | null;
      return bucketsOf(b);
    },

    /**
     * The spans of a list stream starting in `[fromMs, toMs)`, newest first (ties in any order),
     * read lazily in growing batches: the caller stops pulling once its page is complete. An entry
     * stream merges one newest-first cursor per (service, operation) group, so each group is a range
     * of `spans_entry` read from its newest end.
     */
    *spanStream(projectId: string, stream: ListStream, fromMs: number, toMs: number): Generator<StreamRow> {
      const pid = Number(projectId);
      if (stream.kind === 'all' || stream.kind === 'errors') {
        const idx = stream.kind === 'errors' ? 'INDEXED BY spans_error' : 'INDEXED BY spans_time';
        const err = stream.kind === 'errors' ? ' AND status_code = 2' : '';
        // Span conditions (attributes, environment) are checked on the rows the time index walks.
        const w = spanWhereSql(stream.kind === 'all' ? stream.where : undefined, keyPos);
        const sql = (op: string) =>
          `SELECT rowid, start_ms, ${idTextSql('trace_id')} AS trace_id FROM spans ${idx} WHERE project_id = ? AND start_ms >= ? AND start_ms ${op} ?${err}${w.sql} ORDER BY start_ms DESC LIMIT ?`;
        const cursor = newestFirst(
          (upper, inclusive, n) => stmt(sql(inclusive ? '<=' : '<')).all(pid, fromMs, upper, ...w.args, n) as StreamRow[],
          toMs,
          64,
        );
        yield* cursor;
        return;
      }
      const extra = entryClauses({ environment: stream.environment, minDurationMs: stream.minDurationMs });
      const sql = (op: string) => `SELECT rowid, start_ms FROM spans ${BY_ENTRY} WHERE project_id = @p AND service_name = @s AND operation = @o
        AND start_ms >= @from AND start_ms ${op} @upper AND ${ENTRY}${extra} ORDER BY start_ms DESC LIMIT @n`;
      const cursors = stream.groups.map((g) =>
        newestFirst(
          (upper, inclusive, n) =>
            stmt(sql(inclusive ? '<=' : '<')).all({ p: pid, s: g.service_name, o: g.operation, from: fromMs, upper, n, environment: stream.environment, minDurationMs: stream.minDurationMs }) as {
              rowid: number;
              start_ms: number;
            }[],
          toMs,
          stream.groups.length > 16 ? 8 : 32,
        ),
      );
      for (const r of mergeNewestFirst(cursors)) yield { rowid: r.rowid, start_ms: r.start_ms, trace_id: s.rowTrace.get(r.rowid) as string };
    },

    /** The fields summaries need, for every span of the trace. */
    traceSpansLite(projectId: string, traceId: string): SpanLiteRow[] {
      const sum = traces.summary(projectId, traceId);
      return traces.rows<SpanLiteRow>(projectId, traceId, { cols: LITE, check: { kind: 'length', expect: sum.span_count } }, sum);
    },

    /**
     * Every span of every project after `afterRowid`, in rowid order, all fields decoded (for
     * `sightline migrate --to-clickhouse`). `rowid` continues the scan.
     */
    spansAfter(afterRowid: number, limit: number): (SpanFullRow & { rowid: number; project_id: number; trace_id: string; trace_state: string; source: string; received_ms: number })[] {
      const rows = stmt(`SELECT s.rowid AS rowid, s.project_id, ${idTextSql('s.trace_id')} AS trace_id, s.trace_state, s.source, s.received_ms, ${FULL}
        FROM spans s WHERE s.rowid > ? ORDER BY s.rowid LIMIT ?`).all(afterRowid, limit) as any[];
      return rows.map(({ attr_keys, ...r }) => ({
        ...r,
        attributes: json(decode(attr_keys, r.attributes)) ?? {},
        events: json(r.events) ?? [],
        links: json(r.links) ?? [],
      }));
    },

    /** Span count, errors, times and root span (the first parentless span, else the earliest) of a trace. */
    traceSummary(projectId: string, traceId: string): TraceSummary {
      const sum = traces.summary(projectId, traceId);
      const root = sum.span_count
        ? traces.rows<{ name: string; service_name: string }>(
            projectId,
            traceId,
            { cols: `${SPAN_NAME_SQL} AS name, s.service_name`, tail: "ORDER BY (s.parent_span_id IS NULL OR s.parent_span_id = '') DESC, s.start_ms ASC, s.rowid LIMIT 1", check: { kind: 'count' } },
            sum,
          )[0]
        : undefined;
      return {
        span_count: sum.span_count,
        error_count: sum.error_count ?? 0,
        started_ms: sum.started_ms,
        ended_ms: sum.ended_ms,
        root_span_name: root?.name ?? null,
        root_service_name: root?.service_name ?? null,
      };
    },

    traceAggregate(projectId: string, traceId: string): TraceAggregate {
      const sum = traces.summary(projectId, traceId);
      return { span_count: sum.span_count, error_count: sum.error_count, started_ms: sum.started_ms, ended_ms: sum.ended_ms };
    },

    /** The trace's first `limit` spans by start time, every field. */
    traceSpansFull(projectId: string, traceId: string, limit: number): SpanFullRow[] {
      const sum = traces.summary(projectId, traceId);
      const rows = traces.rows<any>(
        projectId,
        traceId,
        { cols: FULL, tail: 'ORDER BY s.start_ms, s.rowid LIMIT ?', tailArgs: [limit], check: { kind: 'length', expect: Math.min(limit, sum.span_count) } },
        sum,
      );
      return rows.map(({ attr_keys, ...r }) => ({
        ...r,
        attributes: json(decode(attr_keys, r.attributes)) ?? {},
        events: json(r.events) ?? [],
        links: json(r.links) ?? [],
      }));
    },

    /**
     * Error groups whose events carry the trace id; events counted on a merged duplicate count on
     * the group it is merged into. Most events first.
     */
    async traceErrorGroups(projectId: string, traceId: string): Promise<TraceErrorGroupRow[]> {
      const pid = Number(projectId);
      const events = await errorEvents.traceGroups(pid, traceId);
      const out = new Map<string, TraceErrorGroupRow>();
      for (const e of events) {
        let g = s.group.get(pid, e.group_id) as any;
        if (!g) continue;
        if (g.merged_into) g = (s.group.get(pid, g.merged_into) as any) ?? g;
        const spans = e.span_ids;
        const prev = out.get(g.id);
        if (prev) {
          prev.trace_event_count += e.n;
          prev.first_event_ms = Math.min(prev.first_event_ms, e.first_ms);
          prev.last_event_ms = Math.max(prev.last_event_ms, e.last_ms);
          prev.span_ids = [...new Set([...prev.span_ids, ...spans])];
          continue;
        }
        const { merged_into: _m, ...rest } = g;
        out.set(g.id, { ...rest, trace_event_count: e.n, first_event_ms: e.first_ms, last_event_ms: e.last_ms, span_ids: spans });
      }
      return [...out.values()].sort((a, b) => b.trace_event_count - a.trace_event_count || b.last_event_ms - a.last_event_ms || (a.id < b.id ? -1 : 1));
    },

    /**
     * Spans starting in `[fromMs, toMs)` for the service map: ids, service, kind, duration, status
     * and, for client and producer spans only, the attributes as JSON text (parsed when needed). `core` tells whether the span starts
     * inside `[coreFromMs, coreToMs)`.
     */
    mapSpans(projectId: string, fromMs: number, toMs: number, coreFromMs: number, coreToMs: number): MapSpan[] {
      const rows = s.sample.all(Number(projectId), fromMs, toMs) as any[][];
      const out: MapSpan[] = new Array(rows.length);
      for (let i = 0; i < rows.length; i++) {
        const r = rows[i]!;
        const start = r[7] as number;
        out[i] = {
          trace_id: r[0],
          span_id: r[1],
          parent_span_id: r[2],
          service_name: r[3],
          kind: r[4],
          duration_ms: r[5],
          status_code: r[6],
          core: start >= coreFromMs && start < coreToMs,
          attributes: r[8] === null ? null : decode(r[9] as number | null, r[8] as string | Buffer),
        };
      }
      return out;
    },

    /**
     * Spans starting in `[fromMs, toMs)`: the exact number when at most `probe`, else an estimate
     * from how far into the window the `probe`-th span lies (reads at most `probe` index entries).
     */
    estimateSpans(projectId: string, fromMs: number, toMs: number, probe: number): { count: number; exact: boolean } {
      const pid = Number(projectId);
      const at = s.startAtRank.get(pid, fromMs, toMs, probe - 1) as number | undefined;
      if (at === undefined || at === null) return { count: s.countUpTo.get(pid, fromMs, toMs, probe) as number, exact: true };
      const covered = Math.max(at - fromMs, (toMs - fromMs) / 1e6);
      return { count: Math.round((probe * (toMs - fromMs)) / covered), exact: false };
    },

    parentService(projectId: string, traceId: string, spanId: string): string | null {
      const r = traces.rows<[string]>(projectId, traceId, { cols: 's.service_name', where: ` AND ${idEqSql('s.span_id')}`, args: [spanId, spanId], tail: 'LIMIT 1', check: { kind: 'any' }, raw: true });
      return r[0]?.[0] ?? null;
    },

    childServices(projectId: string, traceId: string, spanId: string): string[] {
      const r = traces.rows<[string]>(projectId, traceId, {
        cols: 'DISTINCT s.service_name',
        where: ` AND ${idEqSql('s.parent_span_id')}`,
        args: [spanId, spanId],
        check: { kind: 'count' },
        raw: true,
      });
      return r.map((x) => x[0]);
    },
  };
}

export type TracesReadRepo = ReturnType<typeof createTracesReadRepo>;

/**
 * The trace reads as every handler sees them: asynchronous, so that a ClickHouse implementation
 * (src/storage/clickhouse/traces-read.ts) can stand in for the SQLite one, plus batch forms of the
 * per-group and per-trace reads (one query per batch on ClickHouse, where a query is a round trip;
 * a loop over the single reads on SQLite, where a seek is cheap).
 */
export type TracesReader = {
  [K in Exclude<keyof TracesReadRepo, 'spansAfter'>]: TracesReadRepo[K] extends (...a: infer A) => Generator<infer Y>
    ? (...a: A) => AsyncIterable<Y>
    : TracesReadRepo[K] extends (...a: infer A) => infer R
      ? (...a: A) => Promise<Awaited<R>>
      : never;
} & {
  /** {@link TracesReadRepo.groupLastSeen} of each group, in the order given. */
  groupsLastSeen(projectId: string, groups: EntryGroupKey[], f: EntryFilter): Promise<(number | null)[]>;
  /** {@link TracesReadRepo.groupSparkline} of each group, in the order given. */
  groupsSparklines(projectId: string, groups: EntryGroupKey[], f: EntryFilter): Promise<Uint32Array[]>;
  /** {@link TracesReadRepo.groupCounts} of each group, in the order given. */
  groupsCounts(projectId: string, groups: EntryGroupKey[], f: EntryFilter): Promise<GroupCounts[]>;
  /** {@link TracesReadRepo.groupDetail} of each group, in the order given. */
  groupsDetail(projectId: string, groups: EntryGroupKey[], f: EntryFilter, sparkline?: boolean): Promise<GroupDetail[]>;
  /** {@link TracesReadRepo.traceSpansLite} of each trace (a trace without spans maps to []). */
  tracesSpansLite(projectId: string, traceIds: string[]): Promise<Map<string, SpanLiteRow[]>>;
  /** {@link TracesReadRepo.traceSummary} of each trace. */
  traceSummaries(projectId: string, traceIds: string[]): Promise<Map<string, TraceSummary>>;
  /** Service of each (trace, span) asked for, null when not received; in the order given. */
  spanServices(projectId: string, spans: { trace_id: string; span_id: string }[]): Promise<(string | null)[]>;
  /** Services of the children of each (trace, span) asked for; in the order given. */
  childServicesOf(projectId: string, spans: { trace_id: string; span_id: string }[]): Promise<string[][]>;
};

/** The SQLite repository behind the asynchronous interface (each call still runs synchronously). */
export function asyncTracesReader(repo: TracesReadRepo): TracesReader {
  const out: Record<string, unknown> = {};
  for (const [k, fn] of Object.entries(repo) as [string, (...a: unknown[]) => unknown][]) {
    out[k] =
      k === 'spanStream'
        ? async function* (...a: unknown[]) {
            yield* fn.apply(repo, a) as Generator<unknown>;
          }
        : async (...a: unknown[]) => fn.apply(repo, a);
  }
  const batch: Omit<TracesReader, Exclude<keyof TracesReadRepo, 'spansAfter'>> = {
    groupsLastSeen: async (pid, groups, f) => groups.map((g) => repo.groupLastSeen(pid, g, f)),
    groupsCounts: async (pid, groups, f) => groups.map((g) => repo.groupCounts(pid, g, f)),
    groupsSparklines: async (pid, groups, f) => groups.map((g) => repo.groupSparkline(pid, g, f)),
    groupsDetail: async (pid, groups, f, sparkline = true) => groups.map((g) => repo.groupDetail(pid, g, f, sparkline)),
    tracesSpansLite: async (pid, traceIds) => new Map(traceIds.map((t) => [t, repo.traceSpansLite(pid, t)])),
    traceSummaries: async (pid, traceIds) => new Map(traceIds.map((t) => [t, repo.traceSummary(pid, t)])),
    spanServices: async (pid, spans) => spans.map((sp) => repo.parentService(pid, sp.trace_id, sp.span_id)),
    childServicesOf: async (pid, spans) => spans.map((sp) => repo.childServices(pid, sp.trace_id, sp.span_id)),
  };
  return { ...(out as Omit<TracesReader, keyof typeof batch>), ...batch } as TracesReader;
}
