/**
 * A real SIGKILL: a child process claims two due jobs, commits one and is killed inside the other.
 * The next process runs the unfinished job once and never the committed one again.
 */
import { afterAll, describe, expect, it } from 'vitest';
import { spawn } from 'node:child_process';
import { mkdtempSync, rmSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { fileURLToPath } from 'node:url';
import { openDatabase } from '../../src/storage/db.js';
import { createJobsRepo } from '../../src/storage/jobs-repo.js';
import { createScheduler } from '../../src/core/scheduler.js';

const CHILD = fileURLToPath(new URL('./fixtures/scheduler-child.mjs', import.meta.url));
const dir = mkdtempSync(join(tmpdir(), 'sightline-sigkill-'));
afterAll(() => rmSync(dir, { recursive: true, force: true }));

describe('the job queue across a SIGKILL', () => {
  it('runs the job the killed process was inside exactly once, and not the one it had committed', async () => {
    const file = join(dir, 'jobs.db');
    const db = openDatabase(file);
    db.exec('CREATE TABLE effects (job TEXT, runner TEXT)');
    const jobs = createJobsRepo(db);
    jobs.put('demo', 'quick', {}, Date.now(), 8, Date.now());
    jobs.put('demo', 'hang', {}, Date.now(), 8, Date.now());

    const child = spawn(process.execPath, [CHILD, file], { stdio: ['ignore', 'pipe', 'inherit'] });
    await new Promise<void>((resolve, reject) => {
      child.stdout.on('data', (d: Buffer) => d.toString().includes('hanging') && resolve());
      child.on('exit', (code) => reject(new Error(`child exited early (${code})`)));
    });
    child.removeAllListeners('exit');
    const exited = new Promise((r) => child.on('exit', r));
    child.kill('SIGKILL');
    await exited;

    // The dead process still holds the leader lease (30 s): the next one takes over after it.
    const later = Date.now() + 31_000;
    const next = createScheduler(jobs, { now: () => later });
    next.register('demo', (job) => ({ commit: () => void db.prepare("INSERT INTO effects VALUES (?, 'next')").run(job.key) }));
    expect(await next.runDue()).toBe(1);
    expect(await next.runDue()).toBe(0);
    expect(db.prepare('SELECT job, runner FROM effects ORDER BY rowid').all()).toEqual([
      { job: 'quick', runner: 'child' },
      { job: 'hang', runner: 'next' },
    ]);
    db.close();
  });
});
