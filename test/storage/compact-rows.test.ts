/**
 * Issue 22 item 6, migration 044: span trace ids stored as bytes; a span name equal to its
 * operation, an end equal to start + duration, the resource's service version, the usual severity
 * text of a log and an observed time equal to the log's time are not repeated on new rows. Reads
 * give back exactly what was sent, rows in the pre-044 form (and traces holding both forms) read the
 * same, and expiry still finds them.
 */
import { describe, expect, it } from 'vitest';
import { migrate, openDatabase } from '../../src/storage/db.js';
import { MIGRATIONS } from '../../src/storage/migrations/index.js';
import { createSqliteTelemetryWriter } from '../../src/storage/sqlite-telemetry-store.js';
import { withLogRollups } from '../../src/storage/log-rollups.js';
import { createLogsReadRepo } from '../../src/storage/logs-read-repo.js';
import { createTracesReadRepo } from '../../src/storage/traces-read-repo.js';
import { createRetentionRepo, EXPIRY_TARGETS } from '../../src/storage/retention-repo.js';
import type { Db } from '../../src/storage/db.js';
import type { Attributes, LogRecordOut, SpanRecord } from '../../src/domain/telemetry-types.js';

const T0 = Date.UTC(2026, 0, 1, 10) + 0.4856;
const scope = { name: 'app', version: '1', attributes: {} };
const RES: Attributes[] = [
  { 'service.name': 'orders', 'service.version': '2.1.0', 'deployment.environment.name': 'prod' },
  { 'service.name': 'orders', 'service.version': 3 },
  { 'service.name': 'orders' },
];
const TRACE = '4bf92f3577b34da6a3ce929d0e0e4736';
const TRACE2 = '0af7651916cd43dd8448eb211c80319c';
const ODD_TRACE = 'not-a-hex-trace-id';

const span = (traceId: string, i: number, o: Partial<SpanRecord> = {}): SpanRecord => ({
  resource: RES[i % RES.length]!, scope, service_name: 'orders', trace_id: traceId, span_id: `00f067aa0ba902c${i}`, parent_span_id: i ? '00f067aa0ba902c0' : null,
  trace_state: '', name: 'GET /x', kind: i ? 3 : 2, start_ms: T0 + i * 1.337, end_ms: T0 + i * 1.337 + 6.99658203125, status_code: 0, status_message: '',
  attributes: {}, events: [], links: [], ...o,
});

/** Name equal to the operation or not, end equal to start + duration or not (an end before the start). */
const SPANS = (traceId: string): SpanRecord[] => [
  span(traceId, 0),
  span(traceId, 1, { name: 'GET', attributes: { 'http.request.method': 'GET', 'http.route': '/users/{id}' } }),
  span(traceId, 2, { end_ms: T0 - 5, status_code: 2 }),
  span(traceId, 3, { name: 'SELECT orders', start_ms: 1e-7, end_ms: 0.1 }),
];

const log = (i: number, severity_number: number, severity_text: string): LogRecordOut => ({
  resource: RES[0]!, scope, service_name: 'orders', time_ms: T0 + i, observed_time_ms: T0 + i + 0.25, severity_number, severity_text,
  body: `message ${i}`, attributes: { i }, trace_id: null, span_id: null, flags: 0, event_name: '',
});
const LOGS = [log(0, 9, 'INFO'), log(1, 9, 'Information'), log(2, 10, 'INFO2'), log(3, 17, 'ERROR'), log(4, 0, ''), log(5, 13, 'warn')];
LOGS[4]!.observed_time_ms = LOGS[4]!.time_ms; // sent without its own time: stored once

function reads(db: Db) {
  const traces = createTracesReadRepo(db);
  const logs = createLogsReadRepo(db);
  const byTrace = (t: string) => ({ full: traces.traceSpansFull('1', t, 100), lite: traces.traceSpansLite('1', t), agg: traces.traceAggregate('1', t) });
  return {
    a: byTrace(TRACE),
    b: byTrace(TRACE2),
    odd: byTrace(ODD_TRACE),
    stream: [...traces.spanStream('1', { kind: 'all' }, 0, T0 + 60_000)].map((r) => r.trace_id).sort(),
    errors: [...traces.spanStream('1', { kind: 'errors' }, 0, T0 + 60_000)].map((r) => r.trace_id).sort(),
    map: traces.mapSpans('1', 0, T0 + 60_000, 0, T0 + 60_000).map((s) => `${s.trace_id}/${s.span_id}`).sort(),
    parent: traces.parentService('1', TRACE, '00f067aa0ba902c0'),
    children: traces.childServices('1', TRACE2, '00f067aa0ba902c0'),
    logs: logs.search('1', { fromMs: T0 - 1000, toMs: T0 + 1000 }, { limit: 10, offset: 0 }).rows.map((r) => [r.severity_number, r.severity_text, r.observed_ms]),
  };
}

function write(db: Db) {
  const w = withLogRollups(db, createSqliteTelemetryWriter(db));
  w.insertSpans('1', [...SPANS(TRACE), ...SPANS(TRACE2), span(ODD_TRACE, 0)], 'otlp', T0);
  w.insertLogs('1', LOGS, 'otlp', T0);
}

/** Turns rows written by this version back into the form of the writer before migration 044. */
function toPre044(db: Db) {
  db.exec(`UPDATE spans SET trace_id = CASE WHEN typeof(trace_id) = 'blob' THEN lower(hex(trace_id)) ELSE trace_id END,
      name = CASE WHEN typeof(name) = 'blob' THEN operation ELSE name END,
      end_ms = CASE WHEN typeof(end_ms) = 'blob' THEN start_ms + duration_ms ELSE end_ms END,
      service_version = COALESCE((SELECT CASE WHEN json_type(r.attributes, '$."service.version"') = 'text' THEN json_extract(r.attributes, '$."service.version"') ELSE '' END
        FROM resources r WHERE r.id = spans.resource_id), '')
    ;
    UPDATE trace_chunks SET trace_id = lower(hex(trace_id)) WHERE typeof(trace_id) = 'blob';
    UPDATE logs SET severity_text = CASE severity_number WHEN 9 THEN 'INFO' WHEN 17 THEN 'ERROR' END WHERE typeof(severity_text) = 'blob';
    UPDATE logs SET observed_ms = time_ms WHERE typeof(observed_ms) = 'blob';`);
}

describe('compact span and log rows (migration 044)', () => {
  it('stores less and reads back exactly what was sent', () => {
    const db = openDatabase(':memory:');
    write(db);
    const stored = db.prepare(`SELECT typeof(trace_id) AS t, typeof(name) AS n, typeof(end_ms) AS e, typeof(service_version) AS v FROM spans ORDER BY rowid`).all();
    expect(stored.slice(0, 4)).toEqual([
      { t: 'blob', n: 'blob', e: 'blob', v: 'blob' },
      { t: 'blob', n: 'text', e: 'blob', v: 'blob' },
      { t: 'blob', n: 'blob', e: 'real', v: 'blob' }, // end before start: duration 0
      { t: 'blob', n: 'blob', e: 'blob', v: 'blob' },
    ]);
    expect(stored[8]).toMatchObject({ t: 'text' }); // not an OTLP hex id: kept as sent
    expect(db.prepare("SELECT count(*) FROM trace_chunks WHERE typeof(trace_id) = 'blob'").pluck().get()).toBe(2);
    expect(db.prepare('SELECT typeof(severity_text) FROM logs ORDER BY id').pluck().all()).toEqual(['blob', 'text', 'text', 'blob', 'text', 'text']);
    expect(db.prepare('SELECT typeof(observed_ms) FROM logs ORDER BY id').pluck().all()).toEqual(['real', 'real', 'real', 'real', 'blob', 'real']);

    const r = reads(db);
    const sent = SPANS(TRACE);
    expect(r.a.full.map((s) => [s.span_id, s.name, s.operation, s.start_ms, s.end_ms, s.duration_ms, s.service_version])).toEqual(
      [...sent].sort((x, y) => x.start_ms - y.start_ms).map((s) => [
        s.span_id, s.name, s.name === 'GET' ? 'GET /users/{id}' : s.name, s.start_ms, s.end_ms, Math.max(0, s.end_ms - s.start_ms),
        typeof s.resource['service.version'] === 'string' ? s.resource['service.version'] : '',
      ]),
    );
    const bySpan = (rows: { span_id: string; name: string; end_ms: number }[]) => rows.map((s) => [s.span_id, s.name, s.end_ms]).sort();
    expect(bySpan(r.a.lite)).toEqual(bySpan(r.a.full));
    expect(r.a.agg).toMatchObject({ span_count: 4, error_count: 1 });
    expect(r.odd.full.map((s) => s.name)).toEqual(['GET /x']);
    expect(r.stream).toEqual([...Array(4).fill(TRACE2), ...Array(4).fill(TRACE), ODD_TRACE].sort());
    expect(r.errors).toEqual([TRACE2, TRACE].sort());
    expect(r.map).toContain(`${TRACE}/00f067aa0ba902c1`);
    expect(r.parent).toBe('orders');
    expect(r.children).toEqual(['orders']);
    expect(r.logs.reverse()).toEqual(LOGS.map((l) => [l.severity_number, l.severity_text, l.observed_time_ms]));
    db.close();
  });

  it('reads rows in the form before 044, and traces with chunks of both forms, the same', () => {
    const now = openDatabase(':memory:');
    write(now);
    const expected = reads(now);
    now.close();

    // The whole database in the old form, then migrated (the later migrations, which the current
    // writer needs and which do not touch spans or logs, are there already).
    const old = openDatabase(':memory:', { migrations: MIGRATIONS.filter((m) => m.version !== 44) });
    write(old);
    toPre044(old);
    expect(old.prepare("SELECT count(*) FROM spans WHERE typeof(trace_id) = 'blob' OR typeof(name) = 'blob'").pluck().get()).toBe(0);
    migrate(old);
    expect(old.prepare('SELECT count(*) FROM schema_migrations WHERE version = 44').pluck().get()).toBe(1);
    expect(reads(old)).toEqual(expected);
    // More spans of the same trace after the upgrade: the trace now has chunks of both forms.
    const w = createSqliteTelemetryWriter(old);
    w.insertSpans('1', [span(TRACE, 7, { name: 'late' })], 'otlp', T0);
    expect(old.prepare('SELECT group_concat(typeof(trace_id)) FROM (SELECT trace_id FROM trace_chunks ORDER BY first_rowid)').pluck().get()).toContain('text,text,text,blob');
    const traces = createTracesReadRepo(old);
    expect(traces.traceSpansFull('1', TRACE, 100).map((s) => s.name)).toEqual([...expected.a.full.map((s) => s.name), 'late']);
    expect(traces.traceAggregate('1', TRACE).span_count).toBe(5);
    expect(traces.childServices('1', TRACE, '00f067aa0ba902c0')).toEqual(['orders']);
    old.close();
  });

  it('expires spans, chunks and logs of the compact form', () => {
    const db = openDatabase(':memory:');
    write(db);
    const retention = createRetentionRepo(db);
    for (const table of ['spans', 'trace_chunks', 'logs']) retention.expireBatch(EXPIRY_TARGETS.find((t) => t.table === table)!, '1', T0 + 60_000, 100);
    expect(db.prepare('SELECT (SELECT count(*) FROM spans) + (SELECT count(*) FROM trace_chunks) + (SELECT count(*) FROM logs)').pluck().get()).toBe(0);
    expect(db.prepare('SELECT coalesce(sum(n), 0) FROM log_counts_1m').pluck().get()).toBe(0);
    db.close();
  });
});
