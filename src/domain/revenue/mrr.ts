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
  // Input in (id, effective_at) order — how the repository reads it — is used in place: runs of one id.
  const runs = groupedRuns(states) ?? regroup(states);
  const mv: MrrMovements = { new: 0, expansion: 0, contraction: 0, churn: 0, reactivation: 0 };
  let start = 0;
  let end = 0;
  let activeStart = 0;
  let activeEnd = 0;
  // Series by a sweep over value changes: (time, delta) for every state.
  const changeAt: number[] = [];
  const changeDelta: number[] = [];
  const { list, bounds } = runs;
  for (let g = 0; g + 1 < bounds.length; g++) {
    let atStart: SubscriptionState | undefined;
    let atEnd: SubscriptionState | undefined;
    let paidBefore = false;
    let prev = 0;
    for (let i = bounds[g]!; i < bounds[g + 1]!; i++) {
      const s = list[i]!;
      if (s.effective_at <= range.from) {
        if (atStart && atStart.mrr > 0) paidBefore = true;
        atStart = s;
      }
      if (s.effective_at <= range.to) atEnd = s;
      const v = value(s);
      if (v !== prev) {
        changeAt.push(s.effective_at);
        changeDelta.push(v - prev);
      }
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
  // Stable order by time (ties keep subscription order), as a stable sort of the change list would.
  const order = new Uint32Array(changeAt.length);
  for (let i = 0; i < order.length; i++) order[i] = i;
  order.sort((x, y) => changeAt[x]! - changeAt[y]! || x - y);
  const series: { at: number; mrr: number }[] = [];
  let level = 0;
  let c = 0;
  for (const at of seriesPoints) {
    while (c < order.length && changeAt[order[c]!]! <= at) level += changeDelta[order[c++]!]!;
    series.push({ at, mrr: level });
  }
  return { start_mrr: start, end_mrr: end, movements: mv, series, subscriptions: { active_start: activeStart, active_end: activeEnd }, missing: [...missing].sort() };
}

type Runs = { list: readonly SubscriptionState[]; bounds: number[] };

/** Run boundaries when every id's states are adjacent and in time order; null otherwise. */
function groupedRuns(states: readonly SubscriptionState[]): Runs | null {
  const bounds = [0];
  const seen = new Set<string>();
  for (let i = 1; i < states.length; i++) {
    const p = states[i - 1]!;
    const s = states[i]!;
    if (s.id === p.id) {
      if (s.effective_at < p.effective_at) return null;
      continue;
    }
    seen.add(p.id);
    if (seen.has(s.id)) return null;
    bounds.push(i);
  }
  if (states.length) bounds.push(states.length);
  else bounds.length = 0;
  return { list: states, bounds };
}

/** Any order: group by id in order of first appearance, each group stably sorted by time. */
function regroup(states: readonly SubscriptionState[]): Runs {
  const bySub = new Map<string, SubscriptionState[]>();
  for (const s of states) {
    const l = bySub.get(s.id);
    if (l) l.push(s);
    else bySub.set(s.id, [s]);
  }
  const list: SubscriptionState[] = [];
  const bounds = [0];
  for (const l of bySub.values()) {
    if (l.length > 1) l.sort((x, y) => x.effective_at - y.effective_at);
    list.push(...l);
    bounds.push(list.length);
  }
  if (!states.length) bounds.length = 0;
  return { list, bounds };
}
