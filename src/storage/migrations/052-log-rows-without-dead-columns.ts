import type { Migration } from './index.js';
import { LOGS_COUNTS_DELETE_TRIGGER_051 } from './051-log-attr-templates.js';
import { rowDimsIdSql } from '../log-dims.js';

/**
 * Storage per record (issue 22, item 6; figures in bench/retention-bytes.ts): log rows without the
 * eight columns that only rows from before migration 037 fill (`level`, `service_name`,
 * `environment`, `release`, `source`, `connector_key`: now the row's `dims`; `scope_name`: now
 * `scope_id`; `received_ms`, not read). Every stored column costs its row a byte of record header
 * even when empty, so 8 bytes per log record (about 4 % of a log's bytes).
 *
 * The table is rewritten: the rows from before migration 037 are converted on the way (their
 * dimension combination gets its `log_dims` row and id, exactly the one the rollups counted them
 * under (log-dims.ts rowDimsIdSql), their scope its `scopes` row), ids are kept (the full-text rows
 * point at them), then the time index and the rollups' delete trigger are made again. The eight names
 * stay as VIRTUAL generated columns (no bytes on disk) giving what a current row holds there ('', NULL
 * for `connector_key`, 0), so SQL that falls back to them for `dims IS NULL` rows still compiles; no
 * row has `dims` NULL any more.
 */
const KEPT = 'id, project_id, time_ms, observed_ms, severity_number, severity_text, body, attributes, trace_id, span_id, resource_id, attr_keys, scope_id, dims, attr_tmpl';

export const m052LogRowsWithoutDeadColumns: Migration = {
  version: 52,
  name: 'log rows without the columns of rows from before migration 037 (dims, scope_id instead)',
  rewritesLargeTable: true,
  sql: `
INSERT OR IGNORE INTO log_dims (project_id, level, service_name, environment, release, source, connector_key)
  SELECT DISTINCT project_id, level, service_name, environment, release, source, COALESCE(connector_key, '') FROM logs WHERE dims IS NULL;
INSERT OR IGNORE INTO scopes (name, version) SELECT DISTINCT scope_name, '' FROM logs WHERE scope_id IS NULL;
CREATE TABLE logs_052 (
  id INTEGER PRIMARY KEY,
  project_id INTEGER NOT NULL,
  time_ms REAL NOT NULL,
  observed_ms REAL NOT NULL,
  severity_number INTEGER NOT NULL,
  severity_text TEXT NOT NULL,
  body TEXT NOT NULL,
  attributes TEXT NOT NULL,
  trace_id TEXT,
  span_id TEXT,
  resource_id INTEGER NOT NULL,
  attr_keys INTEGER,
  scope_id INTEGER,
  dims INTEGER,
  attr_tmpl INTEGER,
  level TEXT GENERATED ALWAYS AS ('') VIRTUAL,
  service_name TEXT GENERATED ALWAYS AS ('') VIRTUAL,
  environment TEXT GENERATED ALWAYS AS ('') VIRTUAL,
  release TEXT GENERATED ALWAYS AS ('') VIRTUAL,
  source TEXT GENERATED ALWAYS AS ('') VIRTUAL,
  connector_key TEXT GENERATED ALWAYS AS (NULL) VIRTUAL,
  scope_name TEXT GENERATED ALWAYS AS ('') VIRTUAL,
  received_ms INTEGER GENERATED ALWAYS AS (0) VIRTUAL
);
INSERT INTO logs_052 (${KEPT})
  SELECT ${KEPT.replace('scope_id, dims', `COALESCE(scope_id, (SELECT s.id FROM scopes s WHERE s.name = logs.scope_name AND s.version = '')), ${rowDimsIdSql('logs')}`)}
  FROM logs ORDER BY id;
DROP TABLE logs;
ALTER TABLE logs_052 RENAME TO logs;
CREATE INDEX logs_time ON logs(project_id, time_ms, dims);
${LOGS_COUNTS_DELETE_TRIGGER_051}
`,
};
