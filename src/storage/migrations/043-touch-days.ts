import type { Migration } from './index.js';
import { backfillTouchDays } from '../touch-days.js';

/**
 * Marketing touches packed per (project, day) at capture time (src/storage/touch-days.ts), with
 * strings interned in `revenue_keys` beside the packed ledger rows: attribution decodes the days of
 * its range instead of keeping a per-process copy of `analytics_touches`. Backfilled from that table.
 */
export const m043TouchDays: Migration = {
  version: 43,
  name: 'packed touch days for attribution',
  sql: `
CREATE TABLE analytics_touch_days (
  project_id INTEGER NOT NULL,
  day INTEGER NOT NULL,
  n INTEGER NOT NULL,
  touches BLOB NOT NULL,
  PRIMARY KEY (project_id, day)
);
`,
  backfill: backfillTouchDays,
};
