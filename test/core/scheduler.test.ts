/**
 * The shared job queue: state in SQLite, so a process that dies (simulated by dropping a scheduler
 * mid-job and opening a second one on the same file) loses no due job, and a job's database effects
 * commit once even when two runners race.
 */
import { afterEach, beforeEach, describe, expect, it } from 'vitest';
import { mkdtempSync, rmSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { openDatabase, type Db } from '../../src/storage/db.js';
import { createJobsRepo } from '../../src/storage/jobs-repo.js';
import { createScheduler } from '../../src/core/scheduler.js';

let dir: string;
let dbs: Db[] = [];
let clock = 1_700_000_000_000;
const now = () => clock;

function open() {
  const db = openDatabase(join(dir, 'jobs.db'));
  db.exec('CREATE TABLE IF NOT EXISTS effects (job TEXT, n INTEGER)');
  dbs.push(db);
  return db;
}

beforeEach(() => {
  dir = mkdtempSync(join(tmpdir(), 'sightline-sched-'));
  clock = 1_700_000_000_000;
});
afterEach(() => {
  for (const db of dbs) db.close();
  dbs = [];
  rmSync(dir, { recursive: true, force: true });
});

const effects = (db: Db) => db.prepare('SELECT job, n FROM effects ORDER BY rowid').all();

describe('the job queue', () => {
  it('runs a job when it is due, not before, and commits its effects with its completion', async () => {
    const db = open();
    const s = createScheduler(createJobsRepo(db), { now });
    s.register('demo', (job) => ({ commit: () => void db.prepare('INSERT INTO effects VALUES (?, 1)').run(job.key) }));
    s.enqueue('demo', 'a', {}, clock + 10_000);
    expect(await s.runDue()).toBe(0);
    clock += 10_000;
    expect(await s.runDue()).toBe(1);
    expect(await s.runDue()).toBe(0);
    expect(effects(db)).toEqual([{ job: 'a', n: 1 }]);
    expect(s.get('demo', 'a')).toBeUndefined();
  });

  it('reschedules a recurring job to the time its handler returns', async () => {
    const db = open();
    const s = createScheduler(createJobsRepo(db), { now });
    let runs = 0;
    s.register('tick', () => ({ commit: () => void runs++, nextRunAt: clock + 30_000 }));
    s.enqueue('tick', 'x', {}, clock);
    await s.runDue();
    await s.runDue();
    expect(runs).toBe(1);
    clock += 30_000;
    await s.runDue();
    expect(runs).toBe(2);
    expect(s.get('tick', 'x')!.run_at).toBe(clock + 30_000);
  });

  it('runs a job claimed by a process that died (no commit) again after restart, exactly once', async () => {
    const db1 = open();
    const first = createScheduler(createJobsRepo(db1), { now, leaderLeaseMs: 30_000 });
    let release!: () => void;
    first.register('mail', () => new Promise<never>((resolve) => (release = resolve as never))); // never finishes: the process "dies" here
    first.enqueue('mail', 'm1', { to: 'a@example.com' }, clock);
    void first.runDue();
    await new Promise((r) => setTimeout(r, 20));
    expect(release).toBeTypeOf('function'); // it was claimed and is running

    // A new process on the same file: it waits for the dead leader's lease, then runs the job once.
    const db2 = open();
    const second = createScheduler(createJobsRepo(db2), { now, leaderLeaseMs: 30_000 });
    second.register('mail', (job) => ({ commit: () => void db2.prepare('INSERT INTO effects VALUES (?, 2)').run(job.key) }));
    expect(await second.runDue()).toBe(0); // the old leader's lease still holds
    clock += 30_001;
    expect(await second.runDue()).toBe(1);
    expect(await second.runDue()).toBe(0);
    expect(effects(db2)).toEqual([{ job: 'm1', n: 2 }]);
  });

  it('discards the late commit of a runner whose claim was taken over (fencing)', async () => {
    const db1 = open();
    const slow = createScheduler(createJobsRepo(db1), { now, leaderLeaseMs: 1000 });
    let finish!: () => void;
    slow.register('job', (job) => new Promise((resolve) => (finish = () => resolve({ commit: () => void db1.prepare('INSERT INTO effects VALUES (?, 1)').run(job.key) }))));
    slow.enqueue('job', 'j', {}, clock);
    const slowPass = slow.runDue();
    await new Promise((r) => setTimeout(r, 20));

    clock += 1001; // the slow runner stalled past its leader lease; another process takes over
    const db2 = open();
    const other = createScheduler(createJobsRepo(db2), { now, leaderLeaseMs: 1000 });
    other.register('job', (job) => ({ commit: () => void db2.prepare('INSERT INTO effects VALUES (?, 2)').run(job.key) }));
    expect(await other.runDue()).toBe(1);
    finish();
    await slowPass;
    expect(effects(db2)).toEqual([{ job: 'j', n: 2 }]);
  });

  it('retries a failing job with backoff and keeps it as dead after its last attempt', async () => {
    const db = open();
    const s = createScheduler(createJobsRepo(db), { now });
    let calls = 0;
    s.register('flaky', () => {
      calls++;
      throw new Error('smtp down');
    });
    s.enqueue('flaky', 'f', {}, clock, { maxAttempts: 2 });
    await s.runDue();
    const after1 = s.get('flaky', 'f')!;
    expect(after1).toMatchObject({ last_error: 'smtp down', dead: false });
    expect(after1.run_at).toBe(clock + 5000);
    clock += 5000;
    await s.runDue();
    expect(s.get('flaky', 'f')).toMatchObject({ dead: true });
    clock += 3_600_000;
    await s.runDue();
    expect(calls).toBe(2);
  });

  it('lets only one of two live processes lead', async () => {
    const a = createScheduler(createJobsRepo(open()), { now });
    const b = createScheduler(createJobsRepo(open()), { now });
    let ranA = 0;
    let ranB = 0;
    a.register('k', () => void ranA++);
    b.register('k', () => void ranB++);
    a.enqueue('k', '1', {}, clock);
    await a.runDue();
    b.enqueue('k', '2', {}, clock);
    await b.runDue();
    await a.runDue();
    expect([ranA, ranB]).toEqual([2, 0]);
    await a.stop(); // a clean stop hands over at once
    b.enqueue('k', '3', {}, clock);
    await b.runDue();
    expect(ranB).toBe(1);
  });
});
