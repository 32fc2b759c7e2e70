/**
 * Write-time revenue rollups (migration 038), shared by the repository and the migration backfill.
 *
 * - `revenue_daily.converted`: the sum, per (day, currency, plan, type), of each posted row converted
 *   to the project's rollup currency (`revenue_rollup_currency`, its reporting currency) and rounded
 *   to that currency's minor unit per row (fx.ts toReportingMinor). Integer sums: exact in any order.
 *   NULL when the row currency has no rate, or for days whose ledger rows expired before the
 *   reporting currency last changed (reads then convert the day total).
 * - `revenue_day_rows`: one packed blob per (project, day) of that day's posted rows — time, type,
 *   amount, currency, distinct/anonymous id and customer key as ids of `revenue_keys` — so customer
 *   counts and attribution decode a few hundred blobs instead of materializing a million SQL rows.
 *   New rows are appended; a replaced or voided row rebuilds its day from the ledger.
 */
import type { Db } from './db.js';
import type { LedgerType } from '../domain/revenue/ledger.js';
import { reportingMinorOf } from '../domain/revenue/fx.js';
import { inList, multiRow } from './multi-row.js';

export const DAY_MS = 86_400_000;
export const dayOf = (ts: number) => Math.floor(ts / DAY_MS) * DAY_MS;

export const TYPE_CODES: readonly LedgerType[] = ['payment', 'refund', 'dispute', 'dispute_reversal'];
const typeCode = (t: string) => TYPE_CODES.indexOf(t as LedgerType);

/** Bytes per packed row: u32 ms in day, u8 type, 3 spare, f64 amount, i32 currency, i32 distinct, i32 anonymous, i32 customer. */
export const ROW_BYTES = 32;

export interface DayRowInput {
  type: string;
  amount: number;
  currency: string;
  occurred_at: number;
  distinct_id: string | null;
  anonymous_id: string | null;
  customer_key: string | null;
}

/**
 * Interned strings per project (`d:` distinct or anonymous id, `k:` customer key, `$:` currency); ids
 * never change. `session()` gives a look-up with its own cache: use one per transaction, so an id
 * from a rolled-back insert is never reused.
 */
export function keyInterner(db: Db) {
  const get = db.prepare('SELECT id FROM revenue_keys WHERE project_id = ? AND key = ?').pluck();
  const add = db.prepare('INSERT INTO revenue_keys (project_id, key, id) SELECT ?, ?, COALESCE(MAX(id), 0) + 1 FROM revenue_keys WHERE project_id = ? RETURNING id').pluck();
  // For prime(): the known keys of a list with the project's largest id (a row with no key), then the
  // new ones in one statement; ids are taken under the write lock every writer holds.
  const known = inList(db, (marks) => `SELECT id, key FROM revenue_keys WHERE project_id = ? AND key IN (${marks}) UNION ALL SELECT COALESCE(MAX(id), 0), NULL FROM revenue_keys WHERE project_id = ?`);
  const insert = multiRow(db, 'INSERT INTO revenue_keys (project_id, key, id)', 3);
  return {
    session(): ((pid: number, key: string) => number) & { prime(pid: number, keys: readonly string[]): void } {
      const cache = new Map<string, number>();
      const intern = (pid: number, key: string) => {
        const ck = `${pid}\u0000${key}`;
        let id = cache.get(ck);
        if (id === undefined) cache.set(ck, (id = (get.get(pid, key) as number | undefined) ?? (add.get(pid, key, pid) as number)));
        return id;
      };
      /**
       * Interns `keys` at once (a statement per 100 keys, and one for the new ones), new keys numbered
       * in the order given: the ids `intern` called key by key in that order would give.
       */
      const prime = (pid: number, keys: readonly string[]) => {
        const want = [...new Set(keys)].filter((k) => !cache.has(`${pid}\u0000${k}`));
        if (!want.length) return;
        let max = 0;
        known(want, (st, part) => {
          for (const [id, key] of st.raw(true).all(pid, ...part, pid) as [number, string | null][]) {
            if (key === null) max = Math.max(max, id);
            else cache.set(`${pid}\u0000${key}`, id);
          }
        });
        const rows: unknown[][] = [];
        for (const k of want) {
          const ck = `${pid}\u0000${k}`;
          if (cache.has(ck)) continue;
          cache.set(ck, ++max);
          rows.push([pid, k, max]);
        }
        insert(rows, (st, args) => st.run(...args));
      };
      return Object.assign(intern, { prime });
    },
  };
}

/**
 * `revenue_keys` strings by id per project (ids only grow: new ones are read on demand), one cache per
 * database handle shared by the revenue and analytics repositories (the packed ledger rows and the
 * packed touch days use the same ids), so a process loads the key table once.
 */
const keyStringCaches = new WeakMap<Db, (pid: number) => string[]>();
export function keyStringsOf(db: Db): (pid: number) => string[] {
  let f = keyStringCaches.get(db);
  if (f) return f;
  const after = db.prepare('SELECT id, key FROM revenue_keys WHERE project_id = ? AND id > ? ORDER BY id').raw(true);
  const cache = new Map<number, string[]>();
  f = (pid: number) => {
    let l = cache.get(pid);
    if (!l) cache.set(pid, (l = ['']));
    for (const [id, key] of after.all(pid, l.length - 1) as [number, string][]) l[id] = key;
    return l;
  };
  keyStringCaches.set(db, f);
  return f;
}

export function encodeDayRows(pid: number, day: number, rows: readonly DayRowInput[], intern: (pid: number, key: string) => number): Buffer {
  const buf = Buffer.alloc(rows.length * ROW_BYTES);
  let o = 0;
  for (const r of rows) {
    buf.writeUInt32LE(r.occurred_at - day, o);
    buf.writeUInt8(typeCode(r.type), o + 4);
    buf.writeDoubleLE(r.amount, o + 8);
    buf.writeInt32LE(intern(pid, `$:${r.currency}`), o + 16);
    buf.writeInt32LE(r.distinct_id !== null ? intern(pid, `d:${r.distinct_id}`) : -1, o + 20);
    buf.writeInt32LE(r.anonymous_id !== null ? intern(pid, `d:${r.anonymous_id}`) : -1, o + 24);
    buf.writeInt32LE(r.customer_key !== null ? intern(pid, `k:${r.customer_key}`) : -1, o + 28);
    o += ROW_BYTES;
  }
  return buf;
}

/**
 * `versions`: also bump the day's `revenue_day_versions` row (migration 048) on every write to a day,
 * so readers that keep decoded days see the change; off only for migration 038's backfill, which
 * runs before that table exists (048 then gives every day a version).
 */
export function dayRowStatements(db: Db, versions = true) {
  return {
    bumpVersion: versions
      ? db.prepare('INSERT INTO revenue_day_versions (project_id, day, ver) VALUES (?, ?, 1) ON CONFLICT (project_id, day) DO UPDATE SET ver = ver + 1')
      : null,
    dayLedger: db.prepare(`SELECT type, amount, currency, occurred_at, distinct_id, anonymous_id, customer_key FROM revenue_events
      WHERE project_id = ? AND occurred_at >= ? AND occurred_at < ? AND status = 'posted'`),
    getDay: db.prepare('SELECT rows FROM revenue_day_rows WHERE project_id = ? AND day = ?').pluck(),
    putDay: db.prepare(`INSERT INTO revenue_day_rows (project_id, day, n, rows) VALUES (?, ?, ?, ?)
      ON CONFLICT (project_id, day) DO UPDATE SET n = excluded.n, rows = excluded.rows`),
    dropDay: db.prepare('DELETE FROM revenue_day_rows WHERE project_id = ? AND day = ?'),
  };
}

/** Rewrite one day's blob from the ledger. */
export function rebuildDay(st: ReturnType<typeof dayRowStatements>, intern: (pid: number, key: string) => number, pid: number, day: number): void {
  const rows = st.dayLedger.all(pid, day, day + DAY_MS) as DayRowInput[];
  if (!rows.length) st.dropDay.run(pid, day);
  else st.putDay.run(pid, day, rows.length, encodeDayRows(pid, day, rows, intern));
  st.bumpVersion?.run(pid, day);
}

/** Append rows (all of one day) to that day's blob. */
export function appendDay(st: ReturnType<typeof dayRowStatements>, intern: (pid: number, key: string) => number, pid: number, day: number, rows: readonly DayRowInput[]): void {
  const old = st.getDay.get(pid, day) as Buffer | undefined;
  const add = encodeDayRows(pid, day, rows, intern);
  const blob = old ? Buffer.concat([old, add]) : add;
  st.putDay.run(pid, day, blob.length / ROW_BYTES, blob);
  st.bumpVersion?.run(pid, day);
}

/**
 * Recompute `revenue_daily.converted` of a project in `currency` from its ledger and record it as the
 * rollup currency. Days without ledger rows (expired) keep NULL: reads convert their totals.
 */
export function rebuildConverted(db: Db, pid: number, currency: string): void {
  const rm = reportingMinorOf(currency);
  const sums = new Map<string, { day: number; currency: string; plan: string; type: string; v: number | null }>();
  const it = db
    .prepare(`SELECT occurred_at, currency, COALESCE(plan, '') AS plan, type, amount FROM revenue_events WHERE project_id = ? AND status = 'posted'`)
    .raw(true)
    .iterate(pid) as Iterable<[number, string, string, string, number]>;
  for (const [at, cur, plan, type, amount] of it) {
    const day = dayOf(at);
    const k = `${day}\u0000${cur}\u0000${plan}\u0000${type}`;
    const v = rm(amount, cur);
    const s = sums.get(k);
    if (s) s.v = s.v === null || v === null ? null : s.v + v;
    else sums.set(k, { day, currency: cur, plan, type, v });
  }
  db.prepare('UPDATE revenue_daily SET converted = NULL WHERE project_id = ?').run(pid);
  const set = db.prepare('UPDATE revenue_daily SET converted = ? WHERE project_id = ? AND day = ? AND currency = ? AND plan = ? AND type = ?');
  for (const s of sums.values()) set.run(s.v, pid, s.day, s.currency, s.plan, s.type);
  db.prepare(`INSERT INTO revenue_rollup_currency (project_id, currency) VALUES (?, ?) ON CONFLICT (project_id) DO UPDATE SET currency = excluded.currency`).run(pid, currency);
}

/** Migration 038 backfill: converted sums in each project's reporting currency and every day blob. */
export function backfillRevenueRollups(db: Db): void {
  const intern = keyInterner(db).session();
  const st = dayRowStatements(db, false);
  const projects = db.prepare('SELECT DISTINCT project_id FROM revenue_daily UNION SELECT DISTINCT project_id FROM revenue_events').pluck().all() as number[];
  for (const pid of projects) {
    const cur = (db.prepare('SELECT currency FROM revenue_settings WHERE project_id = ?').pluck().get(pid) as string | undefined) ?? 'USD';
    rebuildConverted(db, pid, cur);
    // Every day with posted rows has a rollup row; one ledger read per day (no writes while iterating).
    for (const day of db.prepare('SELECT DISTINCT day FROM revenue_daily WHERE project_id = ?').pluck().all(pid) as number[]) rebuildDay(st, intern, pid, day);
  }
}
