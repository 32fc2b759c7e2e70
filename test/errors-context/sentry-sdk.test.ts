/**
 * The real @sentry/node SDK (in a child process, as an app runs it) with users on the scope: error
 * events keep the Sentry `user` as sent and never get one invented, the group counts distinct users,
 * errors.list and events.search find the events by user, and feedback keeps the scope's user.
 */
import { execFile } from 'node:child_process';
import { promisify } from 'node:util';
import { join } from 'node:path';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { startTestServer, type TestServer } from '../helpers/server.js';
import { rest } from '../operations/errors-fixtures.js';

const run = promisify(execFile);
let t: TestServer;

beforeAll(async () => {
  t = await startTestServer();
  const dsn = `http://${t.keys.ingest}@${new URL(t.url).host}/ingest/${t.projectId}`;
  await run(process.execPath, [join(import.meta.dirname, 'fixtures/sentry-users.mjs')], { env: { ...process.env, SIGHTLINE_DSN: dsn }, timeout: 30_000 });
}, 60_000);
afterAll(() => t?.close());

describe('@sentry/node users', () => {
  it('counts distinct users on the group beside its events, and finds it by user id', async () => {
    const r = await rest(t, 'GET', '/errors?environment=canary');
    expect(r.status).toBe(200);
    const g = r.body.data.find((x: { type: string }) => x.type === 'TypeError');
    expect(g).toMatchObject({ event_count: 4, user_count: 2, first_release: 'shop@3.1.0', last_release: 'shop@3.1.0', environments: ['canary'] });
    expect((await rest(t, 'GET', '/errors?user_id=cust-42')).body.data.map((x: { id: string }) => x.id)).toEqual([g.id]);
    expect((await rest(t, 'GET', '/errors?user_id=cust-99')).body.total).toBe(0);
  });

  it('keeps id, email, username and ip_address as the SDK sent them, and invents none for an anonymous event', async () => {
    const search = async (q: string) => (await rest(t, 'GET', `/events/search?query=${encodeURIComponent(q)}`)).body.data as { user: Record<string, string | null> | null; message: string }[];
    const ana = await search('user.id:cust-17');
    expect(ana).toHaveLength(2);
    expect(ana.find((e) => e.user?.ip_address)?.user).toEqual({ id: 'cust-17', email: 'ana@example.com', username: 'ana', ip_address: '203.0.113.9' });
    expect(await search('user.email:bo@example.com')).toHaveLength(1);
    expect(await search('user.username:ana')).toHaveLength(2);
    const all = await search('type:TypeError');
    expect(all).toHaveLength(4);
    const anonymous = all.filter((e) => e.message.includes('WINTER') || e.user === null);
    expect(anonymous).toHaveLength(1);
    expect(anonymous[0]!.user).toBeNull(); // the SDK sent no user; none is made up
  });

  it('keeps the scope user on feedback: user id, and email and username', async () => {
    const r = await rest(t, 'GET', '/feedback');
    const fb = r.body.data.find((f: { message: string }) => f.message === 'Coupons never apply at checkout');
    expect(fb).toBeTruthy();
    expect(fb).toMatchObject({ user_id: 'cust-42', contact_email: 'bo@example.com' });
    expect(fb.metadata).toMatchObject({ 'user.email': 'bo@example.com', 'user.username': 'bo' });
  });
});
