/**
 * Issue 20, error ingest at scale: with error groups in PostgreSQL a write batch reads the heads of a
 * call's fingerprints in one statement, inserts its new groups and writes its groups' tallies in
 * multi-row statements, and reads the next seq once, so a batch over many groups holds the write lock
 * for a bounded number of round trips (SyncPg.trips); and every group column after ingest (counts,
 * first/last seen and release, level, users, status, seq, short id) is the same on SQLite and on
 * PostgreSQL. Runs on the local PostgreSQL; skips, saying why, without one.
 */
import { mkdtempSync, rmSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { afterAll, describe, expect, it } from 'vitest';
import { createSightline, type Sightline } from '../../src/server.js';
import { bootstrapOrganization } from '../../src/core/bootstrap.js';
import { processJob } from '../../src/ingest/process.js';
import { expectErrorGroups, ingestKeyedErrorEvents, SpikeGuard } from '../../src/ingest/pipeline.js';
import { ingestLimitsFromEnv } from '../../src/ingest/limits.js';
import type { KeyedErrorEvent } from '../../src/storage/errors-repo.js';
import { postgresOf } from '../../src/storage/postgres/split-db.js';
import { createPgDatabase, postgresMissing } from '../support/postgres.js';

const missing = await postgresMissing();
if (missing) console.log(`[postgres-error-ingest] skipped: ${missing}`);

const D = Date.UTC(2026, 0, 5);
const cleanup: Array<() => Promise<void> | void> = [];
afterAll(async () => {
  while (cleanup.length) await cleanup.pop()!();
});

async function open(databaseUrl: string | null) {
  const dir = mkdtempSync(join(tmpdir(), 'sl-error-ingest-'));
  const s = createSightline({ dbFile: join(dir, 'e.db'), port: 0, host: '127.0.0.1', logLevel: 'silent', databaseUrl });
  cleanup.push(async () => (await s.close(), rmSync(dir, { recursive: true, force: true })));
  const pid = bootstrapOrganization(s.services, { now: D }).project_id;
  s.db.prepare('UPDATE projects SET spike_threshold_per_minute = NULL WHERE id = ?').run(Number(pid));
  const spike = new SpikeGuard();
  const project = () => s.services.identity.projectById(pid)!;
  /** One job of a write batch: the events, ingested as the decode workers key them; `fail` throws after them. */
  const job = (events: KeyedErrorEvent[], now: number, fail = false, p = project()) => {
    // The project is read before the job, as the ingest routes read it (each read asks PostgreSQL
    // whether control data changed: a round trip).
    return s.services.writeBatch(() => {
      const r = ingestKeyedErrorEvents(s.services, spike, p, events, now);
      if (fail) throw new Error('the job fails after its events');
      return r;
    }, expectErrorGroups(s.services, p, events));
  };
  return { s, pid, job, project };
}

interface Ev {
  id: number;
  group: number;
  /** Seconds, with a fraction (the stored ms have one too). */
  ts: number;
  level?: string;
  release?: string;
  user?: string;
}

/** Sentry events keyed as the decode workers key them; group g's fingerprint comes from its exception type and frame. */
function keyed(evs: Ev[]): KeyedErrorEvent[] {
  const limits = ingestLimitsFromEnv();
  return evs.flatMap((x) => {
    const id = x.id.toString(16).padStart(32, '0');
    const ev = {
      event_id: id, timestamp: x.ts, platform: 'node', level: x.level ?? 'error', environment: x.group % 3 ? 'production' : 'staging',
      ...(x.release ? { release: x.release } : {}), ...(x.user ? { user: { id: x.user } } : {}), tags: { shard: String(x.group % 4) },
      exception: { values: [{ type: `G${x.group}Error`, value: 'boom', stacktrace: { frames: [{ filename: `/app/m${x.group}.js`, function: 'f', lineno: 1, in_app: true }] } }] },
    };
    const body = Buffer.from(`${JSON.stringify({ event_id: id })}\n{"type":"event"}\n${JSON.stringify(ev)}\n`);
    return processJob({ kind: 'envelope', body, receivedMs: D + 86_400_000, limits }).slices.flatMap((s) => s.errors ?? []);
  });
}

/** 256 events over 200 groups (groups 0–55 get two events), from event id `base`. */
function wide(base: number, t0: number, opts: { level?: (i: number) => string; release?: (i: number) => string | undefined; user?: (i: number) => string | undefined } = {}): Ev[] {
  return Array.from({ length: 256 }, (_, i) => ({
    id: base + i, group: i % 200, ts: t0 + (i % 7) * 60 + i / 8 + (i % 3) / 10_000, level: opts.level?.(i), release: opts.release?.(i), user: opts.user?.(i),
  }));
}

/** Every group column (the id as its fingerprint, a merge target as its seq), by seq; and the rollups beside the groups. */
function state(s: Sightline) {
  const rows = s.db.prepare('SELECT * FROM error_groups ORDER BY seq').all() as Record<string, unknown>[];
  const seqOf = new Map(rows.map((r) => [r.id, r.seq]));
  const fp = new Map(rows.map((r) => [r.id, r.fingerprint]));
  const groups: Record<string, unknown>[] = rows.map(({ id: _id, merged_into, ...r }) => ({ ...r, merged_into: merged_into == null ? null : seqOf.get(merged_into) }));
  const of = (sql: string) => (s.db.prepare(sql).raw(true).all() as unknown[][]).map(([g, ...r]) => [fp.get(g), ...r]).sort((a, b) => JSON.stringify(a).localeCompare(JSON.stringify(b)));
  return {
    groups,
    dims: of('SELECT group_id, kind, value, event_count, first_seen, last_seen FROM error_group_dims'),
    users: of('SELECT group_id, user_key, user_id, first_seen FROM error_group_users'),
    hours: of('SELECT group_id, hour, user_key, n FROM error_group_hour_users'),
  };
}

/** New groups, the same groups again (earlier and later events, new releases and levels), resolved and merged groups, a failed job. */
async function scenario(o: Awaited<ReturnType<typeof open>>) {
  const T = D / 1000;
  const levels = ['info', 'warning', 'error', 'fatal', 'debug'];
  // 1: 200 new groups in one call; releases and users on some events.
  await o.job(keyed(wide(1, T + 3600.125, { release: (i) => (i % 5 ? `app@1.${i % 3}` : undefined), user: (i) => (i % 4 ? `u${i % 50}` : undefined), level: (i) => levels[i % 4]! })), D + 1);
  // 2: the same groups, some events before their first seen (first release moves), others later, higher levels.
  await o.job(keyed(wide(1000, T + 1800.5, { release: (i) => (i % 3 ? `app@0.${i % 2}` : undefined), user: (i) => `u${i % 70}`, level: (i) => levels[(i + 3) % 5]! })), D + 2);
  await o.job(keyed(wide(2000, T + 7200.75, { release: (i) => (i % 2 ? `app@2.${i % 4}` : ''), level: (i) => levels[(i + 1) % 5]! })), D + 3);
  // 3: groups resolved and merged, then several jobs in one batch: one failing (its new groups and
  // reopens forgotten), new groups (seqs counted on from the batch's), a merged group's events.
  const ids = (type: string) => (o.s.db.prepare('SELECT id FROM error_groups WHERE project_id = ? AND type = ?').get(Number(o.pid), type) as { id: string }).id;
  for (const g of [3, 4, 5, 150]) o.s.db.prepare("UPDATE error_groups SET status = 'resolved' WHERE id = ?").run(ids(`G${g}Error`));
  o.s.db.prepare('UPDATE error_groups SET merged_into = ?, merged_at = ? WHERE id = ?').run(ids('G7Error'), D, ids('G8Error'));
  const outcomes = await Promise.allSettled([
    o.job(keyed([3, 300, 301].map((g, i) => ({ id: 5000 + i, group: g, ts: T + 9000 + i, release: 'app@3.0', user: 'u-x' }))), D + 4, true),
    o.job(keyed([301, 4, 8, 302, 3].map((g, i) => ({ id: 5100 + i, group: g, ts: T + 9100 + i / 3, release: 'app@3.1', user: `u-y${i}`, level: 'fatal' }))), D + 5),
    o.job(keyed([303, 5, 8, 300, 301].map((g, i) => ({ id: 5200 + i, group: g, ts: T + 100 + i, user: 'u-z' }))), D + 6),
    // A repeated event (SDK retry) counts once.
    o.job(keyed([{ id: 5100, group: 301, ts: T + 9100 }, { id: 5300, group: 150, ts: T + 50.5, level: 'debug', release: 'app@0.0' }]), D + 7),
  ]);
  return { outcomes: outcomes.map((r) => (r.status === 'fulfilled' ? { accepted: r.value.accepted, created: r.value.created.map((g) => g.shortId), reopened: r.value.reopened.map((g) => g.shortId) } : 'rejected')), state: state(o.s) };
}

describe.skipIf(!!missing)('Error ingest with the error groups in PostgreSQL', () => {
  it('leaves every group column and rollup as SQLite does: new and existing groups, releases, levels, users, reopened, merged, a failed job', async () => {
    const pgdb = await createPgDatabase();
    cleanup.push(() => pgdb.drop());
    const a = await scenario(await open(null));
    const b = await scenario(await open(pgdb.url));
    expect(b).toEqual(a);
    // The outcomes themselves: the failed job left no group; seqs went on from the batch's.
    expect(a.outcomes[0]).toBe('rejected');
    expect(a.state.groups).toHaveLength(204);
    expect(a.state.groups.map((g) => g.seq)).toEqual(Array.from({ length: 204 }, (_, i) => i + 1));
    const g = (n: number) => a.state.groups.find((x) => x.type === `G${n}Error`)!;
    expect(g(3)).toMatchObject({ status: 'unresolved', level: 'fatal', last_release: 'app@3.1' });
    expect(g(150)).toMatchObject({ status: 'unresolved', first_release: 'app@0.0' });
    expect(g(8)).toMatchObject({ merged_into: g(7).seq, event_count: 6 });
    expect(g(7)).toMatchObject({ event_count: 8, last_release: 'app@3.1', level: 'fatal' });
    expect(g(301)).toMatchObject({ event_count: 2, user_count: 2 });
    expect(g(0)).toMatchObject({ event_count: 6, first_seen: (D / 1000 + 1800.5) * 1000 });
  });

  it('writes a 256-event batch over 200 groups, new and then existing, in a bounded number of round trips', async () => {
    const pgdb = await createPgDatabase();
    cleanup.push(() => pgdb.drop());
    const o = await open(pgdb.url);
    const pg = postgresOf(o.s.db)!;
    const T = D / 1000;
    const calls: number[] = [];
    for (const [k, user] of [[0, undefined], [1, (i: number) => `u${i % 50}`], [2, (i: number) => `u${i % 90}`]] as const) {
      const events = keyed(wide(1 + k * 1000, T + k * 60, { user, release: () => `app@${k}` }));
      const before = pg.trips.calls;
      const r = await o.job(events, D + k);
      calls.push(pg.trips.calls - before);
      expect(r.accepted).toBe(256);
      expect(r.created).toHaveLength(k ? 0 : 200);
    }
    // A statement per group made 799 calls for the new groups and 409 for existing ones: now the
    // heads (2), the next seq (1), the inserts (2), users, bumps (2), dims and hours, savepoint, commit.
    expect(Math.max(...calls)).toBeLessThanOrEqual(20);
    expect((o.s.db.prepare('SELECT SUM(event_count) AS n FROM error_groups').get() as { n: number }).n).toBe(768);
  });

  it('writes 256 one-event jobs of one batch over 200 groups, existing, new, new in several jobs, in a bounded number of round trips; a failed job leaves no group', async () => {
    const pgdb = await createPgDatabase();
    cleanup.push(() => pgdb.drop());
    const T = D / 1000;
    const run = async (o: Awaited<ReturnType<typeof open>>, pg?: ReturnType<typeof postgresOf>) => {
      // Groups 0–99 exist (one event each, some resolved); then 256 jobs of one event each over groups
      // 0–199 (0–55 twice: existing and new groups in two jobs), and two failing jobs: one with a group
      // no other job has (it must not be kept), one with a group a later job creates (its seq is reused).
      await o.job(keyed(Array.from({ length: 100 }, (_, g) => ({ id: 90_000 + g, group: g, ts: T + g }))), D);
      const ids = (type: string) => (o.s.db.prepare('SELECT id FROM error_groups WHERE project_id = ? AND type = ?').get(Number(o.pid), type) as { id: string }).id;
      for (const g of [3, 60, 62, 99]) o.s.db.prepare("UPDATE error_groups SET status = 'resolved' WHERE id = ?").run(ids(`G${g}Error`));
      // G61 merged into the resolved G62: its event (job 61) reopens G62, whose own event (job 62) then reopens nothing.
      o.s.db.prepare('UPDATE error_groups SET merged_into = ?, merged_at = ? WHERE id = ?').run(ids('G62Error'), D, ids('G61Error'));
      const evs = wide(1, T + 3600, { release: (i) => (i % 5 ? `app@1.${i % 3}` : undefined), user: (i) => (i % 4 ? `u${i % 50}` : undefined) });
      const p = o.project();
      const before = pg ? pg.trips.calls : 0;
      const jobs = evs.map((e, i) => o.job(keyed([e]), D + 10 + i, false, p));
      jobs.splice(10, 0, o.job(keyed([{ id: 80_000, group: 250, ts: T + 5000 }]), D + 9, true, p));
      jobs.splice(20, 0, o.job(keyed([{ id: 80_001, group: 180, ts: T + 5001, level: 'fatal' }]), D + 9, true, p));
      const outcomes = await Promise.allSettled(jobs);
      const calls = pg ? pg.trips.calls - before : 0;
      return {
        calls,
        outcomes: outcomes.map((r) => (r.status === 'fulfilled' ? { accepted: r.value.accepted, created: r.value.created.map((g) => g.shortId), reopened: r.value.reopened.map((g) => g.shortId) } : 'rejected')),
        state: state(o.s),
      };
    };
    const a = await run(await open(null));
    const o = await open(pgdb.url);
    const b = await run(o, postgresOf(o.s.db)!);
    expect({ ...b, calls: 0 }).toEqual({ ...a, calls: 0 });
    expect(a.outcomes.filter((x) => x === 'rejected')).toHaveLength(2);
    expect(a.state.groups).toHaveLength(200);
    expect(a.state.groups.map((g) => g.seq)).toEqual(Array.from({ length: 200 }, (_, i) => i + 1));
    expect(a.state.groups.some((g) => g.type === 'G250Error')).toBe(false);
    expect(a.state.groups.find((g) => g.type === 'G180Error')).toMatchObject({ level: 'error', event_count: 1 });
    expect(a.state.groups.find((g) => g.type === 'G3Error')).toMatchObject({ status: 'unresolved', event_count: 3 });
    // A job read its group's head (1 call) and inserted its new group (1 more): 320 calls. Now the
    // batch's heads (2), the next seq, a statement per reopen and per event of a merged duplicate (its
    // canonical's head), then once per batch the new groups (1), users (2), bumps (2), dims (5), hours
    // (2) and the commit: 23.
    expect(b.calls).toBeLessThanOrEqual(25);
  });
});
