import { randomUUID } from 'node:crypto';
import type { Db } from './db.js';
import type { DayCounts, MonitorState, ResultStatus } from '../domain/monitors/health.js';
import type { Schedule } from '../domain/monitors/cron.js';
import { DAY_MS } from '../domain/monitors/health.js';

export interface HttpMonitorConfig {
  method: 'GET' | 'HEAD' | 'POST';
  url: string;
  interval_s: number;
  timeout_ms: number;
  expected_status: string;
  body_contains: string | null;
  region: string;
  degraded_after_ms: number | null;
}

export interface CronMonitorConfig {
  schedule: Schedule;
  checkin_margin_min: number;
  max_runtime_min: number;
  timezone: string;
}

export interface MonitorRow {
  id: string;
  project_id: string;
  name: string;
  kind: 'http' | 'cron';
  state: MonitorState;
  paused: boolean;
  config: HttpMonitorConfig | CronMonitorConfig;
  slug: string | null;
  next_expected_at: number | null;
  last_result_at: number | null;
  last_result_status: string | null;
  state_changed_at: number;
  open_incident_id: string | null;
  created_at: number;
  updated_at: number;
}

export interface MonitorResultRow {
  at_ms: number;
  status: string;
  latency_ms: number | null;
  http_status: number | null;
  error: string | null;
  region: string | null;
  check_in_id: string | null;
}

export type ResultStatusIn = ResultStatus | 'missed' | 'timeout' | 'error' | 'in_progress' | 'ok';

/**
 * Where monitor results and their daily counts live: SQLite (below), or ClickHouse when it is
 * configured (clickhouse/monitor-results.ts), so that every process reads the results the
 * scheduler's leader and the check-in receivers wrote. Reads are asynchronous for that reason.
 */
export interface MonitorResultsStore {
  /**
   * Records a result. SQLite: at once, in the caller's transaction. ClickHouse: inside
   * {@link collect}, held for its `write()`; outside, inserted, and the promise resolves once stored.
   */
  add(projectId: number, monitorId: string, r: MonitorResultRow): Promise<void>;
  /**
   * Runs `fn` (the caller's transaction) and returns what it returned with `write()`, which stores the
   * results `fn` recorded; call it once the transaction committed, and go on once it resolved. A
   * transaction that fails drops them (`write` is never called). SQLite: they were written by `fn`.
   */
  collect<T>(fn: () => T): { value: T; write: () => Promise<void> };
  results(projectId: number, monitorId: string, f: { from: number; to: number; status?: string; limit: number; offset: number }): Promise<{ rows: MonitorResultRow[]; total: number }>;
  /** The status of the latest result recorded for a check-in (none: undefined). */
  lastStatusOfCheckIn(projectId: number, monitorId: string, checkInId: string): Promise<string | undefined>;
  days(projectId: number, monitorId: string, sinceDay: number): Promise<DayCounts[]>;
  /** {@link days} of several monitors in one read (a monitor without counts: an empty list). */
  daysOf(projectId: number, monitorIds: readonly string[], sinceDay: number): Promise<Map<string, DayCounts[]>>;
  /** Removes a deleted monitor's results and daily counts (after `remove`'s transaction; SQLite: none left). */
  forget(projectId: number, monitorId: string): Promise<void>;
  /** SQLite: removes them inside `remove`'s transaction. */
  removeNow?(projectId: number, monitorId: string): void;
  /** Drops results older than `resultsBefore` and daily counts older than `daysBefore` (a day number). */
  prune(resultsBefore: number, daysBefore: number): Promise<number>;
}

/* eslint-disable @typescript-eslint/no-explicit-any */
const fromRow = (r: any): MonitorRow => ({ ...r, project_id: String(r.project_id), paused: !!r.paused, config: JSON.parse(r.config) });

/** Monitor results and daily counts in SQLite (tables of migration 017). */
export function createSqliteMonitorResults(db: Db): MonitorResultsStore {
  const s = {
    removeResults: db.prepare('DELETE FROM monitor_results WHERE project_id = ? AND monitor_id = ?'),
    removeDaily: db.prepare('DELETE FROM monitor_daily WHERE project_id = ? AND monitor_id = ?'),
    seq: db.prepare('SELECT COALESCE(MAX(seq), -1) + 1 AS n FROM monitor_results WHERE project_id = ? AND monitor_id = ? AND at_ms = ?'),
    result: db.prepare(`INSERT INTO monitor_results (project_id, monitor_id, at_ms, seq, status, latency_ms, http_status, error, region, check_in_id)
      VALUES (?, ?, ?, ?, ?, ?, ?, ?, ?, ?)`),
    daily: db.prepare(`INSERT INTO monitor_daily (project_id, monitor_id, day, ok, degraded, failed) VALUES (?, ?, ?, ?, ?, ?)
      ON CONFLICT (project_id, monitor_id, day) DO UPDATE SET ok = ok + excluded.ok, degraded = degraded + excluded.degraded, failed = failed + excluded.failed`),
    results: db.prepare(`SELECT at_ms, status, latency_ms, http_status, error, region, check_in_id FROM monitor_results
      WHERE project_id = @pid AND monitor_id = @mid AND at_ms >= @from AND at_ms <= @to AND (@status IS NULL OR status = @status)
      ORDER BY at_ms DESC, seq DESC LIMIT @limit OFFSET @offset`),
    resultsCount: db.prepare(`SELECT COUNT(*) AS n FROM monitor_results WHERE project_id = @pid AND monitor_id = @mid AND at_ms >= @from AND at_ms <= @to
      AND (@status IS NULL OR status = @status)`),
    days: db.prepare('SELECT day, ok, degraded, failed FROM monitor_daily WHERE project_id = ? AND monitor_id = ? AND day >= ? ORDER BY day'),
    pruneResults: db.prepare('DELETE FROM monitor_results WHERE at_ms < ?'),
    pruneDaily: db.prepare('DELETE FROM monitor_daily WHERE day < ?'),
    checkInResult: db.prepare('SELECT status FROM monitor_results WHERE project_id = ? AND monitor_id = ? AND check_in_id = ? ORDER BY at_ms DESC, seq DESC LIMIT 1'),
  };
  return {
    add(pid, monitorId, r) {
      const seq = (s.seq.get(pid, monitorId, r.at_ms) as { n: number }).n;
      s.result.run(pid, monitorId, r.at_ms, seq, r.status, r.latency_ms, r.http_status, r.error, r.region, r.check_in_id);
      if (r.status !== 'in_progress') {
        const ok = r.status === 'up' || r.status === 'ok' ? 1 : 0;
        const degraded = r.status === 'degraded' ? 1 : 0;
        s.daily.run(pid, monitorId, Math.floor(r.at_ms / DAY_MS), ok, degraded, ok || degraded ? 0 : 1);
      }
      return Promise.resolve();
    },
    collect: (fn) => ({ value: fn(), write: () => Promise.resolve() }),
    async results(pid, mid, f) {
      const p = { pid, mid, from: f.from, to: f.to, status: f.status ?? null };
      return { rows: s.results.all({ ...p, limit: f.limit, offset: f.offset }) as MonitorResultRow[], total: (s.resultsCount.get(p) as { n: number }).n };
    },
    async lastStatusOfCheckIn(pid, mid, checkInId) {
      return (s.checkInResult.get(pid, mid, checkInId) as { status: string } | undefined)?.status;
    },
    async days(pid, mid, sinceDay) {
      return s.days.all(pid, mid, sinceDay) as DayCounts[];
    },
    async daysOf(pid, mids, sinceDay) {
      return new Map(mids.map((mid) => [mid, s.days.all(pid, mid, sinceDay) as DayCounts[]]));
    },
    removeNow(pid, mid) {
      s.removeResults.run(pid, mid);
      s.removeDaily.run(pid, mid);
    },
    forget: () => Promise.resolve(),
    async prune(resultsBefore, daysBefore) {
      const n = s.pruneResults.run(resultsBefore).changes;
      s.pruneDaily.run(daysBefore);
      return n;
    },
  };
}

/**
 * Monitors (control data) and their results (append-only, kept for a retention period) with daily
 * counts, in `results`: SQLite's by default, ClickHouse's when it is configured.
 */
export function createMonitorsRepo(db: Db, store?: MonitorResultsStore) {
  const local = createSqliteMonitorResults(db);
  const results = store ?? local;
  const s = {
    insert: db.prepare(`INSERT INTO monitors (id, project_id, name, kind, state, paused, config, slug, next_expected_at, state_changed_at, created_at, updated_at)
      VALUES (@id, @project_id, @name, @kind, @state, @paused, @config, @slug, @next_expected_at, @now, @now, @now)`),
    get: db.prepare('SELECT * FROM monitors WHERE project_id = ? AND id = ?'),
    byName: db.prepare('SELECT * FROM monitors WHERE project_id = ? AND name = ?'),
    bySlug: db.prepare('SELECT * FROM monitors WHERE project_id = ? AND slug = ?'),
    byIdAny: db.prepare('SELECT * FROM monitors WHERE id = ?'),
    list: db.prepare(`SELECT * FROM monitors WHERE project_id = @pid AND (@kind IS NULL OR kind = @kind) AND (@state IS NULL OR state = @state)
      ORDER BY created_at, id LIMIT @limit OFFSET @offset`),
    count: db.prepare(`SELECT COUNT(*) AS n FROM monitors WHERE project_id = @pid AND (@kind IS NULL OR kind = @kind) AND (@state IS NULL OR state = @state)`),
    update: db.prepare(`UPDATE monitors SET name = @name, paused = @paused, state = @state, config = @config, next_expected_at = @next_expected_at,
      state_changed_at = @state_changed_at, open_incident_id = @open_incident_id, last_result_at = @last_result_at,
      last_result_status = @last_result_status, updated_at = @updated_at WHERE project_id = @project_id AND id = @id`),
    remove: db.prepare('DELETE FROM monitors WHERE project_id = ? AND id = ?'),
  };

  const repo = {
    create(projectId: string, m: { name: string; kind: 'http' | 'cron'; config: unknown; slug: string | null; paused: boolean; next_expected_at: number | null }, now: number): MonitorRow {
      const id = randomUUID();
      s.insert.run({ id, project_id: Number(projectId), name: m.name, kind: m.kind, state: m.paused ? 'paused' : 'up', paused: m.paused ? 1 : 0, config: JSON.stringify(m.config), slug: m.slug, next_expected_at: m.next_expected_at, now });
      return repo.get(projectId, id)!;
    },
    get(projectId: string, id: string): MonitorRow | undefined {
      const r = s.get.get(Number(projectId), id);
      return r ? fromRow(r) : undefined;
    },
    /** For the scheduler, which holds only the monitor id. */
    getById(id: string): MonitorRow | undefined {
      const r = s.byIdAny.get(id);
      return r ? fromRow(r) : undefined;
    },
    byName(projectId: string, name: string): MonitorRow | undefined {
      const r = s.byName.get(Number(projectId), name);
      return r ? fromRow(r) : undefined;
    },
    bySlug(projectId: string, slug: string): MonitorRow | undefined {
      const r = s.bySlug.get(Number(projectId), slug);
      return r ? fromRow(r) : undefined;
    },
    list(projectId: string, f: { kind?: string; state?: string; limit: number; offset: number }): { rows: MonitorRow[]; total: number } {
      const p = { pid: Number(projectId), kind: f.kind ?? null, state: f.state ?? null };
      return { rows: (s.list.all({ ...p, limit: f.limit, offset: f.offset }) as any[]).map(fromRow), total: (s.count.get(p) as { n: number }).n };
    },
    save(m: MonitorRow, now: number): void {
      s.update.run({ ...m, project_id: Number(m.project_id), paused: m.paused ? 1 : 0, config: JSON.stringify(m.config), updated_at: now });
    },
    /** Removes the monitor (and with SQLite its results); with ClickHouse, {@link forgetResults} after the commit. */
    remove(projectId: string, id: string): boolean {
      const pid = Number(projectId);
      results.removeNow?.(pid, id);
      return s.remove.run(pid, id).changes === 1;
    },
    /** A deleted monitor's results and daily counts, removed from ClickHouse (SQLite: already gone). */
    forgetResults(projectId: string, id: string): Promise<void> {
      return results.forget(Number(projectId), id);
    },
    /** See {@link MonitorResultsStore.add}. */
    addResult(projectId: string, monitorId: string, r: MonitorResultRow & { status: ResultStatusIn }): Promise<void> {
      return results.add(Number(projectId), monitorId, r);
    },
    /** See {@link MonitorResultsStore.collect}: the results `fn` records, stored by `write()` after the commit. */
    collectResults<T>(fn: () => T): { value: T; write: () => Promise<void> } {
      return results.collect(fn);
    },
    results(projectId: string, monitorId: string, f: { from: number; to: number; status?: string; limit: number; offset: number }): Promise<{ rows: MonitorResultRow[]; total: number }> {
      return results.results(Number(projectId), monitorId, f);
    },
    lastStatusOfCheckIn(projectId: string, monitorId: string, checkInId: string): Promise<string | undefined> {
      return results.lastStatusOfCheckIn(Number(projectId), monitorId, checkInId);
    },
    days(projectId: string, monitorId: string, sinceDay: number): Promise<DayCounts[]> {
      return results.days(Number(projectId), monitorId, sinceDay);
    },
    /** Daily counts of several monitors of a project in one read (monitor lists, status pages). */
    daysOf(projectId: string, monitorIds: readonly string[], sinceDay: number): Promise<Map<string, DayCounts[]>> {
      return results.daysOf(Number(projectId), monitorIds, sinceDay);
    },
    /**
     * Drops results older than `resultsBefore` and daily counts older than `daysBefore` (a day number);
     * with ClickHouse, also those SQLite kept from before (copied by `migrate --to-clickhouse`).
     */
    async prune(resultsBefore: number, daysBefore: number): Promise<number> {
      if (results !== local) await local.prune(resultsBefore, daysBefore);
      return results.prune(resultsBefore, daysBefore);
    },
  };
  return repo;
}

export type MonitorsRepo = ReturnType<typeof createMonitorsRepo>;
