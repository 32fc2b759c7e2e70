import { hashSecret } from '../domain/identity/secrets.js';
import type { Principal } from './principal.js';
import type { Services } from './services.js';

const lastTouched = new Map<string, number>();

/** Resolve a presented secret (API key or OAuth access token) to a principal, or null. */
export function authenticate(services: Services, secret: string | undefined | null, now: number): Principal | null {
  if (!secret) return null;
  const key = services.identity.apiKeyBySecretHash(hashSecret(secret));
  if (key) {
    if (key.expires_at !== null && key.expires_at <= now) return null;
    const project = services.identity.projectById(key.project_id);
    if (!project) return null;
    // last_used_at is informative: write it at most once a minute per key, off the hot path.
    if ((lastTouched.get(key.id) ?? 0) < now - 60_000) {
      lastTouched.set(key.id, now);
      services.identity.touchApiKey(key.id, now);
    }
    return { kind: 'api_key', keyId: key.id, projectId: key.project_id, orgId: project.org_id, scopes: key.scopes };
  }
  for (const resolve of services.tokenResolvers) {
    const p = resolve(secret, now);
    if (p) return p;
  }
  return null;
}

/** Credential from `x-service-key`, else `Authorization: Bearer`. */
export function credentialFromHeaders(headers: Record<string, string | string[] | undefined>): string | null {
  const key = headers['x-service-key'];
  if (typeof key === 'string' && key) return key.trim();
  const auth = headers['authorization'];
  if (typeof auth === 'string') {
    const m = /^Bearer\s+(.+)$/i.exec(auth.trim());
    if (m) return m[1]!.trim();
  }
  return null;
}
