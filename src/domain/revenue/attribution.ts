/**
 * Attribution (spec, Revenue): each ledger row in range is credited to one value of a dimension
 * (source, medium or campaign) from the person's touches within the lookback before the row.
 *   touch     — the person has a touch with a value for the dimension in [occurred_at − lookback, occurred_at]:
 *               `first_touch` takes the earliest, `last_touch` the latest;
 *   direct    — the row names a person (distinct_id or anonymous_id) with no such touch;
 *   unlinked  — the row has neither distinct_id nor anonymous_id.
 * `net` sums signed amounts (refunds and disputes lower it), `share` is the percentage of the net
 * revenue in range, `payments` counts payment rows, `people` distinct persons. Touch rows come first,
 * ordered by net (descending), at most `maxTouchRows`; then direct and unlinked.
 */
export type AttributionModel = 'first_touch' | 'last_touch';
export type AttributionDimension = 'source' | 'medium' | 'campaign';

export interface Touch {
  ts: number;
  source: string | null;
  medium: string | null;
  campaign: string | null;
}

export interface AttributableRow {
  type: string;
  /** Signed amount already converted to the reporting currency, or null without a rate. */
  value: number | null;
  occurred_at: number;
  /** Person key (resolved person of distinct_id/anonymous_id), null when the row has neither. */
  person: string | null;
}

export interface AttributionRow {
  value: string | null;
  kind: 'touch' | 'direct' | 'unlinked';
  net: number;
  share: number;
  payments: number;
  people: number;
}

/** Pick the touch for one row from the person's touches sorted by time. */
export function pickTouch(touches: readonly Touch[], at: number, lookbackMs: number, model: AttributionModel, dim: AttributionDimension): Touch | null {
  let chosen: Touch | null = null;
  for (const t of touches) {
    if (t.ts > at) break;
    if (t.ts < at - lookbackMs || !t[dim]) continue;
    if (model === 'first_touch') return t;
    chosen = t;
  }
  return chosen;
}

export function attribute(
  rows: readonly AttributableRow[],
  touchesOf: (person: string) => readonly Touch[],
  opts: { model: AttributionModel; dimension: AttributionDimension; lookbackMs: number; maxTouchRows: number; round: (v: number) => number },
): { rows: AttributionRow[]; truncated: boolean; total: number } {
  type Acc = { net: number; payments: number; people: Set<string> };
  const touch = new Map<string, Acc>();
  const direct: Acc = { net: 0, payments: 0, people: new Set() };
  const unlinked: Acc = { net: 0, payments: 0, people: new Set() };
  let total = 0;
  for (const r of rows) {
    if (r.value === null) continue;
    total += r.value;
    let acc: Acc;
    if (r.person === null) acc = unlinked;
    else {
      const t = pickTouch(touchesOf(r.person), r.occurred_at, opts.lookbackMs, opts.model, opts.dimension);
      if (t) {
        const key = t[opts.dimension]!;
        acc = touch.get(key) ?? { net: 0, payments: 0, people: new Set() };
        touch.set(key, acc);
      } else acc = direct;
      acc.people.add(r.person);
    }
    acc.net += r.value;
    if (r.type === 'payment') acc.payments++;
  }
  const share = (net: number) => (total > 0 ? Math.round((net / total) * 10000) / 100 : 0);
  const out = (value: string | null, kind: AttributionRow['kind'], a: Acc): AttributionRow => ({
    value,
    kind,
    net: opts.round(a.net),
    share: share(a.net),
    payments: a.payments,
    people: a.people.size,
  });
  const touchRows = [...touch.entries()].sort((x, y) => y[1].net - x[1].net || (x[0] < y[0] ? -1 : 1)).map(([v, a]) => out(v, 'touch', a));
  const truncated = touchRows.length > opts.maxTouchRows;
  const result = touchRows.slice(0, opts.maxTouchRows);
  if (direct.payments || direct.net || direct.people.size) result.push(out(null, 'direct', direct));
  if (unlinked.payments || unlinked.net) result.push(out(null, 'unlinked', unlinked));
  return { rows: result, truncated, total: opts.round(total) };
}
