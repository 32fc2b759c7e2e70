/**
 * Revenue ledger, subscription states, settings and the payment-provider connection.
 * Every method takes the project id first. Writes keep `revenue_daily` (posted amounts per day,
 * currency, plan and type) in step with the ledger, so totals over any range read the rollup plus
 * the two partial edge days.
 */
import type { Db } from './db.js';
import { personKeysOf } from './analytics-repo.js';
import { customerKey, type LedgerRow, type LedgerType } from '../domain/revenue/ledger.js';
import { DAY_MS } from '../domain/revenue/range.js';
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

export function createRevenueRepo(db: Db) {
  const s = {
    get: db.prepare('SELECT * FROM revenue_events WHERE project_id = ? AND id = ?'),
    upsert: db.prepare(`INSERT INTO revenue_events (project_id, id, type, amount, currency, occurred_at, customer_id, distinct_id, anonymous_id, parent_id, subscription_id, plan, recurring, status, source, customer_key, received_at)
      VALUES (@project_id, @id, @type, @amount, @currency, @occurred_at, @customer_id, @distinct_id, @anonymous_id, @parent_id, @subscription_id, @plan, @recurring, @status, @source, @customer_key, @received_at)
      ON CONFLICT (project_id, id) DO UPDATE SET type = excluded.type, amount = excluded.amount, currency = excluded.currency, occurred_at = excluded.occurred_at,
        customer_id = excluded.customer_id, distinct_id = excluded.distinct_id, anonymous_id = excluded.anonymous_id, parent_id = excluded.parent_id,
        subscription_id = excluded.subscription_id, plan = excluded.plan, recurring = excluded.recurring, status = excluded.status, source = excluded.source,
        customer_key = excluded.customer_key, received_at = excluded.received_at`),
    rollup: db.prepare(`INSERT INTO revenue_daily (project_id, day, currency, plan, type, amount, n) VALUES (?, ?, ?, ?, ?, ?, ?)
      ON CONFLICT (project_id, day, currency, plan, type) DO UPDATE SET amount = amount + excluded.amount, n = n + excluded.n`),
    dailyTotals: db.prepare(`SELECT currency, plan, type, SUM(amount) AS amount, SUM(n) AS n FROM revenue_daily WHERE project_id = ? AND day >= ? AND day < ? GROUP BY currency, plan, type`),
    dailySeries: db.prepare(`SELECT day, currency, type, SUM(amount) AS amount FROM revenue_daily WHERE project_id = ? AND day >= ? AND day < ? GROUP BY day, currency, type`),
    rawTotals: db.prepare(`SELECT currency, COALESCE(plan, '') AS plan, type, SUM(amount) AS amount, COUNT(*) AS n FROM revenue_events
      WHERE project_id = ? AND occurred_at >= ? AND occurred_at < ? AND status = 'posted' GROUP BY currency, plan, type`),
    rawSeries: db.prepare(`SELECT occurred_at, currency, type, amount FROM revenue_events WHERE project_id = ? AND occurred_at >= ? AND occurred_at < ? AND status = 'posted'`),
    customers: db.prepare(`SELECT COUNT(DISTINCT customer_key) AS n FROM revenue_events INDEXED BY revenue_events_customers
      WHERE project_id = ? AND occurred_at >= ? AND occurred_at < ? AND type = 'payment' AND status = 'posted'`),
    // Covered by revenue_events_people: no look-ups into the table; persons are resolved in JS from one map.
    rowsScan: db
      .prepare(`SELECT type, amount, currency, occurred_at, distinct_id, anonymous_id FROM revenue_events INDEXED BY revenue_events_people
      WHERE project_id = ? AND occurred_at >= ? AND occurred_at < ? AND status = 'posted'`)
      .raw(true),
    // Primary-key order (subscription, time): a scan of the table, no per-row index look-ups.
    subStates: db.prepare('SELECT id, status, mrr, currency, effective_at FROM revenue_subscriptions WHERE project_id = ? AND effective_at <= ?').raw(true),
    subGet: db.prepare('SELECT * FROM revenue_subscriptions WHERE project_id = ? AND id = ? AND effective_at = ?'),
    subUpsert: db.prepare(`INSERT INTO revenue_subscriptions (project_id, id, effective_at, status, mrr, currency, customer_id, plan, source, received_at)
      VALUES (@project_id, @id, @effective_at, @status, @mrr, @currency, @customer_id, @plan, @source, @received_at)
      ON CONFLICT (project_id, id, effective_at) DO UPDATE SET status = excluded.status, mrr = excluded.mrr, currency = excluded.currency,
        customer_id = excluded.customer_id, plan = excluded.plan, source = excluded.source, received_at = excluded.received_at`),
    settings: db.prepare('SELECT currency FROM revenue_settings WHERE project_id = ?'),
    setSettings: db.prepare(`INSERT INTO revenue_settings (project_id, currency, updated_at) VALUES (?, ?, ?)
      ON CONFLICT (project_id) DO UPDATE SET currency = excluded.currency, updated_at = excluded.updated_at`),
    counts: db.prepare(`SELECT source, COUNT(*) AS n, SUM(CASE WHEN distinct_id IS NOT NULL OR anonymous_id IS NOT NULL THEN 1 ELSE 0 END) AS linked FROM revenue_events WHERE project_id = ? GROUP BY source`),
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

  const addRollup = (pid: number, r: LedgerRow, sign: 1 | -1) => {
    if (r.status !== 'posted') return;
    s.rollup.run(pid, dayOf(r.occurred_at), r.currency, r.plan ?? '', r.type, sign * r.amount, sign);
  };

  /** Insert or replace ledger rows by id (call inside a transaction). Returns how many rows changed. */
  function writeLedger(projectId: string, rows: readonly LedgerRow[], now: number): number {
    const pid = Number(projectId);
    let written = 0;
    for (const r of rows) {
      const old = s.get.get(pid, r.id) as any;
      if (old) {
        const prev = ledgerFromRow(old);
        if (SAME_FIELDS.every((f) => prev[f] === r[f])) continue;
        addRollup(pid, prev, -1);
      }
      s.upsert.run({ ...r, project_id: pid, recurring: r.recurring ? 1 : 0, customer_key: customerKey(r), received_at: now });
      addRollup(pid, r, 1);
      written++;
    }
    return written;
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

  /** Posted totals per currency, plan and type over [from, to): whole days from the rollup, edges from the ledger. */
  function totals(projectId: string, from: number, to: number): TotalsRow[] {
    const pid = Number(projectId);
    const firstFull = Math.ceil(from / DAY_MS) * DAY_MS;
    const lastFull = dayOf(to);
    const parts: TotalsRow[] = [];
    if (firstFull >= lastFull) parts.push(...(s.rawTotals.all(pid, from, to) as TotalsRow[]));
    else {
      parts.push(...(s.dailyTotals.all(pid, firstFull, lastFull) as TotalsRow[]));
      if (from < firstFull) parts.push(...(s.rawTotals.all(pid, from, firstFull) as TotalsRow[]));
      if (lastFull < to) parts.push(...(s.rawTotals.all(pid, lastFull, to) as TotalsRow[]));
    }
    const merged = new Map<string, TotalsRow>();
    for (const p of parts) {
      const k = `${p.currency}\u0000${p.plan}\u0000${p.type}`;
      const m = merged.get(k);
      if (m) {
        m.amount += p.amount;
        m.n += p.n;
      } else merged.set(k, { ...p });
    }
    return [...merged.values()].filter((r) => r.n !== 0);
  }

  /** Posted amounts per bucket of `starts` (UTC-day aligned), currency and type. */
  function series(projectId: string, from: number, to: number, bucketOf: (ts: number) => number): { bucket: number; currency: string; type: LedgerType; amount: number }[] {
    const pid = Number(projectId);
    const firstFull = Math.ceil(from / DAY_MS) * DAY_MS;
    const lastFull = dayOf(to);
    const out: { bucket: number; currency: string; type: LedgerType; amount: number }[] = [];
    const raw = (a: number, b: number) => {
      for (const r of s.rawSeries.iterate(pid, a, b) as Iterable<any>) out.push({ bucket: bucketOf(r.occurred_at), currency: r.currency, type: r.type, amount: r.amount });
    };
    if (firstFull >= lastFull) raw(from, to);
    else {
      for (const r of s.dailySeries.all(pid, firstFull, lastFull) as any[]) out.push({ bucket: bucketOf(r.day), currency: r.currency, type: r.type, amount: r.amount });
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
    customers(projectId: string, from: number, to: number): number {
      return (s.customers.get(Number(projectId), from, to) as { n: number }).n;
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
    setCurrency(projectId: string, currency: string, now: number): void {
      s.setSettings.run(Number(projectId), currency, now);
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
