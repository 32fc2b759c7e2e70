// WAL checkpoint worker (src/storage/wal-checkpointer.ts). Plain ESM: it needs only better-sqlite3,
// and worker threads do not inherit the TypeScript loader of the main thread.
import { parentPort, workerData } from 'node:worker_threads';
import Database from 'better-sqlite3';

const { file, intervalMs, restartFrames } = workerData;
const db = new Database(file);
db.pragma('busy_timeout = 5000');
db.pragma('synchronous = NORMAL');
let stopped = false;

/** One round: copy committed WAL frames into the database file; a long WAL is restarted (blocks writers briefly). */
function round() {
  if (stopped) return;
  let r;
  try {
    r = db.pragma('wal_checkpoint(PASSIVE)')[0];
    // Under continuous writes a passive checkpoint never catches the writer, so the WAL cannot start
    // over and grows: past restartFrames, wait for the writer and restart it.
    if (r && r.log > restartFrames) r = db.pragma('wal_checkpoint(RESTART)')[0];
    parentPort.postMessage({ type: 'round', busy: r?.busy ?? 0, log: r?.log ?? 0, checkpointed: r?.checkpointed ?? 0 });
  } catch (err) {
    parentPort.postMessage({ type: 'error', message: String(err?.message ?? err) });
  }
}

const timer = setInterval(round, intervalMs);
parentPort.on('message', (m) => {
  if (m === 'now') round();
  else if (m === 'stop') {
    stopped = true;
    clearInterval(timer);
    try {
      db.close();
    } finally {
      parentPort.postMessage({ type: 'stopped' });
      parentPort.close();
    }
  }
});
parentPort.postMessage({ type: 'ready' });
