import type { Migration } from './index.js';

/**
 * Cheaper AI observation ingest (issue 13): the per-observation trace index of migration 020
 * (`agent_obs_trace`, random trace ids: one scattered B-tree insert per observation) becomes one row
 * per trace, `agent_obs_traces`, holding the time range [first_ms, last_ms] of the trace's
 * observations. Reads by trace (agentObservations.list with trace_id, the Langfuse trace update)
 * narrow their window to that range and walk the time index, filtering on trace_id: a trace lasts
 * seconds to minutes, so that reads a handful of rows. The range only grows (a replaced observation
 * keeps the old bounds): an outer bound is all the reads need. Built here from existing rows.
 */
export const m039AgentObsTraces: Migration = {
  version: 39,
  name: 'AI observation trace ranges instead of the per-observation trace index',
  sql: `
CREATE TABLE agent_obs_traces (
  project_id INTEGER NOT NULL,
  trace_id TEXT NOT NULL,
  first_ms REAL NOT NULL,
  last_ms REAL NOT NULL,
  PRIMARY KEY (project_id, trace_id)
) WITHOUT ROWID;
INSERT INTO agent_obs_traces (project_id, trace_id, first_ms, last_ms)
  SELECT project_id, trace_id, min(started_ms), max(started_ms) FROM agent_observations WHERE trace_id != '' GROUP BY project_id, trace_id;
CREATE INDEX agent_obs_traces_last ON agent_obs_traces(project_id, last_ms);
DROP INDEX agent_obs_trace;
`,
};
