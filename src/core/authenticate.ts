import { hashSecret } from '../domain/identity/secrets.js';
import type { ApiKeyPrincipal, Principal } from './principal.js';
import type { Services } from './services.js';

const lastTouched = new Map<string, number>();

/**
 * A short principal cache for API keys (issue 19 item 4: the key and project lookups were ~13% of
 * a REST read). An entry lives `PRINCIPAL_TTL_MS` at most and is dropped as soon as any key is
 * updated or revoked (`identity.credentialGeneration()` moves), so scope changes and revocations
 * take effect on the next request; expiry is checked on every hit. OAuth tokens are not cached:
 * their roles come from memberships at every request.
 */
const PRINCIPAL_TTL_MS = 2_000;
const PRINCIPAL_CACHE_MAX = 10_000;
interface CachedKey {
  principal: ApiKeyPrincipal;
  expiresAt: number | null;
  at: number;
  generation: number;
}
const principalCaches = new WeakMap<Services, Map<string, CachedKey>>();

function touch(services: Services, keyId: string, now: number): void {
  // last_used_at is informative: write it at most once a minute per key, off the hot path.
  if ((lastTouched.get(keyId) ?? 0) < now - 60_000) {
    lastTouched.set(keyId, now);
    services.identity.touchApiKey(keyId, now);
  }
}

/** Resolve a presented secret (API key or OAuth access token) to a principal, or null. */
export function authenticate(services: Services, secret: string | undefined | null, now: number): Principal | null {
  if (!secret) return null;
  let cache = principalCaches.get(services);
  if (!cache) principalCaches.set(services, (cache = new Map()));
  const generation = services.identity.credentialGeneration();
  const hit = cache.get(secret);
  if (hit) {
    if (hit.generation === generation && now - hit.at < PRINCIPAL_TTL_MS && now >= hit.at && (hit.expiresAt === null || hit.expiresAt > now)) {
      touch(services, hit.principal.keyId, now);
      return hit.principal;
    }
    cache.delete(secret);
  }
  const key = services.identity.apiKeyBySecretHash(hashSecret(secret));
  if (key) {
    if (key.expires_at !== null && key.expires_at <= now) return null;
    const project = services.identity.projectById(key.project_id);
    if (!project) return null;
    touch(services, key.id, now);
    // Frozen: one object is shared by the requests the cache serves.
    const principal: ApiKeyPrincipal = Object.freeze({ kind: 'api_key', keyId: key.id, projectId: key.project_id, orgId: project.org_id, scopes: Object.freeze([...key.scopes]) as string[] });
    if (cache.size >= PRINCIPAL_CACHE_MAX) cache.clear();
    cache.set(secret, { principal, expiresAt: key.expires_at, at: now, generation });
    return principal;
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
