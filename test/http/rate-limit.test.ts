/**
 * The general per-credential rate limit (spec, Limits): RateLimit-Limit and RateLimit-Policy on
 * responses; over the limit, 429 with a RateLimit header and Retry-After: 60.
 */
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { api, startTestServer, type TestServer } from '../helpers/server.js';

let clock = Date.parse('2026-03-01T00:00:00.000Z');
let t: TestServer;
let path: string;

beforeAll(async () => {
  t = await startTestServer({ now: () => clock, config: { rateLimit: { limit: 5, windowSeconds: 60 } } });
  path = `/v1/projects/${t.projectId}/deployments`;
});
afterAll(() => t.close());

describe('per-credential rate limit', () => {
  it('announces its limit and policy on every operation response', async () => {
    clock += 120_000;
    const res = await api(t, 'GET', path, { key: t.keys.admin });
    expect(res.status).toBe(200);
    expect(res.headers.get('ratelimit-limit')).toBe('5');
    expect(res.headers.get('ratelimit-policy')).toBe('5;w=60');
  });

  it('answers the request over the limit with 429, RateLimit and Retry-After: 60', async () => {
    clock += 120_000;
    const key = t.mintKey(['deployments:read']);
    for (let i = 0; i < 5; i++) expect((await api(t, 'GET', path, { key })).status).toBe(200);
    const res = await api(t, 'GET', path, { key });
    expect(res.status).toBe(429);
    expect(res.headers.get('retry-after')).toBe('60');
    expect(res.headers.get('ratelimit')).toMatch(/limit=5.*remaining=0.*reset=\d+/);
    expect(res.headers.get('ratelimit-limit')).toBe('5');
    expect(res.headers.get('ratelimit-policy')).toBe('5;w=60');
    expect(res.headers.get('x-request-id')).toBeTruthy();
    expect(res.body).toMatchObject({ type: 'rate_limit_error', code: 'rate_limited', message: expect.any(String), retry_after: 60, doc_url: expect.any(String) });
  });

  it('counts each credential on its own', async () => {
    clock += 120_000;
    const a = t.mintKey(['deployments:read']);
    const b = t.mintKey(['deployments:read']);
    for (let i = 0; i < 5; i++) await api(t, 'GET', path, { key: a });
    expect((await api(t, 'GET', path, { key: a })).status).toBe(429);
    expect((await api(t, 'GET', path, { key: b })).status).toBe(200);
  });

  it('counts the same key sent as x-service-key or as a bearer token together', async () => {
    clock += 120_000;
    const k = t.mintKey(['deployments:read']);
    for (let i = 0; i < 3; i++) await api(t, 'GET', path, { key: k });
    for (let i = 0; i < 2; i++) await api(t, 'GET', path, { headers: { authorization: `Bearer ${k}` } });
    expect((await api(t, 'GET', path, { headers: { authorization: `Bearer ${k}` } })).status).toBe(429);
  });

  it('lets the credential through again once the window has passed', async () => {
    clock += 120_000;
    const k = t.mintKey(['deployments:read']);
    for (let i = 0; i < 6; i++) await api(t, 'GET', path, { key: k });
    expect((await api(t, 'GET', path, { key: k })).status).toBe(429);
    clock += 60_000;
    expect((await api(t, 'GET', path, { key: k })).status).toBe(200);
  });

  it('also limits requests without a valid credential', async () => {
    clock += 120_000;
    const statuses: number[] = [];
    for (let i = 0; i < 6; i++) statuses.push((await api(t, 'GET', path, { key: 'sl_bogus' })).status);
    expect(statuses).toEqual([401, 401, 401, 401, 401, 429]);
  });
});
