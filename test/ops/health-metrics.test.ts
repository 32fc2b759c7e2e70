/**
 * Health, readiness and self-metrics: /healthz and /readyz answer without credentials or data,
 * /readyz fails (503) when the database cannot take a write, /metrics is off by default, guarded
 * by its token, and parses with a real Prometheus text parser; system.status serves owners; and one
 * Sightline can watch another through the OTLP push.
 */
import Database from 'better-sqlite3';
import parsePrometheusTextFormat from 'parse-prometheus-text-format';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { api, startTestServer, type TestServer } from '../helpers/server.js';
import { sendLogs } from '../operations/telemetry-fixtures.js';

interface PromFamily {
  name: string;
  type: string;
  metrics: Array<{ labels?: Record<string, string>; value?: string; buckets?: Record<string, string>; count?: string; sum?: string }>;
}

let t: TestServer;
const TOKEN = 'metrics-token-for-tests';

beforeAll(async () => {
  t = await startTestServer({ config: { metrics: { token: TOKEN, public: false, otlpUrl: null, otlpHeaders: {}, otlpIntervalMs: 60_000 } } });
});
afterAll(() => t.close());

describe('/healthz and /readyz', () => {
  it('answer without credentials and without data', async () => {
    const live = await fetch(`${t.url}/healthz`);
    expect(live.status).toBe(200);
    expect(await live.json()).toEqual({ status: 'ok' });
    const ready = await fetch(`${t.url}/readyz`);
    expect(ready.status).toBe(200);
    expect(await ready.json()).toEqual({ status: 'ready', checks: { database: { ok: true }, migrations: { ok: true } } });
  });

  it('/readyz answers 503 naming the database while it cannot take a write, and recovers', async () => {
    const other = new Database(t.s.config.dbFile);
    other.exec('BEGIN IMMEDIATE'); // another writer holds the write lock
    try {
      const r = await fetch(`${t.url}/readyz`);
      expect(r.status).toBe(503);
      const body = (await r.json()) as any;
      expect(body.status).toBe('not_ready');
      expect(body.checks.database).toEqual({ ok: false, detail: expect.stringMatching(/^database not writable \(SQLITE_BUSY/) });
      expect(body.checks.migrations).toEqual({ ok: true });
    } finally {
      other.exec('ROLLBACK');
      other.close();
    }
    expect((await fetch(`${t.url}/readyz`)).status).toBe(200);
  });
});

describe('/metrics', () => {
  it('is off unless configured', async () => {
    const plain = await startTestServer();
    try {
      const r = await fetch(`${plain.url}/metrics`);
      expect(r.status).toBe(404);
      expect(((await r.json()) as any).code).toBe('metrics_disabled');
    } finally {
      await plain.close();
    }
  });

  it('asks for its bearer token', async () => {
    expect((await fetch(`${t.url}/metrics`)).status).toBe(401);
    expect((await fetch(`${t.url}/metrics`, { headers: { authorization: 'Bearer wrong' } })).status).toBe(401);
    // An API key is not the metrics token.
    expect((await fetch(`${t.url}/metrics`, { headers: { authorization: `Bearer ${t.keys.admin}` } })).status).toBe(401);
  });

  it('exposes requests by operation and status, ingest items by signal, database size, parsed by a Prometheus parser', async () => {
    for (let i = 0; i < 3; i++) expect((await api(t, 'GET', `/v1/projects/${t.projectId}/feedback`, { key: t.keys.admin })).status).toBe(200);
    expect((await api(t, 'GET', `/v1/projects/${t.projectId}/feedback`, { key: t.keys.ingest })).status).toBe(403);
    await sendLogs(t, [{ resource: { service: 'm' }, logs: [0, 1, 2, 3].map((i) => ({ at: Date.now() - i, body: `line ${i}` })) }]);

    const r = await fetch(`${t.url}/metrics`, { headers: { authorization: `Bearer ${TOKEN}` } });
    expect(r.status).toBe(200);
    expect(r.headers.get('content-type')).toMatch(/^text\/plain; version=0\.0\.4/);
    const text = await r.text();
    const families = parsePrometheusTextFormat(text) as PromFamily[];
    const family = (name: string) => families.find((f) => f.name === name)!;
    const value = (name: string, labels: Record<string, string>) => Number(family(name).metrics.find((m) => Object.entries(labels).every(([k, v]) => m.labels?.[k] === v))?.value);

    expect(family('sightline_http_requests_total').type).toBe('COUNTER');
    expect(value('sightline_http_requests_total', { operation: 'feedback.list', status: '200' })).toBe(3);
    expect(value('sightline_http_requests_total', { operation: 'feedback.list', status: '403' })).toBe(1);
    expect(value('sightline_http_requests_total', { operation: 'POST /ingest/v1/logs', status: '200' })).toBe(1);
    const latency = family('sightline_http_request_duration_seconds');
    expect(latency.type).toBe('HISTOGRAM');
    expect(latency.metrics.every((m) => m.buckets && '+Inf' in m.buckets)).toBe(true);
    // (the parser leaves histogram labels out; the series itself says how many were timed)
    expect(text).toMatch(/^sightline_http_request_duration_seconds_count\{operation="feedback\.list"\} 4$/m);
    expect(value('sightline_ingest_items_total', { signal: 'logs', outcome: 'accepted' })).toBe(4);
    expect(Number(family('sightline_db_bytes').metrics[0]!.value)).toBeGreaterThan(0);
    expect(family('sightline_db_wal_bytes').type).toBe('GAUGE');
    expect(Number(family('sightline_write_queue_depth').metrics[0]!.value)).toBe(0);
    // Node's own process metrics come along.
    expect(family('sightline_process_resident_memory_bytes')).toBeTruthy();
  });
});

describe('system.status', () => {
  it('gives owners the same figures as JSON', async () => {
    const r = await api(t, 'GET', `/v1/projects/${t.projectId}/system/status`, { key: t.keys.admin });
    expect(r.status).toBe(200);
    expect(r.body).toMatchObject({ ready: true, checks: { database: { ok: true } }, database: { schema: { pending: 0 } }, write_queue_depth: 0, clickhouse: null });
    expect((r.body as { requests: Array<{ operation: string }> }).requests.some((x) => x.operation === 'feedback.list')).toBe(true);
  });

  it('refuses a key that is not `*`, even with project:write', async () => {
    const created = await api(t, 'POST', `/v1/projects/${t.projectId}/api-keys`, { key: t.keys.admin, body: { label: 'pw', scopes: ['project:write'] } });
    expect(created.status).toBe(201);
    const r = await api(t, 'GET', `/v1/projects/${t.projectId}/system/status`, { key: (created.body as { secret: string }).secret });
    expect(r.status).toBe(403);
    expect((r.body as { code: string }).code).toBe('owner_required');
  });
});

describe('OTLP push of the self-metrics', () => {
  it('lets one Sightline watch another: the figures arrive as metrics in the watching project', async () => {
    const watcher = await startTestServer();
    const watched = await startTestServer({
      config: { metrics: { token: null, public: false, otlpUrl: `${watcher.url}/ingest/v1/metrics`, otlpHeaders: { 'x-service-key': watcher.keys.ingest }, otlpIntervalMs: 3_600_000 } },
    });
    try {
      const server = await watched.s.listen();
      expect((await fetch(`${watched.url}/v1/projects/${watched.projectId}/feedback`, { headers: { 'x-service-key': watched.keys.admin } })).status).toBe(200);
      server.unref();
      // Closing pushes a last time.
      await watched.close();
      const list = await api(watcher, 'GET', `/v1/projects/${watcher.projectId}/metrics?q=sightline_http_requests_total`, { key: watcher.keys.admin });
      expect(list.status).toBe(200);
      const rows = (list.body as { data: Array<{ metric_name: string; service_name: string; type: string }> }).data;
      expect(rows).toContainEqual(expect.objectContaining({ metric_name: 'sightline_http_requests_total', service_name: 'sightline', type: 'sum' }));
      const hist = await api(watcher, 'GET', `/v1/projects/${watcher.projectId}/metrics?q=sightline_http_request_duration_seconds`, { key: watcher.keys.admin });
      expect((hist.body as { data: Array<{ type: string }> }).data[0]?.type).toBe('hist');
    } finally {
      await watcher.close();
    }
  });
});
