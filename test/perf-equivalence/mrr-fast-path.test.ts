/**
 * computeMrr walks states that arrive grouped by subscription in place and sorts changes by index:
 * on randomized states (grouped as the repository reads them, and shuffled) it gives bit-for-bit
 * what the straightforward version below (group in a map, sort change objects) gives.
 */
import { describe, expect, it } from 'vitest';
import { computeMrr, type MrrResult, type SubscriptionState } from '../../src/domain/revenue/mrr.js';
import { convertMinor } from '../../src/domain/revenue/fx.js';

/** The straightforward computation (the definition in src/domain/revenue/mrr.ts, unoptimized). */
function reference(states: readonly SubscriptionState[], range: { from: number; to: number }, points: readonly number[], convert: (m: number, c: string) => number | null): MrrResult {
  const missing = new Set<string>();
  const value = (s: SubscriptionState | undefined) => {
    if (!s || s.mrr <= 0) return 0;
    const f = convert(1, s.currency);
    if (f === null) return (missing.add(s.currency), 0);
    return s.mrr * f;
  };
  const bySub = new Map<string, SubscriptionState[]>();
  for (const s of states) bySub.set(s.id, [...(bySub.get(s.id) ?? []), s]);
  const mv = { new: 0, expansion: 0, contraction: 0, churn: 0, reactivation: 0 };
  let start = 0, end = 0, activeStart = 0, activeEnd = 0;
  const changes: { at: number; delta: number }[] = [];
  for (const list of bySub.values()) {
    list.sort((x, y) => x.effective_at - y.effective_at);
    let atStart: SubscriptionState | undefined, atEnd: SubscriptionState | undefined, paidBefore = false, prev = 0;
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
    const a = value(atStart), b = value(atEnd);
    start += a;
    end += b;
    if (a > 0) activeStart++;
    if (b > 0) activeEnd++;
    if (a === 0 && b > 0) paidBefore ? (mv.reactivation += b) : (mv.new += b);
    else if (a > 0 && b === 0) mv.churn += a;
    else if (b > a) mv.expansion += b - a;
    else if (a > b) mv.contraction += a - b;
  }
  changes.sort((x, y) => x.at - y.at);
  let level = 0, c = 0;
  const series = points.map((at) => {
    while (c < changes.length && changes[c]!.at <= at) level += changes[c++]!.delta;
    return { at, mrr: level };
  });
  return { start_mrr: start, end_mrr: end, movements: mv, series, subscriptions: { active_start: activeStart, active_end: activeEnd }, missing: [...missing].sort() };
}

let seed = 5;
const rnd = () => (seed = (seed * 1103515245 + 12345) % 2 ** 31) / 2 ** 31;
const int = (n: number) => Math.floor(rnd() * n);
const DAY = 86_400_000;
const T0 = Date.parse('2026-01-01T00:00:00Z');

function states(subs: number): SubscriptionState[] {
  const out: SubscriptionState[] = [];
  for (let i = 0; i < subs; i++) {
    // Coarse times so that different subscriptions often change at the same instant.
    let at = T0 + int(200) * DAY;
    for (let k = 0, n = 1 + int(5); k < n; k++, at += int(60) * DAY) {
      const mrr = rnd() < 0.25 ? 0 : (1 + int(300)) * (rnd() < 0.5 ? 100 : 333);
      out.push({ id: `sub-${String(i).padStart(5, '0')}`, status: mrr ? 'active' : 'canceled', mrr, currency: ['USD', 'EUR', 'GBP', 'JPY', 'XXX'][int(5)]!, effective_at: at });
    }
  }
  return out;
}

describe('computeMrr fast path', () => {
  it('equals the straightforward computation bit for bit, grouped or shuffled input', () => {
    for (let round = 0; round < 6; round++) {
      const grouped = states(1500);
      const shuffled = [...grouped];
      for (let i = shuffled.length - 1; i > 0; i--) {
        const j = int(i + 1);
        [shuffled[i], shuffled[j]] = [shuffled[j]!, shuffled[i]!];
      }
      const from = T0 + int(150) * DAY + int(DAY);
      const range = { from, to: from + (1 + int(120)) * DAY };
      const points = Array.from({ length: 40 }, (_, i) => Math.min(range.from + (i + 1) * 3 * DAY, range.to));
      const cur = ['USD', 'EUR', 'JPY'][round % 3]!;
      const convert = (m: number, c: string) => convertMinor(m, c, cur);
      for (const input of [grouped, shuffled]) {
        const fast = computeMrr(input, range, points, convert);
        const ref = reference(input, range, points, convert);
        expect(fast).toEqual(ref);
        expect([fast.start_mrr, fast.end_mrr, ...Object.values(fast.movements), ...fast.series.map((p) => p.mrr)].every((v, i) => Object.is(v, [ref.start_mrr, ref.end_mrr, ...Object.values(ref.movements), ...ref.series.map((p) => p.mrr)][i]))).toBe(true);
      }
    }
    expect(computeMrr([], { from: T0, to: T0 + DAY }, [T0 + DAY], () => 1)).toEqual(reference([], { from: T0, to: T0 + DAY }, [T0 + DAY], () => 1));
  });
});
