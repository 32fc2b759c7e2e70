import type { AppConfig } from '../core/config.js';
import { DEFAULT_SCOPES } from './scopes.js';

/**
 * RFC 9728 §3.1: the protected-resource metadata of a resource with a path is published at
 * `/.well-known/oauth-protected-resource` inserted between host and path —
 * `https://host/mcp` → `https://host/.well-known/oauth-protected-resource/mcp`.
 */
export function protectedResourceMetadataUrl(config: Pick<AppConfig, 'mcpUrl'>): string {
  const u = new URL(config.mcpUrl);
  const path = u.pathname === '/' ? '' : u.pathname.replace(/\/+$/, '');
  return `${u.origin}/.well-known/oauth-protected-resource${path}`;
}

const quote = (v: string) => `"${v.replace(/[\\"]/g, (c) => `\\${c}`)}"`;

/**
 * The `WWW-Authenticate` challenge of the MCP resource (RFC 6750 §3, RFC 9728 §5.1):
 *
 *   401, no or bad token:    Bearer resource_metadata="…/.well-known/oauth-protected-resource/mcp", scope="read write"
 *                            (pass `{ error: 'invalid_token' }` when a token was sent but is not valid)
 *   403, too little scope:   pass `{ error: 'insufficient_scope', scope: '<scopes the call needs>' }`
 *
 * `scope` defaults to the scopes a client gets when it asks for none (src/oauth/scopes.ts).
 */
export function wwwAuthenticate(config: Pick<AppConfig, 'mcpUrl'>, opts: { error?: string; scope?: string } = {}): string {
  const params = [`resource_metadata=${quote(protectedResourceMetadataUrl(config))}`, `scope=${quote(opts.scope ?? DEFAULT_SCOPES.join(' '))}`];
  if (opts.error) params.push(`error=${quote(opts.error)}`);
  return `Bearer ${params.join(', ')}`;
}
