import type { Migration } from './index.js';

/**
 * Shared job queue (scheduler state lives here so a restart or SIGKILL loses no due job), monitors
 * with their results and daily roll-ups, incidents with their timeline, status pages, components and
 * subscribers.
 */
export const m017Status: Migration = {
  version: 17,
  name: 'job queue, monitors, incidents, status pages',
  sql: `
CREATE TABLE scheduler_jobs (
  id INTEGER PRIMARY KEY,
  kind TEXT NOT NULL,
  key TEXT NOT NULL,
  payload TEXT NOT NULL DEFAULT '{}',
  run_at INTEGER NOT NULL,
  lease_owner TEXT,
  lease_until INTEGER,
  fence INTEGER NOT NULL DEFAULT 0,
  attempts INTEGER NOT NULL DEFAULT 0,
  max_attempts INTEGER NOT NULL DEFAULT 8,
  last_error TEXT,
  dead INTEGER NOT NULL DEFAULT 0,
  created_at INTEGER NOT NULL,
  UNIQUE (kind, key)
);
CREATE INDEX scheduler_jobs_due ON scheduler_jobs(dead, run_at);
CREATE TABLE scheduler_leader (
  name TEXT PRIMARY KEY,
  owner TEXT NOT NULL,
  expires_at INTEGER NOT NULL
);

CREATE TABLE monitors (
  id TEXT PRIMARY KEY,
  project_id INTEGER NOT NULL REFERENCES projects(id) ON DELETE CASCADE,
  name TEXT NOT NULL,
  kind TEXT NOT NULL,
  state TEXT NOT NULL,
  paused INTEGER NOT NULL DEFAULT 0,
  config TEXT NOT NULL,
  slug TEXT,
  next_expected_at INTEGER,
  last_result_at INTEGER,
  last_result_status TEXT,
  state_changed_at INTEGER NOT NULL,
  open_incident_id TEXT,
  created_at INTEGER NOT NULL,
  updated_at INTEGER NOT NULL,
  UNIQUE (project_id, name)
);
CREATE UNIQUE INDEX monitors_slug ON monitors(project_id, slug) WHERE slug IS NOT NULL;

CREATE TABLE monitor_results (
  project_id INTEGER NOT NULL,
  monitor_id TEXT NOT NULL,
  at_ms INTEGER NOT NULL,
  seq INTEGER NOT NULL,
  status TEXT NOT NULL,
  latency_ms INTEGER,
  http_status INTEGER,
  error TEXT,
  region TEXT,
  check_in_id TEXT,
  PRIMARY KEY (project_id, monitor_id, at_ms, seq)
) WITHOUT ROWID;
CREATE TABLE monitor_daily (
  project_id INTEGER NOT NULL,
  monitor_id TEXT NOT NULL,
  day INTEGER NOT NULL,
  ok INTEGER NOT NULL DEFAULT 0,
  degraded INTEGER NOT NULL DEFAULT 0,
  failed INTEGER NOT NULL DEFAULT 0,
  PRIMARY KEY (project_id, monitor_id, day)
) WITHOUT ROWID;

CREATE TABLE incidents (
  id TEXT PRIMARY KEY,
  project_id INTEGER NOT NULL REFERENCES projects(id) ON DELETE CASCADE,
  number INTEGER NOT NULL,
  title TEXT NOT NULL,
  status TEXT NOT NULL,
  impact TEXT NOT NULL,
  monitor_id TEXT,
  started_at INTEGER NOT NULL,
  resolved_at INTEGER,
  created_at INTEGER NOT NULL,
  updated_at INTEGER NOT NULL,
  UNIQUE (project_id, number)
);
CREATE INDEX incidents_project_started ON incidents(project_id, started_at DESC);
CREATE TABLE incident_updates (
  id TEXT PRIMARY KEY,
  incident_id TEXT NOT NULL REFERENCES incidents(id) ON DELETE CASCADE,
  at_ms INTEGER NOT NULL,
  status TEXT NOT NULL,
  message TEXT NOT NULL,
  author TEXT NOT NULL
);
CREATE INDEX incident_updates_incident ON incident_updates(incident_id, at_ms);

CREATE TABLE status_pages (
  id TEXT PRIMARY KEY,
  project_id INTEGER NOT NULL REFERENCES projects(id) ON DELETE CASCADE,
  org_id TEXT NOT NULL,
  name TEXT NOT NULL,
  slug TEXT NOT NULL UNIQUE,
  is_public INTEGER NOT NULL,
  custom_domain TEXT UNIQUE,
  theme_config TEXT NOT NULL DEFAULT '{}',
  created_at INTEGER NOT NULL,
  updated_at INTEGER NOT NULL
);
CREATE TABLE status_components (
  id TEXT PRIMARY KEY,
  page_id TEXT NOT NULL REFERENCES status_pages(id) ON DELETE CASCADE,
  kind TEXT NOT NULL,
  name TEXT NOT NULL,
  description TEXT,
  parent_id TEXT REFERENCES status_components(id) ON DELETE CASCADE,
  monitor_id TEXT,
  status TEXT,
  external_url TEXT,
  position INTEGER NOT NULL,
  created_at INTEGER NOT NULL,
  updated_at INTEGER NOT NULL
);
CREATE INDEX status_components_page ON status_components(page_id, position);
CREATE INDEX status_components_monitor ON status_components(monitor_id);
CREATE TABLE status_subscribers (
  id TEXT PRIMARY KEY,
  page_id TEXT NOT NULL REFERENCES status_pages(id) ON DELETE CASCADE,
  email TEXT NOT NULL,
  token_hash TEXT NOT NULL UNIQUE,
  confirmed_at INTEGER,
  created_at INTEGER NOT NULL,
  UNIQUE (page_id, email)
);
`,
};
