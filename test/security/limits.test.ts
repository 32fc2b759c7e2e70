/**
 * Bounded work per request, read side (issue 10 item 1): every read's answer is capped, with an
 * error that says how to narrow the request.
 */
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { api, startTestServer, type TestServer } from '../helpers/server.js';

let t: TestServer;
let P: string;
beforeAll(async () => {
  t = await startTestServer({ config: { maxResponseBytes: 4096 } });
  P = `/v1/projects/${t.projectId}`;
  for (let i = 0; i < 12; i++) {
    const res = await api(t, 'POST', `${P}/feedback`, { key: t.keys.ingest, body: { message: `feedback ${i} ` + 'x'.repeat(500) } });
    expect(res.status).toBe(201);
  }
});
afterAll(() => t.close());

describe('the response size cap', () => {
  it('answers 400 response_too_large naming the fields that narrow the request', async () => {
    const res = await api(t, 'GET', `${P}/feedback`, { key: t.keys.admin });
    expect(res.status).toBe(400);
    expect(res.body.code).toBe('response_too_large');
    expect(res.body.message).toContain('4096-byte');
    expect(res.body.message).toContain('`limit`');
    expect(Buffer.byteLength(JSON.stringify(res.body))).toBeLessThan(1024);
  });

  it('lets the narrowed request through', async () => {
    const res = await api(t, 'GET', `${P}/feedback?limit=2`, { key: t.keys.admin });
    expect(res.status).toBe(200);
    expect(res.body.data).toHaveLength(2);
    expect(res.headers.get('content-type')).toContain('application/json');
  });
});
