/**
 * Provider secrets at rest: AES-256-GCM under a server key from configuration
 * (SIGHTLINE_SECRET_KEY). Stored as `v1:<iv>:<tag>:<ciphertext>` (base64url). The key is derived
 * with SHA-256 from whatever string is configured, so a passphrase or 32 random bytes both work.
 */
import { createCipheriv, createDecipheriv, createHash, randomBytes } from 'node:crypto';

const keyOf = (serverKey: string) => createHash('sha256').update(serverKey, 'utf8').digest();

export function sealSecret(plain: string, serverKey: string): string {
  const iv = randomBytes(12);
  const c = createCipheriv('aes-256-gcm', keyOf(serverKey), iv);
  const body = Buffer.concat([c.update(plain, 'utf8'), c.final()]);
  return ['v1', iv.toString('base64url'), c.getAuthTag().toString('base64url'), body.toString('base64url')].join(':');
}

/** null when the sealed value was made with another key or was altered. */
export function openSecret(sealed: string, serverKey: string): string | null {
  const [v, iv, tag, body] = sealed.split(':');
  if (v !== 'v1' || !iv || !tag || body === undefined) return null;
  try {
    const d = createDecipheriv('aes-256-gcm', keyOf(serverKey), Buffer.from(iv, 'base64url'));
    d.setAuthTag(Buffer.from(tag, 'base64url'));
    return Buffer.concat([d.update(Buffer.from(body, 'base64url')), d.final()]).toString('utf8');
  } catch {
    return null;
  }
}
