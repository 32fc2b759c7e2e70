/**
 * Privilege and credential kinds (issue 10 items 5 and 6): a key changes or revokes only keys it
 * outranks; feedback capture needs a key of the project; a removed member loses project access
 * with 403, as the spec's error table says ("403 missing scope or project access").
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

async function keyIdOf(label: string): Promise<string> {
  const res = await api(t, 'GET', `${P}/api-keys`, { key: t.keys.admin });
  return res.body.data.find((k: { label: string }) => k.label === label).id;
}

describe('apiKeys.update and apiKeys.delete', () => {
  it('refuse a project:write key changing or revoking a `*` key, and change nothing', async () => {
    const writer = t.mintKey(['project:write'], undefined, { label: 'writer' });
    t.mintKey(['*'], undefined, { label: 'root' });
    const rootId = await keyIdOf('root');
    const patch = await api(t, 'PATCH', `${P}/api-keys/${rootId}`, { key: writer, body: { scopes: ['project:write'] } });
    expect(patch.status).toBe(403);
    expect(patch.body.code).toBe('key_outranks_credential');
    const del = await api(t, 'DELETE', `${P}/api-keys/${rootId}`, { key: writer });
    expect(del.status).toBe(403);
    const after = await api(t, 'GET', `${P}/api-keys/${rootId}`, { key: t.keys.admin });
    expect(after.body.scopes).toEqual(['*']);
  });

  it('let a key change and revoke keys whose scopes it holds', async () => {
    const writer = t.mintKey(['project:write', 'read'], undefined, { label: 'writer2' });
    t.mintKey(['read'], undefined, { label: 'reader' });
    const id = await keyIdOf('reader');
    const patch = await api(t, 'PATCH', `${P}/api-keys/${id}`, { key: writer, body: { label: 'reader renamed' } });
    expect(patch.status).toBe(200);
    const del = await api(t, 'DELETE', `${P}/api-keys/${id}`, { key: writer });
    expect(del.status).toBe(200);
  });
});

describe('the principal cache', () => {
  it('lets a scope change and a revocation take effect on the very next request', async () => {
    const reader = t.mintKey(['errors:read'], undefined, { label: 'cached reader' });
    expect((await api(t, 'GET', `${P}/feedback`, { key: reader })).status).toBe(200);
    const id = await keyIdOf('cached reader');
    expect((await api(t, 'PATCH', `${P}/api-keys/${id}`, { key: t.keys.admin, body: { scopes: ['deployments:read'] } })).status).toBe(200);
    expect((await api(t, 'GET', `${P}/feedback`, { key: reader })).status).toBe(403);
    expect((await api(t, 'GET', `${P}/deployments`, { key: reader })).status).toBe(200);
    expect((await api(t, 'DELETE', `${P}/api-keys/${id}`, { key: t.keys.admin })).status).toBe(200);
    expect((await api(t, 'GET', `${P}/deployments`, { key: reader })).status).toBe(401);
  });
});

describe('feedback.create', () => {
  it('refuses an OAuth token, even one of an owner (403 api_key_required), and stores nothing', async () => {
    const owner = t.mintUserToken({ role: 'owner', scopes: ['*'] });
    const res = await api(t, 'POST', `${P}/feedback`, { headers: { authorization: `Bearer ${owner.token}` }, body: { message: 'from a token' } });
    expect(res.status, JSON.stringify(res.body)).toBe(403);
    expect(res.body.code).toBe('api_key_required');
    const list = await api(t, 'GET', `${P}/feedback?q=from%20a%20token`, { key: t.keys.admin });
    expect(list.body.data).toEqual([]);
  });

  it('accepts an ingest key of the project', async () => {
    const res = await api(t, 'POST', `${P}/feedback`, { key: t.keys.ingest, body: { message: 'from a key' } });
    expect(res.status).toBe(201);
  });
});

describe('a member removed from the organization', () => {
  it('gets 403 on its project at once, where it had 200 before', async () => {
    const m = t.mintUserToken({ role: 'member', scopes: ['read'] });
    const auth = { authorization: `Bearer ${m.token}` };
    expect((await api(t, 'GET', `${P}/feedback`, { headers: auth })).status).toBe(200);
    m.removeMembership();
    const res = await api(t, 'GET', `${P}/feedback`, { headers: auth });
    expect(res.status).toBe(403);
    expect(res.body.code).toBe('project_access_denied');
    const revoked = t.mintUserToken({ role: 'member', scopes: ['read'] });
    revoked.revoke();
    expect((await api(t, 'GET', `${P}/feedback`, { headers: { authorization: `Bearer ${revoked.token}` } })).status).toBe(401);
  });
});
