import Database from 'better-sqlite3';
import { mkdtempSync, rmSync } from 'node:fs';
import { createRequire } from 'node:module';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { Worker } from 'node:worker_threads';
import { describe, expect, it } from 'vitest';
import { createWriteBatcher } from '../../src/storage/write-batcher.js';

function db() {
  const d = new Database(':memory:');
  d.exec('CREATE TABLE t (v INTEGER PRIMARY KEY)');
  return d;
}

describe('write batcher (group commit)', () => {
  it('commits writes queued in the same turn in one transaction and resolves each with its value', async () => {
    const d = db();
    const run = createWriteBatcher(d);
    const insert = d.prepare('INSERT INTO t (v) VALUES (?)');
    const results = await Promise.all([1, 2, 3].map((v) => run(() => { insert.run(v); return v * 10; })));
    expect(results).toEqual([10, 20, 30]);
    expect((d.prepare('SELECT COUNT(*) n FROM t').get() as { n: number }).n).toBe(3);
  });

  it('rolls back a failing write alone: the others in the batch still commit', async () => {
    const d = db();
    const run = createWriteBatcher(d);
    const insert = d.prepare('INSERT INTO t (v) VALUES (?)');
    const outcomes = await Promise.allSettled([
      run(() => insert.run(1)),
      run(() => {
        insert.run(2);
        insert.run(1); // primary key violation: this job's own insert of 2 must be undone too
      }),
      run(() => insert.run(3)),
    ]);
    expect(outcomes.map((o) => o.status)).toEqual(['fulfilled', 'rejected', 'fulfilled']);
    expect(d.prepare('SELECT v FROM t ORDER BY v').all()).toEqual([{ v: 1 }, { v: 3 }]);
  });

  it('rolls back a failing job with the nested transactions it ran; a later job in the batch still commits', async () => {
    const d = db();
    const run = createWriteBatcher(d);
    const insert = d.prepare('INSERT INTO t (v) VALUES (?)');
    const nested = d.transaction((v: number) => insert.run(v));
    const outcomes = await Promise.allSettled([
      run(() => {
        nested(10); // its own savepoint, released inside the job's
        nested(11);
        throw new Error('refused after writing');
      }),
      run(() => nested(12)),
    ]);
    expect(outcomes.map((o) => o.status)).toEqual(['rejected', 'fulfilled']);
    expect(d.prepare('SELECT v FROM t ORDER BY v').all()).toEqual([{ v: 12 }]);
  });

  it('refuses a job that returns a promise and keeps nothing it wrote', async () => {
    const d = db();
    const run = createWriteBatcher(d);
    const insert = d.prepare('INSERT INTO t (v) VALUES (?)');
    const outcomes = await Promise.allSettled([
      run(() => {
        insert.run(5);
        return Promise.resolve(5);
      }),
      run(() => insert.run(6)),
    ]);
    expect(outcomes[0]).toMatchObject({ status: 'rejected', reason: expect.objectContaining({ message: expect.stringMatching(/cannot return a promise/) }) });
    expect(outcomes[1]!.status).toBe('fulfilled');
    expect(d.prepare('SELECT v FROM t ORDER BY v').all()).toEqual([{ v: 6 }]);
  });

  it("runs every job's prepare after the participants' begin and before the first job; a prepare that throws fails its job alone", async () => {
    const d = db();
    const log: string[] = [];
    const participant = { begin: () => log.push('begin'), jobEnd: (ok: boolean) => log.push(`end ${ok}`), end: () => log.push('batch end') };
    const run = createWriteBatcher(d, 512, [participant]);
    const outcomes = await Promise.allSettled([
      run(() => log.push('job 1'), () => log.push('prepare 1')),
      run(() => log.push('job 2')),
      run(() => log.push('job 3'), () => {
        throw new Error('no');
      }),
      run(() => log.push('job 4'), () => log.push('prepare 4')),
    ]);
    expect(outcomes.map((o) => o.status)).toEqual(['fulfilled', 'fulfilled', 'rejected', 'fulfilled']);
    expect(log).toEqual(['begin', 'prepare 1', 'prepare 4', 'job 1', 'end true', 'job 2', 'end true', 'end false', 'job 4', 'end true', 'batch end']);
  });

  it('settles only after the commit: a reader sees the rows as soon as the promise resolves', async () => {
    const d = db();
    const run = createWriteBatcher(d);
    const pending = run(() => d.prepare('INSERT INTO t (v) VALUES (7)').run());
    expect(d.inTransaction).toBe(false);
    expect((d.prepare('SELECT COUNT(*) n FROM t').get() as { n: number }).n).toBe(0); // queued, not yet written
    await pending;
    expect((d.prepare('SELECT COUNT(*) n FROM t').get() as { n: number }).n).toBe(1);
  });

  it('waits for another connection holding the write lock (a WAL RESTART checkpoint) instead of failing a job that reads before it writes', async () => {
    const dir = mkdtempSync(join(tmpdir(), 'sl-wb-lock-'));
    const file = join(dir, 'db.sqlite');
    const d = new Database(file);
    d.pragma('journal_mode = WAL');
    d.pragma('busy_timeout = 5000');
    d.exec('CREATE TABLE t (v INTEGER PRIMARY KEY)');
    // Another connection on another thread takes the write lock, as the checkpoint worker's
    // wal_checkpoint(RESTART) does, and lets it go 300 ms later.
    const holder = new Worker(
      `const { parentPort, workerData } = require('node:worker_threads');
       const db = new (require(workerData.sqlite))(workerData.file);
       db.exec('BEGIN IMMEDIATE');
       parentPort.postMessage('locked');
       setTimeout(() => { db.exec('COMMIT'); db.close(); parentPort.postMessage('released'); }, 300);`,
      { eval: true, workerData: { file, sqlite: createRequire(import.meta.url).resolve('better-sqlite3') } },
    );
    try {
      const messages: string[] = [];
      const released = new Promise<void>((resolve) => holder.on('message', (m: string) => (messages.push(m), m === 'released' && resolve())));
      while (!messages.includes('locked')) await new Promise((r) => setTimeout(r, 5));
      const run = createWriteBatcher(d);
      const job = run(() => {
        const n = (d.prepare('SELECT COUNT(*) n FROM t').get() as { n: number }).n; // a read first (a snapshot)
        d.prepare('INSERT INTO t (v) VALUES (?)').run(n + 1); // then the write lock
        return n + 1;
      });
      await expect(job).resolves.toBe(1);
      await released;
      expect(d.prepare('SELECT v FROM t').all()).toEqual([{ v: 1 }]);
    } finally {
      await holder.terminate();
      d.close();
      rmSync(dir, { recursive: true, force: true });
    }
  });
});
