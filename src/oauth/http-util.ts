import type Koa from 'koa';
import type { Logger } from 'pino';
import { InvalidRequestError, OAuthError, ServerError, TooManyRequestsError } from './errors.js';

/** Bodies of OAuth requests are small; anything larger is refused before it is buffered. */
export const OAUTH_BODY_LIMIT = 16 * 1024;

export async function readBody(ctx: Koa.Context, limit = OAUTH_BODY_LIMIT): Promise<Buffer> {
  const declared = Number(ctx.get('content-length'));
  if (Number.isFinite(declared) && declared > limit) throw new InvalidRequestError(`The request body is larger than ${limit} bytes.`);
  const chunks: Buffer[] = [];
  let size = 0;
  for await (const chunk of ctx.req) {
    size += (chunk as Buffer).length;
    if (size > limit) throw new InvalidRequestError(`The request body is larger than ${limit} bytes.`);
    chunks.push(chunk as Buffer);
  }
  return Buffer.concat(chunks);
}

/**
 * An `application/x-www-form-urlencoded` body (RFC 6749 §3.2: token requests use it). "Request and
 * response parameters MUST NOT be included more than once" (§3.1), so a repeated one is refused.
 */
export async function readForm(ctx: Koa.Context): Promise<Map<string, string>> {
  const type = (ctx.get('content-type') || '').split(';')[0]!.trim().toLowerCase();
  if (type !== 'application/x-www-form-urlencoded') {
    throw new InvalidRequestError('The body must be application/x-www-form-urlencoded.');
  }
  const params = new URLSearchParams((await readBody(ctx)).toString('utf8'));
  return uniqueParams(params);
}

export function uniqueParams(params: URLSearchParams): Map<string, string> {
  const out = new Map<string, string>();
  for (const [k, v] of params) {
    if (out.has(k)) throw new InvalidRequestError(`The parameter \`${k}\` is included more than once.`);
    if (v !== '') out.set(k, v);
  }
  return out;
}

/** Responses holding tokens or credentials must not be cached (RFC 6749 §5.1). */
export function noStore(ctx: Koa.Context): void {
  ctx.set('Cache-Control', 'no-store');
  ctx.set('Pragma', 'no-cache');
}

/**
 * Metadata, registration, token and revocation are called by browser-based MCP clients too; they
 * use no cookies, so any origin may call them.
 */
export function allowAnyOrigin(ctx: Koa.Context): void {
  ctx.set('Access-Control-Allow-Origin', '*');
  ctx.set('Access-Control-Allow-Headers', 'authorization, content-type, mcp-protocol-version');
  ctx.set('Access-Control-Allow-Methods', 'GET, POST, OPTIONS');
  ctx.set('Access-Control-Max-Age', '600');
}

export function sendOAuthError(ctx: Koa.Context, err: OAuthError): void {
  ctx.status = err.status;
  ctx.set(err.headers);
  noStore(ctx);
  ctx.body = err.toResponseObject();
}

/** Wraps a JSON OAuth endpoint: any error leaves in the RFC 6749 shape, never Shape A. */
export function oauthEndpoint(log: Logger, handler: (ctx: Koa.Context) => Promise<void> | void): Koa.Middleware {
  return async (ctx) => {
    allowAnyOrigin(ctx);
    try {
      await handler(ctx);
    } catch (err) {
      if (err instanceof OAuthError) return sendOAuthError(ctx, err);
      log.error({ err, requestId: ctx.state.requestId, path: ctx.path }, 'oauth endpoint failed');
      sendOAuthError(ctx, new ServerError('The server failed to handle this request.'));
    }
  };
}

/** A fixed-window counter per key (registration, token and sign-in throttling). */
export class Throttle {
  private windows = new Map<string, { start: number; count: number }>();
  constructor(
    readonly limit: number,
    readonly windowMs: number,
    private now: () => number,
  ) {}

  /** Counts one attempt; throws TooManyRequestsError past the limit. */
  hit(key: string, what: string): void {
    const now = this.now();
    let w = this.windows.get(key);
    if (!w || now - w.start >= this.windowMs) {
      if (this.windows.size > 50_000) this.windows.clear();
      w = { start: now, count: 0 };
      this.windows.set(key, w);
    }
    w.count++;
    if (w.count > this.limit) {
      const retry = Math.ceil((w.start + this.windowMs - now) / 1000);
      throw new TooManyRequestsError(`Too many ${what}; at most ${this.limit} per ${Math.round(this.windowMs / 60_000)} minutes. Retry in ${retry} s.`, retry);
    }
  }
}

/**
 * Loopback hosts for native-app redirects (RFC 8252 §7.3): the IP literals 127.0.0.1 and [::1];
 * `localhost` is accepted too because common MCP clients register it.
 */
export function isLoopbackHost(hostname: string): boolean {
  return hostname === '127.0.0.1' || hostname === '[::1]' || hostname === 'localhost';
}

/** Loopback IP literals, for which any port is allowed at request time (RFC 8252 §7.3). */
export function isLoopbackIp(hostname: string): boolean {
  return hostname === '127.0.0.1' || hostname === '[::1]';
}
