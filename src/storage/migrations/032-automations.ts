import type { Migration } from './index.js';

/**
 * Automations (issue 16): configs, runs (steps, logs, calls, timings), outputs with content hashes,
 * approval decisions, project capability manifests and project automation skills. Schedules and the
 * event queue live in the shared scheduler_jobs table (src/core/scheduler.ts).
 */
export const m032Automations: Migration = {
  version: 32,
  name: 'automations',
  sql: `
CREATE TABLE automations (
  id TEXT PRIMARY KEY,
  project_id TEXT NOT NULL,
  name TEXT NOT NULL,
  description TEXT NOT NULL DEFAULT '',
  template_id TEXT,
  state TEXT NOT NULL,
  config TEXT NOT NULL,
  created_at INTEGER NOT NULL,
  updated_at INTEGER NOT NULL
);
CREATE INDEX automations_project ON automations(project_id, created_at);

CREATE TABLE automation_runs (
  id TEXT PRIMARY KEY,
  project_id TEXT NOT NULL,
  automation_id TEXT NOT NULL,
  trigger TEXT NOT NULL,
  dedupe_key TEXT NOT NULL,
  status TEXT NOT NULL,
  input TEXT NOT NULL,
  steps TEXT NOT NULL DEFAULT '[]',
  error TEXT,
  attempts INTEGER NOT NULL DEFAULT 0,
  created_at INTEGER NOT NULL,
  started_at INTEGER,
  ended_at INTEGER,
  UNIQUE (automation_id, dedupe_key)
);
CREATE INDEX automation_runs_automation ON automation_runs(automation_id, created_at);
CREATE INDEX automation_runs_project_status ON automation_runs(project_id, status);

CREATE TABLE automation_outputs (
  id TEXT PRIMARY KEY,
  project_id TEXT NOT NULL,
  run_id TEXT NOT NULL,
  automation_id TEXT NOT NULL,
  kind TEXT NOT NULL,
  content TEXT NOT NULL,
  content_hash TEXT NOT NULL,
  needs_approval INTEGER NOT NULL,
  status TEXT NOT NULL,
  detail TEXT,
  created_at INTEGER NOT NULL,
  updated_at INTEGER NOT NULL
);
CREATE INDEX automation_outputs_run ON automation_outputs(run_id, created_at);

CREATE TABLE automation_approvals (
  id TEXT PRIMARY KEY,
  project_id TEXT NOT NULL,
  run_id TEXT NOT NULL,
  output_id TEXT NOT NULL,
  content_hash TEXT NOT NULL,
  decision TEXT NOT NULL,
  decided_by TEXT NOT NULL,
  note TEXT,
  created_at INTEGER NOT NULL
);
CREATE INDEX automation_approvals_run ON automation_approvals(run_id, created_at);

CREATE TABLE automation_capabilities (
  id TEXT PRIMARY KEY,
  project_id TEXT NOT NULL,
  name TEXT NOT NULL,
  description TEXT NOT NULL,
  operations TEXT NOT NULL,
  risk TEXT NOT NULL,
  approval TEXT NOT NULL,
  created_at INTEGER NOT NULL,
  updated_at INTEGER NOT NULL,
  UNIQUE (project_id, name)
);

CREATE TABLE automation_skills (
  id TEXT PRIMARY KEY,
  project_id TEXT NOT NULL,
  name TEXT NOT NULL,
  description TEXT NOT NULL,
  content TEXT NOT NULL,
  created_at INTEGER NOT NULL,
  updated_at INTEGER NOT NULL,
  UNIQUE (project_id, name)
);
`,
};
