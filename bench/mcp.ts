/**
 * MCP execute overhead, now (before runtime reuse and call batching) vs new, in the same run:
 *
 *   npx tsx bench/mcp.ts [iterations]
 *
 * Seeds 500 feedback records and serves MCP over Streamable HTTP twice from one process: with the
 * sandbox as it is ("new": a pooled QuickJS runtime, a fresh context per execute built ahead of
 * time, the calls of one tick in one round trip) and with the sandbox in baseline mode ("now": a
 * new runtime, context and prelude per execute, one round trip per call). A third column, "msg",
 * is the sandbox as shipped but with host calls as messages instead of the shared channel
 * (QuickJsExecutorOptions.sharedChannel false): the before/after of that change. Iterations
 * alternate between the variants so all see the same machine load.
 *
 * Overhead = what the real SDK client waits for an execute, minus the time the same operations take
 * when called directly in-process (measured right before, in the same way: one after another, or
 * all started at once). Also: the same at the executor (sandbox only, no MCP or HTTP), REST for
 * reference, and executes per second with 8 concurrent clients.
 */
import http from 'node:http';
import type { AddressInfo } from 'node:net';
import { randomUUID } from 'node:crypto';
import { mkdtempSync, readFileSync, rmSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import Koa from 'koa';
import Router from '@koa/router';
import { pino } from 'pino';
import { Client } from '@modelcontextprotocol/sdk/client/index.js';
import { StreamableHTTPClientTransport } from '@modelcontextprotocol/sdk/client/streamableHttp.js';
import { createSightline } from '../src/server.js';
import { bootstrapOrganization } from '../src/core/bootstrap.js';
import { authenticate } from '../src/core/authenticate.js';
import { localCaller, runExecute } from '../src/mcp/execute.js';
import { mountMcp } from '../src/mcp/http.js';
import { createQuickJsExecutor } from '../sandbox/quickjs-executor.js';

const ITER = Number(process.argv[2] ?? 200);
// The throughput phase runs 8 concurrent executes with one key: allow them (default 2 per credential).
process.env.SIGHTLINE_SANDBOX_PER_CREDENTIAL = '8';
const CONCURRENCY = 8;
const THROUGHPUT_MS = 4_000;

function pct(xs: number[], p: number): number {
  const s = [...xs].sort((a, b) => a - b);
  return s[Math.min(s.length - 1, Math.floor((p / 100) * s.length))]!;
}
const f = (n: number) => n.toFixed(2);

async function listen(callback: http.RequestListener): Promise<{ url: string; server: http.Server }> {
  const server = http.createServer(callback);
  await new Promise<void>((r) => server.listen(0, '127.0.0.1', r));
  return { url: `http://127.0.0.1:${(server.address() as AddressInfo).port}`, server };
}

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
  // "new": the server as shipped. "now": the same server, MCP mounted with a baseline-mode sandbox.
  const main = await listen(s.app.callback());
  const baselineExecutor = createQuickJsExecutor({ perCredential: 8 }, { baseline: true });
  const legacyApp = new Koa();
  const legacyRouter = new Router();
  mountMcp(s, legacyRouter, { executor: baselineExecutor });
  legacyApp.use(legacyRouter.routes());
  const legacy = await listen(legacyApp.callback());
  const msgExecutor = createQuickJsExecutor({ perCredential: 8 }, { sharedChannel: false });
  const msgApp = new Koa();
  const msgRouter = new Router();
  mountMcp(s, msgRouter, { executor: msgExecutor });
  msgApp.use(msgRouter.routes());
  const msgServer = await listen(msgApp.callback());

  const key = boot.admin_key;
  const restUrl = `${main.url}/v1/projects/${boot.project_id}/feedback?limit=20&environment=production`;
  const connect = async (base: string) => {
    const transport = new StreamableHTTPClientTransport(new URL(`${base}/mcp`), { requestInit: { headers: { 'x-service-key': key } } });
    const client = new Client({ name: 'bench', version: '1' });
    await client.connect(transport);
    return client;
  };
  const call = `api.feedback.list({ limit: 20, environment: 'production' })`;
  const scripts: Record<string, string> = {
    '0 calls': 'return 1',
    '1 call': `const p = await ${call}; return p.data.length;`,
    '10 calls, one after another': `let rows = 0; for (let i = 0; i < 10; i++) { const p = await ${call}; rows += p.data.length; } return rows;`,
    '10 calls in one tick (Promise.all)': `const ps = await Promise.all(Array.from({ length: 10 }, () => ${call})); return ps.length;`,
  };
  const aims: Record<string, string> = { '1 call': '≤ 2 ms', '10 calls, one after another': '≤ 4 ms', '10 calls in one tick (Promise.all)': '≤ 4 ms' };

  const clients = { now: await connect(legacy.url), msg: await connect(msgServer.url), new: await connect(main.url) };
  const principal = authenticate(s.services, key, Date.now())!;
  const caller = localCaller(s.core, principal);
  const counts: Record<string, [number, boolean]> = {
    '0 calls': [0, false],
    '1 call': [1, false],
    '10 calls, one after another': [10, false],
    '10 calls in one tick (Promise.all)': [10, true],
  };
  /** The same operations called directly in-process: what an execute's overhead is measured against. */
  /** CPU time of the whole process (every thread: client, server, sandbox workers), in ms. */
  const cpuMs = () => {
    const u = process.cpuUsage();
    return (u.user + u.system) / 1000;
  };
  let lastDirectCpu = 0;
  const direct = async (name: string) => {
    const [n, parallel] = counts[name]!;
    const input = { limit: 20, environment: 'production' };
    const c0 = cpuMs();
    const t0 = performance.now();
    if (parallel) await Promise.all(Array.from({ length: n }, () => caller.call('feedback.list', input)));
    else for (let i = 0; i < n; i++) await caller.call('feedback.list', input);
    lastDirectCpu = cpuMs() - c0;
    return performance.now() - t0;
  };
  const exec = async (client: Client, name: string) => {
    const base = await direct(name);
    const baseCpu = lastDirectCpu;
    const c0 = cpuMs();
    const t0 = performance.now();
    const r = await client.callTool({ name: 'execute', arguments: { code: scripts[name]! } });
    const ms = performance.now() - t0;
    const cpu = cpuMs() - c0 - baseCpu;
    const out = r.structuredContent as { error: unknown };
    if (out.error) throw new Error(JSON.stringify(out.error));
    return { ms, over: ms - base, cpu };
  };
  const rest = async () => {
    const t0 = performance.now();
    const res = await fetch(restUrl, { headers: { 'x-service-key': key } });
    if (!res.ok) throw new Error(`REST ${res.status}`);
    await res.json();
    return performance.now() - t0;
  };

  const loadavg = () => readFileSync('/proc/loadavg', 'utf8').split(' ').slice(0, 3).join(' ');
  const loadStart = loadavg();
  // Warm-up: workers, JIT, prepared statements.
  for (let i = 0; i < 30; i++) for (const c of Object.values(clients)) await exec(c, '1 call');
  for (let i = 0; i < 30; i++) await rest();

  type Row = { name: string; now: number[]; msg: number[]; new: number[]; aim: string };
  const rows: Row[] = [];
  // The order of the variants rotates: a worker finishing one execute keeps working for a moment
  // (it builds the next run's context), which the variant measured right after it would pay for.
  const variants = ['now', 'msg', 'new'] as const;
  const rotation = (i: number) => [...variants.slice(i % 3), ...variants.slice(0, i % 3)];
  // Wall-clock overhead moves with the machine's load; the CPU the process spent (all threads, minus
  // the same operations called directly) does much less.
  const cpuRows: Row[] = [];
  for (const name of Object.keys(scripts)) {
    const row: Row = { name: `MCP execute overhead as the client sees it, ${name}`, now: [], msg: [], new: [], aim: aims[name] ?? '' };
    const cpuRow: Row = { name: `MCP execute, process CPU ms beyond the direct calls, ${name}`, now: [], msg: [], new: [], aim: '' };
    for (let i = 0; i < ITER; i++) {
      for (const which of rotation(i)) {
        const m = await exec(clients[which], name);
        row[which].push(m.over);
        cpuRow[which].push(m.cpu);
      }
    }
    rows.push(row);
    cpuRows.push(cpuRow);
  }
  rows.push(...cpuRows);

  // Sandbox alone: the executor with an in-process host (no MCP, no HTTP).
  const executors = { now: createQuickJsExecutor({}, { baseline: true }), msg: createQuickJsExecutor({}, { sharedChannel: false }), new: createQuickJsExecutor() };
  const ops = [...s.core.operations.values()].filter((o) => !o.sensitive).map((o) => o.operationId);
  for (let i = 0; i < 30; i++) for (const ex of Object.values(executors)) await runExecute(ex, scripts['1 call']!, ops, caller.call);
  for (const [name, code] of Object.entries(scripts)) {
    const row: Row = { name: `sandbox overhead at the executor, ${name}`, now: [], msg: [], new: [], aim: '' };
    const cpuRow: Row = { name: `sandbox at the executor, process CPU ms beyond the direct calls, ${name}`, now: [], msg: [], new: [], aim: '' };
    for (let i = 0; i < ITER; i++) {
      for (const which of rotation(i)) {
        const base = await direct(name);
        const baseCpu = lastDirectCpu;
        const c0 = cpuMs();
        const t0 = performance.now();
        await runExecute(executors[which], code, ops, caller.call);
        row[which].push(performance.now() - t0 - base);
        cpuRow[which].push(cpuMs() - c0 - baseCpu);
      }
    }
    rows.push(row, cpuRow);
  }
  await Promise.all(Object.values(executors).map((e) => e.close()));

  const restRow: number[] = [];
  for (let i = 0; i < ITER; i++) restRow.push(await rest());

  // Throughput: 8 clients (8 sessions) executing a 1-call script back to back.
  const throughput = async (base: string) => {
    const cs = await Promise.all(Array.from({ length: CONCURRENCY }, () => connect(base)));
    let done = 0;
    const until = performance.now() + THROUGHPUT_MS;
    const t0 = performance.now();
    await Promise.all(
      cs.map(async (c) => {
        while (performance.now() < until) {
          const r = await c.callTool({ name: 'execute', arguments: { code: scripts['1 call']! } });
          if ((r.structuredContent as { error: unknown }).error) throw new Error(JSON.stringify((r.structuredContent as { error: unknown }).error));
          done++;
        }
      }),
    );
    await Promise.all(cs.map((c) => c.close()));
    return done / ((performance.now() - t0) / 1000);
  };
  const perSecNow = await throughput(legacy.url);
  const perSecNew = await throughput(main.url);

  console.log(`\nMCP execute overhead — ${ITER} iterations each, alternating now/msg/new; 500 feedback rows, feedback.list limit 20 (ms)`);
  console.log(`load average at the start: ${loadStart}; at the end: ${loadavg()}\n`);
  console.log('| measurement | now p50 | now p95 | msg p50 | msg p95 | new p50 | new p95 | aim |');
  console.log('|---|---:|---:|---:|---:|---:|---:|---|');
  for (const r of rows) console.log(`| ${r.name} | ${f(pct(r.now, 50))} | ${f(pct(r.now, 95))} | ${f(pct(r.msg, 50))} | ${f(pct(r.msg, 95))} | ${f(pct(r.new, 50))} | ${f(pct(r.new, 95))} | ${r.aim} |`);
  console.log(`| REST, 1 × GET feedback (whole request, for reference) | | | | | ${f(pct(restRow, 50))} | ${f(pct(restRow, 95))} | |`);
  console.log(`\n| throughput, ${CONCURRENCY} concurrent clients, 1-call script | now | new |`);
  console.log('|---|---:|---:|');
  console.log(`| MCP executes per second | ${perSecNow.toFixed(0)} | ${perSecNew.toFixed(0)} |`);

  await Promise.all(Object.values(clients).map((c) => c.close()));
  for (const srv of [main.server, legacy.server, msgServer.server]) {
    await new Promise<void>((r) => {
      srv.close(() => r());
      srv.closeAllConnections();
    });
  }
  await baselineExecutor.close();
  await msgExecutor.close();
  await s.close();
  rmSync(dir, { recursive: true, force: true });
}

await main();
