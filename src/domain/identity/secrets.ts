import { createHash, randomBytes, scrypt, scryptSync, timingSafeEqual, type ScryptOptions } from 'node:crypto';
import { Worker } from 'node:worker_threads';
import { backgroundNice } from '../thread-priority.js';

const poolScrypt = (password: string, salt: Buffer, keylen: number, opts: ScryptOptions) =>
  new Promise<Buffer>((resolve, reject) => scrypt(password, salt, keylen, opts, (err, key) => (err ? reject(err) : resolve(key))));

/**
 * One dedicated password-hashing thread at a lower OS priority than the main thread
 * (SIGHTLINE_WORKER_NICE): on libuv's pool, a sign-in flood's scrypt competed with the event loop at the
 * same priority and raised everyone's latency (issue 10). Started on first use, does not keep the
 * process alive; if it cannot start or dies, hashing falls back to libuv's pool.
 */
let hasher: { worker: Worker; pending: Map<number, { resolve: (k: Buffer) => void; reject: (e: unknown) => void }>; next: number } | null = null;
let hasherBroken = false;

function startHasher(): NonNullable<typeof hasher> | null {
  if (hasher) return hasher;
  if (hasherBroken) return null;
  try {
    const worker = new Worker(new URL('./scrypt-worker.mjs', import.meta.url), { workerData: { nice: backgroundNice() } });
    const h = { worker, pending: new Map<number, { resolve: (k: Buffer) => void; reject: (e: unknown) => void }>(), next: 0 };
    worker.unref();
    worker.on('message', (m: { id: number; key?: Uint8Array; error?: string }) => {
      const p = h.pending.get(m.id);
      if (!p) return;
      h.pending.delete(m.id);
      if (h.pending.size === 0) worker.unref();
      if (m.key) p.resolve(Buffer.from(m.key.buffer, m.key.byteOffset, m.key.byteLength));
      else p.reject(new Error(m.error ?? 'scrypt failed'));
    });
    const fail = (err: unknown) => {
      if (hasher === h) hasher = null;
      hasherBroken = true;
      for (const p of h.pending.values()) p.reject(err);
      h.pending.clear();
    };
    worker.on('error', fail);
    worker.on('exit', () => fail(new Error('the password hashing thread stopped')));
    hasher = h;
    return h;
  } catch {
    hasherBroken = true;
    return null;
  }
}

async function scryptAsync(password: string, salt: Buffer, keylen: number, opts: ScryptOptions): Promise<Buffer> {
  const h = startHasher();
  if (!h) return poolScrypt(password, salt, keylen, opts);
  const id = ++h.next;
  return new Promise<Buffer>((resolve, reject) => {
    h.pending.set(id, { resolve, reject });
    h.worker.ref();
    h.worker.postMessage({ id, password, salt, keylen, opts });
  }).catch(() => poolScrypt(password, salt, keylen, opts));
}

/** scrypt password hash, stored as `scrypt$N$r$p$salt$hash` (base64url). */
export function hashPassword(password: string): string {
  const salt = randomBytes(16);
  const N = 16384, r = 8, p = 1;
  const hash = scryptSync(password, salt, 32, { N, r, p });
  return `scrypt$${N}$${r}$${p}$${salt.toString('base64url')}$${hash.toString('base64url')}`;
}

export function verifyPassword(password: string, stored: string): boolean {
  const parts = stored.split('$');
  if (parts.length !== 6 || parts[0] !== 'scrypt') return false;
  const [, n, r, p, salt, hash] = parts as [string, string, string, string, string, string];
  const expected = Buffer.from(hash, 'base64url');
  const actual = scryptSync(password, Buffer.from(salt, 'base64url'), expected.length, { N: Number(n), r: Number(r), p: Number(p) });
  return timingSafeEqual(expected, actual);
}

/**
 * verifyPassword on the password hashing thread (libuv's pool as a fallback): a sign-in costs ~55 ms of scrypt, which on the main
 * thread stalled every other request (issue 10 item 4).
 */
export async function verifyPasswordAsync(password: string, stored: string): Promise<boolean> {
  const parts = stored.split('$');
  if (parts.length !== 6 || parts[0] !== 'scrypt') return false;
  const [, n, r, p, salt, hash] = parts as [string, string, string, string, string, string];
  const expected = Buffer.from(hash, 'base64url');
  const actual = await scryptAsync(password, Buffer.from(salt, 'base64url'), expected.length, { N: Number(n), r: Number(r), p: Number(p) });
  return timingSafeEqual(expected, actual);
}

/** hashPassword on the password hashing thread. */
export async function hashPasswordAsync(password: string): Promise<string> {
  const salt = randomBytes(16);
  const N = 16384, r = 8, p = 1;
  const hash = await scryptAsync(password, salt, 32, { N, r, p });
  return `scrypt$${N}$${r}$${p}$${salt.toString('base64url')}$${hash.toString('base64url')}`;
}

/**
 * API keys and tokens are 256-bit random secrets, so a plain SHA-256 is a sound at-rest hash
 * (no dictionary to guess) and allows an indexed lookup.
 */
export function hashSecret(secret: string): string {
  return createHash('sha256').update(secret).digest('hex');
}

/** `prefix_` + 64 hex characters: word characters only, as a Sentry DSN's public key must be. */
export function newSecret(prefix: string): string {
  return `${prefix}_${randomBytes(32).toString('hex')}`;
}

export function randomPassword(): string {
  return randomBytes(12).toString('base64url');
}
