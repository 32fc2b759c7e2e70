import type { Migration } from './index.js';

/**
 * The in-project agent's state (issue 15): settings, memory (project and organization scope),
 * skills, signals, daily usage, conversations, outbound channels with their delivery log, and
 * watch marks (spike cool-down, a regressed release published once).
 */
export const m030Agent: Migration = {
  version: 30,
  name: 'in-project agent state',
  sql: `
CREATE TABLE agent_settings (
  project_id INTEGER PRIMARY KEY REFERENCES projects(id) ON DELETE CASCADE,
  settings TEXT NOT NULL,
  updated_at INTEGER NOT NULL
);
CREATE TABLE agent_memory (
  id TEXT PRIMARY KEY,
  project_id INTEGER REFERENCES projects(id) ON DELETE CASCADE,
  org_id TEXT NOT NULL,
  scope TEXT NOT NULL,
  kind TEXT NOT NULL,
  content TEXT NOT NULL,
  norm TEXT NOT NULL,
  replaces_id TEXT,
  retired_at INTEGER,
  created_at INTEGER NOT NULL
);
CREATE INDEX agent_memory_project ON agent_memory(project_id, retired_at);
CREATE INDEX agent_memory_org ON agent_memory(org_id, scope, retired_at);
CREATE TABLE agent_skills (
  id TEXT PRIMARY KEY,
  project_id INTEGER REFERENCES projects(id) ON DELETE CASCADE,
  org_id TEXT NOT NULL,
  scope TEXT NOT NULL,
  name TEXT NOT NULL,
  description TEXT NOT NULL,
  content TEXT NOT NULL,
  created_at INTEGER NOT NULL,
  updated_at INTEGER NOT NULL
);
CREATE UNIQUE INDEX agent_skills_project_name ON agent_skills(project_id, name) WHERE scope = 'project';
CREATE UNIQUE INDEX agent_skills_org_name ON agent_skills(org_id, name) WHERE scope = 'organization';
CREATE TABLE agent_signals (
  id TEXT PRIMARY KEY,
  project_id INTEGER NOT NULL REFERENCES projects(id) ON DELETE CASCADE,
  source TEXT NOT NULL,
  subject TEXT NOT NULL,
  title TEXT NOT NULL,
  action TEXT NOT NULL,
  severity TEXT NOT NULL,
  reason TEXT NOT NULL,
  skill TEXT,
  status TEXT NOT NULL,
  alert TEXT,
  answer TEXT,
  conversation_id TEXT,
  created_at INTEGER NOT NULL,
  updated_at INTEGER NOT NULL
);
CREATE INDEX agent_signals_recent ON agent_signals(project_id, created_at DESC);
CREATE INDEX agent_signals_subject ON agent_signals(project_id, subject, created_at DESC);
CREATE TABLE agent_usage (
  project_id INTEGER NOT NULL REFERENCES projects(id) ON DELETE CASCADE,
  day INTEGER NOT NULL,
  units REAL NOT NULL DEFAULT 0,
  wakes INTEGER NOT NULL DEFAULT 0,
  alerts_posted INTEGER NOT NULL DEFAULT 0,
  PRIMARY KEY (project_id, day)
) WITHOUT ROWID;
CREATE TABLE agent_conversations (
  id TEXT PRIMARY KEY,
  project_id INTEGER NOT NULL REFERENCES projects(id) ON DELETE CASCADE,
  kind TEXT NOT NULL,
  title TEXT NOT NULL,
  thread_id TEXT,
  signal_id TEXT,
  status TEXT NOT NULL,
  answered_by TEXT NOT NULL,
  started_at INTEGER NOT NULL,
  ended_at INTEGER
);
CREATE INDEX agent_conversations_recent ON agent_conversations(project_id, started_at DESC);
CREATE TABLE agent_channels (
  id TEXT PRIMARY KEY,
  project_id INTEGER NOT NULL REFERENCES projects(id) ON DELETE CASCADE,
  name TEXT NOT NULL,
  kind TEXT NOT NULL,
  url TEXT NOT NULL,
  secret TEXT,
  created_at INTEGER NOT NULL
);
CREATE INDEX agent_channels_project ON agent_channels(project_id, created_at);
CREATE TABLE agent_deliveries (
  id TEXT PRIMARY KEY,
  project_id INTEGER NOT NULL REFERENCES projects(id) ON DELETE CASCADE,
  channel_id TEXT NOT NULL,
  title TEXT NOT NULL,
  message TEXT NOT NULL,
  status TEXT NOT NULL,
  attempts INTEGER NOT NULL DEFAULT 0,
  last_status_code INTEGER,
  last_error TEXT,
  created_at INTEGER NOT NULL,
  delivered_at INTEGER
);
CREATE INDEX agent_deliveries_recent ON agent_deliveries(project_id, created_at DESC);
CREATE TABLE agent_watch (
  project_id INTEGER NOT NULL REFERENCES projects(id) ON DELETE CASCADE,
  key TEXT NOT NULL,
  at INTEGER NOT NULL,
  PRIMARY KEY (project_id, key)
) WITHOUT ROWID;
`,
};
