/**
 * metrics.timeline, metrics.inspect and the summary read whole minutes from the per-minute rollups
 * (migration 040) and unaligned edges from the points: on randomized data (gauges, cumulative
 * counters with restarts, unknown starts and decreases, up-down counters, delta sums, delta
 * histograms with two bound sets, several series, services and environments, written out of order
 * in batches), every bucket must equal the raw computation — count, sum, min, max, avg, rate and
 * histogram percentiles (sums up to floating-point order) — and gauge/sum percentiles over more than
 * EXACT_PERCENTILE_VALUES values must lie within the sketch's 1% of the exact ones.
 */
import { mkdtempSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { describe, expect, it } from 'vitest';
import { openDatabase, type Db } from '../../src/storage/db.js';
import { createSqliteTelemetryWriter } from '../../src/storage/sqlite-telemetry-store.js';
import { createMetricsReadRepo, type MetricSelector } from '../../src/storage/metrics-read-repo.js';
import { backfillMetricRollups } from '../../src/storage/metric-rollups.js';
import { timeline, type Aggregation } from '../../src/domain/metrics/aggregate.js';
import { normalizePoints } from '../../src/domain/metrics/normalize.js';
import { EXACT_PERCENTILE_VALUES, SKETCH_ALPHA, timelineFromStates } from '../../src/domain/metrics/rollup-state.js';
import { bucketCount, bucketStart } from '../../src/domain/metrics/window.js';
import type { MetricPointRecord, MetricType, Temporality } from '../../src/domain/telemetry-types.js';
import { rng } from '../../bench/lib.js';
import { createRetentionRepo, EXPIRY_TARGETS } from '../../src/storage/retention-repo.js';

const T0 = Date.parse('2026-03-01T00:00:00.000Z');
const MIN = 60_000;
const HOUR = 3_600_000;
const tmpFile = () => join(mkdtempSync(join(tmpdir(), 'sl-rollups-')), 'db.sqlite');

type Kind = { name: string; type: MetricType; temporality: Temporality; monotonic: boolean };
const KINDS: Kind[] = [
  { name: 'cpu', type: 'gauge', temporality: 'unspecified', monotonic: false },
  { name: 'requests', type: 'sum', temporality: 'cumulative', monotonic: true },
  { name: 'inflight', type: 'sum', temporality: 'cumulative', monotonic: false },
  { name: 'bytes', type: 'sum', temporality: 'delta', monotonic: true },
  { name: 'latency', type: 'hist', temporality: 'delta', monotonic: false },
];

/** Points over four hours from `T0`, in random order. */
function points(seed: number, n: number, kinds = KINDS, hours = 4): MetricPointRecord[] {
  const r = rng(seed);
  const out: MetricPointRecord[] = [];
  for (let i = 0; i < n; i++) {
    const k = kinds[Math.floor(r() * kinds.length)]!;
    const service = r() < 0.5 ? 'api' : 'worker';
    const env = r() < 0.7 ? 'prod' : 'staging';
    const series = Math.floor(r() * 3);
    // Some points on exact minute boundaries, some sharing a time.
    const time = r() < 0.1 ? T0 + Math.floor(r() * hours * 60) * MIN : T0 + Math.floor(r() * hours * HOUR);
    const base = {
      metric_name: k.name,
      description: '',
      unit: '1',
      type: k.type,
      temporality: k.temporality,
      monotonic: k.monotonic,
      start_ms: null as number | null,
      time_ms: time,
      attributes: { series },
      flags: 0,
      resource: { 'service.name': service, 'deployment.environment.name': env },
      scope: { name: 's', version: '', attributes: {} },
      service_name: service,
    };
    if (k.type === 'hist') {
      const wide = r() < 0.2;
      const counts = wide ? [Math.floor(r() * 4), Math.floor(r() * 4), Math.floor(r() * 3), Math.floor(r() * 2)] : [Math.floor(r() * 5), Math.floor(r() * 9), Math.floor(r() * 3)];
      const count = counts.reduce((a, b) => a + b, 0);
      out.push({
        ...base,
        count,
        ...(r() < 0.9 ? { sum: Math.round(r() * 1000) / 4 } : {}),
        ...(r() < 0.8 ? { min: Math.round(r() * 10), max: 100 + Math.round(r() * 400) } : {}),
        bucket_counts: counts,
        explicit_bounds: wide ? [5, 50, 500] : [10, 100],
      } as MetricPointRecord);
    } else {
      out.push({ ...base, value: k.type === 'gauge' ? Math.round((r() - 0.3) * 4000) / 8 : Math.floor(r() * 50) } as MetricPointRecord);
    }
  }
  // Cumulative series: values growing in time order, with restarts (new start), unknown starts and decreases.
  const bySeries = new Map<string, MetricPointRecord[]>();
  for (const p of out) {
    if (p.temporality !== 'cumulative') continue;
    const key = `${p.metric_name} ${p.service_name} ${p.resource['deployment.environment.name']} ${(p.attributes as { series: number }).series}`;
    if (!bySeries.has(key)) bySeries.set(key, []);
    bySeries.get(key)!.push(p);
  }
  for (const list of bySeries.values()) {
    list.sort((a, b) => a.time_ms - b.time_ms);
    let v = 0;
    let start: number | null = T0 - HOUR;
    for (const p of list) {
      const x = r();
      if (x < 0.02) {
        start = p.time_ms - 1000; // restart
        v = 0;
      } else if (x < 0.03) start = null; // zero-duration unknown start
      else if (x < 0.05) v = Math.max(0, v - 30); // decrease under the same start
      if (start === null && x >= 0.03 && r() < 0.3) start = T0 - HOUR;
      v += p.metric_name === 'inflight' ? Math.floor(r() * 20) - 8 : Math.floor(r() * 20);
      p.value = v;
      p.start_ms = start === null ? (r() < 0.5 ? null : p.time_ms) : start;
    }
  }
  // Shuffle: batches arrive out of time order.
  for (let i = out.length - 1; i > 0; i--) {
    const j = Math.floor(r() * (i + 1));
    [out[i], out[j]] = [out[j]!, out[i]!];
  }
  return out;
}

function write(db: Db, pts: MetricPointRecord[], batch = 300) {
  const w = createSqliteTelemetryWriter(db);
  for (let i = 0; i < pts.length; i += batch) w.insertMetricPoints('1', pts.slice(i, i + batch), 0);
}

/** Equal up to floating-point order (both null, or within 1e-9 relative). */
const near = (a: number | null, b: number | null) => (a === null || b === null ? a === b : Math.abs(a - b) <= 1e-9 * Math.max(1, Math.abs(b)));
const close = (a: number | null, b: number | null, what: string) => {
  if (a === null || b === null) return expect(a, what).toBe(b);
  expect(Math.abs(a - b), `${what}: rollup ${a}, raw ${b}`).toBeLessThanOrEqual(1e-9 * Math.max(1, Math.abs(b)));
};

const WINDOWS: [number, number][] = [
  [T0, T0 + 4 * HOUR], // aligned
  [T0 + 17_300, T0 + 3 * HOUR - 41_000], // both edges inside minutes
  [T0 + 90 * MIN + 5, T0 + 95 * MIN - 3], // a few minutes
  [T0 + HOUR + 59_999, T0 + 2 * HOUR + 1], // one millisecond past / before a minute
  [T0 - 30 * MIN, T0 + 5 * HOUR + 7], // beyond the data
  [T0 + 2 * HOUR + 30_000, T0 + 3.5 * HOUR], // baseline hour inside the data
  [T0 + 25 * MIN, T0 + 3 * HOUR + 35 * MIN], // 5-minute edges around whole hours (migration 047's levels)
  [T0 + HOUR, T0 + 3 * HOUR], // whole hours
  [T0 + 7 * MIN + 1, T0 + 2 * HOUR + 13 * MIN - 1], // minute, 5-minute and hour pieces on both sides
];
const SCALAR: Aggregation[] = ['count', 'sum', 'min', 'max', 'avg', 'rate'];

function expectSameAsRaw(db: Db) {
  const repo = createMetricsReadRepo(db);
  let compared = 0;
  for (const k of KINDS) {
    for (const filter of [{}, { service: 'api' }, { environment: 'staging', service: 'worker' }]) {
      const sel: MetricSelector = { metricName: k.name, type: k.type, ...filter };
      for (const [fromMs, toMs] of WINDOWS) {
        const raw = repo.points('1', sel, fromMs, toMs, HOUR);
        const layouts = [
          ...[MIN, 5 * MIN, 15 * MIN, HOUR].map((g) => ({ first: bucketStart(fromMs, g), size: g, n: bucketCount(fromMs, toMs, g) })),
          { first: fromMs, size: toMs - fromMs, n: 1 }, // observability.summary: one bucket spanning the window
        ];
        for (const b of layouts) {
          const aggs = k.type === 'hist' ? [...SCALAR, 'p50', 'p90', 'p99'] as Aggregation[] : SCALAR;
          for (const aggregation of aggs) {
            const states = repo.rollupStates('1', sel, fromMs, toMs, b, aggregation.startsWith('p'));
            expect(states, `${k.name} ${fromMs}-${toMs}`).not.toBeNull();
            const got = timelineFromStates(states!, b.first, b.size, k.type, aggregation);
            // The raw computation, shifted so that a window-spanning bucket starts at the window start.
            const shift = b.first - bucketStart(b.first, b.size);
            const want = timeline(
              raw.map((p) => ({ ...p, time_ms: p.time_ms - shift, start_ms: p.start_ms === null ? null : p.start_ms - shift })),
              { fromMs: fromMs - shift, toMs: toMs - shift, granularityMs: b.size, type: k.type, aggregation, baselineMs: HOUR },
            ).buckets;
            expect(got.length).toBe(want.length);
            for (let i = 0; i < want.length; i++) {
              const g = got[i]!;
              const w = want[i]!;
              // expect() only for a bucket that differs (with its description): hundreds of thousands
              // of equal buckets are compared, and an expect per field was most of the file's time.
              if (g.point_count !== w.point_count || g.sample_count !== w.sample_count || !near(g.value, w.value)) {
                const what = `${k.name} ${JSON.stringify(filter)} ${fromMs - T0}-${toMs - T0} /${b.size} ${aggregation} bucket ${i}`;
                expect(g.point_count, what).toBe(w.point_count);
                expect(g.sample_count, what).toBe(w.sample_count);
                close(g.value, w.value, what);
              }
              if (w.value !== null) compared++;
            }
          }
        }
      }
    }
  }
  return compared;
}

describe('per-minute metric rollups', () => {
  it('give the raw computation for every aggregation, window edge, bucket size and filter', () => {
    const db = openDatabase(tmpFile());
    write(db, points(21, 4000));
    createSqliteTelemetryWriter(db).insertMetricPoints('2', points(22, 300), 0); // another project's points never count
    expect(expectSameAsRaw(db)).toBeGreaterThan(10_000);
  }, 180_000);

  it('are built from the points already stored by migration 040, with the same answers', () => {
    const file = tmpFile();
    const db0 = openDatabase(file);
    write(db0, points(31, 3000), 97);
    // As before migration 040: no rollup tables, no exemplar index, version 40 not recorded.
    db0.exec('DROP TABLE metric_rollups; DROP TABLE metric_cum_rollups; DROP INDEX metric_points_exemplars; DELETE FROM schema_migrations WHERE version = 40');
    db0.close();
    const db = openDatabase(file);
    expect(db.prepare('SELECT count(*) FROM metric_cum_rollups').pluck().get()).toBeGreaterThan(100);
    expectSameAsRaw(db);
    // Rebuilding from scratch gives the same rows' answers too.
    db.exec('DELETE FROM metric_rollups; DELETE FROM metric_cum_rollups');
    backfillMetricRollups(db);
    expect(db.prepare('SELECT count(*) FROM metric_rollups').pluck().get()).toBeGreaterThan(100);
  }, 180_000);

  it('read whole 5-minute periods and hours from the coarse levels (migration 047), which stay equal to the minutes', () => {
    const db = openDatabase(tmpFile());
    write(db, points(61, 2500));
    const count = (t: string) => db.prepare(`SELECT count(*) FROM ${t}`).pluck().get() as number;
    expect(count('metric_rollups_1h')).toBeGreaterThan(0);
    expect(count('metric_cum_rollups_5m')).toBeGreaterThan(count('metric_cum_rollups_1h'));
    // Each coarse row sums the minute rows of its period.
    for (const [t, minutes, p] of [['metric_rollups_1h', 'metric_rollups', HOUR], ['metric_rollups_5m', 'metric_rollups', 5 * MIN]] as const) {
      const diff = db
        .prepare(
          `SELECT count(*) FROM ${t} c WHERE points <> (SELECT total(points) FROM ${minutes} m WHERE m.project_id = c.project_id AND m.metric_name = c.metric_name
             AND m.type = c.type AND m.service_name = c.service_name AND m.environment = c.environment AND m.minute >= c.minute AND m.minute < c.minute + ${p})`,
        )
        .pluck()
        .get();
      expect(diff, t).toBe(0);
    }
    const repo = createMetricsReadRepo(db);
    const sel: MetricSelector = { metricName: 'bytes', type: 'sum' };
    const b = { first: T0, size: 4 * HOUR, n: 1 };
    const before = repo.rollupStates('1', sel, T0, T0 + 4 * HOUR, b, false)![0]!.vsum;
    // The hourly rows are what a window of whole hours reads (a changed hour row shows).
    db.exec(`UPDATE metric_rollups_1h SET vsum = vsum + 1000 WHERE metric_name = 'bytes' AND minute = ${T0 + HOUR}`);
    expect(repo.rollupStates('1', sel, T0, T0 + 4 * HOUR, b, false)![0]!.vsum).toBeGreaterThan(before + 999);
    db.exec(`UPDATE metric_rollups_1h SET vsum = vsum - 1000 WHERE metric_name = 'bytes' AND minute = ${T0 + HOUR}`);
    // 5-minute buckets read the 5-minute rows.
    db.exec(`UPDATE metric_rollups_5m SET vsum = vsum + 1000 WHERE metric_name = 'bytes' AND minute = ${T0 + 10 * MIN}`);
    const five = repo.rollupStates('1', sel, T0, T0 + HOUR, { first: T0, size: 5 * MIN, n: 12 }, false)!;
    expect(five[2]!.vsum).toBeGreaterThan(999);
  }, 60_000);

  it('read data stored before migration 047 per minute, later hours from the coarse levels', () => {
    const file = tmpFile();
    const db0 = openDatabase(file);
    write(db0, points(71, 2000));
    // As before migration 047: no coarse tables, version 47 not recorded.
    db0.exec(
      'DROP TABLE metric_rollups_5m; DROP TABLE metric_cum_rollups_5m; DROP TABLE metric_rollups_1h; DROP TABLE metric_cum_rollups_1h; DROP TABLE metric_rollup_levels; DELETE FROM schema_migrations WHERE version = 47',
    );
    db0.close();
    const db = openDatabase(file);
    const since = db.prepare('SELECT since FROM metric_rollup_levels').pluck().get() as number;
    expect(since).toBe(T0 + 4 * HOUR); // the hour after the last stored minute
    expect(db.prepare('SELECT count(*) FROM metric_rollups_1h').pluck().get()).toBe(0);
    expectSameAsRaw(db);
    // Points of later hours go to every level; windows across `since` combine both.
    write(
      db,
      points(72, 1500).map((p) => ({ ...p, time_ms: p.time_ms + 4 * HOUR, ...(p.start_ms ? { start_ms: p.start_ms + 4 * HOUR } : {}) })),
    );
    expect(db.prepare('SELECT count(*) FROM metric_rollups_1h').pluck().get()).toBeGreaterThan(0);
    const repo = createMetricsReadRepo(db);
    for (const k of KINDS) {
      const sel: MetricSelector = { metricName: k.name, type: k.type };
      const [fromMs, toMs] = [T0 + 2 * HOUR + 5 * MIN, T0 + 7 * HOUR];
      const b = { first: fromMs, size: toMs - fromMs, n: 1 };
      const got = timelineFromStates(repo.rollupStates('1', sel, fromMs, toMs, b, false)!, b.first, b.size, k.type, 'sum');
      const shift = b.first - bucketStart(b.first, b.size);
      const raw = repo.points('1', sel, fromMs, toMs, HOUR).map((p) => ({ ...p, time_ms: p.time_ms - shift, start_ms: p.start_ms === null ? null : p.start_ms - shift }));
      const want = timeline(raw, { fromMs: fromMs - shift, toMs: toMs - shift, granularityMs: b.size, type: k.type, aggregation: 'sum', baselineMs: HOUR }).buckets;
      expect(got[0]!.point_count, k.name).toBe(want[0]!.point_count);
      close(got[0]!.value, want[0]!.value, k.name);
    }
  }, 180_000);

  it('expire in whole hours at every level, so the levels keep holding the same periods', () => {
    const db = openDatabase(tmpFile());
    write(db, points(81, 1500));
    const retention = createRetentionRepo(db);
    const targets = EXPIRY_TARGETS.filter((t) => t.kind === 'metric_rollups' && t.table.includes('rollups'));
    expect(targets.map((t) => t.table).sort()).toEqual(
      ['metric_cum_rollups', 'metric_cum_rollups_1h', 'metric_cum_rollups_5m', 'metric_rollups', 'metric_rollups_1h', 'metric_rollups_5m'].sort(),
    );
    for (const t of targets) while (retention.expireBatch(t, '1', T0 + HOUR + 30 * MIN, 100) > 0);
    for (const t of targets) {
      // The cutoff inside hour 1 expires hour 0 only, at every level.
      expect(db.prepare(`SELECT min(minute) FROM ${t.table} WHERE project_id = 1`).pluck().get(), t.table).toBe(T0 + HOUR);
    }
    const repo = createMetricsReadRepo(db);
    for (const k of KINDS) {
      const sel: MetricSelector = { metricName: k.name, type: k.type };
      const b = { first: T0 + HOUR, size: 3 * HOUR, n: 1 };
      const whole = repo.rollupStates('1', sel, T0 + HOUR, T0 + 4 * HOUR, b, false)![0]!;
      const perMinute = repo.rollupStates('1', sel, T0 + HOUR, T0 + 4 * HOUR, { first: T0 + HOUR, size: MIN, n: 180 }, false)!;
      expect(whole.n, k.name).toBe(perMinute.reduce((t, x) => t + x.n, 0));
    }
  }, 60_000);

  it('answer large gauge and sum percentiles within the sketch accuracy, small ones exactly from the points', () => {
    const db = openDatabase(tmpFile());
    const kinds = [KINDS[0]!, KINDS[1]!];
    write(db, points(41, 3 * EXACT_PERCENTILE_VALUES, kinds, 2), 2000);
    const repo = createMetricsReadRepo(db);
    for (const k of kinds) {
      const sel: MetricSelector = { metricName: k.name, type: k.type };
      const fromMs = T0 + 5 * MIN + 123;
      const toMs = T0 + 2 * HOUR - 7;
      const g = 15 * MIN;
      const b = { first: bucketStart(fromMs, g), size: g, n: bucketCount(fromMs, toMs, g) };
      const states = repo.rollupStates('1', sel, fromMs, toMs, b, true);
      expect(states).not.toBeNull();
      const contribs = normalizePoints(repo.points('1', sel, fromMs, toMs, HOUR), { fromMs, toMs });
      for (const [agg, q] of [['p50', 0.5], ['p90', 0.9], ['p99', 0.99]] as const) {
        const got = timelineFromStates(states!, b.first, g, k.type, agg);
        for (let i = 0; i < b.n; i++) {
          const vals = contribs.filter((c) => Math.floor((c.time_ms - b.first) / g) === i).map((c) => c.value as number).sort((x, y) => x - y);
          if (!vals.length) {
            expect(got[i]!.value).toBeNull();
            continue;
          }
          const h = (vals.length - 1) * q;
          const lo = vals[Math.floor(h)]!;
          const hi = vals[Math.min(Math.floor(h) + 1, vals.length - 1)]!;
          const exact = lo + (h - Math.floor(h)) * (hi - lo);
          const bound = SKETCH_ALPHA * Math.max(Math.abs(lo), Math.abs(hi)) + 1e-9;
          expect(Math.abs(got[i]!.value! - exact), `${k.name} ${agg} bucket ${i}`).toBeLessThanOrEqual(bound);
        }
      }
    }
    // A small read: exact from the points (the rollups decline).
    expect(repo.rollupStates('1', { metricName: 'cpu', type: 'gauge' }, T0, T0 + 10 * MIN, { first: T0, size: MIN, n: 10 }, true)).toBeNull();
  }, 120_000);

  it('leave reads they cannot answer to the points', () => {
    const db = openDatabase(tmpFile());
    write(db, points(51, 500));
    const repo = createMetricsReadRepo(db);
    const b = { first: T0, size: HOUR, n: 1 };
    expect(repo.rollupStates('1', { metricName: 'cpu', type: 'gauge', attributes: [{ key: 'series', value: '1' }] }, T0, T0 + HOUR, b, false)).toBeNull();
    expect(repo.rollupStates('1', { metricName: 'cpu', type: 'gauge' }, T0 + 1000, T0 + 50_000, b, false)).toBeNull(); // no whole minute
    repo.settings.rollupReads = false;
    expect(repo.rollupStates('1', { metricName: 'cpu', type: 'gauge' }, T0, T0 + HOUR, b, false)).toBeNull();
  });
});
