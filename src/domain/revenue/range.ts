/** Time ranges of the revenue reads (spec, Revenue: default last 30 days, at most 400 days). */
export const DAY_MS = 86_400_000;
export const DEFAULT_RANGE_DAYS = 30;
export const MAX_RANGE_DAYS = 400;

export type RangeProblem = { param: 'from' | 'to'; message: string };

export function resolveRange(fromMs: number | undefined, toMs: number | undefined, now: number): { from: number; to: number } | RangeProblem {
  const to = toMs ?? now;
  const from = fromMs ?? to - DEFAULT_RANGE_DAYS * DAY_MS;
  if (from >= to) return { param: 'from', message: '`from` must be before `to`.' };
  if (to - from > MAX_RANGE_DAYS * DAY_MS) return { param: 'from', message: `The range is longer than ${MAX_RANGE_DAYS} days; narrow \`from\`/\`to\`.` };
  return { from, to };
}

/** The period of equal length just before a range. */
export function previousRange(r: { from: number; to: number }): { from: number; to: number } {
  return { from: r.from - (r.to - r.from), to: r.from };
}

export type Interval = 'day' | 'week';

/** Day buckets up to 92 days, week buckets beyond (at most 58 points for 400 days). */
export function seriesInterval(r: { from: number; to: number }): Interval {
  return r.to - r.from <= 92 * DAY_MS ? 'day' : 'week';
}

/** Bucket starts covering [from, to): UTC midnights for days, 7-day steps from the first midnight for weeks. */
export function bucketStarts(r: { from: number; to: number }, interval: Interval): number[] {
  const step = interval === 'day' ? DAY_MS : 7 * DAY_MS;
  const first = Math.floor(r.from / DAY_MS) * DAY_MS;
  const out: number[] = [];
  for (let t = first; t < r.to; t += step) out.push(t);
  return out;
}

export function bucketIndex(ts: number, starts: readonly number[], interval: Interval): number {
  const step = interval === 'day' ? DAY_MS : 7 * DAY_MS;
  return Math.floor((ts - starts[0]!) / step);
}
