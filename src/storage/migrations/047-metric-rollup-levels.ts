import type { Migration } from './index.js';
import { coarseRollupsSql } from '../metric-rollups.js';

/**
 * 5-minute and hourly metric rollups (issue 19, item 6: reads that stay flat): migration 040's two
 * tables again per 5 minutes (`metric_rollups_5m`, `metric_cum_rollups_5m`) and per hour
 * (`metric_rollups_1h`, `metric_cum_rollups_1h`), maintained by ingest with the per-minute ones
 * (src/storage/metric-rollups.ts). Not backfilled: `metric_rollup_levels.since` records the first
 * hour after every point already rolled up, and reads use the coarse levels from there on only
 * (earlier windows are read per minute, as before).
 */
export const m047MetricRollupLevels: Migration = {
  version: 47,
  name: '5-minute and hourly metric rollups',
  sql: coarseRollupsSql(),
};
