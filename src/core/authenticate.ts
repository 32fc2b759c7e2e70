import { hashSecret } from '../domain/identity/secrets.js';
import type { ApiKeyPrincipal, Principal } from './principal.js';
import type { Services } from './services.js';
import type { ProjectRow } from '../storage/identity-repo.js';

const lastTouched = new Map<string, number>();

/**
 * A short key cache shared by REST and ingest authentication (issue 19 item 4: the key and project
 * lookups were ~13% of a REST read and ~7% of the error-ingest main thread). An entry lives
 * `PRINCIPAL_TTL_MS` at most and is checked on every hit against two counters: this process's
 * `identity.credentialGeneration()` (moves when a key is updated or revoked or a project's settings
 * change) and the connection's `identity.dataVersion()` (SQLite's `data_version`: moves when another
 * process sharing the database file commits anything). Either moving drops the entry, so scope
 * changes, revocations and project settings take effect on the next request, from any process;
 * expiry is checked on every hit. Unknown secrets are not cached. OAuth tokens are not cached: their
 * roles come from memberships at every request.
 */
const PRINCIPAL_TTL_MS = 2_000;
const PRINCIPAL_CACHE_MAX = 10_000;
export interface ApiKeyIdentity {
  principal: ApiKeyPrincipal;
  /** The key's project row (frozen: one object is shared by the requests the cache serves). */
  project: ProjectRow;
  expiresAt: number | null;
}
interface CachedKey extends ApiKeyIdentity {
  at: number;
  generation: number;
  dataVersion: number;
}
const principalCaches = new WeakMap<Services, Map<string, CachedKey>>();

function touch(services: Services, keyId: string, now: number): void {
  // last_used_at is informative: write it at most once a minute per key, off the hot path.
  if ((lastTouched.get(keyId) ?? 0) < now - 60_000) {
    lastTouched.set(keyId, now);
    services.identity.touchApiKey(keyId, now);
  }
}

/**
 * The API key a secret names, with its project, through the short key cache: `'unknown'` when no
 * live (unrevoked) key has that secret, `'expired'` when it has expired, `'no_project'` when its
 * project is gone.
 */
export function apiKeyIdentity(services: Services, secret: string, now: number): ApiKeyIdentity | 'unknown' | 'expired' | 'no_project' {
  let cache = principalCaches.get(services);
  if (!cache) principalCaches.set(services, (cache = new Map()));
  const generation = services.identity.credentialGeneration();
  const dataVersion = services.identity.dataVersion();
  const hit = cache.get(secret);
  if (hit) {
    if (hit.generation === generation && hit.dataVersion === dataVersion && now - hit.at < PRINCIPAL_TTL_MS && now >= hit.at) {
      return hit.expiresAt === null || hit.expiresAt > now ? hit : 'expired';
    }
    cache.delete(secret);
  }
  const key = services.identity.apiKeyBySecretHash(hashSecret(secret));
  if (!key) return 'unknown';
  if (key.expires_at !== null && key.expires_at <= now) return 'expired';
  const project = services.identity.projectById(key.project_id);
  if (!project) return 'no_project';
  const principal: ApiKeyPrincipal = Object.freeze({ kind: 'api_key', keyId: key.id, projectId: key.project_id, orgId: project.org_id, scopes: Object.freeze([...key.scopes]) as string[] });
  const entry: CachedKey = { principal, project: Object.freeze(project), expiresAt: key.expires_at, at: now, generation, dataVersion };
  if (cache.size >= PRINCIPAL_CACHE_MAX) cache.clear();
  cache.set(secret, entry);
  return entry;
}

/** Resolve a presented secret (API key or OAuth access token) to a principal, or null. */
export function authenticate(services: Services, secret: string | undefined | null, now: number): Principal | null {
  if (!secret) return null;
  const id = apiKeyIdentity(services, secret, now);
  if (typeof id === 'object') {
    touch(services, id.principal.keyId, now);
    return id.principal;
  }
  if (id !== 'unknown') return null;
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
