import type { Migration } from './index.js';

/**
 * A version per (project, day) of the packed ledger rows (`revenue_day_rows`), bumped by every write
 * that appends to, rebuilds or drops a day (src/storage/revenue-rollup.ts) and never reset (a dropped
 * day keeps its row), so a (day, version) pair names one content for good. Attribution reads keep
 * decoded days per process and check them against these versions on every read (revenue-repo.ts
 * `packedRows`); reading the version needs no overflow page of the day blob. Backfilled with version
 * 1 for every existing day.
 */
export const m048RevenueDayVersions: Migration = {
  version: 48,
  name: 'versions of the packed ledger days',
  sql: `
CREATE TABLE revenue_day_versions (
  project_id INTEGER NOT NULL,
  day INTEGER NOT NULL,
  ver INTEGER NOT NULL,
  PRIMARY KEY (project_id, day)
) WITHOUT ROWID;
INSERT INTO revenue_day_versions (project_id, day, ver) SELECT project_id, day, 1 FROM revenue_day_rows;
`,
};
