/**
 * Revenue ledger, subscription states, settings and the payment-provider connection.
 * Every method takes the project id first. Writes keep `revenue_daily` (posted amounts per day,
 * currency, plan and type) in step with the ledger, so totals over any range read the rollup plus
 * the two partial edge days.
 */
import type { Db } from './db.js';
import { keyPersons, personIndexOf, personKeysOf, type PersonIndex } from './analytics-repo.js';
import { noScratch, type PackedAttributionRows, type ScratchArrays } from '../domain/revenue/attribution-fast.js';
import { customerKey, type LedgerRow, type LedgerType } from '../domain/revenue/ledger.js';
import { DAY_MS } from '../domain/revenue/range.js';
import { reportingMinorOf } from '../domain/revenue/fx.js';
import { appendDay, dayRowStatements, keyInterner, keyStringsOf, rebuildConverted, rebuildDay, ROW_BYTES, TYPE_CODES, type DayRowInput } from './revenue-rollup.js';
import type { SubscriptionState } from '../domain/revenue/mrr.js';
import type { AttributableRow } from '../domain/revenue/attribution.js';

export interface SubscriptionRow extends SubscriptionState {
  customer_id: string | null;
  plan: string | null;
  source: string;
}

export interface TotalsRow {
  currency: string;
  plan: string;
  type: LedgerType;
  amount: number;
  n: number;
  /** Per-row-rounded amounts in the reporting currency's minor units (fx.ts toReportingMinor); null without a rate. */
  converted: number | null;
}

/** One posted ledger row as packed in `revenue_day_rows` (ids are `revenue_keys` ids, -1 for none). */
export interface PackedRowVisitor {
  (at: number, type: LedgerType, amount: number, currencyId: number, distinctId: number, anonymousId: number, customerId: number): void;
}

export interface ConnectionRow {
  project_id: string;
  provider: string;
  key_sealed: string | null;
  key_hint: string | null;
  connected_at: number | null;
  webhook_secret_sealed: string | null;
  webhook_set_at: number | null;
  last_event_at: number | null;
  events_received: number;
  backfill: BackfillState;
}

export interface BackfillState {
  state: 'idle' | 'running' | 'done' | 'failed';
  started_at?: number;
  finished_at?: number;
  pages?: number;
  rows?: number;
  resource?: string;
  error?: string;
}

/* eslint-disable @typescript-eslint/no-explicit-any */
const dayOf = (ts: number) => Math.floor(ts / DAY_MS) * DAY_MS;

function ledgerFromRow(r: any): LedgerRow {
  return {
    id: r.id,
    type: r.type,
    amount: r.amount,
    currency: r.currency,
    occurred_at: r.occurred_at,
    customer_id: r.customer_id,
    distinct_id: r.distinct_id,
    anonymous_id: r.anonymous_id,
    parent_id: r.parent_id,
    subscription_id: r.subscription_id,
    plan: r.plan,
    recurring: !!r.recurring,
    status: r.status,
    source: r.source,
  };
}

const SAME_FIELDS = ['type', 'amount', 'currency', 'occurred_at', 'customer_id', 'distinct_id', 'anonymous_id', 'parent_id', 'subscription_id', 'plan', 'recurring', 'status'] as const;

/**
 * Decoded full days kept per repository at most (about 29 bytes a row: time, value, payment flag,
 * distinct/anonymous id and person); beyond it the least recently read days are dropped.
 */
export const MAX_DECODED_ROWS = 2_000_000;

/** One day's posted rows as packedRows hands them out (the rows in range only, for an edge day). */
interface DecodedDay {
  /** `revenue_day_versions.ver` the rows were decoded at. */
  ver: number;
  /** Reporting currency of `value`. */
  cur: string;
  n: number;
  at: Float64Array;
  value: Float64Array;
  payment: Uint8Array;
  /** `revenue_keys` ids of the distinct and anonymous id, -1 for none. */
  d: Int32Array;
  a: Int32Array;
  /** Currencies of the rows without a rate. */
  missing: string[];
  /** Person indexes of `px`; resolved again when the person index is another. */
  px: PersonIndex | null;
  person: Int32Array;
}

interface DayConversion {
  T: string;
  rm: (minor: number, currency: string) => number | null;
  /** Per currency key id: 0 not seen yet, 1 the reporting currency, 2 converted by rm, 3 no rate. */
  kind: Uint8Array;
  names: string[];
}

/** Decode a day blob (layout in revenue-rollup.ts); `within` keeps only the rows in [from, to). */
function decodeDay(ks: readonly string[], cv: DayConversion, day: number, ver: number, blob: Buffer, within: [number, number] | null): DecodedDay {
  // Typed views (8 int32 / 4 float64 per row) on the blob itself when 8-aligned; on an aligned copy otherwise.
  const u8 = blob.byteOffset % 8 === 0 ? blob : new Uint8Array(blob);
  const i32 = new Int32Array(u8.buffer, u8.byteOffset, u8.byteLength >> 2);
  const f64 = new Float64Array(u8.buffer, u8.byteOffset, u8.byteLength >> 3);
  const rowsIn = blob.byteLength / ROW_BYTES;
  const { kind, names, rm, T } = cv;
  let size = rowsIn;
  if (within) {
    size = 0;
    for (let k = 0; k < rowsIn; k++) {
      const t = day + (i32[k * 8]! >>> 0);
      if (t >= within[0] && t < within[1]) size++;
    }
  }
  const e: DecodedDay = {
    ver,
    cur: T,
    n: size,
    at: new Float64Array(size),
    value: new Float64Array(size),
    payment: new Uint8Array(size),
    d: new Int32Array(size),
    a: new Int32Array(size),
    missing: [],
    px: null,
    person: new Int32Array(size),
  };
  let n = 0;
  for (let k = 0; k < rowsIn; k++) {
    const t = day + (i32[k * 8]! >>> 0);
    if (within && (t < within[0] || t >= within[1])) continue;
    const c = i32[k * 8 + 4]!;
    let kc = kind[c]!;
    if (kc === 0) {
      const name = (names[c] = ks[c]!.slice(2));
      kind[c] = kc = name === T ? 1 : rm(0, name) === null ? 3 : 2;
    }
    if (kc === 3 && !e.missing.includes(names[c]!)) e.missing.push(names[c]!);
    e.at[n] = t;
    e.value[n] = kc === 1 ? f64[k * 4 + 1]! : kc === 2 ? (rm(f64[k * 4 + 1]!, names[c]!) as number) : NaN;
    e.payment[n] = u8[k * ROW_BYTES + 4] === 0 ? 1 : 0;
    e.d[n] = i32[k * 8 + 5]!;
    e.a[n] = i32[k * 8 + 6]!;
    n++;
  }
  return e;
}

/** Person of each row as rowsWithPeople keys it (distinct id's person, else anonymous id's, else the id itself), as indexes of `px`. */
function resolvePersons(e: DecodedDay, px: PersonIndex, kp: ReturnType<typeof keyPersons>): void {
  if (e.px === px) return;
  const mm = kp.memo.mapped;
  const { d: ds, a: as, person } = e;
  for (let k = 0; k < e.n; k++) {
    const d = ds[k]!;
    const a = as[k]!;
    let p = -1;
    if (d >= 0) {
      p = mm[d]!;
      if (p === -2) p = kp.mapped(d);
    }
    if (p < 0 && a >= 0) {
      p = mm[a]!;
      if (p === -2) p = kp.mapped(a);
    }
    if (p < 0) p = d >= 0 ? kp.own(d) : a >= 0 ? kp.own(a) : -1;
    person[k] = p;
  }
  e.px = px;
}

export function createRevenueRepo(db: Db) {
  const s = {
    get: db.prepare('SELECT * FROM revenue_events WHERE project_id = ? AND id = ?'),
    upsert: db.prepare(`INSERT INTO revenue_events (project_id, id, type, amount, currency, occurred_at, customer_id, distinct_id, anonymous_id, parent_id, subscription_id, plan, recurring, status, source, customer_key, received_at)
      VALUES (@project_id, @id, @type, @amount, @currency, @occurred_at, @customer_id, @distinct_id, @anonymous_id, @parent_id, @subscription_id, @plan, @recurring, @status, @source, @customer_key, @received_at)
      ON CONFLICT (project_id, id) DO UPDATE SET type = excluded.type, amount = excluded.amount, currency = excluded.currency, occurred_at = excluded.occurred_at,
        customer_id = excluded.customer_id, distinct_id = excluded.distinct_id, anonymous_id = excluded.anonymous_id, parent_id = excluded.parent_id,
        subscription_id = excluded.subscription_id, plan = excluded.plan, recurring = excluded.recurring, status = excluded.status, source = excluded.source,
        customer_key = excluded.customer_key, received_at = excluded.received_at`),
    rollup: db.prepare(`INSERT INTO revenue_daily (project_id, day, currency, plan, type, amount, n, converted) VALUES (?, ?, ?, ?, ?, ?, ?, ?)
      ON CONFLICT (project_id, day, currency, plan, type) DO UPDATE SET amount = amount + excluded.amount, n = n + excluded.n, converted = converted + excluded.converted`),
    // Groups with and without `converted` apart: a NULL one is converted from its total at read.
    // Ordered by the grouping (SQLite groups in that order anyway; PostgreSQL's groups come in any order).
    dailyTotals: db.prepare(`SELECT currency, plan, type, SUM(amount) AS amount, SUM(n) AS n, SUM(converted) AS converted, converted IS NULL AS unconverted FROM revenue_daily
      WHERE project_id = ? AND day >= ? AND day < ? GROUP BY currency, plan, type, converted IS NULL ORDER BY currency, plan, type, converted IS NULL`),
    dailySeries: db.prepare(`SELECT day, currency, type, SUM(amount) AS amount, SUM(converted) AS converted, converted IS NULL AS unconverted FROM revenue_daily
      WHERE project_id = ? AND day >= ? AND day < ? GROUP BY day, currency, type, converted IS NULL ORDER BY day, currency, type, converted IS NULL`),
    rawRows: db.prepare(`SELECT occurred_at, currency, COALESCE(plan, '') AS plan, type, amount FROM revenue_events WHERE project_id = ? AND occurred_at >= ? AND occurred_at < ? AND status = 'posted'`).raw(true),
    rollupCurrency: db.prepare('SELECT currency FROM revenue_rollup_currency WHERE project_id = ?').pluck(),
    setRollupCurrency: db.prepare('INSERT OR IGNORE INTO revenue_rollup_currency (project_id, currency) VALUES (?, ?)'),
    dayBlobs: db.prepare('SELECT day, rows FROM revenue_day_rows WHERE project_id = ? AND day >= ? AND day < ? ORDER BY day').raw(true),
    dayVersions: db.prepare('SELECT day, ver FROM revenue_day_versions WHERE project_id = ? AND day >= ? AND day < ? ORDER BY day').raw(true),
    dayBlob: db.prepare('SELECT rows FROM revenue_day_rows WHERE project_id = ? AND day = ?').pluck(),
    maxKey: db.prepare('SELECT MAX(id) FROM revenue_keys WHERE project_id = ?').pluck(),
    customers: db.prepare(`SELECT COUNT(DISTINCT customer_key) AS n FROM revenue_events INDEXED BY revenue_events_customers
      WHERE project_id = ? AND occurred_at >= ? AND occurred_at < ? AND type = 'payment' AND status = 'posted'`),
    // Covered by revenue_events_people: no look-ups into the table; persons are resolved in JS from one map.
    rowsScan: db
      .prepare(`SELECT type, amount, currency, occurred_at, distinct_id, anonymous_id FROM revenue_events INDEXED BY revenue_events_people
      WHERE project_id = ? AND occurred_at >= ? AND occurred_at < ? AND status = 'posted'`)
      .raw(true),
    // Primary-key order (subscription, time): a scan of the table, no per-row index look-ups (stated:
    // PostgreSQL returns a scan's rows in no particular order).
    subStates: db.prepare('SELECT id, status, mrr, currency, effective_at FROM revenue_subscriptions WHERE project_id = ? AND effective_at <= ? ORDER BY id, effective_at').raw(true),
    subGet: db.prepare('SELECT * FROM revenue_subscriptions WHERE project_id = ? AND id = ? AND effective_at = ?'),
    subUpsert: db.prepare(`INSERT INTO revenue_subscriptions (project_id, id, effective_at, status, mrr, currency, customer_id, plan, source, received_at)
      VALUES (@project_id, @id, @effective_at, @status, @mrr, @currency, @customer_id, @plan, @source, @received_at)
      ON CONFLICT (project_id, id, effective_at) DO UPDATE SET status = excluded.status, mrr = excluded.mrr, currency = excluded.currency,
        customer_id = excluded.customer_id, plan = excluded.plan, source = excluded.source, received_at = excluded.received_at`),
    settings: db.prepare('SELECT currency FROM revenue_settings WHERE project_id = ?'),
    setSettings: db.prepare(`INSERT INTO revenue_settings (project_id, currency, updated_at) VALUES (?, ?, ?)
      ON CONFLICT (project_id) DO UPDATE SET currency = excluded.currency, updated_at = excluded.updated_at`),
    counts: db.prepare(`SELECT source, COUNT(*) AS n, SUM(CASE WHEN distinct_id IS NOT NULL OR anonymous_id IS NOT NULL THEN 1 ELSE 0 END) AS linked FROM revenue_events WHERE project_id = ? GROUP BY source ORDER BY source`),
    subCount: db.prepare('SELECT COUNT(*) AS n, COUNT(DISTINCT id) AS subs FROM revenue_subscriptions WHERE project_id = ?'),
    currencies: db.prepare('SELECT DISTINCT currency FROM revenue_daily WHERE project_id = ? UNION SELECT DISTINCT currency FROM revenue_subscriptions WHERE project_id = ?'),
    conn: db.prepare('SELECT * FROM payment_connections WHERE project_id = ?'),
    connect: db.prepare(`INSERT INTO payment_connections (project_id, provider, key_sealed, key_hint, connected_at) VALUES (?, ?, ?, ?, ?)
      ON CONFLICT (project_id) DO UPDATE SET provider = excluded.provider, key_sealed = excluded.key_sealed, key_hint = excluded.key_hint, connected_at = excluded.connected_at`),
    setWebhook: db.prepare(`INSERT INTO payment_connections (project_id, provider, webhook_secret_sealed, webhook_set_at) VALUES (?, ?, ?, ?)
      ON CONFLICT (project_id) DO UPDATE SET webhook_secret_sealed = excluded.webhook_secret_sealed, webhook_set_at = excluded.webhook_set_at`),
    setBackfill: db.prepare('UPDATE payment_connections SET backfill = ? WHERE project_id = ?'),
    seenEvent: db.prepare('SELECT 1 FROM payment_webhook_events WHERE project_id = ? AND event_id = ?'),
    recordEvent: db.prepare('INSERT INTO payment_webhook_events (project_id, event_id, type, received_at) VALUES (?, ?, ?, ?)'),
    touchConn: db.prepare('UPDATE payment_connections SET last_event_at = ?, events_received = events_received + 1 WHERE project_id = ?'),
  };

  const personKeys = personKeysOf(db);
  const personIndex = personIndexOf(db);

  const interner = keyInterner(db);
  const dayStmts = dayRowStatements(db);
  /** Decoded full days of packedRows by `pid:day`, least recently used first, and their row count. */
  const decodedDays = new Map<string, DecodedDay>();
  let decodedRows = 0;

  /** The currency `revenue_daily.converted` is kept in: the reporting currency (recorded at the first write). */
  function rollupCurrencyOf(pid: number): string {
    let c = s.rollupCurrency.get(pid) as string | undefined;
    if (c === undefined) {
      c = (s.settings.get(pid) as { currency: string } | undefined)?.currency ?? 'USD';
      s.setRollupCurrency.run(pid, c);
    }
    return c;
  }

  /** The rollup currency as reads see it (never writes). */
  const keptCurrency = (pid: number): string =>
    (s.rollupCurrency.get(pid) as string | undefined) ?? (s.settings.get(pid) as { currency: string } | undefined)?.currency ?? 'USD';

  /** Insert or replace ledger rows by id (call inside a transaction). Returns how many rows changed. */
  function writeLedger(projectId: string, rows: readonly LedgerRow[], now: number): number {
    const pid = Number(projectId);
    const rm = reportingMinorOf(rollupCurrencyOf(pid));
    const addRollup = (r: LedgerRow, sign: 1 | -1) => {
      if (r.status !== 'posted') return;
      const v = rm(r.amount, r.currency);
      s.rollup.run(pid, dayOf(r.occurred_at), r.currency, r.plan ?? '', r.type, sign * r.amount, sign, v === null ? null : sign * v);
    };
    const intern = interner.session();
    const rebuild = new Set<number>();
    const appends = new Map<number, DayRowInput[]>();
    let written = 0;
    for (const r of rows) {
      const old = s.get.get(pid, r.id) as any;
      if (old) {
        const prev = ledgerFromRow(old);
        if (SAME_FIELDS.every((f) => prev[f] === r[f])) continue;
        addRollup(prev, -1);
        if (prev.status === 'posted') rebuild.add(dayOf(prev.occurred_at));
      }
      const key = customerKey(r);
      s.upsert.run({ ...r, project_id: pid, recurring: r.recurring ? 1 : 0, customer_key: key, received_at: now });
      addRollup(r, 1);
      if (r.status === 'posted') {
        const day = dayOf(r.occurred_at);
        if (old) rebuild.add(day);
        else {
          const l = appends.get(day) ?? [];
          l.push({ type: r.type, amount: r.amount, currency: r.currency, occurred_at: r.occurred_at, distinct_id: r.distinct_id, anonymous_id: r.anonymous_id, customer_key: key });
          appends.set(day, l);
        }
      }
      written++;
    }
    // Day blobs: a replaced or voided row rebuilds its day(s) from the ledger; new rows are appended.
    for (const day of rebuild) rebuildDay(dayStmts, intern, pid, day);
    for (const [day, l] of appends) if (!rebuild.has(day)) appendDay(dayStmts, intern, pid, day, l);
    return written;
  }

  /** Per-row-rounded sums of raw ledger rows in [a, b), merged into `into` by currency, plan and type. */
  function rawTotals(pid: number, a: number, b: number, cur: string, into: TotalsRow[]): void {
    const rm = reportingMinorOf(cur);
    const m = new Map<string, TotalsRow>();
    for (const [, currency, plan, type, amount] of s.rawRows.iterate(pid, a, b) as Iterable<[number, string, string, LedgerType, number]>) {
      const k = `${currency}\u0000${plan}\u0000${type}`;
      let t = m.get(k);
      if (!t) m.set(k, (t = { currency, plan, type, amount: 0, n: 0, converted: 0 }));
      const v = rm(amount, currency);
      t.amount += amount;
      t.n++;
      t.converted = t.converted === null || v === null ? null : t.converted + v;
    }
    into.push(...m.values());
  }

  /** `revenue_keys` strings by id (shared per database handle, revenue-rollup.ts). */
  const keys = keyStringsOf(db);

  /** Visit every packed posted row with occurred_at in [from, to). */
  function visitRows(pid: number, from: number, to: number, visit: PackedRowVisitor): void {
    for (const [day, blob] of s.dayBlobs.iterate(pid, dayOf(from), to) as Iterable<[number, Buffer]>) {
      const dv = new DataView(blob.buffer, blob.byteOffset, blob.byteLength);
      const full = day >= from && day + DAY_MS <= to;
      for (let o = 0; o < blob.byteLength; o += ROW_BYTES) {
        const at = day + dv.getUint32(o, true);
        if (!full && (at < from || at >= to)) continue;
        visit(at, TYPE_CODES[dv.getUint8(o + 4)]!, dv.getFloat64(o + 8, true), dv.getInt32(o + 16, true), dv.getInt32(o + 20, true), dv.getInt32(o + 24, true), dv.getInt32(o + 28, true));
      }
    }
  }

  function writeSubscriptions(projectId: string, rows: readonly Omit<SubscriptionRow, never>[], now: number): number {
    const pid = Number(projectId);
    let written = 0;
    for (const r of rows) {
      const old = s.subGet.get(pid, r.id, r.effective_at) as any;
      if (old && old.status === r.status && old.mrr === r.mrr && old.currency === r.currency && old.customer_id === r.customer_id && old.plan === r.plan) continue;
      s.subUpsert.run({ ...r, project_id: pid, received_at: now });
      written++;
    }
    return written;
  }

  /**
   * Posted totals per currency, plan and type over [from, to) with `converted` in `cur`: whole days from
   * the rollup, the two partial edge days from the ledger. When the rollup is kept in another currency
   * (the reporting currency changed in another process), every row is read from the ledger instead.
   */
  function totals(projectId: string, from: number, to: number, cur: string): TotalsRow[] {
    const pid = Number(projectId);
    const rm = reportingMinorOf(cur);
    const firstFull = Math.ceil(from / DAY_MS) * DAY_MS;
    const lastFull = dayOf(to);
    const parts: TotalsRow[] = [];
    if (firstFull >= lastFull || keptCurrency(pid) !== cur) rawTotals(pid, from, to, cur, parts);
    else {
      for (const r of s.dailyTotals.all(pid, firstFull, lastFull) as (TotalsRow & { unconverted: number })[]) {
        parts.push({ currency: r.currency, plan: r.plan, type: r.type, amount: r.amount, n: r.n, converted: r.unconverted ? rm(r.amount, r.currency) : r.converted });
      }
      if (from < firstFull) rawTotals(pid, from, firstFull, cur, parts);
      if (lastFull < to) rawTotals(pid, lastFull, to, cur, parts);
    }
    const merged = new Map<string, TotalsRow>();
    for (const p of parts) {
      const k = `${p.currency}\u0000${p.plan}\u0000${p.type}`;
      const m = merged.get(k);
      if (m) {
        m.amount += p.amount;
        m.n += p.n;
        m.converted = m.converted === null || p.converted === null ? null : m.converted + p.converted;
      } else merged.set(k, { ...p });
    }
    return [...merged.values()].filter((r) => r.n !== 0);
  }

  /** Posted amounts per bucket (UTC-day aligned), currency and type; `converted` as in totals. */
  function series(projectId: string, from: number, to: number, cur: string, bucketOf: (ts: number) => number): { bucket: number; currency: string; type: LedgerType; amount: number; converted: number | null }[] {
    const pid = Number(projectId);
    const rm = reportingMinorOf(cur);
    const firstFull = Math.ceil(from / DAY_MS) * DAY_MS;
    const lastFull = dayOf(to);
    const out: { bucket: number; currency: string; type: LedgerType; amount: number; converted: number | null }[] = [];
    const raw = (a: number, b: number) => {
      for (const [at, currency, , type, amount] of s.rawRows.iterate(pid, a, b) as Iterable<[number, string, string, LedgerType, number]>) {
        out.push({ bucket: bucketOf(at), currency, type, amount, converted: rm(amount, currency) });
      }
    };
    if (firstFull >= lastFull || keptCurrency(pid) !== cur) raw(from, to);
    else {
      for (const r of s.dailySeries.all(pid, firstFull, lastFull) as any[]) {
        out.push({ bucket: bucketOf(r.day), currency: r.currency, type: r.type, amount: r.amount, converted: r.unconverted ? rm(r.amount, r.currency) : r.converted });
      }
      if (from < firstFull) raw(from, firstFull);
      if (lastFull < to) raw(lastFull, to);
    }
    return out;
  }

  return {
    writeLedger,
    writeSubscriptions,
    totals,
    series,
    /** Distinct paying customers in [from, to), from the packed day rows. */
    customers(projectId: string, from: number, to: number): number {
      const pid = Number(projectId);
      const seen = new Uint8Array(((s.maxKey.get(pid) as number | null) ?? 0) + 1);
      let n = 0;
      for (const [day, blob] of s.dayBlobs.iterate(pid, dayOf(from), to) as Iterable<[number, Buffer]>) {
        // Aligned copy, typed views (layout in revenue-rollup.ts): type byte 4, customer id int32 7.
        const u8 = new Uint8Array(blob.byteLength);
        u8.set(blob);
        const i32 = new Int32Array(u8.buffer);
        const full = day >= from && day + DAY_MS <= to;
        for (let k = 0, rowsIn = blob.byteLength / ROW_BYTES; k < rowsIn; k++) {
          if (u8[k * ROW_BYTES + 4] !== 0) continue;
          if (!full) {
            const at = day + (i32[k * 8]! >>> 0);
            if (at < from || at >= to) continue;
          }
          const customer = i32[k * 8 + 7]!;
          if (customer >= 0 && !seen[customer]) {
            seen[customer] = 1;
            n++;
          }
        }
      }
      return n;
    },
    /** The straightforward count over the ledger (tests compare the packed rows with it). */
    customersFromLedger(projectId: string, from: number, to: number): number {
      return (s.customers.get(Number(projectId), from, to) as { n: number }).n;
    },
    visitRows(projectId: string, from: number, to: number, visit: PackedRowVisitor): void {
      visitRows(Number(projectId), from, to, visit);
    },
    /** `revenue_keys` strings by id: `d:` distinct/anonymous id, `k:` customer key, `$:` currency. */
    keys(projectId: string): readonly string[] {
      return keys(Number(projectId));
    },
    /** Posted rows in range with a person key: resolved person (`p:`), else the raw distinct (`d:`) or anonymous (`a:`) id, null when neither. */
    rowsWithPeople(projectId: string, from: number, to: number): { type: LedgerType; amount: number; currency: string; occurred_at: number; person: string | null }[] {
      const pid = Number(projectId);
      const persons = personKeys(pid);
      const key = (d: string | null, a: string | null) =>
        (d !== null ? persons.get(d) : undefined) ?? (a !== null ? persons.get(a) : undefined) ?? (d !== null ? `d:${d}` : a !== null ? `d:${a}` : null);
      return (s.rowsScan.all(pid, from, to) as [LedgerType, number, string, number, string | null, string | null][]).map(([type, amount, currency, occurred_at, d, a]) => ({
        type,
        amount,
        currency,
        occurred_at,
        person: key(d, a),
      }));
    },
    /**
     * Posted rows in range as attribution inputs: signed amount converted by `convert` (null without a
     * rate, its currency added to `missing`) and the person key as in rowsWithPeople, in the same order.
     */
    attributableRows(projectId: string, from: number, to: number, convert: (minor: number, currency: string) => number | null, missing: Set<string>): AttributableRow[] {
      // The straightforward read (tests hold packedRows + attribution-fast.ts to it); `convert` is
      // reportingMinorOf(cur) for the per-row-rounded rule the reads use.
      const pid = Number(projectId);
      const persons = personKeys(pid);
      const out: AttributableRow[] = [];
      for (const [type, amount, currency, occurred_at, d, a] of s.rowsScan.all(pid, from, to) as Iterable<[LedgerType, number, string, number, string | null, string | null]>) {
        const value = convert(amount, currency);
        if (value === null) missing.add(currency);
        const person = (d !== null ? persons.get(d) : undefined) ?? (a !== null ? persons.get(a) : undefined) ?? (d !== null ? `d:${d}` : a !== null ? `d:${a}` : null);
        out.push({ type, value, occurred_at, person });
      }
      return out;
    },
    /**
     * Posted rows in [from, to) from the packed day rows, as attribution-fast.ts takes them: values in
     * `cur` minor units rounded per row (NaN without a rate, its currency added to `missing`), person
     * indexes of `personIndexOf` resolved as in rowsWithPeople. Returns the person count too. The arrays
     * come from `scratch` (attribution-fast.ts Scratch) when given.
     *
     * Days wholly inside the range come from the decoded days this repository keeps (`decodedDays`),
     * checked against the day's version (migration 048) on every call: a day whose version moved, or
     * kept for another currency, is decoded again from its blob; persons are resolved again when the
     * person index changed (identity epoch). The two edge days are decoded from their blobs each time.
     */
    packedRows(projectId: string, from: number, to: number, cur: string, missing: Set<string>, scratch: ScratchArrays = noScratch): { rows: PackedAttributionRows; persons: number } {
      const pid = Number(projectId);
      const ks = keys(pid);
      const px = personIndex(pid);
      const kp = keyPersons(px, ks, pid);
      const rm = reportingMinorOf(cur);
      const T = cur.toUpperCase();
      // Per currency key id: 0 not seen yet, 1 the reporting currency itself (rm returns the amount
      // unchanged, fx.ts), 2 converted by rm, 3 no rate.
      const kind = scratch.u8('rows.currencyKind', ks.length).fill(0);
      const conv: DayConversion = { T, rm, kind, names: [] };
      // Inside a transaction the versions may still roll back: decode, but keep nothing.
      const keep = !db.inTransaction;
      const days: DecodedDay[] = [];
      let cap = 0;
      for (const [day, ver] of s.dayVersions.all(pid, dayOf(from), to) as [number, number][]) {
        const full = day >= from && day + DAY_MS <= to;
        const k = `${pid}:${day}`;
        let e = full ? decodedDays.get(k) : undefined;
        if (e && e.ver === ver && e.cur === T) {
          // Most recently used last.
          decodedDays.delete(k);
          decodedDays.set(k, e);
        } else {
          if (e) {
            decodedDays.delete(k);
            decodedRows -= e.n;
          }
          const blob = s.dayBlob.get(pid, day) as Buffer | undefined;
          if (!blob) continue;
          e = decodeDay(ks, conv, day, ver, blob, full ? null : [from, to]);
          if (full && keep) {
            decodedDays.set(k, e);
            decodedRows += e.n;
          }
        }
        resolvePersons(e, px, kp);
        for (const c of e.missing) missing.add(c);
        days.push(e);
        cap += e.n;
      }
      // Least recently used days out first (the days of this read were moved last).
      for (const [k, e] of decodedDays) {
        if (decodedRows <= MAX_DECODED_ROWS) break;
        decodedDays.delete(k);
        decodedRows -= e.n;
      }
      const at = scratch.f64('rows.at', cap);
      const value = scratch.f64('rows.value', cap);
      const payment = scratch.u8('rows.payment', cap);
      const person = scratch.i32('rows.person', cap);
      let n = 0;
      for (const e of days) {
        at.set(e.at, n);
        value.set(e.value, n);
        payment.set(e.payment, n);
        person.set(e.person, n);
        n += e.n;
      }
      return { rows: { n, at, value, payment, person }, persons: px.size() };
    },
    list(projectId: string, f: { kind?: LedgerType; from?: number; to?: number; cursor?: { at: number; id: string }; limit: number }): LedgerRow[] {
      const where = ['project_id = ?'];
      const args: unknown[] = [Number(projectId)];
      if (f.kind) {
        where.push('type = ?');
        args.push(f.kind);
      }
      if (f.from !== undefined) {
        where.push('occurred_at >= ?');
        args.push(f.from);
      }
      if (f.to !== undefined) {
        where.push('occurred_at < ?');
        args.push(f.to);
      }
      if (f.cursor) {
        where.push('(occurred_at < ? OR (occurred_at = ? AND id < ?))');
        args.push(f.cursor.at, f.cursor.at, f.cursor.id);
      }
      return db
        .prepare(`SELECT * FROM revenue_events WHERE ${where.join(' AND ')} ORDER BY occurred_at DESC, id DESC LIMIT ?`)
        .all(...args, f.limit)
        .map(ledgerFromRow);
    },
    /** States effective at or before `to`, in (subscription, time) order. */
    subscriptionStates(projectId: string, to: number): SubscriptionState[] {
      const rows = s.subStates.all(Number(projectId), to) as [string, string, number, string, number][];
      const out: SubscriptionState[] = new Array(rows.length);
      for (let i = 0; i < rows.length; i++) {
        const [id, status, mrr, currency, effective_at] = rows[i]!;
        out[i] = { id, status, mrr, currency, effective_at };
      }
      return out;
    },
    currency(projectId: string): string | null {
      return (s.settings.get(Number(projectId)) as { currency: string } | undefined)?.currency ?? null;
    },
    /** Set the reporting currency; the converted rollup is recomputed in it (one pass over the ledger) in the same transaction. */
    setCurrency(projectId: string, currency: string, now: number): void {
      const pid = Number(projectId);
      db.transaction(() => {
        s.setSettings.run(pid, currency, now);
        if (rollupCurrencyOf(pid) !== currency) rebuildConverted(db, pid, currency);
      })();
    },
    knownCurrencies(projectId: string): string[] {
      return (s.currencies.all(Number(projectId), Number(projectId)) as { currency: string }[]).map((r) => r.currency);
    },
    counts(projectId: string): { bySource: Record<string, number>; rows: number; linked: number; subscriptionStates: number; subscriptions: number } {
      const bySource: Record<string, number> = {};
      let rows = 0;
      let linked = 0;
      for (const r of s.counts.all(Number(projectId)) as { source: string; n: number; linked: number }[]) {
        bySource[r.source] = r.n;
        rows += r.n;
        linked += r.linked;
      }
      const sc = s.subCount.get(Number(projectId)) as { n: number; subs: number };
      return { bySource, rows, linked, subscriptionStates: sc.n, subscriptions: sc.subs };
    },
    connection(projectId: string): ConnectionRow | null {
      const r = s.conn.get(Number(projectId)) as any;
      return r ? { ...r, project_id: String(r.project_id), backfill: JSON.parse(r.backfill) } : null;
    },
    connect(projectId: string, provider: string, keySealed: string, keyHint: string, now: number): void {
      s.connect.run(Number(projectId), provider, keySealed, keyHint, now);
    },
    setWebhookSecret(projectId: string, provider: string, sealed: string, now: number): void {
      s.setWebhook.run(Number(projectId), provider, sealed, now);
    },
    setBackfill(projectId: string, b: BackfillState): void {
      s.setBackfill.run(JSON.stringify(b), Number(projectId));
    },
    webhookEventSeen(projectId: string, eventId: string): boolean {
      return !!s.seenEvent.get(Number(projectId), eventId);
    },
    /** Record a provider event as applied (inside the same transaction as its ledger writes). */
    recordWebhookEvent(projectId: string, eventId: string, type: string, now: number): void {
      s.recordEvent.run(Number(projectId), eventId, type, now);
      s.touchConn.run(now, Number(projectId));
    },
    /** Run a function in one transaction (writes of one webhook event or one backfill page). */
    transaction<T>(fn: () => T): T {
      return db.transaction(fn)();
    },
  };
}

export type RevenueRepo = ReturnType<typeof createRevenueRepo>;
