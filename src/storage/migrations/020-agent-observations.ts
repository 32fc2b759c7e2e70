import type { Migration } from './index.js';

const FLAGS = 'f_gen, f_gen_ok, f_chat, f_trace, f_input, f_system, f_output, f_model, f_tokens, f_cost, f_invalid_tokens, f_privacy, f_content, f_reasoning, f_tool_payload, f_error';
const flagCols = (type: string) => FLAGS.split(', ').map((f) => `${f} ${type} NOT NULL DEFAULT 0`).join(',\n  ');

/**
 * AI agent observability (issue 13).
 *
 * - `agent_observations`: one row per observation (OTLP GenAI / OpenInference / Langfuse spans, the
 *   Langfuse legacy batch, our own batch). A later write with the same observation id replaces the
 *   row. The quality and privacy flags (`f_*`) are computed once at ingest.
 * - `agent_obs_1h`: per hour, the row count, flag sums and token/cost/latency sums, once for all
 *   observations (`dim` = '') and once per value of each dimension the quality report filters or
 *   ai.stats groups by (`dim` = agent_id, workflow_id, model, provider, release, environment): a
 *   handful of rows per hour whatever the combinations. Reads over a window use whole hours from
 *   here and the partial hours at the edges from the rows, so quality and stats over a million
 *   observations read thousands of rollup rows instead of a million (bench/ai.ts). Two or more
 *   filters at once read the rows.
 * - `agent_sessions` / `agent_users`: totals per session and per user with first and last activity
 *   (ai.stats lists the sessions and users active in a window).
 *   All are maintained by src/storage/ai-repo.ts in the transaction that writes the rows.
 * - `agent_scores`: scores; a later write with the same score id replaces; `deleted` = tombstone.
 * - `agent_traces`: Langfuse trace-level identifiers that flow down to observations.
 * - `ai_settings`: per-project privacy mode.
 * - `ai_fix_dispatches`: hosted fixer dispatches (written by automations; read by ai.fixStats/fixTimeline).
 */
export const m020AgentObservations: Migration = {
  version: 20,
  name: 'agent observations, scores and rollups',
  sql: `
CREATE TABLE agent_observations (
  id INTEGER PRIMARY KEY,
  project_id INTEGER NOT NULL,
  observation_id TEXT NOT NULL,
  parent_observation_id TEXT NOT NULL DEFAULT '',
  trace_id TEXT NOT NULL DEFAULT '',
  span_id TEXT NOT NULL DEFAULT '',
  session_id TEXT NOT NULL DEFAULT '',
  user_id TEXT NOT NULL DEFAULT '',
  distinct_id TEXT NOT NULL DEFAULT '',
  visitor_id TEXT NOT NULL DEFAULT '',
  agent_id TEXT NOT NULL DEFAULT '',
  workflow_id TEXT NOT NULL DEFAULT '',
  step_id TEXT NOT NULL DEFAULT '',
  observation_type TEXT NOT NULL,
  observation_name TEXT NOT NULL DEFAULT '',
  operation TEXT NOT NULL DEFAULT '',
  message TEXT NOT NULL DEFAULT '',
  level TEXT NOT NULL DEFAULT 'info',
  status TEXT NOT NULL DEFAULT 'ok',
  source TEXT NOT NULL DEFAULT '',
  model TEXT NOT NULL DEFAULT '',
  provider TEXT NOT NULL DEFAULT '',
  tool_name TEXT NOT NULL DEFAULT '',
  duration_ms INTEGER NOT NULL DEFAULT 0,
  prompt_tokens INTEGER,
  completion_tokens INTEGER,
  total_tokens INTEGER,
  cost_usd REAL,
  cost_source TEXT NOT NULL DEFAULT '',
  started_ms REAL NOT NULL,
  received_ms INTEGER NOT NULL,
  environment TEXT NOT NULL DEFAULT '',
  release TEXT NOT NULL DEFAULT '',
  input_json TEXT NOT NULL DEFAULT '{}',
  output_json TEXT NOT NULL DEFAULT '{}',
  tags TEXT NOT NULL DEFAULT '[]',
  attributes TEXT NOT NULL DEFAULT '{}',
  had_input INTEGER NOT NULL DEFAULT 0,
  had_output INTEGER NOT NULL DEFAULT 0,
  had_system INTEGER NOT NULL DEFAULT 0,
  ${flagCols('INTEGER')}
);
CREATE UNIQUE INDEX agent_obs_id ON agent_observations(project_id, observation_id);
CREATE INDEX agent_obs_time ON agent_observations(project_id, started_ms);
CREATE INDEX agent_obs_session ON agent_observations(project_id, session_id, started_ms) WHERE session_id != '';
CREATE INDEX agent_obs_user ON agent_observations(project_id, user_id, started_ms) WHERE user_id != '';
CREATE INDEX agent_obs_trace ON agent_observations(project_id, trace_id) WHERE trace_id != '';

CREATE TABLE agent_obs_1h (
  project_id INTEGER NOT NULL,
  hour_ms INTEGER NOT NULL,
  dim TEXT NOT NULL,
  value TEXT NOT NULL,
  n INTEGER NOT NULL DEFAULT 0,
  ${flagCols('INTEGER')},
  cost_sum REAL NOT NULL DEFAULT 0,
  prompt_sum INTEGER NOT NULL DEFAULT 0,
  completion_sum INTEGER NOT NULL DEFAULT 0,
  tokens_sum INTEGER NOT NULL DEFAULT 0,
  duration_sum INTEGER NOT NULL DEFAULT 0,
  gen_duration_sum INTEGER NOT NULL DEFAULT 0,
  tool_n INTEGER NOT NULL DEFAULT 0,
  PRIMARY KEY (project_id, dim, value, hour_ms)
) WITHOUT ROWID;

CREATE TABLE agent_sessions (
  project_id INTEGER NOT NULL,
  session_id TEXT NOT NULL,
  n INTEGER NOT NULL DEFAULT 0,
  generations INTEGER NOT NULL DEFAULT 0,
  errors INTEGER NOT NULL DEFAULT 0,
  cost_sum REAL NOT NULL DEFAULT 0,
  tokens_sum INTEGER NOT NULL DEFAULT 0,
  first_ms REAL NOT NULL,
  last_ms REAL NOT NULL,
  PRIMARY KEY (project_id, session_id)
) WITHOUT ROWID;
CREATE INDEX agent_sessions_last ON agent_sessions(project_id, last_ms);

CREATE TABLE agent_users (
  project_id INTEGER NOT NULL,
  user_id TEXT NOT NULL,
  n INTEGER NOT NULL DEFAULT 0,
  generations INTEGER NOT NULL DEFAULT 0,
  errors INTEGER NOT NULL DEFAULT 0,
  cost_sum REAL NOT NULL DEFAULT 0,
  tokens_sum INTEGER NOT NULL DEFAULT 0,
  first_ms REAL NOT NULL,
  last_ms REAL NOT NULL,
  PRIMARY KEY (project_id, user_id)
) WITHOUT ROWID;
CREATE INDEX agent_users_last ON agent_users(project_id, last_ms);

CREATE TABLE agent_scores (
  id INTEGER PRIMARY KEY,
  project_id INTEGER NOT NULL,
  score_id TEXT NOT NULL,
  trace_id TEXT NOT NULL DEFAULT '',
  observation_id TEXT NOT NULL DEFAULT '',
  span_id TEXT NOT NULL DEFAULT '',
  session_id TEXT NOT NULL DEFAULT '',
  user_id TEXT NOT NULL DEFAULT '',
  name TEXT NOT NULL,
  value REAL NOT NULL DEFAULT 0,
  string_value TEXT NOT NULL DEFAULT '',
  data_type TEXT NOT NULL,
  source TEXT NOT NULL,
  comment TEXT NOT NULL DEFAULT '',
  author TEXT NOT NULL DEFAULT '',
  model TEXT NOT NULL DEFAULT '',
  environment TEXT NOT NULL DEFAULT '',
  release TEXT NOT NULL DEFAULT '',
  metadata TEXT NOT NULL DEFAULT '{}',
  started_ms REAL NOT NULL,
  received_ms INTEGER NOT NULL,
  deleted INTEGER NOT NULL DEFAULT 0
);
CREATE UNIQUE INDEX agent_scores_id ON agent_scores(project_id, score_id);
CREATE INDEX agent_scores_time ON agent_scores(project_id, started_ms);
CREATE INDEX agent_scores_obs ON agent_scores(project_id, observation_id) WHERE observation_id != '';

CREATE TABLE agent_traces (
  project_id INTEGER NOT NULL,
  trace_id TEXT NOT NULL,
  name TEXT NOT NULL DEFAULT '',
  session_id TEXT NOT NULL DEFAULT '',
  user_id TEXT NOT NULL DEFAULT '',
  tags TEXT NOT NULL DEFAULT '[]',
  release TEXT NOT NULL DEFAULT '',
  environment TEXT NOT NULL DEFAULT '',
  metadata TEXT NOT NULL DEFAULT '{}',
  PRIMARY KEY (project_id, trace_id)
) WITHOUT ROWID;

CREATE TABLE ai_settings (
  project_id INTEGER PRIMARY KEY,
  privacy_mode INTEGER NOT NULL DEFAULT 0,
  updated_ms INTEGER NOT NULL
);

CREATE TABLE ai_fix_dispatches (
  id INTEGER PRIMARY KEY,
  project_id INTEGER NOT NULL,
  dispatch_id TEXT NOT NULL,
  source TEXT NOT NULL,
  requester TEXT NOT NULL DEFAULT '',
  status TEXT NOT NULL,
  webhook_status TEXT NOT NULL DEFAULT 'none',
  dispatched_ms INTEGER NOT NULL,
  completed_ms INTEGER
);
CREATE UNIQUE INDEX ai_fix_dispatches_id ON ai_fix_dispatches(project_id, dispatch_id);
CREATE INDEX ai_fix_dispatches_time ON ai_fix_dispatches(project_id, dispatched_ms);
`,
};
