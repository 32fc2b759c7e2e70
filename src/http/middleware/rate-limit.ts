import { createHash } from 'node:crypto';
import { RateLimitedError } from '../../core/errors.js';
import { WindowStore } from './window-store.js';

/**
 * General per-credential rate limit: a fixed window of `windowSeconds` with `limit` requests.
 * Responses carry RateLimit-Limit and RateLimit-Policy; a limited one is 429 with RateLimit and
 * Retry-After: 60 (spec, Limits). The numbers are configuration (SIGHTLINE_RATE_LIMIT*). The store
 * is bounded (WindowStore), so a check costs the same at 10 keys or 10 million.
 */
export class RateLimiter {
  private windows: WindowStore;
  constructor(
    readonly limit: number,
    readonly windowSeconds: number,
    private now: () => number = Date.now,
    capacity = 100_000,
  ) {
    this.windows = new WindowStore(windowSeconds * 1000, capacity);
  }

  headers(): Record<string, string> {
    return { 'RateLimit-Limit': String(this.limit), 'RateLimit-Policy': `${this.limit};w=${this.windowSeconds}` };
  }

  /** Count one request (an HTTP request or one operation an MCP execute runs) for `identity`; throws RateLimitedError when over the limit. */
  hit(identity: string): { remaining: number; resetSeconds: number } {
    const key = createHash('sha256').update(identity).digest('base64url').slice(0, 22);
    const now = this.now();
    const w = this.windows.add(key, now);
    const resetSeconds = Math.max(1, Math.ceil((w.start + this.windowSeconds * 1000 - now) / 1000));
    if (w.count > this.limit) {
      throw new RateLimitedError(60, `Rate limit of ${this.limit} requests per ${this.windowSeconds} s exceeded for this credential.`, 'rate_limited', {
        ...this.headers(),
        RateLimit: `limit=${this.limit}, remaining=0, reset=${resetSeconds}`,
        'Retry-After': '60',
      });
    }
    return { remaining: this.limit - w.count, resetSeconds };
  }

  /** Keys held (bounded by the capacity). */
  get size(): number {
    return this.windows.size;
  }
}
