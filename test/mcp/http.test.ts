/**
 * Streamable HTTP at /mcp with a real SDK client: authentication on every request, sessions bound
 * to the principal that created them, Origin allowlist (DNS-rebinding protection).
 */
import { afterAll, describe, expect, it } from 'vitest';
import { api, startTestServer } from '../helpers/server.js';
import { execute, httpClient, search } from './helpers.js';

const ALLOWED = 'https://console.example.com';
const t = await startTestServer({ config: { mcpAllowedOrigins: [ALLOWED], baseUrl: 'http://sightline.test:8080' } });
afterAll(() => t.close());
const P = `/v1/projects/${t.projectId}`;

const initialize = {
  jsonrpc: '2.0',
  id: 1,
  method: 'initialize',
  params: { protocolVersion: '2025-06-18', capabilities: {}, clientInfo: { name: 'raw', version: '1' } },
};
const MCP_HEADERS = { 'content-type': 'application/json', accept: 'application/json, text/event-stream' };

async function post(body: unknown, headers: Record<string, string>) {
  const res = await fetch(`${t.url}/mcp`, { method: 'POST', headers: { ...MCP_HEADERS, ...headers }, body: JSON.stringify(body) });
  const text = await res.text();
  return { status: res.status, headers: res.headers, text };
}

/** The JSON-RPC message of a response (plain JSON or one SSE `data:` event). */
function message(text: string): any {
  const data = text.split('\n').find((l) => l.startsWith('data: '));
  return JSON.parse(data ? data.slice(6) : text);
}

describe('MCP over Streamable HTTP', () => {
  it('lists exactly the two tools, searches and executes with an API key in x-service-key', async () => {
    const { client, transport } = await httpClient(t, t.keys.admin);
    expect(transport.sessionId).toMatch(/^[0-9a-f-]{36}$/);
    expect((await client.listTools()).tools.map((x) => x.name).sort()).toEqual(['execute', 'search']);
    const found = await search(client, 'record a deployment');
    expect(found.results[0].operationId).toBe('deployments.create');

    const r = await execute(
      client,
      `const created = await api.deployments.create({ deployment_id: 'http-1', service: 'web', environment: 'staging', status: 'building' });
       const list = await api.deployments.list({ environment: 'staging' });
       const project = await api.projects.get();
       return { created, list, project };`,
    );
    expect(r.error).toBeNull();
    const rest = await api(t, 'GET', `${P}/deployments?environment=staging`, { key: t.keys.admin });
    expect(r.result.list).toEqual(rest.body);
    expect(rest.body.data[0]).toEqual(r.result.created);
    expect(r.result.project).toEqual((await api(t, 'GET', P, { key: t.keys.admin })).body);
  });

  it('accepts the key as Authorization: Bearer too, and feedback written over MCP reads back over REST', async () => {
    const { client } = await httpClient(t, t.keys.admin, { bearer: true });
    const r = await execute(client, `const f = await api.feedback.create({ message: 'via http' }); return { f, list: await api.feedback.list({ limit: 5 }) };`);
    expect(r.error).toBeNull();
    const rest = await api(t, 'GET', `${P}/feedback?limit=5`, { key: t.keys.admin });
    expect(r.result.list).toEqual(rest.body);
    expect(rest.body.data.map((x: { id: string }) => x.id)).toContain(r.result.f.id);
  });

  it('answers 401 with a WWW-Authenticate pointing at the protected-resource metadata without a credential', async () => {
    const res = await post(initialize, {});
    expect(res.status).toBe(401);
    expect(res.headers.get('www-authenticate')).toMatch(/^Bearer /);
    expect(res.headers.get('www-authenticate')).toContain('resource_metadata="http://sightline.test:8080/.well-known/oauth-protected-resource/mcp"');
    expect(JSON.parse(res.text)).toMatchObject({ type: 'authentication_error', code: 'unauthenticated' });
  });

  it('answers 401 (invalid_token) to an unknown key, on GET and DELETE too', async () => {
    const res = await post(initialize, { 'x-service-key': 'sl_not_a_key' });
    expect(res.status).toBe(401);
    expect(res.headers.get('www-authenticate')).toContain('error="invalid_token"');
    for (const method of ['GET', 'DELETE']) {
      const r = await fetch(`${t.url}/mcp`, { method, headers: { accept: 'text/event-stream' } });
      expect(r.status, method).toBe(401);
      expect(r.headers.get('www-authenticate')).toContain('resource_metadata=');
    }
  });

  it('binds a session to its principal: another key presenting the session id is refused with 404', async () => {
    const { client, transport } = await httpClient(t, t.keys.admin);
    const sid = transport.sessionId!;
    const list = { jsonrpc: '2.0', id: 2, method: 'tools/list', params: {} };
    const session = { 'mcp-session-id': sid, 'mcp-protocol-version': '2025-06-18' };

    const other = await post(list, { ...session, 'x-service-key': t.mintKey(['*']) });
    expect(other.status).toBe(404);
    expect(other.text).not.toContain('execute');
    const otherProject = await post(list, { ...session, 'x-service-key': t.otherProject.adminKey });
    expect(otherProject.status).toBe(404);
    const call = { jsonrpc: '2.0', id: 3, method: 'tools/call', params: { name: 'execute', arguments: { code: 'return await api.projects.list()' } } };
    const hijack = await post(call, { ...session, 'x-service-key': t.otherProject.adminKey });
    expect(hijack.status).toBe(404);
    expect(hijack.text).not.toContain('"result"');

    // The owner still uses it.
    const own = await post(list, { ...session, 'x-service-key': t.keys.admin });
    expect(own.status).toBe(200);
    expect(message(own.text).result.tools).toHaveLength(2);
    expect((await client.listTools()).tools).toHaveLength(2);
  });

  it('runs tool calls as the principal of each request: a key revoked mid-session stops at once', async () => {
    const key = t.mintKey(['*']);
    const { client, transport } = await httpClient(t, key);
    expect((await execute(client, 'return 1')).result).toBe(1);
    const row = t.s.services.identity.apiKeyBySecretHash((await import('../../src/domain/identity/secrets.js')).hashSecret(key))!;
    t.s.services.identity.revokeApiKey(t.projectId, row.id, Date.now());
    const res = await post({ jsonrpc: '2.0', id: 9, method: 'tools/list', params: {} }, { 'mcp-session-id': transport.sessionId!, 'mcp-protocol-version': '2025-06-18', 'x-service-key': key });
    expect(res.status).toBe(401);
  });

  it('refuses a request whose Origin is not allowed (DNS-rebinding protection)', async () => {
    const res = await post(initialize, { 'x-service-key': t.keys.admin, origin: 'http://evil.example.com' });
    expect(res.status).toBe(403);
    expect(JSON.parse(res.text)).toMatchObject({ type: 'permission_error', code: 'origin_not_allowed' });
    const nullOrigin = await post(initialize, { 'x-service-key': t.keys.admin, origin: 'null' });
    expect(nullOrigin.status).toBe(403);
  });

  it('accepts configured origins, its own base URL origin, and requests without Origin', async () => {
    for (const origin of [ALLOWED, 'http://sightline.test:8080']) {
      const res = await post(initialize, { 'x-service-key': t.keys.admin, origin });
      expect(res.status, origin).toBe(200);
      expect(res.headers.get('access-control-allow-origin')).toBe(origin);
      expect(res.headers.get('mcp-session-id')).toBeTruthy();
    }
    const none = await post(initialize, { 'x-service-key': t.keys.admin });
    expect(none.status).toBe(200);
    expect(message(none.text).result.serverInfo.name).toBe('sightline');
  });

  it('answers a CORS preflight from an allowed origin and refuses one from another', async () => {
    const ok = await fetch(`${t.url}/mcp`, { method: 'OPTIONS', headers: { origin: ALLOWED, 'access-control-request-method': 'POST' } });
    expect(ok.status).toBe(204);
    expect(ok.headers.get('access-control-allow-headers')).toContain('mcp-session-id');
    const bad = await fetch(`${t.url}/mcp`, { method: 'OPTIONS', headers: { origin: 'https://evil.example.com' } });
    expect(bad.status).toBe(403);
  });

  it('requires a session id after initialize, and 404s an unknown one', async () => {
    const noSession = await post({ jsonrpc: '2.0', id: 2, method: 'tools/list', params: {} }, { 'x-service-key': t.keys.admin });
    expect(noSession.status).toBe(400);
    const unknown = await post({ jsonrpc: '2.0', id: 2, method: 'tools/list', params: {} }, { 'x-service-key': t.keys.admin, 'mcp-session-id': 'd4c6d7e2-0000-4000-8000-000000000000' });
    expect(unknown.status).toBe(404);
  });

  it('answers a JSON-RPC parse error to a body that is not JSON', async () => {
    const res = await fetch(`${t.url}/mcp`, { method: 'POST', headers: { ...MCP_HEADERS, 'x-service-key': t.keys.admin }, body: '{nope' });
    expect(res.status).toBe(400);
    expect(((await res.json()) as { error: { code: number } }).error.code).toBe(-32700);
  });

  it('ends a session on DELETE; the id is then unknown', async () => {
    const { transport } = await httpClient(t, t.keys.admin);
    const sid = transport.sessionId!;
    await transport.terminateSession();
    const after = await post({ jsonrpc: '2.0', id: 2, method: 'tools/list', params: {} }, { 'x-service-key': t.keys.admin, 'mcp-session-id': sid, 'mcp-protocol-version': '2025-06-18' });
    expect(after.status).toBe(404);
  });
});
