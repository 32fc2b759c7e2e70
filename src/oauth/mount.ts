import type Router from '@koa/router';
import type { Mount } from '../server.js';
import { createOauthRepo } from '../storage/oauth-repo.js';
import { authorizeHandlers } from './authorize.js';
import type { OauthContext } from './context.js';
import { allowAnyOrigin, oauthEndpoint } from './http-util.js';
import { mountMetadata } from './metadata.js';
import { registerHandler } from './register.js';
import { oauthTokenResolver } from './resolver.js';
import { revokeHandler } from './revoke.js';
import { createSessions } from './session.js';
import { tokenHandler } from './token.js';

/**
 * The OAuth 2.1 authorization server for MCP clients (spec, Authentication item 5):
 * `/.well-known/oauth-authorization-server`, `/.well-known/oauth-protected-resource[/mcp]`, and
 * `{mcp_url}/register`, `/authorize` (+ its sign-in and consent pages), `/token`, `/revoke`.
 * Registered before the MCP transport: every route here is a sub-path of the MCP path, never the
 * MCP path itself. Access tokens it issues are accepted as Bearer credentials everywhere through
 * `services.tokenResolvers`.
 */
export const oauthMount: Mount = (s, router: Router) => {
  const o: OauthContext = {
    config: s.config,
    repo: createOauthRepo(s.db),
    identity: s.services.identity,
    now: s.core.now,
    log: s.log,
  };
  s.services.tokenResolvers.push(oauthTokenResolver(o));

  mountMetadata(router, s.config);

  const authorize = authorizeHandlers(o, createSessions(o));
  router.get(authorize.paths.authorize, authorize.start);
  router.get(authorize.paths.consent, authorize.showConsent);
  router.post(authorize.paths.consent, authorize.decide);
  router.post(authorize.paths.signIn, authorize.signIn);

  const mcpPath = new URL(s.config.mcpUrl).pathname.replace(/\/+$/, '');
  const endpoints: Array<[string, ReturnType<typeof oauthEndpoint>]> = [
    [`${mcpPath}/register`, oauthEndpoint(s.log, registerHandler(o))],
    [`${mcpPath}/token`, oauthEndpoint(s.log, tokenHandler(o))],
    [`${mcpPath}/revoke`, oauthEndpoint(s.log, revokeHandler(o))],
  ];
  for (const [path, handler] of endpoints) {
    router.post(path, handler);
    router.options(path, (ctx) => {
      allowAnyOrigin(ctx);
      ctx.status = 204;
    });
  }
};
