/**
 * attribution.ts `attribute` over packed inputs, in time linear in rows + touches: rows and touches
 * grouped by person index (counting sort), each person's rows in time order walked once against its
 * touches in time order (last touch: the latest touch at or before the row; first touch: the earliest
 * one at or after row − lookback). Amounts are integers in the reporting currency's minor units, so
 * the sums do not depend on order and every figure equals `attribute` over the same rows.
 */
import type { AttributionDimension, AttributionModel, AttributionRow } from './attribution.js';

export interface PackedAttributionRows {
  n: number;
  at: Float64Array;
  /** Integer minor units in the reporting currency; NaN without a rate (the row is left out, as in `attribute`). */
  value: Float64Array;
  payment: Uint8Array;
  /** Person index, -1 when the row has neither distinct nor anonymous id. */
  person: Int32Array;
}

export interface PackedTouches {
  /** Touches with a value for the dimension only. */
  n: number;
  ts: Float64Array;
  person: Int32Array;
  /** Index into `values` of each touch's value for the dimension. */
  valueId: Int32Array;
  values: readonly string[];
  /** Order of two touches at the same time (the order `attribute` receives them in). */
  tie: (a: number, b: number) => number;
}

/** Indexes with keep[i] grouped by person (counting sort): person p's are items[start[p] .. start[p+1]). */
function groupBy(n: number, persons: number, person: Int32Array, keep: Uint8Array | null): { start: Int32Array; items: Int32Array } {
  const start = new Int32Array(persons + 1);
  for (let i = 0; i < n; i++) if (!keep || keep[i]) start[person[i]! + 1]!++;
  for (let p = 0; p < persons; p++) start[p + 1]! += start[p]!;
  const fill = start.slice(0, persons);
  const items = new Int32Array(start[persons]!);
  for (let i = 0; i < n; i++) if (!keep || keep[i]) items[fill[person[i]!]!++] = i;
  return { start, items };
}

/** Insertion sort of items[a..b) by key (then `tie`): linear on the nearly sorted runs read in day order. */
function sortRun(items: Int32Array, a: number, b: number, key: Float64Array, tie: ((x: number, y: number) => number) | null): void {
  for (let i = a + 1; i < b; i++) {
    const v = items[i]!;
    const kv = key[v]!;
    let j = i - 1;
    while (j >= a) {
      const w = items[j]!;
      const kw = key[w]!;
      if (kw < kv || (kw === kv && (!tie || tie(w, v) <= 0))) break;
      items[j + 1] = w;
      j--;
    }
    items[j + 1] = v;
  }
}

export function attributePacked(
  rows: PackedAttributionRows,
  touches: PackedTouches,
  persons: number,
  opts: { model: AttributionModel; dimension: AttributionDimension; lookbackMs: number; maxTouchRows: number; round: (minor: number) => number },
): { rows: AttributionRow[]; truncated: boolean; total: number } {
  type Acc = { net: number; payments: number; people: number; last: number };
  const touchAcc: (Acc | undefined)[] = new Array(touches.values.length).fill(undefined);
  const direct: Acc = { net: 0, payments: 0, people: 0, last: -1 };
  const unlinked: Acc = { net: 0, payments: 0, people: 0, last: -1 };
  let total = 0;
  for (let i = 0; i < rows.n; i++) {
    const v = rows.value[i]!;
    if (Number.isNaN(v)) continue;
    total += v;
    if (rows.person[i]! < 0) {
      unlinked.net += v;
      unlinked.payments += rows.payment[i]!;
    }
  }
  const keep = new Uint8Array(rows.n);
  for (let i = 0; i < rows.n; i++) keep[i] = rows.person[i]! >= 0 && !Number.isNaN(rows.value[i]!) ? 1 : 0;
  const r = groupBy(rows.n, persons, rows.person, keep);
  const t = groupBy(touches.n, persons, touches.person, null);
  const L = opts.lookbackMs;
  for (let p = 0; p < persons; p++) {
    const r0 = r.start[p]!;
    const r1 = r.start[p + 1]!;
    if (r0 === r1) continue;
    sortRun(r.items, r0, r1, rows.at, null);
    const pr = r.items.subarray(r0, r1);
    sortRun(t.items, t.start[p]!, t.start[p + 1]!, touches.ts, touches.tie);
    const pt = t.items.subarray(t.start[p]!, t.start[p + 1]!);
    let j = 0; // last touch: first touch after the row; first touch: first touch not before row − lookback
    for (let k = 0; k < pr.length; k++) {
      const i = pr[k]!;
      const at = rows.at[i]!;
      let chosen = -1;
      if (opts.model === 'last_touch') {
        while (j < pt.length && touches.ts[pt[j]!]! <= at) j++;
        if (j > 0 && touches.ts[pt[j - 1]!]! >= at - L) chosen = pt[j - 1]!;
      } else {
        while (j < pt.length && touches.ts[pt[j]!]! < at - L) j++;
        if (j < pt.length && touches.ts[pt[j]!]! <= at) chosen = pt[j]!;
      }
      let acc: Acc;
      if (chosen >= 0) {
        const v = touches.valueId[chosen]!;
        acc = touchAcc[v] ??= { net: 0, payments: 0, people: 0, last: -1 };
      } else acc = direct;
      if (acc.last !== p) {
        acc.last = p;
        acc.people++;
      }
      acc.net += rows.value[i]!;
      acc.payments += rows.payment[i]!;
    }
  }
  const share = (net: number) => (total > 0 ? Math.round((net / total) * 10000) / 100 : 0);
  const out = (value: string | null, kind: AttributionRow['kind'], a: Acc): AttributionRow => ({ value, kind, net: opts.round(a.net), share: share(a.net), payments: a.payments, people: a.people });
  const used: [string, Acc][] = [];
  touchAcc.forEach((a, v) => a && used.push([touches.values[v]!, a]));
  const touchRows = used.sort((x, y) => y[1].net - x[1].net || (x[0] < y[0] ? -1 : 1)).map(([v, a]) => out(v, 'touch', a));
  const truncated = touchRows.length > opts.maxTouchRows;
  const result = touchRows.slice(0, opts.maxTouchRows);
  if (direct.payments || direct.net || direct.people) result.push(out(null, 'direct', direct));
  if (unlinked.payments || unlinked.net) result.push(out(null, 'unlinked', unlinked));
  return { rows: result, truncated, total: opts.round(total) };
}
