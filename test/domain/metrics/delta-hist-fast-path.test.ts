import { describe, expect, it } from 'vitest';
import {
  AGGREGATIONS,
  deltaHistTimeline,
  timeline,
  timelineFromContributions,
  type TimelineOptions,
} from '../../../src/domain/metrics/aggregate.js';
import { normalizePoints, type MetricPointInput } from '../../../src/domain/metrics/normalize.js';
import { WindowError } from '../../../src/domain/metrics/window.js';
import { at, MIN, pt, WINDOW } from './helpers.js';

const B1 = [1, 5, 10];
const B2 = [2, 4, 8, 16];

/** Delta explicit-histogram point at `minute` (relative to the test window start). */
const dh = (minute: number, counts: number[], extra: Partial<MetricPointInput> = {}): MetricPointInput =>
  pt({
    type: 'hist',
    temporality: 'delta',
    time_ms: at(minute),
    start_ms: at(minute) - MIN,
    count: counts.reduce((s, c) => s + c, 0),
    sum: counts.reduce((s, c, i) => s + c * (i + 0.37), 0.1),
    min: 0.5,
    max: 12.25,
    explicit_bounds: B1,
    bucket_counts: counts,
    ...extra,
  });

/** The general path: one contribution per point, then the per-bucket aggregation. */
function generalPath(points: MetricPointInput[], o: TimelineOptions) {
  const contribs = normalizePoints(
    points.filter((p) => p.type === o.type),
    { fromMs: o.fromMs, toMs: o.toMs, baselineMs: o.baselineMs },
  );
  return timelineFromContributions(contribs, o);
}

const SERIES: Record<string, MetricPointInput[]> = {
  'same bounds, several points per bucket': [dh(1, [1, 2, 3, 4]), dh(2, [0, 5, 1, 0]), dh(7, [2, 2, 2, 2]), dh(16, [9, 0, 0, 1]), dh(44, [0, 0, 0, 7])],
  'bounds change mid-series and inside one bucket': [
    dh(1, [1, 2, 3, 4]),
    dh(3, [3, 1, 0, 2, 5], { explicit_bounds: B2 }),
    dh(5, [0, 4, 4, 0]),
    dh(20, [1, 1, 1, 1, 1], { explicit_bounds: B2 }),
    dh(21, [2, 0, 0, 3, 1], { explicit_bounds: B2 }),
    dh(50, [0, 0, 1], { explicit_bounds: [3, 6] }),
  ],
  'equal bounds in distinct arrays, unsorted input, equal times': [
    dh(31, [1, 0, 0, 0], { explicit_bounds: [...B1] }),
    dh(2, [0, 1, 0, 0], { explicit_bounds: [...B1], sum: 1.1 }),
    dh(2, [0, 0, 1, 0], { explicit_bounds: [...B1], sum: 2.2 }),
    dh(1, [4, 0, 0, 1]),
  ],
  'missing sum, min or max; zero-count and count-less points': [
    dh(1, [1, 2, 0, 0], { sum: null, min: null }),
    dh(2, [0, 3, 3, 0], { max: undefined }),
    dh(3, [0, 0, 0, 0]),
    dh(4, [1, 1, 1, 1], { count: undefined }),
    dh(17, [2, 0, 0, 0], { sum: Number.NaN }),
    dh(18, [0, 0, 0, 0], { sum: 0, min: null, max: null }),
  ],
  'unspecified temporality, no bounds, points outside the window and of another type': [
    dh(-5, [1, 1, 1, 1]),
    dh(1, [3], { temporality: 'unspecified', explicit_bounds: [] }),
    dh(2, [1, 0, 2, 0], { temporality: 'unspecified' }),
    dh(3, [2], { explicit_bounds: undefined, bucket_counts: [2] }),
    dh(33, [1, 2, 3, 4], { explicit_bounds: undefined, bucket_counts: undefined }),
    dh(60, [5, 5, 5, 5]),
    pt({ type: 'gauge', time_ms: at(10), value: 4 }),
  ],
};

describe('delta explicit-histogram fast path of timeline', () => {
  for (const [name, points] of Object.entries(SERIES)) {
    it(`gives exactly the general path's buckets for every aggregation and granularity: ${name}`, () => {
      for (const granularityMs of [MIN, 5 * MIN, 15 * MIN, 60 * MIN]) {
        for (const aggregation of AGGREGATIONS) {
          const o: TimelineOptions = { ...WINDOW, granularityMs, type: 'hist', temporality: 'delta', aggregation };
          const fast = deltaHistTimeline(points, o);
          expect(fast).not.toBeNull();
          expect(fast).toEqual(generalPath(points, o));
          expect(timeline(points, o)).toEqual(fast);
        }
      }
    });
  }

  it('merges differing bounds inside a bucket onto their union, as the general path', () => {
    const points = SERIES['bounds change mid-series and inside one bucket']!;
    const o: TimelineOptions = { ...WINDOW, granularityMs: 15 * MIN, type: 'hist', temporality: 'delta', aggregation: 'p50' };
    const fast = deltaHistTimeline(points, o)!;
    expect(fast.buckets.map((b) => b.point_count)).toEqual([3, 2, 0, 1]);
    expect(fast.buckets.map((b) => b.sample_count)).toEqual([29, 11, 0, 1]);
    expect(fast.buckets[0]!.value).not.toBeNull();
    expect(fast.buckets[2]!.value).toBeNull();
  });

  it('steps aside (null) when any point of the metric is cumulative', () => {
    const points = [dh(1, [1, 1, 1, 1]), dh(2, [1, 1, 1, 1], { temporality: 'cumulative' })];
    const o: TimelineOptions = { ...WINDOW, granularityMs: 15 * MIN, type: 'hist', aggregation: 'p95' };
    expect(deltaHistTimeline(points, o)).toBeNull();
    expect(timeline(points, o)).toEqual(generalPath(points, o));
  });

  it('refuses more than 2,000 buckets like the general path', () => {
    const o: TimelineOptions = { fromMs: WINDOW.fromMs, toMs: WINDOW.fromMs + 3 * 86_400_000, granularityMs: MIN, type: 'hist', aggregation: 'avg' };
    expect(() => deltaHistTimeline([dh(1, [1, 0, 0, 0])], o)).toThrow(WindowError);
  });
});
