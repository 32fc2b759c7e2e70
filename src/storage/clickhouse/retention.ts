import { lit, type ChEngine } from './client.js';
import { VERSIONED, type VersionedTable } from './schema.js';

const DAY_MS = 86_400_000;

/** Tables of spans in ClickHouse, with the column their day partition and their expiry follow. */
const SPAN_TABLES = [
  { table: 'spans', time: 'start_ms', unit: 'ms' },
  { table: 'entry_spans', time: 'start_ms', unit: 'ms' },
  { table: 'entry_minutes', time: 'minute', unit: 'minute' },
  { table: 'trace_chunks', time: 'max_start_ms', unit: 'ms' },
  { table: 'entry_operations', time: 'day', unit: 'day' },
] as const;

const dayNumber = (ms: number) => {
  const d = new Date(ms);
  return d.getUTCFullYear() * 10000 + (d.getUTCMonth() + 1) * 100 + d.getUTCDate();
};
const dayStart = (ms: number) => Math.floor(ms / DAY_MS) * DAY_MS;
/** Start of the day after a YYYYMMDD partition. */
const partitionEnd = (p: number) => Date.UTC(Math.floor(p / 10000), (Math.floor(p / 100) % 100) - 1, p % 100) + DAY_MS;

/**
 * Expiry of the spans kept in ClickHouse, run by the retention pass (src/core/retention.ts) with each
 * project's cutoff. Cutoffs are whole UTC days (a span is kept at most a day past its retention, as
 * with ClickHouse's own day-partition TTLs; 18.16 has no TTL). Days every project's retention has
 * passed are dropped as partitions (no rewrite); a project whose retention is shorter than the
 * longest has its older rows deleted by a mutation (`ALTER TABLE … DELETE`, applied in the
 * background), at most once per day of data. Returns the spans expired.
 */
export async function expireClickHouseSpans(engine: ChEngine, cutoffs: { projectId: string; cutoffMs: number }[]): Promise<number> {
  if (!cutoffs.length) return 0;
  const days = cutoffs.map((c) => ({ pid: Number(c.projectId), cut: dayStart(c.cutoffMs) }));
  const global = Math.min(...days.map((d) => d.cut));
  let expired = 0;
  for (const t of SPAN_TABLES) {
    const parts = await engine.query<{ p: string; rows: number }>(
      `SELECT partition AS p, sum(rows) AS rows FROM system.parts WHERE database = currentDatabase() AND table = ${lit(t.table)} AND active GROUP BY partition`,
    );
    for (const part of parts) {
      const p = Number(part.p);
      if (!Number.isInteger(p) || partitionEnd(p) > global) continue;
      await engine.command(`ALTER TABLE ${t.table} DROP PARTITION ${p}`);
      if (t.table === 'spans') expired += Number(part.rows);
    }
    for (const d of days) {
      if (d.cut <= global) continue;
      const cond = `project_id = ${lit(d.pid)} AND ${t.time} < ${lit(t.unit === 'day' ? dayNumber(d.cut) : t.unit === 'minute' ? d.cut / 60_000 : d.cut)}`;
      const [c] = await engine.query<{ n: number }>(`SELECT count() AS n FROM ${t.table} WHERE ${cond}`);
      if (!c || !Number(c.n)) continue;
      await engine.command(`ALTER TABLE ${t.table} DELETE WHERE ${cond}`);
      if (t.table === 'spans') expired += Number(c.n);
    }
  }
  return expired;
}

/** Whether mutations (background deletes) are still running; tests wait for them. */
export async function clickHouseMutationsPending(engine: ChEngine): Promise<boolean> {
  const [r] = await engine.query<{ n: number }>('SELECT count() AS n FROM system.mutations WHERE database = currentDatabase() AND is_done = 0');
  return Number(r?.n ?? 0) > 0;
}

/**
 * Expiry of the log records kept in ClickHouse (table `logs`, schema.ts migration 4), with each
 * project's log retention: as {@link expireClickHouseSpans} does it — days every project's cutoff
 * has passed are dropped as partitions, a shorter retention deletes its older rows by a mutation.
 * Returns the log records expired.
 */
export function expireClickHouseLogs(engine: ChEngine, cutoffs: { projectId: string; cutoffMs: number }[]): Promise<number> {
  return expireByDay(engine, 'logs', cutoffs);
}

/**
 * Expiry of the metric points kept in ClickHouse (table `metric_points`, schema.ts migration 5), with
 * each project's metric point retention, as {@link expireClickHouseLogs}. Nothing outlives them there
 * (SQLite keeps its catalogue and rollups longer): metric reads cover the retained points.
 */
export function expireClickHouseMetricPoints(engine: ChEngine, cutoffs: { projectId: string; cutoffMs: number }[]): Promise<number> {
  return expireByDay(engine, 'metric_points', cutoffs);
}

/**
 * Expiry of the error events kept in ClickHouse (table `error_events`, schema.ts migration 7), with
 * each project's error event retention, as {@link expireClickHouseLogs}: whole UTC days of event
 * time. What goes with them beside the groups (the hourly tallies of the hours before each cutoff's
 * day, the ids) is the caller's (server.ts). Returns the events expired.
 */
export function expireClickHouseErrorEvents(engine: ChEngine, cutoffs: { projectId: string; cutoffMs: number }[]): Promise<number> {
  return expireByDay(engine, 'error_events', cutoffs, 'timestamp_ms');
}

/** The start of the UTC day of a cutoff: what ClickHouse day expiry keeps from. */
export const expiryDayStart = dayStart;

/**
 * Expiry of the product-analytics capture events kept in ClickHouse (table `capture_events`,
 * schema.ts migration 9), with each project's capture event retention, as {@link expireClickHouseLogs}.
 */
export function expireClickHouseCaptureEvents(engine: ChEngine, cutoffs: { projectId: string; cutoffMs: number }[]): Promise<number> {
  return expireByDay(engine, 'capture_events', cutoffs, 'ts');
}

/**
 * Expiry of agent observations and scores kept in ClickHouse (schema.ts migration 8), with each
 * project's period for them, as {@link expireClickHouseLogs}, by start time. Every stored version
 * goes by its own start (replacements usually keep it; one that moved an observation's start before
 * the cutoff leaves the earlier version, where SQLite drops the observation). Returns the rows
 * expired (versions not yet merged away count too). Nothing outlives them there
 * (SQLite keeps hourly rollups and session/user totals longer): AI reads cover the retained rows.
 */
export async function expireClickHouseAgentObservations(engine: ChEngine, cutoffs: { projectId: string; cutoffMs: number }[]): Promise<number> {
  return expireVersioned(engine, VERSIONED[0], cutoffs);
}

export async function expireClickHouseAgentScores(engine: ChEngine, cutoffs: { projectId: string; cutoffMs: number }[]): Promise<number> {
  return expireVersioned(engine, VERSIONED[1], cutoffs);
}

/** A versioned table's rows, and their keys and superseded marks (schema.ts migration 11: each at its version's start), by start time. */
async function expireVersioned(engine: ChEngine, t: VersionedTable, cutoffs: { projectId: string; cutoffMs: number }[]): Promise<number> {
  const n = await expireByDay(engine, t.table, cutoffs, 'started_ms');
  await expireByMonth(engine, t.keys, cutoffs);
  await expireByMonth(engine, t.superseded, cutoffs);
  return n;
}

/**
 * Month partitions (YYYYMM) every project's cutoff has passed are dropped; nothing else: a key or a
 * mark of a row a shorter-lived project's retention deleted stays until its month goes (look-ups and
 * reads by id find such a key with no row, which they ignore; such a mark excludes no row).
 */
async function expireByMonth(engine: ChEngine, table: string, cutoffs: { projectId: string; cutoffMs: number }[]): Promise<void> {
  if (!cutoffs.length) return;
  const global = Math.min(...cutoffs.map((c) => c.cutoffMs));
  const parts = await engine.query<{ p: string }>(
    `SELECT DISTINCT partition AS p FROM system.parts WHERE database = currentDatabase() AND table = ${lit(table)} AND active`,
  );
  for (const part of parts) {
    const p = Number(part.p);
    if (!Number.isInteger(p) || Date.UTC(Math.floor(p / 100), p % 100, 1) > global) continue; // the month's end (the next month's start)
    await engine.command(`ALTER TABLE ${table} DROP PARTITION ${p}`);
  }
}

/**
 * Expiry of the release rollups and activity kept in ClickHouse (schema.ts migration 10), with each
 * project's period for rollups (`metric_rollups`, 400 days by default: release health outlives the
 * spans, as SQLite's, which keeps it), as {@link expireClickHouseLogs}: cells by their minute or
 * hour, activity rows by their start. Returns the rows expired.
 */
export async function expireClickHouseReleaseRollups(engine: ChEngine, cutoffs: { projectId: string; cutoffMs: number }[]): Promise<number> {
  let n = await expireByDay(engine, 'release_rollup_1m', cutoffs, 't');
  n += await expireByDay(engine, 'release_rollup_1h', cutoffs, 't');
  n += await expireByDay(engine, 'release_activity', cutoffs, 'start_ms');
  return n;
}

/** Day partitions every cutoff passed are dropped; a later project cutoff deletes by a mutation. */
async function expireByDay(engine: ChEngine, table: string, cutoffs: { projectId: string; cutoffMs: number }[], time = 'time_ms'): Promise<number> {
  if (!cutoffs.length) return 0;
  const days = cutoffs.map((c) => ({ pid: Number(c.projectId), cut: dayStart(c.cutoffMs) }));
  const global = Math.min(...days.map((d) => d.cut));
  let expired = 0;
  const parts = await engine.query<{ p: string; rows: number }>(
    `SELECT partition AS p, sum(rows) AS rows FROM system.parts WHERE database = currentDatabase() AND table = ${lit(table)} AND active GROUP BY partition`,
  );
  for (const part of parts) {
    const p = Number(part.p);
    if (!Number.isInteger(p) || partitionEnd(p) > global) continue;
    await engine.command(`ALTER TABLE ${table} DROP PARTITION ${p}`);
    expired += Number(part.rows);
  }
  for (const d of days) {
    if (d.cut <= global) continue;
    const cond = `project_id = ${lit(d.pid)} AND ${time} < ${lit(d.cut)}`;
    const [c] = await engine.query<{ n: number }>(`SELECT count() AS n FROM ${table} WHERE ${cond}`);
    if (!c || !Number(c.n)) continue;
    await engine.command(`ALTER TABLE ${table} DELETE WHERE ${cond}`);
    expired += Number(c.n);
  }
  return expired;
}

/**
 * Expiry of monitor results in ClickHouse (schema.ts migration 6), the `monitor.prune` job's
 * (src/core/monitoring.ts): the results' days that end by `resultsBefore` (whole UTC days, as for
 * spans: a result is kept at most a day past the monitor retention) and the daily counts' months
 * that end by day `daysBefore` are dropped as partitions. Returns the results expired.
 */
export async function expireClickHouseMonitorResults(engine: ChEngine, resultsBefore: number, daysBefore: number): Promise<number> {
  let expired = 0;
  const parts = (table: string) =>
    engine.query<{ p: string; rows: number }>(
      `SELECT partition AS p, sum(rows) AS rows FROM system.parts WHERE database = currentDatabase() AND table = ${lit(table)} AND active GROUP BY partition`,
    );
  for (const part of await parts('monitor_results')) {
    const p = Number(part.p);
    if (!Number.isInteger(p) || partitionEnd(p) > resultsBefore) continue;
    await engine.command(`ALTER TABLE monitor_results DROP PARTITION ${p}`);
    expired += Number(part.rows);
  }
  for (const part of await parts('monitor_daily')) {
    const p = Number(part.p); // YYYYMM
    if (!Number.isInteger(p)) continue;
    const monthEnd = Date.UTC(Math.floor(p / 100), p % 100, 1); // the first day of the next month
    if (monthEnd > daysBefore * DAY_MS) continue;
    await engine.command(`ALTER TABLE monitor_daily DROP PARTITION ${p}`);
  }
  return expired;
}
