import type { Migration } from './index.js';
import { backfillMetricRollups, METRIC_ROLLUPS_SQL } from '../metric-rollups.js';

/**
 * Per-minute metric rollups (issue 19, item 6: reads that stay flat): `metric_rollups` (points taken
 * as received, per metric, minute, type, service and environment) and `metric_cum_rollups`
 * (cumulative sum points, per series and minute), described in src/storage/metric-rollups.ts, plus a
 * partial index over the points that carry exemplars (timeline buckets list them). Backfilled from
 * every stored point in this migration's transaction; ingest maintains them afterwards.
 */
export const m040MetricRollups: Migration = {
  version: 40,
  name: 'per-minute metric rollups',
  rewritesLargeTable: true,
  sql: METRIC_ROLLUPS_SQL,
  backfill: backfillMetricRollups,
};
