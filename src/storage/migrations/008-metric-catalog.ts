import type { Migration } from './index.js';

/**
 * Per-hour metric catalogue (issue 19, item 6): `metrics.list` and the candidate metrics of
 * `observability.summary` read these instead of every point of the window (bench/scaling.ts).
 *
 * - `metric_catalog`: per project, hour (start, epoch ms), metric name, type, service, environment
 *   and unit: the largest description, first and last point time, number of points and the samples
 *   they count (1 per gauge or sum point, a delta or unspecified histogram point's count, 0 for a
 *   cumulative histogram point: those count through their growth, below).
 * - `metric_catalog_runs`: the same per cumulative (exponential) histogram run (series key, scope
 *   and start time; a NULL start time is stored as -1): first and last point time and the smallest
 *   and largest count, from which a window's growth is computed exactly as from the points.
 *
 * The writer maintains both per ingest batch (one GROUP BY over the rows just written, in the same
 * transaction, like the log rollups). A read uses a catalogue row as it is when all its points lie
 * inside the window (its first and last time tell), and aggregates the points of the rows that
 * straddle a window edge, so results equal those computed from the points.
 */

/** Samples a point counts (see above). */
export const METRIC_SAMPLES_SQL = "CASE WHEN type IN ('gauge', 'sum') THEN 1 WHEN temporality = 'cumulative' THEN 0 ELSE coalesce(count, 0) END";
export const CUMULATIVE_HIST_SQL = "temporality = 'cumulative' AND type IN ('hist', 'exponential_histogram')";
export const HOUR_SQL = 'CAST(time_ms / 3600000 AS INTEGER) * 3600000';

const KEY = 'metric_name, type, service_name, environment, unit';

/** Catalogue rows aggregated from `metric_points` rows matching `where`. */
export const catalogSelect = (where: string) =>
  `SELECT project_id, ${HOUR_SQL}, ${KEY}, max(description), min(time_ms), max(time_ms), count(*), total(${METRIC_SAMPLES_SQL})
   FROM metric_points WHERE ${where} GROUP BY project_id, 2, ${KEY}`;

export const runsSelect = (where: string) =>
  `SELECT project_id, ${HOUR_SQL}, ${KEY}, series_key, scope_name, coalesce(start_ms, -1), min(time_ms), max(time_ms), min(count), max(count)
   FROM metric_points WHERE (${where}) AND ${CUMULATIVE_HIST_SQL} GROUP BY project_id, 2, ${KEY}, series_key, scope_name, 10`;

export const CATALOG_COLS = `project_id, hour, ${KEY}, description, first_ms, last_ms, point_count, samples`;
export const RUNS_COLS = `project_id, hour, ${KEY}, series_key, scope_name, start_ms, first_ms, last_ms, min_count, max_count`;

/** Upserts adding the rows matching `where` (new points) to the catalogue. */
export const catalogUpsert = (where: string) => `INSERT INTO metric_catalog (${CATALOG_COLS}) ${catalogSelect(where)}
  ON CONFLICT DO UPDATE SET description = max(description, excluded.description), first_ms = min(first_ms, excluded.first_ms),
    last_ms = max(last_ms, excluded.last_ms), point_count = point_count + excluded.point_count, samples = samples + excluded.samples`;
export const runsUpsert = (where: string) => `INSERT INTO metric_catalog_runs (${RUNS_COLS}) ${runsSelect(where)}
  ON CONFLICT DO UPDATE SET first_ms = min(first_ms, excluded.first_ms), last_ms = max(last_ms, excluded.last_ms),
    min_count = coalesce(min(min_count, excluded.min_count), min_count, excluded.min_count),
    max_count = coalesce(max(max_count, excluded.max_count), max_count, excluded.max_count)`;

export const m008MetricCatalog: Migration = {
  version: 8,
  name: 'per-hour metric catalogue',
  rewritesLargeTable: true,
  sql: `
CREATE TABLE metric_catalog (
  project_id INTEGER NOT NULL,
  hour INTEGER NOT NULL,
  metric_name TEXT NOT NULL,
  type TEXT NOT NULL,
  service_name TEXT NOT NULL,
  environment TEXT NOT NULL,
  unit TEXT NOT NULL,
  description TEXT NOT NULL,
  first_ms REAL NOT NULL,
  last_ms REAL NOT NULL,
  point_count INTEGER NOT NULL,
  samples REAL NOT NULL,
  PRIMARY KEY (project_id, hour, ${KEY})
) WITHOUT ROWID;
CREATE TABLE metric_catalog_runs (
  project_id INTEGER NOT NULL,
  hour INTEGER NOT NULL,
  metric_name TEXT NOT NULL,
  type TEXT NOT NULL,
  service_name TEXT NOT NULL,
  environment TEXT NOT NULL,
  unit TEXT NOT NULL,
  series_key TEXT NOT NULL,
  scope_name TEXT NOT NULL,
  start_ms REAL NOT NULL,
  first_ms REAL NOT NULL,
  last_ms REAL NOT NULL,
  min_count REAL,
  max_count REAL,
  PRIMARY KEY (project_id, hour, ${KEY}, series_key, scope_name, start_ms)
) WITHOUT ROWID;
INSERT INTO metric_catalog (${CATALOG_COLS}) ${catalogSelect('true')};
INSERT INTO metric_catalog_runs (${RUNS_COLS}) ${runsSelect('true')};
`,
};
