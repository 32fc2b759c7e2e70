// The thread behind SyncPg (sync-client.ts): one pg connection; each request from the port is run
// in order, its answer posted back, then the waiting thread is woken through the shared flag.
//
// A lost connection (PostgreSQL restarted, a network cut) is opened again on the next request, so a
// process outlives a PostgreSQL restart. Inside a transaction it cannot be: what the transaction wrote
// is gone with the connection, so every statement of it is refused (SQLSTATE 08006) until its ROLLBACK
// or COMMIT ends it — never run on the new connection outside the transaction.
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

/** The open connection, or null when there is none (not yet opened, or lost). */
let client = null;
/** Between BEGIN and its COMMIT/ROLLBACK. */
let inTransaction = false;
/** The connection was lost inside a transaction: its statements are refused until it ends. */
let lostInTransaction = false;

async function open() {
  const c = new pg.Client({ connectionString: url });
  c.on('error', () => {}); // a dropped connection: 'end' follows
  c.on('end', () => {
    if (client !== c) return;
    client = null;
    if (inTransaction) lostInTransaction = true;
  });
  await c.connect();
  client = c;
}

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
      await client?.end().catch(() => {});
      answer({ closed: true });
      port.close();
      return;
    }
    const sql = typeof req.sql === 'string' ? req.sql.trim().toUpperCase() : '';
    if (lostInTransaction) {
      if (sql === 'ROLLBACK') {
        lostInTransaction = inTransaction = false;
        return answer({ rows: [], rowCount: 0 });
      }
      if (sql === 'COMMIT') lostInTransaction = inTransaction = false;
      return answer({ error: { message: 'The connection to PostgreSQL was lost during this transaction: nothing of it was committed.', code: '08006' } });
    }
    if (!client) {
      try {
        await open();
      } catch (err) {
        return answer({ error: { message: `could not connect to PostgreSQL: ${err.message}`, code: err.code ?? 'ECONNECT' } });
      }
    }
    const c = client;
    try {
      // Statements the caller deferred (savepoints opened and released) run first, in order.
      for (const s of req.before ?? []) await c.query(s);
      if (req.guard) await c.query('SAVEPOINT sl_guard');
      let res;
      try {
        res = await c.query({ text: req.sql, values: req.params, rowMode: req.array ? 'array' : undefined, types });
      } catch (err) {
        if (req.guard) await c.query('ROLLBACK TO SAVEPOINT sl_guard').catch(() => {});
        throw err;
      }
      if (req.guard) await c.query('RELEASE SAVEPOINT sl_guard');
      if (sql === 'BEGIN') inTransaction = true;
      else if (sql === 'COMMIT' || sql === 'ROLLBACK') inTransaction = false;
      // bytea columns (oid 17) come as Buffers: the client turns them back into Buffers (sync-client.ts asBuffers).
      const binary = res.fields?.some((f) => f.dataTypeID === 17) || undefined;
      answer({ rows: res.rows, rowCount: res.rowCount ?? 0, binary });
    } catch (err) {
      // A failed COMMIT or ROLLBACK ends the transaction as well.
      if (sql === 'COMMIT' || sql === 'ROLLBACK') inTransaction = false;
      answer({ error: { message: err.message, code: err.code ?? null } });
    }
  });
});
