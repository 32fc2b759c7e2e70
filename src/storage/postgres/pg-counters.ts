/**
 * The shared rate-limit counters in PostgreSQL (issue 20: "Redis when SIGHTLINE_REDIS_URL is set,
 * else PostgreSQL"): the same fixed-window counters as redis-counters.ts, one row per (credential,
 * window) in an UNLOGGED table (PostgreSQL migration 2: a crash may lose a window's counts, as a
 * Redis restart does; no WAL per request). One upsert per request increments the row, or starts it
 * again when its window has passed, and returns the count; now and then one statement removes
 * expired rows. Asynchronous, on a small `pg` pool of its own — a request never blocks the process
 * on it — and bounded by `timeoutMs`, after which the caller counts in the process
 * (src/http/middleware/rate-limit.ts), as it does when Redis is away.
 */
import pg from 'pg';
import type { SharedCounters } from '../redis-counters.js';

const INCR = `INSERT INTO rate_counters (key, count, expires_at) VALUES ($1, 1, $2::bigint + $3::bigint)
ON CONFLICT (key) DO UPDATE SET
  count = CASE WHEN rate_counters.expires_at <= $2 THEN 1 ELSE rate_counters.count + 1 END,
  expires_at = CASE WHEN rate_counters.expires_at <= $2 THEN EXCLUDED.expires_at ELSE rate_counters.expires_at END
RETURNING count`;

export function createPgCounters(url: string, opts: { timeoutMs?: number; now?: () => number } = {}): SharedCounters {
  const timeoutMs = opts.timeoutMs ?? 250;
  const now = opts.now ?? Date.now;
  const pool = new pg.Pool({ connectionString: url, max: 4, query_timeout: timeoutMs, connectionTimeoutMillis: 2000 });
  pool.on('error', () => {}); // an idle connection dropped: the next query gets another
  let connected = false;
  let lastSweep = 0;
  const connecting = pool.query('SELECT 1').then(
    () => (connected = true),
    () => false,
  );
  return {
    get connected() {
      return connected;
    },
    async incr(key, ttlMs) {
      const t = now();
      const r = await pool.query<{ count: string }>(INCR, [key, t, Math.ceil(ttlMs)]);
      connected = true;
      if (t - lastSweep > 60_000) {
        lastSweep = t;
        void pool.query('DELETE FROM rate_counters WHERE expires_at <= $1', [t]).catch(() => {});
      }
      return Number(r.rows[0]!.count);
    },
    async ready(waitMs = 2000) {
      if (connected || (await connecting)) return true;
      // The first probe may have met the 250 ms bound on a loaded machine: probe again, bounded by the wait.
      // (pg reads query_timeout from a query's config too; its types do not list it.)
      const ok = await pool.query({ text: 'SELECT 1', query_timeout: waitMs } as pg.QueryConfig).then(
        () => true,
        () => false,
      );
      if (ok) connected = true;
      return connected;
    },
    async close() {
      await pool.end().catch(() => {});
    },
  };
}
