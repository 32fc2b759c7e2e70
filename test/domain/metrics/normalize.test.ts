import { describe, expect, it } from 'vitest';
import { normalizePoints } from '../../../src/domain/metrics/normalize.js';
import { at, counter, pt, WINDOW } from './helpers.js';

const values = (ps: ReturnType<typeof normalizePoints>) => ps.map((c) => c.value);
const kinds = (ps: ReturnType<typeof normalizePoints>) => ps.map((c) => c.kind);

describe('normalizePoints — gauges and delta points (rule 3: delta as received)', () => {
  it('gauge points are samples; points outside the window are ignored', () => {
    const out = normalizePoints(
      [
        pt({ type: 'gauge', time_ms: at(-5), value: 99 }), // before the window: not a sample
        pt({ type: 'gauge', time_ms: at(1), value: 4 }),
        pt({ type: 'gauge', time_ms: at(2), value: 7 }),
        pt({ type: 'gauge', time_ms: at(60), value: 99 }), // == toMs: outside (half-open)
      ],
      WINDOW,
    );
    expect(values(out)).toEqual([4, 7]);
    expect(kinds(out)).toEqual(['sample', 'sample']);
  });

  it('delta sums are taken as received, even when they go down', () => {
    const out = normalizePoints(
      [
        pt({ type: 'sum', temporality: 'delta', time_ms: at(3), value: 3, start_ms: at(2) }),
        pt({ type: 'sum', temporality: 'delta', time_ms: at(4), value: 1, start_ms: at(3) }),
        pt({ type: 'sum', temporality: 'delta', time_ms: at(-1), value: 50, start_ms: at(-2) }),
      ],
      WINDOW,
    );
    expect(values(out)).toEqual([3, 1]);
    expect(kinds(out)).toEqual(['delta', 'delta']);
  });
});

describe('normalizePoints — cumulative counters (rules 3 and 4)', () => {
  it('differences per series: 10, 15, 15, 12 (same start), 20, reset with new start 5', () => {
    // series started 2 h before the window, no baseline point in the preceding hour
    const out = normalizePoints(
      [
        counter(5, 10), //  first point, no baseline, series running before the window → 0
        counter(10, 15), // 15 − 10 → +5
        counter(15, 15), // 15 − 15 → 0
        counter(20, 12), // same start, decrease → new baseline, 0
        counter(25, 20), // 20 − 12 → +8
        counter(30, 5, 28), // start changed (known, 00:28) → reset → full value +5
      ],
      WINDOW,
    );
    expect(values(out)).toEqual([0, 5, 0, 0, 8, 5]);
    expect(kinds(out)).toEqual(['no_baseline', 'diff', 'diff', 'decrease', 'diff', 'reset']);
    // total increase 5 + 8 + 5 = 18
    expect(out.reduce((s, c) => s + (c.value ?? 0), 0)).toBe(18);
  });

  it('input order does not matter (points are sorted per series)', () => {
    const out = normalizePoints([counter(10, 15), counter(5, 10), counter(15, 21)], WINDOW);
    expect(values(out)).toEqual([0, 5, 6]);
  });

  it('the latest point of the preceding hour is the baseline', () => {
    const out = normalizePoints(
      [
        counter(-90, 2), // older than one hour before the window: ignored
        counter(-40, 4),
        counter(-10, 7), // latest in the preceding hour → baseline
        counter(5, 10), //  10 − 7 → +3
        counter(10, 16), // 16 − 10 → +6
      ],
      WINDOW,
    );
    expect(values(out)).toEqual([3, 6]);
    expect(kinds(out)).toEqual(['diff', 'diff']);
  });

  it('without a baseline in the preceding hour the first point contributes zero', () => {
    const out = normalizePoints([counter(-90, 2), counter(5, 10), counter(10, 16)], WINDOW);
    // the −90 min point is too old to be a baseline → first point 0, then 16 − 10 = +6
    expect(values(out)).toEqual([0, 6]);
    expect(kinds(out)[0]).toBe('no_baseline');
  });

  it('a known start inside the window is included in full', () => {
    // series started at 00:02, first point at 00:05 with value 6 → +6; then 9 − 6 → +3
    const out = normalizePoints([counter(5, 6, 2), counter(10, 9, 2)], WINDOW);
    expect(values(out)).toEqual([6, 3]);
    expect(kinds(out)).toEqual(['start_in_window', 'diff']);
  });

  it('a start exactly at fromMs counts as inside the window', () => {
    expect(values(normalizePoints([counter(5, 6, 0)], WINDOW))).toEqual([6]);
  });

  it('an OTLP zero-duration unknown-start point contributes zero', () => {
    // start_ms null: unknown start → 0, then same (null) start: 9 − 6 → +3
    expect(values(normalizePoints([counter(5, 6, null), counter(10, 9, null)], WINDOW))).toEqual([0, 3]);
    // start == time inside the window → 0 (not "known start inside the window")
    expect(kinds(normalizePoints([counter(5, 6, 5)], WINDOW))).toEqual(['unknown_start']);
    // after a baseline: start changes to unknown → reset with unknown start → 0; then 11 − 4 → +7
    const out = normalizePoints([counter(-10, 100), counter(5, 4, 5), counter(10, 11, 5)], WINDOW);
    expect(values(out)).toEqual([0, 7]);
    expect(kinds(out)).toEqual(['unknown_start', 'diff']);
  });

  it('differences per series and per instrumentation scope', () => {
    const out = normalizePoints(
      [
        counter(-5, 10, -120, { scope_name: 'a' }),
        counter(-5, 100, -120, { scope_name: 'b' }),
        counter(-5, 1000, -120, { series_key: 's2', scope_name: 'a' }),
        counter(5, 12, -120, { scope_name: 'a' }), // 12 − 10 → +2
        counter(5, 130, -120, { scope_name: 'b' }), // 130 − 100 → +30
        counter(5, 1400, -120, { series_key: 's2', scope_name: 'a' }), // +400
      ],
      WINDOW,
    );
    expect(values(out).sort((a, b) => (a ?? 0) - (b ?? 0))).toEqual([2, 30, 400]);
  });

  it('non-monotonic cumulative sums keep negative changes', () => {
    const out = normalizePoints(
      [counter(-5, 10, -120, { monotonic: false }), counter(5, 7, -120, { monotonic: false })],
      WINDOW,
    );
    expect(values(out)).toEqual([-3]); // 7 − 10
  });

  it('unspecified temporality on a sum is treated as delta', () => {
    const out = normalizePoints([pt({ type: 'sum', temporality: 'unspecified', time_ms: at(5), value: 4 })], WINDOW);
    expect(values(out)).toEqual([4]);
  });
});

describe('normalizePoints — explicit histograms (rule 5)', () => {
  const bounds = [10, 50, 100];
  const hist = (minute: number, counts: number[], sum: number, extra: object = {}) =>
    pt({
      type: 'hist',
      time_ms: at(minute),
      start_ms: at(-120),
      explicit_bounds: bounds,
      bucket_counts: counts,
      count: counts.reduce((a, b) => a + b, 0),
      sum,
      min: 1,
      max: 99,
      ...extra,
    });

  it('differences bucket counts, count and sum against the baseline', () => {
    const out = normalizePoints([hist(-10, [1, 2, 1, 0], 100), hist(5, [3, 5, 2, 0], 260)], WINDOW);
    // [3,5,2,0] − [1,2,1,0] = [2,3,1,0]; count 10 − 4 = 6; sum 260 − 100 = 160
    expect(out).toHaveLength(1);
    expect(out[0]).toMatchObject({ kind: 'diff', bucket_counts: [2, 3, 1, 0], count: 6, sum: 160, explicit_bounds: bounds });
    // cumulative min/max describe the whole period, not the difference
    expect(out[0].min).toBeUndefined();
    expect(out[0].max).toBeUndefined();
  });

  it('a bucket decrease under the same start is a new baseline; changed bounds too', () => {
    const out = normalizePoints(
      [
        hist(-10, [1, 2, 1, 0], 100),
        hist(5, [0, 3, 2, 0], 90), // bucket 0 went 1 → 0: new baseline, zero
        hist(10, [1, 4, 2, 0], 120), // [1,4,2,0] − [0,3,2,0] = [1,1,0,0]
        hist(15, [5, 5], 300, { explicit_bounds: [20] }), // bounds changed: new baseline, zero
        hist(20, [6, 6], 330, { explicit_bounds: [20] }), // [1,1], sum +30
      ],
      WINDOW,
    );
    expect(out.map((c) => c.kind)).toEqual(['decrease', 'diff', 'bounds_changed', 'diff']);
    expect(out.map((c) => c.bucket_counts)).toEqual([[0, 0, 0, 0], [1, 1, 0, 0], [0, 0], [1, 1]]);
    expect(out.map((c) => c.count)).toEqual([0, 2, 0, 2]);
    expect(out.map((c) => c.sum)).toEqual([0, 30, 0, 30]);
  });

  it('a reset with a known start keeps the full distribution including min/max', () => {
    const out = normalizePoints([hist(-10, [1, 2, 1, 0], 100), hist(5, [0, 1, 0, 0], 20, { start_ms: at(3), min: 20, max: 20 })], WINDOW);
    expect(out[0]).toMatchObject({ kind: 'reset', bucket_counts: [0, 1, 0, 0], count: 1, sum: 20, min: 20, max: 20 });
  });
});

describe('normalizePoints — exponential histograms', () => {
  it('cumulative: reset-aware count and sum deltas only', () => {
    const exp = (minute: number, count: number, sum: number, start = -120) =>
      pt({ type: 'exponential_histogram', time_ms: at(minute), start_ms: at(start), count, sum, scale: 0, zero_count: 0, positive: { offset: 0, bucket_counts: [count] } });
    const out = normalizePoints([exp(-10, 10, 100), exp(5, 14, 160), exp(10, 12, 150), exp(15, 3, 30, 12)], WINDOW);
    // +4/+60; decrease → 0/0; reset with known start → +3/+30
    expect(out.map((c) => [c.count, c.sum])).toEqual([[4, 60], [0, 0], [3, 30]]);
    expect(out.every((c) => c.positive === undefined)).toBe(true);
  });

  it('delta: the bucket distribution is kept', () => {
    const out = normalizePoints(
      [pt({ type: 'exponential_histogram', temporality: 'delta', time_ms: at(5), start_ms: at(4), count: 3, sum: 6, scale: 1, zero_count: 1, zero_threshold: 0, positive: { offset: 2, bucket_counts: [2] } })],
      WINDOW,
    );
    expect(out[0]).toMatchObject({ kind: 'delta', count: 3, sum: 6, scale: 1, zero_count: 1, positive: { offset: 2, bucket_counts: [2] } });
  });
});
