/**
 * Issue 20 item 4, the proxy of docker-compose.yml: deploy/nginx.conf in front of three processes
 * (SIGHTLINE_INSTANCE sightline-1..3) over one PostgreSQL and one ClickHouse database, each with its
 * own SQLite file, as the compose file runs them. The compose host names (`sightline-N:8080`) become
 * loopback ports; everything else is the file as shipped. An MCP session opened through the proxy
 * keeps working (its requests go back to the process that holds it: the session id starts with that
 * process's name), telemetry sent through the proxy is read back through it from any process. Runs in
 * the scale-out project when Debian's nginx is installed (scripts/install-test-tools.sh).
 */
import { spawn, type ChildProcess } from 'node:child_process';
import { existsSync, mkdirSync, mkdtempSync, readFileSync, rmSync, writeFileSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { Client } from '@modelcontextprotocol/sdk/client/index.js';
import { StreamableHTTPClientTransport } from '@modelcontextprotocol/sdk/client/streamableHttp.js';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { dropDatabase } from '../support/clickhouse.js';
import { createPgDatabase, type PgDatabase } from '../support/postgres.js';
import { freePort, printedKeys, sendTrace, startProcess, stopProcesses, type Proc } from '../support/processes.js';

const NGINX = '/usr/sbin/nginx';
const serverUrl = process.env.SIGHTLINE_TEST_CLICKHOUSE_URL;
const scaleOut = process.env.SIGHTLINE_TEST_CLICKHOUSE === 'server' && !!process.env.SIGHTLINE_TEST_POSTGRES;
const missing = !scaleOut ? 'runs in the scale-out project only' : !existsSync(NGINX) ? `${NGINX} is not installed (scripts/install-test-tools.sh installs it)` : null;
if (missing && scaleOut) console.log(`deploy/proxy: skipped: ${missing}`);

describe.skipIf(!!missing)('deploy/nginx.conf in front of three processes', () => {
  const dir = mkdtempSync(join(tmpdir(), 'sightline-proxy-'));
  const database = `proxy_${process.pid}_${Date.now()}`;
  const procs: Proc[] = [];
  let pg: PgDatabase;
  let nginx: ChildProcess;
  let base = '';
  let keys: ReturnType<typeof printedKeys>;

  beforeAll(async () => {
    pg = await createPgDatabase();
    const env = (i: number) => ({
      SIGHTLINE_DATABASE_URL: pg.url,
      SIGHTLINE_CLICKHOUSE_URL: `${serverUrl}/${database}`,
      SIGHTLINE_DB: join(dir, `sightline-${i}.db`),
      SIGHTLINE_INSTANCE: `sightline-${i}`,
    });
    procs.push(await startProcess(env(1))); // the first start sets the databases up and prints the keys
    keys = printedKeys(procs[0]!.out);
    procs.push(...(await Promise.all([startProcess(env(2)), startProcess(env(3))])));

    const port = await freePort();
    const conf = readFileSync(join(import.meta.dirname, '..', '..', 'deploy', 'nginx.conf'), 'utf8')
      .replace(/sightline-([123]):8080/g, (_, n: string) => `127.0.0.1:${procs[Number(n) - 1]!.port}`)
      .replace('listen 8080;', `listen 127.0.0.1:${port};`);
    expect(conf).not.toMatch(/sightline-\d:8080/);
    mkdirSync(join(dir, 'logs'));
    writeFileSync(join(dir, 'nginx.conf'), conf);
    nginx = spawn(NGINX, ['-p', dir, '-c', join(dir, 'nginx.conf'), '-g', `daemon off; pid ${join(dir, 'nginx.pid')}; error_log ${join(dir, 'logs', 'error.log')};`], { stdio: 'ignore' });
    base = `http://127.0.0.1:${port}`;
    for (let i = 0; ; i++) {
      try {
        if ((await fetch(`${base}/readyz`)).ok) break;
      } catch {
        /* not listening yet */
      }
      if (i > 100 || nginx.exitCode !== null) throw new Error(`nginx did not start: ${existsSync(join(dir, 'logs', 'error.log')) ? readFileSync(join(dir, 'logs', 'error.log'), 'utf8') : ''}`);
      await new Promise((r) => setTimeout(r, 100));
    }
  }, 120_000);

  afterAll(async () => {
    if (nginx && nginx.exitCode === null) await new Promise((r) => (nginx.once('exit', r), nginx.kill('SIGTERM')));
    await stopProcesses(procs);
    await dropDatabase(serverUrl!, database);
    await pg?.drop();
    rmSync(dir, { recursive: true, force: true });
  });

  it('keeps an MCP session opened through the proxy on the process that holds it', async () => {
    const transport = new StreamableHTTPClientTransport(new URL(`${base}/mcp`), { requestInit: { headers: { 'x-service-key': keys.admin } } });
    const client = new Client({ name: 'proxy-test', version: '1' });
    await client.connect(transport);
    try {
      const session = transport.sessionId!;
      const owner = /^sightline-([123])\./.exec(session)?.[1];
      expect(owner).toBeDefined();
      // Six calls: round robin alone would send most of them to a process that does not hold the session.
      for (let i = 0; i < 6; i++) {
        const r = await client.callTool({ name: 'search', arguments: { query: 'traces' } });
        expect(r.isError).toBeFalsy();
      }
      // Sent straight to another process, the session is unknown there: the proxy's routing is what kept it.
      const other = procs[Number(owner) % 3]!;
      const direct = await fetch(`${other.url}/mcp`, {
        method: 'POST',
        headers: { 'content-type': 'application/json', accept: 'application/json, text/event-stream', 'x-service-key': keys.admin, 'mcp-session-id': session, 'mcp-protocol-version': '2025-06-18' },
        body: JSON.stringify({ jsonrpc: '2.0', id: 9, method: 'tools/list', params: {} }),
      });
      await direct.arrayBuffer();
      expect(direct.status).toBe(404);
    } finally {
      await client.close();
    }
  });

  it('takes telemetry and answers reads through the proxy from any process', async () => {
    const traceId = await sendTrace(base, keys.ingest, 'proxied', 'GET /p');
    expect(traceId).not.toBeNull();
    // Three reads in a row: round robin puts them on the three processes.
    for (let i = 0; i < 3; i++) {
      const r = await fetch(`${base}/v1/projects/${keys.project}/traces/${traceId}`, { headers: { 'x-service-key': keys.admin } });
      expect(r.status).toBe(200);
      const t = (await r.json()) as { spans: { name: string }[] };
      expect(t.spans.map((s) => s.name)).toEqual(['GET /p']);
    }
  });
});
