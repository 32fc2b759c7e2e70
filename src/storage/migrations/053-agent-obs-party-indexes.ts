import type { Migration } from './index.js';

/**
 * Cheaper AI observation ingest (issue 13): drops the per-observation session and user indexes of
 * migration 020 (`agent_obs_session`, `agent_obs_user`). They were partial indexes
 * (`WHERE session_id != ''`), and SQLite uses a partial index only for a query whose WHERE clause
 * implies the index's: `session_id = ?` does not imply `session_id != ''`, so no reader ever used them
 * (EXPLAIN QUERY PLAN: the session and user reads walk `agent_obs_time`; INDEXED BY: "no query
 * solution"). Each cost two B-tree inserts per observation on the single writer (about 4–8 µs of
 * main-thread CPU per observation, bench/ai-write.ts). Reads by session or user now narrow their
 * time window to the session's (user's) first and last activity in `agent_sessions` / `agent_users`
 * (src/storage/ai-repo.ts), which only grow: an outer bound, like the trace ranges of migration 039.
 */
export const m053AgentObsPartyIndexes: Migration = {
  version: 53,
  name: 'drop the AI session and user indexes no read could use',
  sql: `
DROP INDEX IF EXISTS agent_obs_session;
DROP INDEX IF EXISTS agent_obs_user;
`,
};
