import { holdsScope } from './scopes.js';

import type { Role } from '../domain/identity/roles.js';

export type { Role };

export interface ApiKeyPrincipal {
  kind: 'api_key';
  keyId: string;
  projectId: string;
  orgId: string;
  scopes: string[];
}

export interface UserPrincipal {
  kind: 'user';
  userId: string;
  email: string;
  /** Scopes granted to the OAuth token (or '*' for a first-party session). */
  scopes: string[];
  /** Organization id → role, from memberships at authentication time. */
  roles: Record<string, Role>;
  tokenId: string | null;
  clientId: string | null;
}

export type Principal = ApiKeyPrincipal | UserPrincipal;

/**
 * A member's role caps what any token of theirs can do (spec, Authentication item 5: "membership,
 * project access and roles still limit every request"). Owners and admins hold everything; members
 * cannot manage the project, its providers, remote-access setup, or see revenue (item 6).
 */
const MEMBER_DENIED = new Set(['project:write', 'providers:write', 'revenue:read', 'revenue:write', 'remote_access:manage']);

export function roleAllows(role: Role, scope: string): boolean {
  if (role === 'owner' || role === 'admin') return true;
  return !MEMBER_DENIED.has(scope);
}

/** Scopes a principal effectively holds in a project of organization `orgId`. */
export function principalHolds(p: Principal, orgId: string, required: string): boolean {
  if (!holdsScope(p.scopes, required)) return false;
  if (p.kind === 'api_key') return true;
  const role = p.roles[orgId];
  return role !== undefined && roleAllows(role, required);
}

/** The project a credential is bound to, if any (API keys are bound to exactly one). */
export function boundProjectId(p: Principal): string | null {
  return p.kind === 'api_key' ? p.projectId : null;
}
