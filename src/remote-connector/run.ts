/**
 * `sightline connector run`: the program that runs inside the customer's network. It enrolls once
 * with a one-time code (generating its Ed25519 key pair locally; the private key stays in its
 * state file, mode 0600), then polls the server over HTTP(S), signing every call. It accepts only
 * jobs signed by the server key it learned at enrollment, re-checks every typed operation and the
 * signed authority before running anything, reaches targets over SSH with its local profile file
 * (which the server never sees), redacts profile values from output, and stops when revoked.
 */
import { chmodSync, existsSync, readFileSync, writeFileSync } from 'node:fs';
import { createPrivateKey, createPublicKey } from 'node:crypto';
import { checkTypedOperation, commandLine } from '../domain/remote/typed-ops.js';
import { newKeyPair, openEnvelope, publicKeyFromRaw, rawPublicKey, signB64, signingString, keyFingerprint } from '../domain/remote/signing.js';
import { redactOutput } from '../domain/remote/redact.js';
import { probe, runCommand, SshFailure, type AuthProfile } from './ssh.js';

export const RUNNER_VERSION = '1.0.0';

export interface ConnectorState {
  server: string;
  connector_id: string;
  project_id: string;
  private_key_pem: string;
  public_key: string;
  server_public_key: string;
}

export interface RunOptions {
  server: string;
  stateFile: string;
  profilesFile: string;
  enrollCode?: string;
  intervalMs: number;
  log: (event: Record<string, unknown>) => void;
  signal?: AbortSignal;
}

type Job =
  | { type: 'verify'; connector_id: string; target_id: string; verification_id: string; profile_id: string; expires_at: number }
  | { type: 'execute'; connector_id: string; execution_id: string; target_id: string; profile_id: string; operation: string; parameters: Record<string, unknown>; timeout_seconds: number; output_limit: number; authority: string; expires_at: number };

function saveState(file: string, st: ConnectorState): void {
  writeFileSync(file, JSON.stringify(st, null, 2), { mode: 0o600 });
  chmodSync(file, 0o600);
}

function loadProfiles(file: string): Record<string, AuthProfile> {
  const v = JSON.parse(readFileSync(file, 'utf8')) as { profiles?: Record<string, AuthProfile> };
  return v.profiles ?? {};
}

export class ConnectorRevoked extends Error {}

async function call(st: ConnectorState, path: string, body: unknown): Promise<{ status: number; json: any }> {
  const raw = JSON.stringify(body);
  const ts = String(Date.now());
  const key = createPrivateKey(st.private_key_pem);
  const res = await fetch(new URL(path, st.server), {
    method: 'POST',
    headers: {
      'content-type': 'application/json',
      'x-sightline-connector': st.connector_id,
      'x-sightline-timestamp': ts,
      'x-sightline-signature': signB64(key, signingString('POST', path, ts, raw)),
    },
    body: raw,
  });
  const text = await res.text();
  let json: any = null;
  try {
    json = text ? JSON.parse(text) : null;
  } catch {
    json = null;
  }
  if (res.status === 401 && json?.code === 'connector_revoked') throw new ConnectorRevoked('revoked');
  return { status: res.status, json };
}

export async function enroll(server: string, code: string, stateFile: string): Promise<ConnectorState> {
  const { privateKey, publicKey } = newKeyPair();
  const pub = rawPublicKey(publicKey);
  const res = await fetch(new URL('/v1/remote-connector/enroll', server), { method: 'POST', headers: { 'content-type': 'application/json' }, body: JSON.stringify({ code, public_key: pub, runner_version: RUNNER_VERSION }) });
  const json = (await res.json()) as { connector_id?: string; project_id?: string; server_public_key?: string; code?: string };
  if (!res.ok || !json.connector_id) throw new Error(`enrollment refused (${res.status} ${json.code ?? ''})`);
  const st: ConnectorState = { server, connector_id: json.connector_id, project_id: json.project_id!, private_key_pem: privateKey.export({ format: 'pem', type: 'pkcs8' }).toString(), public_key: pub, server_public_key: json.server_public_key! };
  saveState(stateFile, st);
  return st;
}

/** The SHA-256 fingerprint of this connector's signing key (compare it with the console's reveal). */
export function fingerprintOf(stateFile: string): string {
  const st = JSON.parse(readFileSync(stateFile, 'utf8')) as ConnectorState;
  return keyFingerprint(Buffer.from(rawPublicKey(createPublicKey(createPrivateKey(st.private_key_pem))), 'base64url'));
}

async function rotate(st: ConnectorState, stateFile: string): Promise<ConnectorState> {
  const { privateKey, publicKey } = newKeyPair();
  const pub = rawPublicKey(publicKey);
  const r = await call(st, '/v1/remote-connector/rotate', { public_key: pub });
  if (r.status !== 200) throw new Error(`rotation refused (${r.status})`);
  const next = { ...st, private_key_pem: privateKey.export({ format: 'pem', type: 'pkcs8' }).toString(), public_key: pub };
  saveState(stateFile, next);
  return next;
}

async function handle(st: ConnectorState, job: Job, profiles: Record<string, AuthProfile>, log: RunOptions['log']): Promise<void> {
  const profile = Object.hasOwn(profiles, job.profile_id) ? profiles[job.profile_id] : undefined;
  if (job.type === 'verify') {
    if (!profile) return void (await call(st, '/v1/remote-connector/results', { type: 'verify', target_id: job.target_id, verification_id: job.verification_id, ok: false, runner_version: RUNNER_VERSION, error_code: 'profile_missing' }));
    try {
      const digest = await probe(profile, 15_000);
      await call(st, '/v1/remote-connector/results', { type: 'verify', target_id: job.target_id, verification_id: job.verification_id, ok: true, host_key_sha256: digest, runner_version: RUNNER_VERSION });
      log({ event: 'verified', target_id: job.target_id });
    } catch (err) {
      const code = err instanceof SshFailure ? err.code : 'connect_failed';
      await call(st, '/v1/remote-connector/results', { type: 'verify', target_id: job.target_id, verification_id: job.verification_id, ok: false, runner_version: RUNNER_VERSION, error_code: code });
      log({ event: 'verify_failed', target_id: job.target_id, code });
    }
    return;
  }
  const fail = (code: string) => call(st, '/v1/remote-connector/results', { type: 'execute', execution_id: job.execution_id, ok: false, exit_code: null, output: '', error_code: code });
  // The same checks as the server, on this side too: a typed observe-only operation the signed authority allows.
  const checked = checkTypedOperation(job.operation, job.parameters);
  const authority = openEnvelope<{ target_id: string; connector_id: string; mode: string; operations: string[] }>(publicKeyFromRaw(st.server_public_key)!, job.authority);
  if (!checked.ok || checked.op.kind !== 'observe') return void (await fail('operation_refused'));
  if (!authority || authority.target_id !== job.target_id || authority.connector_id !== st.connector_id || authority.mode !== 'observe_only' || !authority.operations.includes(checked.op.id)) return void (await fail('authority_invalid'));
  if (!profile) return void (await fail('profile_missing'));
  try {
    const r = await runCommand(profile, commandLine(checked.op, checked.params), job.timeout_seconds * 1000, job.output_limit * 2);
    // Profile values are this side's secrets: they are redacted here before anything is sent.
    const out = redactOutput(r.output, job.output_limit * 2, [profile.host, profile.username, profile.host_key_sha256 ?? '', profile.password ?? '']);
    // A non-standard SSH port is part of the private destination too.
    if (profile.port && profile.port !== 22) out.text = out.text.replace(new RegExp(`(?<![0-9])${profile.port}(?![0-9])`, 'g'), '[REDACTED:port]');
    await call(st, '/v1/remote-connector/results', { type: 'execute', execution_id: job.execution_id, ok: r.exitCode === 0, exit_code: r.exitCode, output: out.text, ...(r.exitCode === 0 ? {} : { error_code: 'exec_failed' }) });
    log({ event: 'executed', execution_id: job.execution_id, exit_code: r.exitCode });
  } catch (err) {
    const code = err instanceof SshFailure ? err.code : 'exec_failed';
    await fail(code);
    log({ event: 'execute_failed', execution_id: job.execution_id, code });
  }
}

/** Polls until revoked or aborted. Resolves 'revoked' when the server refuses this connector. */
export async function runConnector(o: RunOptions): Promise<'revoked' | 'stopped'> {
  let st: ConnectorState;
  if (existsSync(o.stateFile)) st = JSON.parse(readFileSync(o.stateFile, 'utf8')) as ConnectorState;
  else if (o.enrollCode) {
    st = await enroll(o.server, o.enrollCode, o.stateFile);
    o.log({ event: 'enrolled', connector_id: st.connector_id });
  } else throw new Error('no state file: pass --enroll <code> once');
  const serverKey = publicKeyFromRaw(st.server_public_key);
  if (!serverKey) throw new Error('state file holds no valid server key');
  while (!o.signal?.aborted) {
    try {
      const r = await call(st, '/v1/remote-connector/poll', { runner_version: RUNNER_VERSION });
      if (r.status === 200 && r.json?.rotate) {
        st = await rotate(st, o.stateFile);
        o.log({ event: 'rotated' });
      } else if (r.status === 200) {
        const profiles = loadProfiles(o.profilesFile);
        for (const env of r.json.jobs as string[]) {
          const job = openEnvelope<Job>(serverKey, env);
          if (!job || job.connector_id !== st.connector_id || job.expires_at < Date.now()) {
            o.log({ event: 'job_refused', reason: 'bad_server_signature_or_expired' });
            continue;
          }
          await handle(st, job, profiles, o.log);
        }
      } else o.log({ event: 'poll_refused', status: r.status, code: r.json?.code });
    } catch (err) {
      if (err instanceof ConnectorRevoked) {
        o.log({ event: 'revoked' });
        return 'revoked';
      }
      o.log({ event: 'poll_failed', error: err instanceof Error ? err.message.slice(0, 200) : 'error' });
    }
    await new Promise((r) => setTimeout(r, o.intervalMs));
  }
  return 'stopped';
}
