/**
 * Why this file: the remote-access rules that more than one face needs — the operations
 * (operations/remoteAccess.ts), the connector endpoints (connector-api.ts) and the human console
 * (src/pages/remote) — live here once: the preview gate, the audit trail, sanitized views, the
 * approval binding and its staleness checks, target confirmation, and what a connector is handed.
 */
import { createHash, randomUUID, timingSafeEqual } from 'node:crypto';
import type { Services } from '../services.js';
import type { Principal } from '../principal.js';
import type { ConnectorRow, ExecutionRow, RequestRow, TargetRow } from '../../storage/remote-repo.js';
import { policyBody, type Policy } from '../../domain/remote/policy.js';
import { normalizeDigest, privateKeyFromSeed, rawPublicKey, sealEnvelope } from '../../domain/remote/signing.js';
import { createPublicKey } from 'node:crypto';
import { STALE_CODES } from './errors.js';

export const LIFETIMES = {
  enrollCodeMs: 15 * 60_000,
  pendingRequestMs: 30 * 60_000,
  approvalMs: 10 * 60_000,
  verificationMs: 30 * 60_000,
  probeFreshMs: 30 * 60_000,
  stepUpMs: 5 * 60_000,
  consoleSessionMs: 8 * 3_600_000,
  signatureSkewMs: 5 * 60_000,
} as const;

/** The gate (spec: every operation answers feature-disabled unless the preview is enabled for the project). */
export function previewEnabled(s: Services, projectId: string): boolean {
  return s.identity.projectById(projectId)?.remote_access_preview === true;
}

/** Turns the preview on or off, keeping the project's other flags. */
export function setPreview(s: Services, projectId: string, enabled: boolean): void {
  const p = s.identity.projectById(projectId)!;
  s.identity.setProjectFlags(projectId, { product_analytics: p.product_analytics, remote_access_preview: enabled });
}

export function actorOf(p: Principal): string {
  return p.kind === 'api_key' ? `api_key:${p.keyId}` : `user:${p.userId}`;
}

export function policyOf(s: Services, targetId: string, revision: number): Policy {
  const row = s.remote.policy(targetId, revision);
  return policyBody.parse(JSON.parse(row!.body));
}

const iso = (ms: number | null) => (ms === null ? null : new Date(ms).toISOString());

/** Spec: opaque target id, label, environment, enabled state, verified time, runner version — nothing else about the host. */
export function sanitizedTarget(t: TargetRow) {
  return {
    id: t.id,
    label: t.label,
    environment: t.environment,
    enabled: t.state === 'enabled',
    setup_state: t.state,
    connector_id: t.connector_id,
    policy_revision: t.policy_revision,
    verified_at: iso(t.verified_at),
    runner_version: t.runner_version,
    created_at: iso(t.created_at)!,
  };
}

export function sanitizedConnector(c: ConnectorRow) {
  return {
    id: c.id,
    label: c.label,
    status: c.status,
    key_version: c.key_version,
    rotation_pending: c.rotation_requested === 1,
    runner_version: c.runner_version,
    created_at: iso(c.created_at)!,
    enrolled_at: iso(c.enrolled_at),
    rotated_at: iso(c.rotated_at),
    revoked_at: iso(c.revoked_at),
    last_seen_at: iso(c.last_seen_at),
  };
}

export function sanitizedExecution(e: ExecutionRow) {
  return {
    id: e.id,
    request_id: e.request_id,
    target_id: e.target_id,
    state: e.state,
    error_code: e.error_code,
    exit_code: e.exit_code,
    output_truncated: e.output_truncated === 1,
    created_at: iso(e.created_at)!,
    dispatched_at: iso(e.dispatched_at),
    finished_at: iso(e.finished_at),
  };
}

/** What an approval binds (spec): target, operation, typed parameters, policy and authority revisions, timeout, output limit, requester and expiry. */
export function bindingHash(r: RequestRow, approvalExpiresAt: number): string {
  const b = [r.target_id, r.operation_id, r.parameters, r.policy_revision, r.authority_revision, r.timeout_seconds, r.output_limit, r.requester, r.connector_id, r.connector_key_version, approvalExpiresAt];
  return createHash('sha256').update(JSON.stringify(b)).digest('hex');
}

/** Why a request can no longer run (a stale code), or null while everything it was bound to still holds. */
export function staleReason(s: Services, r: RequestRow, now: number): (typeof STALE_CODES)[number] | null {
  const target = s.remote.target(r.project_id, r.target_id);
  if (!target || target.state !== 'enabled' || target.connector_id !== r.connector_id) return 'target_stale';
  if (target.policy_revision !== r.policy_revision) return 'policy_stale';
  if (target.authority_revision !== r.authority_revision) return 'authority_stale';
  const c = s.remote.connectorById(r.connector_id);
  if (!c || c.status !== 'active' || c.key_version !== r.connector_key_version) return 'connector_identity_stale';
  if (r.state === 'approved') {
    if (!r.approval_expires_at || r.approval_expires_at <= now) return 'approval_stale';
    if (!r.binding_hash || !sameText(r.binding_hash, bindingHash(r, r.approval_expires_at))) return 'grant_stale';
  }
  return null;
}

export function sameText(a: string, b: string): boolean {
  const x = Buffer.from(a);
  const y = Buffer.from(b);
  return x.length === y.length && timingSafeEqual(x, y);
}

/** Pending requests past their time become `expired` (checked whenever they are read or decided). */
export function expireIfDue(s: Services, r: RequestRow, now: number): RequestRow {
  if (r.state === 'pending' && r.expires_at <= now) {
    s.remote.updateRequest(r.id, { state: 'expired', decided_at: now });
    s.remote.audit(r.project_id, now, 'system', 'request.expired', 'request', r.id);
    return { ...r, state: 'expired', decided_at: now };
  }
  return r;
}

export type DecisionOutcome = { ok: true; request: RequestRow } | { ok: false; code: string; message: string };

/**
 * A human decision on a pending request (console only). The requester cannot decide their own
 * request; a stale binding is terminal and marks the request expired.
 */
export function decideRequest(s: Services, projectId: string, requestId: string, userId: string, decision: 'approve' | 'deny', now: number): DecisionOutcome {
  return s.atomic(() => {
    const found = s.remote.request(projectId, requestId);
    if (!found) return { ok: false, code: 'not_found', message: 'Request was not found.' };
    const r = expireIfDue(s, found, now);
    if (r.state !== 'pending') return { ok: false, code: 'request_not_pending', message: `The request is ${r.state}; only pending requests can be decided. Recovery: preview and create a new request.` };
    if (r.requester === `user:${userId}`) return { ok: false, code: 'self_approval_forbidden', message: 'You created this request, so you cannot decide it; another person must review it.' };
    if (decision === 'deny') {
      s.remote.updateRequest(r.id, { state: 'denied', decided_at: now, approved_by: `user:${userId}` });
      s.remote.audit(projectId, now, `user:${userId}`, 'request.denied', 'request', r.id);
      return { ok: true, request: { ...r, state: 'denied' } };
    }
    const stale = staleReason(s, r, now);
    if (stale) {
      s.remote.updateRequest(r.id, { state: 'expired', decided_at: now, stale_reason: stale });
      s.remote.audit(projectId, now, `user:${userId}`, 'request.approval_refused_stale', 'request', r.id, { code: stale });
      return { ok: false, code: stale, message: `The ${stale.replace(/_stale$/, '').replace('_', ' ')} this request was bound to is stale. Recovery: preview the request again and create a new request.` };
    }
    const expires = now + LIFETIMES.approvalMs;
    s.remote.updateRequest(r.id, { state: 'approved', decided_at: now, approved_by: `user:${userId}`, approval_expires_at: expires, binding_hash: bindingHash(r, expires) });
    const executionId = randomUUID();
    s.remote.createExecution(executionId, projectId, r.id, r.target_id, r.connector_id, now);
    s.remote.audit(projectId, now, `user:${userId}`, 'request.approved', 'request', r.id, { execution_id: executionId, policy_revision: r.policy_revision, authority_revision: r.authority_revision });
    return { ok: true, request: { ...r, state: 'approved' } };
  });
}


/**
 * Owner confirmation (console only): the verification id and the SHA-256 host-key digest the owner
 * read through a separate trusted console must both match the connector-signed probe, which must be
 * fresh and come from the connector's current key. Anything else sends the target back to disabled.
 */
export function confirmTarget(s: Services, projectId: string, targetId: string, userId: string, verificationId: string, digest: string, now: number): { ok: boolean; message: string } {
  return s.atomic(() => {
    const t = s.remote.target(projectId, targetId);
    if (!t) return { ok: false, message: 'Target was not found.' };
    const c = s.remote.connectorById(t.connector_id);
    const fail = (why: string, code: string) => {
      s.remote.updateTarget(t.id, { state: 'disabled', verification_id: null, verification_requested_at: null, probe_host_key_sha256: null, probe_signature: null, probe_at: null });
      s.remote.audit(projectId, now, `user:${userId}`, 'target.confirmation_failed', 'target', t.id, { code });
      return { ok: false, message: `${why} The target stays disabled. Recovery: request a new verification and compare again.` };
    };
    if (t.state !== 'awaiting_confirmation' || !t.verification_id || !t.probe_host_key_sha256 || t.probe_at === null) return { ok: false, message: 'This target has no connector-signed probe waiting for confirmation. Recovery: request a verification first.' };
    if (!sameText(t.verification_id, verificationId.trim())) return fail('The verification id does not match.', 'verification_id_mismatch');
    if (!sameText(normalizeDigest(t.probe_host_key_sha256), normalizeDigest(digest))) return fail('The host-key digest does not match the one the connector saw.', 'host_key_mismatch');
    if (now - t.probe_at > LIFETIMES.probeFreshMs || now - (t.verification_requested_at ?? 0) > LIFETIMES.verificationMs + LIFETIMES.probeFreshMs) return fail('The probe is too old.', 'probe_stale');
    if (!c || c.status !== 'active' || c.key_version !== t.probe_connector_key_version) return fail('The connector identity changed since the probe.', 'connector_identity_stale');
    s.remote.updateTarget(t.id, { state: 'enabled', verified_at: now, enabled_at: now, authority_revision: t.authority_revision + 1 });
    s.remote.audit(projectId, now, `user:${userId}`, 'target.confirmed', 'target', t.id, { authority_revision: t.authority_revision + 1 });
    return { ok: true, message: 'The target is enabled with observe-only authority.' };
  });
}

/** The server's remote-access signing key and its public half (handed to connectors at enrollment). */
export function serverKeys(s: Services) {
  const priv = privateKeyFromSeed(s.remoteSigningSeed());
  return { privateKey: priv, publicKeyRaw: rawPublicKey(createPublicKey(priv)) };
}

/** The signed authority bundle of an enabled target: observe-only operations its policy allows. */
export function authorityBundle(s: Services, t: TargetRow, now: number): string {
  const policy = policyOf(s, t.id, t.policy_revision);
  const allowed = Object.entries(policy.operations).filter(([, r]) => r.enabled).map(([id]) => id);
  return sealEnvelope(serverKeys(s).privateKey, {
    kind: 'sightline.remote.authority.v1',
    target_id: t.id,
    connector_id: t.connector_id,
    authority_revision: t.authority_revision,
    policy_revision: t.policy_revision,
    mode: 'observe_only',
    operations: allowed,
    issued_at: new Date(now).toISOString(),
  });
}
