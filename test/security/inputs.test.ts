/**
 * Inputs that were not checked (issue 10 item 8) and spec rules that failed (item 6): each case
 * here answered 500, 200 with a wrong answer, 404 or 201 before the fix.
 */
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { api, startTestServer, type TestServer } from '../helpers/server.js';

let t: TestServer;
let P: string;
beforeAll(async () => {
  t = await startTestServer();
  P = `/v1/projects/${t.projectId}`;
});
afterAll(() => t.close());

function expectShapeA(body: any) {
  expect(body).toMatchObject({ type: expect.any(String), code: expect.any(String), message: expect.any(String) });
}

describe('log reads with hostile filter values', () => {
  for (const path of ['/logs', '/logs/histogram', '/logs/insights']) {
    for (const qs of ['level=constructor', 'level=__proto__', 'level=toString', 'q=a%00b', 'service=a%01b']) {
      it(`answers 400, never 500, to ${path}?${qs}`, async () => {
        const res = await api(t, 'GET', `${P}${path}?${qs}`, { key: t.keys.admin });
        expect(res.status, JSON.stringify(res.body)).toBe(400);
        expectShapeA(res.body);
        expect(res.body.param).toBe(qs.split('=')[0]);
      });
    }
  }
});

describe('unknown query parameters', () => {
  it.each([
    ['/logs', 'traceid', 'q'],
    ['/errors', 'version', 'status'],
    ['/traces', 'order_by', 'limit'],
    ['/feedback', 'nope', 'cursor'],
  ])('%s?%s=… answers 400 naming the field and listing accepted ones', async (path, unknown, accepted) => {
    const res = await api(t, 'GET', `${P}${path}?${unknown}=x`, { key: t.keys.admin });
    expect(res.status, JSON.stringify(res.body)).toBe(400);
    expect(res.body.code).toBe('unknown_field');
    expect(res.body.param).toBe(unknown);
    expect(res.body.message).toContain(unknown);
    expect(res.body.message).toContain(accepted);
  });

  it('are refused on body operations too', async () => {
    const res = await api(t, 'POST', `${P}/feedback?debug=1`, { key: t.keys.ingest, body: { message: 'hello' } });
    expect(res.status).toBe(400);
    expect(res.body.param).toBe('debug');
  });

  it('are refused through invoke for every face, with the accepted fields listed', async () => {
    const principal = { kind: 'api_key' as const, keyId: 'k', projectId: t.projectId, orgId: t.organizationId, scopes: ['*'] };
    await expect(t.s.core.invoke('logs.search', { traceid: 'abc' }, principal)).rejects.toMatchObject({
      status: 400,
      code: 'unknown_field',
      param: 'traceid',
      message: expect.stringContaining('level'),
    });
  });
});

describe('content type and method', () => {
  it('answers 415 to a JSON body sent as text/plain, and stores nothing', async () => {
    const res = await api(t, 'POST', `${P}/feedback`, {
      key: t.keys.ingest,
      rawBody: JSON.stringify({ message: 'sent as text' }),
      headers: { 'content-type': 'text/plain' },
    });
    expect(res.status).toBe(415);
    expect(res.body.code).toBe('unsupported_media_type');
    const list = await api(t, 'GET', `${P}/feedback?q=sent%20as%20text`, { key: t.keys.admin });
    expect(list.body.data).toEqual([]);
  });

  it('accepts application/json with a charset and +json types', async () => {
    for (const type of ['application/json; charset=utf-8', 'application/vnd.api+json']) {
      const res = await api(t, 'POST', `${P}/deployments`, {
        key: t.keys.admin,
        rawBody: JSON.stringify({ provider: 'github', deployment_id: `d-${type.length}`, status: 'ready', environment: 'production' }),
        headers: { 'content-type': type },
      });
      expect(res.status, JSON.stringify(res.body)).toBeLessThan(300);
    }
  });

  it('answers 405 with Allow to a known path with a wrong method', async () => {
    const res = await api(t, 'DELETE', `${P}/logs`, { key: t.keys.admin });
    expect(res.status).toBe(405);
    expect(res.headers.get('allow')).toBe('GET, HEAD');
    expectShapeA(res.body);
    const fb = await api(t, 'PUT', `${P}/feedback`, { key: t.keys.admin, body: {} });
    expect(fb.status).toBe(405);
    expect(fb.headers.get('allow')?.split(', ').sort()).toEqual(['GET', 'HEAD', 'OPTIONS', 'POST']);
  });

  it('still answers 404 to an unknown path', async () => {
    const res = await api(t, 'DELETE', `${P}/nothing-here`, { key: t.keys.admin });
    expect(res.status).toBe(404);
  });
});

describe('Idempotency-Key', () => {
  it('sent empty is an invalid key (400), not an absent one', async () => {
    const res = await api(t, 'POST', `${P}/feedback`, { key: t.keys.ingest, body: { message: 'empty key' }, headers: { 'Idempotency-Key': '' } });
    expect(res.status, JSON.stringify(res.body)).toBe(400);
    expect(res.body.param).toBe('idempotency_key');
  });
});
