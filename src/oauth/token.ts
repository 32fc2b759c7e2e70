import { createHash, randomUUID, timingSafeEqual } from 'node:crypto';
import type Koa from 'koa';
import { hashSecret, newSecret } from '../domain/identity/secrets.js';
import type { GrantRow, OauthClientRow } from '../storage/oauth-repo.js';
import { authenticateClient } from './client-auth.js';
import { LIFETIMES, type OauthContext } from './context.js';
import {
  InvalidGrantError,
  InvalidRequestError,
  InvalidScopeError,
  InvalidTargetError,
  UnauthorizedClientError,
  UnsupportedGrantTypeError,
} from './errors.js';
import { noStore, readForm, Throttle } from './http-util.js';

/** Token requests per client IP address per window. */
export const TOKEN_LIMIT = { perWindow: 120, windowMs: 60_000 };

/** RFC 7636 §4.1: code_verifier = 43 to 128 characters of [A-Z a-z 0-9 - . _ ~]. */
const VERIFIER = /^[A-Za-z0-9\-._~]{43,128}$/;

/** RFC 7636 §4.6: BASE64URL(SHA256(ASCII(code_verifier))) == code_challenge. */
export function verifyS256(verifier: string, challenge: string): boolean {
  if (!VERIFIER.test(verifier)) return false;
  const a = Buffer.from(createHash('sha256').update(verifier, 'ascii').digest('base64url'));
  const b = Buffer.from(challenge);
  return a.length === b.length && timingSafeEqual(a, b);
}

export interface TokenResponse {
  access_token: string;
  token_type: 'Bearer';
  expires_in: number;
  scope: string;
  refresh_token?: string;
}

/** Opaque tokens, stored hashed, bound to the grant (user, client, resource) they came from. */
export function issueTokens(o: OauthContext, grant: GrantRow, scopes: string[], withRefresh: boolean): TokenResponse {
  const now = o.now();
  const access = newSecret('slat');
  o.repo.insertToken({ id: randomUUID(), grantId: grant.id, kind: 'access', tokenHash: hashSecret(access), scopes, now, expiresAt: now + LIFETIMES.accessTokenSeconds * 1000 });
  const out: TokenResponse = { access_token: access, token_type: 'Bearer', expires_in: LIFETIMES.accessTokenSeconds, scope: scopes.join(' ') };
  if (withRefresh) {
    const refresh = newSecret('slrt');
    o.repo.insertToken({ id: randomUUID(), grantId: grant.id, kind: 'refresh', tokenHash: hashSecret(refresh), scopes, now, expiresAt: now + LIFETIMES.refreshTokenMs });
    out.refresh_token = refresh;
  }
  return out;
}

/** RFC 8707 §2.2: a `resource` at the token endpoint must be the one the grant is for. */
function checkResource(o: OauthContext, form: Map<string, string>, grant: GrantRow): void {
  const r = form.get('resource');
  if (r === undefined) return;
  let same = false;
  try {
    same = new URL(r).href === new URL(grant.resource).href && !r.includes('#');
  } catch {
    same = false;
  }
  if (!same) throw new InvalidTargetError(`The resource must be ${o.config.mcpUrl}, the one this grant is for.`);
}

/**
 * authorization_code grant (RFC 6749 §4.1.3, OAuth 2.1 §4.1.3). The code is marked used before
 * anything else is checked, so a wrong code_verifier burns it. "If an authorization code is used
 * more than once, the authorization server MUST deny the request and SHOULD revoke (when possible)
 * all tokens previously issued based on that authorization code" (§4.1.2).
 */
function exchangeCode(o: OauthContext, client: OauthClientRow, form: Map<string, string>): TokenResponse {
  if (!client.grant_types.includes('authorization_code')) throw new UnauthorizedClientError('This client did not register the authorization_code grant.');
  const code = form.get('code');
  if (!code) throw new InvalidRequestError('code is required.');
  const codeHash = hashSecret(code);
  const row = o.repo.code(codeHash);
  if (!row) throw new InvalidGrantError('The authorization code is not valid.');
  const now = o.now();
  if (!o.repo.useCode(codeHash, now)) {
    o.repo.revokeGrant(row.grant.id, now);
    throw new InvalidGrantError('The authorization code was already used; the tokens issued from it have been revoked.');
  }
  if (row.grant.client_id !== client.client_id) throw new InvalidGrantError('The authorization code was issued to another client.');
  if (row.expires_at <= now) throw new InvalidGrantError('The authorization code has expired; start the authorization again.');
  if (row.grant.revoked_at !== null) throw new InvalidGrantError('The authorization was revoked.');
  const redirectUri = form.get('redirect_uri');
  if (row.redirect_uri_given ? redirectUri !== row.redirect_uri : redirectUri !== undefined && redirectUri !== row.redirect_uri) {
    throw new InvalidGrantError('redirect_uri does not match the one of the authorization request.');
  }
  const verifier = form.get('code_verifier');
  if (!verifier) throw new InvalidGrantError('code_verifier is required (PKCE); the authorization code is now spent.');
  if (!verifyS256(verifier, row.code_challenge)) throw new InvalidGrantError('code_verifier does not match the code_challenge; the authorization code is now spent.');
  checkResource(o, form, row.grant);
  return issueTokens(o, row.grant, row.grant.scopes, client.grant_types.includes('refresh_token'));
}

/**
 * refresh_token grant (RFC 6749 §6). Refresh tokens rotate: each use returns a new one and spends
 * the old. Presenting a spent one means two parties hold it, so the whole grant is revoked
 * (OAuth 2.1 §4.3.1, refresh token rotation).
 */
function refresh(o: OauthContext, client: OauthClientRow, form: Map<string, string>): TokenResponse {
  if (!client.grant_types.includes('refresh_token')) throw new UnauthorizedClientError('This client did not register the refresh_token grant.');
  const token = form.get('refresh_token');
  if (!token) throw new InvalidRequestError('refresh_token is required.');
  const row = o.repo.token(hashSecret(token));
  if (!row || row.kind !== 'refresh' || row.grant.client_id !== client.client_id) throw new InvalidGrantError('The refresh token is not valid.');
  const now = o.now();
  if (row.revoked_at !== null || row.grant.revoked_at !== null) throw new InvalidGrantError('The refresh token was revoked.');
  if (row.rotated_at !== null) {
    o.repo.revokeGrant(row.grant.id, now);
    throw new InvalidGrantError('The refresh token was already used; every token of this authorization has been revoked. Sign in again.');
  }
  if (row.expires_at <= now) throw new InvalidGrantError('The refresh token has expired; sign in again.');
  let scopes = row.scopes;
  const requested = form.get('scope');
  if (requested !== undefined) {
    const asked = [...new Set(requested.split(' ').filter(Boolean))];
    const extra = asked.find((s) => !row.scopes.includes(s));
    if (extra) throw new InvalidScopeError(`The scope \`${extra}\` was not granted; a refresh may only narrow the scope.`);
    if (asked.length) scopes = asked;
  }
  checkResource(o, form, row.grant);
  if (!o.repo.rotateToken(row.id, now)) {
    o.repo.revokeGrant(row.grant.id, now);
    throw new InvalidGrantError('The refresh token was already used; every token of this authorization has been revoked.');
  }
  return issueTokens(o, row.grant, scopes, true);
}

/** `POST {mcp_url}/token` (RFC 6749 §3.2). Errors leave in the §5.2 shape. */
export function tokenHandler(o: OauthContext): (ctx: Koa.Context) => Promise<void> {
  const throttle = new Throttle(TOKEN_LIMIT.perWindow, TOKEN_LIMIT.windowMs, o.now);
  return async (ctx) => {
    noStore(ctx);
    throttle.hit(ctx.ip, 'token requests from this address');
    const form = await readForm(ctx);
    const client = authenticateClient(o, ctx, form);
    const grantType = form.get('grant_type');
    let out: TokenResponse;
    switch (grantType) {
      case 'authorization_code':
        out = exchangeCode(o, client, form);
        break;
      case 'refresh_token':
        out = refresh(o, client, form);
        break;
      case undefined:
        throw new InvalidRequestError('grant_type is required.');
      default:
        throw new UnsupportedGrantTypeError(`The grant type ${grantType} is not supported; use authorization_code or refresh_token.`);
    }
    ctx.status = 200;
    ctx.body = out;
  };
}
