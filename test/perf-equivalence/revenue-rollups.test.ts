/**
 * The write-time revenue rollups (migration 038) answer what the straightforward computation over the
 * ledger answers, on randomized data with re-sent, replaced and voided rows, identify merges, touches at
 * equal times, several reporting currencies and a reporting-currency change:
 *  - overview totals and series (converted daily rollup + ledger edges) equal the per-row-rounded
 *    amounts summed over every ledger row of the range;
 *  - paying customers from the packed day rows equal COUNT(DISTINCT customer_key) over the ledger;
 *  - attribution from packed rows and touches (attribution-fast.ts) equals `attribute` over rows and
 *    touches read straight from the tables, for both models, every dimension and several lookbacks;
 *  - migration 038's backfill builds the same rollups as the write path;
 *  - the packed touch days (migration 043) hold every touch of the table (its backfill builds the blobs
 *    the capture path appends), including touches exactly at a lookback edge, before and after merges.
 */
import { mkdtempSync, rmSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { afterAll, describe, expect, it } from 'vitest';
import { openDatabase } from '../../src/storage/db.js';
import { createRevenueRepo } from '../../src/storage/revenue-repo.js';
import { createAnalyticsRepo } from '../../src/storage/analytics-repo.js';
import { backfillRevenueRollups } from '../../src/storage/revenue-rollup.js';
import { backfillTouchDays } from '../../src/storage/touch-days.js';
import { m048RevenueDayVersions } from '../../src/storage/migrations/048-revenue-day-versions.js';
import { reportingMinorOf, toMajor } from '../../src/domain/revenue/fx.js';
import { attribute, type AttributableRow, type Touch } from '../../src/domain/revenue/attribution.js';
import { attributePacked } from '../../src/domain/revenue/attribution-fast.js';
import { toLedgerRow, type LedgerRow, type LedgerType } from '../../src/domain/revenue/ledger.js';
import { normalizeCaptureEvent, type CaptureEvent } from '../../src/domain/analytics/capture.js';

const dir = mkdtempSync(join(tmpdir(), 'sightline-rollup-eq-'));
const file = join(dir, 'eq.db');
const db = openDatabase(file);
afterAll(() => {
  db.close();
  rmSync(dir, { recursive: true, force: true });
});

const DAY = 86_400_000;
const T0 = Date.parse('2026-06-01T00:00:00Z');
let seed = 7;
const rnd = () => (seed = (seed * 1103515245 + 12345) % 2 ** 31) / 2 ** 31;
const int = (n: number) => Math.floor(rnd() * n);
const pick = <T,>(xs: readonly T[]) => xs[int(xs.length)]!;
const CURRENCIES = ['USD', 'EUR', 'GBP', 'JPY', 'KWD', 'XXX'];
const pid = '1';
const revenue = createRevenueRepo(db);
const analytics = createAnalyticsRepo(db);
const USERS = 200;
let n = 0;
const written: LedgerRow[] = [];

function capture(count: number, identifyShare: number) {
  const events: CaptureEvent[] = [];
  for (let i = 0; i < count; i++) {
    const u = int(USERS);
    // Minute-aligned times: several touches of one person share a timestamp.
    const ts = T0 - 30 * DAY + int(120 * 24 * 60) * 60_000;
    const e =
      rnd() < identifyShare
        ? { event: '$identify', distinct_id: `user-${u}`, properties: { $anon_distinct_id: `anon-${pick([u, u, int(USERS)])}` }, timestamp: new Date(ts).toISOString() }
        : {
            event: '$pageview',
            distinct_id: rnd() < 0.5 ? `user-${u}` : `anon-${u}`,
            properties: {
              $current_url: `https://shop.example/p${rnd() < 0.6 ? `?utm_source=${pick(['google', 'mail', 'x', 'bing'])}${rnd() < 0.7 ? `&utm_medium=${pick(['cpc', 'email'])}` : ''}${rnd() < 0.5 ? `&utm_campaign=c${int(4)}` : ''}` : ''}`,
              ...(rnd() < 0.2 ? { $referrer: `https://${pick(['news.example', 'blog.example'])}/a` } : {}),
            },
            uuid: `00000000-0000-4000-8000-${String(n++).padStart(12, '0')}`,
            timestamp: new Date(ts).toISOString(),
          };
    events.push(normalizeCaptureEvent(e, null, T0 + 100 * DAY)!);
  }
  db.transaction(() => analytics.ingest(pid, events, T0 + 100 * DAY))();
}

function ledgerRow(id: string): LedgerRow {
  const u = int(USERS);
  const link = rnd();
  return toLedgerRow(
    {
      id,
      type: pick(['payment', 'payment', 'payment', 'refund', 'dispute', 'dispute_reversal'] as LedgerType[]),
      amount: 1 + int(100_000),
      currency: pick(CURRENCIES),
      occurred_at: T0 + int(90 * 24 * 60) * 60_000,
      ...(rnd() < 0.7 ? { customer_id: `cus_${int(USERS)}` } : {}),
      ...(link < 0.5 ? { distinct_id: `user-${u}` } : link < 0.8 ? { anonymous_id: `anon-${u}` } : link < 0.9 ? { distinct_id: `nobody-${u}`, anonymous_id: `anon-${u}` } : {}),
      plan: pick(['pro', 'team', undefined]),
      status: rnd() < 0.05 ? 'voided' : 'posted',
    },
    'api',
  );
}

/**
 * Pageviews with a UTM source exactly at a ledger row's time, exactly `days` before it, and 1 ms
 * outside that, for persons of the row (its distinct or anonymous id): the lookback bounds are inclusive.
 */
function edgeTouches(days: readonly number[]) {
  const events: CaptureEvent[] = [];
  for (const r of written.slice(0, 60)) {
    const id = r.distinct_id ?? r.anonymous_id;
    if (!id) continue;
    for (const d of days) {
      for (const dt of [0, -1]) {
        const ts = r.occurred_at - d * DAY + dt;
        events.push(
          normalizeCaptureEvent(
            { event: '$pageview', distinct_id: id, properties: { $current_url: `https://shop.example/e?utm_source=edge${d}_${-dt}&utm_campaign=e${d}` }, uuid: `00000000-0000-4000-9000-${String(n++).padStart(12, '0')}`, timestamp: new Date(ts).toISOString() },
            null,
            T0 + 100 * DAY,
          )!,
        );
      }
    }
  }
  db.transaction(() => analytics.ingest(pid, events, T0 + 100 * DAY))();
}

/** New rows, plus re-sends of earlier ids: identical, changed (other day, amount, currency) or voided. */
function ledger(count: number) {
  const rows: LedgerRow[] = [];
  for (let i = 0; i < count; i++) {
    const r = rnd();
    if (written.length && r < 0.1) rows.push({ ...pick(written) });
    else if (written.length && r < 0.25) rows.push({ ...ledgerRow(pick(written).id) });
    else if (written.length && r < 0.3) rows.push({ ...pick(written), status: 'voided' });
    else rows.push(ledgerRow(`l-${n++}`));
  }
  written.push(...rows);
  db.transaction(() => revenue.writeLedger(pid, rows, T0 + 100 * DAY))();
}

const posted = (from: number, to: number) =>
  db
    .prepare(`SELECT type, amount, currency, occurred_at, COALESCE(plan, '') AS plan, distinct_id, anonymous_id, customer_key FROM revenue_events
      WHERE project_id = ? AND occurred_at >= ? AND occurred_at < ? AND status = 'posted'`)
    .all(Number(pid), from, to) as { type: LedgerType; amount: number; currency: string; occurred_at: number; plan: string; distinct_id: string | null; anonymous_id: string | null; customer_key: string | null }[];

function compareTotals(from: number, to: number, cur: string) {
  const rm = reportingMinorOf(cur);
  const want = new Map<string, { amount: number; n: number; converted: number | null }>();
  for (const r of posted(from, to)) {
    const k = `${r.currency}|${r.plan}|${r.type}`;
    const w = want.get(k) ?? { amount: 0, n: 0, converted: 0 };
    const v = rm(r.amount, r.currency);
    w.amount += r.amount;
    w.n++;
    w.converted = w.converted === null || v === null ? null : w.converted + v;
    want.set(k, w);
  }
  const got = new Map(revenue.totals(pid, from, to, cur).map((t) => [`${t.currency}|${t.plan}|${t.type}`, { amount: t.amount, n: t.n, converted: t.converted }]));
  expect(got).toEqual(new Map([...want].filter(([, w]) => w.n !== 0)));
  const day = (ts: number) => Math.floor((ts - Math.floor(from / DAY) * DAY) / DAY);
  const seriesWant = new Map<string, number>();
  for (const r of posted(from, to)) {
    const v = rm(r.amount, r.currency);
    if (v !== null) seriesWant.set(`${day(r.occurred_at)}|${r.type}`, (seriesWant.get(`${day(r.occurred_at)}|${r.type}`) ?? 0) + v);
  }
  const seriesGot = new Map<string, number>();
  for (const p of revenue.series(pid, from, to, cur, day)) if (p.converted !== null) seriesGot.set(`${p.bucket}|${p.type}`, (seriesGot.get(`${p.bucket}|${p.type}`) ?? 0) + p.converted);
  expect(new Map([...seriesGot].filter(([, v]) => v !== 0))).toEqual(new Map([...seriesWant].filter(([, v]) => v !== 0)));
  expect(revenue.customers(pid, from, to)).toBe(revenue.customersFromLedger(pid, from, to));
}

/** The straightforward attribution: rows and touches read from the tables, `attribute` row by row. */
function referenceAttribution(from: number, to: number, cur: string, lookbackMs: number, model: 'first_touch' | 'last_touch', dimension: 'source' | 'medium' | 'campaign') {
  const persons = new Map<string, string>();
  for (const r of db.prepare('SELECT distinct_id, person_id FROM analytics_distinct_ids WHERE project_id = ?').all(Number(pid)) as { distinct_id: string; person_id: number }[]) persons.set(r.distinct_id, `p:${r.person_id}`);
  const rm = reportingMinorOf(cur);
  const rows: AttributableRow[] = posted(from, to).map((r) => {
    const d = r.distinct_id;
    const a = r.anonymous_id;
    const person = (d !== null ? persons.get(d) : undefined) ?? (a !== null ? persons.get(a) : undefined) ?? (d !== null ? `d:${d}` : a !== null ? `d:${a}` : null);
    return { type: r.type, value: rm(r.amount, r.currency), occurred_at: r.occurred_at, person };
  });
  const touches = new Map<string, Touch[]>();
  for (const t of db
    .prepare('SELECT distinct_id, ts, source, medium, campaign FROM analytics_touches WHERE project_id = ? AND ts >= ? AND ts <= ? ORDER BY ts, distinct_id, source, medium, campaign')
    .all(Number(pid), from - lookbackMs, to) as { distinct_id: string; ts: number; source: string | null; medium: string | null; campaign: string | null }[]) {
    const key = persons.get(t.distinct_id) ?? `d:${t.distinct_id}`;
    const l = touches.get(key) ?? [];
    l.push({ ts: t.ts, source: t.source, medium: t.medium, campaign: t.campaign });
    touches.set(key, l);
  }
  return attribute(rows, (p) => touches.get(p) ?? [], { model, dimension, lookbackMs, maxTouchRows: 3, round: (v) => toMajor(v, cur) });
}

function compareAttribution(from: number, to: number, cur: string, repo = revenue, an = analytics) {
  for (const lookbackDays of [1, 7, 30, 365]) {
    for (const model of ['first_touch', 'last_touch'] as const) {
      for (const dimension of ['source', 'medium', 'campaign'] as const) {
        const lookbackMs = lookbackDays * DAY;
        const missing = new Set<string>();
        const { rows } = repo.packedRows(pid, from, to, cur, missing);
        const touches = an.packedTouches(pid, from - lookbackMs, to, dimension);
        let persons = 0;
        for (let i = 0; i < rows.n; i++) persons = Math.max(persons, rows.person[i]! + 1);
        for (let i = 0; i < touches.n; i++) persons = Math.max(persons, touches.person[i]! + 1);
        const fast = attributePacked(rows, touches, persons, { model, dimension, lookbackMs, maxTouchRows: 3, round: (v) => toMajor(v, cur) });
        expect(fast, `${model} ${dimension} ${lookbackDays}d ${cur}`).toEqual(referenceAttribution(from, to, cur, lookbackMs, model, dimension));
        const unrated = [...new Set(posted(from, to).map((r) => r.currency))].filter((c) => reportingMinorOf(cur)(1, c) === null);
        expect([...missing].sort()).toEqual(unrated.sort());
      }
    }
  }
}

type TouchRow = { ts: number; distinct_id: string; source: string | null; medium: string | null; campaign: string | null };

function attributionKinds(from: number, to: number): string[] {
  const { rows } = revenue.packedRows(pid, from, to, 'USD', new Set());
  const touches = analytics.packedTouches(pid, from - DAY, to, 'source');
  let persons = 0;
  for (let i = 0; i < rows.n; i++) persons = Math.max(persons, rows.person[i]! + 1);
  for (let i = 0; i < touches.n; i++) persons = Math.max(persons, touches.person[i]! + 1);
  return attributePacked(rows, touches, persons, { model: 'last_touch', dimension: 'source', lookbackMs: DAY, maxTouchRows: 100, round: (v) => v }).rows.map((r) => r.kind);
}

describe('revenue rollups', () => {
  it('totals, series, customers and attribution equal the straightforward computation over the ledger', () => {
    capture(3000, 0.03);
    ledger(1500);
    ledger(1500);
    compareTotals(T0, T0 + 90 * DAY, 'USD');
    compareTotals(T0 + 17 * DAY + 1234, T0 + 40 * DAY - 77, 'USD');
    compareTotals(T0 + 5 * DAY + 10, T0 + 5 * DAY + 20 * 3600_000, 'USD');
    compareAttribution(T0, T0 + 90 * DAY, 'USD');
    compareAttribution(T0 + 17 * DAY + 1234, T0 + 40 * DAY, 'USD');
    // Merges move ids between persons; more rows, re-sends and voids rebuild day blobs.
    capture(800, 0.5);
    ledger(800);
    compareTotals(T0 + 3 * DAY, T0 + 60 * DAY + 999, 'USD');
    compareAttribution(T0 + 3 * DAY, T0 + 60 * DAY + 999, 'USD');
    // Touches exactly at the row and at the lookback edges (and 1 ms past them), then merges of those ids.
    edgeTouches([0, 1, 7, 30]);
    compareAttribution(T0, T0 + 90 * DAY, 'USD');
    capture(400, 0.6);
    compareAttribution(T0 + 1, T0 + 90 * DAY, 'USD');
    // The fast read still sees direct and unlinked rows (the data above has both).
    const kinds = new Set(attributionKinds(T0, T0 + 90 * DAY));
    expect(kinds).toEqual(new Set(['touch', 'direct', 'unlinked']));
  });

  it('a new reporting currency recomputes the converted rollup; a read in another currency falls back to the ledger', () => {
    compareTotals(T0, T0 + 90 * DAY, 'EUR'); // rollup kept in USD: ledger fallback
    revenue.setCurrency(pid, 'JPY', T0 + 100 * DAY);
    ledger(300);
    compareTotals(T0, T0 + 90 * DAY, 'JPY');
    compareTotals(T0 + 2 * DAY + 5, T0 + 33 * DAY, 'JPY');
    compareAttribution(T0 + 2 * DAY + 5, T0 + 33 * DAY, 'JPY');
    revenue.setCurrency(pid, 'USD', T0 + 100 * DAY);
    compareTotals(T0, T0 + 90 * DAY, 'USD');
  });

  it("migration 038's backfill builds the rollups the write path keeps", () => {
    const before = {
      daily: db.prepare('SELECT * FROM revenue_daily WHERE n != 0 ORDER BY day, currency, plan, type').all(),
      days: db.prepare('SELECT day, n FROM revenue_day_rows ORDER BY day').all(),
    };
    const decoded = (repo: typeof revenue) => {
      const out: string[] = [];
      const ks = repo.keys(pid);
      repo.visitRows(pid, T0 - DAY, T0 + 91 * DAY, (at, type, amount, c, d, a, k) => out.push([at, type, amount, ks[c], ks[d] ?? '', ks[a] ?? '', ks[k] ?? ''].join('|')));
      return out.sort();
    };
    const rowsBefore = decoded(revenue);
    db.exec('UPDATE revenue_daily SET converted = NULL; DELETE FROM revenue_day_rows; DELETE FROM revenue_keys; DELETE FROM revenue_rollup_currency');
    // The packed touch days (migration 043) share the key ids: rebuilt after the keys, as migrations run.
    db.transaction(() => {
      backfillRevenueRollups(db);
      backfillTouchDays(db);
    })();
    expect(db.prepare('SELECT * FROM revenue_daily WHERE n != 0 ORDER BY day, currency, plan, type').all()).toEqual(before.daily);
    expect(db.prepare('SELECT day, n FROM revenue_day_rows ORDER BY day').all()).toEqual(before.days);
    // Another connection (as another process): both repositories on it share its person indexes.
    const other = openDatabase(file);
    const fresh = createRevenueRepo(other);
    expect(decoded(fresh)).toEqual(rowsBefore);
    compareAttribution(T0, T0 + 90 * DAY, 'USD', fresh, createAnalyticsRepo(other));
    other.close();
  });

  it("migration 043's backfill builds the touch day blobs the capture path appends", () => {
    const blobs = () => {
      const key = new Map((db.prepare('SELECT id, key FROM revenue_keys WHERE project_id = ?').all(Number(pid)) as { id: number; key: string }[]).map((k) => [k.id, k.key]));
      return (db.prepare('SELECT day, n, touches FROM analytics_touch_days ORDER BY day').all() as { day: number; n: number; touches: Buffer }[]).map((r) => {
        // Decoded rows compared as a sorted list (the capture path appends in arrival order).
        const rows: string[] = [];
        for (let o = 0; o < r.touches.length; o += 20) {
          const id = (k: number) => (r.touches.readInt32LE(o + k) < 0 ? '' : key.get(r.touches.readInt32LE(o + k)));
          rows.push([r.day + r.touches.readUInt32LE(o), id(4), id(8), id(12), id(16)].join('|'));
        }
        return { day: r.day, n: r.n, rows: rows.sort() };
      });
    };
    const table = (db.prepare('SELECT ts, distinct_id, source, medium, campaign FROM analytics_touches').all() as TouchRow[])
      .map((t) => [t.ts, `d:${t.distinct_id}`, t.source === null ? '' : `v:${t.source}`, t.medium === null ? '' : `v:${t.medium}`, t.campaign === null ? '' : `v:${t.campaign}`].join('|'))
      .sort();
    const before = blobs();
    expect(before.flatMap((b) => b.rows).sort()).toEqual(table);
    db.transaction(() => backfillTouchDays(db))();
    expect(blobs()).toEqual(before);
    const other = openDatabase(file);
    compareAttribution(T0 + 3 * DAY, T0 + 70 * DAY, 'USD', createRevenueRepo(other), createAnalyticsRepo(other));
    other.close();
  });
  it("migration 048 gives every packed day a version, and reads on a backfilled file keep days and follow writes", () => {
    const days = db.prepare('SELECT project_id, day FROM revenue_day_rows ORDER BY project_id, day').all();
    expect(days.length).toBeGreaterThan(10);
    db.exec('DROP TABLE revenue_day_versions');
    db.exec(m048RevenueDayVersions.sql);
    expect(db.prepare('SELECT project_id, day FROM revenue_day_versions WHERE ver = 1 ORDER BY project_id, day').all()).toEqual(days);
    const other = openDatabase(file);
    const fresh = createRevenueRepo(other);
    const freshAnalytics = createAnalyticsRepo(other);
    compareAttribution(T0, T0 + 90 * DAY, 'USD', fresh, freshAnalytics);
    // A write on a day the fresh repository now keeps moves that day's version past the backfilled one.
    const id = db.prepare("SELECT id FROM revenue_events WHERE project_id = ? AND status = 'posted' AND occurred_at >= ? ORDER BY occurred_at LIMIT 1").pluck().get(Number(pid), T0 + 10 * DAY) as string;
    const row = fresh.list(pid, { limit: 100_000 }).find((r) => r.id === id)!;
    other.transaction(() => fresh.writeLedger(pid, [{ ...row, status: 'voided' }], T0 + 100 * DAY))();
    expect(db.prepare('SELECT ver FROM revenue_day_versions WHERE project_id = ? AND day = ?').pluck().get(Number(pid), Math.floor(row.occurred_at / DAY) * DAY)).toBe(2);
    compareAttribution(T0, T0 + 90 * DAY, 'USD', fresh, freshAnalytics);
    other.close();
  });
});
