import type { Db } from '../db.js';
import { createTracesReadRepo } from '../traces-read-repo.js';
import type { ChEngine } from './client.js';
import { migrateClickHouse } from './schema.js';
import { createChSpanStore, type ChSpanRow } from './span-store.js';
import { createLogsReadRepo } from '../logs-read-repo.js';
import { storedLogRow } from './log-store.js';
import { storedMetricRow, type StoredMetricPoint } from './metric-store.js';
import { insertByPartition, insertResults, type ChMonitorResultRow } from './monitor-results.js';
import { chErrorEventRow, insertErrorEvents, type StoredErrorEvent } from './error-events.js';
import { EVENT_ROW_COLUMNS } from '../errors-repo.js';
import { insertCaptureRows, type ChCaptureRow } from './capture-store.js';
import { OBS_COLUMNS } from '../ai-repo.js';
import { FLAG_COLUMNS } from '../../domain/ai/observation.js';
import { decodeSketch } from '../../domain/releases/sketch.js';
import { insertReleaseRows, sketchColumns, type ChActivityRow, type ChRollupRow } from './release-store.js';

export interface CopyReport {
  spans: number;
  projects: number;
  ms: number;
}

export class CopyRefusedError extends Error {}

/**
 * `sightline migrate --to-clickhouse`: copies every span of the SQLite database into ClickHouse (all
 * fields, as the span store writes them, with their trace chunks and entry operations), in rowid
 * order, `batch` spans per insert. Refuses when ClickHouse already holds spans (a second copy would
 * duplicate them). The SQLite rows stay; retention removes them in time.
 */
export async function copySpansToClickHouse(db: Db, engine: ChEngine, opts: { batch?: number; onProgress?: (copied: number) => void } = {}): Promise<CopyReport> {
  const t0 = Date.now();
  await migrateClickHouse(engine);
  const [held] = await engine.query<{ n: number }>('SELECT count() AS n FROM spans');
  if (Number(held?.n ?? 0) > 0) throw new CopyRefusedError(`ClickHouse already holds ${Number(held!.n)} spans; copying again would duplicate them`);
  const repo = createTracesReadRepo(db);
  const store = createChSpanStore(engine);
  const batch = opts.batch ?? 20_000;
  const projects = new Set<number>();
  let after = 0;
  let copied = 0;
  for (;;) {
    const rows = repo.spansAfter(after, batch);
    if (!rows.length) break;
    const out: ChSpanRow[] = rows.map((r) => {
      projects.add(r.project_id);
      return {
        project_id: r.project_id,
        start_ms: r.start_ms,
        trace_id: r.trace_id,
        span_id: r.span_id,
        parent_span_id: r.parent_span_id ?? '',
        trace_state: r.trace_state ?? '',
        name: r.name,
        operation: r.operation,
        kind: r.kind,
        is_entry: r.kind === 2 || r.kind === 5 || !r.parent_span_id ? 1 : 0,
        service_name: r.service_name,
        environment: r.environment,
        service_version: r.service_version ?? '',
        end_ms: r.end_ms,
        duration_ms: r.duration_ms,
        status_code: r.status_code,
        status_message: r.status_message ?? '',
        attributes: JSON.stringify(r.attributes),
        events: r.events.length ? JSON.stringify(r.events) : '',
        links: r.links.length ? JSON.stringify(r.links) : '',
        scope_name: r.scope_name ?? '',
        scope_version: r.scope_version ?? '',
        source: r.source,
        received_ms: r.received_ms,
      };
    });
    store.addRows(out);
    await store.flush();
    copied += rows.length;
    after = rows[rows.length - 1]!.rowid;
    opts.onProgress?.(copied);
  }
  return { spans: copied, projects: projects.size, ms: Date.now() - t0 };
}

export interface LogCopyReport {
  logs: number;
  projects: number;
  ms: number;
}

/**
 * The log records' part of `sightline migrate --to-clickhouse`: copies every log record of the SQLite
 * database into ClickHouse's `logs` table (all fields, with their ids, and the columns the reads
 * compare, as the log store derives them), in id order, `batch` records per insert. Refuses when
 * ClickHouse already holds log records. The SQLite rows stay; retention removes them in time.
 */
export async function copyLogsToClickHouse(db: Db, engine: ChEngine, opts: { batch?: number; onProgress?: (copied: number) => void } = {}): Promise<LogCopyReport> {
  const t0 = Date.now();
  await migrateClickHouse(engine);
  const [held] = await engine.query<{ n: number }>('SELECT count() AS n FROM logs');
  if (Number(held?.n ?? 0) > 0) throw new CopyRefusedError(`ClickHouse already holds ${Number(held!.n)} log records; copying again would duplicate them`);
  const repo = createLogsReadRepo(db);
  const batch = opts.batch ?? 20_000;
  const projects = new Set<number>();
  let after = 0;
  let copied = 0;
  for (;;) {
    const rows = repo.rowsAfter(after, batch);
    if (!rows.length) break;
    for (const r of rows) projects.add(r.project_id);
    await engine.insert('logs', rows.map(storedLogRow)); // a failure stops the copy with its error
    copied += rows.length;
    after = rows[rows.length - 1]!.id;
    opts.onProgress?.(copied);
  }
  return { logs: copied, projects: projects.size, ms: Date.now() - t0 };
}

export interface MetricCopyReport {
  points: number;
  projects: number;
  ms: number;
}

export interface MonitorCopyReport {
  monitor_results: number;
  monitors: number;
  ms: number;
}

/**
 * The metric points' part of `sightline migrate --to-clickhouse`: copies every metric point of the
 * SQLite database into ClickHouse's `metric_points` table (all fields, its resource's attributes
 * inline, series keys as the ClickHouse writer makes them so that points sent after the copy continue
 * their series), in rowid order (equal times keep their order), `batch` points per insert. Refuses
 * when ClickHouse already holds metric points. SQLite's catalogue and rollups are not copied: with
 * ClickHouse, reads aggregate the points. The SQLite rows stay; retention removes them in time.
 */
export async function copyMetricPointsToClickHouse(db: Db, engine: ChEngine, opts: { batch?: number; onProgress?: (copied: number) => void } = {}): Promise<MetricCopyReport> {
  const t0 = Date.now();
  await migrateClickHouse(engine);
  const [held] = await engine.query<{ n: number }>('SELECT count() AS n FROM metric_points');
  if (Number(held?.n ?? 0) > 0) throw new CopyRefusedError(`ClickHouse already holds ${Number(held!.n)} metric points; copying again would duplicate them`);
  const page = db.prepare(
    `SELECT p.rowid AS rowid, p.project_id, p.metric_name, p.type, p.unit, p.description, p.temporality, p.monotonic, p.service_name, p.environment, p.scope_name,
       p.start_ms, p.time_ms, p.value, p.count, p.sum, p.min, p.max, p.buckets, p.attributes, coalesce(r.attributes, '{}') AS resource, p.flags, p.received_ms, p.exemplars
     FROM metric_points p LEFT JOIN resources r ON r.id = p.resource_id WHERE p.rowid > ? ORDER BY p.rowid LIMIT ?`,
  );
  const batch = opts.batch ?? 20_000;
  const projects = new Set<number>();
  let after = 0;
  let copied = 0;
  for (;;) {
    const rows = page.all(after, batch) as (StoredMetricPoint & { rowid: number })[];
    if (!rows.length) break;
    for (const r of rows) projects.add(r.project_id);
    // Ids in rowid order, below any the writer gives later (it numbers from the clock).
    await engine.insert('metric_points', rows.map((r) => storedMetricRow(r, r.rowid)));
    copied += rows.length;
    after = rows[rows.length - 1]!.rowid;
    opts.onProgress?.(copied);
  }
  return { points: copied, projects: projects.size, ms: Date.now() - t0 };
}

/**
 * The monitor results' part of `sightline migrate --to-clickhouse`: copies every result (with its
 * `seq`: results copied first sort before later ones of equal time) into `monitor_results`, whose
 * view counts them per day; then the daily counts SQLite keeps beyond its results (their retention
 * is shorter) go into `monitor_daily` as the difference, so the days read the same as SQLite's.
 * Refuses when ClickHouse already holds monitor results or counts.
 */
export async function copyMonitorResultsToClickHouse(db: Db, engine: ChEngine, opts: { batch?: number; onProgress?: (copied: number) => void } = {}): Promise<MonitorCopyReport> {
  const t0 = Date.now();
  await migrateClickHouse(engine);
  const [held] = await engine.query<{ n: number }>('SELECT (SELECT count() FROM monitor_results) + (SELECT count() FROM monitor_daily) AS n');
  if (Number(held?.n ?? 0) > 0) throw new CopyRefusedError('ClickHouse already holds monitor results; copying again would duplicate them');
  const batch = opts.batch ?? 20_000;
  const page = db.prepare(`SELECT project_id, monitor_id, at_ms, seq, status, latency_ms, http_status, error, region, check_in_id FROM monitor_results
    WHERE (project_id, monitor_id, at_ms, seq) > (?, ?, ?, ?) ORDER BY project_id, monitor_id, at_ms, seq LIMIT ?`);
  const monitors = new Set<string>();
  let after: [number, string, number, number] = [-1, '', 0, 0];
  let copied = 0;
  for (;;) {
    const rows = page.all(...after, batch) as ChMonitorResultRow[];
    if (!rows.length) break;
    for (const r of rows) monitors.add(r.monitor_id);
    await insertResults(engine, rows);
    copied += rows.length;
    const last = rows[rows.length - 1]!;
    after = [last.project_id, last.monitor_id, last.at_ms, last.seq];
    opts.onProgress?.(copied);
  }
  // The days whose counts are more than their results (the results expired before): the rest.
  const rest = db
    .prepare(`SELECT d.project_id, d.monitor_id, d.day, MAX(0, d.ok - COALESCE(r.ok, 0)) AS ok, MAX(0, d.degraded - COALESCE(r.degraded, 0)) AS degraded,
        MAX(0, d.failed - COALESCE(r.failed, 0)) AS failed
      FROM monitor_daily d LEFT JOIN (
        SELECT project_id, monitor_id, at_ms / 86400000 AS day, SUM(status IN ('up', 'ok')) AS ok, SUM(status = 'degraded') AS degraded,
          SUM(status NOT IN ('up', 'ok', 'degraded', 'in_progress')) AS failed
        FROM monitor_results GROUP BY 1, 2, 3
      ) r ON r.project_id = d.project_id AND r.monitor_id = d.monitor_id AND r.day = d.day
      WHERE d.ok > COALESCE(r.ok, 0) OR d.degraded > COALESCE(r.degraded, 0) OR d.failed > COALESCE(r.failed, 0)`)
    .all() as { project_id: number; monitor_id: string; day: number; ok: number; degraded: number; failed: number }[];
  for (let i = 0; i < rest.length; i += batch) await insertByPartition(engine, 'monitor_daily', rest.slice(i, i + batch), (r) => Math.floor(r.day / 28));
  for (const r of rest) monitors.add(r.monitor_id);
  return { monitor_results: copied, monitors: monitors.size, ms: Date.now() - t0 };
}

export interface ErrorEventCopyReport {
  error_events: number;
  projects: number;
  ms: number;
}

/**
 * The error events' part of `sightline migrate --to-clickhouse`: copies every error event of the
 * SQLite database into ClickHouse's `error_events` (schema.ts migration 7, with the columns the reads
 * compare, as the store derives them) and its id into `error_event_ids` of `ids` (the store holding
 * the groups: this database, or PostgreSQL's through a split database), by (project, event id),
 * `batch` events per insert. Refuses when ClickHouse already holds error events. Groups, their
 * rollups and hourly tallies are not touched: they already count these events. The SQLite rows stay;
 * retention removes them in time.
 */
export async function copyErrorEventsToClickHouse(db: Db, engine: ChEngine, opts: { ids?: Db; batch?: number; onProgress?: (copied: number) => void } = {}): Promise<ErrorEventCopyReport> {
  const t0 = Date.now();
  await migrateClickHouse(engine);
  const [held] = await engine.query<{ n: number }>('SELECT count() AS n FROM error_events');
  if (Number(held?.n ?? 0) > 0) throw new CopyRefusedError(`ClickHouse already holds ${Number(held!.n)} error events; copying again would duplicate them`);
  const ids = opts.ids ?? db;
  const page = db.prepare(`SELECT ${EVENT_ROW_COLUMNS.join(', ')} FROM error_events WHERE (project_id, event_id) > (?, ?) ORDER BY project_id, event_id LIMIT ?`);
  const addId = ids.prepare('INSERT OR IGNORE INTO error_event_ids (project_id, event_id, group_id, timestamp_ms) VALUES (?, ?, ?, ?)');
  const addIds = ids.transaction((rows: StoredErrorEvent[]) => {
    for (const r of rows) addId.run(r.project_id, r.event_id, r.group_id, r.timestamp_ms);
  });
  const batch = opts.batch ?? 20_000;
  const projects = new Set<number>();
  let after: [number, string] = [-1, ''];
  let copied = 0;
  for (;;) {
    const rows = page.all(...after, batch) as StoredErrorEvent[];
    if (!rows.length) break;
    for (const r of rows) projects.add(r.project_id);
    await insertErrorEvents(engine, rows.map(chErrorEventRow)); // a failure stops the copy with its error
    addIds(rows);
    copied += rows.length;
    const last = rows[rows.length - 1]!;
    after = [last.project_id, last.event_id];
    opts.onProgress?.(copied);
  }
  return { error_events: copied, projects: projects.size, ms: Date.now() - t0 };
}

export interface CaptureCopyReport {
  capture_events: number;
  projects: number;
  ms: number;
}

/**
 * The capture events' part of `sightline migrate --to-clickhouse`: copies every product-analytics
 * capture event of the SQLite database into ClickHouse's `capture_events` (all columns, `seq` from the
 * rowid: copied events sort before any the writer adds later), in rowid order, `batch` events per
 * insert. Persons, sessions and touches stay in SQLite. Refuses when ClickHouse already holds capture
 * events. The SQLite rows stay; retention removes them in time.
 */
export async function copyCaptureEventsToClickHouse(db: Db, engine: ChEngine, opts: { batch?: number; onProgress?: (copied: number) => void } = {}): Promise<CaptureCopyReport> {
  const t0 = Date.now();
  await migrateClickHouse(engine);
  const [held] = await engine.query<{ n: number }>('SELECT count() AS n FROM capture_events');
  if (Number(held?.n ?? 0) > 0) throw new CopyRefusedError(`ClickHouse already holds ${Number(held!.n)} capture events; copying again would duplicate them`);
  const page = db.prepare(
    `SELECT rowid AS seq, project_id, ts, event, distinct_id, session_id, pathname, uuid, properties, received_at FROM capture_events WHERE rowid > ? ORDER BY rowid LIMIT ?`,
  );
  const batch = opts.batch ?? 20_000;
  const projects = new Set<number>();
  let after = 0;
  let copied = 0;
  for (;;) {
    const rows = page.all(after, batch) as ChCaptureRow[];
    if (!rows.length) break;
    for (const r of rows) projects.add(r.project_id);
    await insertCaptureRows(engine, rows);
    copied += rows.length;
    after = rows[rows.length - 1]!.seq;
    opts.onProgress?.(copied);
  }
  return { capture_events: copied, projects: projects.size, ms: Date.now() - t0 };
}

export interface AiCopyReport {
  agent_observations: number;
  agent_scores: number;
  ms: number;
}

/**
 * The AI part of `sightline migrate --to-clickhouse`: copies every agent observation and score
 * (current rows: SQLite holds one per id) into `agent_observations` and `agent_scores`, in rowid
 * order, `batch` rows per insert, with their row ids as versions (below any the writer gives later,
 * which numbers from the clock: a later write replaces a copied row). Tombstoned scores are copied
 * as tombstones. SQLite's rollups and session/user totals are not copied: with ClickHouse, reads
 * aggregate the rows. Refuses when ClickHouse already holds observations or scores.
 */
export async function copyAgentObservationsToClickHouse(db: Db, engine: ChEngine, opts: { batch?: number; onProgress?: (copied: number) => void } = {}): Promise<AiCopyReport> {
  const t0 = Date.now();
  await migrateClickHouse(engine);
  const [held] = await engine.query<{ n: number }>('SELECT (SELECT count() FROM agent_observations) + (SELECT count() FROM agent_scores) AS n');
  if (Number(held?.n ?? 0) > 0) throw new CopyRefusedError('ClickHouse already holds agent observations or scores; copying again would duplicate them');
  const batch = opts.batch ?? 20_000;
  const cols = [...OBS_COLUMNS, ...FLAG_COLUMNS].join(', ');
  const obsPage = db.prepare(`SELECT id, project_id, ${cols} FROM agent_observations WHERE id > ? ORDER BY id LIMIT ?`);
  const scorePage = db.prepare(`SELECT * FROM agent_scores WHERE id > ? ORDER BY id LIMIT ?`);
  const out = { agent_observations: 0, agent_scores: 0 };
  for (const [table, page] of [['agent_observations', obsPage], ['agent_scores', scorePage]] as const) {
    let after = 0;
    for (;;) {
      const rows = page.all(after, batch) as ({ id: number } & Record<string, unknown>)[];
      if (!rows.length) break;
      await engine.insert(table, rows.map(({ id, ...r }) => ({ ...r, version: id })));
      out[table] += rows.length;
      after = rows[rows.length - 1]!.id;
      opts.onProgress?.(out.agent_observations + out.agent_scores);
    }
  }
  return { ...out, ms: Date.now() - t0 };
}

export interface ReleaseCopyReport {
  release_rollups: number;
  release_activity: number;
  ms: number;
}

/**
 * The release health part of `sightline migrate --to-clickhouse`: copies SQLite's release rollups
 * (minute and hour cells, sketches as bucket maps) and activity segments (with `approx`) into
 * ClickHouse (schema.ts migration 10), by primary key, `batch` rows per insert; the reads there merge
 * them with what the servers add later as SQLite would. Refuses when ClickHouse already holds release
 * rollups or activity.
 */
export async function copyReleaseRollupsToClickHouse(db: Db, engine: ChEngine, opts: { batch?: number; onProgress?: (copied: number) => void } = {}): Promise<ReleaseCopyReport> {
  const t0 = Date.now();
  await migrateClickHouse(engine);
  const [held] = await engine.query<{ n: number }>(
    'SELECT (SELECT count() FROM release_rollup_1m) + (SELECT count() FROM release_rollup_1h) + (SELECT count() FROM release_activity) AS n',
  );
  if (Number(held?.n ?? 0) > 0) throw new CopyRefusedError('ClickHouse already holds release rollups or activity; copying again would duplicate them');
  const batch = opts.batch ?? 20_000;
  const out = { release_rollups: 0, release_activity: 0 };
  const KEY = '(project_id, service_name, environment, t, version) > (?, ?, ?, ?, ?)';
  for (const unit of ['1m', '1h'] as const) {
    const page = db.prepare(`SELECT project_id, service_name, environment, t, version, spans, requests, errors, sketch FROM release_rollup_${unit}
      WHERE ${KEY} ORDER BY project_id, service_name, environment, t, version LIMIT ?`);
    let after: unknown[] = [-1, '', '', -Infinity, ''];
    for (;;) {
      const rows = page.all(...after, batch) as (Omit<ChRollupRow, 'sketchMap.k' | 'sketchMap.n'> & { sketch: string })[];
      if (!rows.length) break;
      const m = rows.map(({ sketch, ...r }) => ({ ...r, ...sketchColumns(decodeSketch(sketch)) }));
      await insertReleaseRows(engine, unit === '1m' ? { m } : { h: m });
      out.release_rollups += rows.length;
      const last = rows[rows.length - 1]!;
      after = [last.project_id, last.service_name, last.environment, last.t, last.version];
      opts.onProgress?.(out.release_rollups + out.release_activity);
    }
  }
  const page = db.prepare(`SELECT project_id, service_name, environment, version, start_ms, end_ms, approx FROM release_activity
    WHERE (project_id, service_name, environment, version, start_ms) > (?, ?, ?, ?, ?) ORDER BY project_id, service_name, environment, version, start_ms LIMIT ?`);
  let after: unknown[] = [-1, '', '', '', -Infinity];
  for (;;) {
    const rows = page.all(...after, batch) as ChActivityRow[];
    if (!rows.length) break;
    await insertReleaseRows(engine, { a: rows.map((r) => ({ ...r, approx: r.approx ? 1 : 0 })) });
    out.release_activity += rows.length;
    const last = rows[rows.length - 1]!;
    after = [last.project_id, last.service_name, last.environment, last.version, last.start_ms];
    opts.onProgress?.(out.release_rollups + out.release_activity);
  }
  return { ...out, ms: Date.now() - t0 };
}
