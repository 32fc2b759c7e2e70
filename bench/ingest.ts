/**
 * Ingest throughput: a Sightline server in a child process, this process as the load generator.
 * Posts prebuilt OTLP protobuf batches (512 spans / 512 log records) and Sentry envelopes over HTTP
 * with several connections, then prints spans/s, log records/s, error events/s, p50/p99
 * acknowledgement latency and the server's peak RSS. Span batches hold traces of 8 spans (a server
 * span and its children, as an SDK's batch exporter sends them); a second phase sends one span per
 * trace (every span a new random trace id: the worst case for the trace lookup table).
 *
 * In the same run, in this process (no HTTP, no decoding, 512 rows per transaction), it measures
 * the storage write path alone:
 * - "raw limit": spans into a span table with only its time index / logs with only theirs, single
 *   row inserts (the ceiling the issue compares against);
 * - "before": the schema and per-row write loop before migration 007 (per-span trace index,
 *   one statement per row) — the "now" column of issue 19;
 * - "after": the current writer (createSqliteTelemetryWriter + withLogRollups) on the current schema;
 * - each secondary index / FTS5 option left out or changed in turn, with the query it serves timed.
 *
 * Each phase runs twice in the same run: decoding on the main thread (SIGHTLINE_INGEST_WORKERS=0, the
 * "now" of issue 19 item 3) and on the decode worker pool (the default). Meanwhile a probe sends cheap
 * requests one after another (OPTIONS on the envelope endpoint, no decoding, no writes): its p99 shows
 * how long ingestion holds the event loop away from everyone else.
 *
 *   npx tsx bench/ingest.ts [seconds-per-phase=8] [connections=8]
 *   npx tsx bench/ingest.ts --storage-only     (the in-process tables only)
 *   npx tsx bench/ingest.ts 10 8 --spans-only [--no-main]   (the 8-per-trace span phase alone: rate, p50/p99/max ack)
 *   npx tsx bench/ingest.ts --errors-storage [--pg postgres://127.0.0.1/postgres]   (error events' storage path; with
 *     --pg also with error groups in PostgreSQL, a fresh database per round, alternated in the same run;
 *     BENCH_ERROR_USERS=1 gives every event a user of its own)
 * A non-200 response prints its status and body (the first three per phase).
 */
import { mkdtempSync, readFileSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { randomBytes } from 'node:crypto';
import http from 'node:http';
import Database from 'better-sqlite3';
import { ExportLogsServiceRequest } from '../src/ingest/otlp/schema.js';
import { MIGRATIONS } from '../src/storage/migrations/index.js';
import { openDatabase, type Db } from '../src/storage/db.js';
import { createSqliteTelemetryWriter, environmentOf, levelOf, operationOf, serviceVersionOf } from '../src/storage/sqlite-telemetry-store.js';
import { withLogRollups } from '../src/storage/log-rollups.js';
import { LOG_COUNT_TABLES, rollupInsert } from '../src/storage/migrations/004-log-counts.js';
import { createTracesReadRepo } from '../src/storage/traces-read-repo.js';
import type { TelemetryWriter } from '../src/storage/telemetry-store.js';
import type { Attributes, LogRecordOut, SpanRecord } from '../src/domain/telemetry-types.js';
import { attr, otlpTraceBatch, startBenchServer } from './lib.js';

const argv = process.argv.slice(2).filter((a) => !a.startsWith('--'));
const STORAGE_ONLY = process.argv.includes('--storage-only');
/** Only the Sentry phase, on the worker pool (the error-ingest profile loop; BENCH_SERVER_NODE_ARGS='--cpu-prof --cpu-prof-dir=DIR' profiles the server). */
const ERRORS_ONLY = process.argv.includes('--errors-only');
/** The error write path alone, in this process: decoded Sentry events through the write batcher (group commit), events per CPU second. */
const ERRORS_STORAGE = process.argv.includes('--errors-storage');
/** Only the 8-spans-per-trace phase, on a main-thread server then on the workers (--no-main: workers only): the issue 19 tail-latency loop; prints the slowest acknowledgement and the load average. */
const SPANS_ONLY = process.argv.includes('--spans-only');
const SECONDS = Number(argv[0] ?? 8);
const CONNECTIONS = Number(argv[1] ?? 8);
const SPANS_PER_TRACE = 8;
const BATCH = 512;
const ROOT = join(import.meta.dirname, '..');


const resource = { attributes: [attr('service.name', 'checkout'), attr('service.version', '1.4.2'), attr('deployment.environment.name', 'production'), attr('host.name', 'web-1')] };
const routes = ['/orders/{id}', '/cart', '/checkout', '/users/{id}/profile', '/search'];
const traceBatch = (seed: number, perTrace = SPANS_PER_TRACE) => otlpTraceBatch(seed, perTrace, BATCH);

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
    // BENCH_ERROR_USERS=1: every event has a user of its own (a new user of its group, a user-hour row each).
    ...(process.env.BENCH_ERROR_USERS ? { user: { id: `user-${seed}` } } : {}),
  };
  return Buffer.from(`${JSON.stringify({ event_id: id, sent_at: new Date().toISOString() })}\n{"type":"event"}\n${JSON.stringify(event)}\n`);
}

interface PhaseResult { name: string; items: number; seconds: number; p99: number; p50: number; max: number; requests: number; failures: number; over1s: number; probeP99: number; probeMax: number }

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
          const chunks: Buffer[] = [];
          res.on('data', (c) => chunks.push(c));
          res.on('end', () => {
            if (res.statusCode !== 200 && failures < 3) console.error(`${name}: ${res.statusCode} after ${(performance.now() - start).toFixed(0)} ms: ${Buffer.concat(chunks).toString('utf8').slice(0, 300)}`);
            resolve(res.statusCode ?? 0);
          });
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
  return { name, items: requests * itemsPerRequest, seconds, max: latencies[latencies.length - 1] ?? 0, requests: latencies.length, failures, over1s: latencies.filter((x) => x > 1000).length, p99: latencies[Math.floor(latencies.length * 0.99)] ?? 0, p50: latencies[Math.floor(latencies.length * 0.5)] ?? 0, probeP99: probe[Math.floor(probe.length * 0.99)] ?? 0, probeMax: probe[probe.length - 1] ?? 0 };
}

// ---- storage write path alone (in this process) ---------------------------------------------

const STORAGE_ROWS = Number(process.env.BENCH_STORAGE_ROWS ?? 150_000);
const benchResource: Attributes = { 'service.name': 'checkout', 'service.version': '1.4.2', 'deployment.environment.name': 'production', 'host.name': 'web-1' };

function spanRecords(batch: number, perTrace: number): SpanRecord[] {
  const now = Date.now();
  const out: SpanRecord[] = [];
  let trace = '';
  let rootId = '';
  for (let i = 0; i < BATCH; i++) {
    const root = i % perTrace === 0;
    if (root) {
      trace = randomBytes(16).toString('hex');
      rootId = randomBytes(8).toString('hex');
    }
    const route = routes[(batch + i) % routes.length]!;
    const start = now - (BATCH - i) * 0.5;
    out.push({
      trace_id: trace,
      span_id: root ? rootId : randomBytes(8).toString('hex'),
      parent_span_id: perTrace === 1 ? (i % 4 === 0 ? null : randomBytes(8).toString('hex')) : root ? null : rootId,
      trace_state: '',
      name: `GET ${route}`,
      kind: perTrace === 1 || root ? 2 : 3,
      start_ms: start,
      end_ms: start + 1 + (i % 250) / 10,
      status_code: i % 50 === 0 ? 2 : 1,
      status_message: '',
      attributes: { 'http.request.method': 'GET', 'http.route': route, 'http.response.status_code': 200, 'user.id': `u-${i % 97}` },
      events: [],
      links: [],
      resource: benchResource,
      scope: { name: 'bench', version: '1', attributes: {} },
      service_name: 'checkout',
    });
  }
  return out;
}

function logRecords(batch: number): LogRecordOut[] {
  const now = Date.now();
  return Array.from({ length: BATCH }, (_, i) => ({
    time_ms: now - (BATCH - i) * 0.5,
    observed_time_ms: now,
    severity_number: i % 20 === 0 ? 17 : 9,
    severity_text: i % 20 === 0 ? 'ERROR' : 'INFO',
    body: `request ${batch}-${i} served for user u-${i % 97} in ${i % 300} ms from 10.0.${i % 255}.${batch % 255}`,
    attributes: { 'http.route': routes[i % routes.length]!, 'user.id': `u-${i % 97}` },
    trace_id: randomBytes(16).toString('hex'),
    span_id: randomBytes(8).toString('hex'),
    flags: 0,
    event_name: '',
    resource: benchResource,
    scope: { name: 'bench', version: '', attributes: {} },
    service_name: 'checkout',
  }));
}

/** A fresh database file with the pragmas openDatabase uses and the given migrations' SQL, then `extra`. */
function freshDb(upTo: number, extra = ''): Db {
  const db = new Database(join(mkdtempSync(join(tmpdir(), 'sl-raw-')), 'raw.db'));
  db.pragma('journal_mode = WAL');
  db.pragma('synchronous = NORMAL');
  db.pragma('cache_size = -65536');
  for (const m of MIGRATIONS) if (m.version <= upTo) db.exec(m.sql);
  db.pragma(`user_version = ${upTo}`);
  if (extra) db.exec(extra);
  return db;
}

/**
 * Rows per CPU second of this process writing `batches`, one transaction each (the first 10% are
 * warm-up, not timed). CPU time rather than wall time: on a shared, loaded machine it is what stays
 * comparable between variants of one run (writes go to the OS page cache; WAL commits do not fsync).
 */
function rate<T>(batches: T[], write: (b: T) => void): number {
  const warm = Math.floor(batches.length / 10);
  let t0 = process.cpuUsage();
  batches.forEach((b, i) => {
    if (i === warm) t0 = process.cpuUsage();
    write(b);
  });
  const used = process.cpuUsage(t0);
  return ((batches.length - warm) * BATCH) / ((used.user + used.system) / 1e6);
}

/** Resource ids as the writer before migration 007 kept them (one row per distinct resource). */
function beforeResources(db: Db) {
  const ids = new Map<Attributes, number>();
  const ins = db.prepare('INSERT INTO resources (project_id, hash, attributes) VALUES (1, ?, ?)');
  return (_p: string, a: Attributes) => {
    let id = ids.get(a);
    if (id === undefined) ids.set(a, (id = Number(ins.run(randomBytes(8).toString('hex'), JSON.stringify(a)).lastInsertRowid)));
    return id;
  };
}

/** The span write loop before migration 007: one INSERT per span, one trace-index entry per span. */
function beforeSpanWriter(db: Db) {
  const res = beforeResources(db);
  const st = db.prepare(`INSERT INTO spans (project_id, trace_id, span_id, parent_span_id, name, operation, kind, service_name, environment, service_version,
      start_ms, end_ms, duration_ms, status_code, status_message, attributes, events, links, resource_id, scope_name, scope_version, trace_state, source, received_ms)
      VALUES (?, ?, ?, ?, ?, ?, ?, ?, ?, ?, ?, ?, ?, ?, ?, ?, ?, ?, ?, ?, ?, ?, ?, ?)`);
  return db.transaction((spans: SpanRecord[]) => {
    for (const sp of spans) {
      st.run(1, sp.trace_id, sp.span_id, sp.parent_span_id, sp.name, operationOf(sp), sp.kind, sp.service_name, environmentOf(sp.resource), serviceVersionOf(sp.resource),
        sp.start_ms, sp.end_ms, Math.max(0, sp.end_ms - sp.start_ms), sp.status_code, sp.status_message, JSON.stringify(sp.attributes),
        sp.events.length ? JSON.stringify(sp.events) : null, sp.links.length ? JSON.stringify(sp.links) : null, res('1', sp.resource), sp.scope.name, sp.scope.version, sp.trace_state, 'otlp', Date.now());
    }
  });
}

/** The log write loop before this change: one INSERT per log and per full-text row, then the rollups. */
function beforeLogWriter(db: Db) {
  const res = beforeResources(db);
  const log = db.prepare(`INSERT INTO logs (project_id, time_ms, observed_ms, severity_number, severity_text, level, body, attributes, trace_id, span_id,
      service_name, environment, release, source, connector_key, resource_id, scope_name, received_ms) VALUES (?, ?, ?, ?, ?, ?, ?, ?, ?, ?, ?, ?, ?, ?, ?, ?, ?, ?)`);
  const fts = db.prepare('INSERT INTO logs_fts (rowid, body, attrs) VALUES (?, ?, ?)');
  // The rollups as they were then (migration 004's GROUP BY over the new rows' own columns; the
  // current withLogRollups reads dimension ids from log_dims, which this schema predates).
  const maxId = db.prepare('SELECT max(id) FROM logs').pluck();
  const upserts = LOG_COUNT_TABLES.map((t) => db.prepare(`${rollupInsert(t, 'l.id > ?')} ON CONFLICT DO UPDATE SET n = n + excluded.n`));
  const perRow: TelemetryWriter = {
    insertSpans: () => 0,
    insertMetricPoints: () => 0,
    insertLogs: db.transaction((_p: string, logs: LogRecordOut[]) => {
      const before = (maxId.get() as number | null) ?? 0;
      for (const l of logs) {
        const body = String(l.body);
        const info = log.run(1, l.time_ms, l.observed_time_ms, l.severity_number, l.severity_text, levelOf(l.severity_number, l.severity_text), body, JSON.stringify(l.attributes),
          l.trace_id, l.span_id, l.service_name, environmentOf(l.resource), serviceVersionOf(l.resource), 'otlp', null, res('1', l.resource), l.scope.name, Date.now());
        fts.run(info.lastInsertRowid, body, Object.values(l.attributes).join(' '));
      }
      for (const u of upserts) u.run(before);
      return logs.length;
    }) as unknown as TelemetryWriter['insertLogs'],
  };
  return perRow;
}

/** Median of `n` runs of `fn`, in ms. */
function timeMs(fn: () => unknown, n = 5): number {
  const t: number[] = [];
  for (let i = 0; i < n; i++) {
    const a = performance.now();
    fn();
    t.push(performance.now() - a);
  }
  return t.sort((a, b) => a - b)[Math.floor(n / 2)]!;
}

const k = (n: number) => Math.round(n).toLocaleString('en');

function storageBench(): { rawSpans: number; beforeSpans: number; afterSpans: number; rawLogs: number; beforeLogs: number; afterLogs: number } {
  const nb = Math.max(20, Math.round(STORAGE_ROWS / BATCH));
  const spans8 = Array.from({ length: nb }, (_, b) => spanRecords(b, SPANS_PER_TRACE));
  const spans1 = Array.from({ length: nb }, (_, b) => spanRecords(b, 1));
  const logs = Array.from({ length: nb }, (_, b) => logRecords(b));
  const raw = "(1, ?, ?, ?, ?, ?, ?, 'checkout', 'production', '1.4.2', ?, ?, ?, ?, '', ?, NULL, NULL, 1, 'bench', '1', '', 'otlp', ?)";
  const attrsJson = JSON.stringify(spans8[0]![0]!.attributes);

  // Spans: raw limit (time index only), before, after, after minus each partial index.
  const rawDb = freshDb(2, 'DROP INDEX spans_trace');
  const rawIns = rawDb.prepare(`INSERT INTO spans (project_id, trace_id, span_id, parent_span_id, name, operation, kind, service_name, environment, service_version,
      start_ms, end_ms, duration_ms, status_code, status_message, attributes, events, links, resource_id, scope_name, scope_version, trace_state, source, received_ms) VALUES ${raw}`);
  const rawTx = rawDb.transaction((b: SpanRecord[]) => {
    for (const sp of b) rawIns.run(sp.trace_id, sp.span_id, sp.parent_span_id, sp.name, sp.name, sp.kind, sp.start_ms, sp.end_ms, sp.end_ms - sp.start_ms, sp.status_code, attrsJson, 0);
  });
  const rawSpans = rate(spans8, rawTx);
  const before8 = beforeSpanWriter(freshDb(6));
  const beforeSpans = rate(spans8, before8);
  const before1 = rate(spans1, beforeSpanWriter(freshDb(6)));
  const afterDb = openDatabase(join(mkdtempSync(join(tmpdir(), 'sl-raw-')), 'after.db'));
  const after = createSqliteTelemetryWriter(afterDb);
  const afterSpans = rate(spans8, (b) => after.insertSpans('1', b, 'otlp', 0));
  const after1w = createSqliteTelemetryWriter(openDatabase(join(mkdtempSync(join(tmpdir(), 'sl-raw-')), 'after1.db')));
  const after1 = rate(spans1, (b) => after1w.insertSpans('1', b, 'otlp', 0));
  const without = (idx: string) => {
    const db = openDatabase(join(mkdtempSync(join(tmpdir(), 'sl-raw-')), `no-${idx}.db`));
    db.exec(`DROP INDEX ${idx}`);
    const w = createSqliteTelemetryWriter(db);
    return rate(spans8, (b) => w.insertSpans('1', b, 'otlp', 0));
  };
  const noEntry = without('spans_entry');
  const noError = without('spans_error');

  // What each partial index buys, on the "after" database (nb×512 spans).
  const to = Date.now() + 1;
  const from = to - 86_400_000;
  const entryQ = `SELECT count(*), group_concat(CAST(round(duration_ms * 1000) AS INTEGER)) FROM spans %I WHERE project_id = 1 AND service_name = 'checkout' AND operation = 'GET /cart'
    AND start_ms >= ${from} AND start_ms < ${to} AND (kind IN (2, 5) OR parent_span_id IS NULL)`;
  const errQ = `SELECT rowid, start_ms, trace_id FROM spans %I WHERE project_id = 1 AND start_ms >= ${from} AND start_ms < ${to} AND status_code = 2 ORDER BY start_ms DESC LIMIT 1000`;
  const q = (sql: string, idx: string) => timeMs(() => afterDb.prepare(sql.replace('%I', idx)).all());
  const entryWith = q(entryQ, 'INDEXED BY spans_entry');
  const entryWithout = q(entryQ, 'INDEXED BY spans_time');
  const errWith = q(errQ, 'INDEXED BY spans_error');
  const errWithout = q(errQ, 'INDEXED BY spans_time');
  const someTrace = spans8[nb >> 1]![8]!.trace_id;
  const repo = createTracesReadRepo(afterDb);
  const traceGet = timeMs(() => repo.traceSpansFull('1', someTrace, 1000), 21);
  const oldTraceDb = freshDb(6);
  const oldW = beforeSpanWriter(oldTraceDb);
  for (const b of spans8) oldW(b);
  const traceGetBefore = timeMs(() => oldTraceDb.prepare('SELECT * FROM spans INDEXED BY spans_trace WHERE trace_id = ? AND project_id = 1 ORDER BY start_ms, rowid LIMIT 1000').all(someTrace), 21);

  // Logs: raw limit (time index, no full-text), before, after, after without rollups.
  const rawLogDb = freshDb(2, 'DROP TABLE logs_fts');  // schema of migration 002 only: logs_fts2 does not exist yet
  const rawLog = rawLogDb.prepare(`INSERT INTO logs (project_id, time_ms, observed_ms, severity_number, severity_text, level, body, attributes, trace_id, span_id,
      service_name, environment, release, source, connector_key, resource_id, scope_name, received_ms) VALUES (1, ?, ?, ?, 'INFO', 'info', ?, ?, ?, ?, 'checkout', 'production', '1.4.2', 'otlp', NULL, 1, 'bench', 0)`);
  const logAttrs = JSON.stringify(logs[0]![0]!.attributes);
  const rawLogs = rate(logs, rawLogDb.transaction((b: LogRecordOut[]) => {
    for (const l of b) rawLog.run(l.time_ms, l.observed_time_ms, l.severity_number, l.body as string, logAttrs, l.trace_id, l.span_id);
  }));
  const beforeW = beforeLogWriter(freshDb(6));
  const beforeLogs = rate(logs, (b) => beforeW.insertLogs('1', b, 'otlp', 0));
  const logDb = (extra = '') => {
    const db = openDatabase(join(mkdtempSync(join(tmpdir(), 'sl-raw-')), 'logs.db'));
    if (extra) db.exec(extra);
    return db;
  };
  const afterLogDb = logDb();
  const afterLogW = withLogRollups(afterLogDb, createSqliteTelemetryWriter(afterLogDb));
  const afterLogs = rate(logs, (b) => afterLogW.insertLogs('1', b, 'otlp', 0));
  const noRollW = createSqliteTelemetryWriter(logDb());
  const noRollups = rate(logs, (b) => noRollW.insertLogs('1', b, 'otlp', 0));

  // Full-text options: the same writer with its table (logs_fts2 since migration 050) created differently; then the search queries.
  const FTS: [string, string][] = [
    ['contentless, detail=full, unicode61 (logs_fts, before migration 050)', "content='', contentless_delete=1, tokenize='unicode61'"],
    ['contentless, detail=full, no contentless_delete', "content='', tokenize='unicode61'"],
    ['contentless, detail=column', "content='', contentless_delete=1, detail=column, tokenize='unicode61'"],
    ['contentless, detail=none', "content='', contentless_delete=1, detail=none, tokenize='unicode61'"],
    ['contentless, detail=none, columnsize=0 (current, migration 050)', "content='', columnsize=0, detail=none, tokenize='unicode61'"],
    ['contentless, detail=full, ascii tokenizer', "content='', contentless_delete=1, tokenize='ascii'"],
    ['stored copy (not contentless), detail=full', "tokenize='unicode61'"],
  ];
  const ftsRows: string[] = [];
  for (const [label, opts] of FTS) {
    const db = logDb(`DROP TABLE logs_fts2; CREATE VIRTUAL TABLE logs_fts2 USING fts5(body, attrs, ${opts});`);
    const w = withLogRollups(db, createSqliteTelemetryWriter(db));
    const r = rate(logs, (b) => w.insertLogs('1', b, 'otlp', 0));
    const query = (m: string) => {
      try {
        return timeMs(() => db.prepare('SELECT rowid FROM logs_fts2 WHERE logs_fts2 MATCH ? LIMIT 4097').all(m)).toFixed(2);
      } catch (e) {
        return `error: ${(e as Error).message.slice(0, 40)}`;
      }
    };
    const mb = (db.prepare("SELECT sum(pgsize) FROM dbstat WHERE name LIKE 'logs_fts2%'").pluck().get() as number) / 1e6;
    ftsRows.push(`| ${label} | ${k(r)} | ${query('"u" "42"')} | ${query('"request" "17"*')} | ${query('"served for user u" "42"')} | ${mb.toFixed(1)} |`);
  }

  console.log(`\nStorage write path alone, in process, ${k(nb * BATCH)} rows per variant, 512 per transaction (rows per CPU second):\n`);
  console.log('| variant | spans, 8 per trace | spans, 1 per trace | log records |');
  console.log('|---|---:|---:|---:|');
  console.log(`| raw limit: time index only, no full-text, no rollups | ${k(rawSpans)} | – | ${k(rawLogs)} |`);
  console.log(`| before (previous schema and per-row loop) — "now" | ${k(beforeSpans)} | ${k(before1)} | ${k(beforeLogs)} |`);
  console.log(`| after (current writer, schema and rollups) | ${k(afterSpans)} | ${k(after1)} | ${k(afterLogs)} |`);
  console.log(`| after / before | ${(afterSpans / beforeSpans).toFixed(2)}× | ${(after1 / before1).toFixed(2)}× | ${(afterLogs / beforeLogs).toFixed(2)}× |`);
  console.log(`| after / raw limit | ${(afterSpans / rawSpans).toFixed(2)} | – | ${(afterLogs / rawLogs).toFixed(2)} |`);
  console.log('\nWhat each index costs on ingest and buys on its read (same run):\n');
  console.log('| index | spans/s without it (with: ' + k(afterSpans) + ') | its query, ms with | ms without (time index) |');
  console.log('|---|---:|---:|---:|');
  console.log(`| spans_entry (operation summaries, service-map nodes, filtered trace list) | ${k(noEntry)} | ${entryWith.toFixed(2)} | ${entryWithout.toFixed(2)} |`);
  console.log(`| spans_error (traces with errors) | ${k(noError)} | ${errWith.toFixed(2)} | ${errWithout.toFixed(2)} |`);
  console.log(`| trace_chunks vs spans_trace (traces.get of one trace) | – | ${traceGet.toFixed(2)} | before: ${traceGetBefore.toFixed(2)} |`);
  console.log(`| log rollups (histogram, insights, summary) | logs/s without: ${k(noRollups)} | – | – |`);
  console.log('\nFull-text options (log records/s with rollups; query ms for MATCH, up to 4,097 ids; index size):\n');
  console.log('| logs_fts | logs/s | word pair | prefix | phrase | MB |');
  console.log('|---|---:|---:|---:|---:|---:|');
  for (const r of ftsRows) console.log(r);
  return { rawSpans, beforeSpans, afterSpans, rawLogs, beforeLogs, afterLogs };
}

function peakRssMb(pid: number): number {
  const m = /VmHWM:\s+(\d+) kB/.exec(readFileSync(`/proc/${pid}/status`, 'utf8'));
  return m ? Number(m[1]) / 1024 : NaN;
}

/** user + system CPU seconds of a process (all its threads), from /proc (Linux). */
function serverCpuSeconds(pid: number): number {
  const f = readFileSync(`/proc/${pid}/stat`, 'utf8');
  const fields = f.slice(f.lastIndexOf(')') + 2).split(' ');
  return (Number(fields[11]) + Number(fields[12])) / 100; // utime, stime in clock ticks (USER_HZ = 100)
}

async function runMode(workers: string | undefined) {
  const dir = mkdtempSync(join(tmpdir(), 'sl-bench-ingest-'));
  const { child, port, keys } = await startBenchServer(join(dir, 'bench.db'), workers === undefined ? {} : { SIGHTLINE_INGEST_WORKERS: workers });
  const key = keys!.ingest;
  const project = keys!.project;
  const traces = Array.from({ length: 16 }, (_, i) => traceBatch(i));
  const traces1 = Array.from({ length: 16 }, (_, i) => traceBatch(i, 1));
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
  if (SPANS_ONLY) {
    const cpu0 = serverCpuSeconds(child.pid!);
    const r = await runPhase(`spans (OTLP protobuf, 512/batch, ${SPANS_PER_TRACE} per trace)`, port, '/ingest/v1/traces', otlpHeaders, traces, BATCH);
    const cpu = serverCpuSeconds(child.pid!) - cpu0;
    console.log(`server CPU ${(cpu * 1e6 / r.items).toFixed(1)} µs per span (${cpu.toFixed(2)} CPU s for ${r.items} spans)`);
    child.kill('SIGTERM');
    return { results: [r], rss: NaN };
  }
  if (ERRORS_ONLY) {
    const cpu0 = serverCpuSeconds(child.pid!);
    const r = await runPhase('error events (Sentry envelopes, grouped)', port, `/ingest/api/${project}/envelope/?sentry_key=${key}`, { 'content-type': 'application/x-sentry-envelope' }, envelopes, 1);
    // Server CPU (every thread: main, decode workers) per event: on a loaded machine a steadier
    // comparison than wall-clock events/s, which mostly measures how much CPU the server was given.
    const cpu = serverCpuSeconds(child.pid!) - cpu0;
    console.log(`server CPU ${(cpu * 1e6 / r.items).toFixed(0)} µs per event (${cpu.toFixed(2)} CPU s for ${r.items} events: ${k(r.items / cpu)} events per server CPU s)`);
    const exited = new Promise((res) => child.once('exit', res));
    child.kill('SIGTERM');
    await exited;
    return { results: [r], rss: NaN };
  }
  const results = [
    await runPhase(`spans (OTLP protobuf, 512/batch, ${SPANS_PER_TRACE} per trace)`, port, '/ingest/v1/traces', otlpHeaders, traces, BATCH),
    await runPhase('spans (OTLP protobuf, 512/batch, 1 per trace)', port, '/ingest/v1/traces', otlpHeaders, traces1, BATCH),
    await runPhase('log records (OTLP protobuf, 512/batch)', port, '/ingest/v1/logs', otlpHeaders, logs, BATCH),
    await runPhase('error events (Sentry envelopes, grouped)', port, `/ingest/api/${project}/envelope/?sentry_key=${key}`, { 'content-type': 'application/x-sentry-envelope' }, envelopes, 1),
  ];
  const rss = peakRssMb(child.pid!);
  child.kill('SIGTERM');
  return { results, rss };
}

/**
 * Error events through the storage path alone: envelopes decoded up front (processJob, as a decode
 * worker does), then each event written as its own job of the write batcher, 256 jobs per commit as
 * concurrent envelopes arrive, the way mount.ts writes them. Events per CPU second of this process.
 */
async function errorStorageBench(n = Number(process.env.BENCH_ERROR_EVENTS ?? 40_000), databaseUrl?: string): Promise<number> {
  const { createSightline } = await import('../src/server.js');
  const { bootstrapOrganization } = await import('../src/core/bootstrap.js');
  const { processJob } = await import('../src/ingest/process.js');
  const { ingestKeyedErrorEvents, SpikeGuard } = await import('../src/ingest/pipeline.js');
  const { ingestLimitsFromEnv } = await import('../src/ingest/limits.js');
  const dir = mkdtempSync(join(tmpdir(), 'sl-bench-errors-'));
  const s = createSightline({ dbFile: join(dir, 'bench.db'), port: 0, host: '127.0.0.1', logLevel: 'warn', databaseUrl: databaseUrl ?? null });
  try {
    const boot = bootstrapOrganization(s.services, { now: Date.now() });
    s.db.prepare('UPDATE projects SET spike_threshold_per_minute = NULL WHERE id = ?').run(Number(boot.project_id));
    const project = s.services.identity.projectById(boot.project_id)!;
    const limits = ingestLimitsFromEnv();
    const keyed = Array.from({ length: n }, (_, i) => processJob({ kind: 'envelope', body: envelope(i), receivedMs: Date.now(), limits }).slices.flatMap((x) => x.errors ?? []));
    const spike = new SpikeGuard();
    const c0 = process.cpuUsage();
    const t0 = performance.now();
    for (let i = 0; i < n; i += 256) {
      await Promise.all(keyed.slice(i, i + 256).map((k) => s.services.writeBatch(() => ingestKeyedErrorEvents(s.services, spike, project, k, Date.now()))));
    }
    const c = process.cpuUsage(c0);
    const cpu = (c.user + c.system) / 1e6;
    const groups = (s.db.prepare('SELECT COUNT(*) AS n, SUM(event_count) AS e FROM error_groups').get() as { n: number; e: number });
    console.log(`error events, storage path alone${databaseUrl ? ' (error groups in PostgreSQL)' : ''}: ${k(n / cpu)} per CPU s (${k(n / ((performance.now() - t0) / 1000))}/s wall), ${n} events in ${groups.n} groups (${groups.e} counted)`);
    return n / cpu;
  } finally {
    await s.close();
  }
}

async function main() {
  if (ERRORS_STORAGE) {
    // --pg URL (a PostgreSQL server; a fresh database per round is made there): the same events with
    // error groups in PostgreSQL (issue 20), alternated with SQLite alone in the same run.
    const at = process.argv.indexOf('--pg');
    const pgBase = at >= 0 ? process.argv[at + 1]! : null;
    if (!pgBase) {
      await errorStorageBench();
      return;
    }
    const { default: pg } = await import('pg');
    const rows: string[][] = [];
    for (let round = 1; round <= 2; round++) {
      const name = `sl_bench_errors_${process.pid}_${round}`;
      const admin = new pg.Client({ connectionString: pgBase });
      await admin.connect();
      await admin.query(`CREATE DATABASE ${name}`);
      const url = new URL(pgBase);
      url.pathname = `/${name}`;
      try {
        const sqlite = await errorStorageBench();
        const onPg = await errorStorageBench(undefined, url.toString());
        rows.push([String(round), k(sqlite), k(onPg), (sqlite / onPg).toFixed(2), readFileSync('/proc/loadavg', 'utf8').split(' ')[0]!]);
      } finally {
        await admin.query(`DROP DATABASE IF EXISTS ${name} WITH (FORCE)`);
        await admin.end();
      }
    }
    console.log('\n| round | SQLite events/CPU s | groups in PostgreSQL events/CPU s | ratio | load |\n|---|---|---|---|---|');
    for (const r of rows) console.log(`| ${r.join(' | ')} |`);
    return;
  }
  if (SPANS_ONLY) {
    // As in the full run, a server decoding on the main thread runs (and is stopped) first, unless --no-main.
    const modes = process.argv.includes('--no-main') ? [process.env.SIGHTLINE_INGEST_WORKERS] : ['0', process.env.SIGHTLINE_INGEST_WORKERS];
    for (const m of modes) {
      const r = (await runMode(m)).results[0]!;
      console.log(`[${m === '0' ? 'main thread' : 'workers'}] ${r.name}: ${k(r.items / r.seconds)}/s, p50 ack ${r.p50.toFixed(1)} ms, p99 ${r.p99.toFixed(1)} ms, max ${r.max.toFixed(0)} ms, over 1 s: ${r.over1s} of ${r.requests}, non-200: ${r.failures}; ${SECONDS}s, ${CONNECTIONS} connections; load ${readFileSync('/proc/loadavg', 'utf8').trim()}`);
    }
    return;
  }
  if (ERRORS_ONLY) {
    const { results } = await runMode(process.env.SIGHTLINE_INGEST_WORKERS);
    const r = results[0]!;
    console.log(`${r.name}: ${k(r.items / r.seconds)}/s (aim ≥ 10,000), p50 ack ${r.p50.toFixed(1)} ms, p99 ${r.p99.toFixed(1)} ms, ${SECONDS}s, ${CONNECTIONS} connections`);
    return;
  }
  const st = storageBench();
  if (STORAGE_ONLY) return;
  console.log(`\n${SECONDS}s per phase, ${CONNECTIONS} connections`);
  const modes = [
    { label: 'main thread (now)', workers: '0' },
    { label: 'worker pool', workers: process.env.SIGHTLINE_INGEST_WORKERS },
  ];
  const runs = [];
  for (const m of modes) runs.push({ ...m, ...(await runMode(m.workers)) });

  const aims = ['≥ 60,000 and ≥ 0.25× raw', '–', '≥ 60,000', '≥ 10,000'];
  const raws = [st.rawSpans, st.rawSpans, st.rawLogs, NaN];
  const before = [st.beforeSpans, NaN, st.beforeLogs, NaN];
  const dash = (n: number) => (Number.isNaN(n) ? '–' : k(n));
  console.log('\nOver HTTP (server in a child process, wall-clock items/s, decoding on the main thread ("now") and on the decode workers;');
  console.log('"before" and raw limit: the storage table above, same run, per CPU second — on a loaded machine the ratio understates the server;');
  console.log('probe: an OPTIONS request every 5 ms, how long ingestion holds the event loop):\n');
  console.log('| stream | decode | items/s | aim | p50 ack ms | p99 ack ms (aim ≤ 100) | probe p99 ms | raw limit rows/CPU s | ratio to raw | storage before rows/CPU s |');
  console.log('|---|---|---:|---|---:|---:|---:|---:|---:|---:|');
  for (let i = 0; i < aims.length; i++) {
    for (const run of runs) {
      const r = run.results[i]!;
      const rate = r.items / r.seconds;
      console.log(`| ${r.name} | ${run.label} | ${k(rate)} | ${aims[i]} | ${r.p50.toFixed(1)} | ${r.p99.toFixed(1)} | ${r.probeP99.toFixed(1)} | ${dash(raws[i]!)} | ${Number.isNaN(raws[i]) ? '–' : (rate / raws[i]!).toFixed(2)} | ${dash(before[i]!)} |`);
    }
  }
  for (const run of runs) console.log(`server peak RSS (${run.label}): ${run.rss.toFixed(0)} MB (aim ≤ 500 MB)`);
}

await main();
