/**
 * Issue 22 item 6: attribute keys of logs and spans are stored once per key set (migration 037).
 * Whatever the stored form, reads give back the attributes as sent, `key:value` filters, HTTP-method
 * counts and expiry keep working, and rows written before the migration read as before.
 */
import { describe, expect, it } from 'vitest';
import { migrate, openDatabase } from '../../src/storage/db.js';
import { LOG_COUNT_TABLES, rollupInsert } from '../../src/storage/migrations/004-log-counts.js';
import { MIGRATIONS } from '../../src/storage/migrations/index.js';
import { createSqliteTelemetryWriter } from '../../src/storage/sqlite-telemetry-store.js';
import { withLogRollups } from '../../src/storage/log-rollups.js';
import { createLogsReadRepo, ftsQuery } from '../../src/storage/logs-read-repo.js';
import { createTracesReadRepo } from '../../src/storage/traces-read-repo.js';
import { createRetentionRepo, EXPIRY_TARGETS } from '../../src/storage/retention-repo.js';
import type { Attributes, LogRecordOut, SpanRecord } from '../../src/domain/telemetry-types.js';

const T0 = Date.UTC(2026, 0, 1, 10);
const MIN = 60_000;
const resource = { 'service.name': 'orders', 'deployment.environment.name': 'prod' };
const scope = { name: 'app', version: '1', attributes: {} };

const log = (at: number, body: string, attributes: Attributes, traceId: string | null = null): LogRecordOut => ({
  resource, scope, service_name: 'orders', time_ms: at, observed_time_ms: at, severity_number: 9, severity_text: 'INFO',
  body, attributes, trace_id: traceId, span_id: traceId ? '00f067aa0ba902b7' : null, flags: 0, event_name: '',
});

const span = (traceId: string, spanId: string, at: number, attributes: Attributes): SpanRecord => ({
  resource, scope, service_name: 'orders', trace_id: traceId, span_id: spanId, parent_span_id: null, trace_state: '', name: 'GET /x',
  kind: 2, start_ms: at, end_ms: at + 5, status_code: 0, status_message: '', attributes, events: [], links: [],
});

const TRACE = '4bf92f3577b34da6a3ce929d0e0e4736';
const ATTRS: Attributes[] = [
  { 'http.request.method': 'GET', 'http.route': '/api/orders', 'http.response.status_code': 200, 'user.id': 'u1' },
  { 'http.request.method': 'POST', 'http.route': '/api/orders', 'http.response.status_code': 201, 'user.id': 'u2' },
  { 'http.method': 'PUT', nested: { a: [1, 'b', null], ok: true }, '10': 'numeric key first' },
  {},
];

describe('attribute key sets', () => {
  it('reads logs and spans back with the attributes sent, and filters and counts by attribute', () => {
    const db = openDatabase(':memory:');
    const w = withLogRollups(db, createSqliteTelemetryWriter(db));
    w.insertLogs('1', ATTRS.map((a, i) => log(T0 + i * MIN, `message ${i}`, a, i === 0 ? TRACE : null)), 'otlp', T0);
    w.insertSpans('1', ATTRS.map((a, i) => span(TRACE, `00f067aa0ba902c${i}`, T0 + i, a)), 'otlp', T0);
    // Key names are stored once per key set, not on every row.
    expect(db.prepare('SELECT count(*) FROM attr_keysets').pluck().get()).toBe(2);
    expect(db.prepare("SELECT count(*) FROM logs WHERE attributes LIKE '%http.route%'").pluck().get()).toBe(0);

    const logs = createLogsReadRepo(db);
    const win = { fromMs: T0 - MIN, toMs: T0 + 10 * MIN };
    const rows = logs.search('1', win, { limit: 10, offset: 0 }).rows;
    expect(rows.map((r) => JSON.parse(r.attributes)).reverse()).toEqual(ATTRS);
    expect(rows.map((r) => r.attributes).reverse()).toEqual(ATTRS.map((a) => JSON.stringify(a)));
    expect(rows.every((r) => !('attr_keys' in r))).toBe(true);
    expect(logs.search('1', { ...win, traceId: TRACE }, { limit: 10, offset: 0 }).rows.map((r) => r.body)).toEqual(['message 0']);
    expect(logs.search('1', { ...win, match: '"u2"' }, { limit: 10, offset: 0 }).rows.map((r) => JSON.parse(r.attributes)['user.id'])).toEqual(['u2']);
    const byAttr = (key: string, value: string, prefix = false) =>
      logs.search('1', { ...win, where: { kind: 'attr', key, value, prefix } }, { limit: 10, offset: 0 }).rows.map((r) => r.body);
    expect(byAttr('user.id', 'u2')).toEqual(['message 1']);
    expect(byAttr('http.response.status_code', '200')).toEqual(['message 0']);
    expect(byAttr('http.route', '/api/')).toEqual([]);
    expect(byAttr('http.route', '/api/', true)).toEqual(['message 1', 'message 0']);
    expect(byAttr('10', 'numeric key first')).toEqual(['message 2']);
    // Ids stored as bytes, scopes once; read back as sent.
    expect(db.prepare('SELECT typeof(trace_id) || typeof(span_id) FROM logs WHERE trace_id IS NOT NULL').pluck().get()).toBe('blobblob');
    const first = rows[rows.length - 1]!;
    expect([first.trace_id, first.span_id, first.scope_name]).toEqual([TRACE, '00f067aa0ba902b7', 'app']);
    expect(byAttr('trace_id', TRACE.slice(0, 8), true)).toEqual(['message 0']);
    // The full-text index holds the trace id's first digits; a search for the whole id finds the log.
    expect(logs.search('1', { ...win, match: ftsQuery(TRACE.toUpperCase())! }, { limit: 10, offset: 0 }).rows.map((r) => r.body)).toEqual(['message 0']);
    expect(byAttr('trace_id', TRACE.toUpperCase())).toEqual(['message 0']);
    expect(byAttr('span_id', '00f067aa0ba902b7')).toEqual(['message 0']);
    expect(logs.search('1', { ...win, spanId: '00f067aa0ba902b7' }, { limit: 10, offset: 0 }).rows.length).toBe(1);
    expect(logs.newest('1', win, 10, { attributes: true }).map((r) => JSON.parse(r.attributes!)).reverse()).toEqual(ATTRS);

    // HTTP method counts: from the rollups and from raw rows (a key:value filter forces raw rows).
    const methods = (f: object) =>
      Object.fromEntries(logs.counts('1', { ...win, ...f }, ['http_method']).map((c) => [c.keys[0], c.n]));
    expect(methods({})).toEqual({ GET: 1, POST: 1, PUT: 1, '': 1 });
    expect(methods({ where: { kind: 'attr', key: 'service.name', value: 'orders', prefix: false } })).toEqual({ GET: 1, POST: 1, PUT: 1, '': 1 });

    const traces = createTracesReadRepo(db);
    const full = traces.traceSpansFull('1', TRACE, 10);
    expect(full.map((s) => s.attributes)).toEqual(ATTRS);
    expect(full.map((s) => [s.span_id, s.parent_span_id, s.scope_name, s.scope_version])).toEqual(ATTRS.map((_, i) => [`00f067aa0ba902c${i}`, null, 'app', '1']));
    expect(traces.parentService('1', TRACE, '00f067aa0ba902c2')).toBe('orders');
    w.insertSpans('1', [{ ...span(TRACE, '00f067aa0ba902d0', T0 + 9, {}), parent_span_id: '00f067aa0ba902c1', service_name: 'billing' }], 'otlp', T0);
    expect(traces.childServices('1', TRACE, '00f067aa0ba902c1')).toEqual(['billing']);
    const streamed = [...traces.spanStream('1', { kind: 'all', where: { attributes: [{ key: 'user.id', value: 'u1' }] } }, T0 - MIN, T0 + MIN)];
    expect(streamed.length).toBe(1);
    db.close();
  });

  it('expiry keeps the HTTP-method rollups exact', () => {
    const db = openDatabase(':memory:');
    const w = withLogRollups(db, createSqliteTelemetryWriter(db));
    w.insertLogs('1', ATTRS.map((a, i) => log(T0 + i * MIN, `m${i}`, a)), 'otlp', T0);
    const retention = createRetentionRepo(db);
    const target = EXPIRY_TARGETS.find((t) => t.table === 'logs')!;
    expect(retention.expireBatch(target, '1', T0 + 2 * MIN, 100)).toBe(2);
    const left = db.prepare('SELECT http_method, sum(n) AS n FROM log_counts_http_1m GROUP BY 1 HAVING sum(n) > 0 ORDER BY 1').all();
    expect(left).toEqual([{ http_method: '', n: 1 }, { http_method: 'PUT', n: 1 }]);
    db.close();
  });

  it('reads rows written before migration 037 (attributes as JSON objects) unchanged', () => {
    const db = openDatabase(':memory:', { migrations: MIGRATIONS.filter((m) => m.version < 37) });
    // The writer of that version stored the JSON object: simulate it with plain SQL.
    db.prepare(`INSERT INTO logs (project_id, time_ms, observed_ms, severity_number, severity_text, level, body, attributes, trace_id, span_id,
      service_name, environment, release, source, connector_key, resource_id, scope_name, received_ms)
      VALUES (1, ?, ?, 9, 'INFO', 'info', 'old row', ?, NULL, NULL, 'orders', 'prod', '', 'otlp', NULL, 1, 'app', 0)`).run(T0, T0, JSON.stringify(ATTRS[0]));
    db.prepare("INSERT INTO logs_fts (rowid, body, attrs) VALUES (1, 'old row', 'GET')").run();
    for (const t of LOG_COUNT_TABLES) db.prepare(`${rollupInsert(t, 'true')} ON CONFLICT DO UPDATE SET n = n + excluded.n`).run();
    migrate(db);
    const up = db;
    const logs = createLogsReadRepo(up);
    const win = { fromMs: T0 - MIN, toMs: T0 + MIN };
    const rows = logs.search('1', { ...win, where: { kind: 'attr', key: 'user.id', value: 'u1', prefix: false } }, { limit: 10, offset: 0 }).rows;
    expect(rows.map((r) => r.attributes)).toEqual([JSON.stringify(ATTRS[0])]);
    expect(logs.counts('1', { ...win, where: { kind: 'attr', key: 'user.id', value: 'u1', prefix: false } }, ['http_method']).map((c) => c.keys[0])).toEqual(['GET']);
    up.prepare('DELETE FROM logs').run();
    expect(up.prepare('SELECT sum(n) FROM log_counts_http_1m').pluck().get()).toBe(0);
    up.close();
  });
});

