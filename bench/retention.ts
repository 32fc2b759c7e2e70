/**
 * Expiry under load: N expired telemetry rows (spans, logs, metric points) are deleted by the real
 * background expiry job of a Sightline server in a child process while this process keeps ingesting
 * (OTLP protobuf over HTTP, as bench/ingest.ts) and reading (logs.search, traces.list over REST).
 *
 * 1. Seed: `sightline start` on an empty file (to get a project and keys), stopped; then
 *    `seedExpired` writes a few template rows through the real telemetry writer (so every column,
 *    resource row, rollup and full-text row is what ingestion stores) and copies them N times with
 *    INSERT … SELECT in SQL, spread over days 8 to 2 before now (inside the default 30-day period);
 *    then retention.update sets logs (later also spans and metric points) to 1 day, so seeded rows are due.
 *    The first half of the rounds has only the logs due (a pass deletes kinds in turn, and the windows
 *    see a few per cent of it: this way they see the costly kind too), the second half every kind.
 * 2. Windows, interleaved: BENCH_ROUNDS rounds of one window with expiry running (the server started
 *    with a pass every second: each window's pass goes on where the last one stopped) and one without
 *    (the server started with its first pass a day away), in alternating order (on/off, off/on, …).
 *    Every window is a fresh server, 3 s of unmeasured warm-up load, then BENCH_SECONDS of measured
 *    ingest + reads. Both conditions see the same file as it grows by the windows' own ingest and
 *    shrinks by the expiry, the same cold start and the same drift of the machine, so their ratio
 *    is expiry's own cost (a before/after comparison mixes in the file's growth: session 7 found
 *    most of "during vs before" was that).
 * 3. With BENCH_FINISH (default 1): a last server without load runs the pass to its end, and the file
 *    size before and after it (freed pages returned by incremental auto-vacuum) is printed.
 *
 *   npx tsx bench/retention.ts
 *   npx tsx bench/retention.ts --rows 1000000     (quicker; BENCH_EXPIRE_ROWS=1000000 works too)
 *
 * Env: BENCH_EXPIRE_ROWS (10,000,000), BENCH_SECONDS (20, per window), BENCH_ROUNDS (4),
 * BENCH_ON_INTERVAL (the "on" servers' SIGHTLINE_RETENTION_INTERVAL, 1; 86400 makes a control run
 * where neither condition expires anything, to see the windows' own noise),
 * BENCH_CONNECTIONS (ingest, 4), BENCH_READERS (2), BENCH_FINISH (1), BENCH_DB (keep the file here
 * instead of a temp dir), plus any SIGHTLINE_* for the server (SIGHTLINE_RETENTION_BATCH_ROWS …).
 * Aim: ingest and read p99 at most 20 % worse while expiry runs.
 */
import { existsSync, mkdtempSync, statSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { pathToFileURL } from 'node:url';
import { randomBytes } from 'node:crypto';
import http from 'node:http';
import Database from 'better-sqlite3';
import type { ChildProcess } from 'node:child_process';
import { ExportLogsServiceRequest, ExportTraceServiceRequest } from '../src/ingest/otlp/schema.js';
import { openDatabase, type Db } from '../src/storage/db.js';
import { createSqliteTelemetryWriter } from '../src/storage/sqlite-telemetry-store.js';
import { withLogRollups } from '../src/storage/log-rollups.js';
import { measureBytesPerRecord } from './retention-bytes.js';
import { ftsAttrsText } from '../src/storage/log-fts.js';
import { LOG_COUNT_TABLES } from '../src/storage/migrations/004-log-counts.js';
import { rollupInsertDims } from '../src/storage/log-dims.js';
import type { Attributes, LogRecordOut, MetricPointRecord, SpanRecord } from '../src/domain/telemetry-types.js';
import { attr, pct, request, closeRequests, startBenchServer } from './lib.js';

/** `--rows N` (or BENCH_EXPIRE_ROWS): expired rows to seed; 10M by default. */
const rowsFlag = process.argv.indexOf('--rows');
const N = Number(rowsFlag >= 0 ? process.argv[rowsFlag + 1] : (process.env.BENCH_EXPIRE_ROWS ?? 10_000_000));
if (!Number.isInteger(N) || N < 1000) throw new Error(`--rows / BENCH_EXPIRE_ROWS must be an integer of at least 1000 (got ${rowsFlag >= 0 ? process.argv[rowsFlag + 1] : process.env.BENCH_EXPIRE_ROWS})`);
const SECONDS = Number(process.env.BENCH_SECONDS ?? 20);
const CONNECTIONS = Number(process.env.BENCH_CONNECTIONS ?? 4);
const READERS = Number(process.env.BENCH_READERS ?? 2);
const ROUNDS = Number(process.env.BENCH_ROUNDS ?? 4);
const FINISH = process.env.BENCH_FINISH !== '0';
const BATCH = 512;
/** How long a pool of request bodies is reused before it is built again with new ids and times. */
const REFRESH_MS = 5000;
const DAY = 86_400_000;
const k = (n: number) => Math.round(n).toLocaleString('en');
const mb = (b: number) => (b / 1e6).toFixed(0);

// ---- seeding ------------------------------------------------------------------------------------

const seedResource: Attributes = { 'service.name': 'checkout', 'service.version': '1.4.2', 'deployment.environment.name': 'production', 'host.name': 'web-1' };
const seedRoutes = ['/orders/{id}', '/cart', '/checkout', '/users/{id}/profile', '/search'];

/** 8 spans of one trace (a server root, client children), 8 log records, 8 gauge points: the templates. */
function templates(at: number): { spans: SpanRecord[]; logs: LogRecordOut[]; points: MetricPointRecord[] } {
  const trace = randomBytes(16).toString('hex');
  const root = randomBytes(8).toString('hex');
  const scope = { name: 'bench', version: '1', attributes: {} };
  const spans = Array.from({ length: 8 }, (_, i): SpanRecord => {
    const route = seedRoutes[i % seedRoutes.length]!;
    return {
      trace_id: trace, span_id: i ? randomBytes(8).toString('hex') : root, parent_span_id: i ? root : null, trace_state: '',
      name: i ? `SELECT orders ${i}` : `GET ${route}`, kind: i ? 3 : 2, start_ms: at + i, end_ms: at + i + 1 + i * 3,
      status_code: i === 5 ? 2 : 1, status_message: '', attributes: { 'http.request.method': 'GET', 'http.route': route, 'http.response.status_code': 200, 'user.id': `u-${i}` },
      events: [], links: [], resource: seedResource, scope, service_name: 'checkout',
    };
  });
  const logs = Array.from({ length: 8 }, (_, i): LogRecordOut => ({
    time_ms: at + i, observed_time_ms: at + i, severity_number: i === 7 ? 17 : 9, severity_text: i === 7 ? 'ERROR' : 'INFO',
    body: `request served for user u-${i} in ${i * 37} ms from 10.0.${i}.7`, attributes: { 'http.route': seedRoutes[i % seedRoutes.length]!, 'user.id': `u-${i}` },
    trace_id: trace, span_id: spans[i]!.span_id, flags: 0, event_name: '', resource: seedResource, scope, service_name: 'checkout',
  }));
  const points = Array.from({ length: 8 }, (_, i): MetricPointRecord => ({
    metric_name: `queue.depth.${i % 2}`, description: '', unit: '1', type: 'gauge', temporality: 'unspecified', monotonic: false,
    start_ms: null, time_ms: at + i, attributes: { queue: `q${i}` }, flags: 0, value: i, resource: seedResource, scope, service_name: 'checkout',
  }) as MetricPointRecord);
  return { spans, logs, points };
}

/**
 * Copies the rows `lo..hi` (rowids, the templates) of `table` `n` times, each copy's time column set to
 * `from + g·step` (g the copy's index) and every other `…_ms` column shifted by as much; `override`
 * gives SQL for other columns (template row `t`, copy index `g`). Other columns are copied as they are,
 * so columns added later come along. Returns the rowid range written.
 */
function replicate(db: Db, table: string, time: string, lo: number, hi: number, n: number, from: number, step: number, override: Record<string, string> = {}, onChunk?: (a: number, b: number) => void): void {
  const cols = (db.prepare(`SELECT name, type, pk FROM pragma_table_info('${table}')`).all() as Array<{ name: string; type: string; pk: number }>).filter((c) => !(c.pk && c.type.toUpperCase() === 'INTEGER'));
  const m = hi - lo + 1;
  const newTime = `(:from + g * :step)`;
  const expr = cols.map((c) => {
    if (c.name in override) return override[c.name]!;
    if (c.name === time) return newTime;
    if (c.name.endsWith('_ms') && c.name !== 'duration_ms') {
      const shifted = `t.${c.name} + (${newTime} - t.${time})`;
      return c.type.toUpperCase() === 'INTEGER' ? `CAST(${shifted} AS INTEGER)` : shifted;
    }
    return `t.${c.name}`;
  });
  const ins = db.prepare(`WITH RECURSIVE c(g) AS (SELECT :off UNION ALL SELECT g + 1 FROM c WHERE g + 1 < :end)
    INSERT INTO ${table} (${cols.map((c) => c.name).join(', ')}) SELECT ${expr.join(', ')} FROM c CROSS JOIN ${table} t ON t.rowid = :lo + g % :m`);
  const maxRowid = db.prepare(`SELECT max(rowid) FROM ${table}`).pluck();
  const CHUNK = 50_000;
  for (let off = 0; off < n; off += CHUNK) {
    db.transaction(() => {
      const before = maxRowid.get() as number;
      ins.run({ off, end: Math.min(n, off + CHUNK), from, step, lo, m });
      onChunk?.(before + 1, maxRowid.get() as number);
    })();
  }
}

/**
 * Seeds `n` telemetry rows of project `projectId` between `from` and `to` (ms): 40 % spans (traces of
 * 8, with their trace chunks), 40 % log records (with full-text rows and count rollups), 20 % metric
 * points. The one place that knows the telemetry tables' layout beyond what expiry uses
 * (EXPIRY_TARGETS: project_id and the time column); adapt it here when that layout changes.
 */
export function seedExpired(db: Db, projectId: string, n: number, from: number, to: number): Record<string, number> {
  const writer = withLogRollups(db, createSqliteTelemetryWriter(db));
  const nSpans = Math.floor((n * 0.4) / 8) * 8;
  const nLogs = Math.floor(n * 0.4);
  const nPoints = n - nSpans - nLogs;
  const t = templates(from - 1000);
  const range = (table: string, insert: () => void) => {
    const before = (db.prepare(`SELECT max(rowid) FROM ${table}`).pluck().get() as number | null) ?? 0;
    insert();
    return [before + 1, db.prepare(`SELECT max(rowid) FROM ${table}`).pluck().get() as number] as const;
  };
  const [sLo, sHi] = range('spans', () => writer.insertSpans(projectId, t.spans, 'otlp', from));
  const [lLo, lHi] = range('logs', () => writer.insertLogs(projectId, t.logs, 'otlp', from));
  const [pLo, pHi] = range('metric_points', () => writer.insertMetricPoints(projectId, t.points, from));

  // Spans: one trace per 8 copies (copy g of template span g % 8), then its trace chunk.
  const chunks = db.prepare(`INSERT INTO trace_chunks (project_id, trace_id, first_rowid, last_rowid, span_count, error_count, min_start_ms, max_start_ms, max_end_ms)
    SELECT project_id, trace_id, min(rowid), max(rowid), count(*), sum(status_code = 2), min(start_ms), max(start_ms), max(end_ms) FROM spans WHERE rowid BETWEEN ? AND ? GROUP BY project_id, trace_id`);
  replicate(db, 'spans', 'start_ms', sLo, sHi, nSpans, from, (to - from) / nSpans, {
    // Trace ids are 16 bytes since migration 044 (hex text before): a copy keeps the template's form.
    trace_id: "CASE WHEN typeof(t.trace_id) = 'blob' THEN CAST(substr(t.trace_id, 1, 8) || unhex(printf('%016x', g / 8)) AS BLOB) ELSE substr(t.trace_id, 1, 16) || printf('%016x', g / 8) END",
  }, (a, b) => chunks.run(a, b));

  // Logs: a distinct token per record; the full-text row (body, attribute values and the trace's short token) and count rollups.
  // New logs' table (migration 050): its text must be what expiry derives from the row to delete it.
  db.function('sl_fts_attrs', { deterministic: true }, (a: unknown, t: unknown, tmpl: unknown) => ftsAttrsText(a, t, tmpl));
  const fts = db.prepare(`INSERT INTO logs_fts2 (rowid, body, attrs) SELECT id, body, sl_fts_attrs(attributes, trace_id, (SELECT vals FROM attr_templates WHERE id = attr_tmpl)) FROM logs WHERE id BETWEEN ? AND ?`);
  const rollups = LOG_COUNT_TABLES.map((r) => db.prepare(`${rollupInsertDims(r, 'l.id BETWEEN ? AND ?')} ON CONFLICT DO UPDATE SET n = n + excluded.n`));
  replicate(db, 'logs', 'time_ms', lLo, lHi, nLogs, from, (to - from) / nLogs, { body: "t.body || ' #' || g" }, (a, b) => {
    fts.run(a, b);
    for (const r of rollups) r.run(a, b);
  });

  replicate(db, 'metric_points', 'time_ms', pLo, pHi, nPoints, from, (to - from) / nPoints);

  // The templates themselves go (they sit just before `from`); their rollups and chunks are cleaned by the pass.
  return { spans: nSpans + 8, logs: nLogs + 8, metric_points: nPoints + 8 };
}

// ---- load ---------------------------------------------------------------------------------------

const resource = { attributes: [attr('service.name', 'checkout'), attr('service.version', '1.4.2'), attr('deployment.environment.name', 'production'), attr('host.name', 'web-1')] };

function traceBatch(seed: number): Buffer {
  const now = BigInt(Date.now()) * 1_000_000n;
  const spans = [];
  let traceId = randomBytes(16);
  let rootId = randomBytes(8);
  for (let i = 0; i < BATCH; i++) {
    const root = i % 8 === 0;
    if (root) [traceId, rootId] = [randomBytes(16), randomBytes(8)];
    const start = now - BigInt(i) * 1_000_000n;
    const route = seedRoutes[(seed + i) % seedRoutes.length]!;
    spans.push({
      traceId, spanId: root ? rootId : randomBytes(8), parentSpanId: root ? Buffer.alloc(0) : rootId, name: `GET ${route}`, kind: root ? 2 : 3,
      startTimeUnixNano: start.toString(), endTimeUnixNano: (start + BigInt(1_000_000 + (i % 250) * 100_000)).toString(),
      attributes: [attr('http.request.method', 'GET'), attr('http.route', route), attr('http.response.status_code', 200), attr('user.id', `u-${i % 97}`)],
      status: { code: i % 50 === 0 ? 2 : 1 },
    });
  }
  const msg = ExportTraceServiceRequest.fromObject({ resourceSpans: [{ resource, scopeSpans: [{ scope: { name: 'bench', version: '1' }, spans }] }] });
  return Buffer.from(ExportTraceServiceRequest.encode(msg).finish());
}

function logBatch(seed: number): Buffer {
  const now = BigInt(Date.now()) * 1_000_000n;
  const logRecords = Array.from({ length: BATCH }, (_, i) => ({
    timeUnixNano: (now - BigInt(i) * 1_000_000n).toString(), observedTimeUnixNano: now.toString(),
    severityNumber: i % 20 === 0 ? 17 : 9, severityText: i % 20 === 0 ? 'ERROR' : 'INFO',
    body: { stringValue: `request ${seed}-${i} served for user u-${i % 97} in ${i % 300} ms from 10.0.${i % 255}.${seed % 255}` },
    attributes: [attr('http.route', seedRoutes[i % seedRoutes.length]!), attr('user.id', `u-${i % 97}`)],
    traceId: randomBytes(16), spanId: randomBytes(8),
  }));
  const msg = ExportLogsServiceRequest.fromObject({ resourceLogs: [{ resource, scopeLogs: [{ scope: { name: 'bench' }, logRecords }] }] });
  return Buffer.from(ExportLogsServiceRequest.encode(msg).finish());
}

interface LoadResult { seconds: number; items: number; failures: number; acks: number[]; reads: Record<string, number[]>; readFailures: number }

/**
 * Ingest on CONNECTIONS connections (span and log batches in turn) and READERS sequential readers
 * (logs.search with a word, logs.search by level, traces.list: the last minute) until `until()` says stop.
 */
async function runLoad(port: number, keys: { ingest: string; admin: string; project: string }, until: (elapsed: number) => boolean): Promise<LoadResult> {
  // Fresh trace/span ids and timestamps every few seconds: a body sent again and again for minutes would
  // pile chunks onto the same traces (traces.list reads every chunk of a trace) and age out of the
  // readers' last-minute window, so a long phase B would not see the load a short phase A sees.
  const build = (round: number) => Array.from({ length: 16 }, (_, i) => (i % 2 ? logBatch(round * 16 + i) : traceBatch(round * 16 + i)));
  let bodies = build(0);
  let builtAt = performance.now();
  let round = 0;
  const paths = ['/ingest/v1/traces', '/ingest/v1/logs'];
  const agent = new http.Agent({ keepAlive: true, maxSockets: CONNECTIONS });
  const acks: number[] = [];
  const reads: Record<string, number[]> = { 'logs.search q=user': [], 'logs.search level=error': [], 'traces.list': [] };
  const readPaths: Record<string, string> = {
    'logs.search q=user': `/v1/projects/${keys.project}/logs?q=user&from=-1m&limit=50`,
    'logs.search level=error': `/v1/projects/${keys.project}/logs?level=error&from=-1m&limit=50`,
    'traces.list': `/v1/projects/${keys.project}/traces?from=-1m&limit=50`,
  };
  let items = 0;
  let failures = 0;
  let readFailures = 0;
  const t0 = performance.now();
  const going = () => !until((performance.now() - t0) / 1000);
  const ingest = async (w: number) => {
    for (let i = w; going(); i++) {
      if (performance.now() - builtAt > REFRESH_MS) ((bodies = build(++round)), (builtAt = performance.now()));
      const body = bodies[i % bodies.length]!;
      const start = performance.now();
      // A refused or reset connection counts as a failure (printed), not the end of the run.
      const status = await new Promise<number>((resolve) => {
        const req = http.request({ host: '127.0.0.1', port, path: paths[i % 2], method: 'POST', agent, headers: { 'content-type': 'application/x-protobuf', 'x-service-key': keys.ingest, 'content-length': body.length } }, (res) => {
          res.resume();
          res.on('end', () => resolve(res.statusCode ?? 0));
        });
        req.on('error', () => resolve(0));
        req.end(body);
      });
      acks.push(performance.now() - start);
      if (status === 200) items += BATCH;
      else failures++;
    }
  };
  const names = Object.keys(reads);
  const reader = async (r: number) => {
    for (let i = r; going(); i++) {
      const name = names[i % names.length]!;
      const start = performance.now();
      const res = await request(port, 'GET', readPaths[name]!, { 'x-service-key': keys.admin }).catch(() => ({ status: 0 }));
      reads[name]!.push(performance.now() - start);
      if (res.status !== 200) readFailures++;
    }
  };
  await Promise.all([...Array.from({ length: CONNECTIONS }, (_, w) => ingest(w)), ...Array.from({ length: READERS }, (_, r) => reader(r))]);
  agent.destroy();
  acks.sort((a, b) => a - b);
  for (const v of Object.values(reads)) v.sort((a, b) => a - b);
  return { seconds: (performance.now() - t0) / 1000, items, failures, acks, reads, readFailures };
}

// ---- run ----------------------------------------------------------------------------------------

const fileBytes = (f: string) => (existsSync(f) ? statSync(f).size : 0);

async function stopServer(child: ChildProcess) {
  if (child.exitCode !== null) return;
  const exited = new Promise((r) => child.once('exit', r));
  child.kill('SIGTERM');
  await exited;
}

async function api(port: number, key: string, method: string, path: string, body?: unknown) {
  const send = () => request(port, method, path, { 'x-service-key': key, 'content-type': 'application/json' }, body === undefined ? undefined : JSON.stringify(body));
  // Once more on a reset: a keep-alive socket the server closed just as it was reused (both calls are idempotent).
  const r = await send().catch(send);
  if (r.status !== 200) throw new Error(`${method} ${path}: ${r.status} ${r.body.toString().slice(0, 300)}`);
  return JSON.parse(r.body.toString());
}

interface PassReport { started_at: number; ms: number; expired: Record<string, number>; reclaimed_pages: number }

/** Seeded rows still there (older than a day: nothing the windows ingest), per table. */
function seededLeft(dbFile: string, before: number): number[] {
  const check = new Database(dbFile, { readonly: true });
  try {
    return ['spans:start_ms', 'logs:time_ms', 'metric_points:time_ms'].map((s) => {
      const [t, c] = s.split(':');
      return check.prepare(`SELECT count(*) FROM ${t} WHERE ${c} < ?`).pluck().get(before) as number;
    });
  } finally {
    check.close();
  }
}

/** Load results of several windows of one condition, pooled. */
function pool(rs: LoadResult[]): LoadResult {
  const reads: Record<string, number[]> = {};
  for (const r of rs) for (const [n, v] of Object.entries(r.reads)) (reads[n] ??= []).push(...v);
  for (const v of Object.values(reads)) v.sort((a, b) => a - b);
  return {
    seconds: rs.reduce((a, r) => a + r.seconds, 0), items: rs.reduce((a, r) => a + r.items, 0), failures: rs.reduce((a, r) => a + r.failures, 0),
    acks: rs.flatMap((r) => r.acks).sort((a, b) => a - b), reads, readFailures: rs.reduce((a, r) => a + r.readFailures, 0),
  };
}

async function main() {
  const dbFile = process.env.BENCH_DB ?? join(mkdtempSync(join(tmpdir(), 'sl-bench-retention-')), 'bench.db');
  if (existsSync(dbFile)) throw new Error(`${dbFile} exists: BENCH_DB must name a new file`);
  const first = await startBenchServer(dbFile);
  const keys = first.keys!;
  await stopServer(first.child);

  // Seed, days 8 to 2 before now: kept by the default 30 days, expired once the period is 1 day.
  const now = Date.now();
  const db = openDatabase(dbFile);
  const t0 = performance.now();
  const seeded = seedExpired(db, keys.project, N, now - 8 * DAY, now - 2 * DAY);
  const seedSeconds = (performance.now() - t0) / 1000;
  const pageSize = db.pragma('page_size', { simple: true }) as number;
  db.close();
  const seededTotal = Object.values(seeded).reduce((a, b) => a + b, 0);
  const sizeBefore = fileBytes(dbFile);
  console.log(`seeded ${k(seededTotal)} rows (${Object.entries(seeded).map(([t, n]) => `${t} ${k(n)}`).join(', ')}) in ${seedSeconds.toFixed(0)} s; file ${mb(sizeBefore)} MB (${dbFile})`);

  // Retention 1 day, set on a server whose first pass is a day away. A pass deletes kinds in turn
  // (spans, their chunks, logs, metric points), and the windows see a few per cent of it: so the first
  // half of the rounds has only the logs due (the costly kind: full-text and rollup rows go with each),
  // the second half every kind (spans first again).
  const setRetention = async (days: Record<string, number>) => {
    const setter = await startBenchServer(dbFile, { SIGHTLINE_RETENTION_INTERVAL: '86400' });
    await api(setter.port, keys.admin, 'PUT', `/v1/projects/${keys.project}/retention`, days);
    await stopServer(setter.child);
  };
  const logsFirst = ROUNDS >= 2;
  await setRetention(logsFirst ? { logs: 1 } : { spans: 1, logs: 1, metric_points: 1 });

  const results: Record<'on' | 'off', LoadResult[]> = { on: [], off: [] };
  const perRound: string[] = [];
  let expiredInWindows = 0;
  let onSeconds = 0;
  let live = { db_bytes: 0, wal_bytes: 0 };
  const rate = (r: LoadResult) => r.items / r.seconds;
  const p99 = (r: LoadResult, name?: string) => pct(name ? [...r.reads[name]!].sort((x, y) => x - y) : Object.values(r.reads).flat().sort((x, y) => x - y), 0.99);
  const ackP99 = (r: LoadResult) => (r.acks.length ? pct([...r.acks].sort((x, y) => x - y), 0.99) : NaN);
  for (let round = 0; round < ROUNDS; round++) {
    if (logsFirst && round === Math.floor(ROUNDS / 2)) await setRetention({ spans: 1, logs: 1, metric_points: 1 });
    const due = logsFirst && round < Math.floor(ROUNDS / 2) ? 'logs' : 'all kinds';
    const order: Array<'on' | 'off'> = round % 2 ? ['off', 'on'] : ['on', 'off'];
    const got: Partial<Record<'on' | 'off', LoadResult>> = {};
    for (const cond of order) {
      const leftBefore = cond === 'on' ? seededLeft(dbFile, now - DAY) : [];
      const server = await startBenchServer(dbFile, { SIGHTLINE_RETENTION_INTERVAL: cond === 'on' ? (process.env.BENCH_ON_INTERVAL ?? '1') : '86400' });
      server.child.stdout!.on('data', (d) => process.stderr.write(d)); // the server's warnings and errors (a failed pass)
      const stop = () => server.child.kill('SIGTERM');
      process.once('exit', stop); // never leave the server behind
      try {
        await runLoad(server.port, keys, (s) => s >= 3); // warm-up: decode workers, statements, page cache; the pass starts
        const r = await runLoad(server.port, keys, (s) => s >= SECONDS);
        results[cond].push(r);
        got[cond] = r;
        live = (await api(server.port, keys.admin, 'GET', `/v1/projects/${keys.project}/system/status`)).database;
      } finally {
        await stopServer(server.child);
        process.removeListener('exit', stop);
      }
      if (cond === 'on') {
        const leftAfter = seededLeft(dbFile, now - DAY);
        const went = leftBefore.reduce((a, b) => a + b, 0) - leftAfter.reduce((a, b) => a + b, 0);
        expiredInWindows += went;
        onSeconds += got.on!.seconds + 3;
        console.log(`round ${round + 1} on (${due} due): ${k(rate(got.on!))} items/s, ${k(went)} seeded rows expired (left: spans ${k(leftAfter[0]!)}, logs ${k(leftAfter[1]!)}, points ${k(leftAfter[2]!)})`);
      } else console.log(`round ${round + 1} off: ${k(rate(got.off!))} items/s`);
    }
    const ratio = (x: number, y: number) => `${((x / y - 1) * 100).toFixed(0)} %`;
    perRound.push(`| ${round + 1} (${order.join(', ')}; ${due} due) | ${k(rate(got.off!))} / ${k(rate(got.on!))} (${ratio(rate(got.on!), rate(got.off!))}) | ${ackP99(got.off!).toFixed(0)} / ${ackP99(got.on!).toFixed(0)} | ${p99(got.off!).toFixed(0)} / ${p99(got.on!).toFixed(0)} (${ratio(p99(got.on!), p99(got.off!))}) |`);
  }

  const off = pool(results.off);
  const on = pool(results.on);
  const ratio = (x: number, y: number) => `${((x / y - 1) * 100).toFixed(0)} %`;
  if (ROUNDS > 0) {
  console.log(`\nExpiry of ${k(seededTotal)} seeded rows under load (${CONNECTIONS} ingest connections, OTLP protobuf 512/batch, spans and logs in turn; ${READERS} sequential readers over the last minute), ${ROUNDS} rounds of a ${SECONDS} s window with expiry running and one without, interleaved, pooled:\n`);
  console.log('| measure | no expiry | expiry running | change (aim: ≤ 20 % worse) |');
  console.log('|---|---:|---:|---:|');
  console.log(`| seconds measured | ${off.seconds.toFixed(0)} | ${on.seconds.toFixed(0)} | |`);
  console.log(`| ingest items/s | ${k(rate(off))} | ${k(rate(on))} | ${ratio(rate(on), rate(off))} |`);
  console.log(`| ingest ack p99 ms | ${ackP99(off).toFixed(0)} | ${ackP99(on).toFixed(0)} | ${ratio(ackP99(on), ackP99(off))} |`);
  for (const name of Object.keys(off.reads)) {
    console.log(`| ${name} p99 ms (n ${off.reads[name]!.length} / ${on.reads[name]!.length}) | ${p99(off, name).toFixed(1)} | ${p99(on, name).toFixed(1)} | ${ratio(p99(on, name), p99(off, name))} |`);
  }
  console.log(`| all reads p99 ms | ${p99(off).toFixed(1)} | ${p99(on).toFixed(1)} | ${ratio(p99(on), p99(off))} |`);
  if (off.failures + on.failures + off.readFailures + on.readFailures) console.log(`| non-200 (ingest/reads) | ${off.failures}/${off.readFailures} | ${on.failures}/${on.readFailures} | |`);
  console.log('\n| round (order) | ingest items/s off / on | ack p99 ms off / on | all reads p99 ms off / on |');
  console.log('|---|---:|---:|---:|');
  for (const row of perRound) console.log(row);
  }

  console.log('\n| expiry | |');
  console.log('|---|---:|');
  console.log(`| seeded rows expired during the windows with expiry | ${k(expiredInWindows)} in ${onSeconds.toFixed(0)} s of load (${k(expiredInWindows / onSeconds)} rows/s, the pass backing off under saturating ingest) |`);
  console.log(`| file before the windows (seeded, checkpointed) | ${mb(sizeBefore)} MB |`);
  console.log(`| file at the end of the last window (live: db + WAL) | ${mb(live.db_bytes)} + ${mb(live.wal_bytes)} MB (${k(off.items + on.items)} items ingested by the windows) |`);
  if (FINISH) {
    // The rest of the pass, without load: it must end, and the freed pages go back to the file system.
    const server = await startBenchServer(dbFile, { SIGHTLINE_RETENTION_INTERVAL: '1' });
    server.child.stdout!.on('data', (d) => process.stderr.write(d));
    const stop = () => server.child.kill('SIGTERM');
    process.once('exit', stop);
    const startedAt = Date.now();
    let pass: PassReport | null = null;
    try {
      for (;;) {
        const r = (await api(server.port, keys.admin, 'GET', `/v1/projects/${keys.project}/system/status`)).retention as PassReport | null;
        if (r && r.started_at >= startedAt) {
          pass = r;
          break;
        }
        await new Promise((res) => setTimeout(res, 1000));
      }
    } finally {
      await stopServer(server.child);
      process.removeListener('exit', stop);
    }
    const expired = Object.values(pass.expired).reduce((x, y) => x + y, 0);
    console.log(`| the rest of the pass, no load | ${k(expired)} rows (${Object.entries(pass.expired).map(([t, n]) => `${t} ${k(n)}`).join(', ')}) in ${(pass.ms / 1000).toFixed(1)} s (${k(expired / (pass.ms / 1000))} rows/s), ${k(pass.reclaimed_pages)} pages (${mb(pass.reclaimed_pages * pageSize)} MB) returned |`);
    console.log(`| file after the pass and the shutdown checkpoint | ${mb(fileBytes(dbFile))} MB |`);
  }
  console.log(`| seeded rows left (spans, logs, metric points) | ${seededLeft(dbFile, now - DAY).join(', ')} |`);
  // Bytes on disk per record, each kind written through the server's writer into its own database.
  const bytes = await measureBytesPerRecord({ rows: Number(process.env.BENCH_BYTES_ROWS ?? 100_000) });
  console.log(`| bytes per record (${bytes.map((b) => b.kind).join(', ')}) | ${bytes.map((b) => b.perRecord.toFixed(0)).join(', ')} B (aim: ≤ 200 for logs and spans) |`);
  closeRequests();
}

// Run when executed (not when imported for its seeding function).
if (import.meta.url === pathToFileURL(process.argv[1]!).href) await main();
