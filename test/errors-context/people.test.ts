/**
 * People (issue 11 item 1) over REST: users.me says who the credential is, projects.listMembers lists
 * whom to assign, and errors.update takes a member id, a member's email, or "me" from an OAuth user
 * (an API key saying "me" gets a clear 400; another organization's user is refused).
 */
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { api, startTestServer, type TestServer } from '../helpers/server.js';
import { rest, sendEvent } from '../operations/errors-fixtures.js';

let t: TestServer;
let group: string;
const bearer = (token: string) => ({ authorization: `Bearer ${token}` });

beforeAll(async () => {
  t = await startTestServer();
  await sendEvent(t, { type: 'TypeError', fn: 'pay', at: Date.now() - 60_000 });
  group = (await rest(t, 'GET', '/errors')).body.data[0].id;
});
afterAll(() => t?.close());

describe('users.me', () => {
  it('tells an OAuth user who they are: user, organizations with role, projects', async () => {
    const u = t.mintUserToken({ role: 'admin' });
    const r = await api(t, 'GET', '/v1/users/me', { headers: bearer(u.token) });
    expect(r.status, JSON.stringify(r.body)).toBe(200);
    expect(r.body).toMatchObject({
      kind: 'user',
      user: { id: u.userId, email: expect.stringMatching(/@test\.local$/), name: 'Test user' },
      api_key: null,
      organizations: [{ id: t.organizationId, name: 'Test org', role: 'admin' }],
      projects: [{ id: t.projectId, organization_id: t.organizationId, role: 'admin' }],
    });
    expect(JSON.stringify(r.body)).not.toContain('Other org');
  });

  it('tells an API key it is a key of one project, with its scopes and no role', async () => {
    const r = await api(t, 'GET', '/v1/users/me', { key: t.keys.admin });
    expect(r.status).toBe(200);
    expect(r.body).toMatchObject({
      kind: 'api_key',
      user: null,
      api_key: { id: expect.any(String), project_id: t.projectId },
      organizations: [{ id: t.organizationId, role: null }],
      projects: [{ id: t.projectId, role: null }],
    });
    expect(r.body.scopes.length).toBeGreaterThan(0);
    expect((await api(t, 'GET', '/v1/users/me')).status).toBe(401);
  });
});

describe('projects.listMembers', () => {
  it('lists id, name, email and role for a member\'s own token and for a key with project:write', async () => {
    const member = t.mintUserToken({ role: 'member' });
    const byMember = await api(t, 'GET', `/v1/projects/${t.projectId}/members`, { headers: bearer(member.token) });
    expect(byMember.status, JSON.stringify(byMember.body)).toBe(200);
    const me = byMember.body.data.find((m: { id: string }) => m.id === member.userId);
    expect(me).toMatchObject({ name: 'Test user', role: 'member', email: expect.stringMatching(/@test\.local$/) });
    expect(byMember.body.data[0]).toMatchObject({ email: 'owner@test.local', role: 'owner' });
    const byKey = await api(t, 'GET', `/v1/projects/${t.projectId}/members`, { key: t.keys.admin });
    expect(byKey.status).toBe(200);
    expect(byKey.body.data.map((m: { id: string }) => m.id)).toContain(member.userId);
  });

  it('refuses a key without project:write, another organization\'s user and another project\'s key', async () => {
    const reader = t.mintKey(['errors:read', 'errors:write']);
    const r = await api(t, 'GET', `/v1/projects/${t.projectId}/members`, { key: reader });
    expect(r.status).toBe(403);
    expect(r.body.code).toBe('insufficient_scope');
    const stranger = t.mintUserToken({ role: 'owner', orgId: t.otherProject.organizationId });
    expect((await api(t, 'GET', `/v1/projects/${t.projectId}/members`, { headers: bearer(stranger.token) })).status).toBe(403);
    expect((await api(t, 'GET', `/v1/projects/${t.projectId}/members`, { key: t.otherProject.adminKey })).status).toBe(404);
  });
});

describe('errors.update assigned_to', () => {
  const patch = (body: unknown, opts: { key?: string; headers?: Record<string, string> } = { key: undefined }) =>
    api(t, 'PATCH', `/v1/projects/${t.projectId}/errors/${group}`, { body, ...(opts.headers ? { headers: opts.headers } : { key: opts.key ?? t.keys.admin }) });

  it('takes "me" from an OAuth user token and assigns that user', async () => {
    const u = t.mintUserToken({ role: 'member' });
    const r = await patch({ assigned_to: 'me' }, { headers: bearer(u.token) });
    expect(r.status, JSON.stringify(r.body)).toBe(200);
    expect(r.body.assigned_to).toBe(u.userId);
  });

  it('answers an API key saying "me" with a clear 400 and changes nothing', async () => {
    const before = (await rest(t, 'GET', `/errors/${group}`)).body.assigned_to;
    const r = await patch({ assigned_to: 'me' });
    expect(r.status).toBe(400);
    expect(r.body).toMatchObject({ code: 'assignee_not_a_user', param: 'assigned_to' });
    expect(r.body.message).toMatch(/API key/);
    expect((await rest(t, 'GET', `/errors/${group}`)).body.assigned_to).toBe(before);
  });

  it('takes a member\'s email (any case) or user id', async () => {
    const owner = t.s.services.identity.userByEmail('owner@test.local')!;
    const r = await patch({ assigned_to: 'OWNER@test.local' });
    expect(r.status, JSON.stringify(r.body)).toBe(200);
    expect(r.body.assigned_to).toBe(owner.id);
    const m = t.mintUserToken({ role: 'member' });
    expect((await patch({ assigned_to: m.userId })).body.assigned_to).toBe(m.userId);
    expect((await patch({ assigned_to: null })).body.assigned_to).toBeNull();
  });

  it('refuses another organization\'s user by id or email, and an unknown email', async () => {
    const stranger = t.mintUserToken({ role: 'owner', orgId: t.otherProject.organizationId });
    const email = t.s.services.identity.userById(stranger.userId)!.email;
    for (const v of [stranger.userId, email, 'other@test.local', 'nobody@example.com']) {
      const r = await patch({ assigned_to: v });
      expect(r.status, v).toBe(400);
      expect(r.body.param).toBe('assigned_to');
    }
  });
});
