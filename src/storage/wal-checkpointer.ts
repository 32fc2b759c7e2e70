import { Worker } from 'node:worker_threads';
import type { Db } from './db.js';

/**
 * WAL checkpoints on a worker thread instead of inside commits.
 *
 * SQLite's automatic checkpoint runs in the commit that takes the WAL past 1,000 pages: the
 * committing thread copies the WAL into the database file and waits for two fsyncs. Under ingest
 * (each 512-span OTLP batch of GenAI spans writes about 1,000 pages) that was nearly every commit,
 * on the one thread that serves and writes: bench/ai.ts ingested about 7,300 observations/s with it
 * and about 16,500–20,800/s without it (README, AI agent observability). Here a worker thread with
 * its own connection runs a PASSIVE checkpoint every `intervalMs` (it never blocks the writer; with
 * nothing new it costs nothing), and a RESTART once the WAL is longer than `restartFrames` (a
 * passive checkpoint under continuous writes never catches up, so the WAL could not start over).
 * The worker waits at most 20 ms for locks (a RESTART holds the write lock while it waits for
 * readers: a long wait there stalled other writers past their busy timeout); a round that cannot get
 * in gives up and the next one tries again.
 * Before a RESTART, passive passes catch up with the writer, so the RESTART (during which the
 * server's writer, and its event loop, wait) copies and syncs only a few frames. The writer begins
 * its transactions IMMEDIATE (write-batcher.ts): a deferred one that had read first would fail at
 * once with SQLITE_BUSY while a RESTART holds the lock, instead of waiting for it.
 * The writer's own automatic checkpoint stays as a fallback at `fallbackPages`, should the worker
 * lag or die. Durability is unchanged (synchronous=NORMAL: commits survive a process crash).
 */
export interface WalCheckpointer {
  /** Checkpoint rounds done and the last one's WAL length and frames copied (pages). */
  stats(): { rounds: number; errors: number; lastLog: number; lastCheckpointed: number; lastError: string | null };
  /** Ask for a round now (tests); resolves after it. */
  now(): Promise<void>;
  /** Stops the worker and closes its connection; the writer's automatic checkpoint returns to SQLite's default. */
  stop(): Promise<void>;
}

export interface WalCheckpointerOptions {
  intervalMs?: number;
  restartFrames?: number;
  fallbackPages?: number;
}

export function startWalCheckpointer(db: Db, file: string, opts: WalCheckpointerOptions = {}): WalCheckpointer | null {
  if (file === ':memory:' || db.memory) return null;
  const { intervalMs = 100, restartFrames = 16_384, fallbackPages = 65_536 } = opts;
  const worker = new Worker(new URL('./wal-checkpoint-worker.mjs', import.meta.url), { workerData: { file, intervalMs, restartFrames } });
  worker.unref();
  db.pragma(`wal_autocheckpoint = ${fallbackPages}`);
  const stats = { rounds: 0, errors: 0, lastLog: 0, lastCheckpointed: 0, lastError: null as string | null };
  let waiters: (() => void)[] = [];
  let stopped = false;
  let exited = false;
  const exit = new Promise<void>((resolve) =>
    worker.once('exit', () => {
      exited = true;
      // The worker is gone: the writer checkpoints in its commits again.
      if (!stopped && db.open) db.pragma('wal_autocheckpoint = 1000');
      for (const w of waiters.splice(0)) w();
      resolve();
    }),
  );
  worker.on('error', (err) => {
    stats.errors++;
    stats.lastError = String(err?.message ?? err);
  });
  worker.on('message', (m: { type: string; log?: number; checkpointed?: number; message?: string }) => {
    if (m.type === 'round') {
      stats.rounds++;
      stats.lastLog = m.log ?? 0;
      stats.lastCheckpointed = m.checkpointed ?? 0;
    } else if (m.type === 'error') {
      stats.errors++;
      stats.lastError = m.message ?? null;
    } else return;
    for (const w of waiters.splice(0)) w();
  });
  return {
    stats: () => ({ ...stats }),
    now() {
      if (exited) return Promise.resolve();
      return new Promise<void>((resolve) => {
        waiters.push(resolve);
        worker.postMessage('now');
      });
    },
    async stop() {
      if (stopped) return exit;
      stopped = true;
      // Keep the process alive until the worker has closed its connection.
      worker.ref();
      if (!exited) worker.postMessage('stop');
      await exit;
      waiters = [];
      if (db.open) db.pragma('wal_autocheckpoint = 1000');
    },
  };
}
