import type { Migration } from './index.js';
import { userFieldSql, userKeySql } from '../../domain/errors/users.js';

/**
 * Context of error groups (issue 11: people, releases, environments), maintained at ingest in the
 * event's transaction (src/storage/errors-repo.ts) so group reads never scan events:
 *
 * - `error_group_dims`: per group, each environment, service and release it was seen in, with the
 *   event count and first/last event time there (`environment=staging` finds a group first seen in
 *   production; `tags` of errors.get reads their counts).
 * - `error_group_users`: per group, each distinct user (key: the first of id, email, username, IP
 *   address; src/domain/errors/users.ts) with the user id as sent, for `user_count` and the
 *   `user.id` filter of errors.list.
 * - `error_groups.first_release` / `last_release` / `user_count`.
 *
 * Existing groups are backfilled from their stored events (and from the group's own service and
 * environment when its events have expired).
 */
const KEY = userKeySql('user_json');
const ID = `NULLIF(${userFieldSql('user_json', 'id')}, '')`;

export const m034ErrorGroupContext: Migration = {
  version: 34,
  name: 'error group environments, services, releases and users',
  sql: `
ALTER TABLE error_groups ADD COLUMN first_release TEXT NOT NULL DEFAULT '';
ALTER TABLE error_groups ADD COLUMN last_release TEXT NOT NULL DEFAULT '';
ALTER TABLE error_groups ADD COLUMN user_count INTEGER NOT NULL DEFAULT 0;

CREATE TABLE error_group_dims (
  group_id TEXT NOT NULL REFERENCES error_groups(id) ON DELETE CASCADE,
  kind TEXT NOT NULL CHECK (kind IN ('environment', 'service', 'release')),
  value TEXT NOT NULL,
  event_count INTEGER NOT NULL,
  first_seen REAL NOT NULL,
  last_seen REAL NOT NULL,
  PRIMARY KEY (group_id, kind, value)
) WITHOUT ROWID;

CREATE TABLE error_group_users (
  group_id TEXT NOT NULL REFERENCES error_groups(id) ON DELETE CASCADE,
  user_key TEXT NOT NULL,
  user_id TEXT,
  first_seen REAL NOT NULL,
  PRIMARY KEY (group_id, user_key)
) WITHOUT ROWID;
CREATE INDEX error_group_users_user_id ON error_group_users(user_id) WHERE user_id IS NOT NULL;

INSERT INTO error_group_dims (group_id, kind, value, event_count, first_seen, last_seen)
  SELECT group_id, 'environment', environment, COUNT(*), MIN(timestamp_ms), MAX(timestamp_ms) FROM error_events WHERE environment <> '' GROUP BY group_id, environment;
INSERT INTO error_group_dims (group_id, kind, value, event_count, first_seen, last_seen)
  SELECT group_id, 'service', service_name, COUNT(*), MIN(timestamp_ms), MAX(timestamp_ms) FROM error_events WHERE service_name <> '' GROUP BY group_id, service_name;
INSERT INTO error_group_dims (group_id, kind, value, event_count, first_seen, last_seen)
  SELECT group_id, 'release', release, COUNT(*), MIN(timestamp_ms), MAX(timestamp_ms) FROM error_events WHERE release <> '' GROUP BY group_id, release;
INSERT OR IGNORE INTO error_group_dims (group_id, kind, value, event_count, first_seen, last_seen)
  SELECT id, 'environment', environment, event_count, first_seen, last_seen FROM error_groups WHERE environment <> '';
INSERT OR IGNORE INTO error_group_dims (group_id, kind, value, event_count, first_seen, last_seen)
  SELECT id, 'service', service_name, event_count, first_seen, last_seen FROM error_groups WHERE service_name <> '';

INSERT OR IGNORE INTO error_group_users (group_id, user_key, user_id, first_seen)
  SELECT group_id, k, MAX(uid), MIN(timestamp_ms) FROM (
    SELECT group_id, ${KEY} AS k, ${ID} AS uid, timestamp_ms FROM error_events WHERE user_json IS NOT NULL
  ) WHERE k IS NOT NULL GROUP BY group_id, k;

UPDATE error_groups SET
  user_count = (SELECT COUNT(*) FROM error_group_users u WHERE u.group_id = error_groups.id),
  first_release = COALESCE((SELECT value FROM error_group_dims d WHERE d.group_id = error_groups.id AND d.kind = 'release' ORDER BY d.first_seen, d.value LIMIT 1), ''),
  last_release = COALESCE((SELECT value FROM error_group_dims d WHERE d.group_id = error_groups.id AND d.kind = 'release' ORDER BY d.last_seen DESC, d.value DESC LIMIT 1), '');
`,
};
