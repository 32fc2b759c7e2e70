/**
 * Issue 20: metric reads answer the same on both backends. Random metric points (seeded: gauges,
 * cumulative counters with restarts, unknown starts and decreases, up-down counters, delta sums,
 * delta histograms with two bound sets, cumulative histograms, exponential histograms, several
 * series, services, environments, hosts, exemplars, equal times, written out of time order in
 * batches; two metrics with more than EXACT_PERCENTILE_VALUES points so percentiles come from the
 * value sketch) are written through the same writer into a SQLite-only server and a server with
 * metric points in ClickHouse; then metrics.list, metrics.timeline (every aggregation, granularity,
 * attribute filters, group_by), metrics.inspect and the summary over random windows must give the
 * same bodies — numbers equal up to floating-point summation order (1e-9 relative), as SQLite's own
 * rollups equal its raw path (test/storage/metric-rollups.test.ts). Runs in the clickhouse-chdb project.
 */
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import type { MetricPointRecord, MetricType, Temporality } from '../../src/domain/telemetry-types.js';
import { EXACT_PERCENTILE_VALUES } from '../../src/domain/metrics/rollup-state.js';
import { api, startTestServer, type TestServer } from '../helpers/server.js';
import { rng } from '../../bench/lib.js';
import { compareOnBoth } from '../support/body-diffs.js';

const mode = process.env.SIGHTLINE_TEST_CLICKHOUSE;
const NOW = Date.parse('2026-04-10T12:00:00.000Z');
const T0 = NOW - 6 * 3_600_000;
const HOUR = 3_600_000;
const MIN = 60_000;

type Kind = { name: string; type: MetricType; temporality: Temporality; monotonic: boolean; unit: string; weight: number };
const KINDS: Kind[] = [
  { name: 'system.cpu', type: 'gauge', temporality: 'unspecified', monotonic: false, unit: '1', weight: 12 },
  { name: 'http.requests', type: 'sum', temporality: 'cumulative', monotonic: true, unit: '{request}', weight: 12 },
  { name: 'queue.inflight', type: 'sum', temporality: 'cumulative', monotonic: false, unit: '{job}', weight: 1 },
  { name: 'bytes.sent', type: 'sum', temporality: 'delta', monotonic: true, unit: 'By', weight: 1 },
  { name: 'http.duration', type: 'hist', temporality: 'delta', monotonic: false, unit: 'ms', weight: 1 },
  { name: 'db.duration', type: 'hist', temporality: 'cumulative', monotonic: false, unit: 'ms', weight: 0.5 },
  { name: 'rpc.size', type: 'exponential_histogram', temporality: 'delta', monotonic: false, unit: 'By', weight: 0.5 },
];
const SERVICES = ['api', 'worker'];
const ENVS = ['prod', 'staging'];
const HOSTS = ['h-1', 'h-2', 'h-3'];

function makePoints(seed: number, n: number): MetricPointRecord[] {
  const r = rng(seed);
  const total = KINDS.reduce((t, k) => t + k.weight, 0);
  const pickKind = () => {
    let x = r() * total;
    for (const k of KINDS) if ((x -= k.weight) < 0) return k;
    return KINDS[0]!;
  };
  const pick = <T,>(xs: readonly T[]) => xs[Math.floor(r() * xs.length)]!;
  const out: MetricPointRecord[] = [];
  for (let i = 0; i < n; i++) {
    const k = pickKind();
    const service = pick(SERVICES);
    const env = pick(ENVS);
    const series = Math.floor(r() * 3);
    // Some points on minute boundaries, some sharing a time; the first hour is the baseline hour of windows from T0 + 1 h.
    const time = r() < 0.1 ? T0 + Math.floor(r() * 6 * 60) * MIN : T0 + Math.floor(r() * 6 * HOUR);
    const attributes: Record<string, unknown> = { series, 'http.route': pick(['/a', '/b']) };
    if (r() < 0.3) attributes['host.name'] = pick(HOSTS); // a point attribute over the resource's
    const base = {
      metric_name: k.name, description: k.name === 'system.cpu' && r() < 0.5 ? 'CPU use' : '', unit: k.unit, type: k.type, temporality: k.temporality,
      monotonic: k.monotonic, start_ms: null as number | null, time_ms: time, attributes, flags: 0,
      resource: { 'service.name': service, 'deployment.environment.name': env, 'host.name': pick(HOSTS) },
      scope: { name: 's', version: '', attributes: {} }, service_name: service,
    };
    const exemplars = r() < 0.03 ? [{ time_ms: time - 5, value: 1.5, trace_id: '0af7651916cd43dd8448eb211c80319c', span_id: 'b7ad6b7169203331', attributes: {} }] : undefined;
    if (k.type === 'hist') {
      const wide = r() < 0.2;
      const counts = wide ? [Math.floor(r() * 4), Math.floor(r() * 4), Math.floor(r() * 3), Math.floor(r() * 2)] : [Math.floor(r() * 5), Math.floor(r() * 9), Math.floor(r() * 3)];
      out.push({
        ...base, count: counts.reduce((a, b) => a + b, 0), ...(r() < 0.9 ? { sum: Math.round(r() * 1000) / 7 } : {}),
        ...(r() < 0.8 ? { min: Math.round(r() * 10), max: 100 + Math.round(r() * 400) } : {}), bucket_counts: counts, explicit_bounds: wide ? [5, 50, 500] : [10, 100],
        ...(exemplars ? { exemplars } : {}),
      } as MetricPointRecord);
    } else if (k.type === 'exponential_histogram') {
      const pos = [Math.floor(r() * 5), Math.floor(r() * 5)];
      out.push({ ...base, count: pos[0]! + pos[1]! + 1, sum: Math.round(r() * 500) / 3, scale: 2, zero_count: 1, zero_threshold: 0, positive: { offset: 3, bucket_counts: pos } } as MetricPointRecord);
    } else {
      const value = k.type === 'gauge' ? Math.round((r() - 0.3) * 40000) / 100 : Math.floor(r() * 50);
      out.push({ ...base, value, ...(exemplars ? { exemplars } : {}) } as MetricPointRecord);
    }
  }
  // Cumulative series: values growing in time order, with restarts, unknown starts and decreases.
  const bySeries = new Map<string, MetricPointRecord[]>();
  for (const p of out) {
    if (p.temporality !== 'cumulative') continue;
    const key = `${p.metric_name} ${JSON.stringify(p.resource)} ${JSON.stringify(p.attributes)}`;
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
        start = p.time_ms - 1000;
        v = 0;
      } else if (x < 0.03) start = null;
      else if (x < 0.05) v = Math.max(0, v - 30);
      if (start === null && x >= 0.03 && r() < 0.3) start = T0 - HOUR;
      v += p.metric_name === 'queue.inflight' ? Math.floor(r() * 20) - 8 : Math.floor(r() * 20);
      p.start_ms = start === null ? (r() < 0.5 ? null : p.time_ms) : start;
      if (p.type === 'sum') p.value = v;
      else {
        p.count = v;
        p.sum = v * 3;
        p.bucket_counts = [Math.floor(v / 2), v - Math.floor(v / 2)];
        p.explicit_bounds = [10];
      }
    }
  }
  for (let i = out.length - 1; i > 0; i--) {
    const j = Math.floor(r() * (i + 1));
    [out[i], out[j]] = [out[j]!, out[i]!];
  }
  return out;
}

describe.skipIf(mode !== 'server' && mode !== 'chdb')('metric reads on SQLite and on ClickHouse', () => {
  let a: TestServer;
  let b: TestServer;
  const POINTS = 30_000;
  beforeAll(async () => {
    a = await startTestServer({ now: () => NOW, clickhouse: false });
    b = await startTestServer({ now: () => NOW });
    const pts = makePoints(23, POINTS);
    for (const s of [a, b]) {
      for (let i = 0; i < pts.length; i += 700) {
        const slice = pts.slice(i, i + 700);
        await s.s.services.writeBatch(() => s.s.services.telemetry.insertMetricPoints(s.projectId, slice, NOW));
      }
    }
  }, 240_000);
  afterAll(async () => {
    await a?.close();
    await b?.close();
  });

  it('keeps metric points out of SQLite when they go to ClickHouse', () => {
    expect(a.s.db.prepare('SELECT count(*) FROM metric_points').pluck().get()).toBe(POINTS);
    expect(b.s.db.prepare('SELECT count(*) FROM metric_points').pluck().get()).toBe(0);
    expect(b.s.db.prepare('SELECT count(*) FROM metric_catalog').pluck().get()).toBe(0);
  });

  it('answer every metric read with the same body', async () => {
    const r = rng(5);
    const pick = <T,>(xs: readonly T[]) => xs[Math.floor(r() * xs.length)]!;
    const iso = (ms: number) => new Date(ms).toISOString();
    const windows: [number, number][] = [
      [T0, NOW], [T0 + HOUR, NOW], [T0 + 17_300, NOW - 41_000], [T0 + 90 * MIN + 5, T0 + 95 * MIN - 3], [T0 + HOUR + 59_999, T0 + 2 * HOUR + 1],
      [T0 - 30 * MIN, NOW], [T0 + 2 * HOUR + 30_000, T0 + 3.5 * HOUR], [T0 + 7 * MIN + 1, T0 + 4 * HOUR + 13 * MIN - 1], [T0 + 3 * HOUR + 10, T0 + 3 * HOUR + 50_000],
    ];
    const AGG = ['avg', 'count', 'sum', 'min', 'max', 'rate', 'p50', 'p90', 'p95', 'p99'];
    const paths: string[] = [];
    for (let i = 0; i < 220; i++) {
      const [from, to] = pick(windows);
      const q = [`from=${iso(from)}`, `to=${iso(to)}`];
      const k = pick(KINDS);
      const sel = [`metric_name=${k.name}`, `metric_type=${k.type}`];
      if (r() < 0.2) sel.push(`service_name=${pick(SERVICES)}`);
      if (r() < 0.15) sel.push(`environment=${pick(ENVS)}`);
      if (r() < 0.15) sel.push(`attributes=${encodeURIComponent(pick(['host.name:h-2', 'http.route:/a', 'series:1', 'series:2,http.route:/b']))}`);
      const kind = pick(['list', 'timeline', 'timeline', 'timeline', 'timeline', 'inspect', 'summary']);
      if (kind === 'list') {
        if (r() < 0.3) q.push(`metric_type=${pick(KINDS).type}`);
        if (r() < 0.3) q.push(`q=${pick(['HTTP', 'ms', 'work', 'by', 'duration'])}`);
        if (r() < 0.2) q.push(`service_name=${pick(SERVICES)}`, `limit=${pick([1, 3])}`, `offset=${pick([0, 1])}`);
        paths.push(`/metrics?${q.join('&')}`);
      } else if (kind === 'timeline') {
        q.push(...sel, `aggregation=${pick(AGG)}`);
        if (r() < 0.7) q.push(`granularity=${pick(to - from > 2 * HOUR ? ['5m', '15m', '1h', '6h'] : ['1m', '5m', '1h'])}`);
        if (r() < 0.15) q.push(`group_by=${pick(['host.name', 'http.route,series'])}`);
        paths.push(`/metrics/timeline?${q.join('&')}`);
      } else if (kind === 'inspect') {
        paths.push(`/metrics/inspect?${[...q, ...sel].join('&')}`);
      } else {
        if (r() < 0.3) q.push(`metric_query=${pick(['http', 'duration', 'cpu'])}`);
        if (r() < 0.3) q.push(`service_name=${pick(SERVICES)}`);
        q.push(`metric_limit=${pick([3, 5])}`);
        paths.push(`/observability-summary?${q.join('&')}`);
      }
    }
    // Percentiles over more than EXACT_PERCENTILE_VALUES values: from the value sketch on both.
    for (const agg of ['p50', 'p99']) {
      paths.push(`/metrics/timeline?metric_name=system.cpu&metric_type=gauge&aggregation=${agg}&from=${iso(T0)}&to=${iso(NOW)}&granularity=6h`);
      paths.push(`/metrics/timeline?metric_name=http.requests&metric_type=sum&aggregation=${agg}&from=${iso(T0 + 30_001)}&to=${iso(NOW)}&granularity=6h`);
    }
    const { ok: compared, nonEmpty } = await compareOnBoth(
      a,
      b,
      paths,
      (body) => !!(body.data?.length || ((body.buckets ?? []) as { point_count: number }[]).some((bk) => bk.point_count > 0) || body.snapshots?.length),
    );
    expect(compared).toBeGreaterThan(paths.length * 0.8); // the rest: 422 for percentiles of cumulative exponential histograms, on both
    expect(nonEmpty).toBeGreaterThan(120);
  }, 300_000);

  it('reads the sketch path: more than EXACT_PERCENTILE_VALUES values in one bucket', async () => {
    const f = { metricName: 'system.cpu', type: 'gauge' as const };
    const sa = await a.s.services.metricsRead.rollupStates(a.projectId, f, T0, NOW, { first: T0, size: NOW - T0, n: 1 }, true);
    const sb = await b.s.services.metricsRead.rollupStates(b.projectId, f, T0, NOW, { first: T0, size: NOW - T0, n: 1 }, true);
    expect(sa?.[0]?.n).toBeGreaterThan(EXACT_PERCENTILE_VALUES);
    expect(sb?.[0]?.n).toBe(sa?.[0]?.n);
    expect(sb?.[0]?.sketch).toEqual(sa?.[0]?.sketch);
  });
});
