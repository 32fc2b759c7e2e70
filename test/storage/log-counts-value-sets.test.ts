/**
 * Issue 22 item 6, migration 045: log count rollups keyed by the dimension combination (log_dims id)
 * and span attribute value lists that repeat stored once. Counts, histograms and searches give the
 * same answers for data written before the migration (old rollups backfilled, rows from before
 * migration 037 included) and after, and stay exact as logs expire; spans whose values are stored
 * once read back exactly what was sent and are found by attribute filters.
 */
import { describe, expect, it } from 'vitest';
import { migrate, openDatabase, type Db } from '../../src/storage/db.js';
import { MIGRATIONS } from '../../src/storage/migrations/index.js';
import { LOG_COUNT_TABLES, rollupInsert } from '../../src/storage/migrations/004-log-counts.js';
import { createValueSets, HTTP_METHOD_KS_SQL } from '../../src/storage/attr-keysets.js';
import { copyLogTables, untemplateLogs } from '../helpers/log-rows.js';
import { createSqliteTelemetryWriter } from '../../src/storage/sqlite-telemetry-store.js';
import { withLogRollups } from '../../src/storage/log-rollups.js';
import { createLogsReadRepo, type LogDim, type LogFilter } from '../../src/storage/logs-read-repo.js';
import { createTracesReadRepo } from '../../src/storage/traces-read-repo.js';
import { createRetentionRepo, EXPIRY_TARGETS } from '../../src/storage/retention-repo.js';
import type { Attributes, LogRecordOut, SpanRecord } from '../../src/domain/telemetry-types.js';
import type { TelemetryWriter } from '../../src/storage/telemetry-store.js';

const HOUR = 3_600_000;
const MIN = 60_000;
const T0 = Date.UTC(2026, 0, 1, 10);
const scope = { name: 'app', version: '', attributes: {} };
const RES: Attributes[] = [
  { 'service.name': 'orders', 'service.version': '2.1.0', 'deployment.environment.name': 'prod' },
  { 'service.name': 'billing', 'deployment.environment.name': 'staging' },
];
const METHODS = ['GET', 'POST', 'PUT'];

/** 400 logs over three hours: levels, services, environments, releases, sources and HTTP methods vary. */
const LOGS: LogRecordOut[] = Array.from({ length: 400 }, (_, i) => {
  const resource = RES[i % 2]!;
  const sev = [9, 17, 13, 5][i % 4]!;
  const attributes: Attributes = i % 5 === 0 ? {} : { 'http.request.method': METHODS[i % 3]!, n: i };
  if (i % 7 === 0) attributes['log.source'] = 'console';
  return {
    resource, scope, service_name: resource['service.name'] as string, time_ms: T0 + i * 27_000 + 0.5, observed_time_ms: T0 + i * 27_000 + 0.5,
    severity_number: sev, severity_text: '', body: `message ${i}`, attributes, trace_id: null, span_id: null, flags: 0, event_name: '',
  };
});

const FILTERS: Omit<LogFilter, 'fromMs' | 'toMs'>[] = [
  {}, { levels: ['error'] }, { levels: ['error', 'warn'], service: 'orders' }, { environment: 'staging' }, { release: '2.1.0' },
  { source: 'console' }, { connectorKey: 'gh' }, { service: 'nope' },
];
const GROUPS: LogDim[][] = [[], ['level'], ['service_name', 'environment'], ['release', 'source', 'connector_key'], ['http_method'], ['level', 'http_method']];
/** Whole hours, whole minutes and raw edges, with histogram steps of a minute and an hour. */
const WINDOWS = [
  { fromMs: T0 - HOUR, toMs: T0 + 4 * HOUR },
  { fromMs: T0 + 17 * MIN + 5_000, toMs: T0 + 2 * HOUR + 3 * MIN + 1 },
];

function answers(db: Db) {
  const repo = createLogsReadRepo(db);
  const norm = (cs: { bucket: number; keys: string[]; n: number }[]) => {
    const m = new Map<string, number>();
    for (const c of cs) m.set(JSON.stringify([c.bucket, ...c.keys]), (m.get(JSON.stringify([c.bucket, ...c.keys])) ?? 0) + c.n);
    return [...m].filter(([, n]) => n !== 0).sort();
  };
  const out: unknown[] = [];
  for (const w of WINDOWS) {
    for (const f of FILTERS) {
      const filter = { ...w, ...f };
      out.push(repo.total('1', filter));
      for (const g of GROUPS) {
        out.push(norm(repo.counts('1', filter, g)));
        out.push(norm(repo.counts('1', filter, g, { firstMs: T0 - HOUR, stepMs: MIN })));
        out.push(norm(repo.counts('1', filter, g, { firstMs: T0 - HOUR, stepMs: HOUR })));
      }
      // The newest rows of a selective filter (the rollups narrow the window walked).
      out.push(repo.search('1', filter, { limit: 3, offset: 0 }).rows.map((r) => r.body));
    }
  }
  return out;
}

/** Logs 0–199 of the first connector, the rest of none; log 3 as a row from before migration 037 (its own dimension columns). */
function writeLogs(w: TelemetryWriter) {
  w.insertLogs('1', LOGS.slice(0, 3), 'otlp', T0, 'gh');
  w.insertLogs('1', LOGS.slice(4, 200), 'otlp', T0, 'gh');
  w.insertLogs('1', LOGS.slice(200), 'otlp', T0, null);
}

/** Log 3 in the form of the writer before migration 037 (dims NULL, dimension columns and attribute object on the row). */
function insertPre037(db: Db) {
  const l = LOGS[3]!;
  db.prepare(`INSERT INTO logs (project_id, time_ms, observed_ms, severity_number, severity_text, level, body, attributes, service_name, environment,
    release, source, connector_key, resource_id, scope_name, received_ms) VALUES (1, ?, ?, ?, '', 'debug', ?, ?, 'billing', 'staging', '', 'otlp', 'gh',
    (SELECT resource_id FROM logs WHERE dims IN (SELECT id FROM log_dims WHERE service_name = 'billing') LIMIT 1), 'app', 0)`)
    .run(l.time_ms, l.observed_time_ms, l.severity_number, l.body, JSON.stringify(l.attributes));
}

describe('log count rollups keyed by the dimension combination (migration 045)', () => {
  it('give the same counts, histograms and searches for data stored before the migration and after, also as logs expire', () => {
    // After: everything written by this version (log 3 too, as a current row).
    const now = openDatabase(':memory:');
    const wNow = withLogRollups(now, createSqliteTelemetryWriter(now));
    writeLogs(wNow);
    wNow.insertLogs('1', [LOGS[3]!], 'otlp', T0, 'gh');
    const expected = answers(now);
    expect(now.prepare("SELECT count(*) FROM pragma_table_info('log_counts_1m') WHERE name IN ('dims', 'level')").pluck().get()).toBe(1);
    expect(now.prepare('SELECT sum(n) FROM log_counts_http_1h').pluck().get()).toBe(400);

    // Before: the writer of migrations 037–044 (rollups keyed by the six texts), plus a pre-037 row.
    // Its rows are this writer's without attribute templates (migration 051), copied into that schema
    // (050 only adds the full-text table they are indexed in; 045 and 049 replace triggers and run after).
    const old = openDatabase(':memory:', { migrations: MIGRATIONS.filter((m) => m.version < 45 || m.version === 50) });
    const src = openDatabase(':memory:');
    writeLogs(createSqliteTelemetryWriter(src));
    untemplateLogs(src);
    copyLogTables(src, old, ['resources', 'scopes', 'attr_keysets', 'log_dims', 'logs']);
    src.close();
    insertPre037(old);
    for (const t of LOG_COUNT_TABLES) {
      const u = t.unitMs;
      const dims = 'level, service_name, environment, release, source, connector_key';
      old.exec(`INSERT INTO ${t.table} (project_id, t, ${dims}${t.http ? ', http_method' : ''}, n)
        SELECT l.project_id, CAST(l.time_ms / ${u} AS INTEGER) * ${u}, d.level, d.service_name, d.environment, d.release, d.source, d.connector_key${t.http ? `, ${HTTP_METHOD_KS_SQL('l')}` : ''}, count(*)
        FROM logs l JOIN log_dims d ON d.id = l.dims GROUP BY ${t.http ? '1, 2, 3, 4, 5, 6, 7, 8, 9' : '1, 2, 3, 4, 5, 6, 7, 8'}`);
      old.prepare(`${rollupInsert(t, 'l.dims IS NULL', HTTP_METHOD_KS_SQL)} ON CONFLICT DO UPDATE SET n = n + excluded.n`).run();
    }
    migrate(old);
    expect(old.prepare('SELECT count(*) FROM schema_migrations WHERE version = 45').pluck().get()).toBe(1);
    expect(answers(old)).toEqual(expected);

    // Logs written after the upgrade add to the backfilled rollups.
    const extra = LOGS.slice(0, 40).map((l) => ({ ...l, time_ms: l.time_ms + 0.25, body: `${l.body}b` }));
    withLogRollups(old, createSqliteTelemetryWriter(old)).insertLogs('1', extra, 'otlp', T0, 'gh');
    wNow.insertLogs('1', extra, 'otlp', T0, 'gh');
    expect(answers(old)).toEqual(answers(now));

    // Expiry (the delete trigger, either row form) keeps them exact, down to nothing.
    for (const db of [old, now]) {
      const retention = createRetentionRepo(db);
      const target = EXPIRY_TARGETS.find((t) => t.table === 'logs')!;
      expect(retention.expireBatch(target, '1', T0 + HOUR + 10 * MIN, 1000)).toBeGreaterThan(100);
      // Expiry takes the counts off once per batch (migration 049): exact, and no row left at 0.
      const left = db.prepare('SELECT count(*) FROM logs').pluck().get();
      for (const t of LOG_COUNT_TABLES) {
        expect(db.prepare(`SELECT sum(n) FROM ${t.table}`).pluck().get()).toBe(left);
        expect(db.prepare(`SELECT count(*) FROM ${t.table} WHERE n = 0`).pluck().get()).toBe(0);
      }
    }
    expect(answers(old)).toEqual(answers(now));
    for (const db of [old, now]) {
      db.prepare('DELETE FROM logs').run();
      for (const t of LOG_COUNT_TABLES) expect(db.prepare(`SELECT count(*) FROM ${t.table} WHERE n <> 0`).pluck().get()).toBe(0);
      db.close();
    }
  });
});

const TRACE = '4bf92f3577b34da6a3ce929d0e0e4736';
const DB_ATTRS = { 'db.system': 'postgresql', 'db.query.text': 'SELECT * FROM orders WHERE id = $1', 'server.port': 5432 };
const span = (i: number, attributes: Attributes, kind = 3): SpanRecord => ({
  resource: RES[0]!, scope, service_name: 'orders', trace_id: TRACE, span_id: `00f067aa0ba902c${i}`, parent_span_id: i ? '00f067aa0ba902c0' : null,
  trace_state: '', name: `span ${i}`, kind, start_ms: T0 + i, end_ms: T0 + i + 2, status_code: 0, status_message: '', attributes, events: [], links: [],
});
const SPANS = [
  span(0, { 'http.request.method': 'GET', 'http.route': '/orders/{id}' }, 2),
  span(1, DB_ATTRS), span(2, DB_ATTRS), span(3, { ...DB_ATTRS, 'server.port': 5433 }), span(4, DB_ATTRS), span(5, { 'db.system': 'postgresql' }), span(6, {}),
];

function spanReads(db: Db) {
  const traces = createTracesReadRepo(db);
  const stream = (key: string, value: string) =>
    [...traces.spanStream('1', { kind: 'all', where: { attributes: [{ key, value }] } }, T0 - MIN, T0 + MIN)].length;
  return {
    full: traces.traceSpansFull('1', TRACE, 100).map((s) => [s.span_id, s.attributes]),
    map: traces.mapSpans('1', T0 - MIN, T0 + MIN, T0 - MIN, T0 + MIN).map((s) => [s.span_id, s.attributes]),
    port: stream('server.port', '5432'),
    query: stream('db.query.text', DB_ATTRS['db.query.text']),
    system: stream('db.system', 'postgresql'),
  };
}

describe('span attribute value lists stored once (migration 045)', () => {
  it('keeps a list seen once on its row, stores a repeated one once, and reads both forms the same', () => {
    const db = openDatabase(':memory:');
    createSqliteTelemetryWriter(db).insertSpans('1', SPANS, 'otlp', T0);
    // Span 1 is the first sighting of its list (kept as text), spans 2 and 4 repeat it.
    expect(db.prepare('SELECT typeof(attributes) FROM spans ORDER BY start_ms').pluck().all()).toEqual(['text', 'text', 'blob', 'text', 'blob', 'text', 'text']);
    expect(db.prepare('SELECT vals FROM attr_valuesets').pluck().all()).toEqual([JSON.stringify(Object.values(DB_ATTRS))]);

    const r = spanReads(db);
    expect(r.full).toEqual(SPANS.map((s) => [s.span_id, s.attributes]));
    expect(r.map.filter(([id]) => id !== '00f067aa0ba902c0')).toEqual(SPANS.slice(1).map((s) => [s.span_id, JSON.stringify(s.attributes)]));
    expect([r.port, r.query, r.system]).toEqual([3, 4, 5]);

    // The same spans in the form written before the migration (every list on its row) read the same.
    const before = openDatabase(':memory:');
    createSqliteTelemetryWriter(before).insertSpans('1', SPANS, 'otlp', T0);
    before.exec("UPDATE spans SET attributes = (SELECT vals FROM attr_valuesets WHERE id = spans.attributes) WHERE typeof(attributes) = 'blob'");
    expect(before.prepare("SELECT count(*) FROM spans WHERE typeof(attributes) = 'blob'").pluck().get()).toBe(0);
    expect(spanReads(before)).toEqual(r);

    // A later writer (after a restart) finds the stored list; expiry removes the rows of both forms.
    createSqliteTelemetryWriter(db).insertSpans('1', [span(7, DB_ATTRS), span(8, DB_ATTRS)], 'otlp', T0);
    expect(db.prepare("SELECT count(*) FROM spans WHERE typeof(attributes) = 'blob'").pluck().get()).toBe(3);
    expect(db.prepare('SELECT count(*) FROM attr_valuesets').pluck().get()).toBe(1);
    expect(spanReads(db).query).toBe(6);
    const retention = createRetentionRepo(db);
    retention.expireBatch(EXPIRY_TARGETS.find((t) => t.table === 'spans')!, '1', T0 + MIN, 100);
    expect(db.prepare('SELECT count(*) FROM spans').pluck().get()).toBe(0);
    db.close();
    before.close();
  });

  it('stops storing new lists past the cap (they are not expired), keeping them on their rows', () => {
    const db = openDatabase(':memory:');
    const valueSet = createValueSets(db, 1);
    const [a, b] = ['["a"]', '["b"]'];
    expect([valueSet(a), valueSet(a), valueSet(b), valueSet(b), valueSet(a)].map((v) => typeof v)).toEqual(['string', 'object', 'string', 'string', 'object']);
    expect(db.prepare('SELECT vals FROM attr_valuesets').pluck().all()).toEqual([a]);
    db.close();
  });
});
