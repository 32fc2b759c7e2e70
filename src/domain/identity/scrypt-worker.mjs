// Password hashing thread (issue 10 item 4). Plain ESM on purpose: worker threads do not inherit
// the TypeScript loader of the main thread. It runs scrypt at a lower OS priority than the main
// thread (Linux: nice is per thread), so a sign-in flood takes only the CPU the event loop does not
// need. Protocol: { id, password, salt, keylen, opts } -> { id, key } | { id, error }.
import { scryptSync } from 'node:crypto';
import { readFileSync } from 'node:fs';
import { setPriority } from 'node:os';
import { parentPort, workerData } from 'node:worker_threads';

if (!parentPort) throw new Error('scrypt-worker.mjs must be started as a worker thread');
const port = parentPort;
if (process.platform === 'linux' && Number.isInteger(workerData?.nice) && workerData.nice > 0) {
  try {
    const tid = Number(readFileSync('/proc/thread-self/stat', 'utf8').split(' ', 1)[0]);
    if (Number.isInteger(tid) && tid > 0 && tid !== process.pid) setPriority(tid, workerData.nice);
  } catch {
    // run at the normal priority
  }
}
port.on('message', (m) => {
  try {
    const key = scryptSync(m.password, Buffer.from(m.salt), m.keylen, m.opts);
    port.postMessage({ id: m.id, key });
  } catch (err) {
    port.postMessage({ id: m.id, error: String(err?.message ?? err) });
  }
});
