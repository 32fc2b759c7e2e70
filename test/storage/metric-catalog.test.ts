/**
 * metrics.list and the summary's candidate metrics read the hourly catalogue (migration 008): the
 * answers must equal those computed from every point, for windows aligned to hours or not, with
 * every filter, for points written in several batches and for points written before migration 008.
 */
import Database from 'better-sqlite3';
import { mkdtempSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { describe, expect, it } from 'vitest';
import { openDatabase, type Db } from '../../src/storage/db.js';
import { MIGRATIONS } from '../../src/storage/migrations/index.js';
import { createSqliteTelemetryWriter } from '../../src/storage/sqlite-telemetry-store.js';
import { createMetricsReadRepo, type MetricSeriesFilter } from '../../src/storage/metrics-read-repo.js';
import type { MetricPointRecord, MetricType, Temporality } from '../../src/domain/telemetry-types.js';
import { rng } from '../../bench/lib.js';

const T0 = Date.parse('2026-03-01T00:00:00.000Z');
const HOUR = 3_600_000;
const tmpFile = () => join(mkdtempSync(join(tmpdir(), 'sl-catalog-')), 'db.sqlite');

/** Points over six hours: gauges, sums, delta and cumulative histograms (with restarts), two services, two environments, a unit change. */
function points(seed: number, n: number): MetricPointRecord[] {
  const r = rng(seed);
  const kinds: [string, MetricType, Temporality, string][] = [
    ['cpu.usage', 'gauge', 'unspecified', '1'],
    ['http.requests', 'sum', 'cumulative', '{request}'],
    ['http.duration', 'hist', 'delta', 'ms'],
    ['http.duration', 'hist', 'cumulative', 'ms'],
    ['queue.wait', 'exponential_histogram', 'cumulative', 's'],
    ['Queue.Depth', 'gauge', 'unspecified', 'items'],
  ];
  const out: MetricPointRecord[] = [];
  for (let i = 0; i < n; i++) {
    const [name, type, temporality, unit0] = kinds[Math.floor(r() * kinds.length)]!;
    const service = r() < 0.5 ? 'api' : 'worker';
    const env = r() < 0.7 ? 'prod' : 'staging';
    const series = Math.floor(r() * 3);
    const time = T0 + Math.floor(r() * 6 * HOUR);
    const histo = type === 'hist' || type === 'exponential_histogram';
    const restart = Math.floor((time - T0) / (2 * HOUR)); // cumulative runs restart every two hours
    out.push({
      metric_name: name,
      description: `${name} ${r() < 0.1 ? 'v2' : 'v1'}`,
      unit: name === 'cpu.usage' && r() < 0.2 ? '%' : unit0,
      type,
      temporality,
      monotonic: type === 'sum',
      start_ms: temporality === 'cumulative' ? (r() < 0.1 ? null : T0 + restart * 2 * HOUR - (restart === 0 ? HOUR : 0)) : null,
      time_ms: time,
      attributes: { series },
      flags: 0,
      ...(histo ? { count: Math.floor((time - T0) / 1000) % 5000 + Math.floor(r() * 10), sum: 1, min: 0, max: 1 } : { value: r() * 100 }),
      ...(type === 'hist' ? { bucket_counts: [1, 2], explicit_bounds: [10] } : {}),
      ...(type === 'exponential_histogram' ? { scale: 0, zero_count: 0, zero_threshold: 0, positive: { offset: 0, bucket_counts: [1] } } : {}),
      resource: { 'service.name': service, 'deployment.environment.name': env },
      scope: { name: 's', version: '', attributes: {} },
      service_name: service,
    } as MetricPointRecord);
  }
  return out;
}

/** metrics.list as computed from every point (the query before the catalogue). */
function listFromPoints(db: Db, f: MetricSeriesFilter) {
  const args: unknown[] = [1, f.fromMs, f.toMs];
  let extra = '';
  if (f.type) (extra += ' AND type = ?'), args.push(f.type);
  if (f.service) (extra += ' AND service_name = ?'), args.push(f.service);
  if (f.environment) (extra += ' AND environment = ?'), args.push(f.environment);
  if (f.q) {
    extra += " AND (lower(metric_name) LIKE ? ESCAPE '\\' OR lower(unit) LIKE ? ESCAPE '\\' OR lower(service_name) LIKE ? ESCAPE '\\')";
    const l = `%${f.q.toLowerCase().replace(/[\\%_]/g, (c) => `\\${c}`)}%`;
    args.push(l, l, l);
  }
  return db
    .prepare(
      `WITH pts AS (SELECT * FROM metric_points WHERE project_id = ? AND time_ms >= ? AND time_ms < ?${extra}),
      runs AS (
        SELECT metric_name, type, service_name,
          CASE WHEN min(start_ms) >= ? AND min(start_ms) < min(time_ms) THEN max(count) ELSE max(count) - min(count) END AS growth
        FROM pts WHERE temporality = 'cumulative' AND type IN ('hist', 'exponential_histogram')
        GROUP BY metric_name, type, service_name, series_key, scope_name, start_ms
      ),
      cum AS (SELECT metric_name, type, service_name, sum(max(growth, 0)) AS samples FROM runs GROUP BY 1, 2, 3),
      agg AS (
        SELECT metric_name, type, service_name, max(unit) AS unit, max(description) AS description,
          min(time_ms) AS first_seen, max(time_ms) AS last_seen, count(*) AS point_count,
          sum(CASE WHEN type IN ('gauge', 'sum') THEN 1 WHEN temporality = 'cumulative' THEN 0 ELSE coalesce(count, 0) END) AS samples
        FROM pts GROUP BY metric_name, type, service_name
      )
      SELECT agg.metric_name, agg.type, agg.unit, agg.description, agg.service_name, agg.first_seen, agg.last_seen, agg.point_count,
        agg.samples + coalesce(cum.samples, 0) AS sample_count
      FROM agg LEFT JOIN cum USING (metric_name, type, service_name) ORDER BY agg.metric_name, agg.type, agg.service_name`,
    )
    .all(...args, f.fromMs);
}

function busiestFromPoints(db: Db, f: { fromMs: number; toMs: number; service?: string; nameQuery?: string }) {
  const rows = db
    .prepare(
      `SELECT metric_name, type, max(unit) AS unit, count(*) AS point_count, json_group_array(DISTINCT service_name) AS services FROM metric_points
       WHERE project_id = 1 AND time_ms >= ? AND time_ms < ? AND (? IS NULL OR service_name = ?) AND (? IS NULL OR lower(metric_name) LIKE ?)
       GROUP BY metric_name, type ORDER BY point_count DESC, metric_name LIMIT 10`,
    )
    .all(f.fromMs, f.toMs, f.service ?? null, f.service ?? null, f.nameQuery ?? null, `%${f.nameQuery ?? ''}%`) as { services: string }[];
  return rows.map((r) => ({ ...r, services: (JSON.parse(r.services) as string[]).sort() }));
}

const WINDOWS: [number, number][] = [
  [T0, T0 + 6 * HOUR], // aligned, everything
  [T0 - HOUR, T0 + 10 * HOUR],
  [T0 + HOUR, T0 + 3 * HOUR], // aligned, inner hours
  [T0 + 0.5 * HOUR + 17, T0 + 4.25 * HOUR], // both edges inside hours
  [T0 + 2.2 * HOUR, T0 + 2.7 * HOUR], // inside one hour
  [T0 + 1.999 * HOUR, T0 + 2.001 * HOUR + 1], // across a run restart
];

function expectSameAsPoints(db: Db) {
  const repo = createMetricsReadRepo(db);
  const filters: Partial<MetricSeriesFilter>[] = [{}, { type: 'hist' }, { service: 'api' }, { environment: 'staging' }, { q: 'DURATION' }, { q: '%' }, { q: 'work' }];
  for (const [fromMs, toMs] of WINDOWS) {
    for (const extra of filters) {
      const f = { fromMs, toMs, ...extra };
      const got = repo.listSeries('1', f, { limit: 1000, offset: 0 });
      const want = listFromPoints(db, f);
      expect(got.rows, JSON.stringify(f)).toEqual(want);
      expect(got.total).toBe(want.length);
    }
    for (const b of [{}, { service: 'worker' }, { nameQuery: 'queue' }]) {
      expect(repo.busiest('1', { fromMs, toMs, ...b }, 10)).toEqual(busiestFromPoints(db, { fromMs, toMs, ...b }));
    }
  }
  // Pages of the same list.
  const page = repo.listSeries('1', { fromMs: T0 + 0.5 * HOUR, toMs: T0 + 5.5 * HOUR }, { limit: 3, offset: 2 });
  expect(page.rows).toEqual(listFromPoints(db, { fromMs: T0 + 0.5 * HOUR, toMs: T0 + 5.5 * HOUR }).slice(2, 5));
}

describe('metric catalogue', () => {
  it('answers metrics.list and the busiest metrics exactly as the points do, for any window and filter', () => {
    const db = openDatabase(tmpFile());
    const w = createSqliteTelemetryWriter(db);
    const all = points(7, 3000);
    for (let i = 0; i < all.length; i += 250) w.insertMetricPoints('1', all.slice(i, i + 250), 0);
    w.insertMetricPoints('2', points(8, 200), 0); // another project's points never count
    expect(db.prepare('SELECT count(*) FROM metric_catalog WHERE project_id = 1').pluck().get()).toBeLessThan(400);
    expectSameAsPoints(db);
  });

  it('backfills the catalogue from points written before migration 008', () => {
    const file = tmpFile();
    const old = new Database(file);
    for (const m of MIGRATIONS.filter((m) => m.version <= 7)) old.exec(m.sql);
    old.pragma('user_version = 7');
    old.close();
    // Points written with the catalogue upserts not yet there: drop the tables the writer fills, write, then pretend 007.
    const db0 = openDatabase(file);
    createSqliteTelemetryWriter(db0).insertMetricPoints('1', points(9, 1500), 0);
    db0.exec('DELETE FROM metric_catalog; DELETE FROM metric_catalog_runs; DROP TABLE metric_catalog; DROP TABLE metric_catalog_runs;');
    db0.exec('DELETE FROM schema_migrations WHERE version = 8');
    db0.close();
    const db = openDatabase(file);
    expect(db.pragma('user_version', { simple: true })).toBe(MIGRATIONS.at(-1)!.version);
    expectSameAsPoints(db);
  });
});
