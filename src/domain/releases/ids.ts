import { createHash } from 'node:crypto';

/**
 * `rel_` + 22 base64url characters of SHA-256(project, service, environment, version): opaque, and
 * the same for the same environment, service and version (spec "Release").
 */
export function releaseId(projectId: string, service: string, environment: string, version: string): string {
  const h = createHash('sha256').update(`${projectId}\u0000${service}\u0000${environment}\u0000${version}`).digest('base64url');
  return `rel_${h.slice(0, 22)}`;
}

export const RELEASE_ID_RE = /^rel_[A-Za-z0-9_-]{22}$/;
