import { hashSecret } from '../domain/identity/secrets.js';
import type { UserPrincipal } from '../core/principal.js';
import type { TokenResolver } from '../core/services.js';
import type { OauthContext } from './context.js';

export const ACCESS_TOKEN_PREFIX = 'slat_';

/**
 * Resolves an OAuth access token to the user it speaks for (plugged into
 * `services.tokenResolvers`). A token counts only while it, and its grant, are unrevoked and
 * unexpired, and only for the resource it was issued for (audience binding, RFC 8707): this
 * server's MCP URL. Roles are read from memberships at every request, so a removed member loses
 * access at once; invoke() limits each call by scope, role and organization membership.
 */
export function oauthTokenResolver(o: OauthContext): TokenResolver {
  return (secret, now): UserPrincipal | null => {
    if (!secret.startsWith(ACCESS_TOKEN_PREFIX)) return null;
    const t = o.repo.accessToken(hashSecret(secret));
    if (!t || t.expiresAt <= now) return null;
    if (t.resource !== o.config.mcpUrl) return null;
    return {
      kind: 'user',
      userId: t.userId,
      email: t.email,
      scopes: t.scopes,
      roles: o.identity.rolesOfUser(t.userId),
      tokenId: t.tokenId,
      clientId: t.clientId,
    };
  };
}
