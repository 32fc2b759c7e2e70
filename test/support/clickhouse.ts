/**
 * ClickHouse engines for the tests (issue 20): a private clickhouse-server (Debian's 18.16, installed
 * by scripts/install-clickhouse.sh) on free ports with its own data directory, and chdb — the
 * ClickHouse 26 engine in-process — behind the same {@link ChEngine} interface, so the same schema
 * and queries are proven on both the oldest release the product supports and a current one.
 */
import { spawn, type ChildProcess } from 'node:child_process';
import { existsSync, mkdirSync, mkdtempSync, rmSync, writeFileSync, copyFileSync } from 'node:fs';
import { createServer } from 'node:net';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { createRequire } from 'node:module';
import { linesInsert, type ChEngine } from '../../src/storage/clickhouse/client.js';

export const CLICKHOUSE_SERVER_BIN = '/usr/sbin/clickhouse-server';

/** A free TCP port on loopback. */
export const freePort = () =>
  new Promise<number>((resolve, reject) => {
    const s = createServer();
    s.once('error', reject);
    s.listen(0, '127.0.0.1', () => {
      const p = (s.address() as { port: number }).port;
      s.close(() => resolve(p));
    });
  });

export interface ClickHouseServer {
  /** http://127.0.0.1:PORT (no database). */
  url: string;
  version: string;
  stop(): Promise<void>;
}

/** Why the server-backed tests cannot run here, or null when they can. */
export function clickHouseServerMissing(): string | null {
  return existsSync(CLICKHOUSE_SERVER_BIN) ? null : `${CLICKHOUSE_SERVER_BIN} is not installed (scripts/install-clickhouse.sh installs Debian's clickhouse-server)`;
}

/** Starts a private clickhouse-server on free ports; resolves once it answers. */
export async function startClickHouseServer(): Promise<ClickHouseServer> {
  const dir = mkdtempSync(join(tmpdir(), 'sightline-ch-'));
  for (const d of ['log', 'data', 'tmp', 'user_files']) mkdirSync(join(dir, d));
  const [http, tcp] = [await freePort(), await freePort()];
  copyFileSync('/etc/clickhouse-server/users.xml', join(dir, 'users.xml'));
  writeFileSync(
    join(dir, 'config.xml'),
    `<?xml version="1.0"?>
<yandex>
  <logger><level>warning</level><log>${dir}/log/server.log</log><errorlog>${dir}/log/err.log</errorlog><size>10M</size><count>1</count></logger>
  <http_port>${http}</http_port>
  <tcp_port>${tcp}</tcp_port>
  <listen_host>127.0.0.1</listen_host>
  <path>${dir}/data/</path>
  <tmp_path>${dir}/tmp/</tmp_path>
  <user_files_path>${dir}/user_files/</user_files_path>
  <users_config>users.xml</users_config>
  <default_profile>default</default_profile>
  <default_database>default</default_database>
  <mark_cache_size>268435456</mark_cache_size>
  <max_concurrent_queries>200</max_concurrent_queries>
</yandex>
`,
  );
  const child: ChildProcess = spawn(CLICKHOUSE_SERVER_BIN, [`--config-file=${join(dir, 'config.xml')}`], { cwd: dir, stdio: 'ignore' });
  const url = `http://127.0.0.1:${http}`;
  let exited = false;
  child.once('exit', () => (exited = true));
  const deadline = Date.now() + 30_000;
  let version = '';
  for (;;) {
    if (exited) throw new Error(`clickhouse-server exited at start (logs in ${dir}/log)`);
    try {
      const r = await fetch(`${url}/?query=${encodeURIComponent('SELECT version()')}`);
      if (r.ok) {
        version = (await r.text()).trim();
        break;
      }
    } catch {
      /* not listening yet */
    }
    if (Date.now() > deadline) throw new Error('clickhouse-server did not answer within 30 s');
    await new Promise((r) => setTimeout(r, 100));
  }
  return {
    url,
    version,
    async stop() {
      if (!exited) {
        const gone = new Promise((r) => child.once('exit', r));
        child.kill('SIGTERM');
        await Promise.race([gone, new Promise((r) => setTimeout(r, 10_000))]);
        if (!exited) child.kill('SIGKILL');
      }
      rmSync(dir, { recursive: true, force: true });
    },
  };
}

/** Drops a database on a server (a test server's, at its close). */
export async function dropDatabase(url: string, database: string): Promise<void> {
  await fetch(`${url}/`, { method: 'POST', body: `DROP DATABASE IF EXISTS \`${database}\`` });
}

interface ChdbSession {
  query(sql: string, format?: string): string;
  cleanup?(): void;
}

/** Why chdb cannot run here, or null. */
export function chdbMissing(): string | null {
  try {
    createRequire(import.meta.url)('chdb');
    return null;
  } catch (e) {
    return `chdb cannot be loaded: ${(e as Error).message.split('\n')[0]}`;
  }
}

let chdbSession: ChdbSession | null = null;
let chdbDbs = 0;

/**
 * The ClickHouse 26 engine in-process (npm `chdb`): the product's SQL through {@link ChEngine}, as
 * the HTTP engine sends it. chdb allows one session (data directory) per process, so engines share
 * it, each with a database of its own, selected (`USE`) before each statement — chdb runs
 * synchronously, so statements of different engines never interleave.
 */
export function createChdbEngine(): ChEngine & { database: string } {
  if (!chdbSession) {
    const { Session } = createRequire(import.meta.url)('chdb') as { Session: new (dir: string) => ChdbSession };
    const dir = mkdtempSync(join(tmpdir(), 'sightline-chdb-'));
    chdbSession = new Session(dir);
    process.once('exit', () => rmSync(dir, { recursive: true, force: true }));
  }
  const session = chdbSession;
  const database = `t${process.pid}_${++chdbDbs}`;
  const run = (sql: string, format?: string) => {
    try {
      session.query(`USE \`${database}\``);
      return format ? session.query(sql, format) : session.query(sql);
    } catch (e) {
      throw new Error(`chdb: ${(e as Error).message}`);
    }
  };
  session.query(`CREATE DATABASE IF NOT EXISTS \`${database}\``);
  return {
    database,
    async command(sql) {
      run(sql);
    },
    async query<T>(sql: string) {
      const out = run(`${sql} SETTINGS output_format_json_quote_64bit_integers = 0`, 'JSONEachRow');
      return out
        .split('\n')
        .filter((l) => l.trim())
        .map((l) => JSON.parse(l) as T);
    },
    async insert(table, rows) {
      if (!rows.length) return;
      run(`INSERT INTO ${table} FORMAT JSONEachRow\n${rows.map((r) => JSON.stringify(r)).join('\n')}`);
    },
    async insertLines(table, columns, pieces) {
      const text = pieces.map((p) => Buffer.from(p.buffer, p.byteOffset, p.byteLength).toString('utf8')).join('');
      if (text) run(`${linesInsert(table, columns)}\n${text}`);
    },
    async close() {
      session.query(`DROP DATABASE IF EXISTS \`${database}\``);
    },
  };
}
