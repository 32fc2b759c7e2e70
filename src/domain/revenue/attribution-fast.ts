/**
 * attribution.ts `attribute` over packed inputs, in one sweep of rows and touches in time order (both
 * arrive in day order, so ordering them is nearly linear): touches enter per-person state as the sweep
 * passes them (last touch: the person's latest touch so far; first touch: the person's touches in
 * time order, dropped from the front once before row − lookback), and each row takes its touch from
 * its person's state. Rows and touches are read in array order, only the per-person state is read at
 * random, so the sweep stays in cache where grouping a million rows by person did not. Amounts are
 * integers in the reporting currency's minor units, so the sums do not depend on order and every
 * figure equals `attribute` over the same rows.
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

/**
 * Grow-only typed arrays reused from one read to the next: a 365-day read over a million ledger rows
 * would otherwise allocate some 60 MB of backing stores per read, and that external-memory pressure
 * costs a full garbage collection or two each time. An array handed out is a view that stays valid
 * until its slot is handed out again, and holds whatever the last read left there (callers write
 * before they read): use one Scratch per sequence of reads that never overlap, e.g. the operation's,
 * which runs synchronously. Without one, each call allocates fresh arrays.
 */
export class Scratch {
  private readonly slots = new Map<string, ArrayBuffer>();
  private buf(slot: string, bytes: number): ArrayBuffer {
    const b = this.slots.get(slot);
    if (b && b.byteLength >= bytes) return b;
    const grown = new ArrayBuffer(Math.max(bytes, Math.ceil((b?.byteLength ?? 0) * 1.25), 1024));
    this.slots.set(slot, grown);
    return grown;
  }
  f64(slot: string, n: number): Float64Array {
    return new Float64Array(this.buf(slot, n * 8), 0, n);
  }
  i32(slot: string, n: number): Int32Array {
    return new Int32Array(this.buf(slot, n * 4), 0, n);
  }
  u8(slot: string, n: number): Uint8Array {
    return new Uint8Array(this.buf(slot, n), 0, n);
  }
}

/** Fresh arrays per call (no reuse). */
export const noScratch = {
  f64: (_slot: string, n: number) => new Float64Array(n),
  i32: (_slot: string, n: number) => new Int32Array(n),
  u8: (_slot: string, n: number) => new Uint8Array(n),
};
export type ScratchArrays = Pick<Scratch, 'f64' | 'i32' | 'u8'>;

/**
 * Indexes of `keep` (all of 0..n-1 when null) in order of key, stable: an insertion sort, linear on
 * the day-ordered, nearly sorted inputs, with a comparison sort once it has moved more than a few
 * items per index (inputs far from sorted).
 */
export function timeOrder(n: number, key: Float64Array, keep: Uint8Array | null, scratch: ScratchArrays = noScratch, slot = 'order'): Int32Array {
  let m = 0;
  for (let i = 0; i < n; i++) if (!keep || keep[i]) m++;
  const ord = scratch.i32(slot, m);
  for (let i = 0, o = 0; i < n; i++) if (!keep || keep[i]) ord[o++] = i;
  let budget = 8 * m + 1024;
  for (let i = 1; i < m; i++) {
    const v = ord[i]!;
    const kv = key[v]!;
    let j = i - 1;
    while (j >= 0 && key[ord[j]!]! > kv) {
      ord[j + 1] = ord[j]!;
      j--;
      budget--;
    }
    ord[j + 1] = v;
    if (budget < 0) return ord.sort((a, b) => key[a]! - key[b]! || a - b);
  }
  return ord;
}

export function attributePacked(
  rows: PackedAttributionRows,
  touches: PackedTouches,
  persons: number,
  opts: { model: AttributionModel; dimension: AttributionDimension; lookbackMs: number; maxTouchRows: number; round: (minor: number) => number },
  scratch: ScratchArrays = noScratch,
): { rows: AttributionRow[]; truncated: boolean; total: number } {
  // Accumulators: one per touch value, then direct.
  const A = touches.values.length + 1;
  const DIRECT = A - 1;
  const net = new Float64Array(A);
  const payments = new Float64Array(A);
  const people = new Float64Array(A);
  let total = 0;
  let unlinkedNet = 0;
  let unlinkedPayments = 0;
  const keep = scratch.u8('sweep.keep', rows.n);
  for (let i = 0; i < rows.n; i++) {
    const v = rows.value[i]!;
    keep[i] = 0;
    if (Number.isNaN(v)) continue;
    total += v;
    if (rows.person[i]! < 0) {
      unlinkedNet += v;
      unlinkedPayments += rows.payment[i]!;
    } else keep[i] = 1;
  }
  const ro = timeOrder(rows.n, rows.at, keep, scratch, 'sweep.rows');
  const to = timeOrder(touches.n, touches.ts, null, scratch, 'sweep.touches');
  const ts = touches.ts;
  const tp = touches.person;
  const tie = touches.tie;
  const last = opts.model === 'last_touch';
  // Last touch: the person's latest touch entered so far (the last in (time, tie) order).
  // First touch: the person's entered touches in (time, tie) order as a linked list, head first.
  // Per person, four int32 side by side (one cache line for a row's look-ups): head, tail, first node
  // of the accumulators the person is counted in, and the last of those counted in.
  const st = scratch.i32('sweep.state', persons * 4).fill(-1);
  const next = last ? st : scratch.i32('sweep.next', touches.n);
  // Last touch: the latest is both head and tail.
  const TAIL = last ? 0 : 1;
  const nodeAcc = scratch.i32('sweep.nodeAcc', ro.length);
  const nodeNext = scratch.i32('sweep.nodeNext', ro.length);
  let nodes = 0;
  const L = opts.lookbackMs;
  let j = 0;
  for (let k = 0; k < ro.length; k++) {
    const i = ro[k]!;
    const at = rows.at[i]!;
    for (; j < to.length && ts[to[j]!]! <= at; j++) {
      const t = to[j]!;
      const p = tp[t]!;
      const q = st[p * 4 + TAIL]!;
      if (last) {
        if (q < 0 || ts[q]! < ts[t]! || tie(q, t) <= 0) st[p * 4] = t;
      } else if (q < 0) {
        st[p * 4] = st[p * 4 + 1] = t;
        next[t] = -1;
      } else if (ts[q]! < ts[t]! || tie(q, t) <= 0) {
        next[q] = t;
        next[t] = -1;
        st[p * 4 + 1] = t;
      } else {
        // Same time as the tail but before it in tie order: in place among the touches of that time.
        let prev = -1;
        let x = st[p * 4]!;
        while (ts[x]! < ts[t]! || tie(x, t) <= 0) {
          prev = x;
          x = next[x]!;
        }
        next[t] = x;
        if (prev < 0) st[p * 4] = t;
        else next[prev] = t;
      }
    }
    const p = rows.person[i]!;
    let chosen = st[p * 4]!;
    if (last) {
      if (chosen >= 0 && ts[chosen]! < at - L) chosen = -1;
    } else {
      while (chosen >= 0 && ts[chosen]! < at - L) chosen = next[chosen]!;
      st[p * 4] = chosen;
      if (chosen < 0) st[p * 4 + 1] = -1;
    }
    const a = chosen >= 0 ? touches.valueId[chosen]! : DIRECT;
    if (st[p * 4 + 3] !== a) {
      st[p * 4 + 3] = a;
      let x = st[p * 4 + 2]!;
      while (x >= 0 && nodeAcc[x] !== a) x = nodeNext[x]!;
      if (x < 0) {
        nodeAcc[nodes] = a;
        nodeNext[nodes] = st[p * 4 + 2]!;
        st[p * 4 + 2] = nodes++;
        people[a]!++;
      }
    }
    net[a]! += rows.value[i]!;
    payments[a]! += rows.payment[i]!;
  }
  const share = (n: number) => (total > 0 ? Math.round((n / total) * 10000) / 100 : 0);
  const out = (value: string | null, kind: AttributionRow['kind'], n: number, pay: number, ppl: number): AttributionRow => ({ value, kind, net: opts.round(n), share: share(n), payments: pay, people: ppl });
  const used: number[] = [];
  for (let v = 0; v < DIRECT; v++) if (people[v]! > 0) used.push(v);
  const names = touches.values;
  const touchRows = used.sort((x, y) => net[y]! - net[x]! || (names[x]! < names[y]! ? -1 : 1)).map((v) => out(names[v]!, 'touch', net[v]!, payments[v]!, people[v]!));
  const truncated = touchRows.length > opts.maxTouchRows;
  const result = touchRows.slice(0, opts.maxTouchRows);
  if (payments[DIRECT] || net[DIRECT] || people[DIRECT]) result.push(out(null, 'direct', net[DIRECT]!, payments[DIRECT]!, people[DIRECT]!));
  if (unlinkedPayments || unlinkedNet) result.push(out(null, 'unlinked', unlinkedNet, unlinkedPayments, 0));
  return { rows: result, truncated, total: opts.round(total) };
}
