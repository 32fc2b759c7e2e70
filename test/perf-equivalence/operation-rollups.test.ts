/**
 * The slowest operations of observability.summary read the hourly entry-span tallies (migration 054)
 * and, for the groups whose p95 can reach the top, the spans of the buckets holding the percentile
 * ranks. On randomized spans (ties, fractional and zero durations, several environments, non-entry
 * spans sharing names) written in batches through the writer, then partly expired with the cutoff
 * inside an hour, they equal the answer computed from every entry span of the window (count, errors,
 * p50, p95 and order) for windows on hour boundaries, inside hours, shorter than an hour, with an
 * environment and for one service; tallies that disagree with the spans make the read fall back.
 */
import { describe, expect, it } from 'vitest';
import { scratchProjectDb } from '../support/scratch-db.js';
import { createSqliteTelemetryWriter } from '../../src/storage/sqlite-telemetry-store.js';
import { backfillOperationRollups, bucketRange, createOperationRollupReader, durationBucket, withOperationRollups } from '../../src/storage/operation-rollups.js';
import { asyncTracesReader, createTracesReadRepo } from '../../src/storage/traces-read-repo.js';
import { createRetentionRepo, EXPIRY_TARGETS } from '../../src/storage/retention-repo.js';
import { slowestFromSpans, slowestFromTallies } from '../../operations/observability.js';
import type { SpanRecord } from '../../src/domain/telemetry-types.js';

const { db } = scratchProjectDb('op-rollups');

const HOUR = 3_600_000;
const T0 = Date.UTC(2026, 0, 1, 0);
let seed = 11;
const rnd = () => (seed = (seed * 1103515245 + 12345) % 2 ** 31) / 2 ** 31;
const int = (n: number) => Math.floor(rnd() * n);
const pick = <T>(xs: readonly T[]): T => xs[int(xs.length)]!;
const SERVICES = ['api', 'web', 'worker'];
const ROUTES = ['/a', '/b', '/c', '/d'];
const ENVS = ['production', 'staging', ''];
const hex = (n: number) => Array.from({ length: n }, () => int(16).toString(16)).join('');
const resources = new Map(SERVICES.flatMap((s) => ENVS.map((e) => [`${s}|${e}`, { 'service.name': s, ...(e ? { 'deployment.environment.name': e } : {}) }] as const)));

function duration(route: string): number {
  const r = rnd();
  if (r < 0.1) return int(5); // ties, zero included
  if (r < 0.2) return 0.0005 * int(40); // sub-µs and µs values
  return (route === '/d' ? 200 : 50) * rnd() * (1 + int(3)) + (rnd() < 0.02 ? 5000 * rnd() : 0);
}

function span(t: number): SpanRecord {
  const svc = pick(SERVICES);
  const env = pick(ENVS);
  const route = pick(ROUTES);
  const kind = pick([1, 2, 2, 3, 5]);
  const root = rnd() < 0.3;
  const d = duration(route);
  return {
    trace_id: hex(32),
    span_id: hex(16),
    parent_span_id: root ? null : hex(16),
    trace_state: '',
    name: `GET ${route}`,
    kind,
    start_ms: t,
    end_ms: t + d,
    status_code: rnd() < 0.1 ? 2 : 1,
    status_message: '',
    attributes: { 'http.route': route, 'http.request.method': 'GET' },
    events: [],
    links: [],
    resource: resources.get(`${svc}|${env}`)!,
    scope: { name: 't', version: '1', attributes: {} },
    service_name: svc,
  };
}

const writer = withOperationRollups(db, createSqliteTelemetryWriter(db));
for (let b = 0; b < 60; b++) {
  const spans = Array.from({ length: 40 + int(80) }, () => span(T0 + rnd() * 30 * HOUR + (rnd() < 0.5 ? 0.25 : 0)));
  writer.insertSpans('1', spans, 'otlp', T0);
}
const traces = asyncTracesReader(createTracesReadRepo(db));
const tallies = createOperationRollupReader(db);

async function compare(fromMs: number, toMs: number, opts: { environment?: string; service?: string } = {}) {
  const { groups } = await traces.entryGroups('1', { service: opts.service, max: 200 });
  const f = { fromMs, toMs, environment: opts.environment };
  const want = await slowestFromSpans(traces, '1', groups, f);
  const got = slowestFromTallies(tallies, '1', groups, f);
  expect(got).toEqual(want);
  return want;
}

const WINDOWS: [string, number, number][] = [
  ['whole hours', T0 + 2 * HOUR, T0 + 26 * HOUR],
  ['edges inside hours', T0 + 2 * HOUR + 17 * 60_000 + 0.5, T0 + 20 * HOUR - 23 * 60_000],
  ['shorter than an hour', T0 + 5 * HOUR + 10 * 60_000, T0 + 5 * HOUR + 50 * 60_000],
  ['everything', T0 - HOUR, T0 + 40 * HOUR],
];

describe('slowest operations from the hourly entry-span tallies', () => {
  it('buckets cover every µs value once, in order', () => {
    let prev = -1;
    for (const u of [0, 1, 15, 16, 17, 31, 32, 1000, 123_456, 2 ** 31 - 1, 2 ** 31, 2 ** 40 + 7]) {
      const b = durationBucket(u);
      const [lo, hi] = bucketRange(b);
      expect(u >= lo && u <= hi).toBe(true);
      expect(b).toBeGreaterThanOrEqual(prev);
      prev = b;
    }
    for (let b = 0; b < 1500; b++) expect(bucketRange(b + 1)[0]).toBe(bucketRange(b)[1] + 1);
    for (let b = 0; b < 1500; b++) expect(durationBucket(bucketRange(b)[0])).toBe(b);
  });

  for (const [label, from, to] of WINDOWS) {
    it(`equals the answer from every entry span (${label})`, async () => {
      const rows = await compare(from, to);
      if (label !== 'shorter than an hour') expect(rows.length).toBe(5);
      await compare(from, to, { environment: 'staging' });
      await compare(from, to, { environment: '' });
      await compare(from, to, { service: 'worker' });
    });
  }

  it('equals it after expiry with the cutoff inside an hour, and after a backfill', async () => {
    const retention = createRetentionRepo(db);
    const target = EXPIRY_TARGETS.find((t) => t.table === 'spans')!;
    while (retention.expireBatch(target, '1', T0 + 7 * HOUR + 1_234.5, 37) > 0);
    for (const [, from, to] of WINDOWS) await compare(from, to);
    const before = db.prepare('SELECT * FROM span_op_hours ORDER BY 1, 2, 3, 4, 5').all();
    db.prepare('DELETE FROM span_op_hours').run();
    backfillOperationRollups(db);
    expect(db.prepare('SELECT * FROM span_op_hours ORDER BY 1, 2, 3, 4, 5').all()).toEqual(before);
  });

  it('falls back to the spans when the tallies disagree with them', async () => {
    const { groups } = await traces.entryGroups('1', { max: 200 });
    const f = { fromMs: T0 + 8 * HOUR, toMs: T0 + 20 * HOUR };
    const ok = slowestFromTallies(tallies, '1', groups, f);
    expect(ok).not.toBeNull();
    // A span row written behind the tallies' back (not through the writer).
    db.prepare('UPDATE spans SET duration_ms = duration_ms + 0.5 WHERE rowid IN (SELECT rowid FROM spans WHERE start_ms >= ? AND start_ms < ? AND kind = 2)').run(f.fromMs, f.toMs);
    expect(slowestFromTallies(tallies, '1', groups, f)).toBeNull();
  });
});
