// WAL checkpoint worker (src/storage/wal-checkpointer.ts). Plain ESM: it needs only better-sqlite3,
// and worker threads do not inherit the TypeScript loader of the main thread.
import { parentPort, workerData } from 'node:worker_threads';
import Database from 'better-sqlite3';

const { file, intervalMs, restartFrames } = workerData;
const db = new Database(file);
// Short waits only: a RESTART holds the write lock while it waits for readers, so a long busy
// timeout here would stall the server's writer (and fail it with SQLITE_BUSY after its own 5 s).
// A round that cannot get in gives up; the next one tries again.
db.pragma('busy_timeout = 20');
db.pragma('synchronous = NORMAL');
let stopped = false;
let nextRestart = 0;
/** Passive passes at most before a RESTART, and the new frames under which a pass ends them. */
const CATCH_UP_PASSES = 4;
const CATCH_UP_FRAMES = 256;

/** One round: copy committed WAL frames into the database file; a long WAL is restarted (blocks writers briefly). */
function round() {
  if (stopped) return;
  let r;
  try {
    r = db.pragma('wal_checkpoint(PASSIVE)')[0];
    // Under continuous writes a passive checkpoint never catches the writer, so the WAL cannot start
    // over and grows: past restartFrames, wait for the writer and restart it.
    // A RESTART that could not finish (a reader still on an old snapshot) is not tried again for a
    // second: each try holds the write lock for up to the busy timeout.
    if (r && r.log > restartFrames && Date.now() >= nextRestart) {
      // A RESTART holds the write lock while it copies what the last pass left and syncs the file:
      // the server's writer waits (its event loop with it). Passive passes first, while the writer
      // goes on, until one finds little new (the writer committed under CATCH_UP_FRAMES meanwhile),
      // so the RESTART copies and syncs only a few frames.
      for (let pass = 0; pass < CATCH_UP_PASSES; pass++) {
        const before = r.log;
        r = db.pragma('wal_checkpoint(PASSIVE)')[0];
        if (!r || r.log < before || r.log - before < CATCH_UP_FRAMES) break;
      }
      r = db.pragma('wal_checkpoint(RESTART)')[0];
      if (r?.busy) nextRestart = Date.now() + 1000;
    }
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
