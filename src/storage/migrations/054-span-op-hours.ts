import type { Migration } from './index.js';
import { backfillOperationRollups } from '../operation-rollups.js';

/**
 * Issue 19 (reads that stay flat): the slowest operations of observability.summary read the duration
 * of every entry span of the window (~55 ms of CPU at 1M spans). `span_op_hours`: per project, hour
 * (of start time), service, operation and environment, the entry spans, the failed ones and their
 * counts per duration bucket (int32 pairs; src/storage/operation-rollups.ts). Written at ingest,
 * taken off by span expiry, backfilled here from the stored spans.
 */
export const m054SpanOpHours: Migration = {
  version: 54,
  name: 'hourly entry-span duration tallies per service and operation',
  sql: `
CREATE TABLE span_op_hours (
  project_id INTEGER NOT NULL,
  hour INTEGER NOT NULL,
  service_name TEXT NOT NULL,
  operation TEXT NOT NULL,
  environment TEXT NOT NULL,
  n INTEGER NOT NULL,
  errors INTEGER NOT NULL,
  counts BLOB NOT NULL,
  PRIMARY KEY (project_id, hour, service_name, operation, environment)
) WITHOUT ROWID;
`,
  backfill: backfillOperationRollups,
};
