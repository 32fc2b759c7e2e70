import type { Migration } from './index.js';
import { backfillRevenueRollups } from '../revenue-rollup.js';

/**
 * Revenue rollups maintained at write time (src/storage/revenue-rollup.ts):
 * - `revenue_daily.converted`: per-row-rounded amounts in the project's reporting currency, summed per
 *   (day, currency, plan, type); `revenue_rollup_currency` names that currency (changing the reporting
 *   currency recomputes the column).
 * - `revenue_day_rows` + `revenue_keys`: each day's posted ledger rows packed in one blob, strings
 *   interned per project, for customer counts and attribution.
 * The backfill fills both from the existing ledger.
 */
export const m038RevenueRollups: Migration = {
  version: 38,
  name: 'revenue converted rollup and packed day rows',
  sql: `
ALTER TABLE revenue_daily ADD COLUMN converted INTEGER;
CREATE TABLE revenue_rollup_currency (
  project_id INTEGER PRIMARY KEY,
  currency TEXT NOT NULL
);
CREATE TABLE revenue_keys (
  project_id INTEGER NOT NULL,
  key TEXT NOT NULL,
  id INTEGER NOT NULL,
  PRIMARY KEY (project_id, key)
) WITHOUT ROWID;
CREATE UNIQUE INDEX revenue_keys_id ON revenue_keys(project_id, id);
CREATE TABLE revenue_day_rows (
  project_id INTEGER NOT NULL,
  day INTEGER NOT NULL,
  n INTEGER NOT NULL,
  rows BLOB NOT NULL,
  UNIQUE (project_id, day)
);
`,
  backfill: backfillRevenueRollups,
};
