import { KNOWN_SCOPES, isKnownScope } from '../core/scopes.js';
import { InvalidScopeError } from './errors.js';

/**
 * Scopes granted when a client asks for none (RFC 6749 §3.3 lets the server pick a default and
 * document it): `read write` — read and change project data, but not revenue, AI export or
 * telemetry ingestion, which a client must ask for by name. The protected-resource metadata
 * advertises the same set as the minimum an MCP client needs, and the 401 challenge names it.
 */
export const DEFAULT_SCOPES: readonly string[] = ['read', 'write'];

/** Every scope a client may request: the service's scope names (src/core/scopes.ts). */
export const REQUESTABLE_SCOPES: readonly string[] = KNOWN_SCOPES;

/** What each scope lets the client do, shown on the consent page. */
export const SCOPE_DESCRIPTIONS: Record<string, string> = {
  '*': 'Everything your role allows, including revenue, telemetry ingestion and project settings',
  read: 'Read project data: errors, events, logs, metrics, traces, feedback, deployments',
  write: 'Change project data: resolve and assign errors, update feedback, record deployments',
  'events:ingest': 'Send telemetry (errors, logs, metrics, traces) into your projects',
  'errors:read': 'Read error groups and events',
  'errors:write': 'Change error groups (resolve, ignore, assign)',
  'ai:export': 'Export agent observations',
  'automations:read': 'Read automations and the in-project agent',
  'automations:write': 'Change automations and the in-project agent',
  'revenue:read': 'Read revenue data (owners and admins only)',
  'revenue:write': 'Send revenue data (owners and admins only)',
  'providers:write': 'Connect and change providers (owners and admins only)',
  'deployments:read': 'Read deployments and releases',
  'deployments:write': 'Record deployments',
  'project:write': 'Change project settings (owners and admins only)',
  'remote_access:read': 'Read remote-access requests',
  'remote_access:request': 'Request remote access',
  'remote_access:manage': 'Manage remote access (owners and admins only)',
};

/** Parses a space-delimited `scope` (RFC 6749 §3.3); unknown names are refused, duplicates dropped. */
export function parseScope(scope: string | undefined, allowed: readonly string[] = REQUESTABLE_SCOPES): string[] {
  if (scope === undefined || scope.trim() === '') return [];
  const out: string[] = [];
  for (const s of scope.split(' ')) {
    if (s === '') continue;
    if (!isKnownScope(s)) throw new InvalidScopeError(`Unknown scope \`${s}\`. Known scopes: ${REQUESTABLE_SCOPES.join(' ')}.`);
    if (!allowed.includes(s)) throw new InvalidScopeError(`The scope \`${s}\` was not registered for this client.`);
    if (!out.includes(s)) out.push(s);
  }
  return out;
}
