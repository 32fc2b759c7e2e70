/**
 * Why this file: the connector reaches targets over SSH with a local authentication profile the
 * server never sees. The host key is checked against the profile's expected SHA-256 digest before
 * authentication (a probe without an expected digest only reports what it saw); commands are the
 * fixed argv of a typed operation. Errors become stable codes; raw SSH text never leaves here.
 */
import { readFileSync } from 'node:fs';
import { Client } from 'ssh2';
import { keyFingerprint, normalizeDigest } from '../domain/remote/signing.js';

export interface AuthProfile {
  host: string;
  port?: number;
  username: string;
  private_key?: string;
  private_key_file?: string;
  password?: string;
  /** `SHA256:…` as `ssh-keygen -lf` prints it. Required before anything runs. */
  host_key_sha256?: string;
}

export type SshErrorCode = 'host_key_mismatch' | 'connect_failed' | 'auth_failed' | 'timeout' | 'exec_failed';

export class SshFailure extends Error {
  constructor(readonly code: SshErrorCode) {
    super(code);
  }
}

function connect(profile: AuthProfile, timeoutMs: number, requireKnownHost: boolean): Promise<{ client: Client; digest: string }> {
  return new Promise((resolve, reject) => {
    const client = new Client();
    let digest = '';
    let mismatch = false;
    let done = false;
    const finish = (err: SshFailure | null) => {
      if (done) return;
      done = true;
      clearTimeout(timer);
      if (err) {
        client.end();
        reject(err);
      } else resolve({ client, digest });
    };
    const timer = setTimeout(() => finish(new SshFailure('timeout')), timeoutMs);
    client.on('ready', () => finish(null));
    client.on('error', (err: Error & { level?: string }) => finish(new SshFailure(mismatch ? 'host_key_mismatch' : err.level === 'client-authentication' ? 'auth_failed' : 'connect_failed')));
    client.connect({
      host: profile.host,
      port: profile.port ?? 22,
      username: profile.username,
      privateKey: profile.private_key ?? (profile.private_key_file ? readFileSync(profile.private_key_file) : undefined),
      password: profile.password,
      readyTimeout: timeoutMs,
      hostVerifier: (key: Buffer) => {
        digest = keyFingerprint(key);
        if (profile.host_key_sha256) mismatch = normalizeDigest(profile.host_key_sha256) !== normalizeDigest(digest);
        else mismatch = requireKnownHost;
        return !mismatch;
      },
    });
  });
}

/** Connects, authenticates and reports the host-key digest (the verification probe). */
export async function probe(profile: AuthProfile, timeoutMs: number): Promise<string> {
  const { client, digest } = await connect(profile, timeoutMs, false);
  client.end();
  return digest;
}

/** Runs one fixed command line; output is stdout then stderr, capped at `maxChars`. */
export async function runCommand(profile: AuthProfile, command: string, timeoutMs: number, maxChars: number): Promise<{ exitCode: number | null; output: string }> {
  const { client } = await connect(profile, timeoutMs, true);
  return new Promise((resolve, reject) => {
    let out = '';
    let err = '';
    const timer = setTimeout(() => {
      client.end();
      reject(new SshFailure('timeout'));
    }, timeoutMs);
    client.exec(command, (e, stream) => {
      if (e) {
        clearTimeout(timer);
        client.end();
        return reject(new SshFailure('exec_failed'));
      }
      stream.on('data', (d: Buffer) => {
        if (out.length < maxChars) out += d.toString('utf8');
      });
      stream.stderr.on('data', (d: Buffer) => {
        if (err.length < maxChars) err += d.toString('utf8');
      });
      stream.on('close', (code: number | null) => {
        clearTimeout(timer);
        client.end();
        resolve({ exitCode: typeof code === 'number' ? code : null, output: (out + (err ? `\n${err}` : '')).slice(0, maxChars) });
      });
    });
  });
}
