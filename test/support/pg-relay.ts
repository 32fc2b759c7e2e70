/**
 * A TCP relay to PostgreSQL on a port of its own, for tests that take PostgreSQL away from a server
 * (readiness, reconnection). It runs in a worker thread: a server under test in this thread blocks it
 * on every synchronous PostgreSQL call, so a relay here would never get to run.
 */
import { Worker } from 'node:worker_threads';

const RELAY = `
const net = require('node:net');
const { parentPort, workerData } = require('node:worker_threads');
const sockets = new Set();
const server = net.createServer((client) => {
  const upstream = net.connect(workerData.port, workerData.host);
  for (const s of [client, upstream]) { sockets.add(s); s.on('close', () => sockets.delete(s)); s.on('error', () => {}); }
  client.pipe(upstream).pipe(client);
});
server.listen(0, '127.0.0.1', () => parentPort.postMessage(server.address().port));
parentPort.on('message', (m) => {
  if (m === 'close') server.close();
  for (const s of sockets) s.destroy();
  parentPort.postMessage('done');
});
`;

export interface PgRelay {
  /** The database URL through the relay. */
  url: string;
  /** Cuts every connection through it, as a PostgreSQL restart does, and keeps listening. */
  drop(): Promise<void>;
  /** Stops listening and cuts every connection: PostgreSQL is unreachable. */
  close(): Promise<void>;
}

export async function pgRelay(databaseUrl: string): Promise<PgRelay> {
  const target = new URL(databaseUrl);
  const worker = new Worker(RELAY, { eval: true, workerData: { port: Number(target.port || 5432), host: target.hostname } });
  const port = await new Promise<number>((r) => worker.once('message', r));
  const u = new URL(target);
  u.hostname = '127.0.0.1';
  u.port = String(port);
  let closed = false;
  const send = async (m: 'drop' | 'close') => {
    worker.postMessage(m);
    await new Promise((r) => worker.once('message', r));
    await new Promise((r) => setTimeout(r, 200)); // the clients see their sockets close
  };
  return {
    url: u.toString(),
    drop: () => send('drop'),
    async close() {
      if (closed) return;
      closed = true;
      await send('close');
      await worker.terminate();
    },
  };
}
