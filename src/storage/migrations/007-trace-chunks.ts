import type { Migration } from './index.js';

/**
 * A trace's spans without a random index entry per span (issue 19, item 1; figures in bench/ingest.ts).
 *
 * `spans_trace (trace_id)` put every span at a random place in a B-tree: each commit dirtied about one
 * index page per span, which doubled the cost of a span insert. Instead the writer inserts a batch's
 * spans grouped by trace, so each trace's spans of one batch get consecutive rowids, and writes one
 * `trace_chunks` row per trace per batch: the rowid range, the number of spans and errors, and the
 * time range. A trace's spans are the rows of its chunks' rowid ranges (a range read each, checked
 * against trace_id); its summary (span count, errors, start, end) is read from its chunks alone. Only
 * the chunk row lands at a random place, once per trace and batch instead of once per span.
 *
 * Readers verify that the ranges still hold the trace's spans (a VACUUM may renumber the rowids of a
 * table without INTEGER PRIMARY KEY) and otherwise find them by time range (`spans_time`, between the
 * chunks' first and last start) and trace id, so results never depend on the rowids staying put.
 *
 * Existing spans are backfilled: consecutive rowids of the same trace form one chunk (gaps and
 * islands: rowid minus the span's rank within its trace is constant along a run).
 */
export const m007TraceChunks: Migration = {
  version: 7,
  name: 'trace chunks instead of the per-span trace index',
  rewritesLargeTable: true,
  sql: `
CREATE TABLE trace_chunks (
  project_id INTEGER NOT NULL,
  trace_id TEXT NOT NULL,
  first_rowid INTEGER NOT NULL,
  last_rowid INTEGER NOT NULL,
  span_count INTEGER NOT NULL,
  error_count INTEGER NOT NULL,
  min_start_ms REAL NOT NULL,
  max_start_ms REAL NOT NULL,
  max_end_ms REAL NOT NULL,
  PRIMARY KEY (project_id, trace_id, first_rowid)
) WITHOUT ROWID;
INSERT INTO trace_chunks (project_id, trace_id, first_rowid, last_rowid, span_count, error_count, min_start_ms, max_start_ms, max_end_ms)
SELECT project_id, trace_id, min(rid), max(rid), count(*), sum(status_code = 2), min(start_ms), max(start_ms), max(end_ms)
FROM (
  SELECT rowid AS rid, project_id, trace_id, status_code, start_ms, end_ms,
    rowid - row_number() OVER (PARTITION BY project_id, trace_id ORDER BY rowid) AS island
  FROM spans
)
GROUP BY project_id, trace_id, island;
DROP INDEX spans_trace;
`,
};
