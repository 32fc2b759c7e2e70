/**
 * Remote access storage (issue 18): settings, connectors, targets, policy revisions, requests,
 * executions, step-up codes, console sessions and the audit timeline. Rows hold hashes of one-time
 * codes and public keys only; private keys never reach the server.
 */
import type { Db } from './db.js';

export interface ConnectorRow {
  id: string;
  project_id: string;
  label: string;
  status: 'pending' | 'active' | 'revoked';
  enroll_code_hash: string | null;
  enroll_expires_at: number | null;
  public_key: string | null;
  key_version: number;
  rotation_requested: number;
  last_signed_ts: number;
  runner_version: string | null;
  created_at: number;
  enrolled_at: number | null;
  rotated_at: number | null;
  revoked_at: number | null;
  last_seen_at: number | null;
}

export type TargetState = 'disabled' | 'verification_requested' | 'awaiting_confirmation' | 'enabled';

export interface TargetRow {
  id: string;
  project_id: string;
  label: string;
  environment: string;
  connector_id: string;
  profile_id: string;
  state: TargetState;
  policy_revision: number;
  authority_revision: number;
  verification_id: string | null;
  verification_requested_at: number | null;
  probe_host_key_sha256: string | null;
  probe_signature: string | null;
  probe_at: number | null;
  probe_connector_key_version: number | null;
  runner_version: string | null;
  verified_at: number | null;
  enabled_at: number | null;
  created_at: number;
}

export interface PolicyRow {
  target_id: string;
  revision: number;
  project_id: string;
  body: string;
  created_by: string;
  created_at: number;
}

export type RequestState = 'pending' | 'approved' | 'cancelled' | 'denied' | 'expired';

export interface RequestRow {
  id: string;
  project_id: string;
  target_id: string;
  operation_id: string;
  parameters: string;
  timeout_seconds: number;
  output_limit: number;
  policy_revision: number;
  authority_revision: number;
  connector_id: string;
  connector_key_version: number;
  requester: string;
  state: RequestState;
  idempotency_key: string | null;
  payload_hash: string;
  binding_hash: string | null;
  approved_by: string | null;
  decided_at: number | null;
  approval_expires_at: number | null;
  stale_reason: string | null;
  created_at: number;
  expires_at: number;
}

export type ExecutionState = 'queued' | 'dispatched' | 'succeeded' | 'failed' | 'stale';

export interface ExecutionRow {
  id: string;
  project_id: string;
  request_id: string;
  target_id: string;
  connector_id: string;
  state: ExecutionState;
  error_code: string | null;
  exit_code: number | null;
  redacted_output: string | null;
  output_truncated: number;
  created_at: number;
  dispatched_at: number | null;
  finished_at: number | null;
}

export interface StepUpRow {
  id: string;
  code_hash: string;
  user_id: string;
  session_hash: string;
  action: string;
  binding: string;
  expires_at: number;
  used_at: number | null;
  attempts: number;
  created_at: number;
}

export interface AuditRow {
  id: number;
  project_id: string;
  at: number;
  actor: string;
  action: string;
  subject_type: string;
  subject_id: string;
  detail: string;
}

/* eslint-disable @typescript-eslint/no-explicit-any */
export function createRemoteRepo(db: Db) {
  const q = {
    insConnector: db.prepare(`INSERT INTO remote_connectors (id, project_id, label, status, enroll_code_hash, enroll_expires_at, created_at)
      VALUES (?, ?, ?, 'pending', ?, ?, ?)`),
    connector: db.prepare('SELECT * FROM remote_connectors WHERE project_id = ? AND id = ?'),
    connectorById: db.prepare('SELECT * FROM remote_connectors WHERE id = ?'),
    connectorByCode: db.prepare('SELECT * FROM remote_connectors WHERE enroll_code_hash = ?'),
    connectors: db.prepare('SELECT * FROM remote_connectors WHERE project_id = ? ORDER BY created_at, id'),
    insTarget: db.prepare(`INSERT INTO remote_targets (id, project_id, label, environment, connector_id, profile_id, state, policy_revision, created_at)
      VALUES (?, ?, ?, ?, ?, ?, 'disabled', 1, ?)`),
    target: db.prepare('SELECT * FROM remote_targets WHERE project_id = ? AND id = ?'),
    targets: db.prepare('SELECT * FROM remote_targets WHERE project_id = ? ORDER BY created_at, id'),
    targetsOfConnector: db.prepare('SELECT * FROM remote_targets WHERE connector_id = ?'),
    insPolicy: db.prepare('INSERT INTO remote_policies (target_id, revision, project_id, body, created_by, created_at) VALUES (?, ?, ?, ?, ?, ?)'),
    policy: db.prepare('SELECT * FROM remote_policies WHERE target_id = ? AND revision = ?'),
    maxPolicy: db.prepare('SELECT MAX(revision) AS r FROM remote_policies WHERE target_id = ?'),
    insRequest: db.prepare(`INSERT INTO remote_requests (id, project_id, target_id, operation_id, parameters, timeout_seconds, output_limit, policy_revision,
      authority_revision, connector_id, connector_key_version, requester, state, idempotency_key, payload_hash, created_at, expires_at)
      VALUES (@id, @project_id, @target_id, @operation_id, @parameters, @timeout_seconds, @output_limit, @policy_revision, @authority_revision,
      @connector_id, @connector_key_version, @requester, 'pending', @idempotency_key, @payload_hash, @created_at, @expires_at)`),
    request: db.prepare('SELECT * FROM remote_requests WHERE project_id = ? AND id = ?'),
    requestByIdem: db.prepare('SELECT * FROM remote_requests WHERE project_id = ? AND requester = ? AND idempotency_key = ?'),
    pending: db.prepare("SELECT * FROM remote_requests WHERE project_id = ? AND state = 'pending' ORDER BY created_at, id LIMIT 200"),
    insExecution: db.prepare(`INSERT INTO remote_executions (id, project_id, request_id, target_id, connector_id, state, created_at) VALUES (?, ?, ?, ?, ?, 'queued', ?)`),
    execution: db.prepare('SELECT * FROM remote_executions WHERE project_id = ? AND id = ?'),
    executionOfRequest: db.prepare('SELECT * FROM remote_executions WHERE request_id = ?'),
    executions: db.prepare('SELECT * FROM remote_executions WHERE project_id = ? ORDER BY created_at DESC, id LIMIT ?'),
    queuedForConnector: db.prepare("SELECT * FROM remote_executions WHERE connector_id = ? AND state = 'queued' ORDER BY created_at LIMIT 10"),
    insStepUp: db.prepare(`INSERT INTO remote_stepups (id, code_hash, user_id, session_hash, action, binding, expires_at, created_at) VALUES (?, ?, ?, ?, ?, ?, ?, ?)`),
    stepUpByCode: db.prepare('SELECT * FROM remote_stepups WHERE code_hash = ?'),
    stepUpFor: db.prepare('SELECT * FROM remote_stepups WHERE user_id = ? AND session_hash = ? AND action = ? AND binding = ? ORDER BY created_at DESC, rowid DESC LIMIT 1'),
    stepUpAttempt: db.prepare('UPDATE remote_stepups SET attempts = attempts + 1 WHERE id = ?'),
    useStepUp: db.prepare('UPDATE remote_stepups SET used_at = ? WHERE id = ? AND used_at IS NULL'),
    recentStepUps: db.prepare('SELECT COUNT(*) AS n FROM remote_stepups WHERE user_id = ? AND created_at > ?'),
    purgeStepUps: db.prepare('DELETE FROM remote_stepups WHERE expires_at < ?'),
    purgeSessions: db.prepare('DELETE FROM remote_console_sessions WHERE expires_at < ?'),
    insSession: db.prepare('INSERT INTO remote_console_sessions (id_hash, user_id, created_at, expires_at) VALUES (?, ?, ?, ?)'),
    session: db.prepare('SELECT * FROM remote_console_sessions WHERE id_hash = ?'),
    delSession: db.prepare('DELETE FROM remote_console_sessions WHERE id_hash = ?'),
    insAudit: db.prepare('INSERT INTO remote_audit (project_id, at, actor, action, subject_type, subject_id, detail) VALUES (?, ?, ?, ?, ?, ?, ?)'),
    audit: db.prepare('SELECT * FROM remote_audit WHERE project_id = ? AND id > ? ORDER BY id LIMIT ?'),
  };
  const set = (table: string, id: string, fields: Record<string, unknown>) => {
    const keys = Object.keys(fields);
    db.prepare(`UPDATE ${table} SET ${keys.map((k) => `${k} = @${k}`).join(', ')} WHERE id = @__id`).run({ ...fields, __id: id });
  };

  return {
    createConnector: (id: string, projectId: string, label: string, codeHash: string, expiresAt: number, now: number) => void q.insConnector.run(id, projectId, label, codeHash, expiresAt, now),
    connector: (projectId: string, id: string) => q.connector.get(projectId, id) as ConnectorRow | undefined,
    connectorById: (id: string) => q.connectorById.get(id) as ConnectorRow | undefined,
    connectorByCode: (hash: string) => q.connectorByCode.get(hash) as ConnectorRow | undefined,
    connectors: (projectId: string) => q.connectors.all(projectId) as ConnectorRow[],
    updateConnector: (id: string, fields: Partial<ConnectorRow>) => set('remote_connectors', id, fields),

    createTarget: (id: string, projectId: string, label: string, env: string, connectorId: string, profileId: string, now: number) => void q.insTarget.run(id, projectId, label, env, connectorId, profileId, now),
    target: (projectId: string, id: string) => q.target.get(projectId, id) as TargetRow | undefined,
    targets: (projectId: string) => q.targets.all(projectId) as TargetRow[],
    targetsOfConnector: (connectorId: string) => q.targetsOfConnector.all(connectorId) as TargetRow[],
    updateTarget: (id: string, fields: Partial<TargetRow>) => set('remote_targets', id, fields),

    addPolicy: (targetId: string, revision: number, projectId: string, body: string, by: string, now: number) => void q.insPolicy.run(targetId, revision, projectId, body, by, now),
    policy: (targetId: string, revision: number) => q.policy.get(targetId, revision) as PolicyRow | undefined,
    latestPolicyRevision: (targetId: string) => ((q.maxPolicy.get(targetId) as any)?.r as number | null) ?? 0,

    createRequest: (r: Omit<RequestRow, 'state' | 'binding_hash' | 'approved_by' | 'decided_at' | 'approval_expires_at' | 'stale_reason'>) => void q.insRequest.run(r),
    request: (projectId: string, id: string) => q.request.get(projectId, id) as RequestRow | undefined,
    requestByIdempotency: (projectId: string, requester: string, key: string) => q.requestByIdem.get(projectId, requester, key) as RequestRow | undefined,
    pendingRequests: (projectId: string) => q.pending.all(projectId) as RequestRow[],
    updateRequest: (id: string, fields: Partial<RequestRow>) => set('remote_requests', id, fields),

    createExecution: (id: string, projectId: string, requestId: string, targetId: string, connectorId: string, now: number) => void q.insExecution.run(id, projectId, requestId, targetId, connectorId, now),
    execution: (projectId: string, id: string) => q.execution.get(projectId, id) as ExecutionRow | undefined,
    executionOfRequest: (requestId: string) => q.executionOfRequest.get(requestId) as ExecutionRow | undefined,
    executions: (projectId: string, limit: number) => q.executions.all(projectId, limit) as ExecutionRow[],
    queuedForConnector: (connectorId: string) => q.queuedForConnector.all(connectorId) as ExecutionRow[],
    updateExecution: (id: string, fields: Partial<ExecutionRow>) => set('remote_executions', id, fields),

    createStepUp: (r: Omit<StepUpRow, 'used_at' | 'attempts'>) => void q.insStepUp.run(r.id, r.code_hash, r.user_id, r.session_hash, r.action, r.binding, r.expires_at, r.created_at),
    stepUpByCode: (hash: string) => q.stepUpByCode.get(hash) as StepUpRow | undefined,
    /** The newest step-up of this user, session, action and binding. */
    stepUpFor: (userId: string, sessionHash: string, action: string, binding: string) => q.stepUpFor.get(userId, sessionHash, action, binding) as StepUpRow | undefined,
    stepUpAttempt: (id: string) => void q.stepUpAttempt.run(id),
    /** True only for the one caller that marks it used (one-time). */
    useStepUp: (id: string, now: number) => q.useStepUp.run(now, id).changes === 1,
    stepUpsSince: (userId: string, since: number) => (q.recentStepUps.get(userId, since) as any).n as number,

    /** Drops step-up codes and console sessions that expired before `before` (they can never be used again). */
    purgeExpired: (before: number) => {
      q.purgeStepUps.run(before);
      q.purgeSessions.run(before);
    },
    createSession: (idHash: string, userId: string, now: number, expiresAt: number) => void q.insSession.run(idHash, userId, now, expiresAt),
    session: (idHash: string) => q.session.get(idHash) as { id_hash: string; user_id: string; expires_at: number } | undefined,
    deleteSession: (idHash: string) => void q.delSession.run(idHash),

    audit: (projectId: string, at: number, actor: string, action: string, subjectType: string, subjectId: string, detail: Record<string, unknown> = {}) =>
      void q.insAudit.run(projectId, at, actor, action, subjectType, subjectId, JSON.stringify(detail)),
    auditTrail: (projectId: string, after: number, limit: number) => q.audit.all(projectId, after, limit) as AuditRow[],
  };
}

export type RemoteRepo = ReturnType<typeof createRemoteRepo>;
