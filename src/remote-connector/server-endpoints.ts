/**
 * The connector-facing endpoints (not catalogue operations: a connector is not an API credential).
 * Mounted under /v1/remote-connector:
 *   POST /enroll   one-time enrollment code + the connector's Ed25519 public key → connector id and
 *                  the server's public key (the private key never leaves the connector)
 *   POST /poll     approved work and verification requests, each signed by the server
 *   POST /rotate   the new public key, signed by the current one (after remoteAccess.rotateConnector)
 *   POST /results  a verification probe or an execution result
 * Every call but /enroll is authenticated by an Ed25519 signature over method, path, timestamp and
 * the body's SHA-256 (signing.ts); timestamps must be recent and strictly increasing per connector,
 * so a captured call cannot be replayed. A revoked connector's signatures are refused.
 */
import { randomUUID } from 'node:crypto';
import type Koa from 'koa';
import type Router from '@koa/router';
import { z } from 'zod';
import type { Mount } from '../server.js';
import { AppError, ForbiddenError, ValidationError } from '../core/errors.js';
import type { Services } from '../core/services.js';
import { readRawBody } from '../http/body.js';
import { hashSecret } from '../domain/identity/secrets.js';
import type { ConnectorRow } from '../storage/remote-repo.js';
import { authorityBundle, LIFETIMES, previewEnabled, staleReason } from '../core/remote/service.js';
import { publicKeyFromRaw, sealEnvelope, signingString, verifyB64 } from '../domain/remote/signing.js';
import { serverKeys } from '../core/remote/service.js';
import { redactOutput } from '../domain/remote/redact.js';
import { PREVIEW_DISABLED } from '../core/remote/errors.js';

export const CONNECTOR_BASE = '/v1/remote-connector';
const BODY_LIMIT = 512 * 1024;
const RUNNER_VERSION = z.string().regex(/^[A-Za-z0-9._+-]{1,40}$/);
/** Error codes a connector may report; anything else is stored as `connector_error` (never raw SSH text). */
const REPORTED_CODES = new Set(['host_key_mismatch', 'connect_failed', 'auth_failed', 'profile_missing', 'timeout', 'operation_refused', 'authority_invalid', 'exec_failed']);

const refused = (code: string, message: string) => new AppError(401, 'authentication_error', code, message);

function parseJson<T extends z.ZodType>(raw: Buffer, schema: T): z.output<T> {
  let v: unknown;
  try {
    v = raw.length ? JSON.parse(raw.toString('utf8')) : {};
  } catch {
    throw new ValidationError('The request body is not valid JSON.', undefined, 'invalid_json');
  }
  const r = schema.safeParse(v);
  if (!r.success) throw new ValidationError('The request body is not what this endpoint accepts.', r.error.issues[0]?.path.join('.') || undefined);
  return r.data;
}

/** The connector that signed this request, after every check; or a refusal. */
function authenticate(s: Services, ctx: Koa.Context, raw: Buffer, now: number): ConnectorRow {
  const id = ctx.get('x-sightline-connector');
  const ts = ctx.get('x-sightline-timestamp');
  const sig = ctx.get('x-sightline-signature');
  if (!/^[0-9a-f-]{36}$/.test(id) || !/^\d{13}$/.test(ts) || !sig) throw refused('connector_signature_missing', 'Sign the request: x-sightline-connector, x-sightline-timestamp and x-sightline-signature.');
  const c = s.remote.connectorById(id);
  if (!c || !c.public_key) throw refused('connector_signature_invalid', 'The signature is not valid.');
  if (c.status === 'revoked') throw refused('connector_revoked', 'This connector is revoked; its signatures are refused. Enroll a new connector.');
  if (!previewEnabled(s, c.project_id)) throw new ForbiddenError(PREVIEW_DISABLED, 'Remote access is not enabled for this project.');
  const t = Number(ts);
  if (Math.abs(now - t) > LIFETIMES.signatureSkewMs) throw refused('connector_clock_skew', 'The timestamp is too far from the server clock; fix the connector host clock.');
  const key = publicKeyFromRaw(c.public_key);
  if (!key || !verifyB64(key, signingString(ctx.method, ctx.originalUrl, ts, raw), sig)) throw refused('connector_signature_invalid', 'The signature is not valid.');
  if (t <= c.last_signed_ts) throw refused('connector_replay', 'This timestamp was already used; every call needs a newer one.');
  s.remote.updateConnector(c.id, { last_signed_ts: t, last_seen_at: now });
  return { ...c, last_signed_ts: t };
}

export const remoteConnectorMount: Mount = (sl, router: Router) => {
  const s = sl.services;
  const now = () => sl.core.now();

  // Refused signatures and enrollment codes count as failed authentications of the address (the
  // shared throttle: guessing codes or forging signatures is slowed like guessing API keys).
  router.use(CONNECTOR_BASE, async (ctx, next) => {
    try {
      await next();
    } catch (err) {
      if (err instanceof AppError && err.status === 401) sl.authThrottle.fail(ctx.ip);
      throw err;
    }
  });

  router.post(`${CONNECTOR_BASE}/enroll`, async (ctx) => {
    const raw = await readRawBody(ctx, 4096);
    const body = parseJson(raw, z.strictObject({ code: z.string().max(200), public_key: z.string().max(100), runner_version: RUNNER_VERSION }));
    const t = now();
    const c = s.remote.connectorByCode(hashSecret(body.code));
    if (!c || c.status !== 'pending' || (c.enroll_expires_at ?? 0) <= t) throw refused('enrollment_code_invalid', 'The enrollment code is not valid (unknown, used or expired). Create a new connector for a new code.');
    if (!previewEnabled(s, c.project_id)) throw new ForbiddenError(PREVIEW_DISABLED, 'Remote access is not enabled for this project.');
    if (!publicKeyFromRaw(body.public_key)) throw new ValidationError('`public_key` must be a raw Ed25519 public key (32 bytes, base64url).', 'public_key');
    s.atomic(() => {
      s.remote.updateConnector(c.id, { status: 'active', public_key: body.public_key, key_version: 1, enroll_code_hash: null, enroll_expires_at: null, enrolled_at: t, last_seen_at: t, runner_version: body.runner_version });
      s.remote.audit(c.project_id, t, `connector:${c.id}`, 'connector.enrolled', 'connector', c.id);
    });
    ctx.set('Cache-Control', 'no-store');
    ctx.body = { connector_id: c.id, project_id: c.project_id, server_public_key: serverKeys(s).publicKeyRaw };
  });

  router.post(`${CONNECTOR_BASE}/poll`, async (ctx) => {
    const raw = await readRawBody(ctx, 4096);
    const t = now();
    const c = authenticate(s, ctx, raw, t);
    parseJson(raw, z.strictObject({ runner_version: RUNNER_VERSION.optional() }));
    ctx.set('Cache-Control', 'no-store');
    if (c.rotation_requested) {
      ctx.body = { rotate: true, jobs: [] };
      return;
    }
    const key = serverKeys(s).privateKey;
    const jobs: string[] = [];
    s.atomic(() => {
      for (const target of s.remote.targetsOfConnector(c.id)) {
        if (target.state !== 'verification_requested' || !target.verification_id) continue;
        if (t - (target.verification_requested_at ?? 0) > LIFETIMES.verificationMs) {
          s.remote.updateTarget(target.id, { state: 'disabled', verification_id: null });
          s.remote.audit(target.project_id, t, 'system', 'target.verification_expired', 'target', target.id);
          continue;
        }
        jobs.push(sealEnvelope(key, { type: 'verify', connector_id: c.id, target_id: target.id, verification_id: target.verification_id, profile_id: target.profile_id, issued_at: t, expires_at: t + 60_000 }));
      }
      for (const e of s.remote.queuedForConnector(c.id)) {
        const r = s.remote.request(e.project_id, e.request_id)!;
        const stale = r.state !== 'approved' ? 'approval_stale' : staleReason(s, r, t);
        if (stale) {
          s.remote.updateExecution(e.id, { state: 'stale', error_code: stale, finished_at: t });
          s.remote.audit(e.project_id, t, 'system', 'execution.stale', 'execution', e.id, { code: stale });
          continue;
        }
        const target = s.remote.target(e.project_id, e.target_id)!;
        s.remote.updateExecution(e.id, { state: 'dispatched', dispatched_at: t });
        s.remote.audit(e.project_id, t, `connector:${c.id}`, 'execution.dispatched', 'execution', e.id);
        jobs.push(sealEnvelope(key, {
          type: 'execute', connector_id: c.id, execution_id: e.id, target_id: target.id, profile_id: target.profile_id,
          operation: r.operation_id, parameters: JSON.parse(r.parameters), timeout_seconds: r.timeout_seconds, output_limit: r.output_limit,
          authority: authorityBundle(s, target, t), issued_at: t, expires_at: t + 60_000,
        }));
      }
    });
    ctx.body = { rotate: false, jobs };
  });

  router.post(`${CONNECTOR_BASE}/rotate`, async (ctx) => {
    const raw = await readRawBody(ctx, 4096);
    const t = now();
    const c = authenticate(s, ctx, raw, t);
    const body = parseJson(raw, z.strictObject({ public_key: z.string().max(100) }));
    if (!c.rotation_requested) throw new AppError(409, 'conflict_error', 'rotation_not_requested', 'No rotation was requested for this connector.');
    if (!publicKeyFromRaw(body.public_key) || body.public_key === c.public_key) throw new ValidationError('`public_key` must be a new raw Ed25519 public key.', 'public_key');
    s.atomic(() => {
      s.remote.updateConnector(c.id, { public_key: body.public_key, key_version: c.key_version + 1, rotation_requested: 0, rotated_at: t });
      s.remote.audit(c.project_id, t, `connector:${c.id}`, 'connector.rotated', 'connector', c.id, { key_version: c.key_version + 1 });
    });
    ctx.body = { key_version: c.key_version + 1 };
  });

  const resultSchema = z.discriminatedUnion('type', [
    z.strictObject({ type: z.literal('verify'), target_id: z.string().uuid(), verification_id: z.string().uuid(), ok: z.boolean(), host_key_sha256: z.string().regex(/^SHA256:[A-Za-z0-9+/]{43}$/).optional(), runner_version: RUNNER_VERSION, error_code: z.string().max(40).optional() }),
    z.strictObject({ type: z.literal('execute'), execution_id: z.string().uuid(), ok: z.boolean(), exit_code: z.number().int().nullable(), output: z.string().max(256 * 1024), error_code: z.string().max(40).optional() }),
  ]);

  router.post(`${CONNECTOR_BASE}/results`, async (ctx) => {
    const raw = await readRawBody(ctx, BODY_LIMIT);
    const t = now();
    const c = authenticate(s, ctx, raw, t);
    const body = parseJson(raw, resultSchema);
    const code = (x: string | undefined) => (x && REPORTED_CODES.has(x) ? x : 'connector_error');
    const actor = `connector:${c.id}`;
    s.atomic(() => {
      if (body.type === 'verify') {
        const target = s.remote.target(c.project_id, body.target_id);
        if (!target || target.connector_id !== c.id || target.state !== 'verification_requested' || target.verification_id !== body.verification_id) {
          throw new AppError(409, 'conflict_error', 'verification_not_pending', 'This verification is not pending.');
        }
        if (!body.ok || !body.host_key_sha256) {
          s.remote.updateTarget(target.id, { state: 'disabled', verification_id: null });
          s.remote.audit(c.project_id, t, actor, 'target.verification_failed', 'target', target.id, { code: code(body.error_code) });
          return;
        }
        // The probe is connector-signed: the request signature covers the digest and verification id.
        s.remote.updateTarget(target.id, {
          state: 'awaiting_confirmation', probe_host_key_sha256: body.host_key_sha256, probe_signature: ctx.get('x-sightline-signature'),
          probe_at: t, probe_connector_key_version: c.key_version, runner_version: body.runner_version,
        });
        s.remote.audit(c.project_id, t, actor, 'target.probe_received', 'target', target.id, { verification_id: body.verification_id });
        return;
      }
      const e = s.remote.execution(c.project_id, body.execution_id);
      if (!e || e.connector_id !== c.id || e.state !== 'dispatched') throw new AppError(409, 'conflict_error', 'execution_not_dispatched', 'This execution is not waiting for a result.');
      const r = s.remote.request(c.project_id, e.request_id)!;
      const red = redactOutput(body.output, r.output_limit);
      s.remote.updateExecution(e.id, {
        state: body.ok ? 'succeeded' : 'failed', exit_code: body.exit_code, error_code: body.ok ? null : code(body.error_code),
        redacted_output: red.text, output_truncated: red.truncated ? 1 : 0, finished_at: t,
      });
      s.remote.audit(c.project_id, t, actor, body.ok ? 'execution.succeeded' : 'execution.failed', 'execution', e.id, { request_id: r.id });
    });
    ctx.body = { accepted: true, id: randomUUID() };
  });
};
