/**
 * Retention and the disk budget with an injected clock: data older than its period goes in batches
 * while reads and writes continue; owners set periods per project within the server cap; freed space
 * goes back to the file system; the budget deletes the oldest telemetry and never control data; a
 * full database answers 503 and keeps everything it acknowledged.
 */
import { statSync } from 'node:fs';
import { afterEach, describe, expect, it } from 'vitest';
import { api, startTestServer, type TestServer } from '../helpers/server.js';
import { sendEvent } from '../operations/errors-fixtures.js';
import { logsPayload, sendLogs, sendMetrics } from '../operations/telemetry-fixtures.js';

const DAY = 86_400_000;
const T0 = Date.parse('2026-06-01T00:00:00.000Z');
let clock = T0;
let t: TestServer | null = null;
afterEach(async () => {
  await t?.close();
  t = null;
});

const start = (retention: Partial<{ maxDays: number; batchRows: number; maxDbBytes: number }> = {}) =>
  startTestServer({ now: () => clock, config: { retention: { maxDays: 400, intervalMs: 0, batchRows: 50, maxDbBytes: 0, ...retention } } });

const count = (s: TestServer, sql: string, ...args: unknown[]) => s.s.db.prepare(sql).pluck().get(...args) as number;

async function logsAt(s: TestServer, at: number, n: number, word: string, size = 0) {
  const pad = size ? ' ' + 'x'.repeat(size) : '';
  for (let i = 0; i < n; i += 200) {
    await sendLogs(s, [{ resource: { service: 'svc' }, logs: Array.from({ length: Math.min(200, n - i) }, (_, j) => ({ at: at + i + j, body: `${word} ${i + j}${pad}` })) }]);
  }
}

describe('retention', () => {
  it('deletes what is older than its period in batches while reads and writes go on, and keeps group counts', async () => {
    clock = T0;
    t = await start();
    const s = t;
    await logsAt(s, T0 - 40 * DAY, 400, 'ancient');
    await logsAt(s, T0 - 2 * DAY, 30, 'recent');
    await sendMetrics(s, [{ resource: { service: 'svc' }, metrics: [{ name: 'q.depth', gauge: [{ at: T0 - 40 * DAY, value: 1 }, { at: T0 - DAY, value: 2 }] }] }]);
    for (const at of [T0 - 100 * DAY, T0 - 95 * DAY, T0 - DAY]) await sendEvent(s, { type: 'Boom', fn: 'f', service: 'svc', at });

    // The pass runs while requests keep coming.
    const pass = s.s.retention.runOnce();
    const during = await Promise.all([
      api(s, 'GET', `/v1/projects/${s.projectId}/logs?q=recent&from=${new Date(T0 - 3 * DAY).toISOString()}`, { key: s.keys.admin }),
      logsAt(s, T0 - DAY, 10, 'during'),
      api(s, 'GET', `/v1/projects/${s.projectId}/errors`, { key: s.keys.admin }),
    ]);
    const report = await pass;
    expect(during[0].status).toBe(200);
    expect(during[2].status).toBe(200);
    expect(report.expired).toEqual({ logs: 400, metric_points: 1, error_events: 2 });
    expect(report.budget.state).toBe('off');

    expect(count(s, 'SELECT count(*) FROM logs')).toBe(40);
    const old = await api(s, 'GET', `/v1/projects/${s.projectId}/logs?q=ancient&from=${new Date(T0 - 50 * DAY).toISOString()}`, { key: s.keys.admin });
    expect(old.body.data).toEqual([]);
    expect(count(s, 'SELECT count(*) FROM metric_points')).toBe(1);
    // The group outlives its expired events: lifetime count and first seen stay.
    const groups = await api(s, 'GET', `/v1/projects/${s.projectId}/errors`, { key: s.keys.admin });
    expect(groups.body.data).toHaveLength(1);
    expect(groups.body.data[0]).toMatchObject({ event_count: 3, first_seen: new Date(T0 - 100 * DAY).toISOString() });
    expect(count(s, 'SELECT count(*) FROM error_events')).toBe(1);
    // Histogram rollups follow the logs that remain.
    const hist = await api(s, 'GET', `/v1/projects/${s.projectId}/logs/histogram?from=${new Date(T0 - 60 * DAY).toISOString()}&to=${new Date(T0).toISOString()}&step=1d`, { key: s.keys.admin });
    expect(hist.body.total).toBe(40);
  });

  it('lets an owner set periods per project within the server cap', async () => {
    clock = T0;
    t = await start({ maxDays: 120 });
    const s = t;
    const got = await api(s, 'GET', `/v1/projects/${s.projectId}/retention`, { key: s.keys.admin });
    expect(got.status).toBe(200);
    expect(got.body.max_days).toBe(120);
    expect(got.body.kinds.logs).toEqual({ days: 30, default: 30, source: 'default' });
    expect(got.body.kinds.error_events).toEqual({ days: 90, default: 90, source: 'default' });

    const set = await api(s, 'PUT', `/v1/projects/${s.projectId}/retention`, { key: s.keys.admin, body: { logs: 7 } });
    expect(set.status).toBe(200);
    expect(set.body.kinds.logs).toEqual({ days: 7, default: 30, source: 'project' });
    expect((await api(s, 'PUT', `/v1/projects/${s.projectId}/retention`, { key: s.keys.admin, body: { logs: 121 } })).status).toBe(400);
    expect((await api(s, 'PUT', `/v1/projects/${s.projectId}/retention`, { key: s.keys.admin, body: { logz: 7 } })).status).toBe(400);
    const key = await api(s, 'POST', `/v1/projects/${s.projectId}/api-keys`, { key: s.keys.admin, body: { label: 'pw', scopes: ['project:write', 'read'] } });
    const denied = await api(s, 'PUT', `/v1/projects/${s.projectId}/retention`, { key: key.body.secret, body: { logs: 1 } });
    expect(denied.status).toBe(403);
    expect(denied.body.code).toBe('owner_required');

    await logsAt(s, T0 - 10 * DAY, 20, 'tenday');
    await logsAt(s, T0 - DAY, 5, 'yesterday');
    await s.s.retention.runOnce();
    expect(count(s, 'SELECT count(*) FROM logs')).toBe(5);
    // null: back to the default
    const reset = await api(s, 'PUT', `/v1/projects/${s.projectId}/retention`, { key: s.keys.admin, body: { logs: null } });
    expect(reset.body.kinds.logs.source).toBe('default');
  });

  it('expires the other domains\' telemetry too (capture events here), every target compiling at start', async () => {
    clock = T0;
    t = await start();
    const s = t;
    const ins = s.s.db.prepare("INSERT INTO capture_events (project_id, ts, event, distinct_id, properties, received_at) VALUES (?, ?, '$pageview', 'd1', '{}', ?)");
    ins.run(Number(s.projectId), T0 - 401 * DAY, T0 - 401 * DAY);
    ins.run(Number(s.projectId), T0 - 10 * DAY, T0 - 10 * DAY);
    const report = await s.s.retention.runOnce();
    expect(report.expired).toEqual({ capture_events: 1 });
    expect(count(s, 'SELECT count(*) FROM capture_events')).toBe(1);
    const kinds = (await api(s, 'GET', `/v1/projects/${s.projectId}/retention`, { key: s.keys.admin })).body.kinds;
    expect(kinds.agent_observations).toEqual({ days: 90, default: 90, source: 'default' });
    expect(kinds.revenue_ledger).toEqual({ days: 400, default: 400, source: 'default' });
  });

  it('expiring logs keeps the full-text index consistent and its merge settings as they were', async () => {
    clock = T0;
    t = await start({ batchRows: 100 });
    const s = t;
    s.s.db.exec("INSERT INTO logs_fts (logs_fts, rank) VALUES ('automerge', 8)");
    s.s.db.exec("INSERT INTO logs_fts2 (logs_fts2, rank) VALUES ('automerge', 6)");
    await logsAt(s, T0 - 40 * DAY, 1000, 'expiring');
    await logsAt(s, T0 - DAY, 20, 'staying');
    const report = await s.s.retention.runOnce();
    expect(report.expired.logs).toBe(1000);
    const settings = Object.fromEntries(s.s.db.prepare("SELECT k, v FROM logs_fts_config WHERE k IN ('automerge', 'deletemerge')").raw().all() as [string, number][]);
    expect(settings).toEqual({ automerge: 8, deletemerge: 10 });
    // New logs' full-text rows are in logs_fts2 (migration 050).
    const settings2 = Object.fromEntries(s.s.db.prepare("SELECT k, v FROM logs_fts2_config WHERE k IN ('automerge', 'deletemerge')").raw().all() as [string, number][]);
    expect(settings2).toEqual({ automerge: 6, deletemerge: 10 });
    expect(s.s.db.prepare("SELECT count(*) FROM logs_fts2 WHERE logs_fts2 MATCH 'expiring'").pluck().get()).toBe(0);
    expect(s.s.db.prepare("SELECT count(*) FROM logs_fts2 WHERE logs_fts2 MATCH 'staying'").pluck().get()).toBe(20);
    s.s.db.exec("INSERT INTO logs_fts (logs_fts, rank) VALUES ('integrity-check', 0)");
    s.s.db.exec("INSERT INTO logs_fts2 (logs_fts2, rank) VALUES ('integrity-check', 0)");
    const from = new Date(T0 - 50 * DAY).toISOString();
    expect((await api(s, 'GET', `/v1/projects/${s.projectId}/logs?q=expiring&from=${from}`, { key: s.keys.admin })).body.data).toEqual([]);
    const staying = await api(s, 'GET', `/v1/projects/${s.projectId}/logs?q=staying&from=${from}&limit=100`, { key: s.keys.admin });
    expect(staying.body.data).toHaveLength(20);
  });

  it('returns the freed space to the file system', async () => {
    clock = T0;
    t = await start({ batchRows: 500 });
    const s = t;
    await logsAt(s, T0 - 60 * DAY, 3000, 'bulky', 600);
    s.s.db.pragma('wal_checkpoint(TRUNCATE)');
    const before = statSync(s.s.config.dbFile).size;
    const report = await s.s.retention.runOnce();
    s.s.db.pragma('wal_checkpoint(TRUNCATE)');
    const after = statSync(s.s.config.dbFile).size;
    expect(report.expired.logs).toBe(3000);
    expect(report.reclaimed_pages).toBeGreaterThan(0);
    expect(after).toBeLessThan(before / 2);
  });
});

describe('disk budget', () => {
  it('deletes the oldest telemetry above the high-water mark and never control data', async () => {
    clock = T0;
    t = await start({ batchRows: 200 });
    const s = t;
    for (let i = 0; i < 5; i++) await api(s, 'POST', `/v1/projects/${s.projectId}/feedback`, { key: s.keys.ingest, body: { message: `keep me ${i}` } });
    const baseline = s.s.services.retention.usedBytes();
    await logsAt(s, T0 - 5 * DAY, 1500, 'older', 400);
    await logsAt(s, T0 - 1 * DAY, 1500, 'newer', 400);
    const full = s.s.services.retention.usedBytes();
    // A budget that the data crosses: the high-water mark sits below what is stored now.
    const budget = Math.round(baseline + (full - baseline) * 0.8);
    (s.s.config.retention as { maxDbBytes: number }).maxDbBytes = budget;
    const report = await s.s.retention.runOnce();
    expect(report.budget.state).toBe('trimmed');
    expect(report.budget.used_bytes).toBeLessThanOrEqual(budget * 0.8);
    expect(report.trimmed.logs).toBeGreaterThan(0);
    // Oldest first: the older logs went before any newer one.
    const olderLeft = count(s, "SELECT count(*) FROM logs WHERE body LIKE 'older%'");
    const newerLeft = count(s, "SELECT count(*) FROM logs WHERE body LIKE 'newer%'");
    expect(olderLeft).toBeLessThan(1500);
    if (newerLeft < 1500) expect(olderLeft).toBe(0);
    expect(count(s, 'SELECT count(*) FROM feedback')).toBe(5);
    expect(count(s, 'SELECT count(*) FROM api_keys')).toBeGreaterThan(0);
    // Ingestion keeps working.
    await logsAt(s, T0, 5, 'afterwards');
  });

  it('answers 503 when the database is full and loses nothing it acknowledged', async () => {
    clock = T0;
    t = await start();
    const s = t;
    await logsAt(s, T0 - DAY, 50, 'before');
    const pages = s.s.db.pragma('page_count', { simple: true }) as number;
    s.s.db.pragma(`max_page_count = ${pages}`);
    try {
      const big = logsPayload([{ resource: { service: 'svc' }, logs: Array.from({ length: 300 }, (_, i) => ({ at: T0 - 1000 + i, body: `lost ${i} ${'y'.repeat(3000)}` })) }]);
      const r = await fetch(`${s.url}/ingest/v1/logs`, { method: 'POST', headers: { 'content-type': 'application/json', 'x-service-key': s.keys.ingest }, body: JSON.stringify(big) });
      expect(r.status).toBe(503);
      expect(r.headers.get('retry-after')).toBe('30');
      const body = (await r.json()) as { code: string; message: string };
      expect(body.code).toBe('storage_unavailable');
      expect(body.message).toMatch(/disk is full/);
      const ready = await fetch(`${s.url}/readyz`);
      expect([200, 503]).toContain(ready.status);
    } finally {
      s.s.db.pragma('max_page_count = 4294967294');
    }
    expect(count(s, "SELECT count(*) FROM logs WHERE body LIKE 'before%'")).toBe(50);
    // Nothing of the refused request was half-stored.
    expect(count(s, "SELECT count(*) FROM logs WHERE body LIKE 'lost%'")).toBe(0);
    expect(s.s.db.pragma('integrity_check', { simple: true })).toBe('ok');
    const again = await api(s, 'POST', `/v1/projects/${s.projectId}/feedback`, { key: s.keys.ingest, body: { message: 'after the disk was freed' } });
    expect(again.status).toBe(201);
  });
});
