import type { Migration } from './index.js';
import { registerObsIdKey } from '../obs-ids.js';

/**
 * Cheaper AI observation ingest (issue 13): the unique index on (project_id, observation_id) of
 * migration 020 took a random B-tree insert per observation (span ids are random), about 10–16 µs
 * of CPU each in a store of 100,000–500,000 (bench, README). It becomes a two-level lookup, like a
 * small LSM tree: an observation's integer id key (src/storage/obs-ids.ts, 52 bits) and row id go
 * into `agent_obs_ids_new`, which stays small (its pages stay hot); once it holds 16,384 entries they
 * move into `agent_obs_ids` in one sorted pass (each page of the big table written once per move, not
 * once per observation). A lookup by id reads both levels and compares the stored id (keys can
 * collide). Uniqueness (a later write with the same id replaces) is kept by the writer, which looks
 * the id up before inserting. Entries of expired observations go with them (retention hook).
 * Works for every id: span-derived, the own batch endpoint's and Langfuse's arbitrary ones.
 */
export const m041AgentObsIds: Migration = {
  version: 41,
  name: 'AI observation ids in a two-level lookup instead of the unique index',
  sql: `
CREATE TABLE agent_obs_ids (
  project_id INTEGER NOT NULL,
  k INTEGER NOT NULL,
  obs INTEGER NOT NULL,
  PRIMARY KEY (project_id, k, obs)
) WITHOUT ROWID;
CREATE TABLE agent_obs_ids_new (
  project_id INTEGER NOT NULL,
  k INTEGER NOT NULL,
  obs INTEGER NOT NULL,
  PRIMARY KEY (project_id, k, obs)
) WITHOUT ROWID;
`,
  backfill(db) {
    registerObsIdKey(db);
    db.exec(`INSERT INTO agent_obs_ids (project_id, k, obs)
      SELECT project_id, sl_obs_key(observation_id) AS k, id FROM agent_observations ORDER BY 1, 2, 3`);
    db.exec('DROP INDEX agent_obs_id');
  },
};
