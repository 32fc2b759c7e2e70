/**
 * MRR from kept subscription states (spec: "Each state is kept, so MRR movements work for any range").
 *
 * A subscription's MRR at time T is the `mrr` of its latest state with `effective_at` <= T (0 before
 * its first state). Movements compare each subscription's MRR at the range start (a) and end (b):
 *   new          a = 0, b > 0, and it never had MRR > 0 before the start  → + b
 *   reactivation a = 0, b > 0, and it had MRR > 0 at some time before     → + b
 *   expansion    0 < a < b                                                → + (b − a)
 *   contraction  0 < b < a                                                → + (a − b)
 *   churn        a > 0, b = 0                                             → + a
 * so end = start + new + reactivation + expansion − contraction − churn, per subscription and in total.
 * Amounts are converted to the reporting currency per subscription; a currency without a rate is
 * left out and listed as missing.
 */
export interface SubscriptionState {
  id: string;
  status: string;
  /** Monthly amount in the smallest unit of `currency`; 0 when not paying. */
  mrr: number;
  currency: string;
  effective_at: number;
}

export interface MrrMovements {
  new: number;
  expansion: number;
  contraction: number;
  churn: number;
  reactivation: number;
}

export interface MrrResult {
  start_mrr: number;
  end_mrr: number;
  movements: MrrMovements;
  series: { at: number; mrr: number }[];
  subscriptions: { active_start: number; active_end: number };
  missing: string[];
}

export function computeMrr(
  states: readonly SubscriptionState[],
  range: { from: number; to: number },
  seriesPoints: readonly number[],
  convert: (minor: number, currency: string) => number | null,
): MrrResult {
  // Conversion is linear: one factor per currency (null without a rate).
  const factors = new Map<string, number | null>();
  const missing = new Set<string>();
  const value = (s: SubscriptionState | undefined): number => {
    if (!s || s.mrr <= 0) return 0;
    let f = factors.get(s.currency);
    if (f === undefined) factors.set(s.currency, (f = convert(1, s.currency)));
    if (f === null) {
      missing.add(s.currency);
      return 0;
    }
    return s.mrr * f;
  };
  // Group by subscription (states ordered by time; for equal times the later one in input wins).
  const bySub = new Map<string, SubscriptionState[]>();
  for (const s of states) {
    const l = bySub.get(s.id);
    if (l) l.push(s);
    else bySub.set(s.id, [s]);
  }
  const mv: MrrMovements = { new: 0, expansion: 0, contraction: 0, churn: 0, reactivation: 0 };
  let start = 0;
  let end = 0;
  let activeStart = 0;
  let activeEnd = 0;
  // Series by a sweep over value changes: (time, delta) for every state.
  const changes: { at: number; delta: number }[] = [];
  for (const list of bySub.values()) {
    if (list.length > 1) list.sort((x, y) => x.effective_at - y.effective_at);
    let atStart: SubscriptionState | undefined;
    let atEnd: SubscriptionState | undefined;
    let paidBefore = false;
    let prev = 0;
    for (const s of list) {
      if (s.effective_at <= range.from) {
        if (atStart && atStart.mrr > 0) paidBefore = true;
        atStart = s;
      }
      if (s.effective_at <= range.to) atEnd = s;
      const v = value(s);
      if (v !== prev) changes.push({ at: s.effective_at, delta: v - prev });
      prev = v;
    }
    const a = value(atStart);
    const b = value(atEnd);
    start += a;
    end += b;
    if (a > 0) activeStart++;
    if (b > 0) activeEnd++;
    if (a === 0 && b > 0) {
      if (paidBefore) mv.reactivation += b;
      else mv.new += b;
    } else if (a > 0 && b === 0) mv.churn += a;
    else if (b > a) mv.expansion += b - a;
    else if (a > b) mv.contraction += a - b;
  }
  changes.sort((x, y) => x.at - y.at);
  const series: { at: number; mrr: number }[] = [];
  let level = 0;
  let c = 0;
  for (const at of seriesPoints) {
    while (c < changes.length && changes[c]!.at <= at) level += changes[c++]!.delta;
    series.push({ at, mrr: level });
  }
  return { start_mrr: start, end_mrr: end, movements: mv, series, subscriptions: { active_start: activeStart, active_end: activeEnd }, missing: [...missing].sort() };
}
