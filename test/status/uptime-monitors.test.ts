/**
 * HTTP uptime monitors against local servers the test starts (up, down, slow, wrong body, flapping),
 * run by the database-backed scheduler on an injected clock: states, results, incidents opened on
 * down and resolved on recovery, domain events, and the private-range guard.
 */
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import http from 'node:http';
import type { AddressInfo } from 'node:net';
import { api, startTestServer, type TestServer } from '../helpers/server.js';
import type { DomainEvent } from '../../src/core/events.js';

let t: TestServer;
let target: http.Server;
let base: string;
let clock = Date.parse('2026-03-01T12:00:00Z');
let flappyHealthy = false;
const events: DomainEvent[] = [];

beforeAll(async () => {
  target = http.createServer((req, res) => {
    if (req.url === '/up') return res.writeHead(200, { 'content-type': 'text/plain' }).end('all systems go');
    if (req.url === '/down') return res.writeHead(503).end('unavailable');
    if (req.url === '/slow') return void setTimeout(() => res.writeHead(200).end('all systems go'), 250);
    if (req.url === '/hang') return void setTimeout(() => res.writeHead(200).end('late'), 2000);
    if (req.url === '/body') return res.writeHead(200).end('maintenance mode');
    if (req.url === '/flappy') return res.writeHead(flappyHealthy ? 200 : 500).end(flappyHealthy ? 'all systems go' : 'boom');
    res.writeHead(404).end();
  });
  await new Promise<void>((r) => target.listen(0, '127.0.0.1', r));
  base = `http://127.0.0.1:${(target.address() as AddressInfo).port}`;
  t = await startTestServer({ now: () => clock, config: { monitors: { allowPrivate: '127.0.0.1/32', retentionDays: 90 } } });
  t.s.services.events.subscribe('*', (e) => events.push(e));
});
afterAll(async () => {
  await t.close();
  target.closeAllConnections();
  await new Promise((r) => target.close(r));
});

const P = () => `/v1/projects/${t.projectId}`;
const create = (body: Record<string, unknown>) => api(t, 'POST', `${P()}/monitors`, { key: t.keys.admin, body: { kind: 'http', interval_s: 60, ...body } });
const get = async (id: string) => (await api(t, 'GET', `${P()}/monitors/${id}`, { key: t.keys.admin })).body;

describe('HTTP uptime monitors', () => {
  const ids: Record<string, string> = {};

  it('checks each URL once when due and records state, status code and latency', async () => {
    for (const [name, path, extra] of [
      ['up', '/up', { body_contains: 'systems go' }],
      ['down', '/down', {}],
      ['slow', '/slow', { degraded_after_ms: 100, body_contains: 'systems go' }],
      ['hang', '/hang', { timeout_ms: 300 }],
      ['body', '/body', { body_contains: 'systems go' }],
      ['flappy', '/flappy', {}],
    ] as const) {
      const r = await create({ name, url: base + path, region: 'eu-test', ...extra });
      expect(r.status).toBe(201);
      expect(r.body).toMatchObject({ name, kind: 'http', state: 'up', http: { url: base + path, interval_s: 60, region: 'eu-test' } });
      ids[name] = r.body.id;
    }
    expect(await t.s.services.scheduler.runDue()).toBe(6);
    expect(await t.s.services.scheduler.runDue()).toBe(0); // next checks are a minute away

    expect((await get(ids.up!)).state).toBe('up');
    expect((await get(ids.down!)).state).toBe('down');
    expect((await get(ids.slow!)).state).toBe('degraded');
    expect((await get(ids.hang!)).state).toBe('down');
    expect((await get(ids.body!)).state).toBe('down');

    const results = async (id: string) => (await api(t, 'GET', `${P()}/monitors/${id}/results`, { key: t.keys.admin })).body.data;
    expect(await results(ids.up!)).toEqual([expect.objectContaining({ status: 'up', http_status: 200, region: 'eu-test', error: null })]);
    expect((await results(ids.up!))[0].latency_ms).toBeTypeOf('number');
    expect((await results(ids.down!))[0]).toMatchObject({ status: 'down', http_status: 503, error: expect.stringContaining('unexpected status 503') });
    expect((await results(ids.slow!))[0]).toMatchObject({ status: 'degraded', http_status: 200, error: expect.stringContaining('slow response') });
    expect((await results(ids.hang!))[0]).toMatchObject({ status: 'down', http_status: null, error: 'timed out after 300 ms' });
    expect((await results(ids.body!))[0]).toMatchObject({ status: 'down', http_status: 200, error: expect.stringContaining('does not contain') });
  });

  it('opens an incident (UUID and INC-n) when a monitor goes down and resolves it when it recovers', async () => {
    const open = (await api(t, 'GET', `${P()}/incidents?status=open&monitor_id=${ids.flappy}`, { key: t.keys.admin })).body.data;
    expect(open).toHaveLength(1);
    expect(open[0]).toMatchObject({ title: 'flappy is down', status: 'investigating', display_id: expect.stringMatching(/^INC-\d+$/), monitor_id: ids.flappy });
    expect((await get(ids.flappy!)).open_incident_id).toBe(open[0].id);
    expect(events).toContainEqual(expect.objectContaining({ type: 'monitor.down', monitorId: ids.flappy, incidentId: open[0].id }));

    flappyHealthy = true;
    clock += 60_000;
    await t.s.services.scheduler.runDue();
    expect((await get(ids.flappy!)).state).toBe('up');
    const inc = (await api(t, 'GET', `${P()}/incidents/${open[0].display_id}`, { key: t.keys.admin })).body;
    expect(inc).toMatchObject({ id: open[0].id, status: 'resolved', resolved_at: new Date(clock).toISOString() });
    expect(inc.updates.map((u: { status: string; author: string }) => [u.status, u.author])).toEqual([['investigating', 'monitor'], ['resolved', 'monitor']]);
    expect(events).toContainEqual(expect.objectContaining({ type: 'monitor.recovered', monitorId: ids.flappy, downForMs: 60_000, incidentId: open[0].id }));
    expect(events).toContainEqual(expect.objectContaining({ type: 'incident.resolved', incidentId: open[0].id }));
  });

  it('stops checking a paused monitor and resumes when unpaused', async () => {
    const r = await api(t, 'PATCH', `${P()}/monitors/${ids.up}`, { key: t.keys.admin, body: { paused: true } });
    expect(r.body).toMatchObject({ state: 'paused', paused: true });
    clock += 60_000;
    await t.s.services.scheduler.runDue();
    const results = (await api(t, 'GET', `${P()}/monitors/${ids.up}/results?from=${new Date(clock - 1000).toISOString()}`, { key: t.keys.admin })).body;
    expect(results.total).toBe(0);
    expect((await api(t, 'GET', `${P()}/monitors?state=paused`, { key: t.keys.admin })).body.data.map((m: { id: string }) => m.id)).toEqual([ids.up]);
    expect((await api(t, 'PATCH', `${P()}/monitors/${ids.up}`, { key: t.keys.admin, body: { paused: false } })).body.state).toBe('up');
  });

  it('refuses intervals under 30 seconds, fields of the other kind and unknown fields', async () => {
    expect((await create({ name: 'fast', url: base + '/up', interval_s: 10 })).body).toMatchObject({ code: 'invalid_parameter', param: 'interval_s' });
    expect((await create({ name: 'mixed', url: base + '/up', schedule: '* * * * *' })).body).toMatchObject({ code: 'invalid_parameter', param: 'schedule' });
    expect((await create({ name: 'x', url: base + '/up', color: 'red' })).status).toBe(400);
    expect((await create({ name: 'up', url: base + '/up' })).status).toBe(409);
  });

  it('deletes a monitor with its results and resolves the incident it left open', async () => {
    const inc = (await api(t, 'GET', `${P()}/incidents?status=open&monitor_id=${ids.down}`, { key: t.keys.admin })).body.data[0];
    expect((await api(t, 'DELETE', `${P()}/monitors/${ids.down}`, { key: t.keys.admin })).body).toEqual({ id: ids.down, deleted: true });
    expect((await api(t, 'GET', `${P()}/monitors/${ids.down}/results`, { key: t.keys.admin })).status).toBe(404);
    expect((await api(t, 'GET', `${P()}/incidents/${inc.id}`, { key: t.keys.admin })).body).toMatchObject({ status: 'resolved', monitor_id: null });
    expect(t.s.services.scheduler.get('monitor.check', ids.down!)).toBeUndefined();
  });

  it('keeps another project\'s monitors invisible', async () => {
    expect((await api(t, 'GET', `/v1/projects/${t.otherProject.projectId}/monitors/${ids.up}`, { key: t.otherProject.adminKey })).status).toBe(404);
    expect((await api(t, 'DELETE', `/v1/projects/${t.otherProject.projectId}/monitors/${ids.up}`, { key: t.otherProject.adminKey })).status).toBe(404);
  });
});

describe('the private-range guard', () => {
  let strict: TestServer;
  beforeAll(async () => {
    strict = await startTestServer({ now: () => clock });
  });
  afterAll(() => strict.close());

  it('refuses a private address at creation unless the operator allows it', async () => {
    for (const url of ['http://127.0.0.1:9/', 'http://10.1.2.3/', 'http://169.254.169.254/latest/meta-data', 'http://[::1]:8080/']) {
      const r = await api(strict, 'POST', `/v1/projects/${strict.projectId}/monitors`, { key: strict.keys.admin, body: { name: url, kind: 'http', url } });
      expect(r.status, url).toBe(400);
      expect(r.body.code).toBe('address_not_allowed');
    }
  });

  it('refuses a host name that resolves to a private address when the check runs', async () => {
    const r = await api(strict, 'POST', `/v1/projects/${strict.projectId}/monitors`, { key: strict.keys.admin, body: { name: 'local', kind: 'http', url: `http://localhost:${new URL(base).port}/up` } });
    expect(r.status).toBe(201);
    await strict.s.services.scheduler.runDue();
    const res = (await api(strict, 'GET', `/v1/projects/${strict.projectId}/monitors/${r.body.id}/results`, { key: strict.keys.admin })).body.data;
    expect(res[0]).toMatchObject({ status: 'down', error: expect.stringContaining('SIGHTLINE_MONITOR_ALLOW_PRIVATE') });
  });
});
