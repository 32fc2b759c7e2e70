/**
 * events.latency without reading every event of the window (issue 19; tables of migration 055).
 *
 * Per project, source, filter partition and UTC 5 minutes, hour and day of received time, a row of
 * `error_latency_tallies` holds the count of events, their exact latency sum and their counts per
 * latency bucket (src/domain/errors/latency.ts). The partition (`dims`) is what a read
 * filters on: 0 service and environment, 1 service only, 2 environment only, 3 neither (the unused
 * columns hold ''), so each period length is one index range whatever the filters. Events received
 * more than LATENCY_MAX_AGE_MS after they happened are not counted (the read leaves them out).
 *
 * A read takes the window's whole days, hours and 5-minute spans from the tallies and its two
 * partial 5-minute edges from the events (error_events_received), finds per percentile the bucket
 * holding its rank, then reads the events of the window in that bucket (error_events_latency: one
 * index range) and sorts them: the answer is the exact nearest-rank value. What a bucket holds is
 * checked against its tally; a difference (which would be a bug) makes the caller read every event
 * of the window instead.
 *
 * Written once per ingest write batch with the group tallies (src/storage/errors-repo.ts), taken
 * off by expiry (src/storage/retention-repo.ts), rows left at 0 deleted.
 */
import type { Statement } from 'better-sqlite3';
import type { Db } from './db.js';
import { ExactSum, exactUnits, latencyBucket, latencyBucketSql, nearestRankIndex, unitsToNumber } from '../domain/errors/latency.js';
import { HOUR_MS } from './migrations/046-error-group-hours.js';

const DAY_MS = 24 * HOUR_MS;
/**
 * The periods tallied: UTC 5-minute spans and hours of received time. A window reads its whole hours
 * (at most 744 rows: 31 days), then its other whole 5-minute spans (at most 22), then the events of
 * its two partial 5-minute spans. Days were tallied too and dropped: a row per day is rewritten by
 * every write batch of the day (its bucket counts are the largest blob), and reading 744 hour rows
 * costs a few milliseconds.
 */
export const LATENCY_SPANS = [5 * 60_000, HOUR_MS] as const;
const FINE_MS = LATENCY_SPANS[0];

/** The whole periods covering [lo, hi) (both multiples of the finest span), coarsest first. */
function cover(lo: number, hi: number, spans: readonly number[]): [span: number, lo: number, hi: number][] {
  if (lo >= hi || !spans.length) return [];
  const span = spans[spans.length - 1]!;
  const rest = spans.slice(0, -1);
  const s0 = Math.ceil(lo / span) * span;
  const s1 = Math.floor(hi / span) * span;
  if (s0 >= s1) return cover(lo, hi, rest);
  return [[span, s0, s1], ...cover(lo, s0, rest), ...cover(s1, hi, rest)];
}

/** events.latency leaves out events received more than this long after they happened. */
export const LATENCY_MAX_AGE_MS = 3_600_000;

/** An event's latency in SQL (clock skew into the future counts as 0). */
export const LATENCY_SQL = 'MAX(0, received_ms - timestamp_ms)';
/** The events events.latency counts (a literal: the partial index error_events_latency is read only by queries naming it so). */
export const LATENCY_COUNTED_SQL = `received_ms - timestamp_ms <= ${LATENCY_MAX_AGE_MS}`;
export const LATENCY_BUCKET_SQL = latencyBucketSql(LATENCY_SQL);

export interface LatencyStats {
  source: string;
  count: number;
  p50_ms: number | null;
  p95_ms: number | null;
  p99_ms: number | null;
  max_ms: number | null;
  avg_ms: number | null;
}

type Key = [pid: number, span: number, dims: number, service: string, env: string, start: number, source: string];
/** One row's change: events, latency sum (2^-1074 units) and bucket counts. */
interface Delta { key: Key; n: number; units: bigint; counts: Map<number, number> }

/** Buckets are -1 … LATENCY_BUCKETS - 2: a dense array of counts is indexed by bucket + 1. */
const LATENCY_BUCKETS = latencyBucket(LATENCY_MAX_AGE_MS) + 2;

/** Bucket counts as stored: (bucket, count) pairs of int32, by bucket, none at 0. */
export function encodeCounts(counts: Map<number, number>): Buffer {
  return packPairs([...counts].sort((x, y) => x[0] - y[0]));
}

function packPairs(sorted: [number, number][]): Buffer {
  const kept = sorted.filter(([, c]) => c !== 0);
  const a = new Int32Array(kept.length * 2);
  kept.forEach(([b, c], i) => {
    a[2 * i] = b;
    a[2 * i + 1] = c;
  });
  return Buffer.from(a.buffer, a.byteOffset, a.byteLength);
}

/** Stored pairs plus changes (both by bucket), stored again. */
function mergeCounts(stored: Int32Array, delta: Map<number, number>): Buffer {
  const d = [...delta].sort((x, y) => x[0] - y[0]);
  const out: [number, number][] = [];
  let i = 0;
  let j = 0;
  while (i < stored.length || j < d.length) {
    const b = i < stored.length ? stored[i]! : Infinity;
    if (j < d.length && d[j]![0] < b) out.push(d[j++]!);
    else if (j < d.length && d[j]![0] === b) {
      out.push([b, stored[i + 1]! + d[j++]![1]]);
      i += 2;
    } else {
      out.push([b, stored[i + 1]!]);
      i += 2;
    }
  }
  return packPairs(out);
}

export function decodeCounts(blob: Uint8Array): Int32Array {
  // A copy: the blob's bytes need not be 4-byte aligned.
  const a = new Int32Array(blob.byteLength / 4);
  new Uint8Array(a.buffer).set(blob);
  return a;
}

/**
 * Counts and sums to add to (or, negative, take off) the tallies; written once per batch. Kept per
 * (project, source, service, environment, 5 minutes) while events come, and rolled up into the rows
 * of every partition and period when written (per event: one map entry, not twelve).
 */
export class LatencyTally {
  readonly cells = new Map<string, Delta>();

  /** One event (sign -1: one expired event). */
  add(pid: number, source: string, service: string, environment: string, receivedMs: number, timestampMs: number, sign = 1): void {
    if (!(receivedMs - timestampMs <= LATENCY_MAX_AGE_MS)) return;
    const x = Math.max(0, receivedMs - timestampMs);
    const bucket = latencyBucket(x);
    const start = Math.floor(receivedMs / FINE_MS) * FINE_MS;
    const d = this.cell([pid, FINE_MS, 0, service, environment, start, source]);
    d.n += sign;
    d.units += sign > 0 ? exactUnits(x) : -exactUnits(x);
    d.counts.set(bucket, (d.counts.get(bucket) ?? 0) + sign);
  }

  merge(o: LatencyTally): void {
    for (const x of o.cells.values()) addDelta(this.cell(x.key), x);
  }

  /** The changes of every stored row: each cell in each partition and period. */
  rows(): Delta[] {
    const rows = new Map<string, Delta>();
    for (const c of this.cells.values()) {
      const [pid, , , service, env, start, source] = c.key;
      for (const span of LATENCY_SPANS) {
        for (let dims = 0; dims < 4; dims++) {
          const key: Key = [pid, span, dims, dims & 2 ? '' : service, dims & 1 ? '' : env, Math.floor(start / span) * span, source];
          const k = key.join('\u0000');
          let d = rows.get(k);
          if (!d) rows.set(k, (d = { key, n: 0, units: 0n, counts: new Map() }));
          addDelta(d, c);
        }
      }
    }
    return [...rows.values()];
  }

  private cell(key: Key): Delta {
    const k = key.join('\u0000');
    let d = this.cells.get(k);
    if (!d) this.cells.set(k, (d = { key, n: 0, units: 0n, counts: new Map() }));
    return d;
  }
}

function addDelta(into: Delta, x: Delta): void {
  into.n += x.n;
  into.units += x.units;
  for (const [b, c] of x.counts) into.counts.set(b, (into.counts.get(b) ?? 0) + c);
}

/** Writes tallies into error_latency_tallies (adding to what is there; rows left at 0 events go). */
export function latencyTallyWriter(db: Db): (t: LatencyTally) => void {
  const KEY = 'project_id = ? AND span_ms = ? AND dims = ? AND service_name = ? AND environment = ? AND start_ms = ? AND source = ?';
  const get = db.prepare(`SELECT n, sum, counts FROM error_latency_tallies WHERE ${KEY}`).raw();
  const put = db.prepare(`INSERT INTO error_latency_tallies (project_id, span_ms, dims, service_name, environment, start_ms, source, n, sum, counts) VALUES (?, ?, ?, ?, ?, ?, ?, ?, ?, ?)
    ON CONFLICT (project_id, span_ms, dims, service_name, environment, start_ms, source) DO UPDATE SET n = excluded.n, sum = excluded.sum, counts = excluded.counts`);
  const del = db.prepare(`DELETE FROM error_latency_tallies WHERE ${KEY}`);
  return (t) => {
    for (const d of t.rows()) {
      if (d.n === 0 && d.units === 0n && [...d.counts.values()].every((c) => c === 0)) continue;
      const old = get.get(...d.key) as [number, string, Uint8Array] | undefined;
      const n = (old?.[0] ?? 0) + d.n;
      if (n <= 0) {
        del.run(...d.key);
        continue;
      }
      const counts = old ? mergeCounts(decodeCounts(old[2]), d.counts) : encodeCounts(d.counts);
      put.run(...d.key, n, ((old ? BigInt(`0x${old[1]}`) : 0n) + d.units).toString(16), counts);
    }
  };
}

/**
 * Rebuilds the tallies of every event (migration 055's backfill; the scaling bench seeds with it),
 * a UTC day of received time at a time (every period lies within one day): the tallies in memory
 * are one day's.
 */
export function backfillErrorLatency(db: Db): void {
  db.exec('DELETE FROM error_latency_tallies');
  const write = latencyTallyWriter(db);
  const projects = db.prepare('SELECT DISTINCT project_id FROM error_events').pluck().all() as number[];
  const range = db.prepare('SELECT MIN(received_ms), MAX(received_ms) FROM error_events WHERE project_id = ?').raw();
  const day = db
    .prepare(`SELECT source, service_name, environment, received_ms, timestamp_ms FROM error_events INDEXED BY error_events_received
      WHERE project_id = ? AND received_ms >= ? AND received_ms < ? AND ${LATENCY_COUNTED_SQL}`)
    .raw();
  for (const pid of projects) {
    const [lo, hi] = range.get(pid) as [number, number];
    for (let d = Math.floor(lo / DAY_MS) * DAY_MS; d <= hi; d += DAY_MS) {
      const t = new LatencyTally();
      for (const r of day.all(pid, d, d + DAY_MS) as [string, string, string, number, number][]) t.add(pid, r[0], r[1], r[2], r[3], r[4]);
      write(t);
    }
  }
}

/**
 * The fast read: per source, count, nearest-rank p50/p95/p99, max and average of the latencies of
 * events received in [fromMs, toMs] — or null when the window holds no whole 5-minute span (its
 * events are then the read) or when a bucket's events do not match its tally.
 */
export function createLatencyReader(db: Db) {
  const filters = (service: boolean, env: boolean) => `${service ? ' AND service_name = ?' : ''}${env ? ' AND environment = ?' : ''}`;
  type St = Statement<unknown[]>;
  const cache = new Map<string, { rows: St; edge: St; bucket: St }>();
  const stmts = (service: boolean, env: boolean) => {
    const k = `${service}${env}`;
    let s = cache.get(k);
    if (!s) {
      const f = filters(service, env);
      s = {
        rows: db
          .prepare('SELECT source, n, sum, counts FROM error_latency_tallies WHERE project_id = ? AND span_ms = ? AND dims = ? AND service_name = ? AND environment = ? AND start_ms >= ? AND start_ms < ?')
          .raw(),
        edge: db
          .prepare(`SELECT source, ${LATENCY_SQL} FROM error_events INDEXED BY error_events_received WHERE project_id = ? AND received_ms >= ? AND received_ms <= ? AND received_ms - timestamp_ms <= ${LATENCY_MAX_AGE_MS}${f}`)
          .raw(),
        bucket: db
          .prepare(`SELECT ${LATENCY_SQL} FROM error_events INDEXED BY error_events_latency WHERE project_id = ? AND source = ? AND ${LATENCY_BUCKET_SQL} = ?
            AND received_ms >= ? AND received_ms <= ? AND ${LATENCY_COUNTED_SQL}${f}`)
          .pluck(),
      };
      cache.set(k, s);
    }
    return s;
  };

  return (projectId: string, o: { fromMs: number; toMs: number; service?: string; environment?: string }): LatencyStats[] | null => {
    const pid = Number(projectId);
    const hasS = o.service !== undefined;
    const hasE = o.environment !== undefined;
    const s = stmts(hasS, hasE);
    const fargs: unknown[] = [];
    if (hasS) fargs.push(o.service);
    if (hasE) fargs.push(o.environment);
    const dims = (hasS ? 0 : 2) + (hasE ? 0 : 1);
    const part = [dims, o.service ?? '', o.environment ?? ''];
    // Whole 5-minute spans [f0, f1) inside the window, read from the tallies in the coarsest periods
    // that cover them; the rest of it (received times are integers) from events.
    const fine = LATENCY_SPANS[0];
    const f0 = Math.ceil(o.fromMs / fine) * fine;
    const f1 = Math.floor((Math.floor(o.toMs) + 1) / fine) * fine;
    // Within ten minutes, reading the window's events is the read (the caller's).
    if (f0 >= f1) return null;
    // Per source: events, latency sum, and counts by bucket + 1.
    const per = new Map<string, { counts: Float64Array; n: number; units: bigint }>();
    const of = (source: string) => {
      let p = per.get(source);
      if (!p) per.set(source, (p = { counts: new Float64Array(LATENCY_BUCKETS), n: 0, units: 0n }));
      return p;
    };
    const edges: [number, number][] = [[o.fromMs, f0 - 1], [f1, o.toMs]];
    const periods = cover(f0, f1, LATENCY_SPANS);
    for (const [span, lo, hi] of periods) {
      if (lo >= hi) continue;
      for (const [source, n, sum, blob] of s.rows.all(pid, span, ...part, lo, hi) as [string, number, string, Uint8Array][]) {
        const p = of(source);
        p.n += n;
        p.units += BigInt(`0x${sum}`);
        const a = decodeCounts(blob);
        for (let i = 0; i < a.length; i += 2) p.counts[a[i]! + 1]! += a[i + 1]!;
      }
    }
    const edgeSums = new Map<string, ExactSum>();
    for (const [lo, hi] of edges) {
      if (lo > hi) continue;
      for (const [source, x] of s.edge.all(pid, lo, hi, ...fargs) as [string, number][]) {
        const p = of(source);
        p.counts[latencyBucket(x) + 1]!++;
        p.n++;
        let sum = edgeSums.get(source);
        if (!sum) edgeSums.set(source, (sum = new ExactSum()));
        sum.add(x);
      }
    }
    for (const [source, sum] of edgeSums) of(source).units += sum.units();
    const out: LatencyStats[] = [];
    for (const source of [...per.keys()].sort()) {
      const p = per.get(source)!;
      if (p.n <= 0) continue;
      let total = 0;
      for (const c of p.counts) {
        if (c < 0) return null;
        total += c;
      }
      if (total !== p.n) return null;
      const read = new Map<number, Float64Array>();
      // The value of 0-based rank r: the bucket holding it, read from the events of the window and sorted.
      const at = (r: number): number | null => {
        let below = 0;
        for (let i = 0; i < p.counts.length; i++) {
          const c = p.counts[i]!;
          if (r < below + c) {
            const b = i - 1;
            let v = read.get(b);
            if (!v) {
              v = Float64Array.from(s.bucket.all(pid, source, b, o.fromMs, o.toMs, ...fargs) as number[]).sort();
              if (v.length !== c) return null;
              read.set(b, v);
            }
            return v[r - below]!;
          }
          below += c;
        }
        return null;
      };
      const n = p.n;
      const ranks = [nearestRankIndex(n, 50), nearestRankIndex(n, 95), nearestRankIndex(n, 99), n - 1];
      const v = ranks.map(at);
      if (v.some((x) => x === null)) return null;
      out.push({ source, count: n, p50_ms: v[0]!, p95_ms: v[1]!, p99_ms: v[2]!, max_ms: v[3]!, avg_ms: Math.round((unitsToNumber(p.units) / n) * 1000) / 1000 });
    }
    return out;
  };
}
