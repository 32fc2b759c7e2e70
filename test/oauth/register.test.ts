import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { REGISTER_LIMIT } from '../../src/oauth/register.js';
import { startOauthServer, type OauthTestServer } from './helpers.js';

let t: OauthTestServer;
beforeAll(async () => {
  t = await startOauthServer({ createUser: false });
});
afterAll(async () => {
  await t.close();
});

async function register(body: unknown, headers: Record<string, string> = { 'content-type': 'application/json' }) {
  const res = await fetch(`${t.mcpUrl}/register`, { method: 'POST', headers, body: typeof body === 'string' ? body : JSON.stringify(body) });
  return { status: res.status, headers: res.headers, body: (await res.json()) as Record<string, unknown> };
}

describe('POST {mcp_url}/register', () => {
  it('registers a public client with 201 and echoes its metadata', async () => {
    const res = await register({ redirect_uris: ['http://127.0.0.1:5555/cb'], token_endpoint_auth_method: 'none', client_name: 'Claude Code', scope: 'read errors:write' });
    expect(res.status).toBe(201);
    expect(res.body).toMatchObject({
      client_id: expect.any(String),
      client_id_issued_at: expect.any(Number),
      redirect_uris: ['http://127.0.0.1:5555/cb'],
      token_endpoint_auth_method: 'none',
      grant_types: ['authorization_code', 'refresh_token'],
      response_types: ['code'],
      client_name: 'Claude Code',
      scope: 'read errors:write',
    });
    expect(res.body.client_secret).toBeUndefined();
    expect(res.headers.get('cache-control')).toBe('no-store');
  });

  it('issues a secret to a client that registers no auth method (client_secret_basic by default)', async () => {
    const res = await register({ redirect_uris: ['https://app.example.com/oauth/callback'] });
    expect(res.status).toBe(201);
    expect(res.body.token_endpoint_auth_method).toBe('client_secret_basic');
    expect(res.body.client_secret).toMatch(/^slcs_/);
    expect(res.body.client_secret_expires_at).toBe(0);
  });

  it.each([
    ['http://app.example.com/callback', 'http on a non-loopback host'],
    ['myapp://callback', 'a private-use scheme'],
    ['https://app.example.com/cb#frag', 'a fragment'],
    ['/relative/callback', 'a relative URL'],
    ['https://user:pw@app.example.com/cb', 'credentials in the URL'],
  ])('refuses %s (%s) with invalid_redirect_uri', async (uri) => {
    const res = await register({ redirect_uris: [uri], token_endpoint_auth_method: 'none' });
    expect(res.status).toBe(400);
    expect(res.body.error).toBe('invalid_redirect_uri');
    expect(typeof res.body.error_description).toBe('string');
  });

  it('accepts loopback http on 127.0.0.1, [::1] and localhost', async () => {
    const res = await register({ redirect_uris: ['http://127.0.0.1/cb', 'http://[::1]:8080/cb', 'http://localhost:3000/callback'], token_endpoint_auth_method: 'none' });
    expect(res.status).toBe(201);
  });

  it('refuses missing redirect_uris with invalid_redirect_uri', async () => {
    const res = await register({ client_name: 'no uris' });
    expect(res.status).toBe(400);
    expect(res.body.error).toBe('invalid_redirect_uri');
  });

  it.each<[Record<string, unknown>, string]>([
    [{ token_endpoint_auth_method: 'private_key_jwt' }, 'an unsupported auth method'],
    [{ grant_types: ['client_credentials'] }, 'an unsupported grant type'],
    [{ response_types: ['token'] }, 'the implicit response type'],
    [{ scope: 'read superuser' }, 'an unknown scope'],
    [{ client_name: 42 }, 'a non-string client_name'],
  ])('refuses %o (%s) with invalid_client_metadata', async (extra) => {
    const res = await register({ redirect_uris: ['https://app.example.com/cb'], ...extra });
    expect(res.status).toBe(400);
    expect(res.body.error).toBe('invalid_client_metadata');
  });

  it('refuses a body that is not JSON with invalid_client_metadata', async () => {
    const res = await register('redirect_uris=https://x', { 'content-type': 'application/x-www-form-urlencoded' });
    expect(res.status).toBe(400);
    expect(res.body.error).toBe('invalid_client_metadata');
  });

  it('allows browser-based clients to call it (CORS)', async () => {
    const pre = await fetch(`${t.mcpUrl}/register`, { method: 'OPTIONS', headers: { origin: 'https://inspector.example', 'access-control-request-method': 'POST' } });
    expect(pre.status).toBe(204);
    expect(pre.headers.get('access-control-allow-origin')).toBe('*');
  });

  it(`throttles registration to ${REGISTER_LIMIT.perWindow} per address per window with 429 and Retry-After`, async () => {
    const fresh = await startOauthServer({ createUser: false });
    try {
      const body = JSON.stringify({ redirect_uris: ['https://app.example.com/cb'], token_endpoint_auth_method: 'none' });
      const statuses: number[] = [];
      for (let i = 0; i <= REGISTER_LIMIT.perWindow; i++) {
        const res = await fetch(`${fresh.mcpUrl}/register`, { method: 'POST', headers: { 'content-type': 'application/json' }, body });
        statuses.push(res.status);
        if (res.status === 429) {
          expect(res.headers.get('retry-after')).toMatch(/^\d+$/);
          expect(((await res.json()) as { error: string }).error).toBe('too_many_requests');
        } else await res.arrayBuffer();
      }
      expect(statuses.slice(0, REGISTER_LIMIT.perWindow).every((s) => s === 201)).toBe(true);
      expect(statuses.at(-1)).toBe(429);
      // The window passes: registration opens again.
      fresh.advance(REGISTER_LIMIT.windowMs);
      const after = await fetch(`${fresh.mcpUrl}/register`, { method: 'POST', headers: { 'content-type': 'application/json' }, body });
      expect(after.status).toBe(201);
    } finally {
      await fresh.close();
    }
  });
});
