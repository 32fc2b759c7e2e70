import type { Statement } from 'better-sqlite3';
import type { Db } from './db.js';
import type { TelemetryWriter } from './telemetry-store.js';
import { ENTRY, type EntryGroupKey } from './traces-read-repo.js';

/**
 * Hourly tallies of entry-span durations per (service, operation, environment) (migration 054), so
 * that the slowest operations of observability.summary do not read every entry span of the window
 * (issue 19: ~55 ms of CPU at 1M spans, the largest part of the summary).
 *
 * A row per project, hour (of start time), service, operation and environment: entry spans, failed
 * ones, and counts per duration bucket (varints). Durations are the integer microseconds the
 * operation reads use (`round(duration_ms * 1000)`), bucketed 32 per octave (exact below 64 µs).
 * Written in the ingest transaction from the rows just stored, taken off by span expiry, backfilled
 * by the migration.
 *
 * Percentiles stay exact: the tallies bound each group's p95 by the bucket(s) holding its ranks, the
 * groups are taken by descending bound until `limit` exact values beat every remaining bound, and
 * an exact value is read back from the spans of its bucket alone (in bench/scaling.ts at 1M spans,
 * where every route has the same duration distribution, 14–16 of 56 groups). Those spans are found by
 * walking the group's window in spans_entry: an index by duration would read only the bucket but
 * cost ~24 % more CPU per span written (measured), for ~3 ms a read.
 */
export const HOUR_MS = 3_600_000;
/** Buckets per octave (a power of two); durations below 2 × SUB µs have a bucket each. */
const SUB = 32;
const SUB_BITS = 5;
/** Highest bucket index + 1 (`durationBucket` of 2^53 µs is 48 × SUB + 2 × SUB − 1). */
const BUCKETS = 50 * SUB;
/** Integer microseconds of a span's duration, as the operation reads compute it. */
export const DURATION_US_SQL = 'CAST(round(duration_ms * 1000) AS INTEGER)';

/** Bucket of a non-negative integer duration in µs: the value itself below 2 × SUB, then SUB per octave (≤ 3.1 % wide). */
export function durationBucket(u: number): number {
  if (u < 2 * SUB) return u < 0 ? 0 : u;
  let e: number;
  if (u < 2 ** 31) e = 31 - Math.clz32(u) - SUB_BITS;
  else {
    e = 0;
    for (let x = u; x >= 2 * SUB; x = Math.floor(x / 2)) e++;
  }
  return SUB * e + Math.floor(u / 2 ** e);
}

/** Smallest and largest µs value of a bucket. */
export function bucketRange(b: number): [number, number] {
  if (b < 2 * SUB) return [b, b];
  const e = Math.floor(b / SUB) - 1;
  const x = b - SUB * e;
  return [x * 2 ** e, (x + 1) * 2 ** e - 1];
}

/*
 * Counts per bucket as bytes: per non-zero bucket in ascending order, the varint of its distance
 * from the previous one and the zigzag varint of its count: 2–3 bytes a bucket instead of 8 (a
 * tally row is rewritten by every write batch touching its hour; a 1M-span file holds ~170-byte rows).
 */
function decodeInto(blob: Uint8Array, into: (b: number, n: number) => void): void {
  let i = 0;
  let b = 0;
  const varint = () => {
    let v = 0;
    let m = 1;
    for (;;) {
      const x = blob[i++]!;
      v += (x & 127) * m;
      if (x < 128) return v;
      m *= 128;
    }
  };
  while (i < blob.length) {
    b += varint();
    const z = varint();
    into(b, z % 2 ? -(z + 1) / 2 : z / 2);
  }
}

/** Adds a blob's counts into a dense array (the read's hot loop). */
function addInto(blob: Uint8Array, dense: Float64Array): void {
  decodeInto(blob, (b, n) => (dense[b] += n));
}

/** A stored blob (or none) plus some counts (bucket → count), merged in one pass into a new blob. */
function mergeInto(stored: Uint8Array | null, add: Map<number, number>): Buffer {
  const extra = [...add].sort((a, b) => a[0] - b[0]);
  const out: number[] = [];
  const varint = (v: number) => {
    while (v >= 128) {
      out.push((v % 128) | 128);
      v = Math.floor(v / 128);
    }
    out.push(v);
  };
  let prev = 0;
  const emit = (b: number, c: number) => {
    if (c === 0) return;
    varint(b - prev);
    varint(c >= 0 ? 2 * c : -2 * c - 1);
    prev = b;
  };
  let j = 0;
  if (stored) decodeInto(stored, (b, c) => {
    while (j < extra.length && extra[j]![0] < b) emit(extra[j]![0], extra[j++]![1]);
    if (j < extra.length && extra[j]![0] === b) c += extra[j++]![1];
    emit(b, c);
  });
  while (j < extra.length) emit(extra[j]![0], extra[j++]![1]);
  return Buffer.from(out);
}

interface Tally {
  pid: number;
  service: string;
  operation: string;
  environment: string;
  hour: number;
  n: number;
  errors: number;
  counts: Map<number, number>;
  stored: Uint8Array | null;
}

/** Entry spans of some rows, as [project_id, service_name, operation, environment, start_ms, µs, status_code]. */
const ROW_COLS = `project_id, service_name, operation, environment, start_ms, ${DURATION_US_SQL}, status_code`;
type Row = [number, string, string, string, number, number, number];

/** Rows written per multi-row INSERT of tallies. */
const PUT_ROWS = 64;

/**
 * Adds (sign +1) or takes off (-1) rows into per-(group, hour) tallies, then writes them: the
 * stored rows of the keys touched are read by one statement and written back by a few multi-row
 * inserts (a statement per key made the tallies cost twice as much per span).
 */
function tallyWriter(db: Db) {
  const get = db
    .prepare(
      `SELECT s.project_id, s.hour, s.service_name, s.operation, s.environment, s.n, s.errors, s.counts FROM json_each(?) j
       CROSS JOIN span_op_hours s ON s.project_id = j.value ->> 0 AND s.hour = j.value ->> 1 AND s.service_name = j.value ->> 2
         AND s.operation = j.value ->> 3 AND s.environment = j.value ->> 4`,
    )
    .raw();
  const puts = new Map<number, Statement>();
  const put = (n: number) => {
    let st = puts.get(n);
    if (!st) {
      const values = Array.from({ length: n }, () => '(?, ?, ?, ?, ?, ?, ?, ?)').join(', ');
      puts.set(n, (st = db.prepare(`INSERT OR REPLACE INTO span_op_hours (project_id, hour, service_name, operation, environment, n, errors, counts) VALUES ${values}`)));
    }
    return st;
  };
  const del = db.prepare('DELETE FROM span_op_hours WHERE project_id = ? AND hour = ? AND service_name = ? AND operation = ? AND environment = ?');
  const keyOf = (pid: number, hour: number, service: string, operation: string, environment: string) => `${pid}\u0000${hour}\u0000${service}\u0000${operation}\u0000${environment}`;
  return (rows: Iterable<Row>, sign: 1 | -1) => {
    const m = new Map<string, Tally>();
    for (const [pid, service, operation, environment, start, u, status] of rows) {
      const hour = Math.floor(start / HOUR_MS) * HOUR_MS;
      const k = keyOf(pid, hour, service, operation, environment);
      let t = m.get(k);
      if (!t) m.set(k, (t = { pid, service, operation, environment, hour, n: 0, errors: 0, counts: new Map(), stored: null }));
      t.n += sign;
      if (status === 2) t.errors += sign;
      const b = durationBucket(u);
      t.counts.set(b, (t.counts.get(b) ?? 0) + sign);
    }
    if (!m.size) return;
    const stored = get.all(JSON.stringify([...m.values()].map((t) => [t.pid, t.hour, t.service, t.operation, t.environment]))) as [number, number, string, string, string, number, number, Buffer][];
    for (const [pid, hour, service, operation, environment, n, errors, counts] of stored) {
      const t = m.get(keyOf(pid, hour, service, operation, environment));
      if (!t) continue;
      t.n += n;
      t.errors += errors;
      t.stored = counts;
    }
    let args: unknown[] = [];
    const flush = () => {
      if (args.length) put(args.length / 8).run(...args);
      args = [];
    };
    for (const t of m.values()) {
      if (t.n <= 0) del.run(t.pid, t.hour, t.service, t.operation, t.environment);
      else {
        args.push(t.pid, t.hour, t.service, t.operation, t.environment, t.n, t.errors, mergeInto(t.stored, t.counts));
        if (args.length === PUT_ROWS * 8) flush();
      }
    }
    flush();
  };
}

/** Wraps a telemetry writer so every span batch also updates the tallies, in the same transaction. */
export function withOperationRollups(db: Db, writer: TelemetryWriter): TelemetryWriter {
  const maxRowid = db.prepare('SELECT max(rowid) FROM spans').pluck();
  const fresh = db.prepare(`SELECT ${ROW_COLS} FROM spans WHERE rowid > ? AND ${ENTRY}`).raw();
  const write = tallyWriter(db);
  const insertSpans = db.transaction((...args: Parameters<TelemetryWriter['insertSpans']>) => {
    const before = (maxRowid.get() as number | null) ?? 0;
    const n = writer.insertSpans(...args);
    if (n > 0) write(fresh.all(before) as Row[], 1);
    return n;
  });
  // IMMEDIATE: the write lock is taken before max(rowid) is read, so no other connection adds rows in between.
  return { ...writer, insertSpans: (...a) => insertSpans.immediate(...a) };
}

/** Span expiry hook (retention-repo): the expiring entry spans come off the tallies. */
export function operationRollupExpiry(db: Db): { run(keys: unknown[][]): void } {
  const rows = db.prepare(`SELECT ${ROW_COLS} FROM spans WHERE rowid IN (SELECT value FROM json_each(?)) AND ${ENTRY}`).raw();
  const write = tallyWriter(db);
  return { run: (keys) => write(rows.all(JSON.stringify(keys.map((k) => k[0]))) as Row[], -1) };
}

/** Migration 054: tallies of the spans already stored. */
export function backfillOperationRollups(db: Db): void {
  const write = tallyWriter(db);
  const all = db.prepare(`SELECT rowid, ${ROW_COLS} FROM spans WHERE rowid > ? AND ${ENTRY} ORDER BY rowid LIMIT 100000`).raw();
  let after = 0;
  for (;;) {
    const batch = all.all(after) as [number, ...Row][];
    if (!batch.length) return;
    after = batch.at(-1)![0];
    write(
      batch.map((r) => r.slice(1) as Row),
      1,
    );
  }
}

export interface SlowOperation extends EntryGroupKey {
  count: number;
  errors: number;
  p50: number | null;
  p95: number | null;
}

/** Thrown when the tallies disagree with the spans they count: the caller reads the spans instead. */
export class RollupMismatch extends Error {}

/**
 * The `limit` groups (of those given, in that order) with the highest p95 entry-span duration in
 * `[fromMs, toMs)`, sorted as observability.summary sorts them, with count, failed, p50 and p95 —
 * the same values as computing them from every entry span (TracesReadRepo.groupDetail). Whole hours
 * come from the tallies, the window's partial hours at its edges from the spans; exact percentile
 * values from the spans of the bucket holding each rank, for the groups whose p95 can reach the top.
 */
export function createOperationRollupReader(db: Db) {
  const cache = new Map<string, Statement>();
  const stmt = (sql: string) => {
    let s = cache.get(sql);
    if (!s) cache.set(sql, (s = db.prepare(sql)));
    return s;
  };
  const GROUP = `FROM spans INDEXED BY spans_entry WHERE project_id = ? AND service_name = ? AND operation = ? AND start_ms >= ? AND start_ms < ? AND ${ENTRY}`;

  return {
    slowest(projectId: string, groups: EntryGroupKey[], f: { fromMs: number; toMs: number; environment?: string }, limit: number): SlowOperation[] {
      const pid = Number(projectId);
      const env = f.environment !== undefined ? ' AND environment = ?' : '';
      const envArg = f.environment !== undefined ? [f.environment] : [];
      let h1 = Math.ceil(f.fromMs / HOUR_MS) * HOUR_MS;
      let h2 = Math.floor(f.toMs / HOUR_MS) * HOUR_MS;
      if (h2 <= h1) h1 = h2 = f.toMs; // no whole hour: all from the spans
      type G = { key: EntryGroupKey; i: number; n: number; errors: number; dense: Float64Array; edge: number[]; lo: number; hi: number; p95?: number; p50?: number };
      const byKey = new Map<string, G>();
      const gs: G[] = groups.map((key, i) => {
        const g: G = { key, i, n: 0, errors: 0, dense: new Float64Array(BUCKETS), edge: [], lo: 0, hi: 0 };
        byKey.set(`${key.service_name}\u0000${key.operation}`, g);
        return g;
      });
      if (h2 > h1) {
        const rows = stmt(`SELECT service_name, operation, n, errors, counts FROM span_op_hours WHERE project_id = ? AND hour >= ? AND hour < ?${env}`)
          .raw()
          .all(pid, h1, h2, ...envArg) as [string, string, number, number, Buffer][];
        for (const [s, o, n, errors, counts] of rows) {
          const g = byKey.get(`${s}\u0000${o}`);
          if (!g) continue;
          g.n += n;
          g.errors += errors;
          addInto(counts, g.dense);
        }
      }
      // Partial hours at the edges, from the spans.
      const edges: [number, number][] = [];
      if (f.fromMs < h1) edges.push([f.fromMs, h1]);
      if (h2 < f.toMs) edges.push([h2, f.toMs]);
      for (const [a, b] of edges) {
        const q = stmt(`SELECT count(*), total(status_code = 2), group_concat(${DURATION_US_SQL}) ${GROUP}${env}`).raw();
        for (const g of gs) {
          const [n, errors, d] = q.get(pid, g.key.service_name, g.key.operation, a, b, ...envArg) as [number, number, string | null];
          if (!n) continue;
          g.n += n;
          g.errors += errors;
          for (const x of d!.split(',')) {
            const u = Number(x);
            g.edge.push(u);
            g.dense[durationBucket(u)]++;
          }
        }
      }
      const live = gs.filter((g) => g.n > 0);
      /** Bucket holding 0-based rank r, and how many values lie in lower buckets. */
      const locate = (g: G, r: number): [number, number] => {
        let below = 0;
        for (let b = 0; b < BUCKETS; b++) {
          const c = g.dense[b]!;
          if (r < below + c) return [b, below];
          below += c;
        }
        throw new RollupMismatch('rank beyond the tallies');
      };
      const ranks = (n: number, q: number) => {
        const h = (n - 1) * q;
        const lo = Math.floor(h);
        return { h, lo, two: !(lo + 1 >= n || h === lo) };
      };
      for (const g of live) {
        const { lo, two } = ranks(g.n, 0.95);
        g.lo = bucketRange(locate(g, lo)[0])[0] / 1000;
        g.hi = bucketRange(locate(g, two ? lo + 1 : lo)[0])[1] / 1000;
      }
      /** Exact values of the given ranks: the spans of their buckets, read back. */
      const valuesAt = (g: G, rs: number[]): number[] => {
        const located = rs.map((r) => [r, ...locate(g, r)] as [number, number, number]);
        const buckets = [...new Set(located.map((x) => x[1]))];
        const inBucket = new Map<number, number[]>(buckets.map((b) => [b, []]));
        for (const u of g.edge) inBucket.get(durationBucket(u))?.push(u);
        if (h2 > h1) {
          // The group's entry spans of the whole hours, in time order (spans_entry), only those of the buckets kept.
          const ranges = buckets.map(() => `${DURATION_US_SQL} BETWEEN ? AND ?`).join(' OR ');
          const vs = stmt(`SELECT ${DURATION_US_SQL} ${GROUP}${env} AND (${ranges})`)
            .pluck()
            .all(pid, g.key.service_name, g.key.operation, h1, h2, ...envArg, ...buckets.flatMap(bucketRange)) as number[];
          for (const u of vs) inBucket.get(durationBucket(u))!.push(u);
        }
        for (const [b, vs] of inBucket) {
          if (vs.length !== g.dense[b]) throw new RollupMismatch(`bucket ${b}: ${vs.length} spans, tallied ${g.dense[b]}`);
          vs.sort((x, y) => x - y);
        }
        return located.map(([r, b, below]) => inBucket.get(b)![r - below]! / 1000);
      };
      const percentile = (g: G, q: number): number => {
        const { h, lo, two } = ranks(g.n, q);
        const [vLo, vHi] = valuesAt(g, two ? [lo, lo + 1] : [lo]);
        return two ? vLo! + (h - lo) * (vHi! - vLo!) : vLo!;
      };
      // Exact p95 by descending upper bound until `limit` exact values beat every remaining bound.
      const byBound = [...live].sort((a, b) => b.hi - a.hi || a.i - b.i);
      const exact: G[] = [];
      let kth = -Infinity;
      for (const g of byBound) {
        if (exact.length >= limit && kth > g.hi * (1 + 1e-9)) break;
        g.p95 = percentile(g, 0.95);
        exact.push(g);
        if (exact.length >= limit) kth = exact.map((x) => x.p95!).sort((a, b) => b - a)[limit - 1]!;
      }
      // The summary's order (traces.operations' p95 sort), over the groups in their given order.
      const top = exact
        .sort((a, b) => a.i - b.i)
        .sort((a, b) => b.p95! - a.p95! || (a.key.operation < b.key.operation ? -1 : 1))
        .slice(0, limit);
      for (const g of top) g.p50 = percentile(g, 0.5);
      return top.map((g) => ({ ...g.key, count: g.n, errors: g.errors, p50: g.p50!, p95: g.p95! }));
    },
  };
}

export type OperationRollupReader = ReturnType<typeof createOperationRollupReader>;
