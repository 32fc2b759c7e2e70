/**
 * Error events written as jobs of one write batch (as concurrent envelopes are): the group of a
 * fingerprint is read once per batch (errors-repo.ts `head`), and a job that fails leaves nothing
 * behind — no group it created, no status it changed — for the jobs after it. Expiring events takes
 * them off the groups' window counts (the hourly user tallies). Runs on SQLite and, in the
 * scale-out project, with error groups and event ids in PostgreSQL and the events in ClickHouse
 * (there a batch of one-event jobs costs a bounded number of PostgreSQL round trips).
 */
import { randomBytes } from 'node:crypto';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { api, startTestServer, type TestServer } from '../helpers/server.js';
import { processJob } from '../../src/ingest/process.js';
import { expectErrorGroups, ingestKeyedErrorEvents, SpikeGuard } from '../../src/ingest/pipeline.js';
import { postgresOf } from '../../src/storage/postgres/split-db.js';
import { ingestLimitsFromEnv } from '../../src/ingest/limits.js';

let t: TestServer;
beforeAll(async () => {
  t = await startTestServer();
});
afterAll(async () => {
  await t?.s.close();
});

/** One Sentry event of exception type `type` (its own fingerprint), keyed as the decode workers key it. */
function keyed(type: string, at = Date.now(), user?: string, id = randomBytes(16).toString('hex')) {
  const event = {
    event_id: id,
    timestamp: at / 1000,
    ...(user ? { user: { id: user } } : {}),
    platform: 'node',
    level: 'error',
    environment: 'production',
    exception: { values: [{ type, value: 'boom', stacktrace: { frames: [{ filename: '/app/src/a.js', function: `fn${type}`, lineno: 1, in_app: true }] } }] },
  };
  const body = Buffer.from(`${JSON.stringify({ event_id: id })}\n{"type":"event"}\n${JSON.stringify(event)}\n`);
  return processJob({ kind: 'envelope', body, receivedMs: Date.now(), limits: ingestLimitsFromEnv() }).slices.flatMap((x) => x.errors ?? []);
}

const groupsOf = (type: string) =>
  t.s.db.prepare('SELECT id, status, event_count FROM error_groups WHERE project_id = ? AND type = ?').all(Number(t.projectId), type) as { id: string; status: string; event_count: number }[];

describe('error events in one write batch', () => {
  const spike = new SpikeGuard();
  const project = () => t.s.services.identity.projectById(t.projectId)!;
  const ingest = (type: string, fail = false) =>
    t.s.services.writeBatch(() => {
      const r = ingestKeyedErrorEvents(t.s.services, spike, project(), keyed(type), Date.now());
      if (fail) throw new Error('the job fails after its event');
      return r;
    });

  it('forgets a group created by a job that failed: the next job of the batch creates it again and counts there', async () => {
    const settled = await Promise.allSettled([ingest('BatchA', true), ingest('BatchA'), ingest('BatchA')]);
    expect(settled.map((r) => r.status)).toEqual(['rejected', 'fulfilled', 'fulfilled']);
    const groups = groupsOf('BatchA');
    expect(groups).toHaveLength(1);
    expect(groups[0]!.event_count).toBe(2);
  });

  it('reopens a resolved group for the first event that commits, even when an earlier job of the batch reopened it and failed', async () => {
    await ingest('BatchB');
    const [g] = groupsOf('BatchB');
    t.s.db.prepare("UPDATE error_groups SET status = 'resolved' WHERE id = ?").run(g!.id);
    const settled = await Promise.allSettled([ingest('BatchB', true), ingest('BatchB'), ingest('BatchB')]);
    expect(settled.map((r) => r.status)).toEqual(['rejected', 'fulfilled', 'fulfilled']);
    expect(groupsOf('BatchB')).toEqual([{ id: g!.id, status: 'unresolved', event_count: 3 }]);
  });

  it('writes one-event jobs of one batch in a bounded number of PostgreSQL round trips: groups and event ids read for the batch, new ones written at its end', async () => {
    const p = project();
    const job = (events: ReturnType<typeof keyed>, fail = false) =>
      t.s.services.writeBatch(() => {
        const r = ingestKeyedErrorEvents(t.s.services, spike, p, events, Date.now());
        if (fail) throw new Error('the job fails after its event');
        return r;
      }, expectErrorGroups(t.s.services, p, events));
    const stored = 'c'.repeat(32);
    await Promise.all([...Array.from({ length: 50 }, (_, i) => job(keyed(`Jobs${i}`))), job(keyed('Jobs0', Date.now(), undefined, stored))]);
    const pg = postgresOf(t.s.db);
    const before = pg?.trips.calls ?? 0;
    // 200 jobs over Jobs0–99 (0–49 exist; each group in two jobs); a retry of an event stored before
    // and of one stored earlier in the batch (neither counts); a failed job's event id and new group,
    // the id sent again by a later job (which counts it).
    const retried = 'd'.repeat(32);
    const failed = 'e'.repeat(32);
    const jobs = Array.from({ length: 200 }, (_, i) => job(keyed(`Jobs${i % 100}`, Date.now(), `u${i % 7}`, i === 3 ? retried : undefined)));
    jobs.push(job(keyed('Jobs1', Date.now(), undefined, stored)), job(keyed('Jobs2', Date.now(), undefined, retried)));
    jobs.push(job(keyed('JobsFailed', Date.now(), undefined, failed), true), job(keyed('Jobs5', Date.now(), undefined, failed)));
    const settled = await Promise.allSettled(jobs);
    const calls = (pg?.trips.calls ?? 0) - before;
    expect(settled.map((r) => r.status).filter((s) => s === 'rejected')).toHaveLength(1);
    expect(groupsOf('JobsFailed')).toEqual([]);
    const counts = Array.from({ length: 100 }, (_, i) => groupsOf(`Jobs${i}`).map((g) => g.event_count));
    expect(counts).toEqual(Array.from({ length: 100 }, (_, i) => [(i < 50 ? 3 : 2) + (i === 0 ? 1 : 0) + (i === 5 ? 1 : 0)]));
    // With the events in ClickHouse and their ids in PostgreSQL (scale-out): per job a read of its
    // group's head, an insert of its new group and of its event id made 365 calls. Now the batch's
    // heads and ids, the next seq, then once per batch the groups, ids, users, bumps, dims, hours and
    // the commit: 18.
    if (pg) expect(calls).toBeLessThanOrEqual(20);
  });
});

describe('error events expired by retention', () => {
  const DAY = 86_400_000;
  const T0 = Date.parse('2026-06-01T12:00:00.000Z');
  let r: TestServer;
  beforeAll(async () => {
    r = await startTestServer({ now: () => T0, config: { retention: { maxDays: 400, intervalMs: 0, batchRows: 50, maxDbBytes: 0 } } });
  });
  afterAll(() => r?.close());

  it("come off the groups' window counts of events and users; the lifetime counts stay", async () => {
    const spike = new SpikeGuard();
    const project = r.s.services.identity.projectById(r.projectId)!;
    const ingest = (at: number, user: string) => r.s.services.writeBatch(() => ingestKeyedErrorEvents(r.s.services, spike, project, keyed('Expiring', at, user), T0));
    await ingest(T0 - 100 * DAY, 'u1');
    await ingest(T0 - 100 * DAY + 3_600_000, 'u2');
    await ingest(T0 - DAY, 'u1');
    const group = async () => {
      const list = await api(r, 'GET', `/v1/projects/${r.projectId}/errors?from=${new Date(T0 - 120 * DAY).toISOString()}&to=${new Date(T0).toISOString()}`, { key: r.keys.admin });
      expect(list.status).toBe(200);
      return list.body.data.find((g: { type: string }) => g.type === 'Expiring');
    };
    expect(await group()).toMatchObject({ event_count: 3, user_count: 2, window_event_count: 3, window_user_count: 2 });
    const report = await r.s.retention.runOnce();
    expect(report.expired.error_events).toBe(2);
    expect(await group()).toMatchObject({ event_count: 3, user_count: 2, window_event_count: 1, window_user_count: 1 });
  });
});
