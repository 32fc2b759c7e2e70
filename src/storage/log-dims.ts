import { LOG_COUNT_TABLES } from './migrations/004-log-counts.js';
import { HTTP_METHOD_KS_SQL } from './attr-keysets.js';

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

/** `INSERT … SELECT` of the log count rollups from log rows `l` (the caller appends ON CONFLICT). */
export function rollupInsertDims(table: (typeof LOG_COUNT_TABLES)[number], where: string): string {
  const u = table.unitMs;
  const dims: LogDimCol[] = ['level', 'service_name', 'environment', 'release', 'source'];
  const cols = `${dims.join(', ')}, connector_key${table.http ? ', http_method' : ''}`;
  const http = table.http ? `, ${HTTP_METHOD_KS_SQL('l')}` : '';
  const groups = table.http ? '1, 2, 3, 4, 5, 6, 7, 8, 9' : '1, 2, 3, 4, 5, 6, 7, 8';
  return `INSERT INTO ${table.table} (project_id, t, ${cols}, n)
SELECT l.project_id, CAST(l.time_ms / ${u} AS INTEGER) * ${u}, ${dims.map((c) => logDimJoinSql('l', c)).join(', ')},
  COALESCE(${logDimJoinSql('l', 'connector_key')}, '')${http}, count(*)
FROM logs l LEFT JOIN log_dims d ON d.id = l.dims WHERE ${where} GROUP BY ${groups}`;
}
