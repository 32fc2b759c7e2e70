import type { Migration } from './index.js';

/**
 * Product-analytics capture (PostHog-compatible): events, persons and their distinct ids,
 * marketing touches of pageviews, and sessions with the distinct ids and pages seen in them.
 * Distinct ids without a person row are anonymous visitors; $identify/$create_alias create persons.
 */
export const m024Analytics: Migration = {
  version: 24,
  name: 'analytics capture',
  sql: `
CREATE TABLE capture_events (
  project_id INTEGER NOT NULL,
  ts INTEGER NOT NULL,
  event TEXT NOT NULL,
  distinct_id TEXT NOT NULL,
  session_id TEXT,
  pathname TEXT,
  uuid TEXT,
  properties TEXT NOT NULL,
  received_at INTEGER NOT NULL
);
CREATE INDEX capture_events_time ON capture_events(project_id, ts);

CREATE TABLE analytics_persons (
  id INTEGER PRIMARY KEY AUTOINCREMENT,
  project_id INTEGER NOT NULL,
  identified INTEGER NOT NULL DEFAULT 0,
  created_at INTEGER NOT NULL
);
CREATE TABLE analytics_distinct_ids (
  project_id INTEGER NOT NULL,
  distinct_id TEXT NOT NULL,
  person_id INTEGER NOT NULL,
  PRIMARY KEY (project_id, distinct_id)
) WITHOUT ROWID;
CREATE INDEX analytics_distinct_ids_person ON analytics_distinct_ids(person_id);

CREATE TABLE analytics_touches (
  project_id INTEGER NOT NULL,
  distinct_id TEXT NOT NULL,
  ts INTEGER NOT NULL,
  source TEXT,
  medium TEXT,
  campaign TEXT,
  referrer TEXT
);
CREATE INDEX analytics_touches_time ON analytics_touches(project_id, ts, distinct_id, source, medium, campaign);

CREATE TABLE analytics_sessions (
  project_id INTEGER NOT NULL,
  session_id TEXT NOT NULL,
  first_ts INTEGER NOT NULL,
  last_ts INTEGER NOT NULL,
  events INTEGER NOT NULL,
  pageviews INTEGER NOT NULL,
  replay_id TEXT,
  PRIMARY KEY (project_id, session_id)
) WITHOUT ROWID;
CREATE INDEX analytics_sessions_replay ON analytics_sessions(project_id, replay_id) WHERE replay_id IS NOT NULL;
CREATE TABLE analytics_session_ids (
  project_id INTEGER NOT NULL,
  session_id TEXT NOT NULL,
  distinct_id TEXT NOT NULL,
  PRIMARY KEY (project_id, session_id, distinct_id)
) WITHOUT ROWID;
CREATE TABLE analytics_session_pages (
  project_id INTEGER NOT NULL,
  pathname TEXT NOT NULL,
  session_id TEXT NOT NULL,
  last_ts INTEGER NOT NULL,
  PRIMARY KEY (project_id, pathname, session_id)
) WITHOUT ROWID;
`,
};
