import Database from 'better-sqlite3';
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

  it('settles only after the commit: a reader sees the rows as soon as the promise resolves', async () => {
    const d = db();
    const run = createWriteBatcher(d);
    const pending = run(() => d.prepare('INSERT INTO t (v) VALUES (7)').run());
    expect(d.inTransaction).toBe(false);
    expect((d.prepare('SELECT COUNT(*) n FROM t').get() as { n: number }).n).toBe(0); // queued, not yet written
    await pending;
    expect((d.prepare('SELECT COUNT(*) n FROM t').get() as { n: number }).n).toBe(1);
  });
});
