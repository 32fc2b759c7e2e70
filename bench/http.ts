/**
 * REST face throughput: feedback.list and deployments.list over HTTP against a bare Koa handler
 * that returns a JSON body of the same size, in the same run.
 *
 *   npx tsx bench/http.ts [--seconds 5] [--clients 16] [--profile DIR] [--only feedback.list]
 *
 * --profile writes a V8 CPU profile of the server process to DIR; --only runs one operation.
 *
 * The servers run in a child process (Sightline on one port, bare Koa on another), the load
 * generator in this one: N concurrent keep-alive clients each loop request → full body.
 * Prints requests/s, p50 and p99 latency, body size, and the ratio to bare Koa.
 */
import { fork, type ChildProcess } from 'node:child_process';
import http from 'node:http';
import { mkdtempSync, rmSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { fileURLToPath } from 'node:url';
import { parseArgs } from 'node:util';

interface Ready {
  sightline: string;
  bare: string;
  key: string;
  projectId: string;
}

// ─── server side (child) ────────────────────────────────────────────────────────────────────────
async function serve(): Promise<void> {
  const Koa = (await import('koa')).default;
  const { createSightline } = await import('../src/server.js');
  const { bootstrapOrganization } = await import('../src/core/bootstrap.js');
  const { authenticate } = await import('../src/core/authenticate.js');

  const dir = mkdtempSync(join(tmpdir(), 'sightline-bench-'));
  let clock = Date.now() - 86_400_000;
  let now = () => clock;
  const s = createSightline(
    { dbFile: join(dir, 'bench.db'), port: 0, host: '127.0.0.1', logLevel: 'silent', rateLimit: { limit: 1_000_000_000, windowSeconds: 60 } },
    { now: () => now() },
  );
  const boot = bootstrapOrganization(s.services, { org: 'Bench', project: 'bench', email: 'bench@example.com', now: clock });
  const principal = authenticate(s.services, boot.admin_key, clock)!;

  // Seed 200 feedback records (the clock steps 4 s per record, under the 20-a-minute quota) and 200 deployments.
  for (let i = 0; i < 200; i++) {
    clock += 4_000;
    await s.core.invoke(
      'feedback.create',
      {
        project_id: boot.project_id,
        message: `The export button does nothing on page ${i}; I tried twice and reloaded.`,
        contact_email: `user${i}@example.com`,
        name: `User ${i}`,
        environment: i % 2 ? 'production' : 'staging',
        release: `1.4.${i % 7}`,
        service: 'web',
        url: `https://app.example.com/reports/${i}`,
        session_id: `sess-${i}`,
        metadata: { plan: 'pro', seats: i, beta: i % 3 === 0 },
      },
      principal,
    );
    await s.core.invoke(
      'deployments.create',
      {
        project_id: boot.project_id,
        deployment_id: `run-${i}`,
        provider: 'github',
        service: 'api',
        version: `1.4.${i}`,
        environment: 'production',
        status: 'ready',
        commit_sha: (i + 0x1000000).toString(16).padStart(7, '0'),
        branch: 'main',
        started_at: new Date(clock).toISOString(),
      },
      principal,
    );
  }
  now = Date.now;

  const server = http.createServer(s.app.callback());
  server.keepAliveTimeout = 60_000;
  await new Promise<void>((r) => server.listen(0, '127.0.0.1', r));

  // Bare Koa: the same JSON bodies Sightline returns, stringified per request as Koa does.
  const fb = (await s.core.invoke('feedback.list', { project_id: boot.project_id }, principal)).value;
  const dp = (await s.core.invoke('deployments.list', { project_id: boot.project_id }, principal)).value;
  const bare = new Koa();
  bare.use((ctx) => {
    ctx.body = ctx.path.endsWith('/feedback') ? fb : dp;
  });
  const bareServer = http.createServer(bare.callback());
  bareServer.keepAliveTimeout = 60_000;
  await new Promise<void>((r) => bareServer.listen(0, '127.0.0.1', r));

  const port = (x: http.Server) => (x.address() as { port: number }).port;
  const ready: Ready = {
    sightline: `http://127.0.0.1:${port(server)}`,
    bare: `http://127.0.0.1:${port(bareServer)}`,
    key: boot.admin_key,
    projectId: boot.project_id,
  };
  process.send!(ready);
  process.on('message', async (m) => {
    if (m === 'cpu') {
      const u = process.cpuUsage();
      process.send!({ cpu: u.user + u.system });
    }
    if (m === 'stop') {
      server.closeAllConnections();
      bareServer.closeAllConnections();
      await s.close();
      rmSync(dir, { recursive: true, force: true });
      process.exit(0);
    }
  });
}

// ─── load generator (parent) ────────────────────────────────────────────────────────────────────
interface Result {
  name: string;
  rps: number;
  /** Server CPU time per request (µs): robust to other load on the machine. */
  cpuPerReq: number;
  p50: number;
  p99: number;
  bytes: number;
  errors: number;
}

let server: ChildProcess;
/** CPU time (µs) the server process has used so far. */
function serverCpu(): Promise<number> {
  return new Promise((resolve) => {
    const on = (m: unknown) => {
      if (m && typeof m === 'object' && 'cpu' in m) {
        server.off('message', on);
        resolve((m as { cpu: number }).cpu);
      }
    };
    server.on('message', on);
    server.send('cpu');
  });
}

async function load(name: string, url: string, headers: Record<string, string>, clients: number, seconds: number): Promise<Result> {
  const agent = new http.Agent({ keepAlive: true, maxSockets: clients });
  const target = new URL(url);
  const once = () =>
    new Promise<{ status: number; bytes: number }>((resolve, reject) => {
      const req = http.request({ host: target.hostname, port: target.port, path: target.pathname + target.search, agent, headers }, (res) => {
        let bytes = 0;
        res.on('data', (c: Buffer) => (bytes += c.length));
        res.on('end', () => resolve({ status: res.statusCode!, bytes }));
        res.on('error', reject);
      });
      req.on('error', reject);
      req.end();
    });

  // Warm-up: JIT, statement caches, sockets.
  const warmUntil = performance.now() + 1000;
  await Promise.all(Array.from({ length: clients }, async () => {
    while (performance.now() < warmUntil) await once();
  }));

  const latencies: number[] = [];
  let errors = 0;
  let bytes = 0;
  const cpu0 = await serverCpu();
  const start = performance.now();
  const end = start + seconds * 1000;
  await Promise.all(
    Array.from({ length: clients }, async () => {
      while (performance.now() < end) {
        const t0 = performance.now();
        const r = await once();
        latencies.push(performance.now() - t0);
        if (r.status !== 200) errors++;
        bytes = r.bytes;
      }
    }),
  );
  const elapsed = (performance.now() - start) / 1000;
  const cpuPerReq = ((await serverCpu()) - cpu0) / latencies.length;
  agent.destroy();
  latencies.sort((a, b) => a - b);
  const pct = (p: number) => latencies[Math.min(latencies.length - 1, Math.floor((p / 100) * latencies.length))]!;
  return { name, rps: latencies.length / elapsed, cpuPerReq, p50: pct(50), p99: pct(99), bytes, errors };
}

async function main(): Promise<void> {
  const { values } = parseArgs({ options: { seconds: { type: 'string', default: '5' }, clients: { type: 'string', default: '16' }, profile: { type: 'string' }, only: { type: 'string' } } });
  const seconds = Number(values.seconds);
  const clients = Number(values.clients);
  const child: ChildProcess = (server = fork(fileURLToPath(import.meta.url), ['--serve'], { stdio: ['ignore', 'inherit', 'inherit', 'ipc'], execArgv: [...process.execArgv, ...(values.profile ? ['--cpu-prof', `--cpu-prof-dir=${values.profile}`] : [])] }));
  const ready = await new Promise<Ready>((resolve, reject) => {
    child.once('message', (m) => resolve(m as Ready));
    child.once('exit', (code) => reject(new Error(`server exited (${code})`)));
  });
  const auth = { 'x-service-key': ready.key };
  const p = `/v1/projects/${ready.projectId}`;
  const rows: [Result, Result][] = [];
  for (const [op, path] of [
    ['feedback.list', `${p}/feedback`],
    ['deployments.list', `${p}/deployments`],
  ] as const) {
    if (values.only && values.only !== op) continue;
    const bare = await load(`bare Koa (${op} body)`, `${ready.bare}${path}`, {}, clients, seconds);
    const real = await load(op, `${ready.sightline}${path}`, auth, clients, seconds);
    rows.push([real, bare]);
  }
  child.send('stop');

  const f = (n: number, d = 0) => n.toFixed(d);
  console.log(`\nREST throughput, ${clients} keep-alive clients, ${seconds} s per target (server in a child process)\n`);
  console.log('| target | req/s | p50 ms | p99 ms | server CPU µs/req | body bytes | errors | req/s ratio | CPU ratio |');
  console.log('|---|---:|---:|---:|---:|---:|---:|---:|---:|');
  for (const [real, bare] of rows) {
    console.log(`| ${bare.name} | ${f(bare.rps)} | ${f(bare.p50, 2)} | ${f(bare.p99, 2)} | ${f(bare.cpuPerReq)} | ${bare.bytes} | ${bare.errors} | 1.00 | 1.00 |`);
    console.log(
      `| ${real.name} | ${f(real.rps)} | ${f(real.p50, 2)} | ${f(real.p99, 2)} | ${f(real.cpuPerReq)} | ${real.bytes} | ${real.errors} | ${f(real.rps / bare.rps, 2)} | ${f(bare.cpuPerReq / real.cpuPerReq, 2)} |`,
    );
  }
  const worst = Math.min(...rows.map(([r, b]) => r.rps / b.rps));
  const worstCpu = Math.min(...rows.map(([r, b]) => b.cpuPerReq / r.cpuPerReq));
  console.log(`\nLowest req/s ratio ${worst.toFixed(2)}, lowest CPU-per-request ratio ${worstCpu.toFixed(2)} (target ≥ 0.50).`);
  console.log('CPU ratio = bare Koa server CPU per request / Sightline server CPU per request: what req/s would be with the server alone on a core.');
}

if (process.argv.includes('--serve')) await serve();
else await main();
