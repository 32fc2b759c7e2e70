import type { Migration } from './index.js';
import { LOG_COUNT_TABLES } from './004-log-counts.js';
import { HTTP_METHOD_KS_SQL } from '../attr-keysets.js';
import { rowDimsIdSql } from '../log-dims.js';

/**
 * Storage per record (issue 22, item 6; figures in bench/retention-bytes.ts), third step: the log
 * count rollups (migration 004) keyed by the log's dimension combination (`log_dims.id`, migration
 * 037) instead of repeating its six texts on every rollup row. A rollup row is written per minute
 * (and hour) and combination, so at a few hundred thousand logs a day these rows cost more per log
 * than any index (37 bytes per log in the bench, now about a third of that).
 *
 * - `log_counts_1m` / `log_counts_1h`: (project_id, t, dims, n); `log_counts_http_1m` /
 *   `log_counts_http_1h`: (project_id, t, dims, http_method, n). Readers join `log_dims` for the
 *   dimension values and filter by `dims IN (matching combinations)` (src/storage/logs-read-repo.ts).
 * - Backfill: every combination found in the old rollups gets its `log_dims` row (rows from before
 *   migration 037 had none), then the old rows are copied under the combination's id (rows whose
 *   count fell to 0 carry nothing and are left out).
 * - The delete trigger decrements the row of the deleted log's combination: its `dims`, or for a
 *   row from before migration 037 the combination of its own columns.
 *
 * And span attribute value lists that repeat stored once (`attr_valuesets`; src/storage/attr-keysets.ts
 * createValueSets): a new span row whose value list was seen before holds the list's key in
 * `attributes` (a blob of 1–4 bytes: no row held a blob there before) instead of the text. Rows already stored keep
 * their text and read as before. The lists are few (only repeated ones) and are kept when spans
 * expire, like key sets; the writer stops adding lists past 100,000.
 */
const DIMS = 'level, service_name, environment, release, source, connector_key';

const create = (t: (typeof LOG_COUNT_TABLES)[number]) => `
CREATE TABLE ${t.table}_045 (
  project_id INTEGER NOT NULL,
  t INTEGER NOT NULL,
  dims INTEGER NOT NULL,${t.http ? '\n  http_method TEXT NOT NULL,' : ''}
  n INTEGER NOT NULL,
  PRIMARY KEY (project_id, t, dims${t.http ? ', http_method' : ''})
) WITHOUT ROWID;
INSERT INTO ${t.table}_045 (project_id, t, dims${t.http ? ', http_method' : ''}, n)
SELECT c.project_id, c.t, d.id${t.http ? ', c.http_method' : ''}, c.n FROM ${t.table} c
JOIN log_dims d ON d.project_id = c.project_id AND d.level = c.level AND d.service_name = c.service_name AND d.environment = c.environment
  AND d.release = c.release AND d.source = c.source AND d.connector_key = c.connector_key
WHERE c.n <> 0;
DROP TABLE ${t.table};
ALTER TABLE ${t.table}_045 RENAME TO ${t.table};`;

export const decrement = (t: (typeof LOG_COUNT_TABLES)[number]) => `
  UPDATE ${t.table} SET n = n - 1
  WHERE project_id = OLD.project_id AND t = CAST(OLD.time_ms / ${t.unitMs} AS INTEGER) * ${t.unitMs} AND dims = ${rowDimsIdSql('OLD')}${t.http ? ` AND http_method = ${HTTP_METHOD_KS_SQL('OLD')}` : ''};`;

export const m045LogCountsValueSets: Migration = {
  version: 45,
  name: 'log count rollups keyed by the dimension combination; repeated span attribute values stored once',
  sql: `
CREATE TABLE attr_valuesets (
  n INTEGER PRIMARY KEY,
  id BLOB NOT NULL UNIQUE,
  vals TEXT NOT NULL UNIQUE
);
DROP TRIGGER logs_counts_delete;
INSERT OR IGNORE INTO log_dims (project_id, ${DIMS})
${LOG_COUNT_TABLES.map((t) => `SELECT project_id, ${DIMS} FROM ${t.table}`).join('\nUNION ')};
${LOG_COUNT_TABLES.map(create).join('\n')}
CREATE TRIGGER logs_counts_delete AFTER DELETE ON logs BEGIN
${LOG_COUNT_TABLES.map(decrement).join('\n')}
END;
`,
};
