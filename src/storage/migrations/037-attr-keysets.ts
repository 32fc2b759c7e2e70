import type { Migration } from './index.js';
import { HTTP_METHOD_KS_SQL } from '../attr-keysets.js';
import { LOG_COUNT_TABLES } from './004-log-counts.js';

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
 * - `received_ms` of new log and span rows is 0 (one byte less than six): nothing reads it.
 * - The log count delete trigger (migration 004) reads the HTTP method of either form.
 */
const decrement = (t: (typeof LOG_COUNT_TABLES)[number]) => `
  UPDATE ${t.table} SET n = n - 1
  WHERE project_id = OLD.project_id AND t = CAST(OLD.time_ms / ${t.unitMs} AS INTEGER) * ${t.unitMs} AND level = OLD.level
    AND service_name = OLD.service_name AND environment = OLD.environment AND release = OLD.release AND source = OLD.source
    AND connector_key = COALESCE(OLD.connector_key, '')${t.http ? ` AND http_method = ${HTTP_METHOD_KS_SQL('OLD')}` : ''};`;

export const m037AttrKeysets: Migration = {
  version: 37,
  name: 'attribute key sets and scopes stored once for logs and spans',
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
DROP TRIGGER logs_counts_delete;
CREATE TRIGGER logs_counts_delete AFTER DELETE ON logs BEGIN
${LOG_COUNT_TABLES.map(decrement).join('\n')}
END;
`,
};
