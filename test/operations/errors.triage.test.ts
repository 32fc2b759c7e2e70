/**
 * errors.createTriage and errors.listTriageRuns: the built-in triager runs synchronously; within
 * one cycle (the UTC day) a run is reused unless `force` is sent; the detail shows the latest result.
 */
import { randomUUID } from 'node:crypto';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { startTestServer, type TestServer } from '../helpers/server.js';
import { groupOfEvent, rest, sendEvent } from './errors-fixtures.js';

const T0 = Date.parse('2026-08-20T10:00:00.000Z');
const M = 60_000;
let clock = T0;
let t: TestServer;
let group = '';
let sameType = '';
let unrelated = '';

beforeAll(async () => {
  t = await startTestServer({ now: () => clock });
  for (let i = 0; i < 3; i++) {
    const id = await sendEvent(t, {
      type: 'TypeError',
      value: "Cannot read properties of undefined (reading 'price')",
      fn: 'lineTotal',
      file: 'src/cart/totals.ts',
      line: 88,
      level: 'fatal',
      service: 'shop',
      at: T0 - (30 - i) * M,
    });
    group = groupOfEvent(t, id);
  }
  sameType = groupOfEvent(t, await sendEvent(t, { type: 'TypeError', value: 'x is not a function', fn: 'render', service: 'shop', at: T0 - 2 * M }));
  unrelated = groupOfEvent(t, await sendEvent(t, { type: 'KafkaError', value: 'broker down', fn: 'consume', service: 'ingest', at: T0 - 2 * M }));
});
afterAll(() => t.close());

const triage = (body?: unknown, id = group) => rest(t, 'POST', `/errors/${id}/triage`, body === undefined ? {} : { body });

describe('errors.createTriage', () => {
  let firstRun = '';
  let forcedRun = '';

  it('runs the built-in triager and answers 201 with a completed run', async () => {
    const r = await triage();
    expect(r.status, JSON.stringify(r.body)).toBe(201);
    firstRun = r.body.id;
    expect(r.body).toMatchObject({
      error_group_id: group,
      status: 'completed',
      trigger: 'manual',
      triager: 'builtin-v1',
      cycle: '2026-08-20',
      created_at: new Date(T0).toISOString(),
      completed_at: new Date(T0).toISOString(),
      error: null,
    });
    const res = r.body.result;
    expect(res.summary).toContain("TypeError \"TypeError: Cannot read properties of undefined (reading 'price')\" has occurred 3 times");
    expect(res.summary).toContain('service shop');
    expect(res.summary).toContain('Culprit: lineTotal (src/cart/totals.ts).');
    expect(res.probable_cause).toMatchObject({
      file: 'src/cart/totals.ts',
      function: 'lineTotal',
      line: 88,
      in_app: true,
      exception_type: 'TypeError',
      message: "Cannot read properties of undefined (reading 'price')",
    });
    // fatal (3) + seen within the hour (1) = 4 → high
    expect(res.suggested_priority).toMatchObject({ priority: 'high', points: 4 });
    expect(res.similar_groups.map((g: { id: string }) => g.id)).toEqual([sameType]);
    expect(res.similar_groups[0].reason).toContain('same type TypeError');
    expect(res.similar_groups.map((g: { id: string }) => g.id)).not.toContain(unrelated);
  });

  it('reuses the run of the current cycle with 200 when force is not sent', async () => {
    clock = T0 + 5 * M;
    for (const body of [undefined, {}, { force: false }]) {
      const r = await triage(body);
      expect(r.status).toBe(200);
      expect(r.body.id).toBe(firstRun);
    }
  });

  it('creates a fresh manual run with force: true even though the cycle has a result', async () => {
    const r = await triage({ force: true });
    expect(r.status).toBe(201);
    forcedRun = r.body.id;
    expect(forcedRun).not.toBe(firstRun);
    expect(r.body).toMatchObject({ status: 'completed', trigger: 'manual', created_at: new Date(T0 + 5 * M).toISOString() });
    // later reuse picks the newest completed run of the cycle
    expect((await triage()).body.id).toBe(forcedRun);
  });

  it('shows the latest completed result on the group detail', async () => {
    const d = await rest(t, 'GET', `/errors/${group}?include_replay=false`);
    expect(d.body.triage).toMatchObject({ run_id: forcedRun, triager: 'builtin-v1', completed_at: new Date(T0 + 5 * M).toISOString() });
    expect(d.body.triage.probable_cause.function).toBe('lineTotal');
  });

  it('starts a new run on the next UTC day', async () => {
    clock = Date.parse('2026-08-21T00:00:01.000Z');
    const r = await triage();
    expect(r.status).toBe(201);
    expect(r.body.cycle).toBe('2026-08-21');
    // not seen for 14 hours: fatal (3) only → medium
    expect(r.body.result.suggested_priority.priority).toBe('medium');
  });

  it('rejects unknown body fields and unknown groups', async () => {
    const bad = await triage({ force: true, model: 'gpt' });
    expect(bad.status).toBe(400);
    expect(bad.body.code).toBe('unknown_field');
    expect((await triage({ force: 'yes' })).status).toBe(400);
    expect((await triage(undefined, randomUUID())).status).toBe(404);
  });
});

describe('errors.listTriageRuns', () => {
  it('lists the runs of the group newest first', async () => {
    const r = await rest(t, 'GET', `/errors/${group}/triage-runs`);
    expect(r.status).toBe(200);
    expect(r.body.total).toBe(3);
    expect(r.body.data.map((x: { cycle: string }) => x.cycle)).toEqual(['2026-08-21', '2026-08-20', '2026-08-20']);
    expect(r.body.data.every((x: { status: string; result: unknown }) => x.status === 'completed' && x.result)).toBe(true);
    const page = await rest(t, 'GET', `/errors/${group}/triage-runs?limit=1&offset=2`);
    expect(page.body.data[0].created_at).toBe(new Date(T0).toISOString());
  });

  it('is empty for a group never triaged, and 404 for an unknown group', async () => {
    expect((await rest(t, 'GET', `/errors/${unrelated}/triage-runs`)).body).toMatchObject({ data: [], total: 0 });
    expect((await rest(t, 'GET', `/errors/${randomUUID()}/triage-runs`)).status).toBe(404);
  });
});
