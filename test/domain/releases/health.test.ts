import { describe, expect, it } from 'vitest';
import { figures, healthWindows, verdict, type Figures } from '../../../src/domain/releases/health.js';
import { ALPHA, addValue, decodeSketch, encodeSketch, mergeInto, newSketch, quantiles } from '../../../src/domain/releases/sketch.js';

const M = 60_000;
const H = 60 * M;
const T0 = Date.UTC(2026, 0, 10, 0, 0, 0);

const f = (p: Partial<Figures>): Figures => ({
  request_count: 1000,
  error_count: 0,
  error_rate: 0,
  p50_ms: 50,
  p95_ms: 100,
  p99_ms: 200,
  throughput_per_min: 10,
  ...p,
});
const errs = (n: number, requests = 1000) => ({ request_count: requests, error_count: n, error_rate: n / requests });

describe('health windows (health rules 1–2)', () => {
  it('uses the shorter of the two serving times, from the first serving start, with the previous window just before', () => {
    const w = healthWindows({ start: T0 + 2 * H, end: null }, { start: T0, end: T0 + 2 * H }, T0 + 5 * H);
    expect(w).toEqual({ window: { start: T0 + 2 * H, end: T0 + 4 * H }, previous_window: { start: T0, end: T0 + 2 * H }, insufficient: null });
  });

  it('caps both windows at 24 hours', () => {
    const w = healthWindows({ start: T0 + 48 * H, end: null }, { start: T0, end: T0 + 48 * H }, T0 + 100 * H);
    expect(w.window).toEqual({ start: T0 + 48 * H, end: T0 + 72 * H });
    expect(w.previous_window).toEqual({ start: T0 + 24 * H, end: T0 + 48 * H });
  });

  it('is insufficient under 5 minutes, with the release\'s own serving time as the window', () => {
    const short = healthWindows({ start: T0 + H, end: null }, { start: T0, end: T0 + H }, T0 + H + 4 * M + 59_999);
    expect(short).toEqual({ window: { start: T0 + H, end: T0 + H + 4 * M + 59_999 }, previous_window: null, insufficient: 'window_under_5_minutes' });
    const five = healthWindows({ start: T0 + H, end: null }, { start: T0, end: T0 + H }, T0 + H + 5 * M);
    expect(five.insufficient).toBeNull();
  });

  it('is insufficient without a previous release', () => {
    expect(healthWindows({ start: T0, end: T0 + H }, null, T0 + 2 * H)).toEqual({ window: { start: T0, end: T0 + H }, previous_window: null, insufficient: 'no_previous_release' });
  });
});

describe('health verdict (health rules 3–4)', () => {
  it('needs 50 requests on each side: 49 is insufficient, 50 is compared', () => {
    expect(verdict(f({ ...errs(10, 49) }), f({}))).toEqual({ comparison: 'insufficient_data', decided_by: 'too_few_requests' });
    expect(verdict(f({}), f({ ...errs(0, 49) }))).toEqual({ comparison: 'insufficient_data', decided_by: 'too_few_requests' });
    expect(verdict(f({ ...errs(10, 50) }), f({ ...errs(0, 50) }))).toEqual({ comparison: 'regressed', decided_by: 'error_rate' });
  });

  it('error rate up exactly 1 point is regressed, 0.9 points is unchanged; down 1 point is improved', () => {
    expect(verdict(f(errs(30)), f(errs(20)))).toEqual({ comparison: 'regressed', decided_by: 'error_rate' }); // 3% vs 2%
    expect(verdict(f(errs(29)), f(errs(20)))).toEqual({ comparison: 'unchanged', decided_by: 'no_threshold_crossed' });
    expect(verdict(f(errs(20)), f(errs(30)))).toEqual({ comparison: 'improved', decided_by: 'error_rate' });
    expect(verdict(f(errs(21)), f(errs(30)))).toEqual({ comparison: 'unchanged', decided_by: 'no_threshold_crossed' });
  });

  it('p95 needs both 20% and 5 ms: +20%/+20 ms regresses, +19.9% does not, +50%/+4.9 ms does not, +50%/+5 ms does', () => {
    expect(verdict(f({ p95_ms: 120 }), f({ p95_ms: 100 }))).toEqual({ comparison: 'regressed', decided_by: 'p95_latency' });
    expect(verdict(f({ p95_ms: 119.9 }), f({ p95_ms: 100 })).comparison).toBe('unchanged');
    expect(verdict(f({ p95_ms: 14.9 }), f({ p95_ms: 10 })).comparison).toBe('unchanged');
    expect(verdict(f({ p95_ms: 15 }), f({ p95_ms: 10 }))).toEqual({ comparison: 'regressed', decided_by: 'p95_latency' });
    expect(verdict(f({ p95_ms: 80 }), f({ p95_ms: 100 }))).toEqual({ comparison: 'improved', decided_by: 'p95_latency' });
    expect(verdict(f({ p95_ms: 6 }), f({ p95_ms: 10 })).comparison).toBe('unchanged'); // −40% but only −4 ms
  });

  it('regressed wins when one signal worsens and the other improves, and names the signal', () => {
    expect(verdict(f({ ...errs(40), p95_ms: 50 }), f({ ...errs(20), p95_ms: 100 }))).toEqual({ comparison: 'regressed', decided_by: 'error_rate' });
    expect(verdict(f({ ...errs(0), p95_ms: 200 }), f({ ...errs(50), p95_ms: 100 }))).toEqual({ comparison: 'regressed', decided_by: 'p95_latency' });
    expect(verdict(f({ ...errs(40), p95_ms: 200 }), f({ ...errs(20), p95_ms: 100 }))).toEqual({ comparison: 'regressed', decided_by: 'error_rate_and_p95_latency' });
  });

  it('computes figures with throughput per minute over the window', () => {
    const sk = newSketch();
    for (let i = 1; i <= 100; i++) addValue(sk, i);
    const fig = figures({ requests: 100, errors: 5, sketch: sk }, { start: T0, end: T0 + 10 * M });
    expect(fig.request_count).toBe(100);
    expect(fig.error_rate).toBe(0.05);
    expect(fig.throughput_per_min).toBe(10);
    expect(Math.abs(fig.p95_ms! - 95) / 95).toBeLessThanOrEqual(ALPHA);
  });
});

describe('latency sketch', () => {
  it('answers nearest-rank quantiles within 1% relative error, and merging equals building from all values', () => {
    const values = Array.from({ length: 5000 }, (_, i) => 0.5 + ((i * 7919) % 5000) * 0.37);
    const sorted = [...values].sort((a, b) => a - b);
    const a = newSketch();
    const b = newSketch();
    const all = newSketch();
    values.forEach((v, i) => {
      addValue(i % 2 ? a : b, v);
      addValue(all, v);
    });
    const merged = mergeInto(decodeSketch(encodeSketch(a)), decodeSketch(encodeSketch(b)));
    for (const q of [0.5, 0.95, 0.99]) {
      const exact = sorted[Math.ceil(q * sorted.length) - 1]!;
      const [est] = quantiles(merged, [q]);
      expect(Math.abs(est! - exact) / exact).toBeLessThanOrEqual(ALPHA);
      expect(quantiles(all, [q])).toEqual([est]);
    }
    expect(quantiles(newSketch(), [0.5])).toEqual([null]);
    const zero = newSketch();
    addValue(zero, 0);
    expect(quantiles(zero, [0.95])).toEqual([0]);
  });
});
