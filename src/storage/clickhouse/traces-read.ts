import type { MapSpan } from '../../domain/traces/service-map.js';
import { SPARKLINE_BUCKETS } from '../../domain/traces/operation-stats.js';
import type {
  EntryFilter, EntryGroupKey, GroupCounts, GroupDetail, ListStream, SpanFullRow, SpanLiteRow, SpanWhere, StreamRow, TraceAggregate, TraceErrorGroupRow, TraceSummary,
  TracesReader,
} from '../traces-read-repo.js';
import { lit, type ChEngine } from './client.js';

/* eslint-disable @typescript-eslint/no-explicit-any */

/** An attribute value as SQLite's CAST(… AS TEXT) of its JSON value gives it (traces.list `attributes`). */
function textOf(v: unknown): string | null {
  if (v === null || v === undefined) return null;
  if (typeof v === 'string') return v;
  if (typeof v === 'boolean') return v ? '1' : '0';
  if (typeof v === 'number') return String(v);
  return JSON.stringify(v);
}

function matchesWhere(w: SpanWhere | undefined, environment: string, attributes: string): boolean {
  if (!w) return true;
  if (w.environment !== undefined && environment !== w.environment) return false;
  if (w.attributes?.length) {
    let a: Record<string, unknown>;
    try {
      a = JSON.parse(attributes) as Record<string, unknown>;
    } catch {
      return false;
    }
    for (const c of w.attributes) if (textOf(a[c.key.replace(/"/g, '')]) !== c.value) return false;
  }
  return true;
}

const LITE_COLS = 'span_id, parent_span_id, name, operation, kind, service_name, environment, start_ms, end_ms, duration_ms, status_code';
const liteRow = (r: any): SpanLiteRow => ({
  span_id: r.span_id,
  parent_span_id: r.parent_span_id || null,
  name: r.name,
  operation: r.operation,
  kind: Number(r.kind),
  service_name: r.service_name,
  environment: r.environment,
  start_ms: Number(r.start_ms),
  end_ms: Number(r.end_ms),
  duration_ms: Number(r.duration_ms),
  status_code: Number(r.status_code),
});

/**
 * SQL for the value at 0-based rank `t` (an expression, below `n`) of the `n` durations in array `s`
 * (non-negative), without sorting the array: quantileExact at a level L = p/256 near `q` takes the
 * value at index floor(L · size) after an nth_element (ClickHouse 18.16 and current releases alike;
 * L is exact in binary, so that index is floor(p · size / 256) with no rounding), and the array is
 * padded below with `a` values -1 or above with `b` values +inf so that this index is t's:
 * floor(p (n + a) / 256) - a falls by 0 or 1 as `a` grows, so the least `a` with
 * p (n + a) < 256 (t + a + 1) lands on t exactly, and likewise the least `b` with
 * p (n + b) >= 256 t. Near `q` the padding is a few values (about |q - L| · n). (arraySort of
 * every group's durations took about 60% of operation stats on 18.16 at 10M spans.)
 */
export function valueAtRank(t: string, q: number): string {
  const p = Math.min(255, Math.max(1, Math.round(q * 256)));
  const d = `(${p} * toInt64(n) - 256 * (toInt64(${t}) + 1))`;
  const up = `(256 * toInt64(${t}) - ${p} * toInt64(n))`;
  const below = `if(${d} >= 0, intDiv(${d}, ${256 - p}) + 1, 0)`;
  const above = `if(${d} < 0 AND ${up} > 0, intDiv(${up} + ${p - 1}, ${p}), 0)`;
  const pad = (count: string, v: string) => `arrayResize(CAST([] AS Array(Float64)), toUInt64(${count}), ${v})`;
  return `arrayReduce('quantileExact(${p / 256})', arrayConcat(s, ${pad(below, '-1.')}, ${pad(above, 'inf')}))`;
}

/**
 * traces.* reads over the ClickHouse span tables (schema.ts): the same answers as the SQLite
 * repository, shaped for ClickHouse (aggregates in one query per group, a trace's spans through its
 * time range from `trace_chunks`). Error events still live in SQLite: `traceErrorGroups` is the
 * SQLite repository's.
 */
export function createChTracesReader(engine: ChEngine, sqlite: Pick<TracesReader, 'traceErrorGroups'>): TracesReader {
  const q = <T = any>(s: string) => engine.query<T>(s);
  /** Per project, how many groups its last unfiltered, untruncated entryGroups listed (see {@link groupsWhere}). */
  const groupsOf = new Map<string, number>();

  async function summary(projectId: string, traceId: string) {
    const [r] = await q(`SELECT count() AS n, sum(span_count) AS span_count, sum(error_count) AS error_count, min(min_start_ms) AS started_ms,
      max(max_end_ms) AS ended_ms, max(max_start_ms) AS last_start_ms FROM trace_chunks WHERE project_id = ${lit(Number(projectId))} AND trace_id = ${lit(traceId)}`);
    const none = !r || Number(r.n) === 0;
    return {
      span_count: none ? 0 : Number(r.span_count),
      error_count: none ? 0 : Number(r.error_count),
      started_ms: none ? null : Number(r.started_ms),
      ended_ms: none ? null : Number(r.ended_ms),
      last_start_ms: none ? null : Number(r.last_start_ms),
    };
  }

  /** Where-clause of one trace's spans (its time range from the chunks); null when the trace is unknown. */
  async function traceWhere(projectId: string, traceId: string): Promise<string | null> {
    const s = await summary(projectId, traceId);
    if (s.started_ms === null) return null;
    return `project_id = ${lit(Number(projectId))} AND start_ms >= ${lit(s.started_ms)} AND start_ms <= ${lit(s.last_start_ms!)} AND trace_id = ${lit(traceId)}`;
  }

  const key = (g: EntryGroupKey) => `${g.service_name}\u0000${g.operation}`;

  /** One row per group that has matching entry spans: `n` (their count) and `cols`, keyed by {@link key}. */
  async function grouped(projectId: string, groups: EntryGroupKey[], f: EntryFilter, cols: string, outer?: string): Promise<Map<string, any>> {
    const out = new Map<string, any>();
    if (!groups.length) return out;
    const w = groupsWhere(projectId, groups, f);
    const inner = `SELECT service_name, operation, count() AS n, ${cols} FROM entry_spans WHERE ${w} GROUP BY service_name, operation`;
    for (const r of await q(outer ? `SELECT service_name, operation, n, ${outer} FROM (${inner})` : inner)) out.set(key(r), r);
    return out;
  }

  /**
   * Entry spans (table `entry_spans`) matching the filter, of these groups or more: every caller keeps
   * only the rows of the groups it asked for, so the groups' IN list only narrows what is read. It is
   * left out when they are at least half of the project's groups (as the last unfiltered
   * {@link TracesReader.entryGroups} counted them): then reading the other groups' few rows costs less
   * than matching every row against the list (for 48 groups of 1.25M entry spans, about half the query).
   */
  function groupsWhere(projectId: string, groups: EntryGroupKey[], f: EntryFilter): string {
    let w = `project_id = ${lit(Number(projectId))} AND start_ms >= ${lit(f.fromMs)} AND start_ms < ${lit(f.toMs)}`;
    const all = groupsOf.get(projectId);
    if (all === undefined || groups.length * 2 < all) {
      w += ` AND (service_name, operation) IN (${groups.map((g) => `(${lit(g.service_name)}, ${lit(g.operation)})`).join(', ')})`;
    }
    if (f.environment !== undefined) w += ` AND environment = ${lit(f.environment)}`;
    if (f.status === 'error') w += ' AND status_code = 2';
    if (f.status === 'ok') w += ' AND status_code <> 2';
    if (f.minDurationMs !== undefined) w += ` AND duration_ms >= ${lit(f.minDurationMs)}`;
    return w;
  }

  /** Where-clause of the spans of several traces: each trace's id within its time range from the chunks; null when none is known. */
  async function tracesWhere(projectId: string, traceIds: string[]): Promise<string | null> {
    if (!traceIds.length) return null;
    const pid = lit(Number(projectId));
    const ranges = await q(`SELECT trace_id, min(min_start_ms) AS a, max(max_start_ms) AS b FROM trace_chunks WHERE project_id = ${pid}
      AND trace_id IN (${traceIds.map(lit).join(', ')}) GROUP BY trace_id`);
    if (!ranges.length) return null;
    return `project_id = ${pid} AND (${ranges.map((r) => `(start_ms >= ${lit(Number(r.a))} AND start_ms <= ${lit(Number(r.b))} AND trace_id = ${lit(r.trace_id)})`).join(' OR ')})`;
  }

  /**
   * Newest-first cursor over `[fromMs, toMs)` of the spans `where` selects, in growing batches. Each
   * query reads a time slice ending at the cursor (growing ×4 while slices come back short): on the
   * (project, start) key a recent slice reads few granules, where ORDER BY … DESC LIMIT over the
   * whole window would read it all.
   */
  async function* newestFirst(
    where: string,
    fromMs: number,
    toMs: number,
    filter?: (r: any) => boolean,
    cols = 'start_ms, trace_id, span_id',
    table: 'spans' | 'entry_spans' = 'spans',
  ): AsyncGenerator<StreamRow> {
    let upper = toMs;
    let inclusive = false;
    let n = 64;
    let slice = Math.max(1000, (toMs - fromMs) / 256);
    let atUpper = new Set<string>();
    for (;;) {
      const lower = Math.max(fromMs, upper - slice);
      const rows = await q(`SELECT ${cols} FROM ${table} WHERE ${where} AND start_ms >= ${lit(lower)}
        AND start_ms ${inclusive ? '<=' : '<'} ${lit(upper)} ORDER BY start_ms DESC LIMIT ${n}`);
      let fresh = 0;
      for (const r of rows) {
        const start = Number(r.start_ms);
        const key = `${r.trace_id}/${r.span_id}`;
        if (inclusive && start === upper && atUpper.has(key)) continue;
        fresh++;
        if (start !== upper) {
          upper = start;
          atUpper = new Set();
        }
        atUpper.add(key);
        inclusive = true;
        if (!filter || filter(r)) yield { rowid: 0, start_ms: start, trace_id: r.trace_id };
      }
      if (rows.length < n) {
        // The slice is read to its start: go on below it, with a wider slice.
        if (lower <= fromMs) return;
        upper = lower;
        inclusive = false;
        atUpper = new Set();
        slice *= 4;
        continue;
      }
      n = fresh === 0 ? n * 4 : Math.min(n * 4, 4096);
    }
  }

  /**
   * Entry-span count, errors and latest start per group matching the filter (not `minDurationMs`),
   * keyed by {@link key}: whole minutes of the window from `entry_minutes` (schema.ts, migration 3),
   * its partial first and last minutes from `spans` (few granules on its (project, start) key). The
   * same numbers as counting `entry_spans`, for a fraction of the reading.
   */
  async function minuteCounts(projectId: string, groups: EntryGroupKey[], f: EntryFilter): Promise<Map<string, { n: number; errors: number; last: number }>> {
    const out = new Map<string, { n: number; errors: number; last: number }>();
    if (!groups.length) return out;
    const pid = lit(Number(projectId));
    const m0 = Math.ceil(f.fromMs / 60_000);
    const m1 = Math.floor(f.toMs / 60_000);
    const env = f.environment !== undefined ? ` AND environment = ${lit(f.environment)}` : '';
    const edges = (m0 < m1 ? [[f.fromMs, m0 * 60_000], [m1 * 60_000, f.toMs]] : [[f.fromMs, f.toMs]]).filter(([a, b]) => a! < b!);
    const reads: Promise<any[]>[] = [];
    if (m0 < m1) {
      const all = groupsOf.get(projectId);
      const only = all === undefined || groups.length * 2 < all ? ` AND (service_name, operation) IN (${groups.map((g) => `(${lit(g.service_name)}, ${lit(g.operation)})`).join(', ')})` : '';
      reads.push(q(`SELECT service_name, operation, countMerge(n) AS n, sumMerge(errors) AS errors, maxMerge(last_ms) AS last_all, maxMerge(last_ok_ms) AS last_ok,
        maxMerge(last_error_ms) AS last_error FROM entry_minutes WHERE project_id = ${pid} AND minute >= ${m0} AND minute < ${m1}${env}${only} GROUP BY service_name, operation`));
    }
    if (edges.length) {
      reads.push(q(`SELECT service_name, operation, count() AS n, countIf(status_code = 2) AS errors, max(start_ms) AS last_all, maxIf(start_ms, status_code <> 2) AS last_ok,
        maxIf(start_ms, status_code = 2) AS last_error FROM spans WHERE project_id = ${pid} AND is_entry = 1${env}
        AND (${edges.map(([a, b]) => `(start_ms >= ${lit(a)} AND start_ms < ${lit(b)})`).join(' OR ')}) GROUP BY service_name, operation`));
    }
    for (const rows of await Promise.all(reads)) {
      for (const r of rows) {
        const all = Number(r.n);
        const errors = Number(r.errors);
        const n = f.status === 'error' ? errors : f.status === 'ok' ? all - errors : all;
        if (n <= 0) continue;
        const last = Number(f.status === 'error' ? r.last_error : f.status === 'ok' ? r.last_ok : r.last_all);
        const k = key(r);
        const cur = out.get(k);
        const e = f.status === 'ok' ? 0 : errors;
        if (!cur) out.set(k, { n, errors: e, last });
        else {
          cur.n += n;
          cur.errors += e;
          if (last > cur.last) cur.last = last;
        }
      }
    }
    return out;
  }

  /** An entry span's sparkline bucket in the window (0 to SPARKLINE_BUCKETS - 1, clamped by the reader). */
  const bucketOf = (f: EntryFilter) => `toInt64(floor((start_ms - ${lit(f.fromMs)}) * ${SPARKLINE_BUCKETS} / ${lit(f.toMs - f.fromMs)}))`;

  /**
   * Sparklines of the groups alone (groupsDetail counts them in its own pass, with sumMap): entry
   * spans per (group, bucket), at most 60 rows a group.
   */
  async function sparklines(projectId: string, groups: EntryGroupKey[], f: EntryFilter): Promise<Map<string, Uint32Array>> {
    const spark = new Map<string, Uint32Array>();
    for (const r of await q(`SELECT service_name, operation, ${bucketOf(f)} AS bk, count() AS c
      FROM entry_spans WHERE ${groupsWhere(projectId, groups, f)} GROUP BY service_name, operation, bk`)) {
      let a = spark.get(key(r));
      if (!a) spark.set(key(r), (a = new Uint32Array(SPARKLINE_BUCKETS)));
      a[Math.min(SPARKLINE_BUCKETS - 1, Math.max(0, Number(r.bk)))]! += Number(r.c);
    }
    return spark;
  }

  const reader: TracesReader = {
    async entryServices(projectId) {
      const rows = await q<{ s: string }>(`SELECT DISTINCT service_name AS s FROM entry_operations WHERE project_id = ${lit(Number(projectId))} ORDER BY s`);
      return rows.map((r) => r.s);
    },

    async entryGroups(projectId, opts = {}) {
      let w = `project_id = ${lit(Number(projectId))}`;
      if (opts.service !== undefined) w += ` AND service_name = ${lit(opts.service)}`;
      if (opts.operation !== undefined) w += ` AND operation = ${lit(opts.operation)}`;
      const max = opts.max ?? Infinity;
      const limit = Number.isFinite(max) ? ` LIMIT ${max + 1}` : '';
      const rows = await q<EntryGroupKey>(`SELECT DISTINCT service_name, operation FROM entry_operations WHERE ${w} ORDER BY service_name, operation${limit}`);
      if (rows.length > max) return { groups: rows.slice(0, max), truncated: true };
      if (opts.service === undefined && opts.operation === undefined) {
        if (groupsOf.size > 10_000) groupsOf.clear();
        groupsOf.set(projectId, rows.length);
      }
      return { groups: rows.map((r) => ({ service_name: r.service_name, operation: r.operation })), truncated: false };
    },

    async groupLastSeen(projectId, g, f) {
      return (await reader.groupsLastSeen(projectId, [g], f))[0]!;
    },

    async groupCounts(projectId, g, f): Promise<GroupCounts> {
      return (await reader.groupsCounts(projectId, [g], f))[0]!;
    },

    async groupDetail(projectId, g, f, sparkline = true): Promise<GroupDetail> {
      return (await reader.groupsDetail(projectId, [g], f, sparkline))[0]!;
    },

    async groupSparkline(projectId, g, f) {
      return (await reader.groupsSparklines(projectId, [g], f))[0]!;
    },

    async groupsSparklines(projectId, groups, f) {
      if (!groups.length) return [];
      const spark = await sparklines(projectId, groups, f);
      return groups.map((g) => spark.get(key(g)) ?? new Uint32Array(SPARKLINE_BUCKETS));
    },

    async groupsLastSeen(projectId, groups, f) {
      if (f.minDurationMs === undefined) {
        const c = await minuteCounts(projectId, groups, f);
        return groups.map((g) => c.get(key(g))?.last ?? null);
      }
      const rows = await grouped(projectId, groups, f, 'max(start_ms) AS last_ms');
      return groups.map((g) => {
        const r = rows.get(key(g));
        return r ? Number(r.last_ms) : null;
      });
    },

    async groupsCounts(projectId, groups, f) {
      if (f.minDurationMs === undefined) {
        const c = await minuteCounts(projectId, groups, f);
        return groups.map((g) => {
          const r = c.get(key(g));
          return { count: r?.n ?? 0, errors: r?.errors ?? 0 };
        });
      }
      const rows = await grouped(projectId, groups, f, 'countIf(status_code = 2) AS errors');
      return groups.map((g) => {
        const r = rows.get(key(g));
        return { count: r ? Number(r.n) : 0, errors: r ? Number(r.errors) : 0 };
      });
    },

    async groupsDetail(projectId, groups, f, sparkline = true) {
      // The values at ranks floor((n - 1) q) and the one above it (0-based, of n values sorted), as
      // the shared percentile interpolates them (see `pct` below).
      const rank = (q: number) => `toUInt64(floor((n - 1) * ${q}))`;
      const ranks = (q: number, name: string) => `${valueAtRank(rank(q), q)} AS lo${name}, ${valueAtRank(`least(${rank(q)} + 1, n - 1)`, q)} AS hi${name}`;
      // One pass: the sparkline's bucket counts as a sumMap beside the aggregates (a second query
      // over the same entry spans cost as much CPU as the whole sumMap).
      const sp = sparkline ? `, sumMap([${bucketOf(f)}], [toUInt64(1)]) AS sp` : '';
      const rows = await grouped(
        projectId,
        groups,
        f,
        `countIf(status_code = 2) AS errors, max(start_ms) AS last_ms, groupArray(duration_ms) AS s${sp}`,
        `errors, last_ms, ${ranks(0.5, '50')}, ${ranks(0.95, '95')}${sparkline ? ', sp' : ''}`,
      );
      const us = (v: unknown) => Math.round(Number(v) * 1000) / 1000;
      const pct = (n: number, q: number, lo: unknown, hi: unknown): number | null => {
        if (n === 0) return null;
        const h = (n - 1) * q;
        const l = Math.floor(h);
        const vLo = us(lo);
        if (l + 1 >= n || h === l) return vLo;
        return vLo + (h - l) * (us(hi) - vLo);
      };
      return groups.map((g): GroupDetail => {
        const r = rows.get(key(g));
        const n = r ? Number(r.n) : 0;
        let buckets: Uint32Array | null = null;
        if (sparkline) {
          buckets = new Uint32Array(SPARKLINE_BUCKETS);
          // sumMap's (keys, sums): a JSON array of two arrays (an object on releases that name tuple elements)
          const [ks, cs] = (r ? (Array.isArray(r.sp) ? r.sp : Object.values(r.sp)) : [[], []]) as [unknown[], unknown[]];
          ks.forEach((k, i) => (buckets![Math.min(SPARKLINE_BUCKETS - 1, Math.max(0, Number(k)))]! += Number(cs[i])));
        }
        return {
          count: n,
          errors: r ? Number(r.errors) : 0,
          last_ms: r ? Number(r.last_ms) : null,
          durations: new Float64Array(0),
          p50: pct(n, 0.5, r?.lo50, r?.hi50),
          p95: pct(n, 0.95, r?.lo95, r?.hi95),
          buckets,
        };
      });
    },

    async tracesSpansLite(projectId, traceIds) {
      const out = new Map<string, SpanLiteRow[]>(traceIds.map((t) => [t, []]));
      const w = await tracesWhere(projectId, [...out.keys()]);
      if (!w) return out;
      for (const r of await q(`SELECT trace_id, ${LITE_COLS} FROM spans WHERE ${w}`)) out.get(r.trace_id)?.push(liteRow(r));
      return out;
    },

    async spanServices(projectId, spans) {
      const w = await tracesWhere(projectId, [...new Set(spans.map((sp) => sp.trace_id))]);
      if (!w) return spans.map(() => null);
      const found = new Map<string, string>();
      const pairs = spans.map((sp) => `(${lit(sp.trace_id)}, ${lit(sp.span_id)})`).join(', ');
      for (const r of await q(`SELECT trace_id, span_id, any(service_name) AS s FROM spans WHERE ${w} AND (trace_id, span_id) IN (${pairs}) GROUP BY trace_id, span_id`)) {
        found.set(`${r.trace_id}/${r.span_id}`, r.s);
      }
      return spans.map((sp) => found.get(`${sp.trace_id}/${sp.span_id}`) ?? null);
    },

    async childServicesOf(projectId, spans) {
      const w = await tracesWhere(projectId, [...new Set(spans.map((sp) => sp.trace_id))]);
      if (!w) return spans.map(() => []);
      const found = new Map<string, string[]>();
      const pairs = spans.map((sp) => `(${lit(sp.trace_id)}, ${lit(sp.span_id)})`).join(', ');
      for (const r of await q(`SELECT trace_id, parent_span_id, groupUniqArray(service_name) AS s FROM spans WHERE ${w} AND (trace_id, parent_span_id) IN (${pairs})
        GROUP BY trace_id, parent_span_id`)) {
        found.set(`${r.trace_id}/${r.parent_span_id}`, r.s);
      }
      return spans.map((sp) => found.get(`${sp.trace_id}/${sp.span_id}`) ?? []);
    },

    async *spanStream(projectId: string, stream: ListStream, fromMs: number, toMs: number): AsyncGenerator<StreamRow> {
      const pid = lit(Number(projectId));
      if (stream.kind === 'errors') {
        yield* newestFirst(`project_id = ${pid} AND status_code = 2`, fromMs, toMs);
        return;
      }
      if (stream.kind === 'all') {
        const where = stream.where;
        let w = `project_id = ${pid}`;
        if (where?.environment !== undefined) w += ` AND environment = ${lit(where.environment)}`;
        yield* newestFirst(
          w, fromMs, toMs,
          where?.attributes?.length ? (r) => matchesWhere(where, r.environment, r.attributes) : undefined,
          where?.attributes?.length ? 'start_ms, trace_id, span_id, environment, attributes' : undefined,
        );
        return;
      }
      if (!stream.groups.length) return;
      let w = `project_id = ${pid} AND (service_name, operation) IN (${stream.groups.map((g) => `(${lit(g.service_name)}, ${lit(g.operation)})`).join(', ')})`;
      if (stream.environment !== undefined) w += ` AND environment = ${lit(stream.environment)}`;
      if (stream.minDurationMs !== undefined) w += ` AND duration_ms >= ${lit(stream.minDurationMs)}`;
      yield* newestFirst(w, fromMs, toMs, undefined, undefined, 'entry_spans');
    },

    async traceSpansLite(projectId, traceId) {
      const w = await traceWhere(projectId, traceId);
      if (!w) return [];
      return (await q(`SELECT ${LITE_COLS} FROM spans WHERE ${w}`)).map(liteRow);
    },

    async traceSummary(projectId, traceId) {
      return (await reader.traceSummaries(projectId, [traceId])).get(traceId)!;
    },

    async traceSummaries(projectId, traceIds) {
      const out = new Map<string, TraceSummary>();
      const none = (): TraceSummary => ({ span_count: 0, error_count: 0, started_ms: null, ended_ms: null, root_span_name: null, root_service_name: null });
      for (const t of traceIds) out.set(t, none());
      if (!traceIds.length) return out;
      const pid = lit(Number(projectId));
      const sums = await q(`SELECT trace_id, sum(span_count) AS span_count, sum(error_count) AS error_count, min(min_start_ms) AS a, max(max_start_ms) AS b,
        max(max_end_ms) AS e FROM trace_chunks WHERE project_id = ${pid} AND trace_id IN (${traceIds.map(lit).join(', ')}) GROUP BY trace_id`);
      if (!sums.length) return out;
      for (const r of sums) {
        out.set(r.trace_id, { span_count: Number(r.span_count), error_count: Number(r.error_count), started_ms: Number(r.a), ended_ms: Number(r.e), root_span_name: null, root_service_name: null });
      }
      const ranges = sums.map((r) => `(start_ms >= ${lit(Number(r.a))} AND start_ms <= ${lit(Number(r.b))} AND trace_id = ${lit(r.trace_id)})`).join(' OR ');
      // The root: the first parentless span, else the earliest span (as SQLite orders them).
      for (const r of await q(`SELECT trace_id, argMin(tuple(name, service_name), tuple(parent_span_id != '', start_ms)) AS root FROM spans
        WHERE project_id = ${pid} AND (${ranges}) GROUP BY trace_id`)) {
        const t = out.get(r.trace_id)!;
        t.root_span_name = r.root[0];
        t.root_service_name = r.root[1];
      }
      return out;
    },

    async traceAggregate(projectId, traceId): Promise<TraceAggregate> {
      const s = await summary(projectId, traceId);
      return { span_count: s.span_count, error_count: s.error_count, started_ms: s.started_ms, ended_ms: s.ended_ms };
    },

    async traceSpansFull(projectId, traceId, limit): Promise<SpanFullRow[]> {
      const w = await traceWhere(projectId, traceId);
      if (!w) return [];
      const rows = await q(`SELECT ${LITE_COLS}, service_version, status_message, attributes, events, links, scope_name, scope_version
        FROM spans WHERE ${w} ORDER BY start_ms, received_ms, span_id LIMIT ${Math.max(0, Math.floor(limit))}`);
      return rows.map((r) => ({
        ...liteRow(r),
        service_version: r.service_version,
        status_message: r.status_message,
        attributes: r.attributes ? JSON.parse(r.attributes) : {},
        events: r.events ? JSON.parse(r.events) : [],
        links: r.links ? JSON.parse(r.links) : [],
        scope_name: r.scope_name,
        scope_version: r.scope_version,
      }));
    },

    traceErrorGroups(projectId, traceId): Promise<TraceErrorGroupRow[]> {
      return sqlite.traceErrorGroups(projectId, traceId);
    },

    async mapSpans(projectId, fromMs, toMs, coreFromMs, coreToMs): Promise<MapSpan[]> {
      const rows = await q(`SELECT trace_id, span_id, parent_span_id, service_name, kind, duration_ms, status_code, start_ms,
        if(kind IN (3, 4), attributes, '') AS attributes FROM spans WHERE project_id = ${lit(Number(projectId))} AND start_ms >= ${lit(fromMs)} AND start_ms < ${lit(toMs)}`);
      return rows.map((r) => {
        const start = Number(r.start_ms);
        const kind = Number(r.kind);
        return {
          trace_id: r.trace_id,
          span_id: r.span_id,
          parent_span_id: r.parent_span_id || null,
          service_name: r.service_name,
          kind,
          duration_ms: Number(r.duration_ms),
          status_code: Number(r.status_code),
          core: start >= coreFromMs && start < coreToMs,
          attributes: kind === 3 || kind === 4 ? r.attributes : null,
        };
      });
    },

    async estimateSpans(projectId, fromMs, toMs, probe) {
      // As SQLite estimates: the start of the probe-th span of the window; fewer spans are counted.
      // It is looked for in a leading slice of the window (that span is the slice's probe-th as
      // well), widened ×8 while the slice holds fewer: at 10M spans a day one query reads 1/64 of
      // the day's spans, where counting them all read every one.
      const w = `project_id = ${lit(Number(projectId))} AND start_ms >= ${lit(fromMs)}`;
      const n = Math.max(1, Math.floor(probe));
      for (let part = 1 / 64; ; part *= 8) {
        const upper = part >= 1 ? toMs : fromMs + (toMs - fromMs) * part;
        const rows = await q(`SELECT start_ms FROM spans WHERE ${w} AND start_ms < ${lit(upper)} ORDER BY start_ms LIMIT 1 OFFSET ${n - 1}`);
        if (rows.length) {
          const covered = Math.max(Number(rows[0].start_ms) - fromMs, (toMs - fromMs) / 1e6);
          return { count: Math.round((n * (toMs - fromMs)) / covered), exact: false };
        }
        if (part >= 1) break;
      }
      const [r] = await q(`SELECT count() AS n FROM spans WHERE ${w} AND start_ms < ${lit(toMs)}`);
      return { count: Number(r?.n ?? 0), exact: true };
    },

    async parentService(projectId, traceId, spanId) {
      const w = await traceWhere(projectId, traceId);
      if (!w) return null;
      const [r] = await q<{ s: string }>(`SELECT service_name AS s FROM spans WHERE ${w} AND span_id = ${lit(spanId)} LIMIT 1`);
      return r ? r.s : null;
    },

    async childServices(projectId, traceId, spanId) {
      const w = await traceWhere(projectId, traceId);
      if (!w) return [];
      return (await q<{ s: string }>(`SELECT DISTINCT service_name AS s FROM spans WHERE ${w} AND parent_span_id = ${lit(spanId)}`)).map((r) => r.s);
    },
  };
  return reader;
}
