import { describe, expect, it } from 'vitest';
import {
  checkAggregationSupported,
  expHistogramQuantile,
  histogramQuantile,
  inspect,
  mergeExplicitHistograms,
  percentile,
  timeline,
  UnsupportedTemporalityError,
  type TimelineOptions,
} from '../../../src/domain/metrics/aggregate.js';
import { WindowError } from '../../../src/domain/metrics/window.js';
import { at, counter, MIN, pt, T0, WINDOW } from './helpers.js';

const Q = 15 * MIN; // four 15-minute buckets in the 1 h window
const opts = (o: Partial<TimelineOptions> & Pick<TimelineOptions, 'type' | 'aggregation'>): TimelineOptions => ({
  ...WINDOW,
  granularityMs: Q,
  ...o,
});
const vals = (t: ReturnType<typeof timeline>) => t.buckets.map((b) => b.value);

describe('percentile (raw values, linear interpolation between closest ranks)', () => {
  it('computes by hand', () => {
    const v = [1, 2, 3, 4];
    expect(percentile(v, 0.5)).toBe(2.5); // h = 3·0.5 = 1.5 → 2 + 0.5·(3 − 2)
    expect(percentile(v, 0.9)).toBeCloseTo(3.7, 10); // h = 2.7 → 3 + 0.7·1
    expect(percentile(v, 0)).toBe(1);
    expect(percentile(v, 1)).toBe(4);
    expect(percentile([42], 0.99)).toBe(42);
    expect(percentile([], 0.5)).toBeNull();
    expect(() => percentile(v, 50)).toThrow(RangeError);
  });
});

describe('timeline — buckets', () => {
  it('every bucket of the window is present, null when empty', () => {
    const t = timeline([pt({ type: 'gauge', time_ms: at(20), value: 5 })], opts({ type: 'gauge', aggregation: 'avg' }));
    expect(t.buckets.map((b) => b.time)).toEqual([
      '2024-01-01T00:00:00.000Z',
      '2024-01-01T00:15:00.000Z',
      '2024-01-01T00:30:00.000Z',
      '2024-01-01T00:45:00.000Z',
    ]);
    expect(vals(t)).toEqual([null, 5, null, null]);
    expect(t.buckets.map((b) => [b.point_count, b.sample_count])).toEqual([[0, 0], [1, 1], [0, 0], [0, 0]]);
  });

  it('rejects more than 2,000 buckets', () => {
    expect(() =>
      timeline([], { fromMs: T0, toMs: T0 + 2001 * MIN, granularityMs: MIN, type: 'gauge', aggregation: 'avg' }),
    ).toThrow(WindowError);
  });
});

describe('timeline — gauges (rule 2: percentiles directly on values)', () => {
  const points = [1, 2, 3, 4].map((v, i) => pt({ type: 'gauge', time_ms: at(i + 1), value: v }));
  it('avg / sum / count / percentiles over the values of a bucket', () => {
    const get = (aggregation: TimelineOptions['aggregation']) => timeline(points, opts({ type: 'gauge', aggregation })).buckets[0].value;
    expect(get('avg')).toBe(2.5); // (1+2+3+4)/4
    expect(get('sum')).toBe(10);
    expect(get('count')).toBe(4);
    expect(get('p50')).toBe(2.5);
    expect(get('p90')).toBeCloseTo(3.7, 10);
    expect(get('p99')).toBeCloseTo(3.97, 10); // h = 2.97 → 3 + 0.97
  });
});

describe('timeline — many points in one bucket', () => {
  // A spread of this many arguments into Math.min/max overflows the call stack (observability.summary answered 500 at 1M points).
  const many = Array.from({ length: 300_000 }, (_, i) => pt({ type: 'gauge', time_ms: at(1) + (i % 1000), value: (i * 7919) % 300_000 }));
  it('min and max over 300k gauge values', () => {
    expect(timeline(many, opts({ type: 'gauge', aggregation: 'min' })).buckets[0].value).toBe(0);
    expect(timeline(many, opts({ type: 'gauge', aggregation: 'max' })).buckets[0].value).toBe(299_999);
  });
});

describe('timeline — cumulative counter', () => {
  // contributions (see normalize tests): 00:05 → 0, 00:10 → +5 | 00:15 → 0, 00:20 → 0, 00:25 → +8 | 00:30 → +5 | —
  const points = [counter(5, 10), counter(10, 15), counter(15, 15), counter(20, 12), counter(25, 20), counter(30, 5, 28)];
  it('sum = total increase per bucket', () => {
    const t = timeline(points, opts({ type: 'sum', aggregation: 'sum' }));
    expect(vals(t)).toEqual([5, 8, 5, null]);
    expect(t.buckets.map((b) => b.point_count)).toEqual([2, 3, 1, 0]);
    expect(t.buckets.map((b) => b.sample_count)).toEqual([2, 3, 1, 0]);
  });
  it('avg = average increase per point; count = points', () => {
    expect(vals(timeline(points, opts({ type: 'sum', aggregation: 'avg' })))).toEqual([2.5, 8 / 3, 5, null]);
    expect(vals(timeline(points, opts({ type: 'sum', aggregation: 'count' })))).toEqual([2, 3, 1, null]);
  });
  it('percentiles over per-point increases', () => {
    // bucket 1 increases [0, 0, 8]: p50 → h = 1 → 0; p90 → h = 1.8 → 0 + 0.8·8 = 6.4
    expect(timeline(points, opts({ type: 'sum', aggregation: 'p50' })).buckets[1].value).toBe(0);
    expect(timeline(points, opts({ type: 'sum', aggregation: 'p90' })).buckets[1].value).toBeCloseTo(6.4, 10);
  });
  it('uses the baseline from the preceding hour', () => {
    // baseline 7 at 23:50 → 00:05 value 10 contributes +3
    expect(vals(timeline([counter(-10, 7), counter(5, 10)], opts({ type: 'sum', aggregation: 'sum' })))).toEqual([3, null, null, null]);
  });
});

describe('explicit histograms (rule 5: difference per series, merge, then percentile)', () => {
  const bounds = [10, 50, 100];
  const hist = (series: string, minute: number, counts: number[], sum: number, startMinute: number) =>
    pt({
      type: 'hist',
      series_key: series,
      time_ms: at(minute),
      start_ms: at(startMinute),
      explicit_bounds: bounds,
      bucket_counts: counts,
      count: counts.reduce((a, b) => a + b, 0),
      sum,
    });
  const points = [
    hist('A', -10, [1, 2, 1, 0], 100, -120), // baseline of A
    hist('A', 5, [3, 5, 2, 0], 260, -120), // A: [2,3,1,0], count 6, sum 160
    hist('B', 7, [0, 1, 3, 0], 250, 2), // B starts inside the window: full [0,1,3,0], count 4, sum 250
  ];
  // merged [2,4,4,0], N = 10
  it('p50 by hand: rank 5 falls in (10,50] after 2 → 10 + 40·(5−2)/4 = 40', () => {
    expect(timeline(points, opts({ type: 'hist', aggregation: 'p50' })).buckets[0].value).toBe(40);
  });
  it('p90 by hand: rank 9 falls in (50,100] after 6 → 50 + 50·(9−6)/4 = 87.5', () => {
    expect(timeline(points, opts({ type: 'hist', aggregation: 'p90' })).buckets[0].value).toBe(87.5);
  });
  it('avg = Σsum/Σcount = (160+250)/10 = 41; count = 10; sum = 410', () => {
    expect(timeline(points, opts({ type: 'hist', aggregation: 'avg' })).buckets[0].value).toBe(41);
    expect(timeline(points, opts({ type: 'hist', aggregation: 'count' })).buckets[0].value).toBe(10);
    expect(timeline(points, opts({ type: 'hist', aggregation: 'sum' })).buckets[0].value).toBe(410);
    const b = timeline(points, opts({ type: 'hist', aggregation: 'sum' })).buckets[0];
    expect([b.point_count, b.sample_count]).toEqual([2, 10]);
  });
  it('histogramQuantile edges: +Inf clamps to the last bound, min/max tighten edges, first bucket starts at 0', () => {
    // bounds [10,50], counts [0,1,3]: p90 rank 3.6 lands in +Inf → 50
    expect(histogramQuantile([10, 50], [0, 1, 3], 0.9)).toBe(50);
    // with max 80: 50 + (80−50)·(3.6−1)/3 = 50 + 26 = 76
    expect(histogramQuantile([10, 50], [0, 1, 3], 0.9, null, 80)).toBeCloseTo(76, 10);
    // p10 rank 0.4 in (10,50], the first non-empty bucket; with min 20: 20 + 30·0.4/1 = 32
    expect(histogramQuantile([10, 50], [0, 1, 3], 0.1, 20, 80)).toBeCloseTo(32, 10);
    // first bucket (−Inf,10] with positive bound: lower edge 0 → p50 rank 1 → 0 + 10·1/2 = 5
    expect(histogramQuantile([10, 50], [2, 0, 0], 0.5)).toBe(5);
    expect(histogramQuantile([10, 50], [0, 0, 0], 0.5)).toBeNull();
  });
  it('merges different bounds onto their union', () => {
    // union bounds [10, 20, 50]
    // first:  (−Inf,10]:1 → (−Inf,10]; (10,50]:4 spread as 4·10/40 = 1 → (10,20] and 4·30/40 = 3 → (20,50]
    // second: (−Inf,20]:2 → adjacent (10,20]; (20,+Inf):5 → adjacent (20,50]
    // → [1, 1+2, 3+5, 0]
    expect(mergeExplicitHistograms([
      { bounds: [10, 50], counts: [1, 4, 0] },
      { bounds: [20], counts: [2, 5] },
    ])).toEqual({ bounds: [10, 20, 50], counts: [1, 3, 8, 0] });
    // identical bounds are simply summed
    expect(mergeExplicitHistograms([
      { bounds: [10], counts: [1, 2] },
      { bounds: [10], counts: [3, 4] },
    ])).toEqual({ bounds: [10], counts: [4, 6] });
  });
});

describe('exponential histograms (rule 2: delta percentiles from buckets)', () => {
  const expPt = (minute: number, scale: number, offset: number, counts: number[], extra: object = {}) =>
    pt({
      type: 'exponential_histogram',
      temporality: 'delta',
      time_ms: at(minute),
      start_ms: at(minute - 1),
      scale,
      zero_count: 0,
      positive: { offset, bucket_counts: counts },
      count: counts.reduce((a, b) => a + b, 0),
      sum: 0,
      ...extra,
    });

  it('scale 0 (base 2): buckets (1,2]:2, (2,4]:4, (4,8]:2', () => {
    const pts = [expPt(5, 0, 0, [2, 4, 2])];
    // N = 8. p50: rank 4, after 2 in (2,4] → 2 + 2·(4−2)/4 = 3
    expect(timeline(pts, opts({ type: 'exponential_histogram', aggregation: 'p50' })).buckets[0].value).toBe(3);
    // p90: rank 7.2, after 6 in (4,8] → 4 + 4·(7.2−6)/2 = 6.4
    expect(timeline(pts, opts({ type: 'exponential_histogram', aggregation: 'p90' })).buckets[0].value).toBeCloseTo(6.4, 10);
    expect(timeline(pts, opts({ type: 'exponential_histogram', aggregation: 'p90' })).buckets[0].sample_count).toBe(8);
  });

  it('scale 1 (base √2): offset 2 → (2, 2.828]:1, (2.828, 4]:3', () => {
    const pts = [expPt(5, 1, 2, [1, 3])];
    const r2 = Math.SQRT2;
    // N = 4. p50: rank 2, after 1 in (2√2, 4] → 2√2 + (4 − 2√2)·(2−1)/3 ≈ 3.218951
    const p50 = timeline(pts, opts({ type: 'exponential_histogram', aggregation: 'p50' })).buckets[0].value;
    expect(p50).toBeCloseTo(2 * r2 + (4 - 2 * r2) / 3, 10);
    expect(p50).toBeCloseTo(3.218951, 5);
    // p25: rank 1 reached in (2, 2√2] → 2 + (2√2 − 2)·1/1 = 2√2
    expect(expHistogramQuantile([{ scale: 1, zero_count: 0, positive: { offset: 2, bucket_counts: [1, 3] } }], 0.25)).toBeCloseTo(2 * r2, 10);
  });

  it('merges different scales at the lowest one', () => {
    // scale 1 indices 2,3 → scale 0 index 1 (2,4]: 4 more. Merged: (1,2]:2, (2,4]:8, (4,8]:2, N = 12
    // p50: rank 6, after 2 in (2,4] → 2 + 2·(6−2)/8 = 3
    const pts = [expPt(5, 0, 0, [2, 4, 2]), expPt(6, 1, 2, [1, 3], { series_key: 's2' })];
    expect(timeline(pts, opts({ type: 'exponential_histogram', aggregation: 'p50' })).buckets[0].value).toBe(3);
  });

  it('zero and negative buckets', () => {
    // scale 0: negative index 0 → [−2,−1): 2, zero: 2, positive index 0 → (1,2]: 4. N = 8
    const d = [{ scale: 0, zero_count: 2, negative: { offset: 0, bucket_counts: [2] }, positive: { offset: 0, bucket_counts: [4] } }];
    expect(expHistogramQuantile(d, 0.1)).toBeCloseTo(-1.6, 10); // rank 0.8 → −2 + 1·0.8/2
    expect(expHistogramQuantile(d, 0.5)).toBe(0); // rank 4 → zero bucket
    expect(expHistogramQuantile(d, 0.9)).toBeCloseTo(1.8, 10); // rank 7.2 → 1 + 1·(7.2−4)/4
  });

  it('min/max tighten the outer edges', () => {
    // (4,8] only, min 4.5, max 5 → edges [4.5, 5]; p90 rank 1.8 of 2 → 4.5 + 0.5·0.9 = 4.95
    expect(expHistogramQuantile([{ scale: 0, zero_count: 0, positive: { offset: 2, bucket_counts: [2] }, min: 4.5, max: 5 }], 0.9)).toBeCloseTo(4.95, 10);
    // without min: 4 + (5−4)·0.9 = 4.9
    expect(expHistogramQuantile([{ scale: 0, zero_count: 0, positive: { offset: 2, bucket_counts: [2] }, max: 5 }], 0.9)).toBeCloseTo(4.9, 10);
  });
});

describe('cumulative exponential histograms (rule 6)', () => {
  const exp = (minute: number, count: number, sum: number, start = -120) =>
    pt({ type: 'exponential_histogram', time_ms: at(minute), start_ms: at(start), count, sum, scale: 0, zero_count: 0, positive: { offset: 0, bucket_counts: [count] } });
  // baseline 10/100; 00:05 14/160 → +4/+60; 00:10 12/150 same start → new baseline 0/0; 00:12 reset (start 00:11) 3/30 → +3/+30
  const points = [exp(-10, 10, 100), exp(5, 14, 160), exp(10, 12, 150), exp(12, 3, 30, 11)];

  it('avg / count / sum from reset-aware deltas: avg = 90/7', () => {
    expect(timeline(points, opts({ type: 'exponential_histogram', aggregation: 'avg' })).buckets[0].value).toBeCloseTo(90 / 7, 10);
    expect(timeline(points, opts({ type: 'exponential_histogram', aggregation: 'count' })).buckets[0].value).toBe(7);
    expect(timeline(points, opts({ type: 'exponential_histogram', aggregation: 'sum' })).buckets[0].value).toBe(90);
  });

  it('percentile timelines are refused with UNSUPPORTED_METRIC_TEMPORALITY (422)', () => {
    for (const aggregation of ['p50', 'p90', 'p95', 'p99'] as const) {
      let err: unknown;
      try {
        timeline(points, opts({ type: 'exponential_histogram', aggregation }));
      } catch (e) {
        err = e;
      }
      expect(err).toBeInstanceOf(UnsupportedTemporalityError);
      expect((err as UnsupportedTemporalityError).code).toBe('UNSUPPORTED_METRIC_TEMPORALITY');
      expect((err as UnsupportedTemporalityError).status).toBe(422);
    }
    // known temporality refuses even without data
    expect(() => timeline([], opts({ type: 'exponential_histogram', temporality: 'cumulative', aggregation: 'p99' }))).toThrow(UnsupportedTemporalityError);
    expect(() => checkAggregationSupported('exponential_histogram', 'cumulative', 'p50')).toThrow(UnsupportedTemporalityError);
    expect(() => checkAggregationSupported('exponential_histogram', 'delta', 'p50')).not.toThrow();
    expect(() => checkAggregationSupported('hist', 'cumulative', 'p50')).not.toThrow();
  });

  it('inspect keeps the avg snapshot and omits only the percentiles', () => {
    const r = inspect(points, { ...WINDOW, granularityMs: Q, type: 'exponential_histogram' });
    expect(r.snapshots.map((s) => s.aggregation)).toEqual(['avg']);
    expect(r.snapshots[0].latest_value).toBeCloseTo(90 / 7, 10);
    expect(r.highlights.join(' ')).toMatch(/cumulative exponential histograms/);
  });
});

describe('inspect', () => {
  // 15-minute buckets: [200, 400] | [300] | — | [405]
  const points = [
    pt({ type: 'gauge', time_ms: at(1), value: 200 }),
    pt({ type: 'gauge', time_ms: at(2), value: 400 }),
    pt({ type: 'gauge', time_ms: at(16), value: 300 }),
    pt({ type: 'gauge', time_ms: at(50), value: 405 }),
  ];
  const r = inspect(points, { ...WINDOW, granularityMs: Q, type: 'gauge', metricName: 'http.server.duration', unit: 'ms' });

  it('snapshots for avg, p50, p90, p99', () => {
    expect(r.snapshots.map((s) => s.aggregation)).toEqual(['avg', 'p50', 'p90', 'p99']);
    const avg = r.snapshots[0];
    // avg per bucket: 300, 300, null, 405 → latest 405, previous 300, change (405−300)/300 = +35%
    expect(avg.latest_value).toBe(405);
    expect(avg.previous_value).toBe(300);
    expect(avg.change_percent).toBe(35);
    expect(avg.recent_points.map((b) => b.time)).toEqual([
      '2024-01-01T00:00:00.000Z',
      '2024-01-01T00:15:00.000Z',
      '2024-01-01T00:45:00.000Z',
    ]);
    // top: 405, then the 300 tie (earlier bucket first)
    expect(avg.top_points.map((b) => [b.time.slice(11, 16), b.value])).toEqual([['00:45', 405], ['00:00', 300], ['00:15', 300]]);
    // p99 of bucket 0: 200 + 0.99·200 = 398
    expect(r.snapshots[3].top_points.map((b) => b.value)).toEqual([405, 398, 300].map((v) => expect.closeTo(v, 10)));
  });

  it('compact highlights', () => {
    expect(r.highlights).toEqual([
      'http.server.duration: 4 points in 3 of 4 buckets.',
      'avg rose 35% to 405 ms in the latest bucket.',
      'p99 rose 35% to 405 ms in the latest bucket.',
      'Peak p99 405 ms at 2024-01-01T00:45:00.000Z.',
    ]);
  });

  it('change_percent is null when the previous value is 0', () => {
    const z = inspect(
      [pt({ type: 'gauge', time_ms: at(1), value: 0 }), pt({ type: 'gauge', time_ms: at(20), value: 5 })],
      { ...WINDOW, granularityMs: Q, type: 'gauge' },
    );
    expect(z.snapshots[0].previous_value).toBe(0);
    expect(z.snapshots[0].change_percent).toBeNull();
  });

  it('no data', () => {
    const e = inspect([], { ...WINDOW, granularityMs: Q, type: 'sum', metricName: 'jobs' });
    expect(e.snapshots[0]).toMatchObject({ latest_value: null, previous_value: null, change_percent: null, recent_points: [], top_points: [] });
    expect(e.highlights).toEqual(['No jobs data points in the window.']);
  });
});
