/**
 * Issue 20 item 2: with SIGHTLINE_REDIS_URL set, two Sightline servers over one database hold one
 * rate-limit budget per credential (counted in Redis); without it each counts its own; with Redis
 * unreachable the API stays up and each process limits on its own. Needs the Redis this machine runs
 * on 127.0.0.1:6379 (skipped, with the reason printed, when none answers).
 */
import http from 'node:http';
import { randomUUID } from 'node:crypto';
import { connect } from 'node:net';
import type { AddressInfo } from 'node:net';
import { afterEach, describe, expect, it } from 'vitest';
import { createSightline, type Sightline } from '../../src/server.js';
import { startTestServer, type TestServer } from '../helpers/server.js';
import { createPgDatabase, pgQuery, postgresMissing } from '../support/postgres.js';
import type { AppConfig } from '../../src/core/config.js';

const REDIS = 'redis://127.0.0.1:6379/0';
const redisUp = await new Promise<boolean>((resolve) => {
  const sock = connect(6379, '127.0.0.1');
  sock.setTimeout(1000);
  sock.once('connect', () => (sock.destroy(), resolve(true)));
  sock.once('error', () => resolve(false));
  sock.once('timeout', () => (sock.destroy(), resolve(false)));
});
if (!redisUp) console.log('rate-limit-shared: no Redis on 127.0.0.1:6379, skipping the shared rate limit tests');

const closers: Array<() => Promise<void>> = [];
afterEach(async () => {
  while (closers.length) await closers.pop()!();
});

/** A first server (test helper) and a second process-like server over the same database file. */
async function twoServers(config: Partial<AppConfig>): Promise<{ t: TestServer; second: { s: Sightline; url: string } }> {
  const t = await startTestServer({ config });
  closers.push(() => t.close());
  const s = createSightline({ logLevel: 'silent', authFailureLimit: { limit: 1_000_000, windowSeconds: 60 }, ...config, dbFile: t.dbFile, databaseUrl: t.s.config.databaseUrl, port: 0, host: '127.0.0.1' });
  const server = http.createServer(s.app.callback());
  await new Promise<void>((r) => server.listen(0, '127.0.0.1', r));
  closers.push(async () => {
    await new Promise<void>((r) => (server.close(() => r()), server.closeAllConnections()));
    await s.close();
  });
  // Both processes' shared counters (Redis, or PostgreSQL without it) connected before the first
  // request: until then a process counts on its own (the CI run that admitted 11 of 12 met this).
  if (config.redis?.url === REDIS || (config.databaseUrl && !config.redis?.url)) {
    expect(await t.s.redis!.ready(5000)).toBe(true);
    expect(await s.redis!.ready(5000)).toBe(true);
  }
  return { t, second: { s, url: `http://127.0.0.1:${(server.address() as AddressInfo).port}` } };
}

/** 12 reads with one key, alternating between the two servers; the statuses in order. */
async function alternate(urls: string[], t: TestServer): Promise<number[]> {
  // Shared windows are aligned to the epoch: start with at least 8 s of the minute left, so the 12
  // reads (well under a second; a few seconds on a loaded machine) fall in one window (straddling a
  // boundary gives them two budgets).
  const window = rateLimit.windowSeconds * 1000;
  const left = window - (Date.now() % window);
  if (left < 8_000) await new Promise((r) => setTimeout(r, left + 50));
  const out: number[] = [];
  for (let i = 0; i < 12; i++) {
    const r = await fetch(`${urls[i % 2]}/v1/projects/${t.projectId}/feedback`, { headers: { 'x-service-key': t.keys.admin } });
    await r.arrayBuffer();
    out.push(r.status);
  }
  return out;
}

const rateLimit = { limit: 10, windowSeconds: 60 };

describe.skipIf(!redisUp)('the rate limit across processes', () => {
  it('is one budget per credential across two servers when they share Redis', async () => {
    const prefix = `sltest:${randomUUID()}:`;
    // (A loaded test machine can take longer than the default 250 ms to count: then each process counts alone.)
    const { t, second } = await twoServers({ rateLimit, redis: { url: REDIS, prefix, timeoutMs: 5000 } });
    expect(t.s.redis!.connected).toBe(true);
    const statuses = await alternate([t.url, second.url], t);
    expect(statuses.filter((s) => s === 200)).toHaveLength(10);
    expect(statuses.slice(10)).toEqual([429, 429]);
    // The MCP face counts against the same budget: spent as well.
    const mcp = await fetch(`${second.url}/mcp`, {
      method: 'POST',
      headers: { 'content-type': 'application/json', accept: 'application/json, text/event-stream', 'x-service-key': t.keys.admin },
      body: JSON.stringify({ jsonrpc: '2.0', id: 1, method: 'initialize', params: { protocolVersion: '2025-06-18', capabilities: {}, clientInfo: { name: 't', version: '1' } } }),
    });
    await mcp.arrayBuffer();
    expect(mcp.status).toBe(429);
    // Another credential has its own budget.
    const other = await fetch(`${second.url}/v1/projects/${t.projectId}/feedback`, { headers: { 'x-service-key': t.mintKey(['read']) } });
    expect(other.status).toBe(200);
  }, 60_000);

  it('is counted per process without Redis', async () => {
    const { t, second } = await twoServers({ rateLimit, redis: { url: null, prefix: 'sightline:' }, databaseUrl: null });
    expect(t.s.redis).toBeNull();
    expect((await alternate([t.url, second.url], t)).every((s) => s === 200)).toBe(true);
  }, 60_000);

  it('keeps serving, limited per process, while Redis cannot be reached', async () => {
    const { t, second } = await twoServers({ rateLimit, redis: { url: 'redis://127.0.0.1:1/0', prefix: 'sightline:' } });
    expect(await t.s.redis!.ready(300)).toBe(false);
    expect((await alternate([t.url, second.url], t)).every((s) => s === 200)).toBe(true);
    const r = await fetch(`${t.url}/v1/projects/${t.projectId}/feedback`, { headers: { 'x-service-key': t.keys.admin } });
    expect(r.status).toBe(200); // 7th on this server
    const statuses: number[] = [];
    for (let i = 0; i < 4; i++) statuses.push((await fetch(`${t.url}/v1/projects/${t.projectId}/feedback`, { headers: { 'x-service-key': t.keys.admin } })).status);
    expect(statuses).toEqual([200, 200, 200, 429]);
  }, 60_000);
});

const pgMissing = await postgresMissing();
describe.skipIf(!!pgMissing)('the rate limit across processes over PostgreSQL, without Redis', () => {
  it('is one budget per credential across two servers sharing a PostgreSQL database', async () => {
    const db = await createPgDatabase();
    closers.unshift(() => db.drop());
    const { t, second } = await twoServers({ rateLimit, redis: { url: null, prefix: 'sightline:', timeoutMs: 5000 }, databaseUrl: db.url });
    const statuses = await alternate([t.url, second.url], t);
    expect(statuses.filter((s) => s === 200)).toHaveLength(10);
    expect(statuses.slice(10)).toEqual([429, 429]);
    // The counters are rows of PostgreSQL's rate_counters table, one per credential and window.
    expect((await pgQuery(db.url, 'SELECT count::int AS n FROM rate_counters'))[0]).toEqual({ n: 12 });
  }, 60_000);
});
