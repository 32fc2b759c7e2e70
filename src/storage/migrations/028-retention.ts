import type { Migration } from './index.js';

/** Per-project retention periods set by owners (kinds without a row use the default). */
export const m028Retention: Migration = {
  version: 28,
  name: 'retention settings',
  sql: `
CREATE TABLE retention_settings (
  project_id INTEGER NOT NULL,
  kind TEXT NOT NULL,
  days INTEGER NOT NULL,
  updated_at INTEGER NOT NULL,
  PRIMARY KEY (project_id, kind)
) WITHOUT ROWID;
CREATE INDEX metric_points_time ON metric_points(project_id, time_ms);
CREATE INDEX replay_recordings_received ON replay_recordings(project_id, received_ms);
CREATE INDEX check_ins_received ON check_ins(project_id, received_ms);
CREATE INDEX session_aggregates_started ON session_aggregates(project_id, started_ms);
CREATE INDEX replays_ended ON replays(project_id, ended_ms);
CREATE INDEX sessions_started ON sessions(project_id, started_ms);
`,
};
