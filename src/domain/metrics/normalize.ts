/**
 * Turns stored metric points into per-point *contributions* inside a query window: what each point
 * adds to a timeline bucket once temporality has been taken into account.
 *
 * Rules (interface spec, metrics timeline):
 * - Gauges: every point is one sample of its value.
 * - Delta points (sums, histograms, exponential histograms) are aggregated as received. Points whose
 *   temporality is not `cumulative` (e.g. `unspecified`) are treated as delta.
 * - Cumulative points are differenced per series (`series_key`) and instrumentation scope (`scope_name`):
 *   - a changed start time is a reset: the point contributes its full value when its start is known,
 *     and zero when it is an OTLP zero-duration unknown-start point (`start_ms` null or equal to `time_ms`);
 *   - with the same start, a decrease (counter value, histogram count or any bucket count) sets a new
 *     baseline and contributes no increase;
 *   - an explicit histogram whose bounds changed under the same start becomes a new baseline and
 *     contributes zero (its cumulative counts cannot be split between old and new data);
 *   - the baseline for the first in-window point is the latest point of the series in the hour before
 *     the window (callers pass those points along with the window's own). Without one the first point
 *     contributes zero — unless its known start lies inside the window (`fromMs <= start_ms < time_ms`):
 *     the series began there, so its whole value counts. A zero-duration unknown-start point always
 *     contributes zero.
 *   - Non-monotonic cumulative sums (`monotonic === false`, UpDownCounters) are differenced the same way
 *     but a decrease is a real (negative) change, not a new baseline.
 * - Cumulative `min`/`max` cover the whole cumulative period, so they are kept only on contributions
 *   that carry a full value (reset or start inside the window), never on differences.
 * - Cumulative exponential histograms yield count and sum deltas only (no bucket distribution).
 */
import type { ExpBuckets, MetricPointRecord, MetricType, Temporality } from '../telemetry-types.js';
import { HOUR_MS } from './window.js';

/** The fields of a stored point that normalization needs, plus caller-computed series identity. */
export type MetricPointInput = Pick<MetricPointRecord, 'type' | 'temporality' | 'start_ms' | 'time_ms'> &
  Partial<
    Pick<
      MetricPointRecord,
      | 'monotonic'
      | 'value'
      | 'count'
      | 'sum'
      | 'min'
      | 'max'
      | 'bucket_counts'
      | 'explicit_bounds'
      | 'scale'
      | 'zero_count'
      | 'zero_threshold'
      | 'positive'
      | 'negative'
    >
  > & {
    /** Identifies one series: metric name + point attributes + resource + scope (computed by the caller). */
    series_key: string;
    /** Instrumentation scope name; cumulative differencing is per (series_key, scope_name). */
    scope_name: string;
    /** Stored exemplars (JSON text of MetricExemplar[]) when the point carried any. */
    exemplars?: string;
    /** With group_by: the point's group (JSON array of the group keys' values). */
    group?: string;
  };

/**
 * How a contribution was derived:
 * - `sample`: gauge value;
 * - `delta`: delta-temporality point taken as received;
 * - `diff`: cumulative point minus the previous point of its series;
 * - `reset`: cumulative point after a start-time change (full value);
 * - `start_in_window`: first cumulative point, no baseline, known start inside the window (full value);
 * - `no_baseline`: first cumulative point, no baseline, series already running (zero);
 * - `unknown_start`: zero-duration unknown-start point starting a new sequence (zero);
 * - `decrease`: same-start decrease → new baseline (zero);
 * - `bounds_changed`: explicit-histogram bounds changed under the same start → new baseline (zero).
 */
export type ContributionKind =
  | 'sample'
  | 'delta'
  | 'diff'
  | 'reset'
  | 'start_in_window'
  | 'no_baseline'
  | 'unknown_start'
  | 'decrease'
  | 'bounds_changed';

export interface MetricContribution {
  series_key: string;
  scope_name: string;
  time_ms: number;
  type: MetricType;
  temporality: Temporality;
  kind: ContributionKind;
  /** gauge: the sampled value; sum: the increase this point represents. */
  value?: number;
  /** histograms: measurements this point adds. */
  count?: number;
  /** histograms: sum this point adds (null when unknown). */
  sum?: number | null;
  /** histograms: only on contributions whose min/max describe exactly the contributed measurements. */
  min?: number | null;
  max?: number | null;
  /** explicit histogram: bucket counts added (explicit_bounds.length + 1 entries). */
  explicit_bounds?: number[];
  bucket_counts?: number[];
  /** exponential histogram distribution — delta temporality only. */
  scale?: number;
  zero_count?: number;
  zero_threshold?: number;
  positive?: ExpBuckets;
  negative?: ExpBuckets;
}

export interface NormalizeWindow {
  fromMs: number;
  toMs: number;
  /** How far before `fromMs` a baseline point may lie (default 1 hour). */
  baselineMs?: number;
}

const isNum = (v: unknown): v is number => typeof v === 'number' && Number.isFinite(v);

/** Whether a point carries what its type needs; anything else is skipped. */
function usable(p: MetricPointInput): boolean {
  if (!isNum(p.time_ms)) return false;
  if (p.type === 'gauge' || p.type === 'sum') return isNum(p.value);
  return isNum(p.count);
}

function isCumulative(p: MetricPointInput): boolean {
  return p.type !== 'gauge' && p.temporality === 'cumulative';
}

/** OTLP zero-duration point: start unknown (sent as 0 → null) or equal to the point time. */
function isUnknownStart(p: MetricPointInput): boolean {
  return p.start_ms === null || p.start_ms === undefined || p.start_ms === p.time_ms;
}

function sameBounds(a: number[] | undefined, b: number[] | undefined): boolean {
  const x = a ?? [];
  const y = b ?? [];
  if (x.length !== y.length) return false;
  for (let i = 0; i < x.length; i++) if (x[i] !== y[i]) return false;
  return true;
}

function base(p: MetricPointInput, kind: ContributionKind): MetricContribution {
  return {
    series_key: p.series_key,
    scope_name: p.scope_name,
    time_ms: p.time_ms,
    type: p.type,
    temporality: p.temporality,
    kind,
  };
}

function copyExp(p: MetricPointInput, out: MetricContribution): void {
  out.scale = p.scale ?? 0;
  out.zero_count = p.zero_count ?? 0;
  out.zero_threshold = p.zero_threshold ?? 0;
  out.positive = p.positive ? { offset: p.positive.offset, bucket_counts: [...p.positive.bucket_counts] } : undefined;
  out.negative = p.negative ? { offset: p.negative.offset, bucket_counts: [...p.negative.bucket_counts] } : undefined;
}

/** The point taken at face value (delta points, and cumulative points whose whole value counts). */
function fullContribution(p: MetricPointInput, kind: ContributionKind): MetricContribution {
  const out = base(p, kind);
  switch (p.type) {
    case 'gauge':
    case 'sum':
      out.value = p.value as number;
      break;
    case 'hist':
      out.count = p.count as number;
      out.sum = isNum(p.sum) ? p.sum : null;
      out.min = isNum(p.min) ? p.min : null;
      out.max = isNum(p.max) ? p.max : null;
      out.explicit_bounds = [...(p.explicit_bounds ?? [])];
      out.bucket_counts = [...(p.bucket_counts ?? [])];
      break;
    case 'exponential_histogram':
      out.count = p.count as number;
      out.sum = isNum(p.sum) ? p.sum : null;
      out.min = isNum(p.min) ? p.min : null;
      out.max = isNum(p.max) ? p.max : null;
      // The bucket distribution is only meaningful (and only used) for delta points.
      if (!isCumulative(p)) copyExp(p, out);
      break;
  }
  return out;
}

/** A cumulative point that adds nothing (it becomes the new baseline). */
function zeroContribution(p: MetricPointInput, kind: ContributionKind): MetricContribution {
  const out = base(p, kind);
  switch (p.type) {
    case 'gauge':
    case 'sum':
      out.value = 0;
      break;
    case 'hist':
      out.count = 0;
      out.sum = 0;
      out.explicit_bounds = [...(p.explicit_bounds ?? [])];
      out.bucket_counts = new Array<number>((p.bucket_counts ?? []).length).fill(0);
      break;
    case 'exponential_histogram':
      out.count = 0;
      out.sum = 0;
      break;
  }
  return out;
}

/** Same-start decrease check: any cumulative quantity went down. */
function decreased(prev: MetricPointInput, cur: MetricPointInput): boolean {
  if (cur.type === 'sum') return (cur.value as number) < (prev.value as number);
  if ((cur.count as number) < (prev.count as number)) return true;
  if (cur.type === 'hist') {
    const a = prev.bucket_counts ?? [];
    const b = cur.bucket_counts ?? [];
    for (let i = 0; i < b.length; i++) if (b[i] < (a[i] ?? 0)) return true;
  }
  return false;
}

function diffContribution(prev: MetricPointInput, cur: MetricPointInput): MetricContribution {
  const out = base(cur, 'diff');
  if (cur.type === 'sum') {
    out.value = (cur.value as number) - (prev.value as number);
    return out;
  }
  out.count = (cur.count as number) - (prev.count as number);
  out.sum = isNum(cur.sum) && isNum(prev.sum) ? cur.sum - prev.sum : null;
  if (cur.type === 'hist') {
    const a = prev.bucket_counts ?? [];
    out.explicit_bounds = [...(cur.explicit_bounds ?? [])];
    out.bucket_counts = (cur.bucket_counts ?? []).map((c, i) => c - (a[i] ?? 0));
  }
  return out;
}

/** Contribution of a cumulative point given its series' previous point (or none). */
export function cumulativeContribution(
  prev: MetricPointInput | undefined,
  cur: MetricPointInput,
  fromMs: number,
): MetricContribution {
  const unknownStart = isUnknownStart(cur);
  if (!prev) {
    if (unknownStart) return zeroContribution(cur, 'unknown_start');
    const start = cur.start_ms as number;
    if (start >= fromMs && start < cur.time_ms) return fullContribution(cur, 'start_in_window');
    return zeroContribution(cur, 'no_baseline');
  }
  if ((cur.start_ms ?? null) !== (prev.start_ms ?? null)) {
    // Reset. A zero-duration unknown-start point opens a sequence whose earlier data is unknown.
    if (unknownStart) return zeroContribution(cur, 'unknown_start');
    return fullContribution(cur, 'reset');
  }
  if (cur.type === 'hist' && !sameBounds(prev.explicit_bounds, cur.explicit_bounds)) {
    return zeroContribution(cur, 'bounds_changed');
  }
  if (cur.type === 'sum' && cur.monotonic === false) return diffContribution(prev, cur);
  if (decreased(prev, cur)) return zeroContribution(cur, 'decrease');
  return diffContribution(prev, cur);
}

/**
 * Contributions of the points inside `[fromMs, toMs)`, sorted by time (stable).
 *
 * `points` may include points from before the window: for cumulative series the latest point within
 * `baselineMs` (1 h) before `fromMs` becomes the baseline. Earlier points, delta/gauge points before
 * the window, points at or after `toMs`, and points missing their value/count are ignored.
 */
export function normalizePoints(points: readonly MetricPointInput[], window: NormalizeWindow): MetricContribution[] {
  const { fromMs, toMs } = window;
  const baselineFrom = fromMs - (window.baselineMs ?? HOUR_MS);
  const out: MetricContribution[] = [];
  const cumulativeSeries = new Map<string, MetricPointInput[]>();

  for (const p of points) {
    if (!usable(p)) continue;
    if (isCumulative(p)) {
      if (p.time_ms < baselineFrom || p.time_ms >= toMs) continue;
      const key = `${p.series_key}\u0000${p.scope_name}`;
      let list = cumulativeSeries.get(key);
      if (!list) cumulativeSeries.set(key, (list = []));
      list.push(p);
    } else {
      if (p.time_ms < fromMs || p.time_ms >= toMs) continue;
      out.push(fullContribution(p, p.type === 'gauge' ? 'sample' : 'delta'));
    }
  }

  for (const list of cumulativeSeries.values()) {
    list.sort((a, b) => a.time_ms - b.time_ms); // Array.prototype.sort is stable
    let prev: MetricPointInput | undefined;
    for (const p of list) {
      if (p.time_ms < fromMs) {
        prev = p; // latest pre-window point wins as the baseline
        continue;
      }
      out.push(cumulativeContribution(prev, p, fromMs));
      prev = p;
    }
  }

  out.sort((a, b) => a.time_ms - b.time_ms);
  return out;
}
