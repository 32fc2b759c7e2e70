import type { Migration } from './index.js';
import { HTTP_METHOD_KS_SQL } from '../attr-keysets.js';
import { LOG_COUNT_TABLES } from './004-log-counts.js';
import { logDimSql } from '../log-dims.js';

/**
 * Storage per record (issue 22, item 6; figures in bench/retention-bytes.ts): attribute keys of
 * logs and spans stored once (src/storage/attr-keysets.ts).
 *
 * - `attr_keysets`: one row per distinct list of attribute keys (JSON array, in the order the record
 *   had them), with the JSON paths of `http.request.method` / `http.method` in the value array so
 *   the HTTP log rollups find the method without searching the keys.
 * - `logs.attr_keys`, `spans.attr_keys`: the key set of the row, whose `attributes` then hold the
 *   JSON array of values. Existing rows keep `attr_keys` NULL and their JSON object: readers accept
 *   both forms, so nothing is rewritten (a large database upgrades instantly; old rows keep their
 *   old size until retention expires them).
 * - `scopes`: instrumentation scopes (name, version) stored once; new log and span rows carry
 *   `scope_id` and empty `scope_name` / `scope_version` (src/storage/attr-keysets.ts scopeNameSql).
 * - Trace and span ids of new log rows (trace_id, span_id) and span rows (span_id, parent_span_id)
 *   are stored as bytes when they are lowercase hex of the OTLP length (src/storage/compact-ids.ts);
 *   `spans.trace_id` stays text (trace_chunks and error events join on it).
 * - `log_dims`: each distinct (level, service, environment, release, source, connector key) of a
 *   project's logs, numbered; `logs.dims` names the row's, whose dimension columns are then empty
 *   (src/storage/log-dims.ts reads either form). `logs_time` becomes (project_id, time_ms,
 *   dims): a filtered walk through a window still checks the filter in the index (the filter becomes
 *   `dims IN (ids of the matching combinations)`) with 8-byte keys instead of the five strings.
 *   `logs_service_time` is dropped: it cost 34 bytes per record and served only walks of one service
 *   over a whole window, which the rollups (exact totals, narrowed windows) mostly avoid. Rows from
 *   before the migration have `dims` NULL and are filtered on their columns (the row is read).
 *   Rebuilding `logs_time` reads the whole log table once.
 * - `received_ms` of new log and span rows is 0 (one byte less than six): nothing reads it.
 * - The log count delete trigger (migration 004) reads the HTTP method of either form.
 */
const decrement = (t: (typeof LOG_COUNT_TABLES)[number]) => `
  UPDATE ${t.table} SET n = n - 1
  WHERE project_id = OLD.project_id AND t = CAST(OLD.time_ms / ${t.unitMs} AS INTEGER) * ${t.unitMs} AND level = ${logDimSql('OLD', 'level')}
    AND service_name = ${logDimSql('OLD', 'service_name')} AND environment = ${logDimSql('OLD', 'environment')}
    AND release = ${logDimSql('OLD', 'release')} AND source = ${logDimSql('OLD', 'source')}
    AND connector_key = COALESCE(${logDimSql('OLD', 'connector_key')}, '')${t.http ? ` AND http_method = ${HTTP_METHOD_KS_SQL('OLD')}` : ''};`;

export const m037AttrKeysets: Migration = {
  version: 37,
  name: 'attribute key sets, scopes and log dimensions stored once; compact ids; narrower log time index',
  sql: `
CREATE TABLE attr_keysets (
  id INTEGER PRIMARY KEY,
  keys TEXT NOT NULL UNIQUE,
  http_req_path TEXT,
  http_path TEXT
);
CREATE TABLE scopes (
  id INTEGER PRIMARY KEY,
  name TEXT NOT NULL,
  version TEXT NOT NULL,
  UNIQUE (name, version)
);
ALTER TABLE logs ADD COLUMN attr_keys INTEGER;
ALTER TABLE logs ADD COLUMN scope_id INTEGER;
ALTER TABLE spans ADD COLUMN attr_keys INTEGER;
ALTER TABLE spans ADD COLUMN scope_id INTEGER;
CREATE TABLE log_dims (
  id INTEGER PRIMARY KEY,
  project_id INTEGER NOT NULL,
  level TEXT NOT NULL,
  service_name TEXT NOT NULL,
  environment TEXT NOT NULL,
  release TEXT NOT NULL,
  source TEXT NOT NULL,
  connector_key TEXT NOT NULL,
  UNIQUE (project_id, level, service_name, environment, release, source, connector_key)
);
ALTER TABLE logs ADD COLUMN dims INTEGER;
DROP INDEX logs_time;
CREATE INDEX logs_time ON logs(project_id, time_ms, dims);
DROP INDEX logs_service_time;
DROP TRIGGER logs_counts_delete;
CREATE TRIGGER logs_counts_delete AFTER DELETE ON logs BEGIN
${LOG_COUNT_TABLES.map(decrement).join('\n')}
END;
`,
};
