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

/*
 * events.latency over kept tallies (migration 055). A latency is a double (event times are REAL, so
 * received minus event time is fractional: Sentry timestamps carry microseconds), and the answer is
 * exact nearest rank, so no rounding histogram can give it. The tallies count events per latency
 * bucket; the bucket holding a rank is then read from the events (one index range, see
 * `latencyBucketSql`) and sorted. Buckets: exactly 0 (clock skew, events without a time) alone;
 * below 16 ms, 1/16 ms wide; above, 128 per octave (at most 0.8 % of the value wide).
 */

/** Sixteenths of a millisecond below which buckets are 1/16 ms wide (2^8). */
const LINEAR_UNITS = 256;

/** The bucket of a latency (≥ 0, at most LATENCY_MAX_AGE_MS): -1 for exactly 0, else 0…~2.6k, growing with the value. */
export function latencyBucket(x: number): number {
  if (x === 0) return -1;
  const v = Math.floor(x * 16);
  // e = how many of 256, 512, … 2^25 v reaches (what the SQL form sums): its bit length less 8.
  const e = v < LINEAR_UNITS ? 0 : v < 2 ** 31 ? Math.min(18, 24 - Math.clz32(v)) : 18;
  return 128 * e + (v >> e);
}

/**
 * `latencyBucket` in SQL, of a latency expression `x` (the same value for every finite x: a power-of-two
 * scaling, truncation of a non-negative value, integer shifts). The text is the key of the expression
 * index error_events_latency: a query must use it as generated here to read that index.
 */
export function latencyBucketSql(x: string): string {
  const v = `CAST(${x} * 16 AS INTEGER)`;
  const e = Array.from({ length: 18 }, (_, k) => `(${v} >= ${LINEAR_UNITS * 2 ** k})`).join(' + ');
  return `(CASE WHEN ${x} = 0 THEN -1 ELSE 128 * (${e}) + (${v} >> (${e})) END)`;
}

/*
 * Exact sums of latencies: a double is an integer number of 2^-1074 (its smallest step), so sums
 * are kept as such integers (BigInt) and turned back into the nearest double when read — what a
 * compensated sum of the values gives (it is exact for these values), whatever the order they are added in.
 */
const f64 = new Float64Array(1);
const u32 = new Uint32Array(f64.buffer);

/** A finite non-negative double as an integer count of 2^-1074. */
export function exactUnits(x: number): bigint {
  f64[0] = x;
  const lo = u32[0]!;
  const hi = u32[1]!;
  const exp = (hi >>> 20) & 0x7ff;
  const mant = (BigInt(hi & 0xfffff) << 32n) | BigInt(lo);
  return exp === 0 ? mant : (mant | (1n << 52n)) << BigInt(exp - 1);
}

/** 2^k as a double, for -1074 ≤ k ≤ 1023 (built from its bits: exact). */
function pow2(k: number): number {
  if (k >= -1022) {
    u32[0] = 0;
    u32[1] = (k + 1023) << 20;
  } else {
    const bit = k + 1074;
    u32[0] = bit < 32 ? 1 << bit : 0;
    u32[1] = bit >= 32 ? 1 << (bit - 32) : 0;
  }
  return f64[0]!;
}

/** The double nearest to u × 2^-1074 (ties to even), u ≥ 0. */
export function unitsToNumber(u: bigint): number {
  if (u < 1n << 53n) return Number(u) * Number.MIN_VALUE;
  const sh = u.toString(2).length - 53;
  let m = u >> BigInt(sh);
  const rem = u & ((1n << BigInt(sh)) - 1n);
  const half = 1n << BigInt(sh - 1);
  if (rem > half || (rem === half && (m & 1n) === 1n)) m += 1n;
  return Number(m) * pow2(sh - 1074);
}

/**
 * An exact running sum of doubles (Shewchuk's non-overlapping partials, as Python's math.fsum keeps
 * them): a few float operations per value, turned into 2^-1074 units once at the end.
 */
export class ExactSum {
  private readonly partials: number[] = [];

  add(x: number): void {
    const p = this.partials;
    let i = 0;
    for (let j = 0; j < p.length; j++) {
      let y = p[j]!;
      if (Math.abs(x) < Math.abs(y)) [x, y] = [y, x];
      const hi = x + y;
      const lo = y - (hi - x);
      if (lo !== 0) p[i++] = lo;
      x = hi;
    }
    p.length = i;
    p.push(x);
  }

  /** The sum as an integer count of 2^-1074 (the partials are non-negative sums of non-negative values but for rounding terms). */
  units(): bigint {
    let u = 0n;
    for (const x of this.partials) u += x < 0 ? -exactUnits(-x) : exactUnits(x);
    return u;
  }
}
