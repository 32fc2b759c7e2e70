/**
 * errors.listRelatedTraces (events carrying trace ids + spans received over OTLP) and
 * errors.listSuspectCommits (deployments recorded through deployments.create).
 */
import { randomUUID } from 'node:crypto';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { startTestServer, type TestServer } from '../helpers/server.js';
import { groupOfEvent, hex, rest, sendEvent, sendSpans } from './errors-fixtures.js';

const T0 = Date.parse('2026-07-15T15:00:00.000Z');
const H = 3_600_000;
const M = 60_000;
let t: TestServer;

const T1 = hex(0x7101);
const T2 = hex(0x7102);
const T3 = hex(0x7103);
const T4 = hex(0x7104);
const CHECKOUT = { type: 'TypeError', fn: 'charge', file: 'src/payments.ts', service: 'checkout' } as const;
let group = '';
let other = '';
let dup = '';
let worker = '';

beforeAll(async () => {
  t = await startTestServer({ now: () => T0 });
  // group: first event at -5h (no trace), then T1 at -3h and -1h, T2 at -2h
  group = groupOfEvent(t, await sendEvent(t, { ...CHECKOUT, at: T0 - 5 * H }));
  await sendEvent(t, { ...CHECKOUT, at: T0 - 3 * H, trace_id: T1 });
  await sendEvent(t, { ...CHECKOUT, at: T0 - 2 * H, trace_id: T2 });
  await sendEvent(t, { ...CHECKOUT, at: T0 - 1 * H, trace_id: T1 });
  // another group in trace T3; a future duplicate in trace T4
  other = groupOfEvent(t, await sendEvent(t, { type: 'OtherError', fn: 'x', service: 'checkout', at: T0 - H, trace_id: T3 }));
  dup = groupOfEvent(t, await sendEvent(t, { type: 'TypeError', fn: 'chargeAgain', service: 'checkout', at: T0 - 30 * M, trace_id: T4 }));
  worker = groupOfEvent(t, await sendEvent(t, { type: 'JobError', fn: 'run', service: 'worker', at: T0 - H }));

  // T1 has spans: a root server span of 250 ms and a failing child; T2 has none.
  await sendSpans(t, [
    { trace_id: T1, span_id: hex(1, 16), name: 'POST /checkout', service: 'checkout', start: T0 - H - 100, end: T0 - H + 150 },
    { trace_id: T1, span_id: hex(2, 16), parent_span_id: hex(1, 16), name: 'charge card', service: 'payments', start: T0 - H - 50, end: T0 - H + 100, error: true },
  ]);
});
afterAll(() => t.close());

describe('errors.listRelatedTraces', () => {
  it('lists the distinct traces of the group\'s events, newest first, with span summaries where spans exist', async () => {
    const r = await rest(t, 'GET', `/errors/${group}/traces`);
    expect(r.status, JSON.stringify(r.body)).toBe(200);
    expect(r.body).toMatchObject({ total: 2, limit: 50, offset: 0 });
    expect(r.body.data).toEqual([
      {
        trace_id: T1,
        event_count: 2,
        first_event_at: new Date(T0 - 3 * H).toISOString(),
        last_event_at: new Date(T0 - H).toISOString(),
        root_span_name: 'POST /checkout',
        service_name: 'checkout',
        duration_ms: 250,
        span_count: 2,
        error_count: 1,
        started_at: new Date(T0 - H - 100).toISOString(),
      },
      {
        trace_id: T2,
        event_count: 1,
        first_event_at: new Date(T0 - 2 * H).toISOString(),
        last_event_at: new Date(T0 - 2 * H).toISOString(),
        root_span_name: null,
        service_name: null,
        duration_ms: null,
        span_count: 0,
        error_count: 0,
        started_at: null,
      },
    ]);
  });

  it('windows on event time and pages', async () => {
    const from = new Date(T0 - 150 * M).toISOString();
    const r = await rest(t, 'GET', `/errors/${group}/traces?from=${from}`);
    expect(r.body.data.map((x: { trace_id: string; event_count: number }) => [x.trace_id, x.event_count])).toEqual([
      [T1, 1],
      [T2, 1],
    ]);
    const to = new Date(T0 - 150 * M).toISOString();
    expect((await rest(t, 'GET', `/errors/${group}/traces?to=${to}`)).body.data.map((x: { trace_id: string }) => x.trace_id)).toEqual([T1]);
    const page2 = await rest(t, 'GET', `/errors/${group}/traces?limit=1&offset=1`);
    expect(page2.body).toMatchObject({ total: 2, limit: 1, offset: 1 });
    expect(page2.body.data.map((x: { trace_id: string }) => x.trace_id)).toEqual([T2]);
  });

  it('includes traces of events of merged duplicates', async () => {
    expect((await rest(t, 'POST', `/errors/${group}/merge`, { body: { duplicate_error_group_ids: [dup] } })).status).toBe(200);
    const r = await rest(t, 'GET', `/errors/${group}/traces`);
    expect(r.body.data.map((x: { trace_id: string }) => x.trace_id)).toEqual([T4, T1, T2]);
    expect((await rest(t, 'POST', `/errors/${dup}/unmerge`)).status).toBe(200);
    expect((await rest(t, 'GET', `/errors/${group}/traces`)).body.total).toBe(2);
  });

  it('is empty for a group whose events carry no trace, and 404 for an unknown group', async () => {
    expect((await rest(t, 'GET', `/errors/${worker}/traces`)).body).toMatchObject({ data: [], total: 0 });
    expect((await rest(t, 'GET', `/errors/${other}/traces`)).body.data.map((x: { trace_id: string }) => x.trace_id)).toEqual([T3]);
    expect((await rest(t, 'GET', `/errors/${randomUUID()}/traces`)).status).toBe(404);
  });
});

describe('errors.listSuspectCommits', () => {
  const deploy = async (d: Record<string, unknown>) => {
    const r = await rest(t, 'POST', '/deployments', { body: { provider: 'github', ...d } });
    expect(r.status, JSON.stringify(r.body)).toBe(201);
  };
  const sha = (c: string) => c.repeat(40);

  beforeAll(async () => {
    const first = T0 - 5 * H; // the group's first event
    const at = (ms: number) => new Date(ms).toISOString();
    await deploy({ deployment_id: 'd1', service: 'checkout', environment: 'production', status: 'ready', commit_sha: sha('a'), branch: 'main', version: '2.1.0', started_at: at(first - 12 * M) });
    await deploy({ deployment_id: 'd2', service: 'checkout', environment: 'production', status: 'ready', commit_sha: sha('b'), branch: 'main', version: '2.0.0', started_at: at(first - 30 * H) });
    await deploy({ deployment_id: 'd3-after', service: 'checkout', environment: 'production', status: 'ready', commit_sha: sha('c'), started_at: at(first + H) });
    await deploy({ deployment_id: 'd4-other-service', service: 'api', environment: 'production', status: 'ready', commit_sha: sha('d'), started_at: at(first - 5 * M) });
    await deploy({ deployment_id: 'd5-staging', service: 'checkout', environment: 'staging', status: 'ready', commit_sha: sha('e'), started_at: at(first - 5 * M) });
    await deploy({ deployment_id: 'd6-failed', service: 'checkout', environment: 'production', status: 'failed', commit_sha: sha('f'), started_at: at(first - 6 * M) });
    await deploy({ deployment_id: 'd7-no-commit', service: 'checkout', environment: 'production', status: 'ready', started_at: at(first - 7 * M) });
  });

  it('ranks commits of the service\'s deployments that shipped before the first event, latest first', async () => {
    const r = await rest(t, 'GET', `/errors/${group}/suspect-commits`);
    expect(r.status, JSON.stringify(r.body)).toBe(200);
    expect(r.body.first_event_at).toBe(new Date(T0 - 5 * H).toISOString());
    expect(r.body.data.map((c: { sha: string }) => c.sha)).toEqual([sha('a'), sha('b')]);
    const [top, second] = r.body.data;
    expect(top).toMatchObject({
      branch: 'main',
      rank: 1,
      deployed_at: new Date(T0 - 5 * H - 12 * M).toISOString(),
      deployment: { provider: 'github', deployment_id: 'd1', version: '2.1.0', service: 'checkout', environment: 'production', status: 'ready', id: expect.any(String) },
    });
    expect(top.reason).toMatch(/deployed 12 min before the first event/);
    expect(second.reason).toMatch(/deployed 30 h before the first event; 1 newer deployment shipped since/);
    expect(top.score).toBeGreaterThan(second.score);
  });

  it('with a window, compares with the group\'s first event in that window', async () => {
    const from = new Date(T0 - 90 * M).toISOString();
    const r = await rest(t, 'GET', `/errors/${group}/suspect-commits?from=${from}`);
    expect(r.body.first_event_at).toBe(new Date(T0 - H).toISOString());
    expect(r.body.data.map((c: { sha: string }) => c.sha)).toEqual([sha('c'), sha('a'), sha('b')]);
    const empty = await rest(t, 'GET', `/errors/${group}/suspect-commits?from=${new Date(T0 - 10 * M).toISOString()}`);
    expect(empty.body).toEqual({ data: [], first_event_at: null });
  });

  it('is empty when no deployment of the service shipped before, and 404 for an unknown group', async () => {
    expect((await rest(t, 'GET', `/errors/${worker}/suspect-commits`)).body.data).toEqual([]);
    expect((await rest(t, 'GET', `/errors/${randomUUID()}/suspect-commits`)).status).toBe(404);
  });
});
