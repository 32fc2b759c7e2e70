/**
 * A trace's spans are found through trace_chunks (migration 007) rather than a per-span trace index:
 * across batches, after a VACUUM renumbers span rowids, and in a database written before 007.
 */
import Database from 'better-sqlite3';
import { mkdtempSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { describe, expect, it } from 'vitest';
import { migrate, openDatabase, type Db } from '../../src/storage/db.js';
import { MIGRATIONS } from '../../src/storage/migrations/index.js';
import { createSqliteTelemetryWriter } from '../../src/storage/sqlite-telemetry-store.js';
import { createTracesReadRepo } from '../../src/storage/traces-read-repo.js';
import type { SpanRecord } from '../../src/domain/telemetry-types.js';

const T0 = Date.parse('2026-03-01T00:00:00.000Z');
const tmpFile = () => join(mkdtempSync(join(tmpdir(), 'sl-chunks-')), 'db.sqlite');
const resource = { 'service.name': 'api', 'deployment.environment.name': 'prod' };

function span(trace: string, id: string, parent: string | null, start: number, o: Partial<SpanRecord> = {}): SpanRecord {
  return {
    trace_id: trace,
    span_id: id,
    parent_span_id: parent,
    trace_state: '',
    name: `op ${id}`,
    kind: parent ? 3 : 2,
    start_ms: T0 + start,
    end_ms: T0 + start + 10,
    status_code: 0,
    status_message: '',
    attributes: {},
    events: [],
    links: [],
    resource,
    service_name: 'api',
    scope: { name: 's', version: '', attributes: {} },
    ...o,
  } as SpanRecord;
}

const A = 'a'.repeat(32);
const B = 'b'.repeat(32);
const C = 'c'.repeat(32);

/** Trace A in three batches, interleaved with B and C (and A's spans interleaved with theirs inside a batch). */
const BATCHES: SpanRecord[][] = [
  [span(A, 'a1', null, 0), span(B, 'b1', null, 1), span(A, 'a2', 'a1', 2, { service_name: 'db' }), span(C, 'c1', null, 3)],
  [span(B, 'b2', 'b1', 4), span(A, 'a3', 'a1', 5, { status_code: 2, service_name: 'cache' })],
  [span(C, 'c2', 'c1', 6), span(A, 'a4', 'a2', 600_000, { end_ms: T0 + 700_000 })],
];

function ids(rows: { span_id: string }[]) {
  return rows.map((r) => r.span_id).sort();
}

function expectTraceA(db: Db) {
  const repo = createTracesReadRepo(db);
  expect(ids(repo.traceSpansLite('1', A))).toEqual(['a1', 'a2', 'a3', 'a4']);
  expect(repo.traceAggregate('1', A)).toEqual({ span_count: 4, error_count: 1, started_ms: T0, ended_ms: T0 + 700_000 });
  expect(repo.traceSpansFull('1', A, 2).map((s) => s.span_id)).toEqual(['a1', 'a2']);
  expect(repo.traceSpansFull('1', A, 10).map((s) => s.span_id)).toEqual(['a1', 'a2', 'a3', 'a4']);
  expect(repo.parentService('1', A, 'a2')).toBe('db');
  expect(repo.parentService('1', A, 'nope')).toBeNull();
  expect(repo.childServices('1', A, 'a1').sort()).toEqual(['cache', 'db']);
  expect(ids(repo.traceSpansLite('1', B))).toEqual(['b1', 'b2']);
  // Another project never sees the trace.
  expect(repo.traceSpansLite('2', A)).toEqual([]);
  expect(repo.traceAggregate('2', A).span_count).toBe(0);
}

describe('trace chunks', () => {
  it("writes one chunk per trace and batch and reads a trace's spans across batches", () => {
    const db = openDatabase(tmpFile());
    const w = createSqliteTelemetryWriter(db);
    for (const b of BATCHES) w.insertSpans('1', b, 'otlp', T0);
    // A: one chunk per batch it appears in (its spans of a batch are written next to each other).
    expect(db.prepare('SELECT count(*) FROM trace_chunks WHERE trace_id IN (?, unhex(?))').pluck().get(A, A)).toBe(3);
    expect(db.prepare("SELECT count(*) FROM sqlite_master WHERE name = 'spans_trace'").pluck().get()).toBe(0);
    expectTraceA(db);
  });

  it('still finds every span of a trace after its span rowids change (as VACUUM may renumber them)', () => {
    const db = openDatabase(tmpFile());
    const w = createSqliteTelemetryWriter(db);
    w.insertSpans('1', [span('d'.repeat(32), 'd1', null, 0), span('d'.repeat(32), 'd2', 'd1', 0)], 'otlp', T0);
    for (const b of BATCHES) w.insertSpans('1', b, 'otlp', T0);
    db.prepare('DELETE FROM spans WHERE trace_id IN (?, unhex(?))').run('d'.repeat(32), 'd'.repeat(32)); // text or bytes (migration 044)
    db.exec('UPDATE spans SET rowid = rowid - 2'); // what a VACUUM may do to a table without INTEGER PRIMARY KEY
    // The recorded ranges no longer hold A's spans…
    const inRanges = db
      .prepare('SELECT count(*) FROM trace_chunks c JOIN spans s ON s.rowid BETWEEN c.first_rowid AND c.last_rowid WHERE c.trace_id IN (?, unhex(?)) AND s.trace_id = c.trace_id')
      .pluck()
      .get(A, A);
    expect(inRanges).toBeLessThan(4);
    // …and the reads find them by time range instead.
    expectTraceA(db);
  });

  it('backfills chunks when migrating a database written with the per-span trace index', () => {
    const file = tmpFile();
    const old = new Database(file);
    for (const m of MIGRATIONS.filter((m) => m.version <= 6)) old.exec(m.sql);
    old.pragma('user_version = 6');
    const ins = old.prepare(`INSERT INTO spans (project_id, trace_id, span_id, parent_span_id, name, operation, kind, service_name, environment, service_version,
      start_ms, end_ms, duration_ms, status_code, status_message, attributes, events, links, resource_id, scope_name, scope_version, trace_state, source, received_ms)
      VALUES (1, ?, ?, ?, ?, ?, ?, ?, 'prod', '', ?, ?, ?, ?, '', '{}', NULL, NULL, 1, 's', '', '', 'otlp', 0)`);
    // The old writer kept arrival order: the traces' spans interleave.
    for (const s of BATCHES.flat()) ins.run(s.trace_id, s.span_id, s.parent_span_id, s.name, s.name, s.kind, s.service_name, s.start_ms, s.end_ms, s.end_ms - s.start_ms, s.status_code);
    old.close();

    const db = openDatabase(file);
    expect(db.pragma('user_version', { simple: true })).toBe(MIGRATIONS.at(-1)!.version);
    // a1 and a2 are not adjacent (b1 between): separate chunks; every span of A is in one.
    expect(db.prepare('SELECT sum(span_count) FROM trace_chunks WHERE trace_id IN (?, unhex(?))').pluck().get(A, A)).toBe(4);
    expectTraceA(db);
    // Spans written after the migration join the same trace.
    createSqliteTelemetryWriter(db).insertSpans('1', [span(B, 'b3', 'b1', 7)], 'otlp', T0);
    expect(ids(createTracesReadRepo(db).traceSpansLite('1', B))).toEqual(['b1', 'b2', 'b3']);
    migrate(db); // idempotent
  });
});
