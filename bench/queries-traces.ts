/**
 * Trace read latency at 1,000,000 spans. A Sightline server runs in a child process; this process
 * seeds it THROUGH THE INGEST PATH — prebuilt OTLP protobuf batches of 512 spans, each batch from one
 * service as its own exporter would send it, posted over HTTP as bench/ingest.ts does — then times
 * the trace read operations over REST for the seeded 24 hours and prints p50/p95 per operation.
 *
 * Shape: ~100k traces of ~10 spans spread over 24 h across 8 instrumented services (frontend →
 * backends → backends), client spans to PostgreSQL/Redis (db.system), a Kafka topic (producer →
 * consumer in another service) and Stripe (peer.service), ~2% of traces with errors, and a few
 * hundred operations (routes with numeric and UUID ids that normalize to templates).
 *
 *   npx tsx bench/queries-traces.ts [spans=1000000] [runs=30]
 *   npx tsx bench/queries-traces.ts --db /tmp/x/bench.db      # reuse (or create and keep) a seeded file
 */
import { existsSync, mkdtempSync, readFileSync, rmSync, writeFileSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { dirname, join } from 'node:path';
import { randomBytes } from 'node:crypto';
import http from 'node:http';
import { parseArgs } from 'node:util';
import { ExportTraceServiceRequest } from '../src/ingest/otlp/schema.js';
import { rng, attr, startBenchServer, request, pct, timeGet, closeRequests } from './lib.js';

const { values: opts, positionals } = parseArgs({ options: { db: { type: 'string' } }, allowPositionals: true });
const TARGET_SPANS = Number(positionals[0] ?? 1_000_000);
const RUNS = Number(positionals[1] ?? 30);
const BATCH = 512;
const CONNECTIONS = 4;
const DAY = 86_400_000;
const ROOT = join(import.meta.dirname, '..');


// ---- data shape ---------------------------------------------------------------------------------

const rand = rng(42);
const pick = <T>(xs: readonly T[]): T => xs[Math.floor(rand() * xs.length)]!;
/** Log-normal-ish duration in ms around `median`. */
const dur = (median: number) => median * Math.exp((rand() + rand() + rand() - 1.5) * 1.2);
const uuid = () => {
  const h = randomBytes(16).toString('hex');
  return `${h.slice(0, 8)}-${h.slice(8, 12)}-4${h.slice(13, 16)}-a${h.slice(17, 20)}-${h.slice(20, 32)}`;
};

const BACKENDS = ['checkout', 'cart', 'catalog', 'payments', 'users', 'inventory'] as const;
const SERVICES = ['frontend', ...BACKENDS, 'notifications'] as const;
type Service = (typeof SERVICES)[number];
/** Calls a backend makes to other backends. */
const CALLS: Record<string, Service[]> = {
  checkout: ['payments', 'inventory', 'cart'],
  cart: ['catalog'],
  catalog: ['inventory'],
  payments: [],
  users: [],
  inventory: [],
};
const DB: Record<string, { system: string; name: string }> = {
  checkout: { system: 'postgresql', name: 'orders' },
  cart: { system: 'redis', name: '0' },
  catalog: { system: 'postgresql', name: 'catalog' },
  payments: { system: 'postgresql', name: 'payments' },
  users: { system: 'postgresql', name: 'users' },
  inventory: { system: 'mysql', name: 'stock' },
};
const METHODS = ['GET', 'GET', 'GET', 'POST', 'PUT', 'DELETE'];
/** 40 frontend page families and 30 route families per backend: a few hundred operations in all. */
const ROUTES: Record<string, { method: string; path: (id: () => string) => string; route: string | null }[]> = {};
for (const s of SERVICES) {
  const n = s === 'frontend' ? 40 : s === 'notifications' ? 0 : 30;
  ROUTES[s] = Array.from({ length: n }, (_, k) => {
    const method = s === 'frontend' ? 'GET' : METHODS[k % METHODS.length]!;
    const base = s === 'frontend' ? `/shop/section${k}` : `/api/${s}/resource${k}`;
    // A third of the routes report http.route; the others only a concrete path with an id.
    const templated = k % 3 === 0;
    const withUuid = k % 5 === 1;
    return {
      method,
      path: (id) => `${base}/${withUuid ? uuid() : id()}`,
      route: templated ? `${base}/:id` : null,
    };
  });
}

type Attr = ReturnType<typeof attr>;

interface GenSpan {
  service: Service;
  traceId: Buffer;
  spanId: Buffer;
  parentSpanId: Buffer;
  name: string;
  kind: number;
  start: number; // ms
  end: number;
  attributes: Attr[];
  error: boolean;
  exception?: string;
}

/** One trace of ~10 spans starting at `t0` (ms). */
function genTrace(t0: number): GenSpan[] {
  const traceId = randomBytes(16);
  const spans: GenSpan[] = [];
  const failing = rand() < 0.02;
  const add = (s: Omit<GenSpan, 'traceId' | 'spanId'>): GenSpan => {
    const sp = { ...s, traceId, spanId: randomBytes(8) };
    spans.push(sp);
    return sp;
  };
  const id = () => String(1 + Math.floor(rand() * 100_000));
  const server = (service: Service, parent: Buffer, start: number, median: number) => {
    const r = pick(ROUTES[service]!);
    const path = r.path(id);
    const attributes = [attr('http.request.method', r.method), attr('url.path', path), attr('http.response.status_code', 200)];
    if (r.route) attributes.push(attr('http.route', r.route));
    return add({ service, parentSpanId: parent, name: r.route ? `${r.method} ${r.route}` : `${r.method} ${path}`, kind: 2, start, end: start + dur(median), attributes, error: false });
  };
  const root = server('frontend', Buffer.alloc(0), t0, 120);
  add({ service: 'frontend', parentSpanId: root.spanId, name: 'render page', kind: 1, start: t0 + 1, end: t0 + 1 + dur(8), attributes: [], error: false });
  // frontend → one or two backends
  const first = pick(BACKENDS);
  const targets: Service[] = [first];
  if (rand() < 0.6) targets.push(pick(BACKENDS.filter((b) => b !== first)));
  let cursor = t0 + 3;
  const backend = (caller: GenSpan, service: Service, start: number, depth: number): GenSpan => {
    const client = add({
      service: caller.service,
      parentSpanId: caller.spanId,
      name: 'GET',
      kind: 3,
      start,
      end: 0,
      attributes: [attr('http.request.method', 'GET'), attr('server.address', `${service}.internal`), attr('server.port', 8080)],
      error: false,
    });
    const srv = server(service, client.spanId, start + 0.4, 40);
    const db = DB[service]!;
    const q = add({
      service,
      parentSpanId: srv.spanId,
      name: db.system === 'redis' ? 'GET' : `SELECT ${service}`,
      kind: 3,
      start: srv.start + 1,
      end: srv.start + 1 + dur(4),
      attributes: [attr('db.system', db.system), attr('db.namespace', db.name), attr('server.address', `${db.system}.internal`)],
      error: false,
    });
    let last = q.end;
    const next = CALLS[service]!;
    if (depth < 2 && next.length && rand() < 0.75) {
      const child = backend(srv, pick(next), last + 0.5, depth + 1);
      last = child.end;
    }
    if (service === 'payments') {
      const ext = add({
        service,
        parentSpanId: srv.spanId,
        name: 'POST',
        kind: 3,
        start: last + 0.5,
        end: last + 0.5 + dur(150),
        attributes: [attr('http.request.method', 'POST'), attr('peer.service', 'stripe'), attr('server.address', 'api.stripe.com')],
        error: false,
      });
      last = ext.end;
    }
    if (service === 'checkout' && rand() < 0.7) {
      const prod = add({
        service,
        parentSpanId: srv.spanId,
        name: 'orders publish',
        kind: 4,
        start: last + 0.2,
        end: last + 2,
        attributes: [attr('messaging.system', 'kafka'), attr('messaging.destination.name', 'orders'), attr('messaging.operation.type', 'publish')],
        error: false,
      });
      add({
        service: 'notifications',
        parentSpanId: prod.spanId,
        name: 'orders process',
        kind: 5,
        start: prod.end + dur(20),
        end: 0,
        attributes: [attr('messaging.system', 'kafka'), attr('messaging.destination.name', 'orders'), attr('messaging.operation.type', 'process')],
        error: false,
      }).end = prod.end + 30 + dur(15);
      last = prod.end;
    }
    srv.end = Math.max(srv.end, last + 0.5);
    client.end = srv.end + 0.4;
    if (failing && depth === 0 && service === first) {
      q.error = true;
      q.exception = `deadlock detected on ${db.name}`;
      srv.error = true;
      client.error = true;
    }
    return client;
  };
  for (const s of targets) {
    const c = backend(root, s, cursor, 0);
    cursor = c.end + 0.5;
  }
  root.end = Math.max(root.end, cursor + 1);
  if (failing) root.error = true;
  return spans;
}

const ns = (ms: number) => (BigInt(Math.round(ms * 1000)) * 1000n).toString();

function encode(spans: GenSpan[]): Buffer {
  const byService = new Map<Service, GenSpan[]>();
  for (const s of spans) {
    let l = byService.get(s.service);
    if (!l) byService.set(s.service, (l = []));
    l.push(s);
  }
  const resourceSpans = [...byService].map(([service, list]) => ({
    resource: { attributes: [attr('service.name', service), attr('service.version', '2.3.1'), attr('deployment.environment.name', 'production'), attr('telemetry.sdk.language', 'nodejs')] },
    scopeSpans: [
      {
        scope: { name: 'bench', version: '1' },
        spans: list.map((s) => ({
          traceId: s.traceId,
          spanId: s.spanId,
          parentSpanId: s.parentSpanId,
          name: s.name,
          kind: s.kind,
          startTimeUnixNano: ns(s.start),
          endTimeUnixNano: ns(s.end),
          attributes: s.attributes,
          status: { code: s.error ? 2 : 0 },
          events: s.exception
            ? [{ timeUnixNano: ns(s.end), name: 'exception', attributes: [attr('exception.type', 'DatabaseError'), attr('exception.message', s.exception)] }]
            : [],
        })),
      },
    ],
  }));
  const msg = ExportTraceServiceRequest.fromObject({ resourceSpans });
  return Buffer.from(ExportTraceServiceRequest.encode(msg).finish());
}

// ---- HTTP ---------------------------------------------------------------------------------------



async function seed(port: number, ingestKey: string, nowMs: number): Promise<{ spans: number; traces: number; seconds: number; sampleTraceIds: string[]; errorTraceIds: string[] }> {
  // Traces start evenly over the day (by the share of spans produced so far), newest a minute ago.
  const from = nowMs - DAY + 60_000;
  const span = DAY - 120_000;
  // One batch buffer per service, as each service's own exporter (BatchSpanProcessor) would send.
  const pending = new Map<Service, GenSpan[]>();
  let produced = 0;
  let traces = 0;
  const sampleTraceIds: string[] = [];
  const errorTraceIds: string[] = [];
  let t = 0;
  /** Next batch of BATCH spans of one service (the last ones may be shorter), or null when done. */
  const nextBatch = (): Buffer | null => {
    for (;;) {
      for (const [svc, list] of pending) {
        if (list.length >= BATCH || (produced >= TARGET_SPANS && list.length)) {
          pending.set(svc, list.slice(BATCH));
          return encode(list.slice(0, BATCH));
        }
      }
      if (produced >= TARGET_SPANS) return null;
      const spans = genTrace(from + (produced / TARGET_SPANS) * span + rand() * 500);
      t++;
      traces++;
      if (t % 997 === 0 || sampleTraceIds.length === 0) sampleTraceIds.push(spans[0]!.traceId.toString('hex'));
      if (errorTraceIds.length < 200 && t % 7 === 0 && spans.some((x) => x.exception)) errorTraceIds.push(spans[0]!.traceId.toString('hex'));
      const take = spans.slice(0, TARGET_SPANS - produced);
      produced += take.length;
      for (const sp of take) {
        let list = pending.get(sp.service);
        if (!list) pending.set(sp.service, (list = []));
        list.push(sp);
      }
    }
  };
  // Prebuild every batch, so that posting measures the server, not the encoder.
  const tb = performance.now();
  const batches: Buffer[] = [];
  for (let b = nextBatch(); b; b = nextBatch()) batches.push(b);
  console.log(`built ${batches.length.toLocaleString('en')} batches in ${((performance.now() - tb) / 1000).toFixed(1)} s`);
  const headers = { 'content-type': 'application/x-protobuf', 'x-service-key': ingestKey };
  const t0 = performance.now();
  let sent = 0;
  let next = 0;
  let lastLog = t0;
  const worker = async () => {
    for (;;) {
      const body = batches[next++];
      if (!body) return;
      const r = await request(port, 'POST', '/ingest/v1/traces', { ...headers, 'content-length': body.length }, body);
      if (r.status !== 200) throw new Error(`ingest: ${r.status} ${r.body.toString().slice(0, 200)}`);
      sent += BATCH;
      if (performance.now() - lastLog > 5000) {
        lastLog = performance.now();
        process.stdout.write(`  … ${Math.min(sent, TARGET_SPANS).toLocaleString('en')} spans\n`);
      }
    }
  };
  await Promise.all(Array.from({ length: CONNECTIONS }, worker));
  return { spans: produced, traces, seconds: (performance.now() - t0) / 1000, sampleTraceIds, errorTraceIds };
}

// ---- timing -------------------------------------------------------------------------------------

const time = (port: number, key: string, label: string, path: () => string) => timeGet(port, key, label, path, RUNS);

async function main() {
  const dbFile = opts.db ?? join(mkdtempSync(join(tmpdir(), 'sl-bench-traces-')), 'bench.db');
  const sidecar = `${dbFile}.bench.json`;
  const reuse = existsSync(dbFile) && existsSync(sidecar);
  const { child, port, keys } = await startBenchServer(dbFile);
  try {
    let meta: { project: string; ingest: string; admin: string; nowMs: number; spans: number; traces: number; sampleTraceIds: string[]; errorTraceIds?: string[] };
    if (reuse) {
      meta = JSON.parse(readFileSync(sidecar, 'utf8'));
      console.log(`reusing ${dbFile}: ${meta.spans.toLocaleString('en')} spans, ${meta.traces.toLocaleString('en')} traces, seeded at ${new Date(meta.nowMs).toISOString()}`);
    } else {
      const nowMs = Date.now();
      const { ingest, admin, project } = keys!;
      console.log(`seeding ${TARGET_SPANS.toLocaleString('en')} spans through POST /ingest/v1/traces (protobuf, ${BATCH}/batch, ${CONNECTIONS} connections) into ${dbFile}`);
      const r = await seed(port, ingest, nowMs);
      console.log(`seeded ${r.spans.toLocaleString('en')} spans / ${r.traces.toLocaleString('en')} traces in ${r.seconds.toFixed(1)} s (${Math.round(r.spans / r.seconds).toLocaleString('en')} spans/s)`);
      meta = { project, ingest, admin, nowMs, spans: r.spans, traces: r.traces, sampleTraceIds: r.sampleTraceIds, errorTraceIds: r.errorTraceIds };
      if (opts.db) writeFileSync(sidecar, JSON.stringify(meta));
    }

    const P = `/v1/projects/${meta.project}`;
    // The seeded day; on a fresh seed this is the default window (last 24 h).
    const to = new Date(meta.nowMs).toISOString();
    const from = new Date(meta.nowMs - DAY).toISOString();
    const w = `from=${encodeURIComponent(from)}&to=${encodeURIComponent(to)}`;
    let i = 0;
    const someTrace = () => meta.sampleTraceIds[i++ % meta.sampleTraceIds.length]!;
    const failed = meta.errorTraceIds?.length ? meta.errorTraceIds : meta.sampleTraceIds;
    const someFailedTrace = () => failed[i++ % failed.length]!;
    const ops = JSON.parse((await request(port, 'GET', `${P}/trace-operations?${w}&limit=100`, { 'x-service-key': meta.admin })).body.toString());
    const op = ops.data?.[Math.floor((ops.data?.length ?? 1) / 2)];
    const results = [
      await time(port, meta.admin, 'traces.operations (24 h, limit 50)', () => `${P}/trace-operations?${w}`),
      await time(port, meta.admin, 'traces.operations (24 h, sort=p95, limit 100)', () => `${P}/trace-operations?${w}&sort=p95&limit=100`),
      await time(port, meta.admin, 'traces.list (24 h, first page of 50)', () => `${P}/traces?${w}`),
      await time(port, meta.admin, 'traces.list (24 h, status=error)', () => `${P}/traces?${w}&status=error`),
      await time(port, meta.admin, `traces.list (24 h, drill-down ${op?.service_name} ${op?.operation})`, () =>
        `${P}/traces?${w}&service_name=${encodeURIComponent(op.service_name)}&operation=${encodeURIComponent(op.operation)}`),
      await time(port, meta.admin, 'traces.list (24 h, min_duration=1000)', () => `${P}/traces?${w}&min_duration=1000`),
      await time(port, meta.admin, 'traces.serviceMap (24 h)', () => `${P}/services?${w}`),
      await time(port, meta.admin, 'traces.get (random trace)', () => `${P}/traces/${someTrace()}`),
      await time(port, meta.admin, 'traces.errors (random failed trace)', () => `${P}/traces/${someFailedTrace()}/errors`),
    ];
    const map = JSON.parse((await request(port, 'GET', `${P}/services?${w}`, { 'x-service-key': meta.admin })).body.toString());
    console.log(
      `\nservice map: ${map.nodes.length} nodes, ${map.edges.length} edges, ${map.sampled ? `edges from a sample of ${(map.sample_fraction * 100).toFixed(1)}% of the window` : 'exact'}; ` +
        `trace operations: ${ops.total_operations} (service, operation) rows`,
    );
    console.log(`\n${RUNS} sequential REST calls each after one warm-up; server and client share this machine (load average ${(await import('node:os')).loadavg()[0]!.toFixed(1)}).\n`);
    console.log('| operation | p50 ms | p95 ms | max ms | response bytes | aim p95 |');
    console.log('|---|---:|---:|---:|---:|---:|');
    for (const r of results) console.log(`| ${r.label} | ${r.p50.toFixed(1)} | ${r.p95.toFixed(1)} | ${r.max.toFixed(1)} | ${r.bytes.toLocaleString('en')} | ≤ 250 |`);
  } finally {
    const exited = child.exitCode !== null ? Promise.resolve() : new Promise((resolve) => child.once('exit', resolve));
    child.kill('SIGTERM');
    closeRequests();
    await exited;
    // A seeded database is kept only when asked for (--db); the temporary one is removed.
    if (!opts.db) rmSync(dirname(dbFile), { recursive: true, force: true });
  }
}

await main();
