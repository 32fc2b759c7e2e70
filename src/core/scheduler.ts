/**
 * Why this file: monitors, automations, agent signals, digests and outbound mail all need work done
 * later or again, and that work must survive a restart. One job queue with its state in the database
 * (src/storage/jobs-repo.ts) serves them all.
 *
 * Guarantees:
 * - A job is a row keyed by (kind, key) with a due time; enqueueing the same key again reschedules it.
 * - Only one process runs jobs: a leader lease row (renewed every tick, released on close; after a
 *   SIGKILL the next process takes over once the lease expires).
 * - Claiming a job bumps its fencing number. A handler's database effects run in the same transaction
 *   as the job's completion, and only if the claim is still the latest: a restart or SIGKILL before
 *   that commit loses nothing (the job is still due and runs again), and a job's effects are never
 *   committed twice. Side effects outside the database (an HTTP check, an SMTP send) are at least once.
 * - A handler that throws is retried with exponential backoff (5 s doubling, at most 1 h) until its
 *   max attempts; then the row is kept as dead with its last error.
 * - The clock is injected (`now`); tests drive `runDue()` directly instead of waiting for the timer.
 */
import { randomUUID } from 'node:crypto';
import { hostname } from 'node:os';
import type { JobRow, JobsRepo } from '../storage/jobs-repo.js';

export type { JobRow };

export interface JobOutcome {
  /**
   * Database writes to commit together with the job's completion; may return an after-commit callback
   * (the job's run ends when a promise it returns settles: writes to another store, such as ClickHouse).
   */
  commit?: () => void | (() => void | Promise<void>);
  /**
   * Next due time for a recurring job; omitted or null: the job is done and removed. A function is
   * called inside the commit transaction, after `commit`, so it can read the state `commit` wrote.
   */
  nextRunAt?: number | null | (() => number | null);
}

export type JobHandler = (job: JobRow) => Promise<JobOutcome | void> | JobOutcome | void;

export interface SchedulerOptions {
  now: () => number;
  /** Leader lease length (default 30 s). */
  leaderLeaseMs?: number;
  /** How long a claimed job is reserved for its runner (default 2 min). */
  jobLeaseMs?: number;
  /** Jobs run at once (default 8). */
  concurrency?: number;
  /** Timer period when started (default 1 s). */
  tickMs?: number;
  onError?: (err: unknown, job: JobRow) => void;
}

export interface Scheduler {
  readonly owner: string;
  /** Reports a handler's failure (the server logs it); the job itself is retried. */
  onError: (err: unknown, job: JobRow) => void;
  register(kind: string, handler: JobHandler): void;
  /** Creates the job, or replaces its payload and due time. */
  enqueue(kind: string, key: string, payload: unknown, runAt: number, opts?: { maxAttempts?: number }): void;
  /** Creates the job unless it exists (a recurring job that must not be pushed back). */
  ensure(kind: string, key: string, payload: unknown, runAt: number, opts?: { maxAttempts?: number }): void;
  cancel(kind: string, key: string): void;
  cancelByKeyPrefix(kind: string, prefix: string): void;
  get(kind: string, key: string): JobRow | undefined;
  /** One pass: lead, claim due jobs, run them, commit. Resolves with the number of jobs run. */
  runDue(): Promise<number>;
  start(): void;
  stop(): Promise<void>;
}

export function createScheduler(jobs: JobsRepo, opts: SchedulerOptions): Scheduler {
  // Host and pid first, so an operator (or a test) reading `scheduler_leader` sees which process leads.
  const owner = `${hostname()}:${process.pid}:${randomUUID()}`;
  const handlers = new Map<string, JobHandler>();
  const leaderLeaseMs = opts.leaderLeaseMs ?? 30_000;
  const jobLeaseMs = opts.jobLeaseMs ?? 120_000;
  const concurrency = opts.concurrency ?? 8;
  const tickMs = opts.tickMs ?? 1000;
  let timer: NodeJS.Timeout | null = null;
  let running: Promise<number> | null = null;
  let stopped = false;

  const runOne = async (job: JobRow): Promise<void> => {
    const handler = handlers.get(job.kind)!;
    let outcome: JobOutcome | void;
    try {
      outcome = await handler(job);
    } catch (err) {
      s.onError(err, job);
      const now = opts.now();
      const dead = job.attempts >= job.max_attempts;
      const backoff = Math.min(3_600_000, 5000 * 2 ** Math.max(0, job.attempts - 1));
      try {
        jobs.fail(job.id, job.fence, now + backoff, err instanceof Error ? err.message : String(err), dead);
      } catch (e) {
        s.onError(e, job);
      }
      return;
    }
    let after: void | (() => void | Promise<void>) = undefined;
    try {
      jobs.atomic(() => {
        if (!jobs.stillClaimed(job.id, job.fence)) return; // another runner took it over: commit nothing
        after = outcome?.commit?.();
        const next = typeof outcome?.nextRunAt === 'function' ? outcome.nextRunAt() : outcome?.nextRunAt;
        jobs.complete(job.id, job.fence, next ?? null);
      });
    } catch (err) {
      s.onError(err, job);
      const dead = job.attempts >= job.max_attempts;
      try {
        jobs.fail(job.id, job.fence, opts.now() + 5000, err instanceof Error ? err.message : String(err), dead);
      } catch {
        /* database closed */
      }
      return;
    }
    if (typeof after === 'function') {
      try {
        await (after as () => void | Promise<void>)();
      } catch (err) {
        s.onError(err, job);
      }
    }
  };

  const pass = async (): Promise<number> => {
    if (stopped || handlers.size === 0) return 0;
    const now = opts.now();
    if (!jobs.lead(owner, now, now + leaderLeaseMs)) return 0;
    let total = 0;
    // Jobs made due by this pass's own commits (a one-shot mail enqueued at `now`) run in the same pass.
    for (let round = 0; round < 10; round++) {
      const t = opts.now();
      const claimed = jobs.claimDue(owner, [...handlers.keys()], t, t + jobLeaseMs, concurrency);
      if (claimed.length === 0) break;
      await Promise.all(claimed.map(runOne));
      total += claimed.length;
      if (stopped) break;
    }
    return total;
  };

  const s: Scheduler = {
    owner,
    onError: opts.onError ?? (() => {}),
    register(kind, handler) {
      handlers.set(kind, handler);
    },
    enqueue(kind, key, payload, runAt, o = {}) {
      jobs.put(kind, key, payload, runAt, o.maxAttempts ?? 8, opts.now());
    },
    ensure(kind, key, payload, runAt, o = {}) {
      jobs.ensure(kind, key, payload, runAt, o.maxAttempts ?? 8, opts.now());
    },
    cancel(kind, key) {
      jobs.remove(kind, key);
    },
    cancelByKeyPrefix(kind, prefix) {
      jobs.removeByKeyPrefix(kind, prefix);
    },
    get(kind, key) {
      return jobs.get(kind, key);
    },
    runDue() {
      // Passes never overlap: a second caller waits for the running pass, then runs its own.
      const prev = running ?? Promise.resolve(0);
      const next = prev.catch(() => 0).then(pass);
      running = next;
      return next.finally(() => {
        if (running === next) running = null;
      });
    },
    start() {
      if (timer || stopped) return;
      const tick = () => {
        s.runDue()
          .catch(() => 0)
          .finally(() => {
            if (!stopped) timer = setTimeout(tick, tickMs).unref();
          });
      };
      timer = setTimeout(tick, 0).unref();
    },
    async stop() {
      stopped = true;
      if (timer) clearTimeout(timer);
      timer = null;
      await running?.catch(() => 0);
      try {
        jobs.resign(owner);
      } catch {
        /* database already closed */
      }
    },
  };
  return s;
}
