import type { Migration } from './index.js';
import { LOG_COUNT_TABLES } from './004-log-counts.js';
import { decrement } from './045-log-counts-value-sets.js';

/**
 * Log expiry by the batch (issue 22: expiry must not stall the server, and a pass must finish). The
 * delete trigger of the log count rollups (migrations 004, 037, 045) ran four UPDATEs per deleted log,
 * about half of the CPU of expiring a log (8 of 16 µs measured here; the full-text row is most of the
 * rest). Expiry now takes the counts off once per batch, one GROUP BY per rollup table over the rows it
 * is about to delete (src/storage/retention-repo.ts), and marks its transaction in
 * `log_counts_batch` so the trigger stands aside; any other delete of a log still goes through the
 * trigger. Rollup rows whose count reaches 0 go too (rows that carry nothing, as migration 045's
 * backfill already left out).
 */
export const m049LogExpiryBatches: Migration = {
  version: 49,
  name: 'log expiry decrements the log count rollups once per batch',
  sql: `
CREATE TABLE log_counts_batch (on_ INTEGER PRIMARY KEY);
DROP TRIGGER logs_counts_delete;
CREATE TRIGGER logs_counts_delete AFTER DELETE ON logs WHEN NOT EXISTS (SELECT 1 FROM log_counts_batch) BEGIN
${LOG_COUNT_TABLES.map(decrement).join('\n')}
END;
${LOG_COUNT_TABLES.map((t) => `DELETE FROM ${t.table} WHERE n = 0;`).join('\n')}
`,
};
