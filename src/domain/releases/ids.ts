import { createHash } from 'node:crypto';

// Ids are recomputed for every release on every read; remember them (bounded) instead of hashing again.
const cache = new Map<string, string>();
const CACHE_MAX = 200_000;

/**
 * `rel_` + 22 base64url characters of SHA-256(project, service, environment, version): opaque, and
 * the same for the same environment, service and version (spec "Release").
 */
export function releaseId(projectId: string, service: string, environment: string, version: string): string {
  const key = `${projectId}\u0000${service}\u0000${environment}\u0000${version}`;
  let id = cache.get(key);
  if (id === undefined) {
    id = `rel_${createHash('sha256').update(key).digest('base64url').slice(0, 22)}`;
    if (cache.size >= CACHE_MAX) cache.clear();
    cache.set(key, id);
  }
  return id;
}

export const RELEASE_ID_RE = /^rel_[A-Za-z0-9_-]{22}$/;
