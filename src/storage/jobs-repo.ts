import type { Db } from './db.js';

/** A job of the shared queue (src/core/scheduler.ts). */
export interface JobRow {
  id: number;
  kind: string;
  key: string;
  payload: unknown;
  run_at: number;
  fence: number;
  attempts: number;
  max_attempts: number;
  last_error: string | null;
  dead: boolean;
}

/* eslint-disable @typescript-eslint/no-explicit-any */
const fromRow = (r: any): JobRow => ({ ...r, payload: JSON.parse(r.payload), dead: !!r.dead });

/**
 * The scheduler's state: jobs keyed by (kind, key), a lease per claimed job with a fencing number,
 * and one leader row so only one process runs jobs. Not project data: the queue serves every domain.
 */
export function createJobsRepo(db: Db) {
  const s = {
    upsert: db.prepare(`INSERT INTO scheduler_jobs (kind, key, payload, run_at, max_attempts, created_at) VALUES (?, ?, ?, ?, ?, ?)
      ON CONFLICT (kind, key) DO UPDATE SET payload = excluded.payload, run_at = excluded.run_at, max_attempts = excluded.max_attempts,
      attempts = 0, dead = 0, last_error = NULL`),
    insertIgnore: db.prepare(`INSERT OR IGNORE INTO scheduler_jobs (kind, key, payload, run_at, max_attempts, created_at) VALUES (?, ?, ?, ?, ?, ?)`),
    get: db.prepare('SELECT * FROM scheduler_jobs WHERE kind = ? AND key = ?'),
    remove: db.prepare('DELETE FROM scheduler_jobs WHERE kind = ? AND key = ?'),
    removePrefix: db.prepare("DELETE FROM scheduler_jobs WHERE kind = ? AND substr(key, 1, length(?)) = ?"),
    due: db.prepare(`SELECT * FROM scheduler_jobs WHERE dead = 0 AND run_at <= ? AND kind IN (SELECT value FROM json_each(?))
      AND (lease_owner IS NULL OR lease_owner != ? OR lease_until <= ?) ORDER BY run_at LIMIT ?`),
    claim: db.prepare('UPDATE scheduler_jobs SET lease_owner = ?, lease_until = ?, fence = fence + 1, attempts = attempts + 1 WHERE id = ?'),
    byIdFence: db.prepare('SELECT * FROM scheduler_jobs WHERE id = ? AND fence = ?'),
    done: db.prepare('DELETE FROM scheduler_jobs WHERE id = ? AND fence = ?'),
    reschedule: db.prepare('UPDATE scheduler_jobs SET run_at = ?, lease_owner = NULL, lease_until = NULL, attempts = 0, last_error = NULL WHERE id = ? AND fence = ?'),
    fail: db.prepare('UPDATE scheduler_jobs SET run_at = ?, lease_owner = NULL, lease_until = NULL, last_error = ?, dead = ? WHERE id = ? AND fence = ?'),
    leader: db.prepare(`INSERT INTO scheduler_leader (name, owner, expires_at) VALUES ('main', ?, ?)
      ON CONFLICT (name) DO UPDATE SET owner = excluded.owner, expires_at = excluded.expires_at
      WHERE scheduler_leader.owner = excluded.owner OR scheduler_leader.expires_at <= ?`),
    leaderRow: db.prepare("SELECT owner, expires_at FROM scheduler_leader WHERE name = 'main'"),
    resign: db.prepare("DELETE FROM scheduler_leader WHERE name = 'main' AND owner = ?"),
    count: db.prepare('SELECT COUNT(*) AS n FROM scheduler_jobs WHERE dead = 0'),
  };

  return {
    /** Creates the job or replaces its payload and due time (a reschedule). */
    put(kind: string, key: string, payload: unknown, runAt: number, maxAttempts: number, now: number): void {
      s.upsert.run(kind, key, JSON.stringify(payload ?? {}), runAt, maxAttempts, now);
    },
    /** Creates the job unless one with this kind and key exists. */
    ensure(kind: string, key: string, payload: unknown, runAt: number, maxAttempts: number, now: number): void {
      s.insertIgnore.run(kind, key, JSON.stringify(payload ?? {}), runAt, maxAttempts, now);
    },
    get(kind: string, key: string): JobRow | undefined {
      const r = s.get.get(kind, key);
      return r ? fromRow(r) : undefined;
    },
    remove(kind: string, key: string): void {
      s.remove.run(kind, key);
    },
    removeByKeyPrefix(kind: string, prefix: string): void {
      s.removePrefix.run(kind, prefix, prefix);
    },
    /** Claims up to `limit` due jobs for `owner` until `leaseUntil`; each claim bumps the job's fence. */
    claimDue: db.transaction((owner: string, kinds: string[], now: number, leaseUntil: number, limit: number): JobRow[] => {
      const rows = (s.due.all(now, JSON.stringify(kinds), owner, now, limit) as any[]).map(fromRow);
      for (const r of rows) {
        s.claim.run(owner, leaseUntil, r.id);
        r.fence += 1;
        r.attempts += 1;
      }
      return rows;
    }),
    /** True while the claim (id, fence) is still the job's latest. */
    stillClaimed(id: number, fence: number): boolean {
      return s.byIdFence.get(id, fence) !== undefined;
    },
    complete(id: number, fence: number, nextRunAt: number | null): boolean {
      const r = nextRunAt === null ? s.done.run(id, fence) : s.reschedule.run(nextRunAt, id, fence);
      return r.changes === 1;
    },
    fail(id: number, fence: number, retryAt: number, error: string, dead: boolean): void {
      s.fail.run(retryAt, error.slice(0, 1000), dead ? 1 : 0, id, fence);
    },
    /** Takes or renews the leader lease; true when `owner` holds it. */
    lead(owner: string, now: number, expiresAt: number): boolean {
      s.leader.run(owner, expiresAt, now);
      const r = s.leaderRow.get() as { owner: string } | undefined;
      return r?.owner === owner;
    },
    resign(owner: string): void {
      s.resign.run(owner);
    },
    /** Runs `fn` in one transaction (a job's effects commit together with its completion). */
    atomic<T>(fn: () => T): T {
      return db.transaction(fn)();
    },
    pending(): number {
      return (s.count.get() as { n: number }).n;
    },
  };
}

export type JobsRepo = ReturnType<typeof createJobsRepo>;
