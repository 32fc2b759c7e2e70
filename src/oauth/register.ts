import { randomUUID } from 'node:crypto';
import type Koa from 'koa';
import { hashSecret, newSecret } from '../domain/identity/secrets.js';
import type { ClientAuthMethod, OauthClientRow } from '../storage/oauth-repo.js';
import type { OauthContext } from './context.js';
import { InvalidClientMetadataError, InvalidRedirectUriError, OAuthError } from './errors.js';
import { isLoopbackHost, noStore, readBody, Throttle } from './http-util.js';
import { CLIENT_AUTH_METHODS } from './metadata.js';
import { parseScope } from './scopes.js';

/** Registrations per client IP address per window: registration is open, so it is throttled. */
export const REGISTER_LIMIT = { perWindow: 30, windowMs: 10 * 60_000 };

const MAX_REDIRECT_URIS = 10;
const MAX_URI_LENGTH = 2000;
const SUPPORTED_GRANTS = ['authorization_code', 'refresh_token'];

/**
 * A redirect URI must be absolute, without a fragment (RFC 6749 §3.1.2) and either https or http on
 * a loopback host (OAuth 2.1 §2.3.1; RFC 8252 §7.3 for native apps such as a CLI or an IDE).
 */
export function checkRedirectUri(uri: unknown): string {
  if (typeof uri !== 'string' || uri.length === 0 || uri.length > MAX_URI_LENGTH) {
    throw new InvalidRedirectUriError(`Each redirect URI must be a string of 1 to ${MAX_URI_LENGTH} characters.`);
  }
  let u: URL;
  try {
    u = new URL(uri);
  } catch {
    throw new InvalidRedirectUriError(`The redirect URI ${JSON.stringify(uri)} is not an absolute URL.`);
  }
  if (u.hash || uri.includes('#')) throw new InvalidRedirectUriError(`The redirect URI ${uri} must not contain a fragment.`);
  if (u.username || u.password) throw new InvalidRedirectUriError(`The redirect URI ${uri} must not contain credentials.`);
  if (u.protocol === 'https:') return uri;
  if (u.protocol === 'http:' && isLoopbackHost(u.hostname)) return uri;
  if (u.protocol === 'http:') {
    throw new InvalidRedirectUriError(`The redirect URI ${uri} uses http on a non-loopback host; use https, or http on 127.0.0.1, [::1] or localhost.`);
  }
  throw new InvalidRedirectUriError(`The redirect URI ${uri} must use https (or http on a loopback host); ${u.protocol} is not accepted.`);
}

function optionalString(body: Record<string, unknown>, field: string, max: number): string | undefined {
  const v = body[field];
  if (v === undefined || v === null) return undefined;
  if (typeof v !== 'string' || v.length > max) throw new InvalidClientMetadataError(`\`${field}\` must be a string of at most ${max} characters.`);
  return v;
}

function optionalHttpsUrl(body: Record<string, unknown>, field: string): string | undefined {
  const v = optionalString(body, field, MAX_URI_LENGTH);
  if (v === undefined) return undefined;
  try {
    const u = new URL(v);
    if (u.protocol === 'https:' || (u.protocol === 'http:' && isLoopbackHost(u.hostname))) return v;
  } catch {
    /* fall through */
  }
  throw new InvalidClientMetadataError(`\`${field}\` must be an https URL.`);
}

function stringArray(body: Record<string, unknown>, field: string, dflt: string[]): string[] {
  const v = body[field];
  if (v === undefined || v === null) return dflt;
  if (!Array.isArray(v) || v.some((x) => typeof x !== 'string')) throw new InvalidClientMetadataError(`\`${field}\` must be an array of strings.`);
  return [...new Set(v as string[])];
}

/** Validates RFC 7591 §2 client metadata and returns what will be registered. */
export function validateClientMetadata(body: Record<string, unknown>) {
  const rawUris = body.redirect_uris;
  if (!Array.isArray(rawUris) || rawUris.length === 0) {
    throw new InvalidRedirectUriError('`redirect_uris` is required: a non-empty array of redirect URIs.');
  }
  if (rawUris.length > MAX_REDIRECT_URIS) throw new InvalidRedirectUriError(`At most ${MAX_REDIRECT_URIS} redirect URIs may be registered.`);
  const redirect_uris = [...new Set(rawUris.map(checkRedirectUri))];

  const method = body.token_endpoint_auth_method ?? 'client_secret_basic'; // RFC 7591 §2 default
  if (typeof method !== 'string' || !(CLIENT_AUTH_METHODS as readonly string[]).includes(method)) {
    throw new InvalidClientMetadataError(`\`token_endpoint_auth_method\` must be one of ${CLIENT_AUTH_METHODS.join(', ')}.`);
  }
  // RFC 7591's default is authorization_code alone; every MCP client also refreshes, so both are the default here.
  const grant_types = stringArray(body, 'grant_types', ['authorization_code', 'refresh_token']);
  const unsupported = grant_types.find((g) => !SUPPORTED_GRANTS.includes(g));
  if (unsupported) throw new InvalidClientMetadataError(`The grant type \`${unsupported}\` is not supported; use authorization_code and refresh_token.`);
  if (!grant_types.includes('authorization_code')) throw new InvalidClientMetadataError('`grant_types` must include authorization_code.');
  const response_types = stringArray(body, 'response_types', ['code']);
  if (response_types.some((r) => r !== 'code')) throw new InvalidClientMetadataError('`response_types` may only contain `code`.');

  let scope = optionalString(body, 'scope', 1000);
  if (scope !== undefined) {
    try {
      scope = parseScope(scope).join(' ') || undefined;
    } catch (err) {
      throw new InvalidClientMetadataError((err as Error).message);
    }
  }
  const contacts = stringArray(body, 'contacts', []);
  return {
    redirect_uris,
    token_endpoint_auth_method: method as ClientAuthMethod,
    grant_types,
    response_types,
    scope,
    client_name: optionalString(body, 'client_name', 200),
    client_uri: optionalHttpsUrl(body, 'client_uri'),
    logo_uri: optionalHttpsUrl(body, 'logo_uri'),
    tos_uri: optionalHttpsUrl(body, 'tos_uri'),
    policy_uri: optionalHttpsUrl(body, 'policy_uri'),
    software_id: optionalString(body, 'software_id', 200),
    software_version: optionalString(body, 'software_version', 100),
    contacts: contacts.length ? contacts.slice(0, 10) : undefined,
  };
}

/** `POST {mcp_url}/register` — RFC 7591 dynamic client registration, open and throttled per IP. */
export function registerHandler(o: OauthContext): (ctx: Koa.Context) => Promise<void> {
  const throttle = new Throttle(REGISTER_LIMIT.perWindow, REGISTER_LIMIT.windowMs, o.now);
  return async (ctx) => {
    throttle.hit(ctx.ip, 'client registrations from this address');
    const type = (ctx.get('content-type') || '').split(';')[0]!.trim().toLowerCase();
    if (type !== 'application/json') throw new InvalidClientMetadataError('The registration request must be a JSON object (Content-Type: application/json).');
    let body: unknown;
    try {
      body = JSON.parse((await readBody(ctx)).toString('utf8'));
    } catch (err) {
      if (err instanceof OAuthError) throw err;
      throw new InvalidClientMetadataError('The registration request body is not valid JSON.');
    }
    if (!body || typeof body !== 'object' || Array.isArray(body)) throw new InvalidClientMetadataError('The registration request must be a JSON object.');
    const meta = validateClientMetadata(body as Record<string, unknown>);

    const now = o.now();
    const clientId = randomUUID();
    const secret = meta.token_endpoint_auth_method === 'none' ? null : newSecret('slcs');
    const metadata = Object.fromEntries(Object.entries(meta).filter(([, v]) => v !== undefined));
    const row: OauthClientRow = {
      client_id: clientId,
      secret_hash: secret ? hashSecret(secret) : null,
      auth_method: meta.token_endpoint_auth_method,
      redirect_uris: meta.redirect_uris,
      grant_types: meta.grant_types,
      scope: meta.scope ?? null,
      client_name: meta.client_name ?? null,
      metadata,
      created_at: now,
    };
    o.repo.createClient(row);
    o.repo.prune(now);

    noStore(ctx);
    ctx.status = 201;
    ctx.body = {
      client_id: clientId,
      client_id_issued_at: Math.floor(now / 1000),
      ...(secret ? { client_secret: secret, client_secret_expires_at: 0 } : {}),
      ...metadata,
    };
  };
}
