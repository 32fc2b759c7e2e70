/**
 * Scope semantics (spec, Authentication items 2-4 and 7):
 * - `*` holds every scope.
 * - `read` covers every `…:read` scope and the plain `read` scope; `write` covers every `…:write`
 *   scope and plain `write`; neither covers `revenue:*`, `ai:export` or `events:ingest`.
 * - An operation may need all of several scopes (releases need deployments:read AND errors:read).
 */
export const KNOWN_SCOPES = [
  '*',
  'read',
  'write',
  'events:ingest',
  'errors:read',
  'errors:write',
  'ai:export',
  'automations:read',
  'automations:write',
  'revenue:read',
  'revenue:write',
  'providers:write',
  'deployments:read',
  'deployments:write',
  'project:write',
  'remote_access:read',
  'remote_access:request',
  'remote_access:manage',
] as const;

export type Scope = (typeof KNOWN_SCOPES)[number];

const NEVER_IMPLIED = new Set<string>(['revenue:read', 'revenue:write', 'ai:export', 'events:ingest']);

export function isKnownScope(s: string): s is Scope {
  return (KNOWN_SCOPES as readonly string[]).includes(s);
}

/** Does a credential holding `held` satisfy one required scope? */
export function holdsScope(held: readonly string[], required: string): boolean {
  if (held.includes('*') || held.includes(required)) return true;
  if (NEVER_IMPLIED.has(required)) return false;
  if ((required === 'read' || required.endsWith(':read')) && held.includes('read')) return true;
  if ((required === 'write' || required.endsWith(':write')) && held.includes('write')) return true;
  return false;
}

export function holdsAll(held: readonly string[], required: readonly string[]): boolean {
  return required.every((r) => holdsScope(held, r));
}

export function missingScopes(held: readonly string[], required: readonly string[]): string[] {
  return required.filter((r) => !holdsScope(held, r));
}
