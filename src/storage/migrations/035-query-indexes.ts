import type { Migration } from './index.js';

/**
 * Issue 11 (answers in one search): metric exemplars.
 *
 * `metric_points.exemplars`: the exemplars an exporter attached to a point (JSON array of
 * {time_ms, value, trace_id, span_id, attributes}); NULL for the (usual) point without, so ingest
 * and reads of points without exemplars stay as they were.
 *
 * Logs by trace id need no new index: the writer adds the trace id as a token of the full-text row
 * (logs_fts `attrs`), so a trace's logs are found through the full-text index (≈10–18% of log
 * write throughput on the storage path alone). A B-tree index on logs(trace_id) was measured first:
 * random 32-character keys cost ≈60% (≈45k → ≈18k rows per CPU second with a trace id on every
 * record).
 */
export const m035QueryIndexes: Migration = {
  version: 35,
  name: 'metric exemplars',
  sql: `
ALTER TABLE metric_points ADD COLUMN exemplars TEXT;
`,
};
