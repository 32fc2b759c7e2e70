import { LOG_COUNT_TABLES } from './migrations/004-log-counts.js';
import { LOG_HTTP_METHOD_SQL } from './attr-keysets.js';

/**
 * A log row's dimensions (level, service, environment, release, source, connector key) stored once
 * per combination in `log_dims` (migration 037): new rows carry `dims` and empty dimension columns;
 * rows from before the migration have `dims` NULL and their own columns. These give the value of a
 * dimension either way.
 */
export type LogDimCol = 'level' | 'service_name' | 'environment' | 'release' | 'source' | 'connector_key';

/** With `log_dims d` LEFT JOINed on `d.id = t.dims`. */
export const logDimJoinSql = (t: string, col: LogDimCol, d = 'd') => `CASE WHEN ${t}.dims IS NULL THEN ${t}.${col} ELSE ${d}.${col} END`;

/** Without a join (a primary-key lookup per row: for pages of rows and triggers). Connector key '' reads as NULL. */
export const logDimSql = (t: string, col: LogDimCol) => {
  const v = `(SELECT ${col} FROM log_dims WHERE id = ${t}.dims)`;
  return `CASE WHEN ${t}.dims IS NULL THEN ${t}.${col} ELSE ${col === 'connector_key' ? `NULLIF(${v}, '')` : v} END`;
};

/** Condition: the row's dimension `col` compared (`op`: '=' or 'GLOB') with the one `?`, given three times with the project id first: [pid, v, v]. */
export const logDimCondSql = (t: string, col: LogDimCol, op: string) =>
  `(${t}.dims IN (SELECT id FROM log_dims WHERE project_id = ? AND ${col} ${op} ?) OR (${t}.dims IS NULL AND ${t}.${col} ${op} ?))`;

/**
 * The `log_dims` id of a log row `t`: its `dims`, or for a row from before migration 037 the
 * combination of its own columns (migration 045 gave every such combination a `log_dims` row).
 */
export const rowDimsIdSql = (t: string) =>
  `COALESCE(${t}.dims, (SELECT id FROM log_dims WHERE project_id = ${t}.project_id AND level = ${t}.level AND service_name = ${t}.service_name
    AND environment = ${t}.environment AND release = ${t}.release AND source = ${t}.source AND connector_key = COALESCE(${t}.connector_key, '')))`;

/**
 * `INSERT … SELECT` of the log count rollups from log rows `l` (the caller appends ON CONFLICT):
 * rows keyed by the dimension combination (migration 045).
 */
export function rollupInsertDims(table: (typeof LOG_COUNT_TABLES)[number], where: string): string {
  const u = table.unitMs;
  return `INSERT INTO ${table.table} (project_id, t, dims${table.http ? ', http_method' : ''}, n)
SELECT l.project_id, CAST(l.time_ms / ${u} AS INTEGER) * ${u}, ${rowDimsIdSql('l')}${table.http ? `, ${LOG_HTTP_METHOD_SQL('l')}` : ''}, count(*)
FROM logs l WHERE ${where} GROUP BY ${table.http ? '1, 2, 3, 4' : '1, 2, 3'}`;
}
