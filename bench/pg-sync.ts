/**
 * What a synchronous PostgreSQL call costs the calling thread (issue 20, groundwork for the control
 * store; src/storage/postgres/sync-client.ts), against the same point read in SQLite (better-sqlite3,
 * the embedded default) and through the `pg` client awaited on the same thread, in one run:
 * wall time per call (p50, p99) and the calling thread's CPU per call.
 *
 *   npx tsx bench/pg-sync.ts [calls=5000]      (PostgreSQL at SIGHTLINE_TEST_PG_URL, default postgres://postgres@127.0.0.1:5432/postgres)
 */
import { mkdtempSync, readFileSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { randomBytes } from 'node:crypto';
import Database from 'better-sqlite3';
import pg from 'pg';
import { openSyncPg } from '../src/storage/postgres/sync-client.js';

const N = Number(process.argv[2] ?? 5000);
const URL = process.env.SIGHTLINE_TEST_PG_URL ?? 'postgres://postgres@127.0.0.1:5432/postgres';
const schema = `sl_bench_${randomBytes(4).toString('hex')}`;
const ROWS = 10_000;

const sync = openSyncPg(URL);
sync.query(`CREATE SCHEMA ${schema}`);
sync.query(`CREATE TABLE ${schema}.keys (id bigint PRIMARY KEY, name text NOT NULL, scopes text NOT NULL, created_at bigint NOT NULL)`);
sync.query(`INSERT INTO ${schema}.keys SELECT g, 'key ' || g, 'read,write', g * 1000 FROM generate_series(1, ${ROWS}) g`);

const lite = new Database(join(mkdtempSync(join(tmpdir(), 'sl-bench-pg-')), 'b.db'));
lite.pragma('journal_mode = WAL');
lite.exec('CREATE TABLE keys (id INTEGER PRIMARY KEY, name TEXT NOT NULL, scopes TEXT NOT NULL, created_at INTEGER NOT NULL)');
const ins = lite.prepare('INSERT INTO keys VALUES (?, ?, ?, ?)');
lite.transaction(() => {
  for (let i = 1; i <= ROWS; i++) ins.run(i, `key ${i}`, 'read,write', i * 1000);
})();
const liteGet = lite.prepare('SELECT id, name, scopes, created_at FROM keys WHERE id = ?');

const asyncClient = new pg.Client({ connectionString: URL });
await asyncClient.connect();

const id = () => 1 + Math.floor(Math.random() * ROWS);
async function measure(label: string, call: () => unknown | Promise<unknown>) {
  for (let i = 0; i < 200; i++) await call();
  const ts: number[] = [];
  const c0 = process.cpuUsage();
  for (let i = 0; i < N; i++) {
    const t = performance.now();
    await call();
    ts.push(performance.now() - t);
  }
  const c = process.cpuUsage(c0);
  ts.sort((a, b) => a - b);
  const us = (ms: number) => (ms * 1000).toFixed(0);
  return `| ${label} | ${us(ts[Math.floor(N / 2)]!)} | ${us(ts[Math.floor(N * 0.99)]!)} | ${((c.user + c.system) / N).toFixed(0)} |`;
}

const rows = [
  await measure('SQLite point read (better-sqlite3, in process)', () => liteGet.get(id())),
  await measure('PostgreSQL point read, SyncPg (the thread waits)', () => sync.query(`SELECT id, name, scopes, created_at FROM ${schema}.keys WHERE id = $1`, [id()])),
  await measure('PostgreSQL point read, pg awaited (the thread is free meanwhile)', () => asyncClient.query(`SELECT id, name, scopes, created_at FROM ${schema}.keys WHERE id = $1`, [id()])),
  await measure('PostgreSQL write transaction, SyncPg (BEGIN, UPDATE, COMMIT)', () => sync.transaction(() => sync.query(`UPDATE ${schema}.keys SET created_at = created_at + 1 WHERE id = $1`, [id()]))),
];
console.log(`\n${N} calls each after 200 warm-up calls; ${ROWS} rows; load average ${readFileSync('/proc/loadavg', 'utf8').split(' ').slice(0, 3).join(' ')}\n`);
console.log('| call | p50 µs | p99 µs | process CPU µs per call (all threads) |');
console.log('|---|---:|---:|---:|');
for (const r of rows) console.log(r);

sync.query(`DROP SCHEMA ${schema} CASCADE`);
sync.close();
await asyncClient.end();
