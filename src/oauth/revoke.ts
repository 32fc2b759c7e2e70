import type Koa from 'koa';
import { hashSecret } from '../domain/identity/secrets.js';
import { authenticateClient } from './client-auth.js';
import type { OauthContext } from './context.js';
import { InvalidRequestError, UnauthorizedClientError } from './errors.js';
import { noStore, readForm, Throttle } from './http-util.js';
import { TOKEN_LIMIT } from './token.js';

/**
 * `POST {mcp_url}/revoke` (RFC 7009). "The authorization server responds with HTTP status code 200
 * if the token has been revoked successfully or if the client submitted an invalid token" (§2.2).
 * Revoking a refresh token revokes its whole grant, access tokens included (§2.1: the server
 * "SHOULD also invalidate all access tokens based on the same authorization grant"); revoking an
 * access token revokes that token. `token_type_hint` is only a hint: both kinds are looked up.
 */
export function revokeHandler(o: OauthContext): (ctx: Koa.Context) => Promise<void> {
  const throttle = new Throttle(TOKEN_LIMIT.perWindow, TOKEN_LIMIT.windowMs, o.now);
  return async (ctx) => {
    noStore(ctx);
    throttle.hit(ctx.ip, 'revocation requests from this address');
    const form = await readForm(ctx);
    const client = authenticateClient(o, ctx, form);
    const token = form.get('token');
    if (!token) throw new InvalidRequestError('token is required.');
    const row = o.repo.token(hashSecret(token));
    if (row) {
      // §2.1: the server "verifies whether the token was issued to the client making the revocation request".
      if (row.grant.client_id !== client.client_id) throw new UnauthorizedClientError('The token was not issued to this client.');
      const now = o.now();
      if (row.kind === 'refresh') o.repo.revokeGrant(row.grant.id, now);
      else o.repo.revokeToken(row.id, now);
    }
    ctx.status = 200;
    ctx.body = '';
  };
}
