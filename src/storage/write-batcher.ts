import type { Db } from './db.js';
import { postgresOf } from './postgres/split-db.js';

interface Job {
  fn: () => unknown;
  prepare?: () => void;
  resolve: (v: unknown) => void;
  reject: (e: unknown) => void;
}

/**
 * Group commit for ingestion: writes queued in the same turn of the event loop run in one SQLite
 * transaction, each inside its own savepoint (a failing write rolls back alone). Every promise
 * settles only after the transaction has committed, so an acknowledgement still means "committed".
 * One commit per batch instead of per request is what lets small requests (Sentry envelopes carry
 * one event) reach thousands per second.
 */
/**
 * Runs a write with group commit; `depth()` is how many writes wait for the next commit. `prepare`,
 * when given, runs in the batch's transaction after every participant's `begin()` and before the
 * first job: it says what the job will need (for example the error groups of its events, which a
 * participant then reads for every job of the batch at once) and must neither write nor throw (a
 * throw fails its job, which then does not run).
 */
export type WriteBatch = (<T>(fn: () => T, prepare?: () => void) => Promise<T>) & { depth(): number };

/**
 * A writer that keeps tallies for a whole batch (for example per error group: one UPDATE per group
 * per commit instead of one per event). `begin` when the batch's transaction opens; `jobEnd` after
 * each job, `ok` when the job's savepoint was released (keep what it tallied) or false when it
 * rolled back (drop it); `end` inside the transaction after the last job, before the commit (a throw
 * there rolls the whole batch back and every job fails). Outside a batch the writer writes its
 * tallies itself.
 */
export interface BatchParticipant {
  begin(): void;
  jobEnd(ok: boolean): void;
  end(): void;
  /**
   * After the SQLite commit, for a participant that writes elsewhere (the ClickHouse span store):
   * the batch's jobs are acknowledged only once this resolves; a rejection fails the jobs that had
   * succeeded, with its error.
   */
  commit?(): Promise<void>;
  /** The batch's transaction failed after `end()`: drop what `end()` kept for `commit()`. */
  abort?(): void;
}

/**
 * Aggregates (counts, rollups, summaries) a repository writes once per key per batch: inside a
 * batch a write adds to `job()`, which joins the batch's tally when its job's savepoint is released
 * (a rolled-back job's tally is dropped), and the batch's tally is written by the participant's
 * `end()`, before the commit. Outside a batch `job()` is null: tally and write at once.
 */
export function batchTallies<T>(newTally: () => T, merge: (into: T, from: T) => void, write: (t: T) => void) {
  let inBatch = false;
  let job = newTally();
  let batch = newTally();
  return {
    job: (): T | null => (inBatch ? job : null),
    /** The batch's tally so far (the jobs that ended well), inside a batch. */
    batch: (): T | null => (inBatch ? batch : null),
    participant: {
      begin() {
        inBatch = true;
        job = newTally();
        batch = newTally();
      },
      jobEnd(ok: boolean) {
        if (ok) merge(batch, job);
        job = newTally();
      },
      end() {
        inBatch = false;
        const t = batch;
        batch = newTally();
        write(t);
      },
    } satisfies BatchParticipant,
  };
}

export function createWriteBatcher(db: Db, maxJobs = 512, participants: readonly BatchParticipant[] = []): WriteBatch {
  let queue: Job[] = [];
  let scheduled = false;
  const remoteCommits = participants.filter((p) => p.commit);
  // Each job's savepoint by prepared statements: `db.transaction(job.fn)` per job built five wrapper
  // functions per call (better-sqlite3), several microseconds of a one-event job. Same semantics:
  // SAVEPOINT, the job, RELEASE; on a throw ROLLBACK TO + RELEASE (when SQLite has not already
  // rolled the whole transaction back).
  const savepoint = db.prepare('SAVEPOINT sl_write_job');
  const release = db.prepare('RELEASE sl_write_job');
  const rollbackTo = db.prepare('ROLLBACK TO sl_write_job');
  // With control data in PostgreSQL (split-db.ts) those savepoints are SQLite's alone: a job runs in a
  // nested transaction of the split handle instead, so a failed job's PostgreSQL writes roll back too.
  const nested = postgresOf(db) ? (fn: () => unknown) => db.transaction(fn)() : null;
  const runJob = (fn: () => unknown): unknown => {
    if (nested) {
      const value = nested(() => {
        const v = fn();
        if (v && typeof (v as { then?: unknown }).then === 'function') throw new TypeError('A write batch job cannot return a promise');
        return v;
      });
      return value;
    }
    savepoint.run();
    try {
      const value = fn();
      if (value && typeof (value as { then?: unknown }).then === 'function') throw new TypeError('A write batch job cannot return a promise');
      release.run();
      return value;
    } catch (error) {
      if (db.inTransaction) {
        rollbackTo.run();
        release.run();
      }
      throw error;
    }
  };

  const flush = () => {
    scheduled = false;
    const jobs = queue;
    queue = [];
    const results: ({ ok: true; value: unknown } | { ok: false; error: unknown })[] = [];
    try {
      // BEGIN IMMEDIATE: the write lock first, then the reads. In a deferred transaction a job that
      // reads before it writes (resource ids, error groups) holds a read snapshot when it asks for
      // the write lock, and SQLite answers SQLITE_BUSY at once instead of waiting its busy timeout
      // whenever another connection holds that lock: the WAL checkpointer's RESTART (wal-checkpointer.ts)
      // did so for tens of ms about once a second under ingest, failing every job of the batch
      // (503 storage_unavailable, retry after 30 s). Immediate, the commit waits those ms instead.
      db.transaction(() => {
        for (const p of participants) p.begin();
        const unprepared = jobs.map((job) => {
          try {
            job.prepare?.();
            return undefined;
          } catch (error) {
            return { error };
          }
        });
        for (const [i, job] of jobs.entries()) {
          try {
            const u = unprepared[i];
            if (u) throw u.error;
            results.push({ ok: true, value: runJob(job.fn) });
            for (const p of participants) p.jobEnd(true);
          } catch (error) {
            results.push({ ok: false, error });
            for (const p of participants) p.jobEnd(false);
          }
        }
        for (const p of participants) p.end();
      }).immediate();
    } catch (error) {
      // SQLite rolls the whole transaction back on some errors (disk full, I/O error), so the commit
      // fails with "no transaction is active": the write that hit the error says why, for every job.
      const cause = results.find((r) => !r.ok) as { ok: false; error: unknown } | undefined;
      for (const p of participants) p.abort?.();
      for (const job of jobs) job.reject(cause?.error ?? error);
      return;
    }
    const settle = (failure?: unknown) =>
      jobs.forEach((job, i) => {
        const r = results[i]!;
        if (!r.ok) job.reject(r.error);
        else if (failure !== undefined) job.reject(failure);
        else job.resolve(r.value);
      });
    const remote = remoteCommits.length ? remoteCommits.map((p) => p.commit!()) : null;
    if (!remote) settle();
    else Promise.all(remote).then(() => settle(), (e) => settle(e ?? new Error('remote commit failed')));
  };

  const batch = <T>(fn: () => T, prepare?: () => void) =>
    new Promise<T>((resolve, reject) => {
      queue.push({ fn, ...(prepare ? { prepare } : {}), resolve: resolve as (v: unknown) => void, reject });
      if (queue.length >= maxJobs) flush();
      else if (!scheduled) {
        scheduled = true;
        setImmediate(flush);
      }
    });
  return Object.assign(batch, { depth: () => queue.length });
}
