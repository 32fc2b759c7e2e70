/**
 * Releases, environments, services, users and window counts on error groups (issue 11 item 2), over
 * the real ingest HTTP path and REST: group rows carry first/last release, the environments and
 * services a group was seen in, lifetime and in-window event and user counts; errors.list filters by
 * environment seen later, release, first_release and user_id; errors.get answers to the short id and
 * shows a compact stack trace and a tag breakdown instead of the raw payload; events.search matches
 * user.id / user.email / user.username; OTLP exceptions keep enduser.id.
 */
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { startTestServer, type TestServer } from '../helpers/server.js';
import { eventId, rest, sentryEvent, type EventSpec } from '../operations/errors-fixtures.js';

const H = 3_600_000;
const T0 = Date.UTC(2026, 5, 1, 12);
let t: TestServer;

/** A Sentry event with a `user` (as an SDK's scope sends it) through the store endpoint. */
async function send(e: EventSpec & { user?: Record<string, unknown>; context_line?: string }): Promise<string> {
  const body = sentryEvent({ event_id: eventId(), ...e });
  if (e.user) body.user = e.user;
  if (e.context_line) {
    const frames = (body.exception as { values: { stacktrace: { frames: Record<string, unknown>[] } }[] }).values[0]!.stacktrace.frames;
    frames.at(-1)!.context_line = e.context_line;
  }
  const r = await fetch(`${t.url}/ingest/api/${t.projectId}/store/?sentry_key=${t.keys.ingest}`, { method: 'POST', body: JSON.stringify(body) });
  expect(r.status, await r.clone().text()).toBe(200);
  return body.event_id as string;
}

const ids = (b: { data: { id: string }[] }) => b.data.map((g) => g.id).sort();
const list = async (q: string) => {
  const r = await rest(t, 'GET', `/errors?status=all${q}`);
  expect(r.status, JSON.stringify(r.body)).toBe(200);
  return r.body;
};

let checkout: string; // production 1.0 → staging 1.1, three users
let search: string; // staging only, release 2.0, no user
let otlpGroup: string;

beforeAll(async () => {
  t = await startTestServer();
  const c = { type: 'TypeError', fn: 'checkout', service: 'shop' };
  await send({ ...c, at: T0 - 10 * H, environment: 'production', release: '1.0.0', user: { id: 'u-1', email: 'ana@example.com', username: 'ana' }, tags: { browser: 'Firefox' } });
  await send({ ...c, at: T0 - 9 * H, environment: 'production', release: '1.0.0', user: { id: 'u-2', email: 'bo@example.com' }, tags: { browser: 'Chrome' } });
  await send({ ...c, at: T0 - 8 * H, environment: 'production', release: '1.0.0', user: { id: 'u-1', email: 'ana@example.com' }, tags: { browser: 'Firefox' } });
  await send({
    ...c,
    service: 'worker',
    at: T0 - 2 * H,
    environment: 'staging',
    release: '1.1.0',
    user: { ip_address: '10.0.0.7' },
    tags: { browser: 'Firefox' },
    context_line: 'const total = cart.items.length;',
  });
  await send({ type: 'RangeError', fn: 'search', service: 'shop', at: T0 - 3 * H, environment: 'staging', release: '2.0.0' });
  const groups = (await list('')).data as { id: string; type: string }[];
  checkout = groups.find((g) => g.type === 'TypeError')!.id;
  search = groups.find((g) => g.type === 'RangeError')!.id;

  // OTLP: an exception event on a span whose attributes name the end user.
  const r = await fetch(`${t.url}/ingest/v1/traces`, {
    method: 'POST',
    headers: { 'x-service-key': t.keys.ingest, 'content-type': 'application/json' },
    body: JSON.stringify({
      resourceSpans: [
        {
          resource: { attributes: [{ key: 'service.name', value: { stringValue: 'billing' } }] },
          scopeSpans: [
            {
              spans: [
                {
                  traceId: 'ab'.repeat(16),
                  spanId: 'cd'.repeat(8),
                  name: 'POST /invoice',
                  kind: 2,
                  startTimeUnixNano: String(BigInt(T0 - H) * 1_000_000n),
                  endTimeUnixNano: String(BigInt(T0 - H + 5) * 1_000_000n),
                  status: { code: 2 },
                  attributes: [{ key: 'enduser.id', value: { stringValue: 'cust-9' } }],
                  events: [
                    {
                      name: 'exception',
                      timeUnixNano: String(BigInt(T0 - H) * 1_000_000n),
                      attributes: [
                        { key: 'exception.type', value: { stringValue: 'InvoiceError' } },
                        { key: 'exception.message', value: { stringValue: 'no tax rate' } },
                      ],
                    },
                  ],
                },
              ],
            },
          ],
        },
      ],
    }),
  });
  expect(r.status).toBe(200);
  otlpGroup = ((await list('')).data as { id: string; type: string }[]).find((g) => g.type === 'InvoiceError')!.id;
});
afterAll(() => t?.close());

describe('group rows', () => {
  it('carry first and last release, environments, services and lifetime event and user counts', async () => {
    const g = (await list('')).data.find((x: { id: string }) => x.id === checkout);
    expect(g).toMatchObject({
      event_count: 4,
      user_count: 3, // u-1, u-2 and the IP-only user; u-1 counted once
      window_event_count: 4,
      window_user_count: 3,
      first_release: '1.0.0',
      last_release: '1.1.0',
      environments: ['production', 'staging'],
      services: expect.arrayContaining(['shop', 'worker']),
      environment: 'production',
    });
    const s = (await list('')).data.find((x: { id: string }) => x.id === search);
    expect(s).toMatchObject({ user_count: 0, first_release: '2.0.0', last_release: '2.0.0', environments: ['staging'] });
  });

  it('count events and users inside the requested window beside the lifetime counts', async () => {
    const from = new Date(T0 - 9.5 * H).toISOString();
    const to = new Date(T0 - 7 * H).toISOString();
    const g = (await list(`&from=${from}&to=${new Date(T0).toISOString()}`)).data.find((x: { id: string }) => x.id === checkout);
    expect(g).toMatchObject({ event_count: 4, user_count: 3, window_event_count: 3, window_user_count: 3 });
    const d = await rest(t, 'GET', `/errors/${checkout}?from=${from}&to=${to}&include_replay=false`);
    expect(d.body).toMatchObject({ event_count: 4, user_count: 3, window_event_count: 2, window_user_count: 2 });
  });
});

describe('errors.list filters', () => {
  it('finds a group first seen in production by the environment it was later seen in', async () => {
    expect(ids(await list('&environment=staging'))).toEqual([checkout, search].sort());
    expect(ids(await list('&environment=production'))).toEqual([checkout, otlpGroup].sort()); // OTLP without an environment: production
    expect(ids(await list('&service=worker'))).toEqual([checkout]);
  });

  it('filters by release seen, first release and end user id', async () => {
    expect(ids(await list('&release=1.1.0'))).toEqual([checkout]);
    expect(ids(await list('&release=2.0.0'))).toEqual([search]);
    expect(ids(await list('&first_release=1.0.0'))).toEqual([checkout]);
    expect((await list('&first_release=1.1.0')).total).toBe(0);
    expect(ids(await list('&user_id=u-2'))).toEqual([checkout]);
    expect(ids(await list('&user_id=cust-9'))).toEqual([otlpGroup]);
    expect((await list('&user_id=nobody')).total).toBe(0);
  });

  it('counts a group under every environment it was seen in (facets)', async () => {
    const f = (await list('')).facets.environment as { value: string; count: number }[];
    expect(f.find((v) => v.value === 'staging')?.count).toBe(2);
    expect(f.find((v) => v.value === 'production')?.count).toBe(2);
    expect((await list('&service=shop')).facets.environment).toEqual([
      { value: 'staging', count: 2 },
      { value: 'production', count: 1 },
    ]);
  });
});

describe('errors.get', () => {
  it('answers to the short id as well as the UUID, in any case', async () => {
    const byId = await rest(t, 'GET', `/errors/${checkout}?include_replay=false`);
    const shortId = byId.body.short_id as string;
    expect(shortId).toMatch(/^TEST-[0-9A-Z]+$/);
    const byShort = await rest(t, 'GET', `/errors/${shortId}?include_replay=false`);
    expect(byShort.status).toBe(200);
    expect(byShort.body.id).toBe(checkout);
    expect((await rest(t, 'GET', `/errors/${shortId.toLowerCase()}?include_replay=false`)).body.id).toBe(checkout);
    expect((await rest(t, 'GET', '/errors/TEST-ZZZZ')).status).toBe(404);
    expect((await rest(t, 'GET', '/errors/OTHER-1')).status).toBe(404);
    // updates take the short id too
    const u = await rest(t, 'PATCH', `/errors/${shortId}`, { body: { priority: 'high' } });
    expect(u.status).toBe(200);
    expect(u.body).toMatchObject({ id: checkout, priority: 'high' });
  });

  it('shows a compact stack trace (in-app frames first, file:line function, source line) instead of the raw payload', async () => {
    const d = (await rest(t, 'GET', `/errors/${checkout}?include_replay=false`)).body;
    expect(d.latest_event).not.toHaveProperty('payload');
    const ex = d.stack_trace.exceptions[0];
    expect(ex.type).toBe('TypeError');
    expect(ex.frames.map((f: { in_app: boolean }) => f.in_app)).toEqual([true, true, false]);
    expect(ex.frames[0]).toMatchObject({ file: 'src/handlers.ts', line: 42, function: 'checkout', context_line: 'const total = cart.items.length;' });
    expect(d.stack_trace.text).toContain('at src/handlers.ts:42 checkout');
    expect(d.stack_trace.text).toContain('> const total = cart.items.length;');
    expect(d.latest_event.user).toEqual({ id: null, email: null, username: null, ip_address: '10.0.0.7' });
    const withPayload = (await rest(t, 'GET', `/errors/${checkout}?include_replay=false&include_payload=true`)).body;
    expect(withPayload.latest_event.payload.exception.values[0].type).toBe('TypeError');
  });

  it('breaks the group down by tag: environment, release and event tags with counts', async () => {
    const d = (await rest(t, 'GET', `/errors/${checkout}?include_replay=false`)).body;
    const tag = (k: string) => d.tags.find((x: { key: string }) => x.key === k);
    expect(tag('environment')).toEqual({ key: 'environment', total: 4, values: [{ value: 'production', count: 3 }, { value: 'staging', count: 1 }] });
    expect(tag('release').values).toEqual([{ value: '1.0.0', count: 3 }, { value: '1.1.0', count: 1 }]);
    expect(tag('browser')).toEqual({ key: 'browser', total: 4, values: [{ value: 'Firefox', count: 3 }, { value: 'Chrome', count: 1 }] });
    expect(d.tags_sampled_events).toBe(4);
  });
});

describe('events.search by user', () => {
  const names = async (query: string) => {
    const r = await rest(t, 'GET', `/events/search?query=${encodeURIComponent(query)}&from=${new Date(T0 - 20 * H).toISOString()}&to=${new Date(T0).toISOString()}`);
    expect(r.status, JSON.stringify(r.body)).toBe(200);
    return r.body.data as { user: Record<string, string | null> | null; group_id: string }[];
  };

  it('matches user.id, user.email and user.username, and shows the user as sent', async () => {
    expect((await names('user.id:u-1')).length).toBe(2);
    const byEmail = await names('user.email:bo@example.com');
    expect(byEmail.length).toBe(1);
    expect(byEmail[0]!.user).toEqual({ id: 'u-2', email: 'bo@example.com', username: null, ip_address: null });
    expect((await names('user.username:ana')).length).toBe(1);
    expect((await names('user.id:cust-9'))[0]!.group_id).toBe(otlpGroup);
    // an event without a user has none invented
    const noUser = (await names('type:RangeError'))[0]!;
    expect(noUser.user).toBeNull();
  });
});
