/**
 * The shared webhook sender (src/core/webhooks.ts): refuses private targets unless allowed — also
 * when a host name resolves to one at dial time — and signs bodies as documented (t + raw body).
 */
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import http from 'node:http';
import { createHmac } from 'node:crypto';
import type { AddressInfo } from 'node:net';
import { createWebhookSender, signatureHeader, verifySignature } from '../../src/core/webhooks.js';

let server: http.Server;
let port = 0;
const bodies: string[] = [];

beforeAll(async () => {
  server = http.createServer((req, res) => {
    let b = '';
    req.on('data', (c) => (b += c));
    req.on('end', () => {
      bodies.push(b);
      res.writeHead(req.url === '/fail' ? 500 : 204).end();
    });
  });
  await new Promise<void>((r) => server.listen(0, '127.0.0.1', r));
  port = (server.address() as AddressInfo).port;
});
afterAll(async () => {
  server.closeAllConnections();
  await new Promise((r) => server.close(r));
});

describe('webhook sender', () => {
  it('refuses loopback targets by default, by literal address and by a name that resolves to one', async () => {
    const strict = createWebhookSender('');
    expect(strict.refuse(`http://127.0.0.1:${port}/`)).toMatchObject({ code: 'address_not_allowed', reason: expect.stringContaining('SIGHTLINE_WEBHOOK_ALLOW_PRIVATE') });
    expect(strict.refuse('http://user:pw@example.com/')).toMatchObject({ code: 'invalid_url' });
    const byName = await strict.post(`http://localhost:${port}/`, '{}');
    expect(byName.ok).toBe(false);
    expect(byName.error).toMatch(/refused.*SIGHTLINE_WEBHOOK_ALLOW_PRIVATE/);
    expect(bodies).toEqual([]);
  });

  it('posts to an allowed address and reports non-2xx answers as failures', async () => {
    const allowed = createWebhookSender('127.0.0.1');
    expect(await allowed.post(`http://127.0.0.1:${port}/ok`, '{"a":1}')).toEqual({ ok: true, status: 204, error: null });
    expect(await allowed.post(`http://127.0.0.1:${port}/fail`, '{}')).toMatchObject({ ok: false, status: 500 });
    expect(bodies[0]).toBe('{"a":1}');
  });

  it('signs t + "." + body with HMAC-SHA256 and verifies within the tolerance only', () => {
    const now = Date.UTC(2026, 0, 1);
    const h = signatureHeader('whsec_test', '{"x":1}', now);
    const t = Math.floor(now / 1000);
    expect(h).toBe(`t=${t},v1=${createHmac('sha256', 'whsec_test').update(`${t}.{"x":1}`).digest('hex')}`);
    expect(verifySignature(h, '{"x":1}', 'whsec_test', now + 60_000)).toBe(true);
    expect(verifySignature(h, '{"x":2}', 'whsec_test', now)).toBe(false);
    expect(verifySignature(h, '{"x":1}', 'other', now)).toBe(false);
    expect(verifySignature(h, '{"x":1}', 'whsec_test', now + 301_000)).toBe(false);
  });
});
