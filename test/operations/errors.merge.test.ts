/**
 * errors.merge and errors.unmerge: duplicates leave listings, fetch shows merged_into, later events
 * of a duplicate's fingerprint count on the canonical group; after unmerge they count on the
 * duplicate again. Events go through the real ingest path.
 */
import { randomUUID } from 'node:crypto';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { startTestServer, type TestServer } from '../helpers/server.js';
import { groupOfEvent, rest, sendEvent, type EventSpec } from './errors-fixtures.js';

const T0 = Date.parse('2026-06-01T10:00:00.000Z');
const M = 60_000;
let clock = T0;
let t: TestServer;

/** Three groups that are "the same bug" thrown from three call sites, plus unrelated ones. */
const X: Omit<EventSpec, 'at'> = { type: 'PaymentError', fn: 'capture', file: 'src/pay/capture.ts', service: 'pay' };
const Y: Omit<EventSpec, 'at'> = { type: 'PaymentError', fn: 'authorize', file: 'src/pay/authorize.ts', service: 'pay' };
const Z: Omit<EventSpec, 'at'> = { type: 'PaymentError', fn: 'refund', file: 'src/pay/refund.ts', service: 'pay' };
const W: Omit<EventSpec, 'at'> = { type: 'OtherError', fn: 'other', service: 'pay' };
const V: Omit<EventSpec, 'at'> = { type: 'ThirdError', fn: 'third', service: 'pay' };
const g = { x: '', y: '', z: '', w: '', v: '' };

const send = async (spec: Omit<EventSpec, 'at'>, minutesAgo = 1) => groupOfEvent(t, await sendEvent(t, { ...spec, at: clock - minutesAgo * M }));
const detail = async (id: string) => {
  const r = await rest(t, 'GET', `/errors/${id}?include_replay=false`);
  expect(r.status).toBe(200);
  return r.body;
};
const listed = async (qs = '') => ((await rest(t, 'GET', `/errors${qs}`)).body.data as { id: string }[]).map((x) => x.id);
const merge = (canonical: string, dups: unknown) => rest(t, 'POST', `/errors/${canonical}/merge`, { body: { duplicate_error_group_ids: dups } });
const unmerge = (id: string) => rest(t, 'POST', `/errors/${id}/unmerge`);

beforeAll(async () => {
  t = await startTestServer({ now: () => clock });
  g.x = await send(X, 30);
  await send(X, 20);
  g.y = await send(Y, 25);
  g.z = await send(Z, 15);
  await send(Z, 14);
  await send(Z, 13);
  g.w = await send(W, 10);
  g.v = await send(V, 5);
  expect(new Set(Object.values(g)).size).toBe(5);
});
afterAll(() => t.close());

describe('errors.merge', () => {
  it('merges duplicates into the canonical group and returns it with merged_from', async () => {
    const r = await merge(g.x, [g.y, g.z]);
    expect(r.status, JSON.stringify(r.body)).toBe(200);
    expect(r.body.id).toBe(g.x);
    expect(r.body.merged_from.map((m: { id: string }) => m.id).sort()).toEqual([g.y, g.z].sort());
    expect(r.body.merged_from[0]).toMatchObject({ short_id: expect.any(String), title: expect.stringContaining('PaymentError'), merged_at: new Date(clock).toISOString() });
    expect(r.body).not.toHaveProperty('merged_into');
  });

  it('hides the duplicates from listings, of every status', async () => {
    const ids = await listed();
    expect(ids).toContain(g.x);
    expect(ids).not.toContain(g.y);
    expect(ids).not.toContain(g.z);
    expect(await listed('?status=all')).toHaveLength(3);
  });

  it('shows merged_into on a duplicate, which keeps its own past event count', async () => {
    const y = await detail(g.y);
    expect(y.merged_into).toMatchObject({ id: g.x, title: expect.stringContaining('PaymentError') });
    expect(y).not.toHaveProperty('merged_from');
    expect(y.event_count).toBe(1);
    expect((await detail(g.z)).event_count).toBe(3);
    expect((await detail(g.x)).event_count).toBe(2);
  });

  it('counts later events of a duplicate\'s fingerprint on the canonical group', async () => {
    clock += 60 * M;
    const counted = await send(Y, 1);
    expect(counted).toBe(g.x);
    const x = await detail(g.x);
    expect(x.event_count).toBe(3);
    expect(x.last_seen).toBe(new Date(clock - M).toISOString());
    expect((await detail(g.y)).event_count).toBe(1);
  });

  it('accepts an id already merged into the same canonical group without change', async () => {
    const r = await merge(g.x, [g.y]);
    expect(r.status).toBe(200);
    expect(r.body.merged_from).toHaveLength(2);
  });

  it('refuses the canonical group as its own duplicate', async () => {
    const r = await merge(g.w, [g.v, g.w]);
    expect(r.status).toBe(400);
    expect(r.body).toMatchObject({ code: 'merge_into_self', param: 'duplicate_error_group_ids' });
    expect((await detail(g.v)).merged_into).toBeUndefined();
  });

  it('refuses a duplicate merged into another group, a canonical with duplicates, and merging into a duplicate', async () => {
    let r = await merge(g.w, [g.y]);
    expect(r.status).toBe(400);
    expect(r.body.code).toBe('already_merged');
    expect(r.body.message).toContain(g.y);

    r = await merge(g.w, [g.x]);
    expect(r.status).toBe(400);
    expect(r.body.code).toBe('has_duplicates');

    r = await merge(g.z, [g.w]);
    expect(r.status).toBe(400);
    expect(r.body).toMatchObject({ code: 'canonical_is_merged', param: 'error_group_id' });
    expect((await detail(g.w)).merged_into).toBeUndefined();
  });

  it('answers 404 for an unknown duplicate and merges none of the listed groups (all or nothing)', async () => {
    const r = await merge(g.w, [g.v, randomUUID()]);
    expect(r.status).toBe(404);
    expect(r.body.param).toBe('duplicate_error_group_ids');
    expect((await detail(g.v)).merged_into).toBeUndefined();
    expect(await listed()).toContain(g.v);
  });

  it('answers 404 for a duplicate of another project and for an unknown canonical group', async () => {
    const otherIngest = t.mintKey(['events:ingest'], t.otherProject.projectId);
    const ev = await sendEvent(t, { ...W, at: clock - M }, t.otherProject.projectId, otherIngest);
    const foreign = t.s.services.errorsIngest.groupOfEvent(t.otherProject.projectId, ev)!;
    expect((await merge(g.w, [foreign])).status).toBe(404);
    const r = await merge(randomUUID(), [g.w]);
    expect(r.status).toBe(404);
    expect(r.body.param).toBe('error_group_id');
  });

  it('validates duplicate_error_group_ids: required, 1 to 100 strings', async () => {
    for (const body of [{}, { duplicate_error_group_ids: [] }, { duplicate_error_group_ids: 'abc' }, { duplicate_error_group_ids: Array.from({ length: 101 }, () => randomUUID()) }]) {
      const r = await rest(t, 'POST', `/errors/${g.w}/merge`, { body });
      expect(r.status, JSON.stringify(body).slice(0, 80)).toBe(400);
      expect(String(r.body.param)).toMatch(/^duplicate_error_group_ids/);
    }
    const extra = await rest(t, 'POST', `/errors/${g.w}/merge`, { body: { duplicate_error_group_ids: [g.v], note: 'x' } });
    expect(extra.status).toBe(400);
    expect(extra.body.code).toBe('unknown_field');
  });
});

describe('errors.unmerge', () => {
  it('restores a duplicate to listings and to its own later events', async () => {
    const r = await unmerge(g.y);
    expect(r.status, JSON.stringify(r.body)).toBe(200);
    expect(r.body.id).toBe(g.y);
    expect(r.body).not.toHaveProperty('merged_into');
    expect(await listed()).toContain(g.y);
    expect((await detail(g.x)).merged_from.map((m: { id: string }) => m.id)).toEqual([g.z]);

    clock += 10 * M;
    expect(await send(Y, 1)).toBe(g.y);
    expect((await detail(g.y)).event_count).toBe(2);
    // the event counted on the canonical group while merged stays there
    expect((await detail(g.x)).event_count).toBe(3);
  });

  it('answers 409 not_merged for a group that is not merged, and 404 for an unknown one', async () => {
    const r = await unmerge(g.y);
    expect(r.status).toBe(409);
    expect(r.body.code).toBe('not_merged');
    expect((await unmerge(randomUUID())).status).toBe(404);
  });

  it('lets a group that lost its last duplicate be merged elsewhere', async () => {
    expect((await unmerge(g.z)).status).toBe(200);
    expect((await detail(g.x))).not.toHaveProperty('merged_from');
    const r = await merge(g.w, [g.x]);
    expect(r.status).toBe(200);
    expect((await detail(g.x)).merged_into.id).toBe(g.w);
  });
});
