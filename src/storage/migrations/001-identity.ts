import type { Migration } from './index.js';

export const m001Identity: Migration = {
  version: 1,
  name: 'identity, feedback, deployments',
  sql: `
CREATE TABLE organizations (
  id TEXT PRIMARY KEY,
  name TEXT NOT NULL,
  created_at INTEGER NOT NULL
);
CREATE TABLE users (
  id TEXT PRIMARY KEY,
  email TEXT NOT NULL UNIQUE COLLATE NOCASE,
  name TEXT NOT NULL DEFAULT '',
  password_hash TEXT NOT NULL,
  created_at INTEGER NOT NULL
);
CREATE TABLE memberships (
  org_id TEXT NOT NULL REFERENCES organizations(id) ON DELETE CASCADE,
  user_id TEXT NOT NULL REFERENCES users(id) ON DELETE CASCADE,
  role TEXT NOT NULL CHECK (role IN ('owner','admin','member')),
  created_at INTEGER NOT NULL,
  PRIMARY KEY (org_id, user_id)
);
CREATE TABLE projects (
  id INTEGER PRIMARY KEY AUTOINCREMENT,
  org_id TEXT NOT NULL REFERENCES organizations(id) ON DELETE CASCADE,
  name TEXT NOT NULL,
  slug TEXT NOT NULL,
  product_analytics INTEGER NOT NULL DEFAULT 0,
  remote_access_preview INTEGER NOT NULL DEFAULT 0,
  spike_protection_enabled INTEGER NOT NULL DEFAULT 0,
  spike_threshold_per_minute INTEGER,
  created_at INTEGER NOT NULL,
  UNIQUE (org_id, slug)
);
CREATE TABLE api_keys (
  id TEXT PRIMARY KEY,
  project_id INTEGER NOT NULL REFERENCES projects(id) ON DELETE CASCADE,
  label TEXT NOT NULL,
  prefix TEXT NOT NULL,
  secret_hash TEXT NOT NULL UNIQUE,
  scopes TEXT NOT NULL,
  expires_at INTEGER,
  created_at INTEGER NOT NULL,
  updated_at INTEGER NOT NULL,
  last_used_at INTEGER,
  revoked_at INTEGER
);
CREATE INDEX api_keys_project ON api_keys(project_id, created_at);

CREATE TABLE feedback (
  id TEXT PRIMARY KEY,
  project_id INTEGER NOT NULL REFERENCES projects(id) ON DELETE CASCADE,
  message TEXT NOT NULL,
  contact_email TEXT,
  name TEXT,
  environment TEXT,
  user_id TEXT,
  release TEXT,
  service TEXT,
  url TEXT,
  session_id TEXT,
  replay_id TEXT,
  trace_id TEXT,
  error_group_id TEXT,
  metadata TEXT,
  status TEXT NOT NULL DEFAULT 'new',
  source TEXT NOT NULL DEFAULT 'api',
  created_at INTEGER NOT NULL,
  updated_at INTEGER NOT NULL
);
CREATE INDEX feedback_project_created ON feedback(project_id, created_at DESC, id DESC);

CREATE TABLE feedback_idempotency (
  project_id INTEGER NOT NULL REFERENCES projects(id) ON DELETE CASCADE,
  key TEXT NOT NULL,
  payload_hash TEXT NOT NULL,
  feedback_id TEXT NOT NULL REFERENCES feedback(id) ON DELETE CASCADE,
  created_at INTEGER NOT NULL,
  PRIMARY KEY (project_id, key)
);

CREATE TABLE deployments (
  id TEXT PRIMARY KEY,
  project_id INTEGER NOT NULL REFERENCES projects(id) ON DELETE CASCADE,
  provider TEXT NOT NULL,
  deployment_id TEXT NOT NULL,
  service TEXT,
  version TEXT,
  environment TEXT,
  status TEXT NOT NULL,
  url TEXT,
  commit_sha TEXT,
  branch TEXT,
  started_at INTEGER,
  finished_at INTEGER,
  created_at INTEGER NOT NULL,
  updated_at INTEGER NOT NULL,
  UNIQUE (project_id, provider, deployment_id)
);
CREATE INDEX deployments_project_time ON deployments(project_id, created_at DESC);
`,
};
