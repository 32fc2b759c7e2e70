/**
 * Why this file: with several Sightline processes the per-credential rate limit must be one budget,
 * not one per process (issue 20 item 2). When SIGHTLINE_REDIS_URL is set the processes count in Redis:
 * one fixed-window counter per (credential, window), incremented and given its expiry in one script,
 * so every process sees the same count.
 *
 * - Windows are aligned to the epoch (window index = floor(now / window)), so processes agree on the
 *   window without talking to each other; a key expires a second after its window ends.
 * - A command that does not answer within `timeoutMs`, or any command while the connection is down
 *   (no offline queue), rejects at once: the caller falls back to counting in the process
 *   (src/http/middleware/rate-limit.ts) so Redis going away never takes the API down with it.
 */
import { createClient } from 'redis';
import type { Logger } from 'pino';

/** INCR the key; on its first increment give it its expiry. Returns the count. */
const INCR_SCRIPT = "local c = redis.call('INCR', KEYS[1]) if c == 1 then redis.call('PEXPIRE', KEYS[1], ARGV[1]) end return c";

export interface SharedCounters {
  /** Adds one to `key` (which expires after `ttlMs` from its first increment); resolves with the new count. */
  incr(key: string, ttlMs: number): Promise<number>;
  /** Resolves true once connected, false when `timeoutMs` passed first (the client keeps retrying). */
  ready(timeoutMs?: number): Promise<boolean>;
  readonly connected: boolean;
  close(): Promise<void>;
}

export function createRedisCounters(url: string, opts: { log?: Logger; timeoutMs?: number } = {}): SharedCounters {
  const timeoutMs = opts.timeoutMs ?? 250;
  const client = createClient({
    url,
    disableOfflineQueue: true,
    socket: { connectTimeout: 2000, reconnectStrategy: (retries: number) => Math.min(5000, 100 * 2 ** Math.min(retries, 6)) },
  });
  let connected = false;
  let lastWarn = 0;
  const warn = (msg: string, err?: unknown) => {
    const now = Date.now();
    if (now - lastWarn < 60_000) return;
    lastWarn = now;
    opts.log?.warn({ err: err instanceof Error ? err.message : err }, msg);
  };
  client.on('ready', () => {
    connected = true;
  });
  client.on('end', () => {
    connected = false;
  });
  client.on('error', (err: unknown) => {
    connected = false;
    warn('Redis is not reachable: rate limits are counted per process until it is back', err);
  });
  const connecting = client.connect().then(
    () => true,
    (err: unknown) => {
      warn('Redis connection failed: rate limits are counted per process until it is back', err);
      return false;
    },
  );

  return {
    get connected() {
      return connected;
    },
    async incr(key, ttlMs) {
      if (!connected) throw new Error('Redis is not connected');
      const r = await client.withCommandOptions({ timeout: timeoutMs }).eval(INCR_SCRIPT, { keys: [key], arguments: [String(Math.ceil(ttlMs))] });
      return Number(r);
    },
    async ready(waitMs = 2000) {
      if (connected) return true;
      let timer: NodeJS.Timeout | undefined;
      const timeout = new Promise<false>((r) => (timer = setTimeout(() => r(false), waitMs)));
      const ok = await Promise.race([connecting, timeout]);
      clearTimeout(timer);
      return ok && connected;
    },
    async close() {
      try {
        // A client still retrying its connection is destroyed (close would wait for the retries).
        if (connected) await client.close();
        else if (client.isOpen) client.destroy();
      } catch {
        if (client.isOpen) client.destroy();
      }
    },
  };
}
