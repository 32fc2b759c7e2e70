/**
 * Why this file: connectors authenticate every call with an Ed25519 signature (the private key is
 * generated on the connector and never leaves it), and the server signs what it hands a connector
 * (jobs, authority bundles, verification bootstrap) with its own Ed25519 key so a connector can
 * check that work really comes from the server it enrolled with. Both sides use these helpers.
 */
import { createHash, createPrivateKey, createPublicKey, generateKeyPairSync, sign, verify, type KeyObject } from 'node:crypto';

const ED25519_SPKI_PREFIX = Buffer.from('302a300506032b6570032100', 'hex');
const ED25519_PKCS8_PREFIX = Buffer.from('302e020100300506032b657004220420', 'hex');

export const sha256hex = (b: string | Buffer) => createHash('sha256').update(b).digest('hex');

/** The string a connector signs: method, path (with query), timestamp and the body's SHA-256. */
export function signingString(method: string, path: string, timestampMs: string, body: string | Buffer): string {
  return `sightline-connector-v1\n${method.toUpperCase()}\n${path}\n${timestampMs}\n${sha256hex(body)}`;
}

/** A raw 32-byte Ed25519 public key (base64url) as a KeyObject, or null when malformed. */
export function publicKeyFromRaw(b64: string): KeyObject | null {
  const raw = Buffer.from(b64, 'base64url');
  if (raw.length !== 32 || raw.toString('base64url') !== b64) return null;
  try {
    return createPublicKey({ key: Buffer.concat([ED25519_SPKI_PREFIX, raw]), format: 'der', type: 'spki' });
  } catch {
    return null;
  }
}

export function rawPublicKey(key: KeyObject): string {
  const der = key.export({ format: 'der', type: 'spki' }) as Buffer;
  return der.subarray(ED25519_SPKI_PREFIX.length).toString('base64url');
}

/** A deterministic Ed25519 key from a 32-byte seed (the server's key comes from its stored secret). */
export function privateKeyFromSeed(seed: Buffer): KeyObject {
  return createPrivateKey({ key: Buffer.concat([ED25519_PKCS8_PREFIX, seed.subarray(0, 32)]), format: 'der', type: 'pkcs8' });
}

export function newKeyPair(): { privateKey: KeyObject; publicKey: KeyObject } {
  return generateKeyPairSync('ed25519');
}

export function signB64(key: KeyObject, data: string | Buffer): string {
  return sign(null, Buffer.from(data), key).toString('base64url');
}

export function verifyB64(key: KeyObject, data: string | Buffer, sig: string): boolean {
  try {
    const s = Buffer.from(sig, 'base64url');
    return s.length === 64 && verify(null, Buffer.from(data), key, s);
  } catch {
    return false;
  }
}

/** A signed envelope: base64url(JSON payload) + "." + signature over that string. */
export function sealEnvelope(key: KeyObject, payload: unknown): string {
  const body = Buffer.from(JSON.stringify(payload)).toString('base64url');
  return `${body}.${signB64(key, body)}`;
}

export function openEnvelope<T>(key: KeyObject, envelope: string): T | null {
  const [body, sig] = envelope.split('.');
  if (!body || !sig || !verifyB64(key, body, sig)) return null;
  try {
    return JSON.parse(Buffer.from(body, 'base64url').toString('utf8')) as T;
  } catch {
    return null;
  }
}

/** Normalizes a host-key digest as people copy it: `SHA256:abc…` or the bare base64. */
export function normalizeDigest(d: string): string {
  return d.trim().replace(/^SHA256:/i, '').replace(/=+$/, '');
}

/** SHA-256 fingerprint of a public key, as people compare them (`SHA256:` + base64 without padding). */
export function keyFingerprint(raw: Buffer): string {
  return 'SHA256:' + createHash('sha256').update(raw).digest('base64').replace(/=+$/, '');
}
