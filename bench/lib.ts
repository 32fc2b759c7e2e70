/** Small helpers the benchmark scripts share. */
import http from 'node:http';
import { randomBytes } from 'node:crypto';
import { ExportTraceServiceRequest } from '../src/ingest/otlp/schema.js';

import { freePort } from '../test/support/clickhouse.js';

export { freePort };

/** Deterministic PRNG (mulberry32) so every run seeds the same shape. */
/** The value after `--name` on the command line, or `dflt`. */
export const flag = (name: string, dflt: string): string => {
  const i = process.argv.indexOf(`--${name}`);
  return i > 0 ? process.argv[i + 1]! : dflt;
};

export function rng(seed: number) {
  let a = seed >>> 0;
  return () => {
    a = (a + 0x6d2b79f5) >>> 0;
    let t = a;
    t = Math.imul(t ^ (t >>> 15), t | 1);
    t ^= t + Math.imul(t ^ (t >>> 7), t | 61);
    return ((t ^ (t >>> 14)) >>> 0) / 4294967296;
  };
}

type AnyValue = { stringValue: string } | { intValue: number } | { doubleValue: number } | { boolValue: boolean };

/** An OTLP KeyValue for protobufjs `fromObject`. */
export const attr = (key: string, v: string | number | boolean) => ({
  key,
  value: (typeof v === 'string' ? { stringValue: v } : typeof v === 'boolean' ? { boolValue: v } : Number.isInteger(v) ? { intValue: v } : { doubleValue: v }) as AnyValue,
});

export interface BenchServer {
  child: import('node:child_process').ChildProcess;
  port: number;
  /** The keys `start` printed when it set up an empty database; null when the database was reused. */
  keys: { project: string; ingest: string; admin: string } | null;
}

/**
 * `sightline start` in a child process on a free port (rate limit out of the way), waiting until it
 * answers. On an empty database the printed project and keys are parsed from its banner.
 */
/** `checkout`: another checkout's directory to run its `bin/sightline.mjs` instead (a before/after comparison). */
export async function startBenchServer(dbFile: string, env: Record<string, string> = {}, checkout?: string): Promise<BenchServer> {
  const { spawn } = await import('node:child_process');
  const { join } = await import('node:path');
  const port = await freePort();
  // BENCH_SERVER_NODE_ARGS: extra node flags for the server (e.g. `--cpu-prof --cpu-prof-dir=/tmp/prof`, not allowed in NODE_OPTIONS).
  const nodeArgs = (process.env.BENCH_SERVER_NODE_ARGS ?? '').split(' ').filter(Boolean);
  const child = spawn(process.execPath, [...nodeArgs, join(checkout ?? join(import.meta.dirname, '..'), 'bin/sightline.mjs'), 'start'], {
    env: { ...process.env, SIGHTLINE_DB: dbFile, PORT: String(port), HOST: '127.0.0.1', LOG_LEVEL: 'warn', SIGHTLINE_RATE_LIMIT: '100000000', ...env },
    stdio: ['ignore', 'pipe', 'inherit'],
  });
  let out = '';
  child.stdout!.on('data', (d) => (out += d));
  for (;;) {
    if (child.exitCode !== null) throw new Error(`server exited: ${out}`);
    try {
      if ((await fetch(`http://127.0.0.1:${port}/`)).ok) break;
    } catch {
      /* not listening yet */
    }
    await new Promise((r) => setTimeout(r, 50));
  }
  const admin = /admin key\s+(sl_[0-9a-f]+)/.exec(out)?.[1];
  const keys = admin
    ? { admin, ingest: /ingest key\s+(sl_[0-9a-f]+)/.exec(out)![1]!, project: /project\s+(\d+)/.exec(out)![1]! }
    : null;
  return { child, port, keys };
}

const keepAlive = new http.Agent({ keepAlive: true, maxSockets: 64 });

/** One HTTP request to a bench server on loopback, over a shared keep-alive agent. */
export function request(port: number, method: string, path: string, headers: Record<string, string | number>, body?: Buffer | string): Promise<{ status: number; body: Buffer }> {
  return new Promise((resolve, reject) => {
    const req = http.request({ host: '127.0.0.1', port, path, method, agent: keepAlive, headers }, (res) => {
      const chunks: Buffer[] = [];
      res.on('data', (c) => chunks.push(c));
      res.on('end', () => resolve({ status: res.statusCode ?? 0, body: Buffer.concat(chunks) }));
    });
    req.on('error', reject);
    req.end(body);
  });
}

/** Nearest-rank percentile of sorted values (q from 0 to 1). */
export const pct = (sorted: number[], q: number) => sorted[Math.min(sorted.length - 1, Math.max(0, Math.ceil(q * sorted.length) - 1))]!;

/** `runs` sequential GETs of `path()` after one warm-up call (statement preparation, page cache); any non-200 aborts. */
export async function timeGet(port: number, key: string, label: string, path: () => string, runs: number): Promise<{ label: string; p50: number; p95: number; max: number; bytes: number }> {
  const headers = { 'x-service-key': key };
  const warm = await request(port, 'GET', path(), headers);
  if (warm.status !== 200) throw new Error(`${label}: ${warm.status} ${warm.body.toString().slice(0, 300)}`);
  const ms: number[] = [];
  let bytes = 0;
  for (let i = 0; i < runs; i++) {
    const t0 = performance.now();
    const r = await request(port, 'GET', path(), headers);
    ms.push(performance.now() - t0);
    if (r.status !== 200) throw new Error(`${label}: ${r.status} ${r.body.toString().slice(0, 300)}`);
    bytes = r.body.length;
  }
  ms.sort((a, b) => a - b);
  return { label, p50: pct(ms, 0.5), p95: pct(ms, 0.95), max: ms[ms.length - 1]!, bytes };
}

/** Closes the keep-alive sockets `request` keeps open, so the bench process can exit. */
export const closeRequests = () => keepAlive.destroy();

const benchResource = { attributes: [attr('service.name', 'checkout'), attr('service.version', '1.4.2'), attr('deployment.environment.name', 'production'), attr('host.name', 'web-1')] };
const benchRoutes = ['/orders/{id}', '/cart', '/checkout', '/users/{id}/profile', '/search'];

/**
 * An OTLP/protobuf trace export of `batch` spans ending now: traces of `perTrace` spans (a server
 * root span, then client children), or one span per trace (`perTrace` = 1: every span a new trace).
 */
export function otlpTraceBatch(seed: number, perTrace: number, batch = 512): Buffer {
  const now = BigInt(Date.now()) * 1_000_000n;
  const spans = [];
  let traceId = randomBytes(16);
  let rootId = randomBytes(8);
  for (let i = 0; i < batch; i++) {
    const root = i % perTrace === 0;
    if (root) {
      traceId = randomBytes(16);
      rootId = randomBytes(8);
    }
    const start = now - BigInt(i) * 1_000_000n;
    spans.push({
      traceId,
      spanId: root ? rootId : randomBytes(8),
      parentSpanId: perTrace === 1 ? (i % 4 === 0 ? Buffer.alloc(0) : randomBytes(8)) : root ? Buffer.alloc(0) : rootId,
      name: `GET ${benchRoutes[(seed + i) % benchRoutes.length]}`,
      kind: perTrace === 1 || root ? 2 : 3,
      startTimeUnixNano: start.toString(),
      endTimeUnixNano: (start + BigInt(1_000_000 + (i % 250) * 100_000)).toString(),
      attributes: [attr('http.request.method', 'GET'), attr('http.route', benchRoutes[(seed + i) % benchRoutes.length]!), attr('http.response.status_code', 200), attr('user.id', `u-${i % 97}`)],
      status: { code: i % 50 === 0 ? 2 : 1 },
    });
  }
  const msg = ExportTraceServiceRequest.fromObject({ resourceSpans: [{ resource: benchResource, scopeSpans: [{ scope: { name: 'bench', version: '1' }, spans }] }] });
  return Buffer.from(ExportTraceServiceRequest.encode(msg).finish());
}

/** p95 (ms) of `runs` sequential GETs of `path()` with an API key, after one warm-up call; the warm-up's status. */
export async function timeGetP95(base: string, key: string, path: () => string, runs: number): Promise<{ p95: number; status: number }> {
  const call = async () => {
    const r = await fetch(`${base}${path()}`, { headers: { 'x-service-key': key } });
    await r.arrayBuffer();
    return r.status;
  };
  const status = await call(); // warm-up
  const t: number[] = [];
  for (let i = 0; i < runs; i++) {
    const a = performance.now();
    await call();
    t.push(performance.now() - a);
  }
  t.sort((a, b) => a - b);
  return { p95: t[Math.min(t.length - 1, Math.ceil(t.length * 0.95) - 1)]!, status };
}

/**
 * A Sightline in this process for the read benches that compare backends (error-reads.ts,
 * ai-reads.ts): a fresh SQLite file, the given ClickHouse / PostgreSQL URLs, the first organization
 * bootstrapped (admin key, project); `listen()` serves it over HTTP once seeded; `close()` stops it and
 * removes its file. Pushed on `opened` first, so a caller's `finally` closes it even if seeding fails.
 */
export interface BenchSide {
  name: string;
  s: import('../src/server.js').Sightline;
  url: string;
  key: string;
  project: string;
  seedSeconds: number;
  listen(): Promise<void>;
  close(): Promise<void>;
}
export async function openBenchSide(name: string, config: { clickhouseUrl?: string; databaseUrl?: string }, opened: BenchSide[]): Promise<BenchSide> {
  const { mkdtempSync, rmSync } = await import('node:fs');
  const { tmpdir } = await import('node:os');
  const { join } = await import('node:path');
  const { createSightline } = await import('../src/server.js');
  const { bootstrapOrganization } = await import('../src/core/bootstrap.js');
  const dir = mkdtempSync(join(tmpdir(), `sl-bench-${name.replace(/\W+/g, '-').toLowerCase()}-`));
  const s = createSightline({ dbFile: join(dir, 'bench.db'), port: 0, host: '127.0.0.1', logLevel: 'warn', databaseUrl: config.databaseUrl ?? null, clickhouseUrl: config.clickhouseUrl ?? null });
  const server = http.createServer(s.app.callback());
  const x: BenchSide = {
    name,
    s,
    url: '',
    key: '',
    project: '',
    seedSeconds: 0,
    async listen() {
      await new Promise<void>((resolve) => server.listen(0, '127.0.0.1', resolve));
      x.url = `http://127.0.0.1:${(server.address() as import('node:net').AddressInfo).port}`;
    },
    async close() {
      if (server.listening) await new Promise<void>((resolve) => (server.close(() => resolve()), server.closeAllConnections()));
      await s.close();
      rmSync(dir, { recursive: true, force: true });
    },
  };
  opened.push(x);
  const boot = bootstrapOrganization(s.services, { now: Date.now() });
  x.key = boot.admin_key;
  x.project = boot.project_id;
  return x;
}
