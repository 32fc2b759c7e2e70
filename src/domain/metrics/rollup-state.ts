/**
 * Mergeable per-bucket state of metric contributions (issue 19, item 6: metric reads from per-minute
 * rollups, migration 040). A state holds what {@link stateValue} needs to give every aggregation of
 * aggregate.ts for the contributions it absorbed, and states of disjoint sets of contributions merge
 * ({@link mergeState}) into the state of their union:
 *
 * - count, point_count, sample_count, sum, avg, rate, min and max are exact (sums may differ from the
 *   raw computation in the last bits when values are not integers: floating-point addition runs in
 *   another order);
 * - explicit-histogram percentiles are exact: bucket counts are summed per bounds (merged with
 *   mergeExplicitHistograms when bounds differ, as the raw path does);
 * - gauge and sum percentiles are approximate: values go into a log-bucketed sketch (relative
 *   accuracy {@link SKETCH_ALPHA} = 1%, as DDSketch); each order statistic the type-7 interpolation
 *   uses is estimated within 1% of its true value (exact for 0), then interpolated as
 *   {@link percentile} does and clamped to the exact min and max. Reads over at most
 *   {@link EXACT_PERCENTILE_VALUES} values take the points instead, so small reads stay exact.
 */
import { histogramQuantile, mergeExplicitHistograms, type Aggregation } from './aggregate.js';
import type { MetricType } from '../telemetry-types.js';

export const SKETCH_ALPHA = 0.01;
/** Gauge / sum percentile reads over at most this many values use the points (exact) instead of sketches. */
export const EXACT_PERCENTILE_VALUES = 10_000;
const GAMMA = (1 + SKETCH_ALPHA) / (1 - SKETCH_ALPHA);
export const LN_GAMMA = Math.log(GAMMA);

/** Value sketch: counts per log bucket of positive values (`p`), of negative values' magnitude (`n`), and zeros (`z`). */
export interface Sketch {
  p: Map<number, number>;
  n: Map<number, number>;
  z: number;
}

export const newSketch = (): Sketch => ({ p: new Map(), n: new Map(), z: 0 });

const keyOf = (a: number) => Math.ceil(Math.log(a) / LN_GAMMA);
const estimate = (k: number) => (2 * GAMMA ** k) / (GAMMA + 1);

export function sketchAdd(s: Sketch, v: number, times = 1): void {
  if (v === 0 || !Number.isFinite(v)) {
    if (v === 0) s.z += times;
    return;
  }
  const m = v > 0 ? s.p : s.n;
  const k = keyOf(Math.abs(v));
  m.set(k, (m.get(k) ?? 0) + times);
}

export function sketchMerge(into: Sketch, from: Sketch): void {
  for (const [k, c] of from.p) into.p.set(k, (into.p.get(k) ?? 0) + c);
  for (const [k, c] of from.n) into.n.set(k, (into.n.get(k) ?? 0) + c);
  into.z += from.z;
}

export function sketchToJson(s: Sketch): string {
  return JSON.stringify({ p: [...s.p], n: [...s.n], z: s.z });
}

export function sketchFromJson(text: string): Sketch {
  const o = JSON.parse(text) as { p: [number, number][]; n: [number, number][]; z: number };
  return { p: new Map(o.p), n: new Map(o.n), z: o.z };
}

/** Adds a stored sketch (JSON) into `into` without building an intermediate map. */
export function sketchMergeJson(into: Sketch, text: string): void {
  const o = JSON.parse(text) as { p: [number, number][]; n: [number, number][]; z: number };
  for (const [k, c] of o.p) into.p.set(k, (into.p.get(k) ?? 0) + c);
  for (const [k, c] of o.n) into.n.set(k, (into.n.get(k) ?? 0) + c);
  into.z += o.z;
}

/** Type-7 percentile (as aggregate.ts percentile) of the sketched values, clamped to [min, max]. */
export function sketchPercentile(s: Sketch, q: number, min: number, max: number): number | null {
  const neg = [...s.n].sort((a, b) => b[0] - a[0]);
  const pos = [...s.p].sort((a, b) => a[0] - b[0]);
  let total = s.z;
  for (const [, c] of neg) total += c;
  for (const [, c] of pos) total += c;
  if (total === 0) return null;
  const at = (rank: number): number => {
    let r = rank;
    for (const [k, c] of neg) {
      if (r < c) return -estimate(k);
      r -= c;
    }
    if (r < s.z) return 0;
    r -= s.z;
    for (const [k, c] of pos) {
      if (r < c) return estimate(k);
      r -= c;
    }
    return max;
  };
  const h = (total - 1) * q;
  const lo = Math.floor(h);
  const hi = Math.min(lo + 1, total - 1);
  const clamp = (v: number) => Math.min(max, Math.max(min, v));
  const a = lo === 0 ? min : clamp(at(lo));
  const b = hi === total - 1 ? max : clamp(at(hi));
  return a + (h - lo) * (b - a);
}

/** Contributions of one bucket (or one rollup row), mergeable. */
export interface BucketState {
  /** Contributions (usable points in the window; cumulative ones included, zero or not). */
  n: number;
  /** gauge / sum: Σ, min and max of the values. */
  vsum: number;
  vmin: number;
  vmax: number;
  sketch: Sketch | null;
  /** histograms: Σ count; Σ sum, contributions and Σ count of those with a sum. */
  hcount: number;
  hsum: number;
  hsumN: number;
  hsumCount: number;
  /** histograms: contributions with count > 0, their min / max and how many carried one. */
  live: number;
  lmin: number;
  lminN: number;
  lmax: number;
  lmaxN: number;
  /** explicit histograms: bucket counts per distinct bounds. */
  hists: { bounds: number[]; counts: number[] }[];
}

export const newState = (withSketch: boolean): BucketState => ({
  n: 0,
  vsum: 0,
  vmin: Infinity,
  vmax: -Infinity,
  sketch: withSketch ? newSketch() : null,
  hcount: 0,
  hsum: 0,
  hsumN: 0,
  hsumCount: 0,
  live: 0,
  lmin: Infinity,
  lminN: 0,
  lmax: -Infinity,
  lmaxN: 0,
  hists: [],
});

const isNum = (v: unknown): v is number => typeof v === 'number' && Number.isFinite(v);

/** A gauge value or a sum contribution. */
export function addValue(s: BucketState, v: number): void {
  s.n++;
  s.vsum += v;
  if (v < s.vmin) s.vmin = v;
  if (v > s.vmax) s.vmax = v;
  if (s.sketch) sketchAdd(s.sketch, v);
}

function sameBounds(a: readonly number[], b: readonly number[]): boolean {
  if (a === b) return true;
  if (a.length !== b.length) return false;
  for (let i = 0; i < a.length; i++) if (a[i] !== b[i]) return false;
  return true;
}

/** Adds bucket counts under their bounds (summed with an entry of the same bounds). */
export function addHist(s: BucketState, bounds: readonly number[], counts: readonly number[]): void {
  for (const h of s.hists) {
    if (!sameBounds(h.bounds, bounds)) continue;
    for (let i = 0; i <= bounds.length; i++) h.counts[i] = (h.counts[i] ?? 0) + (counts[i] ?? 0);
    return;
  }
  const c = new Array<number>(bounds.length + 1);
  for (let i = 0; i <= bounds.length; i++) c[i] = counts[i] ?? 0;
  s.hists.push({ bounds: [...bounds], counts: c });
}

/** A delta (or unspecified) histogram point taken as received. */
export function addHistPoint(
  s: BucketState,
  p: { count: number; sum?: number | null; min?: number | null; max?: number | null; explicit_bounds?: number[]; bucket_counts?: number[] },
  explicit: boolean,
): void {
  s.n++;
  s.hcount += p.count;
  if (isNum(p.sum)) {
    s.hsum += p.sum;
    s.hsumN++;
    s.hsumCount += p.count;
  }
  if (p.count > 0) {
    s.live++;
    if (isNum(p.min)) {
      s.lminN++;
      if (p.min < s.lmin) s.lmin = p.min;
    }
    if (isNum(p.max)) {
      s.lmaxN++;
      if (p.max > s.lmax) s.lmax = p.max;
    }
  }
  if (explicit) addHist(s, p.explicit_bounds ?? [], p.bucket_counts ?? []);
}

export function mergeState(into: BucketState, from: BucketState): void {
  into.n += from.n;
  into.vsum += from.vsum;
  if (from.vmin < into.vmin) into.vmin = from.vmin;
  if (from.vmax > into.vmax) into.vmax = from.vmax;
  if (into.sketch && from.sketch) sketchMerge(into.sketch, from.sketch);
  into.hcount += from.hcount;
  into.hsum += from.hsum;
  into.hsumN += from.hsumN;
  into.hsumCount += from.hsumCount;
  into.live += from.live;
  if (from.lmin < into.lmin) into.lmin = from.lmin;
  into.lminN += from.lminN;
  if (from.lmax > into.lmax) into.lmax = from.lmax;
  into.lmaxN += from.lmaxN;
  for (const h of from.hists) addHist(into, h.bounds, h.counts);
}

const QUANTILE: Record<string, number> = { p50: 0.5, p90: 0.9, p95: 0.95, p99: 0.99 };

/** The bucket's value for an aggregation, as aggregate.ts computes it from the contributions (see above). */
export function stateValue(s: BucketState, type: MetricType, aggregation: Aggregation, bucketMs: number): number | null {
  if (s.n === 0) return null;
  const values = type === 'gauge' || type === 'sum';
  if (aggregation === 'rate') return (values ? s.vsum : s.hcount) / (bucketMs / 1000);
  if (values) {
    switch (aggregation) {
      case 'min':
        return s.vmin;
      case 'max':
        return s.vmax;
      case 'count':
        return s.n;
      case 'sum':
        return s.vsum;
      case 'avg':
        return s.vsum / s.n;
      default:
        return s.sketch ? sketchPercentile(s.sketch, QUANTILE[aggregation]!, s.vmin, s.vmax) : null;
    }
  }
  switch (aggregation) {
    case 'min':
      return s.lminN > 0 ? s.lmin : null;
    case 'max':
      return s.lmaxN > 0 ? s.lmax : null;
    case 'count':
      return s.hcount;
    case 'sum':
      return s.hsumN === 0 ? null : s.hsum;
    case 'avg':
      return s.hsumCount <= 0 ? null : s.hsum / s.hsumCount;
    default: {
      if (s.live === 0) return null;
      const min = s.lminN === s.live ? s.lmin : null;
      const max = s.lmaxN === s.live ? s.lmax : null;
      const merged = s.hists.length === 1 ? s.hists[0]! : mergeExplicitHistograms(s.hists);
      return histogramQuantile(merged.bounds, merged.counts, QUANTILE[aggregation]!, min, max);
    }
  }
}

/** point_count and sample_count of a bucket (aggregate.ts: contributions; measurements). */
export function stateCounts(s: BucketState, type: MetricType): { point_count: number; sample_count: number } {
  return { point_count: s.n, sample_count: type === 'gauge' || type === 'sum' ? s.n : s.hcount };
}

/** Timeline buckets from bucket states (bucket i starts at first + i·size). */
export function timelineFromStates(
  states: readonly BucketState[],
  first: number,
  size: number,
  type: MetricType,
  aggregation: Aggregation,
): { time: string; value: number | null; point_count: number; sample_count: number }[] {
  return states.map((s, i) => ({ time: new Date(first + i * size).toISOString(), value: stateValue(s, type, aggregation, size), ...stateCounts(s, type) }));
}
