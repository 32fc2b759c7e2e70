import { createHash } from 'node:crypto';
import { RateLimitedError } from '../../core/errors.js';

/**
 * General per-credential rate limit: a fixed window of `windowSeconds` with `limit` requests.
 * Responses carry RateLimit-Limit and RateLimit-Policy; a limited one is 429 with RateLimit and
 * Retry-After: 60 (spec, Limits). The numbers are configuration (SIGHTLINE_RATE_LIMIT*).
 */
export class RateLimiter {
  private windows = new Map<string, { start: number; count: number }>();
  constructor(
    readonly limit: number,
    readonly windowSeconds: number,
    private now: () => number = Date.now,
  ) {}

  headers(): Record<string, string> {
    return { 'RateLimit-Limit': String(this.limit), 'RateLimit-Policy': `${this.limit};w=${this.windowSeconds}` };
  }

  /** Count one request for `identity`; throws RateLimitedError when over the limit. */
  hit(identity: string): { remaining: number; resetSeconds: number } {
    const key = createHash('sha256').update(identity).digest('base64url').slice(0, 22);
    const now = this.now();
    const windowMs = this.windowSeconds * 1000;
    let w = this.windows.get(key);
    if (!w || now - w.start >= windowMs) {
      w = { start: now, count: 0 };
      this.windows.set(key, w);
      if (this.windows.size > 100_000) this.prune(now);
    }
    w.count++;
    const resetSeconds = Math.max(1, Math.ceil((w.start + windowMs - now) / 1000));
    if (w.count > this.limit) {
      throw new RateLimitedError(60, `Rate limit of ${this.limit} requests per ${this.windowSeconds} s exceeded for this credential.`, 'rate_limited', {
        ...this.headers(),
        RateLimit: `limit=${this.limit}, remaining=0, reset=${resetSeconds}`,
        'Retry-After': '60',
      });
    }
    return { remaining: this.limit - w.count, resetSeconds };
  }

  private prune(now: number): void {
    for (const [k, w] of this.windows) if (now - w.start >= this.windowSeconds * 1000) this.windows.delete(k);
  }
}
