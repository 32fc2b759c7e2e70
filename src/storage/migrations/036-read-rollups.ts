import type { Migration } from './index.js';

/**
 * State the revenue reads keep instead of recomputing it per request (issue 14 performance):
 * `analytics_identity_epoch` moves whenever a distinct id is mapped to a person or moved to another
 * one, so the person map that attribution resolves ledger rows and touches with is loaded once per
 * epoch rather than on every read (src/storage/analytics-repo.ts personKeysOf). Existing projects
 * start at epoch 0, which already describes their current mappings: nothing to backfill.
 */
export const m036ReadRollups: Migration = {
  version: 36,
  name: 'identity epoch for cached person maps',
  sql: `
CREATE TABLE analytics_identity_epoch (
  project_id INTEGER PRIMARY KEY,
  epoch INTEGER NOT NULL
);
`,
};
