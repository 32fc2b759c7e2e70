import type { DayCounts } from '../../domain/monitors/health.js';
import type { MonitorResultRow, MonitorResultsStore } from '../monitors-repo.js';
import { lit, type ChEngine } from './client.js';
import { nextLogId } from './log-store.js';
import { expireClickHouseMonitorResults } from './retention.js';

/** A monitor result as its ClickHouse row (schema.ts, migration 6, table `monitor_results`). */
export interface ChMonitorResultRow extends MonitorResultRow {
  project_id: number;
  monitor_id: string;
  seq: number;
}

const COLS = 'at_ms, status, latency_ms, http_status, error, region, check_in_id';

/* eslint-disable @typescript-eslint/no-explicit-any */
const resultOf = (r: any): MonitorResultRow => ({
  at_ms: Number(r.at_ms),
  status: r.status,
  latency_ms: r.latency_ms === null ? null : Number(r.latency_ms),
  http_status: r.http_status === null ? null : Number(r.http_status),
  error: r.error,
  region: r.region,
  check_in_id: r.check_in_id,
});

/**
 * Inserts rows in as few INSERTs as hold at most 90 partitions (`partOf`) each: ClickHouse refuses
 * an insert block touching more than 100 (`max_partitions_per_insert_block`).
 */
export async function insertByPartition<T extends object>(engine: ChEngine, table: string, rows: readonly T[], partOf: (r: T) => number): Promise<void> {
  let chunk: T[] = [];
  const parts = new Set<number>();
  for (const r of rows) {
    const p = partOf(r);
    if (!parts.has(p) && parts.size === 90) {
      await engine.insert(table, chunk);
      chunk = [];
      parts.clear();
    }
    parts.add(p);
    chunk.push(r);
  }
  await engine.insert(table, chunk);
}

/** Results by day (the table's partitions). */
export const insertResults = (engine: ChEngine, rows: readonly ChMonitorResultRow[]) => insertByPartition(engine, 'monitor_results', rows, (r) => Math.floor(r.at_ms / 86_400_000));

/**
 * Monitor results and their daily counts in ClickHouse (issue 20): with several processes, the
 * scheduler's leader runs the checks and any process may take a check-in, and every process reads
 * the results. A result recorded inside {@link MonitorResultsStore.collect} is held until that call's
 * `write()`, which the caller awaits once its transaction committed: the row is then in ClickHouse
 * before the check's job or the check-in's request is done. `seq` orders results of equal time
 * (newest last) with the log ids' clock (increasing within a process).
 */
export function createChMonitorResults(engine: ChEngine): MonitorResultsStore {
  let held: ChMonitorResultRow[] | null = null;
  const where = (pid: number, mid: string) => `project_id = ${lit(pid)} AND monitor_id = ${lit(mid)}`;
  return {
    add(pid, monitorId, r) {
      const row: ChMonitorResultRow = { project_id: pid, monitor_id: monitorId, seq: nextLogId(), ...r };
      if (held) {
        held.push(row);
        return Promise.resolve();
      }
      return insertResults(engine, [row]);
    },
    collect(fn) {
      const outer = held;
      const mine: ChMonitorResultRow[] = [];
      held = mine;
      let value;
      try {
        value = fn();
      } finally {
        held = outer;
      }
      return { value, write: () => insertResults(engine, mine) };
    },
    async results(pid, monitorId, f) {
      const cond = `${where(pid, monitorId)} AND at_ms >= ${lit(f.from)} AND at_ms <= ${lit(f.to)}${f.status ? ` AND status = ${lit(f.status)}` : ''}`;
      const [rows, [c]] = await Promise.all([
        engine.query(`SELECT ${COLS} FROM monitor_results WHERE ${cond} ORDER BY at_ms DESC, seq DESC LIMIT ${lit(f.limit)} OFFSET ${lit(f.offset)}`),
        engine.query<{ n: number }>(`SELECT count() AS n FROM monitor_results WHERE ${cond}`),
      ]);
      return { rows: rows.map(resultOf), total: Number(c?.n ?? 0) };
    },
    async lastStatusOfCheckIn(pid, monitorId, checkInId) {
      const [r] = await engine.query<{ status: string }>(
        `SELECT status FROM monitor_results WHERE ${where(pid, monitorId)} AND check_in_id = ${lit(checkInId)} ORDER BY at_ms DESC, seq DESC LIMIT 1`,
      );
      return r?.status;
    },
    async days(pid, monitorId, sinceDay) {
      const rows = await engine.query<DayCounts>(
        `SELECT day, sum(ok) AS ok, sum(degraded) AS degraded, sum(failed) AS failed FROM monitor_daily WHERE ${where(pid, monitorId)} AND day >= ${lit(sinceDay)} GROUP BY day ORDER BY day`,
      );
      return rows.map((r) => ({ day: Number(r.day), ok: Number(r.ok), degraded: Number(r.degraded), failed: Number(r.failed) }));
    },
    async daysOf(pid, monitorIds, sinceDay) {
      const out = new Map<string, DayCounts[]>(monitorIds.map((m) => [m, []]));
      if (!monitorIds.length) return out;
      const rows = await engine.query<DayCounts & { monitor_id: string }>(
        `SELECT monitor_id, day, sum(ok) AS ok, sum(degraded) AS degraded, sum(failed) AS failed FROM monitor_daily
          WHERE project_id = ${lit(pid)} AND monitor_id IN (${[...new Set(monitorIds)].map(lit).join(', ')}) AND day >= ${lit(sinceDay)}
          GROUP BY monitor_id, day ORDER BY monitor_id, day`,
      );
      for (const r of rows) out.get(r.monitor_id)?.push({ day: Number(r.day), ok: Number(r.ok), degraded: Number(r.degraded), failed: Number(r.failed) });
      return out;
    },
    async forget(pid, monitorId) {
      // Mutations, applied in the background: the monitor is gone, so nothing reads these rows meanwhile.
      await engine.command(`ALTER TABLE monitor_results DELETE WHERE ${where(pid, monitorId)}`);
      await engine.command(`ALTER TABLE monitor_daily DELETE WHERE ${where(pid, monitorId)}`);
    },
    prune: (resultsBefore, daysBefore) => expireClickHouseMonitorResults(engine, resultsBefore, daysBefore),
  };
}
