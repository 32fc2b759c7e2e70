/**
 * Trace operation rows (one per service and normalized operation of entry spans): ordering,
 * percentiles, error rates and the 60-bucket sparkline, from per-group aggregates.
 */
import { percentile } from '../metrics/aggregate.js';

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
  /** Entry-span durations in ms, sorted ascending. */
  durations?: Float64Array;
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

function p95Of(g: OperationGroup): number {
  return g.durations && g.durations.length ? percentile(g.durations as unknown as number[], 0.95)! : -Infinity;
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
  const sorted = d as unknown as number[];
  const p50 = percentile(sorted, 0.5);
  const p95 = percentile(sorted, 0.95);
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
