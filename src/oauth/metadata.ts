import type Router from '@koa/router';
import type { AppConfig } from '../core/config.js';
import { allowAnyOrigin } from './http-util.js';
import { DEFAULT_SCOPES, REQUESTABLE_SCOPES } from './scopes.js';
import { protectedResourceMetadataUrl } from './www-authenticate.js';

export const CLIENT_AUTH_METHODS = ['none', 'client_secret_basic', 'client_secret_post'] as const;

/** The issuer identifier is the service's base URL (RFC 8414 §2: https, no query or fragment). */
export function issuerOf(config: Pick<AppConfig, 'baseUrl'>): string {
  return config.baseUrl;
}

/** `{mcp_url}/register`, `/authorize`, `/token`, `/revoke` (spec, Authentication item 5). */
export function endpointsOf(config: Pick<AppConfig, 'mcpUrl'>) {
  return {
    authorization_endpoint: `${config.mcpUrl}/authorize`,
    token_endpoint: `${config.mcpUrl}/token`,
    registration_endpoint: `${config.mcpUrl}/register`,
    revocation_endpoint: `${config.mcpUrl}/revoke`,
  };
}

/** RFC 8414 §2 authorization server metadata. */
export function authorizationServerMetadata(config: Pick<AppConfig, 'baseUrl' | 'mcpUrl'>) {
  return {
    issuer: issuerOf(config),
    ...endpointsOf(config),
    scopes_supported: [...REQUESTABLE_SCOPES],
    response_types_supported: ['code'],
    response_modes_supported: ['query'],
    grant_types_supported: ['authorization_code', 'refresh_token'],
    // OAuth 2.1 §4.1.1: PKCE is required and only S256 is accepted.
    code_challenge_methods_supported: ['S256'],
    token_endpoint_auth_methods_supported: [...CLIENT_AUTH_METHODS],
    revocation_endpoint_auth_methods_supported: [...CLIENT_AUTH_METHODS],
    // RFC 9207: authorization responses carry `iss`, so a client can tell which server answered.
    authorization_response_iss_parameter_supported: true,
    service_documentation: `${config.baseUrl}/docs`,
  };
}

/**
 * RFC 9728 §2 protected-resource metadata for the MCP endpoint. `resource` is the MCP URL exactly:
 * clients compare it with the URL they connect to, then send it as the RFC 8707 `resource`.
 * `scopes_supported` lists the default set: MCP clients request exactly what it lists when the
 * challenge names no scope, and they should ask for no more than basic use needs.
 */
export function protectedResourceMetadata(config: Pick<AppConfig, 'baseUrl' | 'mcpUrl'>) {
  return {
    resource: config.mcpUrl,
    authorization_servers: [issuerOf(config)],
    scopes_supported: [...DEFAULT_SCOPES],
    bearer_methods_supported: ['header'],
    resource_name: 'Sightline',
    resource_documentation: `${config.baseUrl}/docs`,
  };
}

/** `/.well-known/...` documents. Paths with an issuer or resource path suffix are served too (RFC 8414 §3.1, RFC 9728 §3.1). */
export function mountMetadata(router: Router, config: AppConfig): void {
  const asPaths = new Set(['/.well-known/oauth-authorization-server']);
  const issuerPath = new URL(issuerOf(config)).pathname.replace(/\/+$/, '');
  if (issuerPath) asPaths.add(`/.well-known/oauth-authorization-server${issuerPath}`);
  const prPaths = new Set(['/.well-known/oauth-protected-resource', new URL(protectedResourceMetadataUrl(config)).pathname]);

  const serve = (paths: Set<string>, doc: () => unknown) => {
    for (const p of paths) {
      router.get(p, (ctx) => {
        allowAnyOrigin(ctx);
        ctx.set('Cache-Control', 'public, max-age=300');
        ctx.body = doc();
      });
      router.options(p, (ctx) => {
        allowAnyOrigin(ctx);
        ctx.status = 204;
      });
    }
  };
  serve(asPaths, () => authorizationServerMetadata(config));
  serve(prPaths, () => protectedResourceMetadata(config));
}
