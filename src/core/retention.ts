/**
 * Background expiry: telemetry older than its retention period goes, in small batches (one short
 * transaction each, the event loop free between them) so requests and ingestion never stall: a
 * batch holds at most `batchRows` rows and is sized to take about `batchMs`, and while the server is
 * busy the pause after a batch grows so expiry takes about `busyShare` of the event loop (an idle
 * server gets the deletes done at full speed), and as ingest saturates the loop it backs off further,
 * to `saturatedShare` (unless the data is above the disk budget's high-water mark). Then,
 * with a disk budget (`SIGHTLINE_MAX_DB_BYTES`), the oldest telemetry of any kind goes while the data
 * in use is above the high-water mark, down to the low-water mark; then freed pages are returned to
 * the file system (incremental auto-vacuum). Control data is never touched. Aggregates that outlive
 * raw rows: error groups keep their lifetime counts and state; log count rollups follow the logs
 * (a trigger keeps them equal to the rows that remain).
 */
import type { Logger } from 'pino';
import { DAY_MS, DISK_HIGH_WATER, DISK_LOW_WATER, effectiveRetention, type RetentionKind } from '../domain/retention/policy.js';
import type { ExpiryTarget, RetentionRepo } from '../storage/retention-repo.js';
import type { SelfMetrics } from './self-metrics.js';

export interface RetentionConfig {
  /** No project may keep anything longer (days). */
  maxDays: number;
  /** Time between runs. */
  intervalMs: number;
  /** Most rows deleted per transaction. */
  batchRows: number;
  /** Time a transaction aims at (ms): batches shrink below batchRows to stay near it (default 8). */
  batchMs?: number;
  /** Share of the event loop expiry takes while other work keeps it busy, 0 to 1 (default 0.15). */
  busyShare?: number;
  /**
   * Share it backs off to while other work (ingest) keeps the event loop saturated (default 0.04):
   * between half busy and saturated the share goes from `busyShare` down to this. Never below it, so
   * a pass always finishes; not used while the data is above the disk budget's high-water mark.
   */
  saturatedShare?: number;
  /** End each expiry slice with a passive WAL checkpoint (SIGHTLINE_RETENTION_CHECKPOINT=1; default off). */
  checkpointSlices?: boolean;
  /** Disk budget for the data in the database file; 0: none. */
  maxDbBytes: number;
}

export interface RetentionReport {
  started_at: number;
  ms: number;
  /** Rows deleted by retention period, by kind. */
  expired: Partial<Record<RetentionKind, number>>;
  /** Rows deleted to stay within the disk budget, by kind. */
  trimmed: Partial<Record<RetentionKind, number>>;
  reclaimed_pages: number;
  budget: { max_bytes: number; used_bytes: number; state: 'off' | 'ok' | 'trimmed' | 'over_budget' };
}

export interface RetentionRunner {
  /** One full pass (tests call it with an injected clock). */
  runOnce(): Promise<RetentionReport>;
  start(): void;
  stop(): Promise<void>;
  last(): RetentionReport | null;
}

const tick = () => new Promise<void>((r) => setImmediate(r));
const sleep = (ms: number) => (ms < 1 ? tick() : new Promise<void>((r) => setTimeout(r, ms)));

/**
 * How busy the event loop was with other work since the last call, 0 to 1: its active time over the
 * time passed, counted over at least `minWindowMs`. A pause of one turn (setImmediate) lasts a few
 * microseconds and the loop never waits for I/O in it, so event-loop utilization over that window
 * alone is 1 even on an idle server, and expiry then took the saturated back-off after every slice
 * (an idle pass ran at a few per cent of its speed). Over the minimum window, those microseconds are
 * what they are: next to nothing, unless other callbacks ran in them.
 */
export function loopBusy(minWindowMs = 8): () => number {
  let last = performance.eventLoopUtilization();
  return () => {
    const now = performance.eventLoopUtilization();
    const { active, idle } = performance.eventLoopUtilization(now, last);
    last = now;
    const u = active / Math.max(minWindowMs, active + idle);
    return Number.isFinite(u) ? Math.min(1, Math.max(0, u)) : 0;
  };
}

export interface Pacing {
  /** Monotonic ms, to time each batch (performance.now). */
  clock: () => number;
  /** How busy the event loop was since the last call (0 to 1), other work only. */
  busy: () => number;
  /** Waits between batches. */
  pause: (ms: number) => Promise<void>;
}

/** A batch that found the database locked (SQLITE_BUSY / SQLITE_LOCKED and their extended codes). */
const isBusy = (err: unknown) => /^SQLITE_(BUSY|LOCKED)/.test(String((err as { code?: unknown })?.code ?? ''));
/** Pause before a locked batch is taken again, and how many times in a row before the pass gives up. */
const BUSY_RETRY_MS = 1000;
const MAX_BUSY_RETRIES = 30;

/** Busy level (event-loop utilization by other work) from which expiry backs off below its share, and the level where it reaches the floor. */
export const BACKOFF_FROM = 0.5;
export const BACKOFF_FULL = 0.9;

/**
 * The share of the event loop expiry takes at a busy level: `share` up to BACKOFF_FROM, then down
 * linearly to `floor` at BACKOFF_FULL and above (never below the floor: a pass always makes progress).
 */
export function shareAt(busy: number, share: number, floor = share): number {
  const lo = Math.min(share, floor);
  if (busy <= BACKOFF_FROM) return share;
  if (busy >= BACKOFF_FULL) return lo;
  return share - ((busy - BACKOFF_FROM) / (BACKOFF_FULL - BACKOFF_FROM)) * (share - lo);
}

/**
 * Runs `step(limit)` (one transaction of at most `limit` units; returns how many it did) until it does
 * fewer than asked. The limit follows the time a step takes toward `targetMs` (at least `minUnits`,
 * at most `maxUnits`); steps run back to back for a slice of about `targetMs`, then it pauses: only a
 * turn of the event loop while the loop was idle, up to slice × (1 / share − 1) while other work kept
 * it busy; with `floor` (below `share`) the share itself drops toward it as the loop nears saturation
 * (heavy ingest: what expiry takes then comes straight off ingest throughput and read latency).
 * Returns the units done.
 */
export async function paced(
  step: (limit: number) => number,
  opts: {
    maxUnits: number; minUnits: number; targetMs: number; share: number; floor?: number; stopped: () => boolean; onStep?: (n: number) => void;
    /** Run at the end of each slice, its time counted in the slice's (so in the share). */
    afterSlice?: () => void;
  },
  pacing: Pacing,
): Promise<number> {
  let limit = Math.max(1, Math.min(opts.maxUnits, Math.max(opts.minUnits, Math.round(opts.maxUnits / 4))));
  let total = 0;
  let busyRetries = 0;
  pacing.busy();
  for (;;) {
    if (opts.stopped()) return total;
    // Other work since the last slice ended (its pause included).
    const busy = Math.min(1, Math.max(0, pacing.busy()));
    // A slice: batches one after another until `targetMs` is used (so quick batches are not each
    // made to wait for a turn of a busy event loop), then the event loop gets its turn.
    const slice = pacing.clock();
    let done = false;
    for (;;) {
      const t0 = pacing.clock();
      let n: number;
      try {
        n = step(limit);
      } catch (err) {
        // The database stayed locked past the busy timeout (another process's long write, a
        // checkpoint): the batch rolled back; wait and take it again rather than end the pass.
        if (!isBusy(err) || ++busyRetries > MAX_BUSY_RETRIES) throw err;
        pacing.busy();
        await pacing.pause(BUSY_RETRY_MS);
        if (opts.stopped()) return total;
        continue;
      }
      busyRetries = 0;
      const took = Math.max(0, pacing.clock() - t0);
      total += n;
      opts.onStep?.(n);
      if (n < limit) {
        done = true;
        break;
      }
      // Next batch: sized toward the time target (by at most ×2 / ÷4 a step, so one slow batch does not swing it).
      const scaled = took > 0 ? limit * Math.min(2, Math.max(0.25, opts.targetMs / took)) : limit * 2;
      limit = Math.max(Math.max(1, opts.minUnits), Math.min(opts.maxUnits, Math.round(scaled)));
      if (pacing.clock() - slice >= opts.targetMs || opts.stopped()) break;
    }
    opts.afterSlice?.();
    const took = Math.max(0, pacing.clock() - slice);
    pacing.busy(); // the slice itself is not other work
    if (done) return total;
    await pacing.pause(took * (1 / shareAt(busy, opts.share, opts.floor) - 1) * busy);
  }
}

export function createRetentionRunner(deps: {
  repo: RetentionRepo;
  targets: readonly ExpiryTarget[];
  config: RetentionConfig;
  now: () => number;
  log?: Logger;
  metrics?: SelfMetrics;
  /** Timing of batches (tests inject it); default: performance.now, event-loop utilization, setTimeout. */
  pacing?: Pacing;
  /**
   * Telemetry kept outside SQLite (spans in ClickHouse): given each project's cutoff for the kind,
   * expires what is older and returns how many rows went. Run after the SQLite targets.
   */
  external?: { kind: RetentionKind; expire(cutoffs: { projectId: string; cutoffMs: number }[]): Promise<number> }[];
}): RetentionRunner {
  const { repo, targets, config, now } = deps;
  const batchMs = config.batchMs ?? 8;
  const pacing: Pacing = deps.pacing ?? { clock: () => performance.now(), busy: loopBusy(batchMs), pause: sleep };
  const share = Math.min(1, Math.max(0.01, config.busyShare ?? 0.15));
  const saturated = Math.min(share, Math.max(0.01, config.saturatedShare ?? 0.04));
  /** The share's floor under saturation: none (the full share) while the data is above the disk budget's high-water mark, where expiry has to keep up. */
  const floor = () => (config.maxDbBytes && repo.usedBytes() > config.maxDbBytes * DISK_HIGH_WATER ? share : saturated);
  const deletedTotal = deps.metrics?.counter('sightline_retention_deleted_rows_total', 'Telemetry rows deleted, by kind and reason (retention or disk budget).', ['kind', 'reason']);
  let lastReport: RetentionReport | null = null;
  let running: Promise<RetentionReport> | null = null;
  let timer: NodeJS.Timeout | null = null;
  let stopped = false;
  deps.metrics?.gauge('sightline_retention_last_run_timestamp_seconds', 'When the last expiry pass finished.', () => (lastReport ? (lastReport.started_at + lastReport.ms) / 1000 : 0));
  deps.metrics?.gauge('sightline_disk_budget_used_ratio', 'Data in use over SIGHTLINE_MAX_DB_BYTES (0 without a budget).', () => (config.maxDbBytes ? repo.usedBytes() / config.maxDbBytes : 0));

  /**
   * Deletes dirty pages all over the old part of each table and index, and the write-ahead log grows
   * with them until a commit passes the auto-checkpoint threshold: that commit (usually ingestion's)
   * then copies the whole log back, a stall charged to whoever committed. With
   * SIGHTLINE_RETENTION_CHECKPOINT=1 each expiry slice ends with a passive checkpoint instead, its time
   * counted in expiry's share of the event loop (an experiment of issue 22; off by default).
   */
  const afterSlice = config.checkpointSlices && repo.checkpoint ? () => repo.checkpoint!() : undefined;
  const add = (into: Partial<Record<RetentionKind, number>>, kind: RetentionKind, n: number, reason: string) => {
    if (!n) return;
    into[kind] = (into[kind] ?? 0) + n;
    deletedTotal?.inc({ kind, reason }, n);
  };

  async function pass(): Promise<RetentionReport> {
    const startedAt = now();
    const report: RetentionReport = { started_at: startedAt, ms: 0, expired: {}, trimmed: {}, reclaimed_pages: 0, budget: { max_bytes: config.maxDbBytes, used_bytes: 0, state: config.maxDbBytes ? 'ok' : 'off' } };

    // 1. Retention periods.
    for (const projectId of repo.projects()) {
      const settings = repo.settings(projectId);
      for (const target of targets) {
        const days = effectiveRetention(target.kind, settings[target.kind], config.maxDays).days;
        const cutoff = startedAt - days * DAY_MS;
        await paced(
          (limit) => repo.expireBatch(target, projectId, cutoff, limit),
          { maxUnits: config.batchRows, minUnits: 16, targetMs: batchMs, share, floor: floor(), stopped: () => stopped, onStep: (n) => add(report.expired, target.kind, n, 'retention'), afterSlice },
          pacing,
        );
        if (stopped) return finish(report, startedAt);
      }
    }

    // 1b. Retention periods of telemetry kept elsewhere (ClickHouse).
    for (const ext of deps.external ?? []) {
      const cutoffs = repo.projects().map((projectId) => ({ projectId, cutoffMs: startedAt - effectiveRetention(ext.kind, repo.settings(projectId)[ext.kind], config.maxDays).days * DAY_MS }));
      add(report.expired, ext.kind, await ext.expire(cutoffs), 'retention');
      if (stopped) return finish(report, startedAt);
    }

    // 2. Disk budget: the oldest telemetry of any kind and project first.
    if (config.maxDbBytes) {
      let used = repo.usedBytes();
      if (used > config.maxDbBytes * DISK_HIGH_WATER) {
        deps.log?.warn({ used_bytes: used, max_bytes: config.maxDbBytes }, 'disk budget: above the high-water mark, deleting the oldest telemetry');
        report.budget.state = 'trimmed';
        const projects = repo.projects();
        while (used > config.maxDbBytes * DISK_LOW_WATER && !stopped) {
          let pick: { target: ExpiryTarget; projectId: string; oldest: number } | null = null;
          for (const projectId of projects) {
            for (const target of targets) {
              // Deleting rows kept elsewhere (PostgreSQL) would free nothing here.
              if (repo.inFile && !repo.inFile(target)) continue;
              const oldest = repo.oldest(target, projectId);
              if (oldest !== null && (!pick || oldest < pick.oldest)) pick = { target, projectId, oldest };
            }
          }
          if (!pick) {
            report.budget.state = 'over_budget'; // nothing left that may be deleted: control data alone fills it
            deps.log?.error({ used_bytes: used, max_bytes: config.maxDbBytes }, 'disk budget: no telemetry left to delete');
            break;
          }
          // An hour of the oldest data at a time, in batches.
          const n = repo.expireBatch(pick.target, pick.projectId, pick.oldest + 3_600_000, config.batchRows);
          add(report.trimmed, pick.target.kind, n, 'disk_budget');
          await tick();
          used = repo.usedBytes();
        }
        if (report.budget.state === 'trimmed') deps.log?.warn({ used_bytes: used, trimmed: report.trimmed }, 'disk budget: back under the low-water mark');
      }
      report.budget.used_bytes = used;
    }

    // 3. Give freed pages back to the file system, a slice at a time (paced like the deletes).
    // At most the pages free when this step starts: under ingest the full-text index's merges keep
    // freeing pages, and chasing them would keep the pass from ever finishing.
    let budget = repo.freePages();
    await paced(
      (pages) => {
        if (budget <= 0) return 0;
        const n = repo.reclaim(Math.min(pages, budget));
        budget -= Math.max(n, 1);
        return n;
      },
      { maxUnits: 2048, minUnits: 64, targetMs: batchMs, share, floor: saturated, stopped: () => stopped, onStep: (n) => (report.reclaimed_pages += n) },
      pacing,
    );
    return finish(report, startedAt);
  }

  function finish(report: RetentionReport, startedAt: number): RetentionReport {
    report.ms = Math.max(0, now() - startedAt);
    lastReport = report;
    const expired = Object.values(report.expired).reduce((a, b) => a + (b ?? 0), 0);
    const trimmed = Object.values(report.trimmed).reduce((a, b) => a + (b ?? 0), 0);
    if (expired || trimmed) deps.log?.info({ expired: report.expired, trimmed: report.trimmed, reclaimed_pages: report.reclaimed_pages }, 'retention pass');
    return report;
  }

  const runOnce = () => {
    running ??= pass().finally(() => (running = null));
    return running;
  };

  return {
    runOnce,
    last: () => lastReport,
    start() {
      if (timer || !config.intervalMs) return;
      const loop = () => {
        timer = setTimeout(() => {
          runOnce()
            .catch((err) => deps.log?.error({ err }, 'retention pass failed'))
            .finally(() => {
              if (!stopped) loop();
            });
        }, config.intervalMs);
        timer.unref();
      };
      loop();
    },
    async stop() {
      stopped = true;
      if (timer) clearTimeout(timer);
      await running?.catch(() => {});
    },
  };
}
