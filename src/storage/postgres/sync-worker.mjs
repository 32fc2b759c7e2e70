// The thread behind SyncPg (sync-client.ts): one pg connection; each request from the port is run
// in order, its answer posted back, then the waiting thread is woken through the shared flag.
import { workerData } from 'node:worker_threads';
import pg from 'pg';

const { url, port, flag } = workerData;
// Values as better-sqlite3 gives them: 64-bit integers and numerics as numbers, booleans as 1/0.
const types = {
  getTypeParser(oid, format) {
    if (format === 'text' || format === undefined) {
      if (oid === 20 || oid === 1700) return (v) => Number(v);
      if (oid === 16) return (v) => (v === 't' ? 1 : 0);
    }
    return pg.types.getTypeParser(oid, format);
  },
};
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
  const answer = (m) => reply({ ...m, id: req.id });
  queue = queue.then(async () => {
    if (req.close) {
      await client.end().catch(() => {});
      answer({ closed: true });
      port.close();
      return;
    }
    const failed = await connected;
    if (failed) return answer({ error: { message: `could not connect to PostgreSQL: ${failed.message}`, code: failed.code ?? 'ECONNECT' } });
    try {
      // Statements the caller deferred (savepoints opened and released) run first, in order.
      for (const sql of req.before ?? []) await client.query(sql);
      if (req.guard) await client.query('SAVEPOINT sl_guard');
      let res;
      try {
        res = await client.query({ text: req.sql, values: req.params, rowMode: req.array ? 'array' : undefined, types });
      } catch (err) {
        if (req.guard) await client.query('ROLLBACK TO SAVEPOINT sl_guard').catch(() => {});
        throw err;
      }
      if (req.guard) await client.query('RELEASE SAVEPOINT sl_guard');
      // bytea columns (oid 17) come as Buffers: the client turns them back into Buffers (sync-client.ts asBuffers).
      const binary = res.fields?.some((f) => f.dataTypeID === 17) || undefined;
      answer({ rows: res.rows, rowCount: res.rowCount ?? 0, binary });
    } catch (err) {
      answer({ error: { message: err.message, code: err.code ?? null } });
    }
  });
});
