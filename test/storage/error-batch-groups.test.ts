/**
 * Error events written as jobs of one write batch (as concurrent envelopes are): the group of a
 * fingerprint is read once per batch (errors-repo.ts `head`), and a job that fails leaves nothing
 * behind — no group it created, no status it changed — for the jobs after it. Runs on SQLite and,
 * in the scale-out project, with error groups in PostgreSQL.
 */
import { randomBytes } from 'node:crypto';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { startTestServer, type TestServer } from '../helpers/server.js';
import { processJob } from '../../src/ingest/process.js';
import { ingestKeyedErrorEvents, SpikeGuard } from '../../src/ingest/pipeline.js';
import { ingestLimitsFromEnv } from '../../src/ingest/limits.js';

let t: TestServer;
beforeAll(async () => {
  t = await startTestServer();
});
afterAll(async () => {
  await t?.s.close();
});

/** One Sentry event of exception type `type` (its own fingerprint), keyed as the decode workers key it. */
function keyed(type: string) {
  const id = randomBytes(16).toString('hex');
  const event = {
    event_id: id,
    timestamp: Date.now() / 1000,
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
});
