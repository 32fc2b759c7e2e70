import type { Migration } from './index.js';

/**
 * Telemetry and error groups. Telemetry tables carry few indexes on purpose: each secondary index
 * costs ingest throughput (see architecture.md, "Ingestion"). Times are epoch milliseconds (REAL
 * keeps sub-millisecond span precision). Resources are stored once and referenced by id.
 */
export const m002Telemetry: Migration = {
  version: 2,
  name: 'telemetry, error groups, sessions, replays',
  sql: `
CREATE TABLE resources (
  id INTEGER PRIMARY KEY,
  project_id INTEGER NOT NULL,
  hash TEXT NOT NULL,
  attributes TEXT NOT NULL,
  UNIQUE (project_id, hash)
);

CREATE TABLE spans (
  project_id INTEGER NOT NULL,
  trace_id TEXT NOT NULL,
  span_id TEXT NOT NULL,
  parent_span_id TEXT,
  name TEXT NOT NULL,
  operation TEXT NOT NULL,
  kind INTEGER NOT NULL,
  service_name TEXT NOT NULL,
  environment TEXT NOT NULL,
  service_version TEXT NOT NULL,
  start_ms REAL NOT NULL,
  end_ms REAL NOT NULL,
  duration_ms REAL NOT NULL,
  status_code INTEGER NOT NULL,
  status_message TEXT NOT NULL,
  attributes TEXT NOT NULL,
  events TEXT,
  links TEXT,
  resource_id INTEGER NOT NULL,
  scope_name TEXT NOT NULL,
  scope_version TEXT NOT NULL,
  trace_state TEXT NOT NULL,
  source TEXT NOT NULL,
  received_ms INTEGER NOT NULL
);
CREATE INDEX spans_time ON spans(project_id, start_ms);
CREATE INDEX spans_trace ON spans(trace_id);

CREATE TABLE logs (
  id INTEGER PRIMARY KEY,
  project_id INTEGER NOT NULL,
  time_ms REAL NOT NULL,
  observed_ms REAL NOT NULL,
  severity_number INTEGER NOT NULL,
  severity_text TEXT NOT NULL,
  level TEXT NOT NULL,
  body TEXT NOT NULL,
  attributes TEXT NOT NULL,
  trace_id TEXT,
  span_id TEXT,
  service_name TEXT NOT NULL,
  environment TEXT NOT NULL,
  release TEXT NOT NULL,
  source TEXT NOT NULL,
  connector_key TEXT,
  resource_id INTEGER NOT NULL,
  scope_name TEXT NOT NULL,
  received_ms INTEGER NOT NULL
);
CREATE INDEX logs_time ON logs(project_id, time_ms);
-- Contentless full-text index over body and attribute values; rowid = logs.id.
CREATE VIRTUAL TABLE logs_fts USING fts5(body, attrs, content='', contentless_delete=1, tokenize='unicode61');

CREATE TABLE metric_points (
  project_id INTEGER NOT NULL,
  metric_name TEXT NOT NULL,
  type TEXT NOT NULL,
  unit TEXT NOT NULL,
  description TEXT NOT NULL,
  temporality TEXT NOT NULL,
  monotonic INTEGER NOT NULL,
  service_name TEXT NOT NULL,
  environment TEXT NOT NULL,
  series_key TEXT NOT NULL,
  scope_name TEXT NOT NULL,
  start_ms REAL,
  time_ms REAL NOT NULL,
  value REAL,
  count REAL,
  sum REAL,
  min REAL,
  max REAL,
  buckets TEXT,
  attributes TEXT NOT NULL,
  resource_id INTEGER NOT NULL,
  flags INTEGER NOT NULL,
  received_ms INTEGER NOT NULL
);
CREATE INDEX metric_points_name_time ON metric_points(project_id, metric_name, time_ms);

CREATE TABLE error_groups (
  id TEXT PRIMARY KEY,
  project_id INTEGER NOT NULL REFERENCES projects(id) ON DELETE CASCADE,
  seq INTEGER NOT NULL,
  short_id TEXT NOT NULL,
  fingerprint TEXT NOT NULL,
  grouping_method TEXT NOT NULL,
  type TEXT NOT NULL,
  title TEXT NOT NULL,
  culprit TEXT NOT NULL,
  level TEXT NOT NULL,
  service_name TEXT NOT NULL,
  environment TEXT NOT NULL,
  status TEXT NOT NULL DEFAULT 'unresolved',
  priority TEXT NOT NULL DEFAULT 'medium',
  assigned_to TEXT,
  ai_assigned INTEGER NOT NULL DEFAULT 0,
  first_seen REAL NOT NULL,
  last_seen REAL NOT NULL,
  event_count INTEGER NOT NULL DEFAULT 0,
  merged_into TEXT,
  merged_at INTEGER,
  updated_at INTEGER NOT NULL,
  UNIQUE (project_id, fingerprint),
  UNIQUE (project_id, seq)
);
CREATE INDEX error_groups_last_seen ON error_groups(project_id, last_seen DESC);

CREATE TABLE error_group_user_state (
  group_id TEXT NOT NULL REFERENCES error_groups(id) ON DELETE CASCADE,
  user_id TEXT NOT NULL,
  bookmarked INTEGER NOT NULL DEFAULT 0,
  subscribed INTEGER NOT NULL DEFAULT 0,
  PRIMARY KEY (group_id, user_id)
);

CREATE TABLE error_events (
  project_id INTEGER NOT NULL,
  event_id TEXT NOT NULL,
  group_id TEXT NOT NULL,
  fingerprint_group_id TEXT NOT NULL,
  timestamp_ms REAL NOT NULL,
  received_ms INTEGER NOT NULL,
  source TEXT NOT NULL,
  platform TEXT NOT NULL,
  level TEXT NOT NULL,
  type TEXT NOT NULL,
  message TEXT NOT NULL,
  title TEXT NOT NULL,
  service_name TEXT NOT NULL,
  environment TEXT NOT NULL,
  release TEXT NOT NULL,
  transaction_name TEXT NOT NULL,
  server_name TEXT NOT NULL,
  trace_id TEXT,
  span_id TEXT,
  tags TEXT NOT NULL,
  user_json TEXT,
  payload TEXT NOT NULL,
  PRIMARY KEY (project_id, event_id)
) WITHOUT ROWID;
CREATE INDEX error_events_group ON error_events(project_id, group_id, timestamp_ms);
CREATE INDEX error_events_time ON error_events(project_id, timestamp_ms);
CREATE INDEX error_events_trace ON error_events(trace_id) WHERE trace_id IS NOT NULL;

CREATE TABLE triage_runs (
  id TEXT PRIMARY KEY,
  project_id INTEGER NOT NULL,
  group_id TEXT NOT NULL REFERENCES error_groups(id) ON DELETE CASCADE,
  trigger TEXT NOT NULL,
  triager TEXT NOT NULL,
  cycle TEXT NOT NULL,
  status TEXT NOT NULL,
  result TEXT,
  error TEXT,
  created_at INTEGER NOT NULL,
  completed_at INTEGER
);
CREATE INDEX triage_runs_group ON triage_runs(project_id, group_id, created_at DESC);

CREATE TABLE sessions (
  project_id INTEGER NOT NULL,
  session_id TEXT NOT NULL,
  distinct_id TEXT,
  status TEXT NOT NULL,
  errors INTEGER NOT NULL,
  started_ms REAL NOT NULL,
  duration_ms REAL,
  release TEXT NOT NULL,
  environment TEXT NOT NULL,
  updated_ms INTEGER NOT NULL,
  PRIMARY KEY (project_id, session_id)
) WITHOUT ROWID;
CREATE TABLE session_aggregates (
  project_id INTEGER NOT NULL,
  started_ms REAL NOT NULL,
  release TEXT NOT NULL,
  environment TEXT NOT NULL,
  exited INTEGER NOT NULL,
  errored INTEGER NOT NULL,
  abnormal INTEGER NOT NULL,
  crashed INTEGER NOT NULL,
  received_ms INTEGER NOT NULL
);

CREATE TABLE replays (
  project_id INTEGER NOT NULL,
  replay_id TEXT NOT NULL,
  started_ms REAL NOT NULL,
  ended_ms REAL NOT NULL,
  segments INTEGER NOT NULL DEFAULT 0,
  urls TEXT NOT NULL,
  error_ids TEXT NOT NULL,
  trace_ids TEXT NOT NULL,
  environment TEXT NOT NULL,
  release TEXT NOT NULL,
  user_json TEXT,
  updated_ms INTEGER NOT NULL,
  PRIMARY KEY (project_id, replay_id)
) WITHOUT ROWID;
CREATE TABLE replay_recordings (
  project_id INTEGER NOT NULL,
  replay_id TEXT NOT NULL,
  segment_id INTEGER NOT NULL,
  payload BLOB NOT NULL,
  received_ms INTEGER NOT NULL,
  PRIMARY KEY (project_id, replay_id, segment_id)
) WITHOUT ROWID;

CREATE TABLE check_ins (
  project_id INTEGER NOT NULL,
  check_in_id TEXT NOT NULL,
  monitor_slug TEXT NOT NULL,
  status TEXT NOT NULL,
  duration_s REAL,
  environment TEXT NOT NULL,
  release TEXT NOT NULL,
  payload TEXT NOT NULL,
  received_ms INTEGER NOT NULL,
  PRIMARY KEY (project_id, check_in_id, status)
) WITHOUT ROWID;

CREATE TABLE ingest_outcomes (
  project_id INTEGER NOT NULL,
  minute INTEGER NOT NULL,
  category TEXT NOT NULL,
  reason TEXT NOT NULL,
  quantity INTEGER NOT NULL,
  PRIMARY KEY (project_id, minute, category, reason)
) WITHOUT ROWID;
`,
};
