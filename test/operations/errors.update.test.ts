/**
 * errors.update: strict body, at least one field, workflow fields, assignment versus the in-project
 * agent, and per-user bookmark/subscription that only an OAuth user session may set.
 */
import { randomUUID } from 'node:crypto';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { startTestServer, type TestServer } from '../helpers/server.js';
import type { UserPrincipal } from '../../src/core/principal.js';
import { AppError } from '../../src/core/errors.js';
import { groupOfEvent, rest, sendEvent } from './errors-fixtures.js';

const T0 = Date.parse('2026-05-05T08:00:00.000Z');
let t: TestServer;
let group: string;
let owner: UserPrincipal;
let member: UserPrincipal;
let stranger: UserPrincipal;

const userPrincipal = (userId: string, email: string): UserPrincipal => ({
  kind: 'user',
  userId,
  email,
  scopes: ['*'],
  roles: t.s.services.identity.rolesOfUser(userId),
  tokenId: null,
  clientId: null,
});

beforeAll(async () => {
  t = await startTestServer({ now: () => T0 });
  group = groupOfEvent(t, await sendEvent(t, { type: 'TimeoutError', fn: 'fetchRates', service: 'billing', at: T0 - 60_000 }));
  const ownerRow = t.s.services.identity.userByEmail('owner@test.local')!;
  owner = userPrincipal(ownerRow.id, ownerRow.email);
  const m = t.s.services.identity.createUser('member@test.local', 'member', 'x', T0);
  t.s.services.identity.addMembership(t.organizationId, m.id, 'member', T0);
  member = userPrincipal(m.id, m.email);
  const o = t.s.services.identity.userByEmail('other@test.local')!;
  stranger = userPrincipal(o.id, o.email);
});
afterAll(() => t.close());

const patch = (body: unknown, id = group) => rest(t, 'PATCH', `/errors/${id}`, { body });
const stored = () => t.s.services.errorGroups.get(t.projectId, group, null)!;
const userStates = () => t.s.db.prepare('SELECT user_id, bookmarked, subscribed FROM error_group_user_state WHERE group_id = ? ORDER BY user_id').all(group);
const invokeAs = async (p: UserPrincipal, opId: string, input: Record<string, unknown>) =>
  (await t.s.core.invoke(opId, { project_id: t.projectId, ...input }, p)).value as Record<string, any>;

describe('errors.update', () => {
  it('changes status and priority and returns the updated group', async () => {
    const r = await patch({ status: 'muted', priority: 'high' });
    expect(r.status, JSON.stringify(r.body)).toBe(200);
    expect(r.body).toMatchObject({ id: group, status: 'muted', priority: 'high', culprit: expect.any(String) });
    expect(stored()).toMatchObject({ status: 'muted', priority: 'high' });
    const back = await patch({ status: 'unresolved' });
    expect(back.body).toMatchObject({ status: 'unresolved', priority: 'high' });
  });

  it('rejects an unknown field with 400 unknown_field and changes nothing', async () => {
    const before = stored();
    const r = await patch({ status: 'resolved', colour: 'red' });
    expect(r.status).toBe(400);
    expect(r.body).toMatchObject({ code: 'unknown_field', param: 'colour' });
    expect(stored().status).toBe(before.status);
  });

  it('rejects a body with none of the fields', async () => {
    const r = await patch({});
    expect(r.status).toBe(400);
    expect(r.body.code).toBe('empty_update');
    expect(r.body.message).toMatch(/at least one/);
  });

  it('rejects invalid values naming the field', async () => {
    for (const [body, param] of [
      [{ status: 'closed' }, 'status'],
      [{ priority: 'urgent' }, 'priority'],
      [{ assigned_to: 7 }, 'assigned_to'],
      [{ bookmarked: 'yes' }, 'bookmarked'],
    ] as const) {
      const r = await patch(body);
      expect(r.status, JSON.stringify(body)).toBe(400);
      expect(r.body.param).toBe(param);
    }
  });

  it('answers 404 for a group that does not exist in the project', async () => {
    expect((await patch({ status: 'resolved' }, randomUUID())).status).toBe(404);
    expect((await patch({ status: 'resolved' }, 'nope')).status).toBe(404);
  });

  it('assigns to a member of the organization and refuses anyone else', async () => {
    const r = await patch({ assigned_to: member.userId });
    expect(r.status).toBe(200);
    expect(r.body).toMatchObject({ assigned_to: member.userId, ai_assigned: false });
    const bad = await patch({ assigned_to: stranger.userId });
    expect(bad.status).toBe(400);
    expect(bad.body.param).toBe('assigned_to');
    expect(stored().assigned_to).toBe(member.userId);
  });

  it('clears ai_assigned when a human sets assigned_to, even to null', async () => {
    expect(t.s.services.errorGroups.assignToAgent(t.projectId, group, T0)).toBe(true);
    let r = await rest(t, 'GET', `/errors/${group}?include_replay=false`);
    expect(r.body).toMatchObject({ assigned_to: null, ai_assigned: true });

    r = await patch({ assigned_to: null });
    expect(r.status).toBe(200);
    expect(r.body).toMatchObject({ assigned_to: null, ai_assigned: false });

    t.s.services.errorGroups.assignToAgent(t.projectId, group, T0);
    r = await patch({ assigned_to: owner.userId });
    expect(r.body).toMatchObject({ assigned_to: owner.userId, ai_assigned: false });

    // other fields leave the agent in charge
    t.s.services.errorGroups.assignToAgent(t.projectId, group, T0);
    r = await patch({ priority: 'low' });
    expect(r.body).toMatchObject({ assigned_to: null, ai_assigned: true, priority: 'low' });
  });

  it('refuses bookmarked and subscribed from an API key with 403 user_session_required, changing nothing', async () => {
    const before = stored();
    for (const body of [{ bookmarked: true }, { subscribed: true }, { subscribed: false, status: 'resolved' }]) {
      const r = await patch(body);
      expect(r.status, JSON.stringify(body)).toBe(403);
      expect(r.body).toMatchObject({ type: 'permission_error', code: 'user_session_required' });
      expect(r.body.message).toMatch(/OAuth user session/);
    }
    expect(stored().status).toBe(before.status);
    expect(userStates()).toEqual([]);
  });

  it('stores bookmarked and subscribed per user for an OAuth user session', async () => {
    const out = await invokeAs(owner, 'errors.update', { error_group_id: group, bookmarked: true });
    expect(out).toMatchObject({ bookmarked: true, subscribed: false });
    await invokeAs(owner, 'errors.update', { error_group_id: group, subscribed: true });
    await invokeAs(member, 'errors.update', { error_group_id: group, subscribed: true });

    expect(await invokeAs(owner, 'errors.get', { error_group_id: group, include_replay: false })).toMatchObject({ bookmarked: true, subscribed: true });
    expect(await invokeAs(member, 'errors.get', { error_group_id: group })).toMatchObject({ bookmarked: false, subscribed: true });
    const listed = await invokeAs(owner, 'errors.list', {});
    expect(listed.data.find((g: { id: string }) => g.id === group)).toMatchObject({ bookmarked: true, subscribed: true });

    // an API key has no user: it always sees false
    const viaKey = await rest(t, 'GET', `/errors/${group}?include_replay=false`);
    expect(viaKey.body).toMatchObject({ bookmarked: false, subscribed: false });

    // unsetting one field keeps the other
    expect(await invokeAs(owner, 'errors.update', { error_group_id: group, bookmarked: false })).toMatchObject({ bookmarked: false, subscribed: true });
  });

  it('keeps a user outside the organization out (403 project_access_denied, spec Errors: "missing project access")', async () => {
    await expect(t.s.core.invoke('errors.update', { project_id: t.projectId, error_group_id: group, bookmarked: true }, stranger)).rejects.toSatisfy(
      (e: unknown) => e instanceof AppError && e.status === 403 && e.code === 'project_access_denied',
    );
  });
});
