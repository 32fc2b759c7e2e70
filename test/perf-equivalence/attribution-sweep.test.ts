/**
 * The time-ordered attribution sweep (attribution-fast.ts `attributePacked`) answers what `attribute`
 * (attribution.ts) answers, on randomized data:
 *  - packed inputs built directly: many persons, rows and touches at equal times (ties between touches
 *    of one person broken by the tie order), rows without a person (unlinked) or without a rate (NaN),
 *    refunds (negative values), inputs nearly sorted (as read in day order, with late appends) and far
 *    from sorted; both models, every lookback edge;
 *  - a store: ledger rows written first, touches captured afterwards with earlier timestamps (late
 *    touches), $identify and $create_alias merges after both, voided and re-sent rows, several
 *    currencies; the operation's path (packed day rows, packed touch days, the sweep) against the
 *    straightforward reads (attributableRows, touchesByPerson, `attribute`) for both models, every
 *    dimension and the 1, 30 and 365-day lookbacks;
 *  - every fast read reuses one Scratch (as the operation does), so nothing left there by a read leaks
 *    into the next;
 *  - the decoded days the revenue repository keeps across reads (migration 048 versions): after voids,
 *    re-sent rows with another amount or currency, late rows, a day emptied and written again, a
 *    currency change, merges, a rolled-back write read inside its transaction and a write from another
 *    connection, on days kept by earlier reads; lookbacks 1, 7, 30, 365 days, range edges ±1 ms.
 */
import { mkdtempSync, rmSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { afterAll, describe, expect, it } from 'vitest';
import { attribute, type AttributableRow, type AttributionModel, type Touch } from '../../src/domain/revenue/attribution.js';
import { attributePacked, Scratch, timeOrder, type PackedAttributionRows, type PackedTouches } from '../../src/domain/revenue/attribution-fast.js';
import { openDatabase } from '../../src/storage/db.js';
import { createRevenueRepo } from '../../src/storage/revenue-repo.js';
import { createAnalyticsRepo } from '../../src/storage/analytics-repo.js';
import { reportingMinorOf, toMajor } from '../../src/domain/revenue/fx.js';
import { toLedgerRow, type LedgerRow, type LedgerType } from '../../src/domain/revenue/ledger.js';
import { normalizeCaptureEvent, type CaptureEvent } from '../../src/domain/analytics/capture.js';

const DAY = 86_400_000;
let seed = 11;
const rnd = () => (seed = (seed * 1103515245 + 12345) % 2 ** 31) / 2 ** 31;
const int = (n: number) => Math.floor(rnd() * n);
const pick = <T,>(xs: readonly T[]) => xs[int(xs.length)]!;
/** One set of reused arrays for every fast read below, as the operation keeps one: nothing a read leaves there may leak into the next. */
const scratch = new Scratch();

/** Random packed inputs and the same data as `attribute` takes it (touch values for one dimension). */
function randomInputs(sorted: 'day' | 'shuffled') {
  const persons = 1 + int(60);
  const span = (1 + int(20)) * DAY;
  // Coarse times (whole hours) so rows and touches often share a timestamp.
  const time = () => int(span / 3_600_000) * 3_600_000;
  const values = ['google', 'mail', 'x', 'bing', 'news'].slice(0, 1 + int(5));
  const nt = int(400);
  const touchList = Array.from({ length: nt }, () => ({ ts: time(), person: int(persons), valueId: int(values.length), tieKey: int(4) }));
  const nr = int(500);
  const rowList = Array.from({ length: nr }, () => ({
    at: time(),
    value: rnd() < 0.05 ? NaN : (rnd() < 0.2 ? -1 : 1) * int(10_000),
    payment: rnd() < 0.7 ? 1 : 0,
    person: rnd() < 0.15 ? -1 : int(persons),
  }));
  const order = <T extends { at?: number; ts?: number }>(l: T[]) => {
    const k = (x: T) => x.at ?? x.ts!;
    if (sorted === 'shuffled') return l;
    // Day order with the rows of a day in arrival order, a few late ones appended out of order.
    return l.sort((a, b) => Math.floor(k(a) / DAY) - Math.floor(k(b) / DAY) || (rnd() < 0.1 ? 1 : k(a) - k(b)));
  };
  order(touchList);
  order(rowList);
  const rows: PackedAttributionRows = {
    n: nr,
    at: Float64Array.from(rowList, (r) => r.at),
    value: Float64Array.from(rowList, (r) => r.value),
    payment: Uint8Array.from(rowList, (r) => r.payment),
    person: Int32Array.from(rowList, (r) => r.person),
  };
  const tieCmp = (a: number, b: number) => touchList[a]!.tieKey - touchList[b]!.tieKey;
  const touches: PackedTouches = {
    n: nt,
    ts: Float64Array.from(touchList, (t) => t.ts),
    person: Int32Array.from(touchList, (t) => t.person),
    valueId: Int32Array.from(touchList, (t) => t.valueId),
    values,
    tie: tieCmp,
  };
  // The reference: each person's touches sorted by (time, tie order), stable in input order.
  const byPerson = new Map<string, Touch[]>();
  const idx = touchList.map((_, i) => i).sort((a, b) => touchList[a]!.ts - touchList[b]!.ts || tieCmp(a, b) || a - b);
  for (const i of idx) {
    const t = touchList[i]!;
    const l = byPerson.get(`p${t.person}`) ?? [];
    l.push({ ts: t.ts, source: values[t.valueId]!, medium: null, campaign: null });
    byPerson.set(`p${t.person}`, l);
  }
  const attributable: AttributableRow[] = rowList.map((r) => ({
    type: r.payment ? 'payment' : 'refund',
    value: Number.isNaN(r.value) ? null : r.value,
    occurred_at: r.at,
    person: r.person < 0 ? null : `p${r.person}`,
  }));
  return { rows, touches, persons, span, attributable, byPerson };
}

describe('attribution sweep', () => {
  it('timeOrder is a stable sort by key, nearly sorted or not', () => {
    for (let k = 0; k < 200; k++) {
      const n = int(300);
      const near = rnd() < 0.5;
      const key = Float64Array.from({ length: n }, (_, i) => (near ? Math.floor(i / 10) * 10 + int(12) : int(50)));
      const keep = rnd() < 0.5 ? Uint8Array.from({ length: n }, () => (rnd() < 0.8 ? 1 : 0)) : null;
      const want = [...Array(n).keys()].filter((i) => !keep || keep[i]).sort((a, b) => key[a]! - key[b]! || a - b);
      expect([...timeOrder(n, key, keep)]).toEqual(want);
      expect([...timeOrder(n, key, keep, scratch)]).toEqual(want);
    }
  });

  it('equals attribute on random packed inputs (both models, lookback edges, ties, unlinked, no rate, refunds)', () => {
    for (let k = 0; k < 300; k++) {
      const inp = randomInputs(k % 3 === 0 ? 'shuffled' : 'day');
      for (const model of ['first_touch', 'last_touch'] as AttributionModel[]) {
        for (const lookbackMs of [0, 3_600_000, DAY, 3 * DAY + 3_600_000, inp.span]) {
          const opts = { model, dimension: 'source' as const, lookbackMs, maxTouchRows: 1 + int(5), round: (v: number) => v / 100 };
          const fast = attributePacked(inp.rows, inp.touches, inp.persons, opts, scratch);
          const want = attribute(inp.attributable, (p) => inp.byPerson.get(p) ?? [], opts);
          expect(fast, `case ${k} ${model} ${lookbackMs}`).toEqual(want);
        }
      }
    }
  });

  describe('over a store with late touches and merges', () => {
    const dir = mkdtempSync(join(tmpdir(), 'sightline-attr-sweep-'));
    const db = openDatabase(join(dir, 'a.db'));
    afterAll(() => {
      db.close();
      rmSync(dir, { recursive: true, force: true });
    });
    const revenue = createRevenueRepo(db);
    const analytics = createAnalyticsRepo(db);
    const pid = '1';
    const T0 = Date.parse('2026-01-01T00:00:00Z');
    const NOW = T0 + 400 * DAY;
    const USERS = 120;
    let n = 0;
    const written: LedgerRow[] = [];

    function ledger(count: number) {
      const rows: LedgerRow[] = [];
      for (let i = 0; i < count; i++) {
        const r = rnd();
        if (written.length && r < 0.1) rows.push({ ...pick(written), status: 'voided' });
        else if (written.length && r < 0.2) rows.push({ ...pick(written), amount: 1 + int(50_000), currency: pick(['USD', 'EUR', 'JPY', 'XXX']) });
        else {
          const u = int(USERS);
          const link = rnd();
          rows.push(
            toLedgerRow(
              {
                id: `l-${n++}`,
                type: pick(['payment', 'payment', 'payment', 'refund', 'dispute', 'dispute_reversal'] as LedgerType[]),
                amount: 1 + int(50_000),
                currency: pick(['USD', 'USD', 'EUR', 'GBP', 'JPY', 'XXX']),
                occurred_at: T0 + int(390 * 24) * 3_600_000,
                ...(link < 0.45 ? { distinct_id: `user-${u}` } : link < 0.75 ? { anonymous_id: `anon-${u}` } : link < 0.85 ? { distinct_id: `alias-${u}`, anonymous_id: `anon-${u}` } : {}),
              },
              'api',
            ),
          );
        }
      }
      written.push(...rows);
      db.transaction(() => revenue.writeLedger(pid, rows, NOW))();
    }

    /** Pageviews at random earlier times (late: after the rows they may credit), some merges among them. */
    function capture(count: number, mergeShare: number) {
      const events: CaptureEvent[] = [];
      for (let i = 0; i < count; i++) {
        const u = int(USERS);
        const ts = T0 - 40 * DAY + int(430 * 24) * 3_600_000;
        const r = rnd();
        const e =
          r < mergeShare / 2
            ? { event: '$identify', distinct_id: `user-${u}`, properties: { $anon_distinct_id: `anon-${pick([u, int(USERS)])}` }, timestamp: new Date(ts).toISOString() }
            : r < mergeShare
              ? { event: '$create_alias', distinct_id: `user-${u}`, properties: { alias: `alias-${pick([u, int(USERS)])}` }, timestamp: new Date(ts).toISOString() }
              : {
                  event: '$pageview',
                  distinct_id: pick([`user-${u}`, `anon-${u}`, `alias-${u}`]),
                  properties: {
                    $current_url: `https://shop.example/p${rnd() < 0.7 ? `?utm_source=${pick(['google', 'mail', 'x'])}${rnd() < 0.6 ? `&utm_medium=${pick(['cpc', 'email'])}` : ''}${rnd() < 0.5 ? `&utm_campaign=c${int(3)}` : ''}` : ''}`,
                    ...(rnd() < 0.2 ? { $referrer: 'https://news.example/a' } : {}),
                  },
                  uuid: `00000000-0000-4000-8000-${String(n++).padStart(12, '0')}`,
                  timestamp: new Date(ts).toISOString(),
                };
      for (const ev of [normalizeCaptureEvent(e, null, NOW)]) if (ev) events.push(ev);
      }
      db.transaction(() => analytics.ingest(pid, events, NOW))();
    }

    function compare(from: number, to: number, cur: string, lookbacks: readonly number[] = [1, 30, 365]) {
      for (const lookbackDays of lookbacks) {
        const lookbackMs = lookbackDays * DAY;
        for (const model of ['first_touch', 'last_touch'] as const) {
          for (const dimension of ['source', 'medium', 'campaign'] as const) {
            const opts = { model, dimension, lookbackMs, maxTouchRows: 2, round: (v: number) => toMajor(v, cur) };
            const missing = new Set<string>();
            const { rows } = revenue.packedRows(pid, from, to, cur, missing, scratch);
            const touches = analytics.packedTouches(pid, from - lookbackMs, to, dimension, scratch);
            let persons = 0;
            for (let i = 0; i < rows.n; i++) persons = Math.max(persons, rows.person[i]! + 1);
            for (let i = 0; i < touches.n; i++) persons = Math.max(persons, touches.person[i]! + 1);
            const fast = attributePacked(rows, touches, persons, opts, scratch);
            const byPerson = analytics.touchesByPerson(pid, from - lookbackMs, to);
            const want = attribute(revenue.attributableRows(pid, from, to, reportingMinorOf(cur), new Set()), (p) => byPerson.get(p) ?? [], opts);
            expect(fast, `${model} ${dimension} ${lookbackDays}d ${cur}`).toEqual(want);
          }
        }
      }
    }

    it('equals the straightforward reads before and after late touches and merges', () => {
      capture(1500, 0);
      ledger(1500);
      compare(T0, T0 + 390 * DAY, 'USD');
      // Late touches: captured after the rows, timed before them; then merges of ids that hold rows.
      capture(1500, 0);
      compare(T0 + 5 * DAY + 7, T0 + 365 * DAY, 'USD');
      capture(400, 0.5);
      ledger(400);
      compare(T0, T0 + 390 * DAY, 'USD');
      compare(T0 + 100 * DAY, T0 + 130 * DAY + 1, 'EUR');
      // The data holds every kind.
      const { rows } = revenue.packedRows(pid, T0, T0 + 390 * DAY, 'USD', new Set());
      const touches = analytics.packedTouches(pid, T0 - 30 * DAY, T0 + 390 * DAY, 'source');
      const kinds = new Set(attributePacked(rows, touches, 100_000, { model: 'last_touch', dimension: 'source', lookbackMs: 30 * DAY, maxTouchRows: 100, round: (v) => v }).rows.map((r) => r.kind));
      expect(kinds).toEqual(new Set(['touch', 'direct', 'unlinked']));
    });

    /** Rows of the ledger as last written, posted ones on the days in [from, to). */
    const postedIn = (from: number, to: number) => {
      const last = new Map<string, LedgerRow>();
      for (const r of written) last.set(r.id, r);
      return [...last.values()].filter((r) => r.status === 'posted' && r.occurred_at >= from && r.occurred_at < to);
    };
    const write = (rows: LedgerRow[]) => {
      written.push(...rows);
      db.transaction(() => revenue.writeLedger(pid, rows, NOW))();
    };
    const version = (day: number) => db.prepare('SELECT ver FROM revenue_day_versions WHERE project_id = ? AND day = ?').pluck().get(Number(pid), day) as number | undefined;

    it('decoded days kept across reads (migration 048) follow every change to their day', () => {
      // Days 100–160 read (and kept) first, then each change below hits days already kept; each
      // read after it must see the change, as the straightforward reads do.
      const A = T0 + 100 * DAY;
      const B = T0 + 160 * DAY;
      compare(A, B, 'USD', [1, 7, 30, 365]);
      // A voided row, a row re-sent with another amount (the day keeps its row count), a late row
      // appended to a kept day, each on days the reads above kept.
      const some = postedIn(A + DAY, B - DAY);
      const day = Math.floor(some[0]!.occurred_at / DAY) * DAY;
      const v0 = version(day)!;
      write([{ ...some[0]!, status: 'voided' }]);
      expect(version(day)).toBe(v0 + 1);
      compare(A, B, 'USD', [30]);
      write([{ ...some[1]!, amount: some[1]!.amount + 1 }, { ...some[2]!, currency: some[2]!.currency === 'EUR' ? 'GBP' : 'EUR' }]);
      compare(A, B, 'USD', [7]);
      write([toLedgerRow({ id: `late-${n++}`, type: 'payment', amount: 4321, currency: 'USD', occurred_at: A + 20 * DAY + 5, distinct_id: 'user-1' }, 'api')]);
      compare(A, B, 'USD', [1]);
      // Every row of a kept day voided (the day's blob is dropped), then a new row on it: its
      // version never goes back, so nothing decoded before is taken for the new content.
      const emptied = A + 30 * DAY;
      const before = version(emptied) ?? 0;
      write(postedIn(emptied, emptied + DAY).map((r) => ({ ...r, status: 'voided' as const })));
      compare(A, B, 'USD', [30]);
      write([toLedgerRow({ id: `late-${n++}`, type: 'payment', amount: 777, currency: 'USD', occurred_at: emptied + 3_600_000, anonymous_id: 'anon-2' }, 'api')]);
      expect(version(emptied)!).toBeGreaterThan(before + 1);
      compare(A, B, 'USD', [30]);
      // Another reporting currency over the same kept days, then back; the project setting changed too.
      compare(A, B, 'EUR', [30]);
      compare(A, B, 'USD', [30]);
      db.transaction(() => revenue.setCurrency(pid, 'EUR', NOW))();
      compare(A, B, 'EUR', [7]);
      db.transaction(() => revenue.setCurrency(pid, 'USD', NOW))();
      compare(A, B, 'USD', [7]);
      // Merges after the days were kept (persons move), late touches on them.
      capture(300, 0.6);
      compare(A, B, 'USD', [1, 7, 30, 365]);
      // Range edges ±1 ms around day boundaries (edge days are decoded from their blobs).
      for (const dFrom of [-1, 0, 1]) for (const dTo of [-1, 0, 1]) compare(A + 5 * DAY + dFrom, B - 5 * DAY + dTo, 'USD', [7]);
      // A write read inside its transaction and rolled back: the days read there are not kept.
      const gone = postedIn(A + 40 * DAY, A + 41 * DAY);
      expect(() =>
        db.transaction(() => {
          revenue.writeLedger(pid, gone.map((r) => ({ ...r, status: 'voided' as const })), NOW);
          revenue.packedRows(pid, A, B, 'USD', new Set(), scratch);
          throw new Error('roll back');
        })(),
      ).toThrow('roll back');
      compare(A, B, 'USD', [30]);
      // A second connection (as another process) writes: this repository's kept days follow.
      const other = openDatabase(join(dir, 'a.db'));
      const rows = postedIn(A + 50 * DAY, A + 52 * DAY).slice(0, 3);
      const changed = [{ ...rows[0]!, status: 'voided' as const }, ...rows.slice(1).map((r) => ({ ...r, amount: r.amount * 2 }))];
      written.push(...changed);
      other.transaction(() => createRevenueRepo(other).writeLedger(pid, changed, NOW))();
      other.close();
      compare(A, B, 'USD', [30]);
    });
  });
});
