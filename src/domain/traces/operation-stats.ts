/**
 * Trace operation rows (one per service and normalized operation of entry spans): ordering,
 * percentiles, error rates and the 60-bucket sparkline, from per-group aggregates.
 */
export const OPERATION_SORTS = ['last_seen', 'count', 'p95', 'error_rate'] as const;
export type OperationSort = (typeof OPERATION_SORTS)[number];
/** Sparkline buckets per operation row (spec: 60). */
export const SPARKLINE_BUCKETS = 60;

/** Aggregates of one (service, operation) group in a window. `durations` and `buckets` are present once the group's detail is read. */
export interface OperationGroup {
  service_name: string;
  operation: string;
  /** Latest entry-span start in the window (epoch ms). */
  last_ms: number;
  count?: number;
  errors?: number;
  /** Entry-span durations in ms, in any order (percentile selection reorders them). */
  durations?: Float64Array;
  /** 95th percentile of `durations` (from the store, or cached while sorting by p95). */
  p95?: number | null;
  /** Median of `durations`, when the store computed it. */
  p50?: number | null;
  /** Entry spans per sparkline bucket. */
  buckets?: ArrayLike<number>;
}

export interface OperationRow {
  service_name: string;
  operation: string;
  trace_count: number;
  error_count: number;
  error_rate: number;
  p50_ms: number | null;
  p95_ms: number | null;
  last_ms: number;
  sparkline: number[];
}

/** What a sort needs besides `last_ms`: `counts` (count, errors) or `detail` (also durations). */
export function sortNeeds(sort: OperationSort): 'last' | 'counts' | 'detail' {
  return sort === 'last_seen' ? 'last' : sort === 'p95' ? 'detail' : 'counts';
}

/** Milliseconds rounded to microseconds. */
export const roundMs = (ms: number): number => Math.round(ms * 1000) / 1000;

/** errors / count rounded to 4 decimals; 0 for an empty group. */
export function errorRate(errors: number, count: number): number {
  return count > 0 ? Math.round((errors / count) * 10_000) / 10_000 : 0;
}

/**
 * The same value as `percentile(sorted(values), q)` (linear interpolation between closest ranks),
 * found by selection in O(n) instead of sorting. Reorders `values`; null when empty.
 */
export function selectPercentile(values: Float64Array, q: number): number | null {
  const n = values.length;
  if (n === 0) return null;
  if (!(q >= 0 && q <= 1)) throw new RangeError(`percentile q must be within [0, 1], got ${q}`);
  const h = (n - 1) * q;
  const lo = Math.floor(h);
  const vLo = select(values, lo);
  if (lo + 1 >= n || h === lo) return vLo;
  let vHi = Infinity; // after selection every value right of `lo` is ≥ values[lo]
  for (let i = lo + 1; i < n; i++) if (values[i]! < vHi) vHi = values[i]!;
  return vLo + (h - lo) * (vHi - vLo);
}

/**
 * k-th smallest (0-based) by iterative quickselect with three-way partitioning (runs of equal
 * durations are common) and a median-of-three pivot. Afterwards every value right of `k` is ≥ it.
 */
function select(a: Float64Array, k: number): number {
  let left = 0;
  let right = a.length - 1;
  while (right > left) {
    const x = a[left]!;
    const y = a[(left + right) >>> 1]!;
    const z = a[right]!;
    const pivot = x < y ? (y < z ? y : x < z ? z : x) : x < z ? x : y < z ? z : y;
    let lt = left;
    let gt = right;
    let i = left;
    while (i <= gt) {
      const v = a[i]!;
      if (v < pivot) {
        a[i++] = a[lt]!;
        a[lt++] = v;
      } else if (v > pivot) {
        a[i] = a[gt]!;
        a[gt--] = v;
      } else i++;
    }
    if (k < lt) right = lt - 1;
    else if (k > gt) left = gt + 1;
    else return pivot;
  }
  return a[k]!;
}

function p95Of(g: OperationGroup): number {
  if (g.p95 === undefined) g.p95 = g.durations && g.durations.length ? selectPercentile(g.durations, 0.95) : null;
  return g.p95 ?? -Infinity;
}

const byKey = (a: OperationGroup, b: OperationGroup) =>
  a.service_name < b.service_name ? -1 : a.service_name > b.service_name ? 1 : a.operation < b.operation ? -1 : a.operation > b.operation ? 1 : 0;

/** Descending by the sort key; ties by count (descending), then service and operation. */
export function compareGroups(sort: OperationSort): (a: OperationGroup, b: OperationGroup) => number {
  const count = (g: OperationGroup) => g.count ?? 0;
  const key: (g: OperationGroup) => number =
    sort === 'last_seen' ? (g) => g.last_ms : sort === 'count' ? count : sort === 'p95' ? p95Of : (g) => errorRate(g.errors ?? 0, count(g));
  return (a, b) => key(b) - key(a) || count(b) - count(a) || byKey(a, b);
}

/** The response row of a group whose detail has been read. */
export function operationRow(g: OperationGroup): OperationRow {
  const n = g.count ?? 0;
  const errors = g.errors ?? 0;
  const d = g.durations ?? new Float64Array(0);
  const p50 = g.p50 !== undefined ? g.p50 : selectPercentile(d, 0.5);
  const p95 = g.p95 !== undefined ? g.p95 : selectPercentile(d, 0.95);
  const spark = new Array<number>(SPARKLINE_BUCKETS).fill(0);
  if (g.buckets) for (let i = 0; i < SPARKLINE_BUCKETS; i++) spark[i] = g.buckets[i] ?? 0;
  return {
    service_name: g.service_name,
    operation: g.operation,
    trace_count: n,
    error_count: errors,
    error_rate: errorRate(errors, n),
    p50_ms: p50 === null ? null : roundMs(p50),
    p95_ms: p95 === null ? null : roundMs(p95),
    last_ms: g.last_ms,
    sparkline: spark,
  };
}
