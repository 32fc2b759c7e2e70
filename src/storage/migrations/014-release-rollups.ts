import type { Migration } from './index.js';

/**
 * Releases (operations/releases.ts). Maintained at ingest by `withReleaseRollups`
 * (src/storage/release-rollups.ts), so release reads never scan raw spans:
 *
 * - `release_rollup_1m` / `release_rollup_1h`: per service, environment, version ('' when the spans
 *   name none) and minute / hour: spans, requests (entry spans: server or consumer spans and root
 *   spans), errors (requests with error status) and a mergeable latency sketch of the requests
 *   (src/domain/releases/sketch.ts). A health window reads whole hours from the hourly table and
 *   the edges from the minute table.
 * - `release_activity`: per service, environment and version, segments [start_ms, end_ms] of span
 *   times with no gap of 15 minutes or more inside (serving rule 3 needs the silences). `approx`
 *   marks a segment whose start is only known to the hour.
 *
 * Spans stored before this migration are backfilled into `release_activity` one segment per hour
 * (start = the hour, so `start_approximate` is true for versions first seen then; end = the last
 * span); their request counts and latencies are not backfilled (a sketch needs the values one by one).
 */
export const m014ReleaseRollups: Migration = {
  version: 14,
  name: 'release rollups and activity',
  sql: `
CREATE TABLE release_rollup_1m (
  project_id INTEGER NOT NULL,
  service_name TEXT NOT NULL,
  environment TEXT NOT NULL,
  t INTEGER NOT NULL,
  version TEXT NOT NULL,
  spans INTEGER NOT NULL,
  requests INTEGER NOT NULL,
  errors INTEGER NOT NULL,
  sketch TEXT NOT NULL,
  PRIMARY KEY (project_id, service_name, environment, t, version)
) WITHOUT ROWID;
CREATE TABLE release_rollup_1h (
  project_id INTEGER NOT NULL,
  service_name TEXT NOT NULL,
  environment TEXT NOT NULL,
  t INTEGER NOT NULL,
  version TEXT NOT NULL,
  spans INTEGER NOT NULL,
  requests INTEGER NOT NULL,
  errors INTEGER NOT NULL,
  sketch TEXT NOT NULL,
  PRIMARY KEY (project_id, service_name, environment, t, version)
) WITHOUT ROWID;
CREATE TABLE release_activity (
  project_id INTEGER NOT NULL,
  service_name TEXT NOT NULL,
  environment TEXT NOT NULL,
  version TEXT NOT NULL,
  start_ms REAL NOT NULL,
  end_ms REAL NOT NULL,
  approx INTEGER NOT NULL DEFAULT 0,
  PRIMARY KEY (project_id, service_name, environment, version, start_ms)
) WITHOUT ROWID;
INSERT INTO release_activity (project_id, service_name, environment, version, start_ms, end_ms, approx)
SELECT project_id, service_name, environment, service_version, CAST(start_ms / 3600000 AS INTEGER) * 3600000, max(start_ms), 1
FROM spans WHERE service_name != '' AND service_version != ''
GROUP BY project_id, service_name, environment, service_version, CAST(start_ms / 3600000 AS INTEGER);
`,
};
