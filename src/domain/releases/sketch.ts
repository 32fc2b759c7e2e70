/**
 * A mergeable latency sketch: log-scale buckets (the DDSketch mapping) with relative accuracy
 * ALPHA = 1%. A value v > MIN_MS lands in bucket i = ceil(log_γ v) with γ = (1 + α) / (1 − α); the
 * bucket's estimate 2γ^i / (γ + 1) is within α of every value in it, so a quantile read from the
 * sketch is within 1% (relative) of the exact nearest-rank quantile of the values it holds. Values
 * ≤ MIN_MS (10 µs) share one zero bucket and read back as 0. Two sketches merge by adding their
 * bucket counts, so per-minute sketches add up to any window exactly as if built from the raw values.
 *
 * Stored as JSON text: `{"<index>": count, "z": zeroCount}`.
 */
export const ALPHA = 0.01;
const GAMMA = (1 + ALPHA) / (1 - ALPHA);
const LOG_GAMMA = Math.log(GAMMA);
export const MIN_MS = 0.01;

/** Bucket index → count; the zero bucket is ZERO (stored as "z"). */
export type Sketch = Map<number, number>;
const ZERO = -Infinity;

export const newSketch = (): Sketch => new Map();

export function bucketOf(ms: number): number {
  if (!(ms > MIN_MS)) return ZERO;
  return Math.ceil(Math.log(ms) / LOG_GAMMA);
}

export function addValue(s: Sketch, ms: number, count = 1): void {
  const k = bucketOf(ms);
  s.set(k, (s.get(k) ?? 0) + count);
}

export function mergeInto(into: Sketch, from: Sketch): Sketch {
  for (const [k, n] of from) into.set(k, (into.get(k) ?? 0) + n);
  return into;
}

export function encodeSketch(s: Sketch): string {
  let out = '';
  for (const [k, n] of s) out += `${out ? ',' : ''}"${k === ZERO ? 'z' : k}":${n}`;
  return `{${out}}`;
}

export function decodeSketch(text: string | null | undefined): Sketch {
  const m: Sketch = new Map();
  if (!text) return m;
  for (const [k, n] of Object.entries(JSON.parse(text) as Record<string, number>)) m.set(k === 'z' ? ZERO : Number(k), n);
  return m;
}

/** Merge two encoded sketches (registered as an SQL function for the rollup upsert). */
export function mergeEncoded(a: string | null, b: string | null): string {
  return encodeSketch(mergeInto(decodeSketch(a), decodeSketch(b)));
}

export function countOf(s: Sketch): number {
  let n = 0;
  for (const c of s.values()) n += c;
  return n;
}

const estimate = (k: number): number => (k === ZERO ? 0 : (2 * Math.pow(GAMMA, k)) / (GAMMA + 1));

/**
 * Nearest-rank quantiles (q in (0, 1]): the value at rank ceil(q·n) in ascending order, estimated
 * within ALPHA. Null for an empty sketch.
 */
export function quantiles(s: Sketch, qs: readonly number[]): Array<number | null> {
  const n = countOf(s);
  if (n === 0) return qs.map(() => null);
  const keys = [...s.keys()].sort((a, b) => a - b);
  return qs.map((q) => {
    const rank = Math.max(1, Math.ceil(q * n));
    let seen = 0;
    for (const k of keys) {
      seen += s.get(k)!;
      if (seen >= rank) return estimate(k);
    }
    return estimate(keys[keys.length - 1]!);
  });
}
