/**
 * Write transactions wait for the write lock instead of failing: they take it first (BEGIN
 * IMMEDIATE). As deferred transactions that read and then wrote, they failed at once with
 * SQLITE_BUSY whenever another connection held the write lock at that moment (the WAL checkpoint
 * worker's RESTART does, for as long as it copies the log; so does another process on the file):
 * an expiry batch's failure ended the whole pass, an upsert's failed its request.
 */
import { afterEach, describe, expect, it } from 'vitest';
import { createRequire } from 'node:module';
import { Worker } from 'node:worker_threads';
import { mkdtempSync, rmSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { openDatabase } from '../../src/storage/db.js';
import { createRetentionRepo, EXPIRY_TARGETS } from '../../src/storage/retention-repo.js';
import { createSqliteTelemetryWriter } from '../../src/storage/sqlite-telemetry-store.js';
import { withLogRollups } from '../../src/storage/log-rollups.js';
import type { LogRecordOut } from '../../src/domain/telemetry-types.js';

const require = createRequire(import.meta.url);
const dirs: string[] = [];
afterEach(() => {
  for (const d of dirs.splice(0)) rmSync(d, { recursive: true, force: true });
});

/** Another thread takes the write lock, writes, and holds it `ms` before committing; resolves once it holds it. */
async function holdWriteLock(file: string, ms: number): Promise<{ done: Promise<void> }> {
  const worker = new Worker(
    `const { workerData, parentPort } = require('node:worker_threads');
     const Database = require(workerData.module);
     const db = new Database(workerData.file);
     db.pragma('busy_timeout = 5000');
     db.exec('BEGIN IMMEDIATE');
     db.prepare("INSERT INTO retention_settings (project_id, kind, days, updated_at) VALUES ('1', 'replays', 7, 0) ON CONFLICT DO UPDATE SET updated_at = updated_at + 1").run();
     parentPort.postMessage('held');
     Atomics.wait(new Int32Array(new SharedArrayBuffer(4)), 0, 0, workerData.ms);
     db.exec('COMMIT');
     db.close();`,
    { eval: true, workerData: { file, ms, module: require.resolve('better-sqlite3') } },
  );
  await new Promise<void>((resolve, reject) => {
    worker.once('message', () => resolve());
    worker.once('error', reject);
  });
  return { done: new Promise<void>((resolve) => worker.once('exit', () => resolve())) };
}

describe('expiry under a held write lock', () => {
  it('waits for the lock and deletes the batch (logs: keys read first, then the full-text and rollup rows)', async () => {
    const dir = mkdtempSync(join(tmpdir(), 'sl-expiry-locked-'));
    dirs.push(dir);
    const file = join(dir, 'x.db');
    const db = openDatabase(file);
    const writer = withLogRollups(db, createSqliteTelemetryWriter(db));
    const scope = { name: 's', version: '1', attributes: {} };
    const logs = Array.from({ length: 20 }, (_, i): LogRecordOut => ({
      time_ms: 1_000 + i, observed_time_ms: 1_000 + i, severity_number: 9, severity_text: 'INFO', body: `old record ${i}`, attributes: { n: i },
      trace_id: '', span_id: '', flags: 0, event_name: '', resource: { 'service.name': 'api' }, scope, service_name: 'api',
    }));
    writer.insertLogs('1', logs, 'otlp', 2_000);
    const retention = createRetentionRepo(db);
    const target = EXPIRY_TARGETS.find((t) => t.table === 'logs')!;

    const lock = await holdWriteLock(file, 300);
    const t0 = Date.now();
    expect(retention.expireBatch(target, '1', 10_000, 8)).toBe(8); // waited for the other thread's commit
    expect(Date.now() - t0).toBeGreaterThanOrEqual(100);
    await lock.done;
    expect(retention.expireBatch(target, '1', 10_000, 100)).toBe(12);
    expect(db.prepare('SELECT count(*) FROM logs').pluck().get()).toBe(0);
    db.close();
  });

  it('any transaction opened with db.transaction that reads, then writes', async () => {
    const dir = mkdtempSync(join(tmpdir(), 'sl-locked-'));
    dirs.push(dir);
    const file = join(dir, 'x.db');
    const db = openDatabase(file);
    const read = db.prepare("SELECT days FROM retention_settings WHERE project_id = '2' AND kind = 'logs'").pluck();
    const write = db.prepare("INSERT INTO retention_settings (project_id, kind, days, updated_at) VALUES ('2', 'logs', ?, 0) ON CONFLICT DO UPDATE SET days = excluded.days");
    const upsert = db.transaction((days: number) => {
      const before = read.get();
      write.run(days);
      return before ?? null;
    });
    expect(upsert(7)).toBeNull();
    const lock = await holdWriteLock(file, 300);
    expect(upsert(14)).toBe(7);
    await lock.done;
    expect(read.get()).toBe(14);
    // Still there for a caller that wants it: the deferred form.
    expect(typeof upsert.deferred).toBe('function');
    db.close();
  });
});
