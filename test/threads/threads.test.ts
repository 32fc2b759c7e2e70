/**
 * Chat threads and messages over real HTTP (spec, "Chat thread and message" and "Chat threads"):
 * tenancy, idempotent replays, archive filters, the incident display-id filter, search, ordering
 * by sequence and author metadata.
 */
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { api, startTestServer, type TestServer } from '../helpers/server.js';

let t: TestServer;
const P = () => `/v1/projects/${t.projectId}`;

beforeAll(async () => {
  t = await startTestServer();
});
afterAll(async () => {
  await t?.close();
});

async function newThread(body: Record<string, unknown> = {}, key = t.keys.admin) {
  const r = await api(t, 'POST', `${P()}/threads`, { key, body });
  expect(r.status).toBe(201);
  return r.body;
}

describe('threads', () => {
  it('creates, reads and deletes a thread; another project gets 404 for it', async () => {
    const th = await newThread({ title: 'Checkout errors' });
    expect(th).toMatchObject({ title: 'Checkout errors', source: 'api', archived_at: null, message_count: 0, incident_id: null });
    expect(th.created_by).toMatch(/^api_key:/);

    expect((await api(t, 'GET', `${P()}/threads/${th.id}`, { key: t.keys.admin })).body.id).toBe(th.id);
    // The other project's key, on its own project path and on ours: the thread does not exist for it.
    const other = `/v1/projects/${t.otherProject.projectId}/threads/${th.id}`;
    expect((await api(t, 'GET', other, { key: t.otherProject.adminKey })).status).toBe(404);
    expect((await api(t, 'GET', `${other}/messages`, { key: t.otherProject.adminKey })).status).toBe(404);
    expect((await api(t, 'POST', `${other}/messages`, { key: t.otherProject.adminKey, body: { text: 'hi' } })).status).toBe(404);
    expect((await api(t, 'POST', `${other}/archive`, { key: t.otherProject.adminKey })).status).toBe(404);
    expect((await api(t, 'DELETE', other, { key: t.otherProject.adminKey })).status).toBe(404);
    expect((await api(t, 'GET', `${P()}/threads/${th.id}`, { key: t.otherProject.adminKey })).status).toBe(404);

    await api(t, 'POST', `${P()}/threads/${th.id}/messages`, { key: t.keys.admin, body: { text: 'first' } });
    const del = await api(t, 'DELETE', `${P()}/threads/${th.id}`, { key: t.keys.admin });
    expect(del.body).toEqual({ id: th.id, deleted: true });
    expect((await api(t, 'GET', `${P()}/threads/${th.id}`, { key: t.keys.admin })).status).toBe(404);
    expect((await api(t, 'GET', `${P()}/threads/${th.id}/messages`, { key: t.keys.admin })).status).toBe(404);
  });

  it('creating again with the same source and external thread id returns the existing thread', async () => {
    const a = await newThread({ source: 'slack', external_thread_id: '1712.0001', title: 'From Slack' });
    const again = await api(t, 'POST', `${P()}/threads`, { key: t.keys.admin, body: { source: 'slack', external_thread_id: '1712.0001', title: 'From Slack' } });
    expect(again.status).toBe(200);
    expect(again.body.id).toBe(a.id);
    // Another source with the same external id is another thread.
    expect((await newThread({ source: 'teams', external_thread_id: '1712.0001' })).id).not.toBe(a.id);
  });

  it('appends messages in sequence order with author metadata from the credential', async () => {
    const th = await newThread();
    const user = t.mintUserToken({ role: 'member' });
    const m1 = await api(t, 'POST', `${P()}/threads/${th.id}/messages`, { key: t.keys.admin, body: { text: 'one', author_name: 'Ana', author_image: 'https://img.example/ana.png' } });
    expect(m1.status).toBe(201);
    const m2 = await api(t, 'POST', `${P()}/threads/${th.id}/messages`, { headers: { authorization: `Bearer ${user.token}` }, body: { text: 'two' } });
    expect(m2.status).toBe(201);
    expect(m1.body).toMatchObject({ sequence: 1, role: 'user', text: 'one', author_name: 'Ana', author_image: 'https://img.example/ana.png', author_user_id: null, source: 'api' });
    expect(m1.body.author_key_id).toEqual(expect.any(String));
    expect(m2.body).toMatchObject({ sequence: 2, author_user_id: user.userId, author_key_id: null });
    expect(m2.body.author_name).toMatch(/@test\.local$/);

    const list = await api(t, 'GET', `${P()}/threads/${th.id}/messages`, { key: t.keys.admin });
    expect(list.body.data.map((m: { text: string }) => m.text)).toEqual(['one', 'two']);
    expect(list.body.next_after).toBeNull();
    const page = await api(t, 'GET', `${P()}/threads/${th.id}/messages?limit=1`, { key: t.keys.admin });
    expect(page.body.data.map((m: { sequence: number }) => m.sequence)).toEqual([1]);
    const next = await api(t, 'GET', `${P()}/threads/${th.id}/messages?limit=1&after=${page.body.next_after}`, { key: t.keys.admin });
    expect(next.body.data.map((m: { sequence: number }) => m.sequence)).toEqual([2]);

    const got = await api(t, 'GET', `${P()}/threads/${th.id}`, { key: t.keys.admin });
    expect(got.body.message_count).toBe(2);
    expect(got.body.last_message_at).not.toBeNull();
  });

  it('replaying the same message id, or the same source plus external message id, is idempotent', async () => {
    const th = await newThread();
    const path = `${P()}/threads/${th.id}/messages`;
    const a = await api(t, 'POST', path, { key: t.keys.admin, body: { id: 'client-msg-1', text: 'hello' } });
    const a2 = await api(t, 'POST', path, { key: t.keys.admin, body: { id: 'client-msg-1', text: 'hello' } });
    expect(a.status).toBe(201);
    expect(a2.status).toBe(200);
    expect(a2.body).toEqual(a.body);
    expect((await api(t, 'POST', path, { key: t.keys.admin, body: { id: 'client-msg-1', text: 'changed' } })).status).toBe(409);

    const b = await api(t, 'POST', path, { key: t.keys.admin, body: { source: 'slack', external_message_id: '1712.42', text: 'from slack' } });
    const b2 = await api(t, 'POST', path, { key: t.keys.admin, body: { source: 'slack', external_message_id: '1712.42', text: 'from slack' } });
    expect(b2.status).toBe(200);
    expect(b2.body.id).toBe(b.body.id);
    // The same external id from another source is another message.
    const c = await api(t, 'POST', path, { key: t.keys.admin, body: { source: 'teams', external_message_id: '1712.42', text: 'from teams' } });
    expect(c.status).toBe(201);

    const list = await api(t, 'GET', path, { key: t.keys.admin });
    expect(list.body.data.map((m: { sequence: number; text: string }) => [m.sequence, m.text])).toEqual([
      [1, 'hello'],
      [2, 'from slack'],
      [3, 'from teams'],
    ]);
  });

  it('archived threads leave the default list and come back when unarchived', async () => {
    const keep = await newThread({ title: 'stays active' });
    const arch = await newThread({ title: 'to archive' });
    const r = await api(t, 'POST', `${P()}/threads/${arch.id}/archive`, { key: t.keys.admin });
    expect(r.body.archived_at).not.toBeNull();
    const ids = async (q: string) => (await api(t, 'GET', `${P()}/threads${q}`, { key: t.keys.admin })).body.data.map((x: { id: string }) => x.id);
    expect(await ids('')).toContain(keep.id);
    expect(await ids('')).not.toContain(arch.id);
    expect(await ids('?status=archived')).toEqual([arch.id]);
    expect(await ids('?status=all')).toEqual(expect.arrayContaining([keep.id, arch.id]));
    // Archived threads can still be read.
    expect((await api(t, 'GET', `${P()}/threads/${arch.id}`, { key: t.keys.admin })).status).toBe(200);

    const un = await api(t, 'POST', `${P()}/threads/${arch.id}/unarchive`, { key: t.keys.admin });
    expect(un.body.archived_at).toBeNull();
    expect(await ids('')).toContain(arch.id);
    expect(await ids('?status=archived')).toEqual([]);
  });

  it('filters by incident, given its UUID or its display id INC-n', async () => {
    const inc = await api(t, 'POST', `${P()}/incidents`, { key: t.keys.admin, body: { title: 'Payments down', message: 'Looking into it.' } });
    expect(inc.status).toBe(201);
    const withIncident = await newThread({ title: 'war room', incident_id: inc.body.display_id });
    expect(withIncident.incident_id).toBe(inc.body.id);
    await newThread({ title: 'unrelated' });

    for (const id of [inc.body.id, inc.body.display_id, inc.body.display_id.toLowerCase()]) {
      const r = await api(t, 'GET', `${P()}/threads?incident_id=${id}`, { key: t.keys.admin });
      expect(r.status).toBe(200);
      expect(r.body.data.map((x: { id: string }) => x.id)).toEqual([withIncident.id]);
      expect(r.body.total).toBe(1);
    }
    expect((await api(t, 'GET', `${P()}/threads?incident_id=INC-999`, { key: t.keys.admin })).status).toBe(404);
    expect((await api(t, 'POST', `${P()}/threads`, { key: t.keys.admin, body: { incident_id: 'INC-999' } })).status).toBe(404);
    expect((await api(t, 'GET', `${P()}/threads?incident_id=nope`, { key: t.keys.admin })).status).toBe(400);
  });

  it('search finds threads by title or message text, with the first matching message', async () => {
    const byTitle = await newThread({ title: 'Latency on /checkout' });
    const byMessage = await newThread({ title: 'Misc' });
    await api(t, 'POST', `${P()}/threads/${byMessage.id}/messages`, { key: t.keys.admin, body: { text: 'nothing here' } });
    await api(t, 'POST', `${P()}/threads/${byMessage.id}/messages`, { key: t.keys.admin, body: { text: 'The CHECKOUT page times out' } });
    await newThread({ title: 'other topic' });

    const r = await api(t, 'GET', `${P()}/threads/search?q=checkout`, { key: t.keys.admin });
    expect(r.status).toBe(200);
    const hits = new Map(r.body.data.map((h: { thread: { id: string }; match: unknown }) => [h.thread.id, h.match]));
    expect([...hits.keys()].sort()).toEqual([byTitle.id, byMessage.id].sort());
    expect(hits.get(byTitle.id)).toBeNull();
    expect(hits.get(byMessage.id)).toMatchObject({ sequence: 2, text: 'The CHECKOUT page times out' });
    // LIKE wildcards in q match themselves.
    expect((await api(t, 'GET', `${P()}/threads/search?q=${encodeURIComponent('%')}`, { key: t.keys.admin })).body.data).toEqual([]);
    // Another project's search sees none of them.
    const other = await api(t, 'GET', `/v1/projects/${t.otherProject.projectId}/threads/search?q=checkout`, { key: t.otherProject.adminKey });
    expect(other.body.data).toEqual([]);
    expect((await api(t, 'GET', `${P()}/threads/search`, { key: t.keys.admin })).status).toBe(400);
  });

  it('a read-only key can read threads but not create or append', async () => {
    const th = await newThread();
    const ro = t.mintKey(['read']);
    expect((await api(t, 'GET', `${P()}/threads/${th.id}/messages`, { key: ro })).status).toBe(200);
    expect((await api(t, 'POST', `${P()}/threads`, { key: ro, body: {} })).status).toBe(403);
    expect((await api(t, 'POST', `${P()}/threads/${th.id}/messages`, { key: ro, body: { text: 'x' } })).status).toBe(403);
  });
});
