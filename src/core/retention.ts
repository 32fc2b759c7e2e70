/**
 * Background expiry: telemetry older than its retention period goes, in small batches (one short
 * transaction each, the event loop free between them) so requests and ingestion never stall; then,
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
  /** Rows deleted per transaction. */
  batchRows: number;
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

export function createRetentionRunner(deps: {
  repo: RetentionRepo;
  targets: readonly ExpiryTarget[];
  config: RetentionConfig;
  now: () => number;
  log?: Logger;
  metrics?: SelfMetrics;
}): RetentionRunner {
  const { repo, targets, config, now } = deps;
  const deletedTotal = deps.metrics?.counter('sightline_retention_deleted_rows_total', 'Telemetry rows deleted, by kind and reason (retention or disk budget).', ['kind', 'reason']);
  let lastReport: RetentionReport | null = null;
  let running: Promise<RetentionReport> | null = null;
  let timer: NodeJS.Timeout | null = null;
  let stopped = false;
  deps.metrics?.gauge('sightline_retention_last_run_timestamp_seconds', 'When the last expiry pass finished.', () => (lastReport ? (lastReport.started_at + lastReport.ms) / 1000 : 0));
  deps.metrics?.gauge('sightline_disk_budget_used_ratio', 'Data in use over SIGHTLINE_MAX_DB_BYTES (0 without a budget).', () => (config.maxDbBytes ? repo.usedBytes() / config.maxDbBytes : 0));

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
        for (;;) {
          if (stopped) return finish(report, startedAt);
          const n = repo.expireBatch(target, projectId, cutoff, config.batchRows);
          add(report.expired, target.kind, n, 'retention');
          await tick();
          if (n < config.batchRows) break;
        }
      }
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

    // 3. Give freed pages back to the file system, a slice at a time.
    for (;;) {
      if (stopped) break;
      const freed = repo.reclaim(2048);
      report.reclaimed_pages += freed;
      if (freed < 2048) break;
      await tick();
    }
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
