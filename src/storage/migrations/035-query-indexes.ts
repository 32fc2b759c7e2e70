import type { Migration } from './index.js';

/**
 * Issue 11 (answers in one search): logs by trace, metric exemplars.
 *
 * 1. `logs_trace` (trace_id; only rows that carry one): logs.search `trace_id` and traces.get's log
 *    records read one trace's logs through it instead of walking a time window. Partial, so logs
 *    without trace context (most of them) cost nothing more on ingest.
 * 2. `metric_points.exemplars`: the exemplars an exporter attached to a point (JSON array of
 *    {time_ms, value, trace_id, span_id, attributes}); NULL for the (usual) point without, so ingest
 *    and reads of points without exemplars stay as they were.
 */
export const m035QueryIndexes: Migration = {
  version: 35,
  name: 'logs by trace id, metric exemplars',
  sql: `
CREATE INDEX logs_trace ON logs(trace_id) WHERE trace_id IS NOT NULL;
ALTER TABLE metric_points ADD COLUMN exemplars TEXT;
`,
};
