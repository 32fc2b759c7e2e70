// The thread behind SyncPg (sync-client.ts): one pg connection; each request from the port is run
// in order, its answer posted back, then the waiting thread is woken through the shared flag.
import { workerData } from 'node:worker_threads';
import pg from 'pg';

const { url, port, flag } = workerData;
const signal = new Int32Array(flag);
const client = new pg.Client({ connectionString: url });
const connected = client.connect().then(
  () => null,
  (err) => err,
);
client.on('error', () => {}); // a dropped connection fails the next query instead of the thread

const reply = (message) => {
  port.postMessage(message);
  Atomics.store(signal, 0, 1);
  Atomics.notify(signal, 0);
};

let queue = Promise.resolve();
port.on('message', (req) => {
  queue = queue.then(async () => {
    if (req.close) {
      await client.end().catch(() => {});
      reply({ closed: true });
      port.close();
      return;
    }
    const failed = await connected;
    if (failed) return reply({ error: { message: `could not connect to PostgreSQL: ${failed.message}`, code: failed.code ?? 'ECONNECT' } });
    try {
      const res = await client.query({ text: req.sql, values: req.params, rowMode: req.array ? 'array' : undefined });
      reply({ rows: res.rows, rowCount: res.rowCount ?? 0 });
    } catch (err) {
      reply({ error: { message: err.message, code: err.code ?? null } });
    }
  });
});
