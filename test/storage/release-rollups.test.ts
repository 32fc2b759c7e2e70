/**
 * The release rollups kept at ingest (migration 014, src/storage/release-rollups.ts): counts and
 * sketches add up across batches, activity segments merge across batches and out-of-order arrivals,
 * and spans stored before the migration are backfilled to the hour (start_approximate).
 */
import { mkdtempSync, rmSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import Database from 'better-sqlite3';
import { afterEach, describe, expect, it } from 'vitest';
import { migrate, openDatabase, type Db } from '../../src/storage/db.js';
import { MIGRATIONS } from '../../src/storage/migrations/index.js';
import { createServices } from '../../src/core/services.js';
import { loadConfig } from '../../src/core/config.js';
import { decodeSketch, quantiles } from '../../src/domain/releases/sketch.js';
import { buildReleases } from '../../src/domain/releases/build.js';
import type { SpanRecord } from '../../src/domain/telemetry-types.js';

const MIN = 60_000;
const T0 = Date.parse('2026-06-01T00:00:00.000Z');
const dirs: string[] = [];
afterEach(() => {
  for (const d of dirs.splice(0)) rmSync(d, { recursive: true, force: true });
});
function tempFile(): string {
  const d = mkdtempSync(join(tmpdir(), 'sightline-rel-'));
  dirs.push(d);
  return join(d, 'x.db');
}

let n = 0;
function span(version: string, at: number, opts: { ms?: number; error?: boolean; child?: boolean } = {}): SpanRecord {
  n++;
  return {
    resource: { 'service.name': 'api', 'service.version': version, 'deployment.environment.name': 'prod' },
    scope: { name: 's', version: '1', attributes: {} },
    service_name: 'api',
    trace_id: n.toString(16).padStart(32, '0'),
    span_id: n.toString(16).padStart(16, '0'),
    parent_span_id: opts.child ? 'ab'.repeat(8) : null,
    trace_state: '',
    name: 'GET /x',
    kind: opts.child ? 1 : 2,
    start_ms: at,
    end_ms: at + (opts.ms ?? 10),
    status_code: opts.error ? 2 : 0,
    status_message: '',
    attributes: {},
    events: [],
    links: [],
  };
}

const activity = (db: Db) =>
  (db.prepare('SELECT version, start_ms, end_ms, approx FROM release_activity ORDER BY version, start_ms').all() as { version: string; start_ms: number; end_ms: number; approx: number }[]).map(
    (r) => [r.version, (r.start_ms - T0) / MIN, (r.end_ms - T0) / MIN, r.approx],
  );

describe('release rollups at ingest', () => {
  it('adds counts and merges latency sketches across batches; child spans count as spans, not requests', async () => {
    const db = openDatabase(tempFile());
    const s = createServices(db, loadConfig({}, { dbFile: ':memory:' }));
    s.telemetry.insertSpans('1', [span('1.0', T0 + 1000, { ms: 100 }), span('1.0', T0 + 2000, { ms: 200, error: true }), span('1.0', T0 + 3000, { child: true, error: true })], 'otlp', T0);
    s.telemetry.insertSpans('1', [span('1.0', T0 + 4000, { ms: 300 }), span('', T0 + 5000, { ms: 400 })], 'otlp', T0);
    const rows = db.prepare('SELECT version, spans, requests, errors, sketch FROM release_rollup_1m ORDER BY version').all() as { version: string; spans: number; requests: number; errors: number; sketch: string }[];
    expect(rows.map((r) => [r.version, r.spans, r.requests, r.errors])).toEqual([['', 1, 1, 0], ['1.0', 4, 3, 1]]);
    const [p50, p99] = quantiles(decodeSketch(rows[1]!.sketch), [0.5, 0.99]);
    expect(Math.abs(p50! - 200) / 200).toBeLessThanOrEqual(0.01);
    expect(Math.abs(p99! - 300) / 300).toBeLessThanOrEqual(0.01);
    const hour = db.prepare('SELECT sum(requests) AS r FROM release_rollup_1h').get() as { r: number };
    expect(hour.r).toBe(4);
    expect(await s.releases.totals('1', 'api', 'prod', T0, T0 + MIN)).toMatchObject({ requests: 4, errors: 1 });
    db.close();
  });

  it('keeps activity segments apart at 15 minutes of silence and merges them when a late batch fills the gap', () => {
    const db = openDatabase(tempFile());
    const s = createServices(db, loadConfig({}, { dbFile: ':memory:' }));
    s.telemetry.insertSpans('1', [span('1.0', T0), span('1.0', T0 + 10 * MIN), span('1.0', T0 + 40 * MIN)], 'otlp', T0);
    expect(activity(db)).toEqual([['1.0', 0, 10, 0], ['1.0', 40, 40, 0]]);
    s.telemetry.insertSpans('1', [span('1.0', T0 + 55 * MIN)], 'otlp', T0); // exactly 15 min later: a new segment
    expect(activity(db)).toEqual([['1.0', 0, 10, 0], ['1.0', 40, 40, 0], ['1.0', 55, 55, 0]]);
    s.telemetry.insertSpans('1', [span('1.0', T0 + 20 * MIN), span('1.0', T0 + 30 * MIN)], 'otlp', T0); // late arrivals join 0–10 and 40
    expect(activity(db)).toEqual([['1.0', 0, 40, 0], ['1.0', 55, 55, 0]]);
    db.close();
  });

  it('backfills spans stored before the migration to the hour, so their releases start approximately', () => {
    const file = tempFile();
    const raw = new Database(file);
    for (const m of MIGRATIONS.filter((x) => x.version <= 6)) raw.exec(m.sql);
    raw.pragma('user_version = 6');
    const insert = raw.prepare(`INSERT INTO spans (project_id, trace_id, span_id, name, operation, kind, service_name, environment, service_version, start_ms, end_ms, duration_ms,
      status_code, status_message, attributes, resource_id, scope_name, scope_version, trace_state, source, received_ms) VALUES (1, ?, ?, 'x', 'x', 2, 'api', 'prod', ?, ?, ?, 1, 0, '', '{}', 1, '', '', '', 'otlp', 0)`);
    insert.run('t1', 's1', '0.9', T0 + 25 * MIN, T0 + 25 * MIN + 1);
    insert.run('t2', 's2', '0.9', T0 + 50 * MIN, T0 + 50 * MIN + 1);
    insert.run('t3', 's3', '', T0 + 50 * MIN, T0 + 50 * MIN + 1);
    migrate(raw);
    expect(activity(raw)).toEqual([['0.9', 0, 50, 1]]);
    const rows = raw.prepare('SELECT service_name, environment, version, start_ms AS start, end_ms AS end, approx FROM release_activity').all() as never[];
    const [rel] = buildReleases('1', [], (rows as { approx: number }[]).map((r) => ({ ...(r as object), approx: !!r.approx })) as never, T0 + 120 * MIN);
    expect(rel).toMatchObject({ version: '0.9', confidence: 'inferred', started_at: T0, start_approximate: true, first_seen: T0 });
    raw.close();
  });
});
