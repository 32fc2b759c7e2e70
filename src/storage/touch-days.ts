/**
 * Marketing touches packed per (project, day) at capture time (migration 043), for attribution: one
 * blob per day of that day's `analytics_touches` rows — time in the day, distinct id, source, medium
 * and campaign as ids of `revenue_keys` (`d:<distinct id>`, the same ids the packed ledger rows use,
 * and `v:<value>`; -1 for none) — so a read decodes the days of its range instead of walking the
 * touch table. Touches are only ever inserted (they do not expire), so blobs are only appended to.
 * The distinct id is kept, not the person: a read resolves persons as the touch table's readers do,
 * so identity merges need no rewrite.
 */
import type { Db } from './db.js';
import { DAY_MS, dayOf, keyInterner } from './revenue-rollup.js';
import { inList, multiRow } from './multi-row.js';

/** Bytes per packed touch: u32 ms in day, i32 distinct id, i32 source, i32 medium, i32 campaign. */
export const TOUCH_BYTES = 20;

export interface TouchInput {
  ts: number;
  distinct_id: string;
  source: string | null;
  medium: string | null;
  campaign: string | null;
}

export function encodeTouches(pid: number, day: number, touches: readonly TouchInput[], intern: (pid: number, key: string) => number): Buffer {
  const buf = Buffer.alloc(touches.length * TOUCH_BYTES);
  const val = (v: string | null) => (v === null ? -1 : intern(pid, `v:${v}`));
  let o = 0;
  for (const t of touches) {
    buf.writeUInt32LE(t.ts - day, o);
    buf.writeInt32LE(intern(pid, `d:${t.distinct_id}`), o + 4);
    buf.writeInt32LE(val(t.source), o + 8);
    buf.writeInt32LE(val(t.medium), o + 12);
    buf.writeInt32LE(val(t.campaign), o + 16);
    o += TOUCH_BYTES;
  }
  return buf;
}

export function touchDayStatements(db: Db) {
  return {
    // The days of a batch read in one statement and written in one (per 100 days): with the touch days
    // in PostgreSQL each statement is a round trip made while holding the write lock.
    get: inList(db, (marks) => `SELECT day, touches FROM analytics_touch_days WHERE project_id = ? AND day IN (${marks})`),
    put: multiRow(db, 'INSERT INTO analytics_touch_days (project_id, day, n, touches)', 4, 'ON CONFLICT (project_id, day) DO UPDATE SET n = excluded.n, touches = excluded.touches'),
  };
}

/**
 * The `revenue_keys` a batch of touches interns, in the order encodeTouches first asks for them (days
 * in order of first touch): interned in that order, they get the ids one call per key would give.
 */
function touchKeys(byDay: ReadonlyMap<number, readonly TouchInput[]>): string[] {
  const keys: string[] = [];
  for (const l of byDay.values()) {
    for (const t of l) {
      keys.push(`d:${t.distinct_id}`);
      for (const v of [t.source, t.medium, t.campaign]) if (v !== null) keys.push(`v:${v}`);
    }
  }
  return keys;
}

/**
 * Append touches (any days) to their day blobs. Call inside the transaction that inserts them.
 * `intern.prime`, when given, interns every key of the batch at once beforehand (keyInterner).
 */
export function appendTouches(
  st: ReturnType<typeof touchDayStatements>,
  intern: ((pid: number, key: string) => number) & { prime?: (pid: number, keys: readonly string[]) => void },
  pid: number,
  touches: readonly TouchInput[],
): void {
  const byDay = new Map<number, TouchInput[]>();
  for (const t of touches) {
    const d = dayOf(t.ts);
    const l = byDay.get(d);
    if (l) l.push(t);
    else byDay.set(d, [t]);
  }
  intern.prime?.(pid, touchKeys(byDay));
  const old = new Map<number, Buffer>();
  st.get([...byDay.keys()], (s, days) => {
    for (const [day, blob] of s.raw(true).all(pid, ...days) as [number, Buffer][]) old.set(day, blob);
  });
  const rows: unknown[][] = [];
  for (const [day, l] of byDay) {
    const add = encodeTouches(pid, day, l, intern);
    const prev = old.get(day);
    const blob = prev ? Buffer.concat([prev, add]) : add;
    rows.push([pid, day, blob.length / TOUCH_BYTES, blob]);
  }
  st.put(rows, (s, args) => s.run(...args));
}

/** Migration 043 backfill: every day blob from the touch table, a month of touches at a time. */
export function backfillTouchDays(db: Db): void {
  const intern = keyInterner(db).session();
  const st = touchDayStatements(db);
  db.prepare('DELETE FROM analytics_touch_days').run();
  const span = db.prepare('SELECT project_id, MIN(ts) AS lo, MAX(ts) AS hi FROM analytics_touches GROUP BY project_id').all() as { project_id: number; lo: number; hi: number }[];
  const read = db.prepare(`SELECT ts, distinct_id, source, medium, campaign FROM analytics_touches WHERE project_id = ? AND ts >= ? AND ts < ?
    ORDER BY ts, distinct_id, source, medium, campaign`);
  const STEP = 30 * DAY_MS;
  for (const { project_id: pid, lo, hi } of span) {
    for (let a = dayOf(lo); a <= hi; a += STEP) appendTouches(st, intern, pid, read.all(pid, a, a + STEP) as TouchInput[]);
  }
}
