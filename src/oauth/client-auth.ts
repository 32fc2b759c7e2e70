import { timingSafeEqual } from 'node:crypto';
import type Koa from 'koa';
import { hashSecret } from '../domain/identity/secrets.js';
import type { OauthClientRow } from '../storage/oauth-repo.js';
import type { OauthContext } from './context.js';
import { InvalidClientError, InvalidRequestError } from './errors.js';

/** RFC 6749 §2.3.1: Basic credentials are form-urlencoded before base64. */
function formDecode(v: string): string {
  return decodeURIComponent(v.replace(/\+/g, ' '));
}

/**
 * Client authentication at the token and revocation endpoints (RFC 6749 §2.3): HTTP Basic
 * (`client_secret_basic`), secret in the body (`client_secret_post`), or a public client naming
 * itself with `client_id` (`none`). "The client MUST NOT use more than one authentication method in
 * each request." A confidential client may use either secret method; it may never go without one.
 */
export function authenticateClient(o: OauthContext, ctx: Koa.Context, form: Map<string, string>): OauthClientRow {
  const header = ctx.get('authorization');
  let clientId: string | undefined;
  let secret: string | undefined;
  let usedBasic = false;
  if (/^basic\s/i.test(header)) {
    usedBasic = true;
    if (form.has('client_secret')) throw new InvalidRequestError('Use one client authentication method: HTTP Basic or client_secret in the body, not both.');
    let decoded: string;
    try {
      decoded = Buffer.from(header.slice(6).trim(), 'base64').toString('utf8');
    } catch {
      throw new InvalidClientError('The Basic credentials are malformed.', true);
    }
    const i = decoded.indexOf(':');
    if (i < 0) throw new InvalidClientError('The Basic credentials are malformed.', true);
    try {
      clientId = formDecode(decoded.slice(0, i));
      secret = formDecode(decoded.slice(i + 1));
    } catch {
      throw new InvalidClientError('The Basic credentials are malformed.', true);
    }
    const bodyId = form.get('client_id');
    if (bodyId !== undefined && bodyId !== clientId) throw new InvalidRequestError('client_id in the body differs from the Basic credentials.');
  } else {
    clientId = form.get('client_id');
    secret = form.get('client_secret');
  }
  if (!clientId) throw new InvalidClientError('Client authentication is required: send client_id (and the client secret if one was issued).', usedBasic);
  const client = o.repo.client(clientId);
  if (!client) throw new InvalidClientError('The client is not registered with this server.', usedBasic);
  if (client.secret_hash === null) {
    if (secret !== undefined) throw new InvalidClientError('This client is public (token_endpoint_auth_method none); it has no secret.', usedBasic);
    return client;
  }
  if (secret === undefined) throw new InvalidClientError('This client must authenticate with its client secret.', usedBasic);
  const a = Buffer.from(hashSecret(secret));
  const b = Buffer.from(client.secret_hash);
  if (a.length !== b.length || !timingSafeEqual(a, b)) throw new InvalidClientError('The client secret is not correct.', usedBasic);
  return client;
}
