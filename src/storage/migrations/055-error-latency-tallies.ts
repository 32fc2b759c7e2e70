import type { Migration } from './index.js';
import { backfillErrorLatency, LATENCY_BUCKET_SQL, LATENCY_COUNTED_SQL } from '../error-latency.js';

/**
 * Issue 19 (reads that stay flat), error reads: events.latency read the latency of every event of the
 * window (~0.55 s at 1M events) for exact nearest-rank percentiles. Latencies are fractional (event
 * times are REAL), so a histogram cannot give them; these tallies find the bucket holding each rank
 * and the events of that one bucket are read (src/storage/error-latency.ts).
 *
 * `error_latency_tallies`: per project, period length (`span_ms`: 5 minutes or an hour), filter
 * partition (`dims`), service, environment, period start (UTC, of received time) and source: how
 * many events, the exact sum of their latencies (hex of an integer count of 2^-1074) and their
 * counts per latency bucket (src/domain/errors/latency.ts; int32 pairs). One row per period, not
 * one per bucket: a write batch updates a few dozen rows, not thousands (a row per bucket made the
 * tallies cost as much as the rest of error ingest). Written at ingest, taken off by expiry.
 *
 * `error_events_latency`: the counted events (received at most an hour after they happened) by
 * source, latency bucket and received time, so the events of a window in one bucket are one range.
 */
export const m055ErrorLatencyTallies: Migration = {
  version: 55,
  name: 'per-5-minute and per-hour latency bucket tallies for events.latency',
  sql: `
CREATE TABLE error_latency_tallies (
  project_id INTEGER NOT NULL,
  span_ms INTEGER NOT NULL,
  dims INTEGER NOT NULL,
  service_name TEXT NOT NULL,
  environment TEXT NOT NULL,
  start_ms INTEGER NOT NULL,
  source TEXT NOT NULL,
  n INTEGER NOT NULL,
  sum TEXT NOT NULL,
  counts BLOB NOT NULL,
  PRIMARY KEY (project_id, span_ms, dims, service_name, environment, start_ms, source)
) WITHOUT ROWID;
CREATE INDEX error_events_latency ON error_events(project_id, source, ${LATENCY_BUCKET_SQL}, received_ms, service_name, environment, timestamp_ms)
  WHERE ${LATENCY_COUNTED_SQL};
`,
  backfill: backfillErrorLatency,
};
