import type { Migration } from './index.js';

/**
 * Error events in ClickHouse (issue 20): `error_event_ids` names each stored event's group by its id
 * when the events themselves are in ClickHouse (SIGHTLINE_CLICKHOUSE_URL). Ingest inserts the id in
 * its transaction and writes the event only when the id was new (SDK retries are ignored, as
 * `INSERT OR IGNORE INTO error_events` does), feedback finds the group of its event, replays find
 * the groups of their error ids, and an event read by id is one primary-key range in ClickHouse. A
 * control table (PostgreSQL migration 4): with several processes every one sees every id. Empty
 * and unused with the events in SQLite. Expires with the events (retention `error_events`).
 */
export const m056ErrorEventIds: Migration = {
  version: 56,
  name: 'error event ids (events in ClickHouse)',
  sql: `
CREATE TABLE error_event_ids (
  project_id INTEGER NOT NULL,
  event_id TEXT NOT NULL,
  group_id TEXT NOT NULL,
  timestamp_ms REAL NOT NULL,
  PRIMARY KEY (project_id, event_id)
) WITHOUT ROWID;
CREATE INDEX error_event_ids_time ON error_event_ids(project_id, timestamp_ms);
CREATE INDEX error_event_ids_group ON error_event_ids(group_id);
`,
};
