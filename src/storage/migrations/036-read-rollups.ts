import type { Migration } from './index.js';

/**
 * State and indexes the revenue and AI reads use instead of recomputing per request:
 *
 * - `analytics_identity_epoch` moves whenever a distinct id is mapped to a person or moved to another
 *   one, so the person map that attribution resolves ledger rows and touches with is loaded once per
 *   epoch rather than on every read (src/storage/analytics-repo.ts personKeysOf). Existing projects
 *   start at epoch 0, which already describes their current mappings: nothing to backfill.
 * - ai.stats counts the sessions and users active in a window and picks the 10 most expensive:
 *   `*_window` covers the count, `*_cost` lets the top 10 be read in cost order without sorting
 *   every active session (src/storage/ai-repo.ts parties). Indexes are built from existing rows; the
 *   `*_last` indexes of migration 020 are dropped (the window ones start with the same columns).
 */
export const m036ReadRollups: Migration = {
  version: 36,
  name: 'identity epoch for cached person maps; session and user indexes for ai.stats',
  sql: `
CREATE TABLE analytics_identity_epoch (
  project_id INTEGER PRIMARY KEY,
  epoch INTEGER NOT NULL
);
CREATE INDEX agent_sessions_window ON agent_sessions(project_id, last_ms, first_ms, n);
CREATE INDEX agent_sessions_cost ON agent_sessions(project_id, cost_sum DESC, n DESC, session_id, last_ms, first_ms);
CREATE INDEX agent_users_window ON agent_users(project_id, last_ms, first_ms, n);
CREATE INDEX agent_users_cost ON agent_users(project_id, cost_sum DESC, n DESC, user_id, last_ms, first_ms);
DROP INDEX agent_sessions_last;
DROP INDEX agent_users_last;
`,
};
