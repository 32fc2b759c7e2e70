/**
 * Metric timelines and the inspect summary, computed from normalized contributions
 * (see normalize.ts for the temporality rules).
 *
 * Aggregation semantics per metric type, per timeline bucket:
 * - gauge: `avg`, `sum`, `count` (number of points) and percentiles over the sampled values.
 * - sum: every point contributes its increase (delta). `sum` = total increase in the bucket,
 *   `avg` = average increase per point, `count` = number of points, percentiles over the per-point
 *   increases.
 * - hist / exponential_histogram: `count` = Σ count, `sum` = Σ sum, `avg` = Σ sum / Σ count (over the
 *   contributions that carry a sum). Percentiles come from the merged bucket distribution
 *   (explicit: {@link histogramQuantile}; exponential, delta only: {@link expHistogramQuantile}).
 *   Percentiles of cumulative exponential histograms are refused with {@link UnsupportedTemporalityError}.
 *
 * - every type: `min` / `max` = smallest / largest value (gauge, sum increase; histograms: the points'
 *   min / max, null when they carry none); `rate` = per second of the bucket: Σ values (gauge),
 *   increase (sum), measurements Σ count (histograms).
 *
 * `point_count` = raw points in the bucket (including cumulative points that contributed zero);
 * `sample_count` = measurements represented: 1 per gauge/sum point, the (delta) count for histograms.
 * Buckets with no points have `value: null`, whatever the aggregation.
 */
import type { ExpBuckets, MetricType, Temporality } from '../telemetry-types.js';
import { normalizePoints, type MetricContribution, type MetricPointInput } from './normalize.js';
import { bucketStart, checkBucketCount } from './window.js';

export const AGGREGATIONS = ['avg', 'count', 'max', 'min', 'p50', 'p90', 'p95', 'p99', 'rate', 'sum'] as const;
export type Aggregation = (typeof AGGREGATIONS)[number];
export type PercentileAggregation = 'p50' | 'p90' | 'p95' | 'p99';

export function isAggregation(value: unknown): value is Aggregation {
  return typeof value === 'string' && (AGGREGATIONS as readonly string[]).includes(value);
}

const QUANTILE: Record<PercentileAggregation, number> = { p50: 0.5, p90: 0.9, p95: 0.95, p99: 0.99 };

export function isPercentileAggregation(a: string): a is PercentileAggregation {
  return a in QUANTILE;
}

/** A percentile timeline requested for a cumulative exponential histogram (HTTP 422). */
export class UnsupportedTemporalityError extends Error {
  readonly code = 'UNSUPPORTED_METRIC_TEMPORALITY' as const;
  readonly status = 422 as const;
  constructor(message?: string) {
    super(
      message ??
        'Percentile aggregations are not available for cumulative exponential histograms; use avg, count or sum, or export with delta temporality.',
    );
    this.name = 'UnsupportedTemporalityError';
  }
}

/**
 * Throws {@link UnsupportedTemporalityError} for a percentile aggregation of a cumulative exponential
 * histogram. Callers that know the temporality can call this before querying.
 */
export function checkAggregationSupported(type: MetricType, temporality: Temporality | undefined, aggregation: Aggregation): void {
  if (type === 'exponential_histogram' && temporality === 'cumulative' && isPercentileAggregation(aggregation)) {
    throw new UnsupportedTemporalityError();
  }
}

// ---------------------------------------------------------------------------------------------
// Percentiles

/**
 * Percentile of already sorted (ascending) raw values, `q` in [0, 1], by linear interpolation
 * between closest ranks (Hyndman–Fan type 7, as numpy's default and Excel PERCENTILE.INC):
 * h = (n − 1)·q; result = v[⌊h⌋] + (h − ⌊h⌋)·(v[⌊h⌋+1] − v[⌊h⌋]). Returns null for no values.
 */
export function percentile(sortedValues: readonly number[], q: number): number | null {
  if (!(q >= 0 && q <= 1)) throw new RangeError(`percentile q must be within [0, 1], got ${q}`);
  const n = sortedValues.length;
  if (n === 0) return null;
  const h = (n - 1) * q;
  const lo = Math.floor(h);
  const hi = Math.min(lo + 1, n - 1);
  return sortedValues[lo] + (h - lo) * (sortedValues[hi] - sortedValues[lo]);
}

interface RangeBucket {
  lower: number;
  upper: number;
  count: number;
}

/**
 * Quantile over ordered, non-overlapping buckets with linear interpolation inside the bucket that
 * holds rank q·N (the first non-empty bucket whose cumulative count reaches the rank). `min`/`max`,
 * when known, tighten the outermost non-empty buckets' edges and clamp the result.
 */
function rangeQuantile(buckets: RangeBucket[], q: number, min: number | null, max: number | null): number | null {
  const nonEmpty = buckets.filter((b) => b.count > 0);
  if (nonEmpty.length === 0) return null;
  const total = nonEmpty.reduce((s, b) => s + b.count, 0);
  const rank = q * total;
  let cum = 0;
  let chosen = nonEmpty.length - 1;
  for (let i = 0; i < nonEmpty.length; i++) {
    if (cum + nonEmpty[i].count >= rank) {
      chosen = i;
      break;
    }
    cum += nonEmpty[i].count;
  }
  const b = nonEmpty[chosen];
  let lower = b.lower;
  let upper = b.upper;
  if (chosen === 0 && min !== null && min <= upper) lower = Math.max(lower, min);
  if (chosen === nonEmpty.length - 1 && max !== null && max >= lower) upper = Math.min(upper, max);
  if (!Number.isFinite(lower)) lower = upper;
  if (!Number.isFinite(upper)) upper = lower;
  if (!Number.isFinite(lower)) return null;
  let v = lower + ((upper - lower) * (rank - cum)) / b.count;
  if (min !== null && v < min) v = min;
  if (max !== null && v > max) v = max;
  return v;
}

/**
 * Quantile of an explicit-bounds histogram, in the manner of Prometheus `histogram_quantile`.
 * `counts` has `bounds.length + 1` entries; bucket i covers (bounds[i−1], bounds[i]], the last one
 * (bounds[n−1], +Inf). Linear interpolation inside the bucket holding rank q·N. Edges:
 * - the first bucket's lower edge is `min` when known, else 0 when bounds[0] > 0 (non-negative data
 *   assumed, as Prometheus does), else bounds[0];
 * - the +Inf bucket's upper edge is `max` when known, else the result clamps to the last finite bound;
 * - `min`/`max` also tighten the outermost non-empty buckets and clamp the result.
 * Returns null when the histogram is empty or has no bounds and no min/max.
 */
export function histogramQuantile(
  bounds: readonly number[],
  counts: readonly number[],
  q: number,
  min: number | null = null,
  max: number | null = null,
): number | null {
  const n = bounds.length;
  const buckets: RangeBucket[] = [];
  for (let i = 0; i <= n; i++) {
    const count = counts[i] ?? 0;
    let lower: number;
    let upper: number;
    if (i === n) {
      lower = n > 0 ? bounds[n - 1] : (min ?? -Infinity);
      upper = max ?? (n > 0 ? bounds[n - 1] : Infinity);
      if (upper < lower) upper = lower;
    } else {
      upper = bounds[i];
      lower = i > 0 ? bounds[i - 1] : min !== null ? Math.min(min, upper) : upper > 0 ? 0 : upper;
    }
    buckets.push({ lower, upper, count });
  }
  return rangeQuantile(buckets, q, min, max);
}

/** An exponential histogram distribution (OTLP layout). */
export interface ExpDistribution {
  scale: number;
  zero_count: number;
  positive?: ExpBuckets;
  negative?: ExpBuckets;
  min?: number | null;
  max?: number | null;
}

/**
 * Quantile of one or more exponential histograms, merged at the lowest scale among them (an index k
 * at scale s maps to ⌊k / 2^(s − s_min)⌋). At scale s, base = 2^(2^−s); positive bucket index k covers
 * (base^k, base^(k+1)], negative index k covers [−base^(k+1), −base^k), and the zero bucket is taken
 * as a point mass at 0. Order: negatives (most negative first), zero, positives. Linear interpolation
 * inside the bucket holding rank q·N; min/max (known on every input) tighten the edges.
 */
export function expHistogramQuantile(dists: readonly ExpDistribution[], q: number): number | null {
  if (dists.length === 0) return null;
  const scale = Math.min(...dists.map((d) => d.scale ?? 0));
  const pos = new Map<number, number>();
  const neg = new Map<number, number>();
  let zero = 0;
  let min: number | null = Infinity;
  let max: number | null = -Infinity;
  const add = (target: Map<number, number>, b: ExpBuckets | undefined, shift: number) => {
    if (!b) return;
    const div = 2 ** shift;
    b.bucket_counts.forEach((c, i) => {
      if (!c) return;
      const k = Math.floor((b.offset + i) / div);
      target.set(k, (target.get(k) ?? 0) + c);
    });
  };
  for (const d of dists) {
    const shift = (d.scale ?? 0) - scale;
    add(pos, d.positive, shift);
    add(neg, d.negative, shift);
    zero += d.zero_count ?? 0;
    if (min !== null) min = typeof d.min === 'number' && Number.isFinite(d.min) ? Math.min(min, d.min) : null;
    if (max !== null) max = typeof d.max === 'number' && Number.isFinite(d.max) ? Math.max(max, d.max) : null;
  }
  const base = 2 ** (2 ** -scale);
  const buckets: RangeBucket[] = [];
  for (const k of [...neg.keys()].sort((a, b) => b - a)) {
    buckets.push({ lower: -(base ** (k + 1)), upper: -(base ** k), count: neg.get(k) as number });
  }
  if (zero > 0) buckets.push({ lower: 0, upper: 0, count: zero });
  for (const k of [...pos.keys()].sort((a, b) => a - b)) {
    buckets.push({ lower: base ** k, upper: base ** (k + 1), count: pos.get(k) as number });
  }
  return rangeQuantile(buckets, q, min, max);
}

// ---------------------------------------------------------------------------------------------
// Explicit-histogram merging

function sameBounds(a: readonly number[], b: readonly number[]): boolean {
  if (a === b) return true;
  if (a.length !== b.length) return false;
  for (let i = 0; i < a.length; i++) if (a[i] !== b[i]) return false;
  return true;
}

/**
 * Merges explicit-histogram bucket counts. Identical bounds are summed. When bounds differ, counts are
 * redistributed onto the union of all bounds assuming uniform density inside each finite bucket; an
 * open-ended bucket goes whole to the adjacent union bucket ((−Inf, b0] to the one ending at b0,
 * (b_last, +Inf) to the one starting at b_last).
 */
export function mergeExplicitHistograms(hists: readonly { bounds: readonly number[]; counts: readonly number[] }[]): {
  bounds: number[];
  counts: number[];
} {
  if (hists.length === 0) return { bounds: [], counts: [] };
  const first = hists[0].bounds;
  if (hists.every((h) => sameBounds(h.bounds, first))) {
    const bounds = [...hists[0].bounds];
    const counts = new Array<number>(bounds.length + 1).fill(0);
    for (const h of hists) for (let i = 0; i <= bounds.length; i++) counts[i] += h.counts[i] ?? 0;
    return { bounds, counts };
  }
  const bounds = [...new Set(hists.flatMap((h) => [...h.bounds]))].sort((a, b) => a - b);
  const idx = new Map(bounds.map((b, i) => [b, i]));
  const counts = new Array<number>(bounds.length + 1).fill(0);
  for (const h of hists) {
    const n = h.bounds.length;
    for (let i = 0; i <= n; i++) {
      const c = h.counts[i] ?? 0;
      if (!c) continue;
      if (n === 0) {
        counts[bounds.length] += c; // a bounds-less histogram only knows "somewhere"
      } else if (i === 0) {
        counts[idx.get(h.bounds[0]) as number] += c;
      } else if (i === n) {
        counts[(idx.get(h.bounds[n - 1]) as number) + 1] += c;
      } else {
        const lo = h.bounds[i - 1];
        const hi = h.bounds[i];
        const a = idx.get(lo) as number;
        const z = idx.get(hi) as number;
        for (let j = a + 1; j <= z; j++) counts[j] += (c * (bounds[j] - bounds[j - 1])) / (hi - lo);
      }
    }
  }
  return { bounds, counts };
}

// ---------------------------------------------------------------------------------------------
// Timeline

export interface TimelineBucket {
  /** Bucket start, ISO 8601 UTC. */
  time: string;
  value: number | null;
  point_count: number;
  sample_count: number;
}

export interface Timeline {
  buckets: TimelineBucket[];
}

export interface SeriesOptions {
  fromMs: number;
  toMs: number;
  granularityMs: number;
  /** The metric's type; points of another type are ignored. */
  type: MetricType;
  /** The metric's temporality when known (used to refuse unsupported percentiles even without data). */
  temporality?: Temporality;
  /** How far before the window a cumulative baseline may lie (default 1 h). */
  baselineMs?: number;
}

export interface TimelineOptions extends SeriesOptions {
  aggregation: Aggregation;
}

function hasCumulativeExp(contribs: readonly MetricContribution[], opts: SeriesOptions): boolean {
  if (opts.type !== 'exponential_histogram') return false;
  return opts.temporality === 'cumulative' || contribs.some((c) => c.temporality === 'cumulative');
}

/** Math.min/max over an array without spreading it: a spread of ~100k+ values overflows the call stack. */
function minOf(values: readonly number[]): number {
  let m = Infinity;
  for (const v of values) if (v < m) m = v;
  return m;
}
function maxOf(values: readonly number[]): number {
  let m = -Infinity;
  for (const v of values) if (v > m) m = v;
  return m;
}

function aggregateBucket(contribs: MetricContribution[], type: MetricType, aggregation: Aggregation, bucketMs: number): number | null {
  if (contribs.length === 0) return null;
  if (aggregation === 'rate') {
    const total = type === 'gauge' || type === 'sum' ? contribs.reduce((s, c) => s + (c.value as number), 0) : contribs.reduce((s, c) => s + (c.count ?? 0), 0);
    return total / (bucketMs / 1000);
  }
  if (type === 'gauge' || type === 'sum') {
    const values = contribs.map((c) => c.value as number);
    switch (aggregation) {
      case 'min':
        return minOf(values);
      case 'max':
        return maxOf(values);
      case 'count':
        return values.length;
      case 'sum':
        return values.reduce((s, v) => s + v, 0);
      case 'avg':
        return values.reduce((s, v) => s + v, 0) / values.length;
      default:
        return percentile(
          values.sort((a, b) => a - b),
          QUANTILE[aggregation],
        );
    }
  }
  switch (aggregation) {
    case 'min':
    case 'max': {
      const vals = contribs.filter((c) => (c.count ?? 0) > 0).map((c) => (aggregation === 'min' ? c.min : c.max)).filter((v): v is number => typeof v === 'number');
      if (vals.length === 0) return null;
      return aggregation === 'min' ? minOf(vals) : maxOf(vals);
    }
    case 'count':
      return contribs.reduce((s, c) => s + (c.count ?? 0), 0);
    case 'sum': {
      const withSum = contribs.filter((c) => typeof c.sum === 'number');
      return withSum.length === 0 ? null : withSum.reduce((s, c) => s + (c.sum as number), 0);
    }
    case 'avg': {
      const withSum = contribs.filter((c) => typeof c.sum === 'number');
      const count = withSum.reduce((s, c) => s + (c.count ?? 0), 0);
      if (count <= 0) return null;
      return withSum.reduce((s, c) => s + (c.sum as number), 0) / count;
    }
    default: {
      const q = QUANTILE[aggregation];
      const live = contribs.filter((c) => (c.count ?? 0) > 0);
      if (live.length === 0) return null;
      const min = live.every((c) => typeof c.min === 'number') ? minOf(live.map((c) => c.min as number)) : null;
      const max = live.every((c) => typeof c.max === 'number') ? maxOf(live.map((c) => c.max as number)) : null;
      if (type === 'hist') {
        const merged = mergeExplicitHistograms(
          contribs.map((c) => ({ bounds: c.explicit_bounds ?? [], counts: c.bucket_counts ?? [] })),
        );
        return histogramQuantile(merged.bounds, merged.counts, q, min, max);
      }
      return expHistogramQuantile(
        live.map((c) => ({
          scale: c.scale ?? 0,
          zero_count: c.zero_count ?? 0,
          positive: c.positive,
          negative: c.negative,
          min: c.min,
          max: c.max,
        })),
        q,
      );
    }
  }
}

/** Groups in-window contributions into the window's epoch-aligned buckets. */
function groupByBucket(contribs: readonly MetricContribution[], opts: SeriesOptions): { start: number; items: MetricContribution[] }[] {
  const n = checkBucketCount(opts.fromMs, opts.toMs, opts.granularityMs);
  const first = bucketStart(opts.fromMs, opts.granularityMs);
  const groups = Array.from({ length: n }, (_, i) => ({ start: first + i * opts.granularityMs, items: [] as MetricContribution[] }));
  for (const c of contribs) {
    if (c.type !== opts.type) continue;
    const i = Math.floor((c.time_ms - first) / opts.granularityMs);
    if (i >= 0 && i < n) groups[i].items.push(c);
  }
  return groups;
}

function sampleCount(items: readonly MetricContribution[], type: MetricType): number {
  if (type === 'gauge' || type === 'sum') return items.length;
  return items.reduce((s, c) => s + (c.count ?? 0), 0);
}

/** Timeline from contributions already produced by {@link normalizePoints}. */
export function timelineFromContributions(contribs: readonly MetricContribution[], opts: TimelineOptions): Timeline {
  const relevant = contribs.filter((c) => c.type === opts.type);
  if (isPercentileAggregation(opts.aggregation) && hasCumulativeExp(relevant, opts)) {
    throw new UnsupportedTemporalityError();
  }
  const groups = groupByBucket(relevant, opts);
  return {
    buckets: groups.map((g) => ({
      time: new Date(g.start).toISOString(),
      value: aggregateBucket(g.items, opts.type, opts.aggregation, opts.granularityMs),
      point_count: g.items.length,
      sample_count: sampleCount(g.items, opts.type),
    })),
  };
}

const isFiniteNum = (v: unknown): v is number => typeof v === 'number' && Number.isFinite(v);

/**
 * Fast path of {@link timeline} for explicit histograms whose points are all delta (or unspecified):
 * each point contributes itself as received, so buckets are aggregated straight from the points, in
 * the same order and with the same arithmetic as normalizePoints → timelineFromContributions, without
 * one contribution object (and bucket-array copies) per point. Returns null (caller takes the general
 * path) when any point of the metric is cumulative.
 */
export function deltaHistTimeline(points: readonly MetricPointInput[], opts: TimelineOptions): Timeline | null {
  const { fromMs, toMs, granularityMs } = opts;
  const sel: MetricPointInput[] = [];
  let sorted = true;
  let last = -Infinity;
  for (let i = 0; i < points.length; i++) {
    const p = points[i]!;
    if (p.type !== 'hist') continue;
    if (p.temporality === 'cumulative') return null;
    // normalizePoints' `usable` and window checks for delta points.
    if (!isFiniteNum(p.time_ms) || !isFiniteNum(p.count)) continue;
    if (p.time_ms < fromMs || p.time_ms >= toMs) continue;
    if (p.time_ms < last) sorted = false;
    last = p.time_ms;
    sel.push(p);
  }
  if (!sorted) sel.sort((a, b) => a.time_ms - b.time_ms); // stable, as normalizePoints' final sort
  const n = checkBucketCount(fromMs, toMs, granularityMs);
  const first = bucketStart(fromMs, granularityMs);
  const aggregation = opts.aggregation;
  const buckets: TimelineBucket[] = new Array(n);
  let j = 0;
  // (groupByBucket drops points before the first bucket; with time >= fromMs there are none.)
  while (j < sel.length && Math.floor((sel[j]!.time_ms - first) / granularityMs) < 0) j++;
  for (let b = 0; b < n; b++) {
    const start = first + b * granularityMs;
    // Points are in time order, so each bucket is a contiguous run of `sel`.
    const lo = j;
    while (j < sel.length && Math.floor((sel[j]!.time_ms - first) / granularityMs) === b) j++;
    const hi = j;
    let samples = 0;
    for (let k = lo; k < hi; k++) samples += sel[k]!.count as number;
    buckets[b] = {
      time: new Date(start).toISOString(),
      value: hi === lo ? null : deltaHistValue(sel, lo, hi, aggregation, samples, granularityMs),
      point_count: hi - lo,
      sample_count: samples,
    };
  }
  return { buckets };
}

/** aggregateBucket for the delta explicit-histogram points `sel[lo..hi)` (non-empty). */
function deltaHistValue(sel: readonly MetricPointInput[], lo: number, hi: number, aggregation: Aggregation, totalCount: number, bucketMs: number): number | null {
  switch (aggregation) {
    case 'count':
      return totalCount;
    case 'rate':
      return totalCount / (bucketMs / 1000);
    case 'min':
    case 'max': {
      let any = false;
      let v = aggregation === 'min' ? Infinity : -Infinity;
      for (let k = lo; k < hi; k++) {
        const p = sel[k]!;
        if (!((p.count as number) > 0)) continue;
        const x = aggregation === 'min' ? p.min : p.max;
        if (typeof x !== 'number') continue;
        any = true;
        v = aggregation === 'min' ? Math.min(v, x) : Math.max(v, x);
      }
      return any ? v : null;
    }
    case 'sum':
    case 'avg': {
      let any = false;
      let sum = 0;
      let count = 0;
      for (let k = lo; k < hi; k++) {
        const p = sel[k]!;
        if (!isFiniteNum(p.sum)) continue;
        any = true;
        sum += p.sum;
        count += p.count as number;
      }
      if (aggregation === 'sum') return any ? sum : null;
      if (count <= 0) return null;
      return sum / count;
    }
    default: {
      let live = 0;
      let minOk = true;
      let maxOk = true;
      let min = Infinity;
      let max = -Infinity;
      for (let k = lo; k < hi; k++) {
        const p = sel[k]!;
        if (!((p.count as number) > 0)) continue;
        live++;
        if (minOk) {
          if (isFiniteNum(p.min)) min = Math.min(min, p.min);
          else minOk = false;
        }
        if (maxOk) {
          if (isFiniteNum(p.max)) max = Math.max(max, p.max);
          else maxOk = false;
        }
      }
      if (live === 0) return null;
      const q = QUANTILE[aggregation];
      const bounds0 = sel[lo]!.explicit_bounds ?? EMPTY;
      let same = true;
      for (let k = lo + 1; k < hi && same; k++) same = sameBoundValues(sel[k]!.explicit_bounds ?? EMPTY, bounds0);
      let merged: { bounds: readonly number[]; counts: number[] };
      if (same) {
        // mergeExplicitHistograms' identical-bounds branch, summing in the same order.
        const m = bounds0.length;
        const counts = new Array<number>(m + 1).fill(0);
        for (let k = lo; k < hi; k++) {
          const c = sel[k]!.bucket_counts ?? EMPTY;
          for (let i = 0; i <= m; i++) counts[i] += c[i] ?? 0;
        }
        merged = { bounds: bounds0, counts };
      } else {
        const hists: { bounds: readonly number[]; counts: readonly number[] }[] = [];
        for (let k = lo; k < hi; k++) hists.push({ bounds: sel[k]!.explicit_bounds ?? EMPTY, counts: sel[k]!.bucket_counts ?? EMPTY });
        merged = mergeExplicitHistograms(hists);
      }
      return histogramQuantile(merged.bounds, merged.counts, q, minOk ? min : null, maxOk ? max : null);
    }
  }
}

const EMPTY: readonly number[] = [];

/** Element-wise bounds comparison, as sameBounds does on the general path's copied arrays. */
function sameBoundValues(a: readonly number[], b: readonly number[]): boolean {
  if (a.length !== b.length) return false;
  for (let i = 0; i < a.length; i++) if (a[i] !== b[i]) return false;
  return true;
}

/**
 * Timeline of one metric over `[fromMs, toMs)`: every epoch-aligned bucket of the window, `value` null
 * where the bucket has no points. `points` are the stored points of the window plus, for cumulative
 * series, those of the hour before it (baselines). Throws {@link UnsupportedTemporalityError} for a
 * percentile of a cumulative exponential histogram and a `WindowError` for more than 2,000 buckets.
 */
export function timeline(points: readonly MetricPointInput[], opts: TimelineOptions): Timeline {
  checkAggregationSupported(opts.type, opts.temporality, opts.aggregation);
  if (opts.type === 'hist') {
    const fast = deltaHistTimeline(points, opts);
    if (fast) return fast;
  }
  const contribs = normalizePoints(
    points.filter((p) => p.type === opts.type),
    { fromMs: opts.fromMs, toMs: opts.toMs, baselineMs: opts.baselineMs },
  );
  return timelineFromContributions(contribs, opts);
}

// ---------------------------------------------------------------------------------------------
// Inspect

export type InspectAggregation = 'avg' | 'p50' | 'p90' | 'p99';
export const INSPECT_AGGREGATIONS: readonly InspectAggregation[] = ['avg', 'p50', 'p90', 'p99'];

export interface InspectSnapshot {
  aggregation: InspectAggregation;
  /** Value of the last non-empty bucket. */
  latest_value: number | null;
  /** Value of the non-empty bucket before it. */
  previous_value: number | null;
  /** (latest − previous) / |previous| × 100, one decimal; null when either is null or previous is 0. */
  change_percent: number | null;
  /** The last `recentCount` (5) non-empty buckets, oldest first. */
  recent_points: TimelineBucket[];
  /** The `topCount` (3) highest-valued buckets of the window, highest first (earlier first on ties). */
  top_points: TimelineBucket[];
}

export interface InspectResult {
  highlights: string[];
  snapshots: InspectSnapshot[];
}

export interface InspectOptions extends SeriesOptions {
  /** Used in highlights only. */
  metricName?: string;
  /** OTel unit (e.g. `ms`, `By`, `{request}`), used in highlights only. */
  unit?: string;
  recentCount?: number;
  topCount?: number;
}

function round1(v: number): number {
  return Math.round(v * 10) / 10;
}

/** Compact number for sentences: 3 significant digits below 1000, integers above. */
export function formatNumber(v: number): string {
  if (!Number.isFinite(v)) return String(v);
  const a = Math.abs(v);
  if (a >= 1000) return Math.round(v).toLocaleString('en-US');
  if (a === 0) return '0';
  return String(Number(v.toPrecision(3)));
}

function formatWithUnit(v: number, unit: string | undefined): string {
  const u = (unit ?? '').replace(/^\{(.*)\}$/, '$1').trim();
  return u === '' || u === '1' ? formatNumber(v) : `${formatNumber(v)} ${u}`;
}

function formatPercent(p: number): string {
  const a = Math.abs(p);
  return `${a < 10 ? String(Number(a.toFixed(1))) : String(Math.round(a))}%`;
}

function snapshot(agg: InspectAggregation, buckets: TimelineBucket[], recentCount: number, topCount: number): InspectSnapshot {
  const filled = buckets.filter((b) => b.value !== null);
  const latest = filled.length > 0 ? (filled[filled.length - 1].value as number) : null;
  const previous = filled.length > 1 ? (filled[filled.length - 2].value as number) : null;
  const change = latest !== null && previous !== null && previous !== 0 ? round1(((latest - previous) / Math.abs(previous)) * 100) : null;
  const top = filled
    .map((b, i) => ({ b, i }))
    .sort((x, y) => (y.b.value as number) - (x.b.value as number) || x.i - y.i)
    .slice(0, topCount)
    .map((x) => x.b);
  return {
    aggregation: agg,
    latest_value: latest,
    previous_value: previous,
    change_percent: change,
    recent_points: filled.slice(-recentCount),
    top_points: top,
  };
}

function changeSentence(s: InspectSnapshot, unit: string | undefined): string | null {
  if (s.latest_value === null) return null;
  const to = formatWithUnit(s.latest_value, unit);
  if (s.previous_value === null) return `${s.aggregation} is ${to} in the latest bucket.`;
  if (s.change_percent === null) {
    return `${s.aggregation} went from ${formatWithUnit(s.previous_value, unit)} to ${to} in the latest bucket.`;
  }
  if (s.change_percent === 0) return `${s.aggregation} held at ${to} in the latest bucket.`;
  const dir = s.change_percent > 0 ? 'rose' : 'fell';
  return `${s.aggregation} ${dir} ${formatPercent(s.change_percent)} to ${to} in the latest bucket.`;
}

/**
 * Inspect summary: one snapshot per aggregation avg, p50, p90, p99 (percentiles omitted for cumulative
 * exponential histograms, whose avg uses reset-aware deltas) and a few compact highlight sentences.
 */
export function inspect(points: readonly MetricPointInput[], opts: InspectOptions): InspectResult {
  // Delta explicit histograms: the fast path, which gives the general path's numbers.
  const fast = opts.type === 'hist' ? deltaHistTimeline(points, { ...opts, aggregation: 'avg' }) : null;
  const contribs = fast
    ? []
    : normalizePoints(
        points.filter((p) => p.type === opts.type),
        { fromMs: opts.fromMs, toMs: opts.toMs, baselineMs: opts.baselineMs },
      );
  const cumulativeExp = hasCumulativeExp(contribs, opts);
  const aggs = INSPECT_AGGREGATIONS.filter((a) => a === 'avg' || !cumulativeExp);
  const timelines = aggs.map((aggregation) => ({
    aggregation,
    buckets: fast
      ? aggregation === 'avg'
        ? fast.buckets
        : (deltaHistTimeline(points, { ...opts, aggregation }) as Timeline).buckets
      : timelineFromContributions(contribs, { ...opts, aggregation }).buckets,
  }));
  return inspectFromTimelines(timelines, opts, cumulativeExp);
}

/** The inspect summary from the timelines of its aggregations (avg first; see {@link inspect}). */
export function inspectFromTimelines(
  timelines: { aggregation: InspectAggregation; buckets: TimelineBucket[] }[],
  opts: InspectOptions,
  cumulativeExp = false,
): InspectResult {
  const recentCount = opts.recentCount ?? 5;
  const topCount = opts.topCount ?? 3;
  const snapshots = timelines.map((t) => snapshot(t.aggregation, t.buckets, recentCount, topCount));

  const highlights: string[] = [];
  const name = opts.metricName ? `${opts.metricName} ` : '';
  const buckets = timelines[0].buckets;
  const filled = buckets.filter((b) => b.point_count > 0).length;
  if (filled === 0) {
    highlights.push(`No ${name}data points in the window.`);
  } else {
    const points = buckets.reduce((s, b) => s + b.point_count, 0);
    const samples = buckets.reduce((s, b) => s + b.sample_count, 0);
    const sampleNote = opts.type === 'hist' || opts.type === 'exponential_histogram' ? ` (${formatNumber(samples)} measurements)` : '';
    const prefix = opts.metricName ? `${opts.metricName}: ` : '';
    highlights.push(`${prefix}${points} point${points === 1 ? '' : 's'}${sampleNote} in ${filled} of ${buckets.length} buckets.`);
    const avg = snapshots.find((s) => s.aggregation === 'avg');
    const tail = snapshots.find((s) => s.aggregation === 'p99');
    for (const s of [avg, tail]) {
      const sentence = s ? changeSentence(s, opts.unit) : null;
      if (sentence) highlights.push(sentence);
    }
    const peak = (tail ?? avg)?.top_points[0];
    if (peak && peak.value !== null && filled > 1) {
      highlights.push(`Peak ${(tail ?? avg)?.aggregation} ${formatWithUnit(peak.value, opts.unit)} at ${peak.time}.`);
    }
  }
  if (cumulativeExp) {
    highlights.push('Percentiles are unavailable for cumulative exponential histograms; avg uses reset-aware count and sum deltas.');
  }
  return { highlights, snapshots };
}
