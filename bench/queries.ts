/**
 * Log and metric read latency at 1,000,000 log records and 100,000 metric points. A Sightline server
 * runs in a child process (`bin/sightline.mjs start`); this process seeds it THROUGH THE INGEST PATH
 * (prebuilt OTLP protobuf batches of 512 records / points posted to /ingest/v1/logs|metrics), then
 * times the read operations over REST for the seeded 24 hours and prints p50/p95 per operation.
 *
 * Aims (p95): logs.search with q ≤ 100 ms; logs.histogram, logs.insights, metrics.timeline ≤ 250 ms.
 *
 * Shape: 8 services (one environment each; two change release half-way), bodies from ~20 message
 * templates with ids, durations, UUIDs and IPs in them (so free text hits from a handful of rows to a
 * third of them), levels ~70% info / 15% debug / 10% warn / 4.5% error / 0.5% fatal, HTTP attributes
 * on the API services. Metrics: per service a gauge, a cumulative monotonic counter per route (one
 * reset), a delta explicit histogram per route, a delta exponential histogram and a cumulative
 * explicit histogram, one point per series per minute.
 *
 *   npx tsx bench/queries.ts [logs=1000000] [points=100000] [runs=30]
 *   npx tsx bench/queries.ts --db /tmp/x/bench.db      # reuse (or create and keep) a seeded file
 *
 * Traces: measured by bench/queries-traces.ts (same method, its own seeded file). It is kept as a
 * separate script so each bench seeds only what it measures; run both for the full picture.
 */
import { existsSync, mkdtempSync, readFileSync, writeFileSync } from 'node:fs';
import { loadavg, tmpdir } from 'node:os';
import { dirname, join } from 'node:path';
import http from 'node:http';
import { parseArgs } from 'node:util';
import { ExportLogsServiceRequest, ExportMetricsServiceRequest } from '../src/ingest/otlp/schema.js';
import { rng, attr, startBenchServer } from './lib.js';

const { values: opts, positionals } = parseArgs({ options: { db: { type: 'string' } }, allowPositionals: true });
const TARGET_LOGS = Number(positionals[0] ?? 1_000_000);
const TARGET_POINTS = Number(positionals[1] ?? 100_000);
const RUNS = Number(positionals[2] ?? 30);
const BATCH = 512;
const CONNECTIONS = 4;
const DAY = 86_400_000;
const MINUTE = 60_000;
const ROOT = join(import.meta.dirname, '..');


// ---- data shape ---------------------------------------------------------------------------------

const rand = rng(7);
const int = (n: number) => Math.floor(rand() * n);
const pick = <T>(xs: readonly T[]): T => xs[int(xs.length)]!;
const hex = (n: number) => Array.from({ length: n }, () => '0123456789abcdef'[int(16)]).join('');
const uuid = () => `${hex(8)}-${hex(4)}-4${hex(3)}-a${hex(3)}-${hex(12)}`;
const ip = () => `10.${int(256)}.${int(256)}.${int(256)}`;
const ns = (ms: number) => (BigInt(Math.round(ms * 1000)) * 1000n).toString();


interface Service {
  name: string;
  env: string;
  /** Release before and after the half-way point. */
  releases: [string, string];
  http: boolean;
}
const SERVICES: Service[] = [
  { name: 'frontend', env: 'production', releases: ['4.2.0', '4.3.0'], http: true },
  { name: 'checkout', env: 'production', releases: ['2.3.1', '2.3.1'], http: true },
  { name: 'payments', env: 'production', releases: ['1.9.0', '1.10.0'], http: true },
  { name: 'inventory', env: 'production', releases: ['3.0.2', '3.0.2'], http: true },
  { name: 'search', env: 'production', releases: ['0.8.1', '0.8.1'], http: true },
  { name: 'worker', env: 'production', releases: ['5.1.0', '5.1.0'], http: false },
  { name: 'mailer', env: 'production', releases: ['1.0.4', '1.0.4'], http: false },
  { name: 'checkout-canary', env: 'staging', releases: ['2.4.0-rc.1', '2.4.0-rc.1'], http: true },
];
const ROUTES = ['/api/orders/:id', '/api/checkout', '/api/products', '/api/cart', '/api/users/:id', '/health'];
const METHODS = ['GET', 'GET', 'GET', 'POST', 'PUT', 'DELETE'];

interface Template {
  level: () => [number, string];
  text: () => string;
}
const info = (): [number, string] => [9, 'INFO'];
const LEVELED = (): [number, string] => {
  const r = rand();
  return r < 0.78 ? [9, 'INFO'] : r < 0.96 ? [5, 'DEBUG'] : [13, 'WARN'];
};
const TEMPLATES: { w: number; t: Template }[] = [
  { w: 20, t: { level: LEVELED, text: () => `GET /api/orders/${int(90000)} 200 in ${int(400)}ms` } },
  { w: 12, t: { level: LEVELED, text: () => `request completed status=200 route=/api/products duration_ms=${int(900)}` } },
  { w: 8, t: { level: info, text: () => `user ${int(50000)} signed in from ${ip()}` } },
  { w: 8, t: { level: () => [5, 'DEBUG'], text: () => `cache miss for key product:${int(20000)}` } },
  { w: 6, t: { level: info, text: () => `worker job ${int(1e6)} completed in ${int(5000)}ms (${int(500)} items)` } },
  { w: 5, t: { level: () => [5, 'DEBUG'], text: () => `feature flag new-checkout evaluated to ${rand() < 0.5} for user ${int(50000)}` } },
  { w: 5, t: { level: info, text: () => `sent email template=receipt to user ${int(50000)}` } },
  { w: 4, t: { level: () => [13, 'WARN'], text: () => `db query slow: SELECT * FROM orders WHERE id = ${int(90000)} took ${200 + int(3000)}ms` } },
  { w: 4, t: { level: () => [13, 'WARN'], text: () => `retrying request to inventory attempt ${1 + int(4)}` } },
  { w: 3, t: { level: () => [17, 'ERROR'], text: () => `POST /api/checkout 502 upstream timeout after ${1000 + int(9000)}ms` } },
  { w: 2, t: { level: () => [17, 'ERROR'], text: () => `payment ${uuid()} declined: card_declined` } },
  { w: 1, t: { level: () => [17, 'ERROR'], text: () => `connection reset by peer while reading response from ${ip()}` } },
  { w: 1, t: { level: () => [13, 'WARN'], text: () => `rate limit reached for api key ${hex(12)}` } },
  { w: 0.5, t: { level: () => [21, 'FATAL'], text: () => `out of memory: heap limit reached, process exiting (pid ${int(60000)})` } },
  { w: 2, t: { level: info, text: () => `order ord_${int(1e7)} placed total=${(rand() * 300).toFixed(2)} EUR` } },
  { w: 2, t: { level: info, text: () => `search query returned ${int(200)} results in ${int(80)}ms` } },
  { w: 1.5, t: { level: () => [13, 'WARN'], text: () => `deprecated API version v1 used by client ${hex(8)}` } },
];
const TOTAL_W = TEMPLATES.reduce((s, t) => s + t.w, 0);
function template(): Template {
  let r = rand() * TOTAL_W;
  for (const t of TEMPLATES) if ((r -= t.w) < 0) return t.t;
  return TEMPLATES[0]!.t;
}

interface GenLog {
  service: Service;
  release: string;
  time: number;
  record: Record<string, unknown>;
}

function genLog(time: number, half: number): GenLog {
  const service = pick(SERVICES);
  const t = template();
  const [severityNumber, severityText] = t.level();
  const attributes = [attr('user.id', `u${int(50000)}`), attr('code.function', pick(['handle', 'process', 'render', 'dispatch']))];
  if (service.http) {
    attributes.push(attr('http.request.method', pick(METHODS)), attr('http.route', pick(ROUTES)), attr('http.response.status_code', severityNumber >= 17 ? 502 : 200));
  }
  return {
    service,
    release: time < half ? service.releases[0] : service.releases[1],
    time,
    record: { timeUnixNano: ns(time), observedTimeUnixNano: ns(time + 5), severityNumber, severityText, body: { stringValue: t.text() }, attributes },
  };
}

function encodeLogs(logs: GenLog[]): Buffer {
  const groups = new Map<string, GenLog[]>();
  for (const l of logs) {
    const k = `${l.service.name}\u0000${l.release}`;
    let g = groups.get(k);
    if (!g) groups.set(k, (g = []));
    g.push(l);
  }
  const resourceLogs = [...groups.values()].map((g) => ({
    resource: {
      attributes: [
        attr('service.name', g[0]!.service.name),
        attr('service.version', g[0]!.release),
        attr('deployment.environment.name', g[0]!.service.env),
        attr('telemetry.sdk.language', 'nodejs'),
      ],
    },
    scopeLogs: [{ scope: { name: 'bench-logger', version: '1' }, logRecords: g.map((l) => l.record) }],
  }));
  return Buffer.from(ExportLogsServiceRequest.encode(ExportLogsServiceRequest.fromObject({ resourceLogs })).finish());
}

// Metrics: one point per series per minute.
const BOUNDS = [5, 10, 25, 50, 75, 100, 250, 500, 750, 1000, 2500, 5000];
interface SeriesState {
  cum: number;
  start: number;
  histCum: number[];
  histCount: number;
  histSum: number;
}

function histogramCounts(n: number, median: number): { counts: number[]; sum: number; min: number; max: number } {
  const counts = new Array<number>(BOUNDS.length + 1).fill(0);
  let sum = 0;
  let min = Infinity;
  let max = 0;
  for (let i = 0; i < n; i++) {
    const v = median * Math.exp((rand() + rand() + rand() - 1.5) * 1.4);
    sum += v;
    min = Math.min(min, v);
    max = Math.max(max, v);
    let b = BOUNDS.findIndex((x) => v <= x);
    if (b < 0) b = BOUNDS.length;
    counts[b]!++;
  }
  return { counts, sum, min: n ? min : 0, max };
}

function encodeMetricsMinute(minutes: number[], state: Map<string, SeriesState>, seriesStart: number): Buffer {
  const resourceMetrics = SERVICES.map((svc) => {
    const cpu: unknown[] = [];
    const requests: unknown[] = [];
    const duration: unknown[] = [];
    const rpc: unknown[] = [];
    const db: unknown[] = [];
    for (const m of minutes) {
      const t = ns(m);
      const start = ns(m - MINUTE);
      cpu.push({ timeUnixNano: t, asDouble: 0.2 + rand() * 0.6 });
      for (const route of ROUTES.slice(0, 3)) {
        const key = `${svc.name}${route}`;
        let s = state.get(key);
        if (!s) state.set(key, (s = { cum: 0, start: seriesStart, histCum: new Array(BOUNDS.length + 1).fill(0), histCount: 0, histSum: 0 }));
        // one restart of the checkout service half-way: a new start time and counts from zero
        if (svc.name === 'checkout' && m === seriesStart + 720 * MINUTE) {
          s.cum = 0;
          s.start = m - 30_000;
        }
        s.cum += 50 + int(100);
        requests.push({ startTimeUnixNano: ns(s.start), timeUnixNano: t, asDouble: s.cum, attributes: [attr('http.route', route)] });
        const n = 20 + int(80);
        const h = histogramCounts(n, route === '/api/checkout' ? 180 : 40);
        duration.push({ startTimeUnixNano: start, timeUnixNano: t, count: n, sum: h.sum, min: h.min, max: h.max, bucketCounts: h.counts, explicitBounds: BOUNDS, attributes: [attr('http.route', route)] });
      }
      // delta exponential histogram, scale 3, positive buckets only
      const en = 10 + int(40);
      const buckets = new Array<number>(60).fill(0);
      let esum = 0;
      for (let i = 0; i < en; i++) {
        const v = 20 * Math.exp((rand() + rand() - 1) * 1.5);
        esum += v;
        const idx = Math.ceil(Math.log2(v) * 8) - 1 - 10;
        buckets[Math.min(59, Math.max(0, idx))]!++;
      }
      rpc.push({ startTimeUnixNano: start, timeUnixNano: t, count: en, sum: esum, scale: 3, zeroCount: 0, positive: { offset: 10, bucketCounts: buckets } });
      // cumulative explicit histogram
      const key = `${svc.name}:db`;
      let s = state.get(key);
      if (!s) state.set(key, (s = { cum: 0, start: seriesStart, histCum: new Array(BOUNDS.length + 1).fill(0), histCount: 0, histSum: 0 }));
      const h = histogramCounts(5 + int(20), 8);
      h.counts.forEach((c, i) => (s!.histCum[i]! += c));
      s.histCount += h.counts.reduce((a, b) => a + b, 0);
      s.histSum += h.sum;
      db.push({ startTimeUnixNano: ns(s.start), timeUnixNano: t, count: s.histCount, sum: s.histSum, bucketCounts: [...s.histCum], explicitBounds: BOUNDS });
    }
    return {
      resource: { attributes: [attr('service.name', svc.name), attr('service.version', svc.releases[1]), attr('deployment.environment.name', svc.env)] },
      scopeMetrics: [
        {
          scope: { name: 'bench-meter', version: '1' },
          metrics: [
            { name: 'process.cpu.utilization', unit: '1', description: 'CPU share', gauge: { dataPoints: cpu } },
            { name: 'http.server.requests', unit: '{request}', description: 'Requests served', sum: { aggregationTemporality: 2, isMonotonic: true, dataPoints: requests } },
            { name: 'http.server.request.duration', unit: 'ms', description: 'Request duration', histogram: { aggregationTemporality: 1, dataPoints: duration } },
            { name: 'rpc.client.duration', unit: 'ms', description: 'Outgoing RPC duration', exponentialHistogram: { aggregationTemporality: 1, dataPoints: rpc } },
            { name: 'db.client.operation.duration', unit: 'ms', description: 'Database operation duration', histogram: { aggregationTemporality: 2, dataPoints: db } },
          ],
        },
      ],
    };
  });
  return Buffer.from(ExportMetricsServiceRequest.encode(ExportMetricsServiceRequest.fromObject({ resourceMetrics })).finish());
}
/** Points per minute across all series (see encodeMetricsMinute). */
const POINTS_PER_MINUTE = SERVICES.length * (1 + 3 + 3 + 1 + 1);

// ---- HTTP ---------------------------------------------------------------------------------------

const agent = new http.Agent({ keepAlive: true, maxSockets: CONNECTIONS });

/** One HTTP call; a GET whose kept-alive socket was closed under it (ECONNRESET) is sent again once. */
async function request(port: number, method: string, path: string, headers: Record<string, string | number>, body?: Buffer): Promise<{ status: number; body: Buffer }> {
  try {
    return await send(port, method, path, headers, body);
  } catch (err) {
    if (method !== 'GET' || (err as NodeJS.ErrnoException).code !== 'ECONNRESET') throw err;
    return send(port, method, path, headers, body);
  }
}

function send(port: number, method: string, path: string, headers: Record<string, string | number>, body?: Buffer): Promise<{ status: number; body: Buffer }> {
  return new Promise((resolve, reject) => {
    const req = http.request({ host: '127.0.0.1', port, path, method, agent, headers }, (res) => {
      const chunks: Buffer[] = [];
      res.on('data', (c) => chunks.push(c));
      res.on('end', () => resolve({ status: res.statusCode ?? 0, body: Buffer.concat(chunks) }));
    });
    req.on('error', reject);
    req.end(body);
  });
}

async function post(port: number, path: string, key: string, bodies: () => Buffer | null, items: number, label: string): Promise<number> {
  const headers = { 'content-type': 'application/x-protobuf', 'x-service-key': key };
  const t0 = performance.now();
  let sent = 0;
  let lastLog = t0;
  const worker = async () => {
    for (;;) {
      const body = bodies();
      if (!body) return;
      const r = await request(port, 'POST', path, { ...headers, 'content-length': body.length }, body);
      if (r.status !== 200) throw new Error(`ingest ${path}: ${r.status} ${r.body.toString().slice(0, 200)}`);
      sent += items;
      if (performance.now() - lastLog > 10_000) {
        lastLog = performance.now();
        process.stdout.write(`  … ${sent.toLocaleString('en')} ${label}\n`);
      }
    }
  };
  await Promise.all(Array.from({ length: CONNECTIONS }, worker));
  return (performance.now() - t0) / 1000;
}

async function seed(port: number, ingestKey: string, nowMs: number) {
  // Logs: prebuilt batches of 512, in time order over the 24 hours before nowMs.
  const from = nowMs - DAY;
  const half = from + DAY / 2;
  const step = DAY / TARGET_LOGS;
  console.log(`building ${Math.ceil(TARGET_LOGS / BATCH).toLocaleString('en')} log batches…`);
  const logBatches: Buffer[] = [];
  for (let i = 0; i < TARGET_LOGS; i += BATCH) {
    const n = Math.min(BATCH, TARGET_LOGS - i);
    logBatches.push(encodeLogs(Array.from({ length: n }, (_, j) => genLog(from + (i + j) * step + rand() * step, half))));
  }
  let li = 0;
  console.log(`seeding ${TARGET_LOGS.toLocaleString('en')} logs through POST /ingest/v1/logs (protobuf, ${BATCH}/batch, ${CONNECTIONS} connections)`);
  const logSeconds = await post(port, '/ingest/v1/logs', ingestKey, () => logBatches[li++] ?? null, BATCH, 'logs');
  console.log(`  ${TARGET_LOGS.toLocaleString('en')} logs in ${logSeconds.toFixed(1)} s (${Math.round(TARGET_LOGS / logSeconds).toLocaleString('en')} logs/s)`);

  // Metrics: one point per series per minute over the last minutes of the day, in batches of ~512 points.
  const minutes = Math.ceil(TARGET_POINTS / POINTS_PER_MINUTE);
  const firstMinute = Math.floor((nowMs - minutes * MINUTE) / MINUTE) * MINUTE;
  const perBatch = Math.max(1, Math.round(BATCH / POINTS_PER_MINUTE));
  const state = new Map<string, SeriesState>();
  const metricBatches: Buffer[] = [];
  for (let m = 0; m < minutes; m += perBatch) {
    const ms = Array.from({ length: Math.min(perBatch, minutes - m) }, (_, k) => firstMinute + (m + k) * MINUTE + 1000);
    metricBatches.push(encodeMetricsMinute(ms, state, firstMinute - 3_600_000));
  }
  let mi = 0;
  const points = minutes * POINTS_PER_MINUTE;
  console.log(`seeding ${points.toLocaleString('en')} metric points through POST /ingest/v1/metrics (protobuf, ~${perBatch * POINTS_PER_MINUTE}/batch)`);
  const metricSeconds = await post(port, '/ingest/v1/metrics', ingestKey, () => metricBatches[mi++] ?? null, perBatch * POINTS_PER_MINUTE, 'points');
  console.log(`  ${points.toLocaleString('en')} points in ${metricSeconds.toFixed(1)} s (${Math.round(points / metricSeconds).toLocaleString('en')} points/s)`);
  return { logs: TARGET_LOGS, points, logSeconds, metricSeconds };
}

// ---- timing -------------------------------------------------------------------------------------

const pct = (sorted: number[], q: number) => sorted[Math.min(sorted.length - 1, Math.max(0, Math.ceil(q * sorted.length) - 1))]!;

interface Result {
  label: string;
  p50: number;
  p95: number;
  max: number;
  bytes: number;
  aim: number | null;
  note: string;
}

async function time(port: number, key: string, label: string, path: string, aim: number | null, note: (body: any) => string = () => ''): Promise<Result> {
  const headers = { 'x-service-key': key };
  const warm = await request(port, 'GET', path, headers); // statement preparation, page cache
  if (warm.status !== 200) throw new Error(`${label}: ${warm.status} ${warm.body.toString().slice(0, 300)}`);
  const ms: number[] = [];
  let bytes = 0;
  for (let i = 0; i < RUNS; i++) {
    const t0 = performance.now();
    const r = await request(port, 'GET', path, headers);
    ms.push(performance.now() - t0);
    if (r.status !== 200) throw new Error(`${label}: ${r.status} ${r.body.toString().slice(0, 300)}`);
    bytes = r.body.length;
  }
  ms.sort((a, b) => a - b);
  return { label, p50: pct(ms, 0.5), p95: pct(ms, 0.95), max: ms[ms.length - 1]!, bytes, aim, note: note(JSON.parse(warm.body.toString())) };
}

async function main() {
  const dbFile = opts.db ?? join(mkdtempSync(join(tmpdir(), 'sl-bench-queries-')), 'bench.db');
  const sidecar = `${dbFile}.bench.json`;
  const reuse = existsSync(dbFile) && existsSync(sidecar);
  const { child, port, keys } = await startBenchServer(dbFile);
  try {
    let meta: { project: string; ingest: string; admin: string; nowMs: number; logs: number; points: number };
    if (reuse) {
      meta = JSON.parse(readFileSync(sidecar, 'utf8'));
      console.log(`reusing ${dbFile}: ${meta.logs.toLocaleString('en')} logs, ${meta.points.toLocaleString('en')} points, seeded at ${new Date(meta.nowMs).toISOString()}`);
    } else {
      const nowMs = Date.now();
      const { ingest, admin, project } = keys!;
      const r = await seed(port, ingest, nowMs);
      meta = { project, ingest, admin, nowMs, logs: r.logs, points: r.points };
      if (opts.db) writeFileSync(sidecar, JSON.stringify(meta));
    }

    const P = `/v1/projects/${meta.project}`;
    const w = `from=${encodeURIComponent(new Date(meta.nowMs - DAY).toISOString())}&to=${encodeURIComponent(new Date(meta.nowMs).toISOString())}`;
    const k = meta.admin;
    const n = (b: any) => `${b.data?.length ?? 0} rows, total ${b.total ?? 'n/a'}, has_more ${b.has_more}`;
    const results: Result[] = [];
    const run = async (label: string, path: string, aim: number | null, note?: (b: any) => string) => {
      const r = await time(port, k, label, path, aim, note);
      results.push(r);
      process.stdout.write(`  ${label}: p50 ${r.p50.toFixed(1)} ms, p95 ${r.p95.toFixed(1)} ms\n`);
    };
    console.log(`timing (${RUNS} sequential calls each after one warm-up)…`);
    // ---- logs
    await run('logs.search q=timeout (≈3% of rows)', `${P}/logs?${w}&q=timeout`, 100, n);
    await run('logs.search q=request (≈15% of rows)', `${P}/logs?${w}&q=request`, 100, n);
    await run('logs.search q="connection reset" (phrase, ≈1%)', `${P}/logs?${w}&q=${encodeURIComponent('"connection reset"')}`, 100, n);
    await run('logs.search q=card_declined&service=payments', `${P}/logs?${w}&q=card_declined&service=payments`, 100, n);
    await run('logs.search q=timeout&level=error, offset 500', `${P}/logs?${w}&q=timeout&level=error&offset=500`, 100, n);
    await run('logs.search q=ord_4242* (prefix, a few rows)', `${P}/logs?${w}&q=ord_4242*`, 100, n);
    await run('logs.search q=zzzznotthere (no match)', `${P}/logs?${w}&q=zzzznotthere`, 100, n);
    await run('logs.search (no q, first page)', `${P}/logs?${w}`, null, n);
    await run('logs.search level=fatal', `${P}/logs?${w}&level=fatal`, null, n);
    await run('logs.histogram (default step 5m)', `${P}/logs/histogram?${w}`, 250, (b) => `${b.buckets.length} buckets, total ${b.total}`);
    await run('logs.histogram step=1m group_by=service', `${P}/logs/histogram?${w}&step=1m&group_by=service`, 250, (b) => `${b.buckets.length} buckets`);
    await run('logs.histogram step=1h group_by=http_method level=error', `${P}/logs/histogram?${w}&step=1h&group_by=http_method&level=error`, 250, (b) => `${b.buckets.length} buckets, total ${b.total}`);
    await run('logs.histogram q=timeout step=15m', `${P}/logs/histogram?${w}&q=timeout&step=15m`, null, (b) => `total ${b.total}`);
    await run('logs.insights (24 h)', `${P}/logs/insights?${w}`, 250, (b) => `${b.patterns.length} patterns, sample ${b.sample_count}, total ${b.total_count}`);
    await run('logs.insights dimensions=http.route,user.id', `${P}/logs/insights?${w}&dimensions=http.route,user.id`, 250, (b) => `${b.patterns.length} patterns`);
    await run('logs.insights service=payments level=error,fatal', `${P}/logs/insights?${w}&service=payments&level=error,fatal`, 250, (b) => `total ${b.total_count}`);
    // ---- metrics
    const tl = (name: string, type: string, agg: string, extra = '') => `${P}/metrics/timeline?${w}&metric_name=${name}&metric_type=${type}&aggregation=${agg}${extra}`;
    const buckets = (b: any) => `${b.buckets.length} buckets, ${b.buckets.reduce((s: number, x: any) => s + x.point_count, 0)} points`;
    await run('metrics.timeline hist p95 (delta, 24 series)', tl('http.server.request.duration', 'hist', 'p95'), 250, buckets);
    await run('metrics.timeline hist p99 granularity=1m', tl('http.server.request.duration', 'hist', 'p99', '&granularity=1m'), 250, buckets);
    await run('metrics.timeline sum (cumulative counter)', tl('http.server.requests', 'sum', 'sum'), 250, buckets);
    await run('metrics.timeline gauge avg', tl('process.cpu.utilization', 'gauge', 'avg'), 250, buckets);
    await run('metrics.timeline exp histogram p90 (delta)', tl('rpc.client.duration', 'exponential_histogram', 'p90'), 250, buckets);
    await run('metrics.timeline cumulative hist p50', tl('db.client.operation.duration', 'hist', 'p50'), 250, buckets);
    await run('metrics.inspect hist', `${P}/metrics/inspect?${w}&metric_name=http.server.request.duration&metric_type=hist`, null);
    await run('metrics.list', `${P}/metrics?${w}`, null, (b) => `${b.total} series`);
    await run('observability.summary', `${P}/observability-summary?${w}`, null);

    console.log(`\n${meta.logs.toLocaleString('en')} logs and ${meta.points.toLocaleString('en')} metric points over 24 h; window = those 24 h.`);
    console.log(`${RUNS} sequential REST calls each after one warm-up; server (child process) and client share this machine (load average ${loadavg()[0]!.toFixed(1)}).\n`);
    console.log('| operation | p50 ms | p95 ms | max ms | bytes | aim p95 | result |');
    console.log('|---|---:|---:|---:|---:|---:|---|');
    for (const r of results) {
      const verdict = r.aim === null ? '' : r.p95 <= r.aim ? 'ok' : 'MISSED';
      console.log(`| ${r.label} | ${r.p50.toFixed(1)} | ${r.p95.toFixed(1)} | ${r.max.toFixed(1)} | ${r.bytes.toLocaleString('en')} | ${r.aim === null ? '—' : `≤ ${r.aim}`} | ${verdict} ${r.note} |`);
    }
    console.log('\nTraces: npx tsx bench/queries-traces.ts');
  } finally {
    child.kill('SIGTERM');
    agent.destroy();
  }
  if (!opts.db) console.log(`\n(database left at ${dirname(dbFile)}; delete it when done)`);
}

await main();
