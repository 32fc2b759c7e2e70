/**
 * metrics.timeline and metrics.inspect on hand-built OTLP/JSON points posted to the ingest endpoint,
 * one metric per temporality rule; expected values are worked out by hand in the comments.
 */
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { startTestServer, type TestServer } from '../helpers/server.js';
import { DAY, HOUR, MIN, iso, ok, read, sendMetrics } from './telemetry-fixtures.js';

const NOW = Date.parse('2026-03-02T12:00:00.000Z');
/** The window most tests read: ten one-minute buckets. */
const FROM = NOW - 10 * MIN;
const at = (minutes: number) => FROM + minutes * MIN;
const LONG_AGO = NOW - 3 * HOUR;

interface Bucket {
  time: string;
  value: number | null;
  point_count: number;
  sample_count: number;
}

describe('metrics.timeline', () => {
  let t: TestServer;
  const timeline = (q: Record<string, string | number | undefined>) => read(t, '/metrics/timeline', { from: iso(FROM), to: iso(NOW), granularity: '1m', ...q });
  const values = async (q: Record<string, string | number | undefined>) => {
    const r = await timeline(q);
    expect(r.status, JSON.stringify(r.body)).toBe(200);
    return r.body.buckets.map((b: Bucket) => b.value);
  };

  beforeAll(async () => {
    t = await startTestServer({ now: () => NOW });
    await sendMetrics(t, [
      {
        resource: { service: 'jobs', environment: 'production' },
        metrics: [
          {
            // Counter resets: a known start before the window with no baseline (first point → 0), then
            // a restart whose start is known (reset → its full value), then an OTLP zero-duration
            // unknown-start point (→ 0) followed by a point of that new sequence.
            name: 'reset.counter',
            unit: '{job}',
            temporality: 'cumulative',
            sum: [
              { start: LONG_AGO, at: at(0.5), value: 100 },
              { start: LONG_AGO, at: at(1.5), value: 115 },
              { start: LONG_AGO, at: at(2.5), value: 130 },
              { start: at(3), at: at(3.5), value: 5 },
              { start: at(3), at: at(4.5), value: 12 },
              { start: null, at: at(5.5), value: 3 },
              { start: null, at: at(6.5), value: 9 },
            ],
          },
          {
            // Same start, lower value: a new baseline that counts as no increase.
            name: 'decrease.counter',
            temporality: 'cumulative',
            sum: [
              { start: LONG_AGO, at: FROM - 30 * MIN, value: 1000 },
              { start: LONG_AGO, at: at(0.5), value: 1010 },
              { start: LONG_AGO, at: at(1.5), value: 990 },
              { start: LONG_AGO, at: at(2.5), value: 1000 },
            ],
          },
          {
            // Baselines: series a has a point in the hour before the window (its baseline) and an older
            // one that is ignored; series b only an older one (first point → 0); series c starts inside
            // the window (its first point counts whole).
            name: 'baseline.counter',
            temporality: 'cumulative',
            sum: [
              { start: LONG_AGO, at: FROM - 2 * HOUR, value: 50, attributes: { series: 'a' } },
              { start: LONG_AGO, at: FROM - 30 * MIN, value: 200, attributes: { series: 'a' } },
              { start: LONG_AGO, at: at(0.5), value: 230, attributes: { series: 'a' } },
              { start: LONG_AGO, at: FROM - 2 * HOUR, value: 10, attributes: { series: 'b' } },
              { start: LONG_AGO, at: at(0.6), value: 40, attributes: { series: 'b' } },
              { start: at(1), at: at(1.5), value: 8, attributes: { series: 'c' } },
            ],
          },
          { name: 'orders.delta', temporality: 'delta', sum: [{ start: at(0), at: at(0.2), value: 3 }, { start: at(0.2), at: at(0.4), value: 4 }, { start: at(2), at: at(2.5), value: 10 }] },
          { name: 'queue.depth', unit: '{item}', gauge: [{ at: at(0.1), value: 1 }, { at: at(0.3), value: 2 }, { at: at(0.5), value: 3 }, { at: at(0.7), value: 4 }, { at: at(9.9), value: 8 }] },
          {
            // Two routes in the same minute, same bounds: merged [2, 10, 6, 2] (20 measurements), min 5, max 90.
            name: 'http.duration',
            unit: 'ms',
            temporality: 'delta',
            hist: [
              { start: at(0), at: at(0.5), count: 10, sum: 200, min: 5, max: 45, bounds: [10, 20, 50], counts: [2, 6, 2, 0], attributes: { route: '/a' } },
              { start: at(0), at: at(0.7), count: 10, sum: 400, min: 12, max: 90, bounds: [10, 20, 50], counts: [0, 4, 4, 2], attributes: { route: '/b' } },
            ],
          },
          {
            // Cumulative buckets are differenced: [3, 2, 1] − [1, 1, 0] = [2, 1, 1], count 4, sum 12.
            name: 'db.duration',
            unit: 'ms',
            temporality: 'cumulative',
            hist: [
              { start: LONG_AGO, at: FROM - 10 * MIN, count: 2, sum: 3, bounds: [1, 5], counts: [1, 1, 0], min: 0.5, max: 2 },
              { start: LONG_AGO, at: at(0.5), count: 6, sum: 15, bounds: [1, 5], counts: [3, 2, 1], min: 0.5, max: 7 },
            ],
          },
          {
            name: 'rpc.latency',
            unit: 'ms',
            temporality: 'cumulative',
            exp: [
              { start: LONG_AGO, at: FROM - 10 * MIN, count: 10, sum: 100, scale: 0, positive: { offset: 3, counts: [10] } },
              { start: LONG_AGO, at: at(0.5), count: 30, sum: 500, scale: 0, positive: { offset: 3, counts: [25, 5] } },
            ],
          },
          {
            // Delta exponential histogram, scale 0: buckets (1, 2] and (2, 4], 4 each, min 1.5, max 3.5.
            name: 'rpc.delta',
            unit: 'ms',
            temporality: 'delta',
            exp: [{ start: at(0), at: at(0.5), count: 8, sum: 20, scale: 0, min: 1.5, max: 3.5, positive: { offset: 0, counts: [4, 4] } }],
          },
        ],
      },
    ]);
  });
  afterAll(() => t?.close());

  it('differences cumulative counters across a known-start reset and an unknown-start reset', async () => {
    // 100 (no baseline → 0), +15, +15, reset to 5 (whole), +7, unknown start (0), +6
    expect(await values({ metric_name: 'reset.counter', metric_type: 'sum', aggregation: 'sum' })).toEqual([0, 15, 15, 5, 7, 0, 6, null, null, null]);
    const r = await timeline({ metric_name: 'reset.counter', metric_type: 'sum', aggregation: 'sum' });
    expect(r.body).toMatchObject({ metric_name: 'reset.counter', metric_type: 'sum', unit: '{job}', aggregation: 'sum', granularity: '1m', from: iso(FROM), to: iso(NOW) });
    expect(r.body.buckets[0]).toEqual({ time: iso(FROM), value: 0, point_count: 1, sample_count: 1 });
    expect(r.body.buckets[9]).toEqual({ time: iso(at(9)), value: null, point_count: 0, sample_count: 0 });
  });

  it('takes a same-start decrease as a new baseline that adds nothing', async () => {
    // baseline 1000 (30 min before the window) → 1010: +10; → 990: decrease, 0; → 1000: +10
    expect((await values({ metric_name: 'decrease.counter', metric_type: 'sum', aggregation: 'sum' })).slice(0, 3)).toEqual([10, 0, 10]);
  });

  it('uses the latest point of the preceding hour as baseline and counts a start inside the window whole', async () => {
    // a: 230 − 200 = 30; b: no point in the preceding hour → 0; c: starts at minute 1 → 8
    const r = await timeline({ metric_name: 'baseline.counter', metric_type: 'sum', aggregation: 'sum' });
    expect(r.body.buckets.slice(0, 3).map((b: Bucket) => [b.value, b.point_count])).toEqual([
      [30, 2],
      [8, 1],
      [null, 0],
    ]);
  });

  it('aggregates delta sums as received', async () => {
    expect((await values({ metric_name: 'orders.delta', metric_type: 'sum', aggregation: 'sum' })).slice(0, 3)).toEqual([7, null, 10]);
    expect((await values({ metric_name: 'orders.delta', metric_type: 'sum', aggregation: 'avg' }))[0]).toBe(3.5);
    expect((await values({ metric_name: 'orders.delta', metric_type: 'sum', aggregation: 'count' }))[0]).toBe(2);
  });

  it('aggregates gauge samples with avg (default), count, sum and interpolated percentiles', async () => {
    const r = await timeline({ metric_name: 'queue.depth', metric_type: 'gauge' });
    expect(r.body.aggregation).toBe('avg');
    expect(r.body.buckets[0]).toEqual({ time: iso(FROM), value: 2.5, point_count: 4, sample_count: 4 });
    expect(r.body.buckets[9].value).toBe(8);
    const at0 = async (aggregation: string) => (await values({ metric_name: 'queue.depth', metric_type: 'gauge', aggregation }))[0];
    expect(await at0('count')).toBe(4);
    expect(await at0('sum')).toBe(10);
    expect(await at0('p50')).toBe(2.5);
    expect(await at0('p90')).toBeCloseTo(3.7, 10); // (n − 1)·q = 2.7 → 3 + 0.7·(4 − 3)
    expect(await at0('p99')).toBeCloseTo(3.97, 10);
  });

  it('merges explicit histogram buckets across series before taking percentiles', async () => {
    const first = async (aggregation: string) => (await values({ metric_name: 'http.duration', metric_type: 'hist', aggregation }))[0];
    // merged counts [2, 10, 6, 2] over (−∞,10], (10,20], (20,50], (50,+∞), N = 20
    expect(await first('p50')).toBeCloseTo(18, 10); // rank 10 in (10,20]: 10 + 10·(10 − 2)/10
    expect(await first('p90')).toBeCloseTo(50, 10); // rank 18 in (20,50]: 20 + 30·(18 − 12)/6
    expect(await first('p95')).toBeCloseTo(70, 10); // rank 19 in (50, max 90]: 50 + 40·(19 − 18)/2
    expect(await first('p99')).toBeCloseTo(86, 10); // rank 19.8: 50 + 40·1.8/2
    expect(await first('avg')).toBe(30); // (200 + 400) / 20
    expect(await first('sum')).toBe(600);
    expect(await first('count')).toBe(20);
    const r = await timeline({ metric_name: 'http.duration', metric_type: 'hist' });
    expect(r.body.buckets[0]).toMatchObject({ point_count: 2, sample_count: 20 });
  });

  it('differences cumulative histogram buckets per series', async () => {
    const r = await timeline({ metric_name: 'db.duration', metric_type: 'hist', aggregation: 'avg' });
    expect(r.body.buckets[0]).toEqual({ time: iso(FROM), value: 3, point_count: 1, sample_count: 4 }); // 12 / 4
    // [2, 1, 1] over (−∞,1], (1,5], (5,+∞): rank 2 lies in the first bucket, taken from 0 → 1·2/2
    expect((await values({ metric_name: 'db.duration', metric_type: 'hist', aggregation: 'p50' }))[0]).toBeCloseTo(1, 10);
  });

  it('refuses a percentile timeline of a cumulative exponential histogram with 422 and keeps avg, count and sum', async () => {
    for (const aggregation of ['p50', 'p90', 'p95', 'p99']) {
      const r = await timeline({ metric_name: 'rpc.latency', metric_type: 'exponential_histogram', aggregation });
      expect(r.status, aggregation).toBe(422);
      expect(r.body).toMatchObject({ type: 'invalid_request_error', code: 'UNSUPPORTED_METRIC_TEMPORALITY', param: 'aggregation' });
    }
    // also for a window without points: the metric's temporality is known
    const empty = await read(t, '/metrics/timeline', { metric_name: 'rpc.latency', metric_type: 'exponential_histogram', aggregation: 'p99', from: iso(NOW - 20 * DAY), to: iso(NOW - 19 * DAY) });
    expect(empty.status).toBe(422);
    // reset-aware deltas: count 30 − 10 = 20, sum 500 − 100 = 400
    expect((await values({ metric_name: 'rpc.latency', metric_type: 'exponential_histogram', aggregation: 'avg' }))[0]).toBe(20);
    expect((await values({ metric_name: 'rpc.latency', metric_type: 'exponential_histogram', aggregation: 'count' }))[0]).toBe(20);
    expect((await values({ metric_name: 'rpc.latency', metric_type: 'exponential_histogram', aggregation: 'sum' }))[0]).toBe(400);
  });

  it('gives percentiles of a delta exponential histogram from its buckets', async () => {
    // rank 4 of 8 falls at the top of (1, 2], whose lower edge min 1.5 tightens: 1.5 + 0.5·4/4
    expect((await values({ metric_name: 'rpc.delta', metric_type: 'exponential_histogram', aggregation: 'p50' }))[0]).toBeCloseTo(2, 10);
    expect((await values({ metric_name: 'rpc.delta', metric_type: 'exponential_histogram', aggregation: 'avg' }))[0]).toBe(2.5);
  });

  it('answers a metric without points with null buckets and a null unit', async () => {
    const r = await timeline({ metric_name: 'no.such.metric', metric_type: 'gauge' });
    expect(r.status).toBe(200);
    expect(r.body.unit).toBeNull();
    expect(r.body.buckets.every((b: Bucket) => b.value === null && b.point_count === 0)).toBe(true);
  });

  it('filters by service and environment', async () => {
    expect((await values({ metric_name: 'queue.depth', metric_type: 'gauge', service_name: 'other' }))[0]).toBeNull();
    expect((await values({ metric_name: 'queue.depth', metric_type: 'gauge', environment: 'production', service_name: 'jobs' }))[0]).toBe(2.5);
  });

  it('defaults to the 24 hours before now at a 5-minute granularity', async () => {
    const r = await read(t, '/metrics/timeline', { metric_name: 'queue.depth', metric_type: 'gauge' });
    expect(r.body).toMatchObject({ from: iso(NOW - DAY), to: iso(NOW), granularity: '5m' });
    expect(r.body.buckets).toHaveLength(288);
    expect(r.body.buckets.filter((b: Bucket) => b.value !== null).map((b: Bucket) => b.value)).toEqual([2.5, 8]);
  });

  it('answers 400 before any query for reversed, oversized or timezone-less windows', async () => {
    const reversed = await timeline({ metric_name: 'queue.depth', metric_type: 'gauge', from: iso(NOW), to: iso(FROM) });
    expect(reversed.status).toBe(400);
    expect(reversed.body).toMatchObject({ code: 'invalid_parameter', param: 'from' });
    const long = await read(t, '/metrics/timeline', { metric_name: 'queue.depth', metric_type: 'gauge', from: iso(NOW - 31 * DAY), to: iso(NOW), granularity: '1d' });
    expect(long.status).toBe(400);
    expect(long.body.param).toBe('from');
    const naive = await timeline({ metric_name: 'queue.depth', metric_type: 'gauge', from: '2026-03-02T11:50:00' });
    expect(naive.status).toBe(400);
    expect(naive.body.param).toBe('from');
    const naiveTo = await timeline({ metric_name: 'queue.depth', metric_type: 'gauge', to: '2026-03-02 12:00' });
    expect(naiveTo.status).toBe(400);
    expect(naiveTo.body.param).toBe('to');
    const offset = await timeline({ metric_name: 'queue.depth', metric_type: 'gauge', from: '2026-03-02T13:50:00+02:00', to: '2026-03-02T14:00:00+02:00' });
    expect(offset.status).toBe(200);
    expect(offset.body.from).toBe(iso(FROM));
  });

  it('answers 400 for 2,001 possible buckets and accepts 2,000', async () => {
    const over = await timeline({ metric_name: 'queue.depth', metric_type: 'gauge', from: iso(NOW - 2001 * MIN), to: iso(NOW) });
    expect(over.status).toBe(400);
    expect(over.body).toMatchObject({ code: 'invalid_parameter', param: 'granularity' });
    expect(over.body.message).toContain('2001');
    const max = await timeline({ metric_name: 'queue.depth', metric_type: 'gauge', from: iso(NOW - 2000 * MIN), to: iso(NOW) });
    expect(max.status).toBe(200);
    expect(max.body.buckets).toHaveLength(2000);
  });

  it('answers 400 for a missing metric, an unknown type, aggregation or granularity', async () => {
    expect((await read(t, '/metrics/timeline', { metric_type: 'gauge' })).body.param).toBe('metric_name');
    expect((await read(t, '/metrics/timeline', { metric_name: 'queue.depth' })).body.param).toBe('metric_type');
    expect((await timeline({ metric_name: 'queue.depth', metric_type: 'summary' })).body.param).toBe('metric_type');
    expect((await timeline({ metric_name: 'queue.depth', metric_type: 'gauge', aggregation: 'median' })).body.param).toBe('aggregation');
    expect((await timeline({ metric_name: 'queue.depth', metric_type: 'gauge', granularity: '2m' })).body.param).toBe('granularity');
  });
});

describe('metrics.inspect', () => {
  let t: TestServer;
  beforeAll(async () => {
    t = await startTestServer({ now: () => NOW });
    await sendMetrics(t, [
      {
        resource: { service: 'api' },
        metrics: [
          {
            name: 'http.duration',
            unit: 'ms',
            temporality: 'delta',
            hist: [
              { start: NOW - 3 * HOUR, at: NOW - 2 * HOUR - MIN, count: 4, sum: 40, min: 5, max: 15, bounds: [10, 20], counts: [2, 2, 0] },
              { start: NOW - 2 * HOUR, at: NOW - HOUR - MIN, count: 4, sum: 80, min: 12, max: 30, bounds: [10, 20], counts: [0, 2, 2] },
            ],
          },
          {
            name: 'rpc.latency',
            unit: 'ms',
            temporality: 'cumulative',
            exp: [
              { start: NOW - 5 * HOUR, at: NOW - 2 * HOUR, count: 10, sum: 100, scale: 0, positive: { offset: 3, counts: [10] } },
              { start: NOW - 5 * HOUR, at: NOW - HOUR, count: 30, sum: 500, scale: 0, positive: { offset: 3, counts: [25, 5] } },
            ],
          },
        ],
      },
    ]);
  });
  afterAll(() => t?.close());

  it('gives highlights and avg, p50, p90 and p99 snapshots', async () => {
    const b = await ok(t, '/metrics/inspect', { metric_name: 'http.duration', metric_type: 'hist' });
    expect(b).toMatchObject({ metric_name: 'http.duration', metric_type: 'hist', unit: 'ms', granularity: '5m', from: iso(NOW - DAY), to: iso(NOW) });
    expect(b.snapshots.map((s: { aggregation: string }) => s.aggregation)).toEqual(['avg', 'p50', 'p90', 'p99']);
    const avg = b.snapshots[0];
    expect(avg).toMatchObject({ latest_value: 20, previous_value: 10, change_percent: 100 });
    expect(avg.recent_points.map((p: Bucket) => p.value)).toEqual([10, 20]);
    expect(avg.top_points[0].value).toBe(20);
    expect(b.highlights[0]).toBe('http.duration: 2 points (8 measurements) in 2 of 288 buckets.');
    expect(b.highlights).toContain('avg rose 100% to 20 ms in the latest bucket.');
  });

  it('keeps the normalized average of a cumulative exponential histogram and omits its percentiles', async () => {
    const b = await ok(t, '/metrics/inspect', { metric_name: 'rpc.latency', metric_type: 'exponential_histogram' });
    expect(b.snapshots.map((s: { aggregation: string }) => s.aggregation)).toEqual(['avg']);
    // first point: its start (5 h ago) lies inside the window, so it counts whole (avg 10); second: (500 − 100) / (30 − 10)
    expect(b.snapshots[0]).toMatchObject({ latest_value: 20, previous_value: 10 });
    expect(b.highlights.at(-1)).toContain('Percentiles are unavailable for cumulative exponential histograms');
  });

  it('answers 400 for a window above 30 days', async () => {
    const r = await read(t, '/metrics/inspect', { metric_name: 'http.duration', metric_type: 'hist', from: iso(NOW - 40 * DAY) });
    expect(r.status).toBe(400);
    expect(r.body.param).toBe('from');
  });
});
