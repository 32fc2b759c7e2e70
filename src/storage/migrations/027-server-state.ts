import type { Migration } from './index.js';

/**
 * Small key/value state of the server itself: the readiness probe's write target (a committed write
 * proves the database is writable and the disk not full) and progress markers of background jobs.
 */
export const m027ServerState: Migration = {
  version: 27,
  name: 'server state',
  sql: `CREATE TABLE server_state (key TEXT PRIMARY KEY, value TEXT NOT NULL, updated_at INTEGER NOT NULL) WITHOUT ROWID;`,
};
