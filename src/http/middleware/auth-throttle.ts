import type Koa from 'koa';
import { AppError, RateLimitedError } from '../../core/errors.js';
import { WindowStore } from './window-store.js';

/**
 * Failed authentication is throttled per client address (issue 10 item 4): random fake keys each
 * had a fresh per-credential window, so guessing was never slowed. Every face (REST, MCP, ingest,
 * OAuth) answers a bad credential with 401; this middleware counts those 401s for requests that
 * presented a credential, and past `limit` in `windowSeconds` refuses the address with 429 before
 * any lookup. Valid credentials from the same address keep working until the limit is reached,
 * and the window ends on its own. The address is `ctx.ip` (with SIGHTLINE_TRUST_PROXY=1, the
 * address the outermost trusted proxy saw: see server.ts).
 */
export class AuthThrottle {
  private failures: WindowStore;
  constructor(
    readonly limit: number,
    readonly windowSeconds: number,
    private now: () => number = Date.now,
    capacity = 100_000,
  ) {
    this.failures = new WindowStore(windowSeconds * 1000, capacity);
  }

  /** Throws 429 when `address` is over its failure budget. */
  check(address: string): void {
    const now = this.now();
    const w = this.failures.peek(address, now);
    if (w && w.count >= this.limit) {
      const retry = Math.max(1, Math.ceil((w.start + this.windowSeconds * 1000 - now) / 1000));
      throw new RateLimitedError(
        retry,
        `Too many failed authentications from this address (${this.limit} per ${this.windowSeconds} s). Retry in ${retry} s with a valid credential.`,
        'auth_rate_limited',
      );
    }
  }

  fail(address: string): void {
    this.failures.add(address, this.now());
  }

  middleware(): Koa.Middleware {
    return async (ctx, next) => {
      this.check(ctx.ip);
      let status: number;
      try {
        await next();
        status = ctx.status;
      } catch (err) {
        status = err instanceof AppError ? err.status : 500;
        throw err;
      } finally {
        if (status! === 401 && presentedCredential(ctx)) this.fail(ctx.ip);
      }
    };
  }
}

function presentedCredential(ctx: Koa.Context): boolean {
  const h = ctx.headers;
  return Boolean(h['x-service-key'] || h['authorization'] || h['x-sentry-auth'] || ctx.querystring.includes('sentry_key='));
}
