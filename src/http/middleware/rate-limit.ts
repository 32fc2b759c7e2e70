import { createHash } from 'node:crypto';
import { RateLimitedError } from '../../core/errors.js';
import { WindowStore } from './window-store.js';
import type { SharedCounters } from '../../storage/redis-counters.js';

export interface RateResult {
  remaining: number;
  resetSeconds: number;
}

/**
 * What every face counts requests with (REST, MCP, the operations an execute runs): this process's
 * {@link RateLimiter}, or {@link SharedRateLimiter} when several processes share one budget. `hit`
 * throws (or rejects with) RateLimitedError over the limit.
 */
export interface RequestLimiter {
  readonly limit: number;
  readonly windowSeconds: number;
  headers(): Record<string, string>;
  hit(identity: string): RateResult | Promise<RateResult>;
}

/** The hash a credential is counted under (never the secret itself). */
const identityKey = (identity: string) => createHash('sha256').update(identity).digest('base64url').slice(0, 22);

function limited(limit: number, windowSeconds: number, resetSeconds: number, headers: Record<string, string>): RateLimitedError {
  return new RateLimitedError(60, `Rate limit of ${limit} requests per ${windowSeconds} s exceeded for this credential.`, 'rate_limited', {
    ...headers,
    RateLimit: `limit=${limit}, remaining=0, reset=${resetSeconds}`,
    'Retry-After': '60',
  });
}

/**
 * General per-credential rate limit: a fixed window of `windowSeconds` with `limit` requests.
 * Responses carry RateLimit-Limit and RateLimit-Policy; a limited one is 429 with RateLimit and
 * Retry-After: 60 (spec, Limits). The numbers are configuration (SIGHTLINE_RATE_LIMIT*). The store
 * is bounded (WindowStore), so a check costs the same at 10 keys or 10 million.
 */
export class RateLimiter implements RequestLimiter {
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
  hit(identity: string): RateResult {
    const now = this.now();
    const w = this.windows.add(identityKey(identity), now);
    const resetSeconds = Math.max(1, Math.ceil((w.start + this.windowSeconds * 1000 - now) / 1000));
    if (w.count > this.limit) throw limited(this.limit, this.windowSeconds, resetSeconds, this.headers());
    return { remaining: this.limit - w.count, resetSeconds };
  }

  /** Keys held (bounded by the capacity). */
  get size(): number {
    return this.windows.size;
  }
}

/**
 * One budget per credential across every process that shares `counters` (Redis, SIGHTLINE_REDIS_URL):
 * fixed windows aligned to the epoch, so all processes agree on a window. While Redis does not answer
 * (down, or slower than its command timeout) requests are counted by `fallback`, this process's own
 * limiter, so the API stays up and each process still holds the limit on its own.
 */
export class SharedRateLimiter implements RequestLimiter {
  readonly limit: number;
  readonly windowSeconds: number;
  constructor(
    private counters: SharedCounters,
    private fallback: RateLimiter,
    private prefix: string,
    private now: () => number = Date.now,
  ) {
    this.limit = fallback.limit;
    this.windowSeconds = fallback.windowSeconds;
  }

  headers(): Record<string, string> {
    return this.fallback.headers();
  }

  async hit(identity: string): Promise<RateResult> {
    if (!this.counters.connected) return this.fallback.hit(identity);
    const windowMs = this.windowSeconds * 1000;
    const now = this.now();
    const index = Math.floor(now / windowMs);
    const end = (index + 1) * windowMs;
    let count: number;
    try {
      count = await this.counters.incr(`${this.prefix}rl:${this.windowSeconds}:${index}:${identityKey(identity)}`, end - now + 1000);
    } catch {
      return this.fallback.hit(identity);
    }
    const resetSeconds = Math.max(1, Math.ceil((end - now) / 1000));
    if (count > this.limit) throw limited(this.limit, this.windowSeconds, resetSeconds, this.headers());
    return { remaining: this.limit - count, resetSeconds };
  }
}
