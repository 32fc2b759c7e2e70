/**
 * Ingest throughput: a Sightline server in a child process, this process as the load generator.
 * Posts prebuilt OTLP protobuf batches (512 spans / 512 log records) and Sentry envelopes over HTTP
 * with several connections, then prints spans/s, log records/s, error events/s, p99 acknowledgement
 * latency, the server's peak RSS, and the ratio to raw better-sqlite3 inserts of the same rows
 * (same schema and indexes, one transaction per 512) measured in this run.
 *
 * Each phase runs twice in the same run: decoding on the main thread (SIGHTLINE_INGEST_WORKERS=0, the
 * "now" of issue 19 item 3) and on the decode worker pool (the default). Meanwhile a probe sends cheap
 * requests one after another (OPTIONS on the envelope endpoint, no decoding, no writes): its p99 shows
 * how long ingestion holds the event loop away from everyone else.
 *
 *   npx tsx bench/ingest.ts [seconds-per-phase=8] [connections=8]
 */
import { mkdtempSync, readFileSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { randomBytes } from 'node:crypto';
import http from 'node:http';
import Database from 'better-sqlite3';
import { ExportLogsServiceRequest, ExportTraceServiceRequest } from '../src/ingest/otlp/schema.js';
import { MIGRATIONS } from '../src/storage/migrations/index.js';
import { attr, startBenchServer } from './lib.js';

const SECONDS = Number(process.argv[2] ?? 8);
const CONNECTIONS = Number(process.argv[3] ?? 8);
const BATCH = 512;
const ROOT = join(import.meta.dirname, '..');


const resource = { attributes: [attr('service.name', 'checkout'), attr('service.version', '1.4.2'), attr('deployment.environment.name', 'production'), attr('host.name', 'web-1')] };
const routes = ['/orders/{id}', '/cart', '/checkout', '/users/{id}/profile', '/search'];

function traceBatch(seed: number): Buffer {
  const now = BigInt(Date.now()) * 1_000_000n;
  const spans = [];
  for (let i = 0; i < BATCH; i++) {
    const traceId = randomBytes(16);
    const start = now - BigInt(i) * 1_000_000n;
    spans.push({
      traceId,
      spanId: randomBytes(8),
      parentSpanId: i % 4 === 0 ? Buffer.alloc(0) : randomBytes(8),
      name: `GET ${routes[(seed + i) % routes.length]}`,
      kind: 2,
      startTimeUnixNano: start.toString(),
      endTimeUnixNano: (start + BigInt(1_000_000 + (i % 250) * 100_000)).toString(),
      attributes: [attr('http.request.method', 'GET'), attr('http.route', routes[(seed + i) % routes.length]!), attr('http.response.status_code', 200), attr('user.id', `u-${i % 97}`)],
      status: { code: i % 50 === 0 ? 2 : 1 },
    });
  }
  const msg = ExportTraceServiceRequest.fromObject({ resourceSpans: [{ resource, scopeSpans: [{ scope: { name: 'bench', version: '1' }, spans }] }] });
  return Buffer.from(ExportTraceServiceRequest.encode(msg).finish());
}

function logBatch(seed: number): Buffer {
  const now = BigInt(Date.now()) * 1_000_000n;
  const logRecords = [];
  for (let i = 0; i < BATCH; i++) {
    logRecords.push({
      timeUnixNano: (now - BigInt(i) * 1_000_000n).toString(),
      observedTimeUnixNano: now.toString(),
      severityNumber: i % 20 === 0 ? 17 : 9,
      severityText: i % 20 === 0 ? 'ERROR' : 'INFO',
      body: { stringValue: `request ${seed}-${i} served for user u-${i % 97} in ${i % 300} ms from 10.0.${i % 255}.${seed % 255}` },
      attributes: [attr('http.route', routes[i % routes.length]!), attr('user.id', `u-${i % 97}`)],
      traceId: randomBytes(16),
      spanId: randomBytes(8),
    });
  }
  const msg = ExportLogsServiceRequest.fromObject({ resourceLogs: [{ resource, scopeLogs: [{ scope: { name: 'bench' }, logRecords }] }] });
  return Buffer.from(ExportLogsServiceRequest.encode(msg).finish());
}

function envelope(seed: number): Buffer {
  const id = randomBytes(16).toString('hex');
  const fn = ['chargeCard', 'loadCart', 'renderPage', 'saveOrder'][seed % 4];
  const event = {
    event_id: id,
    timestamp: Date.now() / 1000,
    platform: 'node',
    level: 'error',
    environment: 'production',
    release: 'checkout@1.4.2',
    exception: {
      values: [
        {
          type: 'TypeError',
          value: `Cannot read properties of undefined (reading 'id') for order ${seed}`,
          stacktrace: {
            frames: [
              { filename: '/app/node_modules/express/lib/router.js', function: 'handle', lineno: 10, in_app: false },
              { filename: '/app/src/routes.js', function: 'handler', lineno: 42, in_app: true },
              { filename: '/app/src/orders.js', function: fn, lineno: 100 + (seed % 7), in_app: true },
            ],
          },
        },
      ],
    },
    tags: { 'service.name': 'checkout' },
  };
  return Buffer.from(`${JSON.stringify({ event_id: id, sent_at: new Date().toISOString() })}\n{"type":"event"}\n${JSON.stringify(event)}\n`);
}

interface PhaseResult { name: string; items: number; seconds: number; p99: number; p50: number; probeP99: number; probeMax: number }

async function runPhase(name: string, port: number, path: string, headers: Record<string, string>, bodies: Buffer[], itemsPerRequest: number): Promise<PhaseResult> {
  const agent = new http.Agent({ keepAlive: true, maxSockets: CONNECTIONS });
  const latencies: number[] = [];
  let requests = 0;
  let failures = 0;
  const end = performance.now() + SECONDS * 1000;
  const t0 = performance.now();
  const probe: number[] = [];
  const probeAgent = new http.Agent({ keepAlive: true, maxSockets: 1 });
  const prober = async () => {
    while (performance.now() < end) {
      const start = performance.now();
      await new Promise<void>((resolve, reject) => {
        const req = http.request({ host: '127.0.0.1', port, path: '/ingest/api/1/envelope/', method: 'OPTIONS', agent: probeAgent }, (res) => {
          res.resume();
          res.on('end', () => resolve());
        });
        req.on('error', reject);
        req.end();
      });
      probe.push(performance.now() - start);
      await new Promise((r) => setTimeout(r, 5));
    }
  };
  const worker = async (w: number) => {
    let i = w;
    while (performance.now() < end) {
      const body = bodies[i++ % bodies.length]!;
      const start = performance.now();
      const status = await new Promise<number>((resolve, reject) => {
        const req = http.request({ host: '127.0.0.1', port, path, method: 'POST', agent, headers: { ...headers, 'content-length': body.length } }, (res) => {
          res.resume();
          res.on('end', () => resolve(res.statusCode ?? 0));
        });
        req.on('error', reject);
        req.end(body);
      });
      latencies.push(performance.now() - start);
      if (status === 200) requests++;
      else failures++;
    }
  };
  await Promise.all([...Array.from({ length: CONNECTIONS }, (_, w) => worker(w)), prober()]);
  const seconds = (performance.now() - t0) / 1000;
  agent.destroy();
  probeAgent.destroy();
  probe.sort((a, b) => a - b);
  if (failures) console.error(`${name}: ${failures} non-200 responses`);
  latencies.sort((a, b) => a - b);
  return { name, items: requests * itemsPerRequest, seconds, p99: latencies[Math.floor(latencies.length * 0.99)] ?? 0, p50: latencies[Math.floor(latencies.length * 0.5)] ?? 0, probeP99: probe[Math.floor(probe.length * 0.99)] ?? 0, probeMax: probe[probe.length - 1] ?? 0 };
}

/** The same rows inserted straight into the same schema with better-sqlite3 (no HTTP, no decoding). */
function rawBaseline(kind: 'spans' | 'logs'): number {
  const db = new Database(join(mkdtempSync(join(tmpdir(), 'sl-raw-')), 'raw.db'));
  db.pragma('journal_mode = WAL');
  db.pragma('synchronous = NORMAL');
  for (const m of MIGRATIONS) db.exec(m.sql);
  const attrs = JSON.stringify({ 'http.request.method': 'GET', 'http.route': '/orders/{id}', 'http.response.status_code': 200, 'user.id': 'u-1' });
  const span = db.prepare(`INSERT INTO spans (project_id, trace_id, span_id, parent_span_id, name, operation, kind, service_name, environment, service_version,
      start_ms, end_ms, duration_ms, status_code, status_message, attributes, events, links, resource_id, scope_name, scope_version, trace_state, source, received_ms)
      VALUES (1, ?, ?, ?, 'GET /orders/{id}', 'GET /orders/{id}', 2, 'checkout', 'production', '1.4.2', ?, ?, 1.5, 1, '', ?, NULL, NULL, 1, 'bench', '1', '', 'otlp', ?)`);
  const log = db.prepare(`INSERT INTO logs (project_id, time_ms, observed_ms, severity_number, severity_text, level, body, attributes, trace_id, span_id,
      service_name, environment, release, source, connector_key, resource_id, scope_name, received_ms) VALUES (1, ?, ?, 9, 'INFO', 'info', ?, ?, ?, ?, 'checkout', 'production', '1.4.2', 'otlp', NULL, 1, 'bench', ?)`);
  const fts = db.prepare('INSERT INTO logs_fts (rowid, body, attrs) VALUES (?, ?, ?)');
  const total = 200_000;
  const t0 = performance.now();
  for (let b = 0; b < total / BATCH; b++) {
    db.transaction(() => {
      for (let i = 0; i < BATCH; i++) {
        const now = Date.now();
        if (kind === 'spans') span.run(randomBytes(16).toString('hex'), randomBytes(8).toString('hex'), randomBytes(8).toString('hex'), now, now + 1.5, attrs, now);
        else {
          const body = `request ${b}-${i} served for user u-${i % 97} in ${i % 300} ms`;
          const info = log.run(now, now, body, attrs, randomBytes(16).toString('hex'), randomBytes(8).toString('hex'), now);
          fts.run(info.lastInsertRowid, body, '/orders/{id} u-1');
        }
      }
    })();
  }
  db.close();
  return total / ((performance.now() - t0) / 1000);
}

function peakRssMb(pid: number): number {
  const m = /VmHWM:\s+(\d+) kB/.exec(readFileSync(`/proc/${pid}/status`, 'utf8'));
  return m ? Number(m[1]) / 1024 : NaN;
}

async function runMode(workers: string | undefined) {
  const dir = mkdtempSync(join(tmpdir(), 'sl-bench-ingest-'));
  const { child, port, keys } = await startBenchServer(join(dir, 'bench.db'), workers === undefined ? {} : { SIGHTLINE_INGEST_WORKERS: workers });
  const key = keys!.ingest;
  const project = keys!.project;
  const traces = Array.from({ length: 16 }, (_, i) => traceBatch(i));
  const logs = Array.from({ length: 16 }, (_, i) => logBatch(i));
  const envelopes = Array.from({ length: 256 }, (_, i) => envelope(i));
  const otlpHeaders = { 'content-type': 'application/x-protobuf', 'x-service-key': key };
  // Warm up (the decode workers start and load their code on the first job): one of each, unmeasured.
  for (const [path, headers, body] of [
    ['/ingest/v1/traces', otlpHeaders, traces[0]!],
    ['/ingest/v1/logs', otlpHeaders, logs[0]!],
    [`/ingest/api/${project}/envelope/?sentry_key=${key}`, {}, envelopes[0]!],
  ] as const) {
    await Promise.all(Array.from({ length: 4 }, () => fetch(`http://127.0.0.1:${port}${path}`, { method: 'POST', headers, body })));
  }
  const results = [
    await runPhase('spans (OTLP protobuf, 512/batch)', port, '/ingest/v1/traces', otlpHeaders, traces, BATCH),
    await runPhase('log records (OTLP protobuf, 512/batch)', port, '/ingest/v1/logs', otlpHeaders, logs, BATCH),
    await runPhase('error events (Sentry envelopes, grouped)', port, `/ingest/api/${project}/envelope/?sentry_key=${key}`, { 'content-type': 'application/x-sentry-envelope' }, envelopes, 1),
  ];
  const rss = peakRssMb(child.pid!);
  child.kill('SIGTERM');
  return { results, rss };
}

async function main() {
  console.log(`${SECONDS}s per phase, ${CONNECTIONS} connections`);
  const modes = [
    { label: 'main thread (now)', workers: '0' },
    { label: 'worker pool', workers: process.env.SIGHTLINE_INGEST_WORKERS },
  ];
  const runs = [];
  for (const m of modes) runs.push({ ...m, ...(await runMode(m.workers)) });

  const rawSpans = rawBaseline('spans');
  const rawLogs = rawBaseline('logs');
  const aims = [60_000, 60_000, 10_000];
  const raws = [rawSpans, rawLogs, NaN];
  console.log('\n| stream | decode | items/s | aim | p50 ack ms | p99 ack ms | probe p99 ms | probe max ms | raw better-sqlite3 rows/s | ratio to raw |');
  console.log('|---|---|---:|---:|---:|---:|---:|---:|---:|---:|');
  for (let i = 0; i < 3; i++) {
    for (const run of runs) {
      const r = run.results[i]!;
      const rate = r.items / r.seconds;
      console.log(`| ${r.name} | ${run.label} | ${Math.round(rate).toLocaleString('en')} | ${aims[i]!.toLocaleString('en')} | ${r.p50.toFixed(1)} | ${r.p99.toFixed(1)} | ${r.probeP99.toFixed(1)} | ${r.probeMax.toFixed(1)} | ${Number.isNaN(raws[i]) ? '–' : Math.round(raws[i]!).toLocaleString('en')} | ${Number.isNaN(raws[i]) ? '–' : (rate / raws[i]!).toFixed(2)} |`);
    }
  }
  for (const run of runs) console.log(`server peak RSS (${run.label}): ${run.rss.toFixed(0)} MB (aim ≤ 500 MB)`);
}

await main();
