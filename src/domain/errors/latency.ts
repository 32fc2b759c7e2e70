/** Ingestion latency statistics. Pure. */

/**
 * The 0-based index of the p-th percentile in `n` ascending values, by the nearest-rank method:
 * rank = ceil(p / 100 × n), so p50 of [10, 20, 30, 40] is 20 and p95 of 20 values is the 19th.
 */
export function nearestRankIndex(n: number, p: number): number {
  if (n <= 0) return -1;
  const rank = Math.ceil((p / 100) * n);
  return Math.min(n, Math.max(1, rank)) - 1;
}

/** Percentile of ascending values by nearest rank; null for none. */
export function percentile(sorted: readonly number[], p: number): number | null {
  const i = nearestRankIndex(sorted.length, p);
  return i < 0 ? null : sorted[i]!;
}
