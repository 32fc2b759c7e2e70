/**
 * Issue 20: spans into ClickHouse, and trace reads over ClickHouse beside SQLite.
 *
 * A private clickhouse-server (Debian's 18.16, as the tests start it) on free ports; then:
 * 1. **Store path** (in this process, no HTTP, no decoding): N spans through the span writer —
 *    SQLite's (`createSqliteTelemetryWriter`, 512 spans per transaction) and ClickHouse's span store
 *    (rows buffered and inserted as they accumulate, then flushed) — spans per second each.
 * 2. **HTTP ingest**: OTLP/protobuf batches of 512 spans (traces of 8) posted with several
 *    connections to 1, 2 and 3 Sightline processes (`bin/sightline.mjs start`) sharing one SQLite file
 *    and one ClickHouse database, round-robin; spans/s acknowledged and p50/p99 acknowledgement.
 *    Every process and ClickHouse share this machine's cores with the load generator.
 * 3. **Reads at N spans**: the N spans seeded in (1), read over REST from a server on each backend:
 *    traces.operations, traces.list (plain, status=error, service filter), traces.serviceMap,
 *    traces.get; p95 of sequential calls after a warm-up.
 *
 *   npx tsx bench/scale.ts [--spans 1000000] [--seconds 8] [--procs 1,2,3] [--connections 64] [--runs 15] [--sqlite-max 2000000]
 *     [--clickhouse-url http://127.0.0.1:8123] [--keep DIR] [--ingest-only] [--baseline CHECKOUT] [--rounds 1] [--alt-env K=V] [--pg]
 *
 * The ingest table gives CPU per span beside the wall rate (the machine is shared: CPU per span is
 * the figure that compares): the Sightline processes' CPU (all threads, from /proc/<pid>/stat) and
 * clickhouse-server's (the private one: a child of this process) over the measured seconds, divided
 * by the spans acknowledged, with the load average. `--baseline CHECKOUT` runs each process count
 * with that checkout's `bin/sightline.mjs` too (another git worktree: "before"), alternating with
 * this one `--rounds` times; `--alt-env K=V,K2=V2` adds a run of this checkout with those variables
 * (a setting compared in the same run). `--ingest-only` skips the store path and reads. `--pg` puts
 * control data in a fresh PostgreSQL database per run (test/support/postgres.ts: the local server)
 * and gives each process its own SQLite file, as processes on separate machines run; without it the
 * processes share one SQLite file (one machine).
 *
 * SQLite is seeded and read only up to --sqlite-max spans (its seeding is the slow part at 10M).
 * `--clickhouse-url` uses a running server instead of starting a private one; with `--keep DIR` as
 * well, the ClickHouse side's seeded data stays between runs (database `bench_keep_<spans>` on that
 * server, the control file and keys in DIR) and a later run with the same DIR and size reads it
 * without seeding again (seeding 10M spans takes minutes).
 */
import { existsSync, mkdirSync, readdirSync, mkdtempSync, readFileSync, rmSync, writeFileSync } from 'node:fs';
import { loadavg, tmpdir } from 'node:os';
import { join } from 'node:path';
import http from 'node:http';
import { createSightline } from '../src/server.js';
import { bootstrapOrganization } from '../src/core/bootstrap.js';
import type { SpanRecord } from '../src/domain/telemetry-types.js';
import { dropDatabase, startClickHouseServer } from '../test/support/clickhouse.js';
import { createPgDatabase } from '../test/support/postgres.js';
import { otlpTraceBatch, rng, startBenchServer, timeGetP95, type BenchServer, flag } from './lib.js';

const N = Number(flag('spans', '1000000'));
const SECONDS = Number(flag('seconds', '8'));
const PROCS = flag('procs', '1,2,3').split(',').map(Number).filter((x) => x > 0);
// 64 connections by default (session 15): with 8, 8 × 512 spans in flight, the rate is what the
// acknowledgement time allows rather than what the processes and ClickHouse can take.
const CONNECTIONS = Number(flag('connections', '64'));
const RUNS = Number(flag('runs', '15'));
const SQLITE_MAX = Number(flag('sqlite-max', '2000000'));
const CH_URL = flag('clickhouse-url', '');
const KEEP = flag('keep', '');
const INGEST_ONLY = process.argv.includes('--ingest-only');
const BASELINE = flag('baseline', '');
const ROUNDS = Number(flag('rounds', '1'));
const ALT_ENV = flag('alt-env', '');
const PG = process.argv.includes('--pg');
const NOW = Date.UTC(2026, 10, 20, 12, 0, 0);
const DAY = 86_400_000;
const SERVICES = ['web', 'checkout', 'payments', 'search', 'inventory', 'users'];
const ROUTES = ['/orders/{id}', '/cart', '/checkout', '/users/{id}/profile', '/search', '/items/{id}', '/login', '/health'];

const TICK_US = 1e6 / 100; // USER_HZ: /proc/<pid>/stat times are in 1/100 s on Linux

/** CPU time (user + system, every thread) of a process in µs, from /proc/<pid>/stat; 0 when it is gone. */
function cpuUs(pid: number): number {
  try {
    const st = readFileSync(`/proc/${pid}/stat`, 'utf8');
    const f = st.slice(st.lastIndexOf(')') + 2).split(' ');
    return (Number(f[11]) + Number(f[12])) * TICK_US; // utime, stime (fields 14 and 15)
  } catch {
    return 0;
  }
}

/** The clickhouse-server this process started (a child), or null (an outside server: --clickhouse-url). */
function clickHouseChildPid(): number | null {
  for (const d of readdirSync('/proc')) {
    if (!/^\d+$/.test(d)) continue;
    try {
      const st = readFileSync(`/proc/${d}/stat`, 'utf8');
      const comm = st.slice(st.indexOf('(') + 1, st.lastIndexOf(')'));
      const ppid = Number(st.slice(st.lastIndexOf(')') + 2).split(' ')[1]);
      if (ppid === process.pid && comm.startsWith('clickhouse')) return Number(d);
    } catch {
      /* gone */
    }
  }
  return null;
}

/** clickhouse-server's insert queries and rows inserted so far (system.events; every table, views included). */
async function chInserts(url: string): Promise<{ queries: number; rows: number }> {
  const r = await fetch(`${url}/?query=${encodeURIComponent("SELECT event, value FROM system.events WHERE event IN ('InsertQuery', 'InsertedRows') FORMAT TSV")}`);
  const m = new Map((await r.text()).trim().split('\n').map((l) => l.split('\t') as [string, string]));
  return { queries: Number(m.get('InsertQuery') ?? 0), rows: Number(m.get('InsertedRows') ?? 0) };
}

/** Spans of one day ending at NOW: traces of 8 (an entry span, then children in other services), 2% failed. */
export function* spanBatches(n: number, batch = 4096): Generator<{ spans: SpanRecord[]; traceIds: string[]; errorTraceIds: string[] }> {
  const r = rng(42);
  const hex = (len: number) => {
    let s = '';
    while (s.length < len) s += Math.floor(r() * 0x100000000).toString(16).padStart(8, '0');
    return s.slice(0, len);
  };
  const resources = new Map(SERVICES.map((svc) => [svc, { 'service.name': svc, 'service.version': '2.1.0', 'deployment.environment.name': 'production' }]));
  const scope = { name: 'bench', version: '1', attributes: {} };
  let made = 0;
  while (made < n) {
    const spans: SpanRecord[] = [];
    const traceIds: string[] = [];
    const errorTraceIds: string[] = [];
    while (spans.length < batch && made + spans.length < n) {
      const trace = hex(32);
      const root = hex(16);
      const t = NOW - DAY + ((made + spans.length) / n) * DAY;
      const svc = SERVICES[Math.floor(r() * SERVICES.length)]!;
      const route = ROUTES[Math.floor(r() * ROUTES.length)]!;
      const failed = r() < 0.02;
      traceIds.push(trace);
      if (failed) errorTraceIds.push(trace);
      const dur = 5 + r() * 400;
      spans.push({
        trace_id: trace, span_id: root, parent_span_id: null, trace_state: '', name: `GET ${route}`, kind: 2, start_ms: t, end_ms: t + dur,
        status_code: failed ? 2 : 1, status_message: '', attributes: { 'http.request.method': 'GET', 'http.route': route, 'http.response.status_code': failed ? 500 : 200 },
        events: [], links: [], resource: resources.get(svc)!, scope, service_name: svc,
      });
      for (let c = 1; c < 8; c++) {
        const child = SERVICES[(SERVICES.indexOf(svc) + c) % SERVICES.length]!;
        const cs = t + c;
        spans.push({
          trace_id: trace, span_id: hex(16), parent_span_id: root, trace_state: '', name: c % 2 ? `SELECT ${child}` : `call ${child}`, kind: c % 2 ? 3 : 1, start_ms: cs,
          end_ms: cs + dur / 10, status_code: 0, status_message: '', attributes: c % 2 ? { 'db.system': 'postgresql', 'server.address': `${child}.db` } : { 'peer.service': child },
          events: [], links: [], resource: resources.get(svc)!, scope, service_name: svc,
        });
      }
    }
    made += spans.length;
    yield { spans, traceIds, errorTraceIds };
  }
}

interface Seeded {
  base: string;
  admin: string;
  project: string;
  traceIds: string[];
  errorTraceIds: string[];
  seedSeconds: number;
  cpuSeconds: number;
  close(): Promise<void>;
}

/**
 * A server on one backend with N spans written through its span writer (the store path). With
 * `keep` (a directory), the control file and keys stay there and a later call with the same
 * directory, size and ClickHouse URL reuses them and the spans already stored (seedSeconds: NaN).
 */
export async function seeded(n: number, clickhouseUrl: string | null, keep?: string): Promise<Seeded> {
  const dir = keep ?? mkdtempSync(join(tmpdir(), 'sl-bench-scale-'));
  if (keep) mkdirSync(keep, { recursive: true });
  const stateFile = join(dir, 'state.json');
  const opts = { dbFile: join(dir, 'bench.db'), port: 0, host: '127.0.0.1', rateLimit: { limit: 1e9, windowSeconds: 60 }, logLevel: 'warn' as const, clickhouseUrl };
  if (keep && existsSync(stateFile)) {
    const st = JSON.parse(readFileSync(stateFile, 'utf8')) as { n: number; url: string | null; admin: string; project: string; traceIds: string[]; errorTraceIds: string[] };
    if (st.n !== n || st.url !== clickhouseUrl) throw new Error(`${keep} holds ${st.n} spans for ${st.url}: use another --keep directory`);
    const s = createSightline(opts, { now: () => NOW });
    const server = await s.listen();
    return {
      base: `http://127.0.0.1:${(server.address() as { port: number }).port}`,
      ...st,
      seedSeconds: NaN,
      cpuSeconds: NaN,
      close: () => s.close(),
    };
  }
  const s = createSightline(opts, { now: () => NOW });
  const boot = bootstrapOrganization(s.services, { org: 'Bench', project: 'bench', email: 'bench@example.com', now: NOW });
  const traceIds: string[] = [];
  const errorTraceIds: string[] = [];
  const cpu0 = process.cpuUsage();
  const t0 = performance.now();
  let batches = 0;
  for (const b of spanBatches(n)) {
    if (traceIds.length < 5000) traceIds.push(...b.traceIds.slice(0, 50));
    if (errorTraceIds.length < 2000) errorTraceIds.push(...b.errorTraceIds);
    for (let i = 0; i < b.spans.length; i += 512) s.services.telemetry.insertSpans(boot.project_id, b.spans.slice(i, i + 512), 'otlp', NOW);
    // ClickHouse: rows accumulate while an insert is in flight; bound what waits in memory (~64k spans).
    if (s.services.clickhouse && ++batches % 16 === 0) await s.services.clickhouse.spans.flush();
  }
  await s.services.clickhouse?.spans.flush();
  const seedSeconds = (performance.now() - t0) / 1000;
  const c = process.cpuUsage(cpu0);
  if (keep) writeFileSync(stateFile, JSON.stringify({ n, url: clickhouseUrl, admin: boot.admin_key, project: boot.project_id, traceIds, errorTraceIds }));
  const server = await s.listen();
  const port = (server.address() as { port: number }).port;
  return {
    base: `http://127.0.0.1:${port}`,
    admin: boot.admin_key,
    project: boot.project_id,
    traceIds,
    errorTraceIds,
    seedSeconds,
    cpuSeconds: (c.user + c.system) / 1e6,
    async close() {
      await s.close();
      if (!keep) rmSync(dir, { recursive: true, force: true });
    },
  };
}

async function p95Of(base: string, key: string, path: () => string): Promise<number> {
  const r = await timeGetP95(base, key, path, RUNS);
  if (r.status !== 200) throw new Error(`${path()}: HTTP ${r.status}`);
  return r.p95;
}

async function reads(sd: Seeded): Promise<Map<string, number>> {
  const P = `/v1/projects/${sd.project}`;
  const w = `from=${encodeURIComponent(new Date(NOW - DAY).toISOString())}&to=${encodeURIComponent(new Date(NOW).toISOString())}`;
  let i = 0;
  const ops: [string, () => string][] = [
    ['traces.operations', () => `${P}/trace-operations?${w}`],
    ['traces.list', () => `${P}/traces?${w}`],
    ['traces.list status=error', () => `${P}/traces?${w}&status=error`],
    ['traces.list service_name=payments', () => `${P}/traces?${w}&service_name=payments`],
    ['traces.serviceMap', () => `${P}/services?${w}`],
    ['traces.get', () => `${P}/traces/${sd.traceIds[i++ % sd.traceIds.length]}`],
  ];
  const out = new Map<string, number>();
  for (const [label, path] of ops) out.set(label, await p95Of(sd.base, sd.admin, path));
  return out;
}

/** OTLP batches posted to the processes round-robin for SECONDS; spans/s acknowledged. */
async function ingest(servers: BenchServer[], key: string): Promise<{ rate: number; p50: number; p99: number; failures: number; spans: number }> {
  const bodies = Array.from({ length: 16 }, (_, i) => otlpTraceBatch(i, 8));
  const agent = new http.Agent({ keepAlive: true, maxSockets: CONNECTIONS * servers.length });
  const lat: number[] = [];
  let ok = 0;
  let failures = 0;
  const end = performance.now() + SECONDS * 1000;
  const t0 = performance.now();
  const worker = async (wk: number) => {
    let i = wk;
    while (performance.now() < end) {
      const body = bodies[i % bodies.length]!;
      const port = servers[i % servers.length]!.port;
      i++;
      const a = performance.now();
      const status = await new Promise<number>((resolve, reject) => {
        const req = http.request(
          { host: '127.0.0.1', port, path: '/ingest/v1/traces', method: 'POST', agent, headers: { 'content-type': 'application/x-protobuf', 'x-service-key': key, 'content-length': body.length } },
          (res) => {
            res.resume();
            res.on('end', () => resolve(res.statusCode ?? 0));
          },
        );
        req.on('error', reject);
        req.end(body);
      });
      lat.push(performance.now() - a);
      if (status === 200) ok++;
      else failures++;
    }
  };
  await Promise.all(Array.from({ length: CONNECTIONS }, (_, wk) => worker(wk)));
  const seconds = (performance.now() - t0) / 1000;
  agent.destroy();
  lat.sort((a, b) => a - b);
  return { rate: (ok * 512) / seconds, p50: lat[Math.floor(lat.length / 2)] ?? 0, p99: lat[Math.floor(lat.length * 0.99)] ?? 0, failures, spans: ok * 512 };
}

async function main() {
  const ch = CH_URL
    ? { url: CH_URL.replace(/\/+$/, ''), version: (await (await fetch(`${CH_URL.replace(/\/+$/, '')}/?query=${encodeURIComponent('SELECT version()')}`)).text()).trim(), stop: async () => {} }
    : await startClickHouseServer();
  if (KEEP && !CH_URL) throw new Error('--keep needs --clickhouse-url (a private server is removed at the end)');
  console.error(`clickhouse-server ${ch.version} at ${ch.url}; load average ${loadavg().map((x) => x.toFixed(1)).join(' ')}`);
  const rows: string[] = [];
  try {
    // 1 + 3: store path and reads, ClickHouse then SQLite.
    let chSeeded: Seeded | null = null;
    let chReads = new Map<string, number>();
    let sqSeeded: Seeded | null = null;
    let sqReads: Map<string, number> | null = null;
    if (!INGEST_ONLY) {
      const chDb = KEEP ? `bench_keep_${N}` : `bench_${Date.now()}`;
      chSeeded = await seeded(N, `${ch.url}/${chDb}`, KEEP || undefined);
      if (Number.isNaN(chSeeded.seedSeconds)) console.error(`ClickHouse: ${N.toLocaleString('en')} spans kept in ${chDb} (${KEEP}), not seeded again`);
      else console.error(`ClickHouse: ${N.toLocaleString('en')} spans in ${chSeeded.seedSeconds.toFixed(1)} s (${chSeeded.cpuSeconds.toFixed(1)} CPU s in this process)`);
      const load0 = loadavg().map((x) => x.toFixed(1)).join(' ');
      chReads = await reads(chSeeded);
      console.error(`ClickHouse reads: load average ${load0} before, ${loadavg().map((x) => x.toFixed(1)).join(' ')} after`);
      await chSeeded.close();
      if (!KEEP) await dropDatabase(ch.url, chDb);
      if (N <= SQLITE_MAX) {
        sqSeeded = await seeded(N, null);
        console.error(`SQLite: ${N.toLocaleString('en')} spans in ${sqSeeded.seedSeconds.toFixed(1)} s`);
        sqReads = await reads(sqSeeded);
        await sqSeeded.close();
      }
    }

    // 2: HTTP ingest with 1..3 processes on one SQLite file and one ClickHouse database.
    const ingestRows: string[] = [];
    const chPid = clickHouseChildPid();
    const variants: { label: string; checkout?: string; env?: Record<string, string> }[] = BASELINE ? [{ label: 'before', checkout: BASELINE }, { label: 'after' }] : [{ label: 'this' }];
    if (ALT_ENV) variants.push({ label: ALT_ENV, env: Object.fromEntries(ALT_ENV.split(',').map((kv) => kv.split('=') as [string, string])) });
    for (let round = 0; round < ROUNDS; round++)
      for (const procs of PROCS)
        for (const v of variants) {
          const dir = mkdtempSync(join(tmpdir(), 'sl-bench-scale-http-'));
          const db = `bench_http_${procs}_${Date.now()}`;
          // --pg: control data in a fresh PostgreSQL database, each process with its own SQLite file
          // (as on separate machines); else one SQLite file shared by the processes (one machine).
          const pgDb = PG ? await createPgDatabase() : null;
          const env = { SIGHTLINE_CLICKHOUSE_URL: `${ch.url}/${db}`, ...(pgDb ? { SIGHTLINE_DATABASE_URL: pgDb.url } : {}), ...v.env };
          const file = (i: number) => join(dir, pgDb ? `bench-${i}.db` : 'bench.db');
          const servers: BenchServer[] = [await startBenchServer(file(0), env, v.checkout)];
          for (let i = 1; i < procs; i++) servers.push(await startBenchServer(file(i), env, v.checkout));
          const key = servers[0]!.keys!.ingest;
          await ingest(servers, key); // warm-up: workers, statements, the ClickHouse tables
          const cpu0 = servers.map((x) => cpuUs(x.child.pid!));
          const ch0 = chPid ? cpuUs(chPid) : 0;
          const ins0 = await chInserts(ch.url);
          const r = await ingest(servers, key);
          const ins1 = await chInserts(ch.url);
          const perInsert = (ins1.rows - ins0.rows) / Math.max(1, ins1.queries - ins0.queries);
          const slUs = servers.reduce((a, x, i) => a + cpuUs(x.child.pid!) - cpu0[i]!, 0) / r.spans;
          const chUs = chPid ? (cpuUs(chPid) - ch0) / r.spans : NaN;
          const load = loadavg()[0]!.toFixed(1);
          const stored = await (await fetch(`${ch.url}/?query=${encodeURIComponent(`SELECT count() FROM \`${db}\`.spans`)}`)).text();
          const f = (x: number) => (Number.isNaN(x) ? '–' : x.toFixed(1));
          ingestRows.push(
            `| ${procs}${variants.length > 1 ? ` ${v.label}` : ''} | ${Math.round(r.rate).toLocaleString('en')} | ${f(slUs)} | ${f(chUs)} | ${f(slUs + chUs)} | ${load} | ${Math.round(perInsert).toLocaleString('en')} | ${r.p50.toFixed(0)} / ${r.p99.toFixed(0)} | ${r.failures} | ${Number(stored).toLocaleString('en')} |`,
          );
          console.error(ingestRows.at(-1));
          for (const s of servers) s.child.kill('SIGTERM');
          await Promise.all(servers.map((s) => new Promise((res) => (s.child.exitCode !== null ? res(null) : s.child.once('exit', res)))));
          await dropDatabase(ch.url, db);
          await pgDb?.drop();
          rmSync(dir, { recursive: true, force: true });
        }

    console.log(`\nbench/scale.ts — ${N.toLocaleString('en')} spans; clickhouse-server ${ch.version}; load average ${loadavg()[0]!.toFixed(1)} at the end\n`);
    if (chSeeded) {
      console.log('| store path (this process, no HTTP) | spans/s |');
      console.log('|---|---:|');
      console.log(`| ClickHouse span store | ${Number.isNaN(chSeeded.seedSeconds) ? '– (kept)' : Math.round(N / chSeeded.seedSeconds).toLocaleString('en')} |`);
      if (sqSeeded) console.log(`| SQLite span writer | ${Math.round(N / sqSeeded.seedSeconds).toLocaleString('en')} |\n`);
    }
    console.log(
      `| processes (OTLP over HTTP, ${CONNECTIONS} connections, ${SECONDS} s) | spans/s acknowledged | Sightline CPU µs/span | clickhouse-server CPU µs/span | total µs/span | load avg | rows per ClickHouse insert | p50 / p99 ack ms | non-200 | spans in ClickHouse |`,
    );
    console.log('|---:|---:|---:|---:|---:|---:|---:|---:|---:|---:|');
    for (const r of ingestRows) console.log(r);
    if (chReads.size) {
      console.log(`\n| read p95 ms at ${N.toLocaleString('en')} spans (${RUNS} calls) | ClickHouse | SQLite |`);
      console.log('|---|---:|---:|');
      for (const [label, v] of chReads) rows.push(`| ${label} | ${v.toFixed(0)} | ${sqReads ? sqReads.get(label)!.toFixed(0) : '–'} |`);
      for (const r of rows) console.log(r);
    }
  } finally {
    await ch.stop();
  }
}

// Run when executed (not when another bench imports its seeding).
if (process.argv[1] && import.meta.url.endsWith(process.argv[1].split('/').pop()!)) {
  main().catch((e) => {
    console.error(e);
    process.exit(1);
  });
}
