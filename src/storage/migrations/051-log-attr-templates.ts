import type { Migration } from './index.js';
import { LOG_COUNT_TABLES } from './004-log-counts.js';
import { LOG_HTTP_METHOD_SQL } from '../attr-keysets.js';
import { rowDimsIdSql } from '../log-dims.js';

/**
 * Storage per record (issue 22, item 6; figures in bench/retention-bytes.ts): the attribute values a
 * log record shares with many others (method, route, status, logger function …) stored once, in
 * `attr_templates`; the row keeps the values that vary and the template's id in the new column
 * `attr_tmpl` (src/storage/attr-keysets.ts createLogAttrEncoder for the form). About 40 of the 56
 * bytes of attribute text per log record in the bench. `attr_template_pos` spells each template out
 * per position (`pos` '$[i]': the row's `path` to read, or the shared value `val`), so SQL reading one
 * attribute of a row does one key lookup instead of parsing the template.
 *
 * Existing rows are not rewritten: they keep `attr_tmpl` NULL and the whole value list, which is read
 * as before (every reader takes both forms), so a large database upgrades at once and its rows keep
 * their size until they expire. The delete trigger of the log count rollups is recreated so that it
 * finds the HTTP method of rows of either form (LOG_HTTP_METHOD_SQL). The version is recorded so
 * that an older Sightline, which would read a template row's values as the whole list, refuses the
 * database instead.
 */
const decrement = (t: (typeof LOG_COUNT_TABLES)[number]) => `
  UPDATE ${t.table} SET n = n - 1
  WHERE project_id = OLD.project_id AND t = CAST(OLD.time_ms / ${t.unitMs} AS INTEGER) * ${t.unitMs} AND dims = ${rowDimsIdSql('OLD')}${t.http ? ` AND http_method = ${LOG_HTTP_METHOD_SQL('OLD')}` : ''};`;

/** The delete trigger of the log count rollups as this migration makes it (after dropping the one before). */
export const LOGS_COUNTS_DELETE_TRIGGER_051 = `
CREATE TRIGGER logs_counts_delete AFTER DELETE ON logs WHEN NOT EXISTS (SELECT 1 FROM log_counts_batch) BEGIN
${LOG_COUNT_TABLES.map(decrement).join('\n')}
END;`;

export const m051LogAttrTemplates: Migration = {
  version: 51,
  name: 'log attribute values shared by many records stored once (attr_templates, logs.attr_tmpl)',
  sql: `
CREATE TABLE attr_templates (
  id INTEGER PRIMARY KEY,
  vals TEXT NOT NULL UNIQUE
);
CREATE TABLE attr_template_pos (
  tmpl INTEGER NOT NULL,
  pos TEXT NOT NULL,
  path TEXT,
  val,
  PRIMARY KEY (tmpl, pos)
) WITHOUT ROWID;
ALTER TABLE logs ADD COLUMN attr_tmpl INTEGER;
DROP TRIGGER logs_counts_delete;
${LOGS_COUNTS_DELETE_TRIGGER_051}
`,
};
