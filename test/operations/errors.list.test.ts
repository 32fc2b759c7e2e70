/**
 * errors.list over REST, on groups built from hand-made Sentry events sent through the real ingest
 * path. The expected groups are written out below.
 */
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { startTestServer, type TestServer } from '../helpers/server.js';
import { groupOfEvent, rest, sendEvent } from './errors-fixtures.js';

const T0 = Date.parse('2026-03-10T12:00:00.000Z');
const H = 3_600_000;
const M = 60_000;
let t: TestServer;

/**
 * A  TypeError in charge()        checkout / production  3 events  -5h, -3h, -1h          error
 * B  DatabaseError in query()     api / production       2 events  -4h (error), -2h (fatal) → fatal
 * C  message "Cache miss storm"   api / staging          1 event   -30m                   warning
 * D  RangeError in resize()       worker / staging       4 events  -48h … -45h            error
 * E  SyntaxError in parse()       checkout / production  1 event   -20m, then resolved
 * (and a group in the other organization's project, never listed here)
 */
const G: Record<'A' | 'B' | 'C' | 'D' | 'E', string> = {} as never;

beforeAll(async () => {
  t = await startTestServer({ now: () => T0 });
  const a = await sendEvent(t, { type: 'TypeError', fn: 'charge', file: 'src/payments.ts', service: 'checkout', at: T0 - 5 * H });
  await sendEvent(t, { type: 'TypeError', fn: 'charge', file: 'src/payments.ts', service: 'checkout', at: T0 - 3 * H, value: 'other message' });
  await sendEvent(t, { type: 'TypeError', fn: 'charge', file: 'src/payments.ts', service: 'checkout', at: T0 - 1 * H, line: 99 });
  const b = await sendEvent(t, { type: 'DatabaseError', fn: 'query', file: 'src/db.ts', service: 'api', at: T0 - 4 * H });
  await sendEvent(t, { type: 'DatabaseError', fn: 'query', file: 'src/db.ts', service: 'api', at: T0 - 2 * H, level: 'fatal' });
  const c = await sendEvent(t, { message: 'Cache miss storm for key 123', level: 'warning', service: 'api', environment: 'staging', at: T0 - 30 * M });
  let d = '';
  for (let i = 0; i < 4; i++) d = await sendEvent(t, { type: 'RangeError', fn: 'resize', file: 'src/images.ts', service: 'worker', environment: 'staging', at: T0 - (48 - i) * H });
  const e = await sendEvent(t, { type: 'SyntaxError', fn: 'parse', file: 'src/parse.ts', service: 'checkout', at: T0 - 20 * M });
  await sendEvent(
    t,
    { type: 'TypeError', fn: 'charge', file: 'src/payments.ts', service: 'checkout', at: T0 - H },
    t.otherProject.projectId,
    t.mintKey(['events:ingest'], t.otherProject.projectId),
  );
  Object.assign(G, { A: groupOfEvent(t, a), B: groupOfEvent(t, b), C: groupOfEvent(t, c), D: groupOfEvent(t, d), E: groupOfEvent(t, e) });
  expect(new Set(Object.values(G)).size).toBe(5);
  expect((await rest(t, 'PATCH', `/errors/${G.E}`, { body: { status: 'resolved' } })).status).toBe(200);
  expect((await rest(t, 'PATCH', `/errors/${G.B}`, { body: { priority: 'critical' } })).status).toBe(200);
  expect((await rest(t, 'PATCH', `/errors/${G.D}`, { body: { priority: 'high' } })).status).toBe(200);
});
afterAll(() => t.close());

const ids = (body: { data: { id: string }[] }) => body.data.map((g) => g.id);
const list = async (qs = '') => {
  const r = await rest(t, 'GET', `/errors${qs}`);
  expect(r.status, JSON.stringify(r.body)).toBe(200);
  return r.body;
};

describe('errors.list', () => {
  it('lists unresolved groups by default, most recently seen first, with total, limit and offset', async () => {
    const body = await list();
    expect(ids(body)).toEqual([G.C, G.A, G.B, G.D]);
    expect(body).toMatchObject({ total: 4, limit: 50, offset: 0 });
  });

  it('returns every group field of the spec, with counts and times from the events', async () => {
    const a = (await list()).data.find((g: { id: string }) => g.id === G.A);
    expect(a).toEqual({
      id: G.A,
      short_id: expect.stringMatching(/^TEST-[0-9A-Z]+$/),
      title: 'TypeError: TypeError happened',
      type: 'TypeError',
      fingerprint: expect.stringMatching(/^[0-9a-f]{64}$/),
      status: 'unresolved',
      priority: 'medium',
      level: 'error',
      service_name: 'checkout',
      environment: 'production',
      assigned_to: null,
      ai_assigned: false,
      bookmarked: false,
      subscribed: false,
      event_count: 3,
      user_count: expect.any(Number),
      window_event_count: 3,
      window_user_count: expect.any(Number),
      first_release: expect.toBeOneOf([null, expect.any(String)]),
      last_release: expect.toBeOneOf([null, expect.any(String)]),
      environments: ['production'],
      services: ['checkout'],
      first_seen: new Date(T0 - 5 * H).toISOString(),
      last_seen: new Date(T0 - H).toISOString(),
    });
  });

  it('filters by status, and `all` lists every status', async () => {
    expect(ids(await list('?status=resolved'))).toEqual([G.E]);
    expect(ids(await list('?status=all'))).toEqual([G.E, G.C, G.A, G.B, G.D]);
    expect(ids(await list('?status=resolved,unresolved&limit=2'))).toEqual([G.E, G.C]);
    expect((await list('?status=muted')).total).toBe(0);
  });

  it('filters by priority, level, service and environment', async () => {
    expect(ids(await list('?priority=critical'))).toEqual([G.B]);
    expect(ids(await list('?priority=high,critical'))).toEqual([G.B, G.D]);
    expect(ids(await list('?level=fatal'))).toEqual([G.B]);
    expect(ids(await list('?level=warning,fatal'))).toEqual([G.C, G.B]);
    expect(ids(await list('?service=api'))).toEqual([G.C, G.B]);
    expect(ids(await list('?environment=staging'))).toEqual([G.C, G.D]);
    expect(ids(await list('?service=api&environment=production'))).toEqual([G.B]);
  });

  it('searches q case-insensitively over title, type, fingerprint, service and environment', async () => {
    expect(ids(await list('?q=databaseERROR'))).toEqual([G.B]);
    expect(ids(await list('?q=cache%20miss'))).toEqual([G.C]);
    expect(ids(await list('?q=STAGING'))).toEqual([G.C, G.D]);
    expect(ids(await list('?q=worker'))).toEqual([G.D]);
    const fp = (await list()).data.find((g: { id: string }) => g.id === G.A).fingerprint as string;
    expect(ids(await list(`?q=${fp.slice(10, 30).toUpperCase()}`))).toEqual([G.A]);
    expect((await list('?q=no-such-thing')).total).toBe(0);
  });

  it('windows on last_seen with from and to', async () => {
    const from = new Date(T0 - 3 * H).toISOString();
    const to = new Date(T0 - 90 * M).toISOString();
    expect(ids(await list(`?from=${from}&to=${to}`))).toEqual([G.B]);
    expect(ids(await list(`?from=${new Date(T0 - 50 * M).toISOString()}`))).toEqual([G.C]);
    const r = await rest(t, 'GET', `/errors?from=${new Date(T0).toISOString()}&to=${new Date(T0 - H).toISOString()}`);
    expect(r.status).toBe(400);
    expect(r.body.param).toBe('from');
  });

  it('sorts by first_seen, event_count and priority, highest first', async () => {
    expect(ids(await list('?sort=first_seen'))).toEqual([G.C, G.B, G.A, G.D]);
    expect(ids(await list('?sort=event_count'))).toEqual([G.D, G.A, G.B, G.C]);
    expect(ids(await list('?sort=priority'))).toEqual([G.B, G.D, G.C, G.A]);
    expect(ids(await list('?sort=last_seen'))).toEqual([G.C, G.A, G.B, G.D]);
  });

  it('pages with limit and offset over a stable order', async () => {
    const p1 = await list('?limit=2');
    const p2 = await list('?limit=2&offset=2');
    const p3 = await list('?limit=2&offset=4');
    expect(ids(p1)).toEqual([G.C, G.A]);
    expect(ids(p2)).toEqual([G.B, G.D]);
    expect(p3.data).toEqual([]);
    expect([p1.total, p2.total, p3.total]).toEqual([4, 4, 4]);
    expect(p2).toMatchObject({ limit: 2, offset: 2 });
  });

  it('counts facets per service, environment and level over the filtered set', async () => {
    const { facets } = await list();
    expect(facets.service).toEqual([
      { value: 'api', count: 2 },
      { value: 'checkout', count: 1 },
      { value: 'worker', count: 1 },
    ]);
    expect(facets.environment).toEqual([
      { value: 'production', count: 2 },
      { value: 'staging', count: 2 },
    ]);
    expect(facets.level).toEqual([
      { value: 'error', count: 2 },
      { value: 'fatal', count: 1 },
      { value: 'warning', count: 1 },
    ]);
    // status=all brings the resolved checkout group in
    expect((await list('?status=all')).facets.service).toContainEqual({ value: 'checkout', count: 2 });
  });

  it('computes each facet ignoring its own filter but honouring the others', async () => {
    const { data, facets } = await list('?service=api');
    expect(ids({ data })).toEqual([G.C, G.B]);
    expect(facets.service).toEqual([
      { value: 'api', count: 2 },
      { value: 'checkout', count: 1 },
      { value: 'worker', count: 1 },
    ]);
    expect(facets.environment).toEqual([
      { value: 'production', count: 1 },
      { value: 'staging', count: 1 },
    ]);
    expect(facets.level).toEqual([
      { value: 'fatal', count: 1 },
      { value: 'warning', count: 1 },
    ]);
  });

  it('rejects a bad status, sort or limit with 400 naming the parameter', async () => {
    for (const [qs, param] of [
      ['?status=open', 'status'],
      ['?sort=title', 'sort'],
      ['?limit=0', 'limit'],
      ['?limit=101', 'limit'],
      ['?priority=urgent', 'priority'],
      ['?from=yesterday', 'from'],
    ] as const) {
      const r = await rest(t, 'GET', `/errors${qs}`);
      expect(r.status, qs).toBe(400);
      // list parameters name the offending item (`status.0`)
      expect(String(r.body.param).split('.')[0], qs).toBe(param);
    }
  });

  it('lists only groups of the requested project', async () => {
    const other = await api2(`/v1/projects/${t.otherProject.projectId}/errors`, t.otherProject.adminKey);
    expect(other.total).toBe(1);
    expect(Object.values(G)).not.toContain(other.data[0].id);
    expect((await list('?status=all')).total).toBe(5);
  });
});

async function api2(path: string, key: string) {
  const r = await fetch(t.url + path, { headers: { 'x-service-key': key } });
  expect(r.status).toBe(200);
  return (await r.json()) as { total: number; data: { id: string }[] };
}
