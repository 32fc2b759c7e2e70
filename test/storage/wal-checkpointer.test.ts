import { afterEach, describe, expect, it } from 'vitest';
import { mkdtempSync, rmSync, statSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import Database from 'better-sqlite3';
import { openDatabase } from '../../src/storage/db.js';
import { startWalCheckpointer } from '../../src/storage/wal-checkpointer.js';

const dirs: string[] = [];
afterEach(() => {
  for (const d of dirs.splice(0)) rmSync(d, { recursive: true, force: true });
});
const tempFile = () => {
  const d = mkdtempSync(join(tmpdir(), 'sl-walck-'));
  dirs.push(d);
  return join(d, 'db.sqlite');
};

describe('WAL checkpoints on a worker thread', () => {
  it('takes the checkpoints out of the commits and copies committed pages into the database file', async () => {
    const file = tempFile();
    const db = openDatabase(file);
    expect(db.pragma('wal_autocheckpoint', { simple: true })).toBe(1000);
    const cp = startWalCheckpointer(db, file)!;
    expect(cp).not.toBeNull();
    // The writer no longer checkpoints every 1,000 pages itself (only as a fallback, far later).
    expect(db.pragma('wal_autocheckpoint', { simple: true })).toBe(65_536);
    db.exec('CREATE TABLE t (id INTEGER PRIMARY KEY, v TEXT)');
    const ins = db.prepare('INSERT INTO t (v) VALUES (?)');
    // About 2,500 pages: past the old automatic checkpoint threshold, so the writer alone would have checkpointed.
    db.transaction(() => {
      for (let i = 0; i < 10_000; i++) ins.run('x'.repeat(1000));
    })();
    const sizeBefore = statSync(file).size;
    for (let i = 0; i < 50 && statSync(file).size <= sizeBefore + 5_000_000; i++) await cp.now();
    // The worker copied the commit into the database file, while the writer only appended to the WAL.
    expect(statSync(file).size).toBeGreaterThan(sizeBefore + 5_000_000);
    expect(cp.stats().rounds).toBeGreaterThan(0);
    expect(cp.stats().errors).toBe(0);
    await cp.stop();
    // Stopped: SQLite's own automatic checkpoint again.
    expect(db.pragma('wal_autocheckpoint', { simple: true })).toBe(1000);
    db.close();
    const other = new Database(file, { readonly: true });
    expect(other.prepare('SELECT count(*) FROM t').pluck().get()).toBe(10_000);
    other.close();
  });

  it('restarts a long WAL so it does not grow without bound under continuous writes', async () => {
    const file = tempFile();
    const db = openDatabase(file);
    const cp = startWalCheckpointer(db, file, { intervalMs: 5, restartFrames: 200 })!;
    db.exec('CREATE TABLE t (id INTEGER PRIMARY KEY, v TEXT)');
    const ins = db.prepare('INSERT INTO t (v) VALUES (?)');
    // Many small commits with checkpoints in between: the WAL starts over, so its file stays far
    // below the ~40 MB these commits write in total.
    for (let round = 0; round < 100; round++) {
      db.transaction(() => {
        for (let i = 0; i < 100; i++) ins.run('y'.repeat(4000));
      })();
      if (round % 10 === 9) await cp.now();
    }
    // A RESTART tried while a commit held the lock (the 5 ms timer's rounds run during the loop; on
    // a loaded machine the commit can outlast the worker's 20 ms busy timeout) is not tried again for
    // a second: wait that out, then the next round restarts the WAL.
    await new Promise((r) => setTimeout(r, 1100));
    await cp.now();
    // One more commit: it starts the WAL over, so the WAL holds that commit only (not the ~10,000
    // pages written in all).
    db.transaction(() => ins.run('z'))();
    const [{ log }] = db.pragma('wal_checkpoint(PASSIVE)') as { log: number }[];
    expect(log).toBeLessThan(100);
    expect(db.prepare('SELECT count(*) FROM t').pluck().get()).toBe(10_001);
    await cp.stop();
    db.close();
  });

  it('never holds other writers up while a reader keeps an old snapshot', async () => {
    const file = tempFile();
    const db = openDatabase(file);
    db.exec('CREATE TABLE t (id INTEGER PRIMARY KEY, v TEXT)');
    const cp = startWalCheckpointer(db, file, { intervalMs: 2, restartFrames: 20 })!;
    // A reader in the middle of a read transaction: a RESTART cannot finish while it lasts.
    const reader = new Database(file);
    reader.exec('BEGIN');
    reader.prepare('SELECT count(*) FROM t').get();
    // Another process's writer (the bench seeds like this) with a 1 s busy timeout keeps writing.
    const writer = new Database(file);
    writer.pragma('busy_timeout = 1000');
    const ins = writer.prepare('INSERT INTO t (v) VALUES (?)');
    for (let round = 0; round < 40; round++) {
      writer.transaction(() => {
        for (let i = 0; i < 50; i++) ins.run('w'.repeat(2000));
      })();
      await new Promise((r) => setTimeout(r, 5));
    }
    expect(writer.prepare('SELECT count(*) FROM t').pluck().get()).toBe(2000);
    reader.exec('COMMIT');
    reader.close();
    writer.close();
    await cp.stop();
    db.close();
  });

  it('does nothing for an in-memory database', () => {
    const db = openDatabase(':memory:');
    expect(startWalCheckpointer(db, ':memory:')).toBeNull();
    db.close();
  });
});
