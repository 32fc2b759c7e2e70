import type { Migration } from './index.js';

/**
 * Trace read paths (operations/traces.ts, src/storage/traces-read-repo.ts). Two partial indexes, so
 * that ingest pays only for the spans they hold:
 *
 * - `spans_entry`: entry spans (server and consumer spans, and root spans) by service, normalized
 *   operation and start time, covering the columns the operation summaries, the service-map nodes
 *   and the filtered trace list read. A (service, operation) group's rows in a window are one range;
 *   `kind` and `parent_span_id` are in the key only so that a query repeating the index's WHERE is
 *   answered from the index alone. About a third of all spans are entry spans, and inserts land at
 *   the end of each group's range.
 * - `spans_error`: spans with error status by start time (a small share of spans), so that
 *   "traces with errors" never scans the whole window.
 */
export const m005TraceIndexes: Migration = {
  version: 5,
  name: 'trace read indexes',
  sql: `
CREATE INDEX spans_entry ON spans(project_id, service_name, operation, start_ms, duration_ms, status_code, environment, kind, parent_span_id)
  WHERE kind IN (2, 5) OR parent_span_id IS NULL;
CREATE INDEX spans_error ON spans(project_id, start_ms) WHERE status_code = 2;
`,
};
