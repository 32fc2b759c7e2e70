import type { Migration } from './index.js';

/**
 * Issue 19 (reads that stay flat), error reads: events.latency selects events by received time, and
 * without an index every event of the project was read, whatever the window.
 * `error_events_received` holds what the read needs (source, event time, service, environment), so
 * a window is one index range. Received time only grows: its entries append.
 *
 * Measured and not kept: adding the user key to `error_events_group` (so the in-window event and
 * user counts of errors.list read the index alone) gave no gain with the table in the page cache:
 * that read's cost is counting distinct users per event, not reading rows (see README, "Reads as
 * data grows").
 */
export const m042ErrorReadIndexes: Migration = {
  version: 42,
  name: 'index for error ingestion latency by received time',
  sql: `
CREATE INDEX error_events_received ON error_events(project_id, received_ms, source, timestamp_ms, service_name, environment);
`,
};
