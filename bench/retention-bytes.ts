/**
 * Bytes on disk per stored log record, span and metric point (issue 22, item 6).
 *
 *   npx tsx bench/retention-bytes.ts            # BENCH_ROWS=200000 records per kind
 *   BENCH_ROWS=50000 BENCH_SEARCH=1 npx tsx bench/retention-bytes.ts
 *
 * Each kind is written into its own fresh database through the server's write path (the writer chain
 * of src/core/services.ts: createSqliteTelemetryWriter wrapped by the log, AI-observation and release
 * rollups), in ingest-sized batches of realistic OTLP-like records (a few services and pods, HTTP and
 * database attributes, templated messages, trace ids on most logs). The WAL is checkpointed, then the
 * `dbstat` virtual table gives the pages of every table, index and full-text shadow table; the bytes
 * of an empty database (schema only) are subtracted. With BENCH_SEARCH=1 it also times logs.search
 * reads (free text, a phrase, a trace id) over the log database.
 *
 * `measureBytesPerRecord(opts)` is exported for bench/retention.ts.
 */
import { mkdtempSync, rmSync, statSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { openDatabase, type Db } from '../src/storage/db.js';
import { createSqliteTelemetryWriter } from '../src/storage/sqlite-telemetry-store.js';
import { withLogRollups } from '../src/storage/log-rollups.js';
import { withReleaseRollups } from '../src/storage/release-rollups.js';
import { withAgentObservations } from '../src/storage/ai-spans.js';
import { createAiRepo } from '../src/storage/ai-repo.js';
import { createLogsReadRepo, ftsQuery } from '../src/storage/logs-read-repo.js';
import type { TelemetryWriter } from '../src/storage/telemetry-store.js';
import type { Attributes, LogRecordOut, MetricPointRecord, SpanRecord } from '../src/domain/telemetry-types.js';
import { rng } from './lib.js';

export type RecordKind = 'logs' | 'spans' | 'metric_points';

export interface BytesOptions {
  /** Records written per kind (default BENCH_ROWS or 200,000). */
  rows?: number;
  /** Kinds to measure (default all three). */
  kinds?: RecordKind[];
  /** Records per ingest batch (default 500). */
  batch?: number;
  /** Directory for the temporary databases (default the OS temp dir); removed afterwards unless `keep`. */
  dir?: string;
  keep?: boolean;
  /** Also time logs.search over the log database (median of a few runs per query). */
  search?: boolean;
}

export interface ObjectBytes {
  name: string;
  /** 'table' | 'index' | 'fts' (a full-text shadow table) */
  type: string;
  bytes: number;
  perRecord: number;
}

export interface KindBytes {
  kind: RecordKind;
  rows: number;
  /** dbstat pages of the kind's database minus those of the empty schema. */
  bytes: number;
  perRecord: number;
  /** File size after a WAL checkpoint, minus the empty database's. */
  fileBytes: number;
  objects: ObjectBytes[];
  /** Median ms per logs.search query (logs only, with `search`). */
  searchMs?: Record<string, number>;
}

const SERVICES = ['checkout', 'cart', 'payments', 'catalog', 'users', 'gateway', 'search', 'email'];
const ROUTES = ['/api/cart/{id}', '/api/orders', '/api/orders/{id}', '/api/products', '/api/products/{id}', '/api/users/{id}', '/health', '/api/search'];
const METHODS = ['GET', 'GET', 'GET', 'POST', 'PUT', 'DELETE'];
const MESSAGES = [
  (r: () => number) => `GET /api/orders/${Math.floor(r() * 1e6)} completed in ${Math.floor(r() * 900)}ms`,
  (r: () => number) => `user ${Math.floor(r() * 1e5)} added item sku-${Math.floor(r() * 5e4)} to cart`,
  (r: () => number) => `payment authorized for order ${Math.floor(r() * 1e6)} amount=${(r() * 300).toFixed(2)} currency=USD`,
  (r: () => number) => `connection refused to postgres://db-${Math.floor(r() * 4)}.internal:5432 retrying in ${Math.floor(r() * 5)}s`,
  (r: () => number) => `cache miss key=product:${Math.floor(r() * 5e4)}`,
  (r: () => number) => `request timeout after 30000ms upstream=inventory attempt=${Math.floor(r() * 3) + 1}`,
  (r: () => number) => `processed ${Math.floor(r() * 500)} messages from queue orders.created in ${Math.floor(r() * 2000)}ms`,
  () => 'health check ok',
];
const hex = (r: () => number, n: number) => {
  let s = '';
  for (let i = 0; i < n; i++) s += '0123456789abcdef'[Math.floor(r() * 16)];
  return s;
};

function resources(): Attributes[] {
  const out: Attributes[] = [];
  for (const svc of SERVICES) {
    for (let pod = 0; pod < 3; pod++) {
      out.push({
        'service.name': svc,
        'service.version': '1.14.2',
        'deployment.environment.name': 'production',
        'host.name': `ip-10-0-${pod}-17.ec2.internal`,
        'k8s.pod.name': `${svc}-7d9f8b6c4-${pod}x${pod}z`,
        'k8s.namespace.name': 'shop',
        'telemetry.sdk.language': 'nodejs',
        'telemetry.sdk.name': 'opentelemetry',
        'telemetry.sdk.version': '1.30.1',
      });
    }
  }
  return out;
}

const SCOPE = { name: '@opentelemetry/instrumentation-http', version: '0.57.0', attributes: {} };
const DAY = 86_400_000;

function* logBatches(n: number, batch: number, startMs: number): Generator<LogRecordOut[]> {
  const r = rng(22);
  const res = resources();
  for (let done = 0; done < n; ) {
    const out: LogRecordOut[] = [];
    for (let k = 0; k < batch && done < n; k++, done++) {
      const resource = res[Math.floor(r() * res.length)]!;
      const sev = r() < 0.02 ? 17 : r() < 0.1 ? 13 : r() < 0.2 ? 5 : 9;
      const route = ROUTES[Math.floor(r() * ROUTES.length)]!;
      const t = startMs + (done / n) * DAY + r() * 5;
      const withTrace = r() < 0.7;
      out.push({
        resource,
        scope: { name: 'app', version: '', attributes: {} },
        service_name: resource['service.name'] as string,
        time_ms: t,
        observed_time_ms: t + r() * 3,
        severity_number: sev,
        severity_text: sev >= 17 ? 'ERROR' : sev >= 13 ? 'WARN' : sev >= 9 ? 'INFO' : 'DEBUG',
        body: MESSAGES[Math.floor(r() * MESSAGES.length)]!(r),
        attributes: {
          'http.request.method': METHODS[Math.floor(r() * METHODS.length)]!,
          'http.route': route,
          'http.response.status_code': sev >= 17 ? 500 : 200,
          'user.id': `u_${Math.floor(r() * 1e5)}`,
          'code.function': 'handleRequest',
          'thread.id': Math.floor(r() * 16),
        },
        trace_id: withTrace ? hex(r, 32) : null,
        span_id: withTrace ? hex(r, 16) : null,
        flags: withTrace ? 1 : 0,
        event_name: '',
      });
    }
    yield out;
  }
}

function* spanBatches(n: number, batch: number, startMs: number): Generator<SpanRecord[]> {
  const r = rng(23);
  const res = resources();
  for (let done = 0; done < n; ) {
    const out: SpanRecord[] = [];
    while (out.length < batch && done < n) {
      // One trace: a server span and 1–7 children (database and HTTP client calls, internal work).
      const traceId = hex(r, 32);
      const resource = res[Math.floor(r() * res.length)]!;
      const svc = resource['service.name'] as string;
      const t0 = startMs + (done / n) * DAY + r() * 5;
      const rootId = hex(r, 16);
      const method = METHODS[Math.floor(r() * METHODS.length)]!;
      const route = ROUTES[Math.floor(r() * ROUTES.length)]!;
      const err = r() < 0.03;
      const dur = 5 + r() * 400;
      const base = { resource, scope: SCOPE, service_name: svc, trace_id: traceId, trace_state: '', events: [], links: [] };
      out.push({
        ...base, span_id: rootId, parent_span_id: null, name: `${method} ${route}`, kind: 2, start_ms: t0, end_ms: t0 + dur,
        status_code: err ? 2 : 0, status_message: err ? 'Internal Server Error' : '',
        attributes: {
          'http.request.method': method, 'http.route': route, 'url.path': route.replace('{id}', String(Math.floor(r() * 1e5))),
          'http.response.status_code': err ? 500 : 200, 'server.address': `${svc}.shop.svc`, 'network.protocol.version': '1.1',
          'user_agent.original': 'Mozilla/5.0 (X11; Linux x86_64) AppleWebKit/537.36',
        },
      });
      done++;
      const children = 1 + Math.floor(r() * 7);
      for (let c = 0; c < children && done < n; c++, done++) {
        const s = t0 + r() * dur * 0.8;
        const d = r() * dur * 0.2;
        const db = r() < 0.6;
        out.push({
          ...base, span_id: hex(r, 16), parent_span_id: rootId, kind: db ? 3 : 1, start_ms: s, end_ms: s + d, status_code: 0, status_message: '',
          name: db ? 'SELECT shop.orders' : 'render',
          attributes: db
            ? { 'db.system': 'postgresql', 'db.namespace': 'shop', 'db.operation.name': 'SELECT', 'db.query.text': 'SELECT * FROM orders WHERE id = $1', 'server.address': 'db-1.internal', 'server.port': 5432 }
            : { 'code.function': 'render', 'code.namespace': 'views' },
        });
      }
    }
    yield out;
  }
}

function* pointBatches(n: number, batch: number, startMs: number): Generator<MetricPointRecord[]> {
  const r = rng(24);
  const res = resources();
  const names = ['http.server.request.duration', 'process.cpu.utilization', 'db.client.connections.usage', 'http.server.active_requests'];
  for (let done = 0; done < n; ) {
    const out: MetricPointRecord[] = [];
    for (let k = 0; k < batch && done < n; k++, done++) {
      const resource = res[done % res.length]!;
      const name = names[Math.floor(done / res.length) % names.length]!;
      const t = startMs + Math.floor((done / n) * DAY / 10_000) * 10_000;
      const hist = name === 'http.server.request.duration';
      const route = ROUTES[done % ROUTES.length]!;
      const p: MetricPointRecord = {
        resource, scope: { name: '@opentelemetry/sdk-metrics', version: '1.30.1', attributes: {} }, service_name: resource['service.name'] as string,
        metric_name: name, description: '', unit: hist ? 's' : '1', type: hist ? 'hist' : name.endsWith('usage') ? 'sum' : 'gauge',
        temporality: hist || name.endsWith('usage') ? 'cumulative' : 'unspecified', monotonic: false,
        start_ms: hist ? startMs : null, time_ms: t, flags: 0,
        attributes: hist ? { 'http.request.method': 'GET', 'http.route': route, 'http.response.status_code': 200 } : { state: 'used' },
      };
      if (hist) {
        p.count = Math.floor(r() * 1000);
        p.sum = r() * 100;
        p.min = 0.001;
        p.max = r() * 3;
        p.bucket_counts = Array.from({ length: 16 }, () => Math.floor(r() * 100));
        p.explicit_bounds = [0, 0.005, 0.01, 0.025, 0.05, 0.075, 0.1, 0.25, 0.5, 0.75, 1, 2.5, 5, 7.5, 10];
      } else p.value = r() * 100;
      out.push(p);
    }
    yield out;
  }
}

/** The server's writer chain (src/core/services.ts). */
function serverWriter(db: Db): TelemetryWriter {
  return withReleaseRollups(db, withAgentObservations(db, createAiRepo(db), withLogRollups(db, createSqliteTelemetryWriter(db))));
}

interface Stat {
  name: string;
  type: string;
  bytes: number;
}

/** Bytes per table / index from dbstat (full-text shadow tables reported under their own names). */
function dbstat(db: Db): Map<string, Stat> {
  const types = new Map((db.prepare("SELECT name, type, sql FROM sqlite_master WHERE type IN ('table', 'index')").all() as { name: string; type: string; sql: string | null }[]).map((r) => [r.name, r]));
  const ftsBases = [...types.values()].filter((t) => /CREATE VIRTUAL TABLE/i.test(t.sql ?? '')).map((t) => t.name);
  const out = new Map<string, Stat>();
  for (const r of db.prepare('SELECT name, sum(pgsize) AS bytes FROM dbstat GROUP BY name').all() as { name: string; bytes: number }[]) {
    const t = types.get(r.name);
    const fts = ftsBases.some((b) => r.name.startsWith(`${b}_`));
    out.set(r.name, { name: r.name, type: fts ? 'fts' : t ? t.type : r.name.startsWith('sqlite_autoindex') ? 'index' : 'table', bytes: r.bytes });
  }
  return out;
}

const median = (xs: number[]) => [...xs].sort((a, b) => a - b)[Math.floor(xs.length / 2)]!;

function timeSearches(db: Db, startMs: number): Record<string, number> {
  const repo = createLogsReadRepo(db);
  const traceId = db.prepare('SELECT trace_id FROM logs WHERE trace_id IS NOT NULL ORDER BY id DESC LIMIT 1 OFFSET 100').pluck().get();
  const window = { fromMs: startMs, toMs: startMs + DAY + 60_000 };
  const tid = typeof traceId === 'string' ? traceId : Buffer.isBuffer(traceId) ? traceId.toString('hex') : '';
  const queries: Record<string, () => unknown> = {
    'word (many matches)': () => repo.search('1', { ...window, match: ftsQuery('payment')! }, { limit: 50, offset: 0 }),
    'word (few matches)': () => repo.search('1', { ...window, match: ftsQuery('sku-4242')! }, { limit: 50, offset: 0 }),
    'phrase': () => repo.search('1', { ...window, match: ftsQuery('"connection refused"')! }, { limit: 50, offset: 0 }),
    'prefix': () => repo.search('1', { ...window, match: ftsQuery('retry*')! }, { limit: 50, offset: 0 }),
    'trace_id': () => repo.search('1', { ...window, traceId: tid }, { limit: 50, offset: 0 }),
    'no text, error level': () => repo.search('1', { ...window, levels: ['error'] }, { limit: 50, offset: 0 }),
    'no text, one service, errors': () => repo.search('1', { ...window, service: 'email', levels: ['error'] }, { limit: 50, offset: 0 }),
    'one service, errors, 2000 rows': () => repo.search('1', { ...window, service: 'email', levels: ['error'] }, { limit: 2000, offset: 0, withTotal: false }),
    'key:value (user.id)': () => repo.search('1', { ...window, where: { kind: 'attr', key: 'user.id', value: 'u_4242', prefix: false } }, { limit: 50, offset: 0 }),
  };
  const out: Record<string, number> = {};
  for (const [k, f] of Object.entries(queries)) {
    f();
    const xs: number[] = [];
    for (let i = 0; i < 7; i++) {
      const t = performance.now();
      f();
      xs.push(performance.now() - t);
    }
    out[k] = Math.round(median(xs) * 100) / 100;
  }
  return out;
}

export async function measureBytesPerRecord(opts: BytesOptions = {}): Promise<KindBytes[]> {
  const rows = opts.rows ?? Number(process.env.BENCH_ROWS ?? 200_000);
  const batch = opts.batch ?? 500;
  const kinds = opts.kinds ?? ['logs', 'spans', 'metric_points'];
  const dir = mkdtempSync(join(opts.dir ?? tmpdir(), 'sightline-bytes-'));
  const startMs = Date.UTC(2026, 0, 1);
  const results: KindBytes[] = [];
  try {
    for (const kind of kinds) {
      const file = join(dir, `${kind}.db`);
      const db = openDatabase(file, { backupBeforeMigration: false });
      try {
        db.pragma('wal_checkpoint(TRUNCATE)');
        const empty = dbstat(db);
        const emptyFile = statSync(file).size;
        const w = serverWriter(db);
        let receivedMs = startMs;
        if (kind === 'logs') for (const b of logBatches(rows, batch, startMs)) w.insertLogs('1', b, 'otlp', (receivedMs += 1000));
        else if (kind === 'spans') for (const b of spanBatches(rows, batch, startMs)) w.insertSpans('1', b, 'otlp', (receivedMs += 1000));
        else for (const b of pointBatches(rows, batch, startMs)) w.insertMetricPoints('1', b, (receivedMs += 1000));
        db.pragma('wal_checkpoint(TRUNCATE)');
        const after = dbstat(db);
        const objects: ObjectBytes[] = [];
        for (const [name, s] of after) {
          const d = s.bytes - (empty.get(name)?.bytes ?? 0);
          if (d > 0) objects.push({ name, type: s.type, bytes: d, perRecord: d / rows });
        }
        objects.sort((a, b) => b.bytes - a.bytes);
        const bytes = objects.reduce((s, o) => s + o.bytes, 0);
        const res: KindBytes = { kind, rows, bytes, perRecord: bytes / rows, fileBytes: statSync(file).size - emptyFile, objects };
        if (opts.search && kind === 'logs') res.searchMs = timeSearches(db, startMs);
        results.push(res);
      } finally {
        db.close();
      }
    }
  } finally {
    if (!opts.keep) rmSync(dir, { recursive: true, force: true });
  }
  return results;
}

/** A printable table of the figures. */
export function formatBytes(results: KindBytes[]): string {
  const lines: string[] = [];
  for (const r of results) {
    lines.push(`${r.kind}: ${r.rows} records, ${(r.bytes / 1e6).toFixed(1)} MB in pages (${(r.fileBytes / 1e6).toFixed(1)} MB file) = ${r.perRecord.toFixed(1)} B/record`);
    for (const o of r.objects) lines.push(`  ${o.name.padEnd(34)} ${o.type.padEnd(6)} ${(o.bytes / 1e6).toFixed(2).padStart(9)} MB ${o.perRecord.toFixed(1).padStart(8)} B/record`);
    if (r.searchMs) for (const [q, ms] of Object.entries(r.searchMs)) lines.push(`  search ${q.padEnd(28)} ${ms} ms (median)`);
  }
  return lines.join('\n');
}

if (import.meta.url === `file://${process.argv[1]}`) {
  const res = await measureBytesPerRecord({ search: process.env.BENCH_SEARCH === '1', keep: process.env.BENCH_KEEP === '1' });
  console.log(formatBytes(res));
}
