/**
 * MCP execute vs REST, in the same run:   npx tsx bench/mcp.ts [iterations]
 *
 * Seeds 500 feedback records, then measures (p50 / p95, ms):
 *  - an MCP `execute` (Streamable HTTP, real SDK client) making 1 and 10 `feedback.list` calls,
 *    against the same calls made over REST (sequential fetches);
 *  - the sandbox overhead: execute time minus the time its calls took themselves, both as the MCP
 *    client sees it (transport + sandbox) and at the executor (sandbox only);
 *  - executes per second with 8 concurrent clients (8 sessions).
 */
import http from 'node:http';
import type { AddressInfo } from 'node:net';
import { randomUUID } from 'node:crypto';
import { mkdtempSync, rmSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { pino } from 'pino';
import { Client } from '@modelcontextprotocol/sdk/client/index.js';
import { StreamableHTTPClientTransport } from '@modelcontextprotocol/sdk/client/streamableHttp.js';
import { createSightline } from '../src/server.js';
import { bootstrapOrganization } from '../src/core/bootstrap.js';
import { authenticate } from '../src/core/authenticate.js';
import { localCaller, runExecute } from '../src/mcp/execute.js';
import { createQuickJsExecutor } from '../sandbox/quickjs-executor.js';

const ITER = Number(process.argv[2] ?? 200);
const CONCURRENCY = 8;
const THROUGHPUT_MS = 5_000;

function pct(xs: number[], p: number): number {
  const s = [...xs].sort((a, b) => a - b);
  return s[Math.min(s.length - 1, Math.floor((p / 100) * s.length))]!;
}
const f = (n: number) => n.toFixed(2);

async function main() {
  const dir = mkdtempSync(join(tmpdir(), 'sightline-bench-mcp-'));
  const s = createSightline(
    { dbFile: join(dir, 'bench.db'), port: 0, host: '127.0.0.1', rateLimit: { limit: 1_000_000_000, windowSeconds: 60 }, logLevel: 'silent' },
    { logger: pino({ level: 'silent' }) },
  );
  const boot = bootstrapOrganization(s.services, { now: Date.now() });
  const now = Date.now();
  for (let i = 0; i < 500; i++) {
    s.services.feedback.insert(boot.project_id, {
      id: randomUUID(),
      message: `Feedback number ${i}: the export button does nothing on page ${i % 17}`,
      contact_email: `user${i}@example.com`,
      name: `User ${i}`,
      environment: i % 3 ? 'production' : 'staging',
      user_id: `u${i}`,
      release: `1.${i % 5}.0`,
      service: 'web',
      url: `https://app.example.com/page/${i % 17}`,
      session_id: null,
      replay_id: null,
      trace_id: null,
      error_group_id: null,
      metadata: { plan: i % 2 ? 'pro' : 'free' },
      source: 'api',
      created_at: now - i * 1000,
    });
  }
  const server = http.createServer(s.app.callback());
  await new Promise<void>((r) => server.listen(0, '127.0.0.1', r));
  const url = `http://127.0.0.1:${(server.address() as AddressInfo).port}`;
  const key = boot.admin_key;
  const restUrl = `${url}/v1/projects/${boot.project_id}/feedback?limit=20&environment=production`;

  const connect = async () => {
    const transport = new StreamableHTTPClientTransport(new URL(`${url}/mcp`), { requestInit: { headers: { 'x-service-key': key } } });
    const client = new Client({ name: 'bench', version: '1' });
    await client.connect(transport);
    return client;
  };
  const script = (n: number) =>
    `let rows = 0; for (let i = 0; i < ${n}; i++) { const p = await api.feedback.list({ limit: 20, environment: 'production' }); rows += p.data.length; } return rows;`;

  const client = await connect();
  const exec = async (n: number) => {
    const t0 = performance.now();
    const r = await client.callTool({ name: 'execute', arguments: { code: script(n) } });
    const ms = performance.now() - t0;
    const out = r.structuredContent as { calls: Array<{ ms: number }>; error: unknown };
    if (out.error) throw new Error(JSON.stringify(out.error));
    return { ms, callsMs: out.calls.reduce((a, c) => a + c.ms, 0) };
  };
  const rest = async (n: number) => {
    const t0 = performance.now();
    for (let i = 0; i < n; i++) {
      const res = await fetch(restUrl, { headers: { 'x-service-key': key } });
      if (!res.ok) throw new Error(`REST ${res.status}`);
      await res.json();
    }
    return performance.now() - t0;
  };

  // Warm-up: workers, JIT, prepared statements.
  for (let i = 0; i < 30; i++) {
    await exec(1);
    await rest(1);
  }

  const rows: Array<[string, number[]]> = [];
  for (const n of [1, 10]) {
    const e: number[] = [];
    const over: number[] = [];
    const r: number[] = [];
    for (let i = 0; i < ITER; i++) {
      const x = await exec(n);
      e.push(x.ms);
      over.push(x.ms - x.callsMs);
      r.push(await rest(n));
    }
    rows.push([`MCP execute, ${n} × feedback.list`, e], [`REST, ${n} × GET feedback (sequential)`, r], [`  execute − its calls (client-observed), ${n} call${n > 1 ? 's' : ''}`, over]);
  }

  // Sandbox alone: the executor with an in-process host, execute wall time minus the calls' own time.
  const executor = createQuickJsExecutor();
  const principal = authenticate(s.services, key, Date.now())!;
  const caller = localCaller(s.core, principal);
  const ops = [...s.core.operations.values()].filter((o) => !o.sensitive).map((o) => o.operationId);
  for (let i = 0; i < 30; i++) await runExecute(executor, script(1), ops, caller.call);
  for (const n of [0, 1, 10]) {
    const over: number[] = [];
    for (let i = 0; i < ITER; i++) {
      const t0 = performance.now();
      const r = await runExecute(executor, n ? script(n) : 'return 1', ops, caller.call);
      over.push(performance.now() - t0 - r.calls.reduce((a, c) => a + c.ms, 0));
    }
    rows.push([`sandbox overhead at the executor, ${n} call${n === 1 ? '' : 's'}`, over]);
  }
  await executor.close();

  // Throughput: 8 clients (8 sessions) executing a 1-call script back to back.
  const clients = await Promise.all(Array.from({ length: CONCURRENCY }, connect));
  let done = 0;
  const until = performance.now() + THROUGHPUT_MS;
  const t0 = performance.now();
  await Promise.all(
    clients.map(async (c) => {
      while (performance.now() < until) {
        const r = await c.callTool({ name: 'execute', arguments: { code: script(1) } });
        if ((r.structuredContent as { error: unknown }).error) throw new Error('execute failed');
        done++;
      }
    }),
  );
  const perSec = done / ((performance.now() - t0) / 1000);
  let restDone = 0;
  const restUntil = performance.now() + THROUGHPUT_MS;
  const r0 = performance.now();
  await Promise.all(
    Array.from({ length: CONCURRENCY }, async () => {
      while (performance.now() < restUntil) {
        await rest(1);
        restDone++;
      }
    }),
  );
  const restPerSec = restDone / ((performance.now() - r0) / 1000);

  console.log(`\nMCP execute vs REST — ${ITER} iterations each, 500 feedback rows, feedback.list limit 20 (ms)\n`);
  console.log(`| measurement | p50 | p95 |`);
  console.log(`|---|---:|---:|`);
  for (const [name, xs] of rows) console.log(`| ${name} | ${f(pct(xs, 50))} | ${f(pct(xs, 95))} |`);
  console.log(`\n| throughput, ${CONCURRENCY} concurrent clients, 1-call script | per second |`);
  console.log(`|---|---:|`);
  console.log(`| MCP executes | ${perSec.toFixed(0)} |`);
  console.log(`| REST requests (same call) | ${restPerSec.toFixed(0)} |`);

  await Promise.all([client, ...clients].map((c) => c.close()));
  await new Promise<void>((r) => {
    server.close(() => r());
    server.closeAllConnections();
  });
  await s.close();
  rmSync(dir, { recursive: true, force: true });
}

await main();
