import type { Migration } from './index.js';

/**
 * Remote access (gated preview, issue 18; the switch is projects.remote_access_preview): connectors (public keys only;
 * enrollment codes as hashes), sanitized target intents with their verification probe, numbered
 * immutable policy revisions, typed requests with their approval binding, executions holding only
 * redacted output, one-time email step-up codes, console sessions and the audit timeline.
 */
export const m033RemoteAccess: Migration = {
  version: 33,
  name: 'remote access preview',
  sql: `
CREATE TABLE remote_connectors (
  id TEXT PRIMARY KEY,
  project_id TEXT NOT NULL,
  label TEXT NOT NULL,
  status TEXT NOT NULL,
  enroll_code_hash TEXT UNIQUE,
  enroll_expires_at INTEGER,
  public_key TEXT,
  key_version INTEGER NOT NULL DEFAULT 0,
  rotation_requested INTEGER NOT NULL DEFAULT 0,
  last_signed_ts INTEGER NOT NULL DEFAULT 0,
  runner_version TEXT,
  created_at INTEGER NOT NULL,
  enrolled_at INTEGER,
  rotated_at INTEGER,
  revoked_at INTEGER,
  last_seen_at INTEGER
);
CREATE INDEX remote_connectors_project ON remote_connectors(project_id, created_at);
CREATE TABLE remote_targets (
  id TEXT PRIMARY KEY,
  project_id TEXT NOT NULL,
  label TEXT NOT NULL,
  environment TEXT NOT NULL,
  connector_id TEXT NOT NULL,
  profile_id TEXT NOT NULL,
  state TEXT NOT NULL,
  policy_revision INTEGER NOT NULL,
  authority_revision INTEGER NOT NULL DEFAULT 0,
  verification_id TEXT,
  verification_requested_at INTEGER,
  probe_host_key_sha256 TEXT,
  probe_signature TEXT,
  probe_at INTEGER,
  probe_connector_key_version INTEGER,
  runner_version TEXT,
  verified_at INTEGER,
  enabled_at INTEGER,
  created_at INTEGER NOT NULL
);
CREATE INDEX remote_targets_project ON remote_targets(project_id, created_at);
CREATE TABLE remote_policies (
  target_id TEXT NOT NULL,
  revision INTEGER NOT NULL,
  project_id TEXT NOT NULL,
  body TEXT NOT NULL,
  created_by TEXT NOT NULL,
  created_at INTEGER NOT NULL,
  PRIMARY KEY (target_id, revision)
);
CREATE TABLE remote_requests (
  id TEXT PRIMARY KEY,
  project_id TEXT NOT NULL,
  target_id TEXT NOT NULL,
  operation_id TEXT NOT NULL,
  parameters TEXT NOT NULL,
  timeout_seconds INTEGER NOT NULL,
  output_limit INTEGER NOT NULL,
  policy_revision INTEGER NOT NULL,
  authority_revision INTEGER NOT NULL,
  connector_id TEXT NOT NULL,
  connector_key_version INTEGER NOT NULL,
  requester TEXT NOT NULL,
  state TEXT NOT NULL,
  idempotency_key TEXT,
  payload_hash TEXT NOT NULL,
  binding_hash TEXT,
  approved_by TEXT,
  decided_at INTEGER,
  approval_expires_at INTEGER,
  stale_reason TEXT,
  created_at INTEGER NOT NULL,
  expires_at INTEGER NOT NULL
);
CREATE UNIQUE INDEX remote_requests_idem ON remote_requests(project_id, requester, idempotency_key) WHERE idempotency_key IS NOT NULL;
CREATE INDEX remote_requests_project ON remote_requests(project_id, state, created_at);
CREATE TABLE remote_executions (
  id TEXT PRIMARY KEY,
  project_id TEXT NOT NULL,
  request_id TEXT NOT NULL UNIQUE,
  target_id TEXT NOT NULL,
  connector_id TEXT NOT NULL,
  state TEXT NOT NULL,
  error_code TEXT,
  exit_code INTEGER,
  redacted_output TEXT,
  output_truncated INTEGER NOT NULL DEFAULT 0,
  created_at INTEGER NOT NULL,
  dispatched_at INTEGER,
  finished_at INTEGER
);
CREATE INDEX remote_executions_project ON remote_executions(project_id, created_at);
CREATE TABLE remote_stepups (
  id TEXT PRIMARY KEY,
  code_hash TEXT NOT NULL,
  user_id TEXT NOT NULL,
  session_hash TEXT NOT NULL,
  action TEXT NOT NULL,
  binding TEXT NOT NULL,
  expires_at INTEGER NOT NULL,
  used_at INTEGER,
  attempts INTEGER NOT NULL DEFAULT 0,
  created_at INTEGER NOT NULL
);
CREATE INDEX remote_stepups_user ON remote_stepups(user_id, created_at);
CREATE TABLE remote_console_sessions (
  id_hash TEXT PRIMARY KEY,
  user_id TEXT NOT NULL,
  created_at INTEGER NOT NULL,
  expires_at INTEGER NOT NULL
);
CREATE TABLE remote_audit (
  id INTEGER PRIMARY KEY,
  project_id TEXT NOT NULL,
  at INTEGER NOT NULL,
  actor TEXT NOT NULL,
  action TEXT NOT NULL,
  subject_type TEXT NOT NULL,
  subject_id TEXT NOT NULL,
  detail TEXT NOT NULL DEFAULT '{}'
);
CREATE INDEX remote_audit_project ON remote_audit(project_id, id);
`,
};
