/**
 * Cross-cutting HTTP behaviour: X-Request-ID on every response, Shape A error bodies for every
 * status the spec lists, unknown routes, rate-limit headers, and the index document.
 */
import { randomUUID } from 'node:crypto';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { api, startTestServer, type TestServer } from '../helpers/server.js';

let clock = Date.parse('2026-03-01T00:00:00.000Z');
let t: TestServer;
let fb: string;

beforeAll(async () => {
  t = await startTestServer({ now: () => clock });
  fb = `/v1/projects/${t.projectId}/feedback`;
});
afterAll(() => t.close());

function expectShapeA(body: unknown, status: number) {
  expect(body, `status ${status}`).toMatchObject({ type: expect.any(String), code: expect.any(String), message: expect.any(String) });
  const b = body as Record<string, unknown>;
  expect(Object.keys(b).every((k) => ['type', 'code', 'message', 'param', 'doc_url', 'retry_after'].includes(k)), JSON.stringify(b)).toBe(true);
  expect(b).not.toHaveProperty('error');
  expect(b).not.toHaveProperty('stack');
}

describe('X-Request-ID', () => {
  it('is on every response: success, client error, unknown route, preflight, index and OpenAPI', async () => {
    const responses = await Promise.all([
      api(t, 'GET', fb, { key: t.keys.admin }),
      api(t, 'GET', fb),
      api(t, 'GET', '/v1/nothing-here'),
      fetch(t.url + fb, { method: 'OPTIONS' }).then((r) => ({ status: r.status, headers: r.headers })),
      api(t, 'GET', '/'),
      api(t, 'GET', '/openapi.json'),
    ]);
    expect(responses.map((r) => r.status)).toEqual([200, 401, 404, 204, 200, 200]);
    const ids = responses.map((r) => r.headers.get('x-request-id'));
    for (const id of ids) expect(id).toMatch(/^[A-Za-z0-9._:-]{1,128}$/);
    expect(new Set(ids).size).toBe(ids.length);
  });

  it('echoes a safe incoming id', async () => {
    for (const id of ['req-123', 'abc.DEF:42_x', 'x'.repeat(128)]) {
      const res = await api(t, 'GET', fb, { key: t.keys.admin, headers: { 'x-request-id': id } });
      expect(res.headers.get('x-request-id')).toBe(id);
    }
    const err = await api(t, 'GET', fb, { headers: { 'x-request-id': 'trace-me' } });
    expect(err.status).toBe(401);
    expect(err.headers.get('x-request-id')).toBe('trace-me');
  });

  it.each([
    ['spaces', 'has spaces in it'],
    ['300 characters', 'a'.repeat(300)],
    ['a header-injection attempt', 'abc%0d%0aSet-Cookie:x=1'],
    ['quotes and angle brackets', '<script>"x"</script>'],
  ])('replaces an unsafe incoming id (%s)', async (_what, id) => {
    const res = await api(t, 'GET', fb, { key: t.keys.admin, headers: { 'x-request-id': id } });
    const got = res.headers.get('x-request-id');
    expect(got).not.toBe(id);
    expect(got).toMatch(/^[A-Za-z0-9._:-]{1,128}$/);
  });
});

describe('error bodies', () => {
  it('use Shape A for 400, 401, 403, 404, 409, 413 and 429', async () => {
    const seen: Record<number, unknown> = {};
    const keep = (r: { status: number; body: unknown }) => {
      seen[r.status] = r.body;
      return r;
    };
    keep(await api(t, 'POST', fb, { key: t.keys.ingest, body: { message: '' } }));
    keep(await api(t, 'GET', fb));
    keep(await api(t, 'GET', fb, { key: t.keys.ingest }));
    keep(await api(t, 'GET', `${fb}/${randomUUID()}`, { key: t.keys.admin }));
    const idem = randomUUID();
    await api(t, 'POST', fb, { key: t.keys.ingest, body: { message: 'a' }, headers: { 'idempotency-key': idem } });
    keep(await api(t, 'POST', fb, { key: t.keys.ingest, body: { message: 'b' }, headers: { 'idempotency-key': idem } }));
    keep(await api(t, 'POST', fb, { key: t.keys.ingest, rawBody: JSON.stringify({ message: 'x'.repeat(40_000) }) }));
    clock += 120_000;
    for (let i = 0; i < 20; i++) await api(t, 'POST', fb, { key: t.keys.ingest, body: { message: `q${i}` } });
    const limited = keep(await api(t, 'POST', fb, { key: t.keys.ingest, body: { message: 'over' } }));
    expect(Object.keys(seen).map(Number).sort()).toEqual([400, 401, 403, 404, 409, 413, 429]);
    for (const [status, body] of Object.entries(seen)) expectShapeA(body, Number(status));
    // Rate-limited responses carry type, code, message, retry_after and doc_url.
    expect(limited.body).toMatchObject({ type: 'rate_limit_error', retry_after: expect.any(Number), doc_url: expect.stringMatching(/^https?:\/\//) });
    expect(seen[401]).toMatchObject({ type: 'authentication_error' });
    expect(seen[403]).toMatchObject({ type: 'permission_error' });
    expect(seen[404]).toMatchObject({ type: 'not_found_error' });
  });

  it('answers an unknown route with a Shape A 404', async () => {
    for (const path of ['/v1/nothing-here', '/v2/projects', `/v1/projects/${t.projectId}/nope`]) {
      const res = await api(t, 'GET', path, { key: t.keys.admin });
      expect(res.status, path).toBe(404);
      expectShapeA(res.body, 404);
      expect(res.body.code).toBe('route_not_found');
    }
  });

  it('answers 401 to an unknown credential in either header', async () => {
    for (const headers of [{ 'x-service-key': 'sl_not-a-key' }, { authorization: 'Bearer sl_not-a-key' }] as Record<string, string>[]) {
      const res = await api(t, 'GET', fb, { headers });
      expect(res.status).toBe(401);
      expectShapeA(res.body, 401);
    }
  });

  it('never leaks internal error text', async () => {
    const res = await api(t, 'POST', fb, { key: t.keys.ingest, rawBody: '{"message": ' });
    expect(res.status).toBe(400);
    expectShapeA(res.body, 400);
    expect(res.body.message).not.toMatch(/SyntaxError|at position|Unexpected/);
  });
});

describe('rate-limit headers', () => {
  it('are on operation responses, successful or not', async () => {
    for (const res of [await api(t, 'GET', fb, { key: t.keys.admin }), await api(t, 'GET', fb), await api(t, 'GET', fb, { key: t.keys.ingest })]) {
      expect(res.headers.get('ratelimit-limit'), String(res.status)).toMatch(/^\d+$/);
      expect(res.headers.get('ratelimit-policy'), String(res.status)).toMatch(/^\d+;w=\d+$/);
    }
  });
});

describe('GET /', () => {
  it('links the docs, the OpenAPI contract and the MCP server', async () => {
    const res = await api(t, 'GET', '/');
    expect(res.status).toBe(200);
    expect(res.body.links).toMatchObject({
      docs: expect.stringMatching(/^https?:\/\//),
      openapi: expect.stringMatching(/\/openapi\.json$/),
      mcp: expect.stringMatching(/\/mcp$/),
    });
    expect(res.body.links.openapi.startsWith(t.s.config.baseUrl)).toBe(true);
    expect(res.body.links.mcp).toBe(t.s.config.mcpUrl);
  });
});
