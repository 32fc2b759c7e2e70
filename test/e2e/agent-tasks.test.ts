/**
 * Issue 11's yardstick: an incident sent by the real SDKs (two services, a bad release, slow
 * database spans, error logs, a histogram metric, feedback from an affected user), then six everyday
 * debugging tasks answered through the real MCP client with one `search` and one `execute` each —
 * the script written as an agent would, from what the search answered.
 */
import { execFile } from 'node:child_process';
import { promisify } from 'node:util';
import { join } from 'node:path';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import type { Client } from '@modelcontextprotocol/sdk/client/index.js';
import { context, SpanKind, SpanStatusCode, trace } from '@opentelemetry/api';
import { BasicTracerProvider, SimpleSpanProcessor } from '@opentelemetry/sdk-trace-base';
import { OTLPTraceExporter } from '@opentelemetry/exporter-trace-otlp-proto';
import { OTLPLogExporter } from '@opentelemetry/exporter-logs-otlp-proto';
import { OTLPMetricExporter } from '@opentelemetry/exporter-metrics-otlp-proto';
import { LoggerProvider, SimpleLogRecordProcessor } from '@opentelemetry/sdk-logs';
import { MeterProvider, PeriodicExportingMetricReader } from '@opentelemetry/sdk-metrics';
import { resourceFromAttributes } from '@opentelemetry/resources';
import { api, startTestServer, type TestServer } from '../helpers/server.js';
import { execute, inMemoryClient, search } from '../mcp/helpers.js';

const run = promisify(execFile);
let t: TestServer;
let agent: Client;
let traceId = '';

/** One search, then one execute: the search must have offered an operation the script uses. */
async function task(query: string, uses: string[], code: string): Promise<any> {
  const found = await search(agent, query);
  const offered = found.results.map((r: { operationId: string }) => r.operationId);
  expect(offered.some((id: string) => uses.includes(id)), `"${query}" offered ${offered.join(', ')}`).toBe(true);
  const out = await execute(agent, code);
  expect(out.error, JSON.stringify(out.error)).toBeNull();
  for (const id of uses.filter((u) => code.includes(`api.${u}(`))) expect(out.calls.map((c) => c.operationId)).toContain(id);
  return out.result;
}

async function sentryApp(release: string, mode: 'good' | 'bad') {
  const dsn = `http://${t.keys.ingest}@${new URL(t.url).host}/ingest/${t.projectId}`;
  await run(process.execPath, [join(import.meta.dirname, 'fixtures/checkout-app.mjs')], { env: { ...process.env, SIGHTLINE_DSN: dsn, RELEASE: release, MODE: mode }, timeout: 30_000 });
}

async function inventoryService() {
  const headers = { 'x-service-key': t.keys.ingest };
  const resource = resourceFromAttributes({ 'service.name': 'inventory', 'service.version': '3.1.0', 'deployment.environment.name': 'production', 'host.name': 'inv-7' });
  const tracerProvider = new BasicTracerProvider({ resource, spanProcessors: [new SimpleSpanProcessor(new OTLPTraceExporter({ url: `${t.url}/ingest/v1/traces`, headers }))] });
  const loggerProvider = new LoggerProvider({ resource, processors: [new SimpleLogRecordProcessor({ exporter: new OTLPLogExporter({ url: `${t.url}/ingest/v1/logs`, headers }) })] });
  const tracer = tracerProvider.getTracer('inventory');
  const logger = loggerProvider.getLogger('inventory');
  const now = Date.now();
  tracer.startActiveSpan('GET /stock/:sku', { kind: SpanKind.SERVER, startTime: now - 2_000, attributes: { 'http.route': '/stock/:sku' } }, (root) => {
    traceId = root.spanContext().traceId;
    const ctx = trace.setSpan(context.active(), root);
    const db = tracer.startSpan('SELECT stock', { kind: SpanKind.CLIENT, startTime: now - 1_900, attributes: { 'db.system': 'postgresql', 'server.address': 'db.internal' } }, ctx);
    db.setStatus({ code: SpanStatusCode.ERROR });
    db.end(now - 400);
    logger.emit({ severityNumber: 17, severityText: 'ERROR', body: 'stock query timed out after 1500 ms', attributes: { sku: 'A-17' }, context: trace.setSpan(ctx, db) });
    logger.emit({ severityNumber: 13, severityText: 'WARN', body: 'serving cached stock for A-17', context: ctx });
    root.end(now - 300);
  });
  // An unrelated request's log: logs of the trace must not include it.
  logger.emit({ severityNumber: 9, severityText: 'INFO', body: 'stock cache warmed' });
  await tracerProvider.forceFlush();
  await loggerProvider.forceFlush();

  const reader = new PeriodicExportingMetricReader({ exporter: new OTLPMetricExporter({ url: `${t.url}/ingest/v1/metrics`, headers }), exportIntervalMillis: 60_000 });
  const meterProvider = new MeterProvider({ resource, readers: [reader] });
  const hist = meterProvider.getMeter('inventory').createHistogram('http.server.request.duration', { unit: 'ms', advice: { explicitBucketBoundaries: [10, 25, 50, 100, 250, 500, 1000, 2500] } });
  for (let i = 0; i < 40; i++) hist.record(i < 38 ? 120 : 900, { 'http.route': '/cart' });
  for (let i = 0; i < 40; i++) hist.record(8, { 'http.route': '/items' });
  // The SDK takes a cumulative stream's start from the clock (whole milliseconds) at its first
  // record; a collection in that same millisecond exports start == time, which OTLP reads as a
  // zero-duration unknown-start point (contributes zero, spec rule). A real service exports a
  // minute later; a few milliseconds are enough for the start to be a known one.
  await new Promise((r) => setTimeout(r, 5));
  await meterProvider.forceFlush();
  await Promise.all([tracerProvider.shutdown(), loggerProvider.shutdown(), meterProvider.shutdown()]);
}

beforeAll(async () => {
  t = await startTestServer();
  const deploy = (id: string, version: string, sha: string, minutesAgo: number) =>
    api(t, 'POST', `/v1/projects/${t.projectId}/deployments`, {
      key: t.keys.admin,
      body: { deployment_id: id, service: 'checkout', environment: 'production', version, status: 'ready', commit_sha: sha, started_at: new Date(Date.now() - minutesAgo * 60_000).toISOString() },
    });
  expect((await deploy('ci-41', 'checkout@1.4.0', '9f2c1e0d', 50)).status).toBe(201);
  await sentryApp('checkout@1.4.0', 'good');
  expect((await deploy('ci-42', 'checkout@1.5.0', '4be1d7a3c2', 10)).status).toBe(201);
  await sentryApp('checkout@1.5.0', 'bad');
  await inventoryService();
  const user = t.mintUserToken({ role: 'member' });
  agent = await inMemoryClient(t, user.token);
}, 120_000);
afterAll(() => t.close());

describe('six debugging tasks, one search and one execute each', () => {
  it('top unresolved errors of a service in the last hour, with user counts', async () => {
    const r = await task(
      'top unresolved errors of a service in the last hour',
      ['errors.list'],
      `const r = await api.errors.list({ service: 'checkout', status: 'unresolved', from: '-1h', sort: 'event_count' });
       return r.data.map((g) => ({ id: g.short_id, title: g.title, events: g.event_count, users: g.user_count }));`,
    );
    expect(r).toHaveLength(2);
    const byTitle = Object.fromEntries(r.map((g: any) => [g.title.split(':')[0], g]));
    expect(byTitle.TypeError).toMatchObject({ events: 3, users: 3 });
    expect(byTitle.RangeError).toMatchObject({ events: 2, users: 2 });
  });

  it('the release that introduced a new error, and its suspect commit', async () => {
    const r = await task(
      'which release introduced this error and which commit',
      ['errors.list', 'errors.get', 'deployments.list', 'releases.list', 'releases.get'],
      `const g = (await api.errors.list({ service: 'checkout', q: 'TypeError', status: 'all' })).data[0];
       const d = (await api.deployments.list({ service: 'checkout', version: g.first_release })).data[0];
       return { group: g.short_id, release: g.first_release, commit: d && d.commit_sha };`,
    );
    expect(r).toMatchObject({ release: 'checkout@1.5.0', commit: '4be1d7a3c2' });
  });

  it('the logs of a given trace', async () => {
    const r = await task(
      'logs of a trace',
      ['logs.search', 'traces.get'],
      `const r = await api.logs.search({ trace_id: '${traceId}', from: '-1h' });
       return r.data.map((l) => l.body);`,
    );
    expect(r.sort()).toEqual(['serving cached stock for A-17', 'stock query timed out after 1500 ms']);
  });

  it('p95 of a histogram metric split by route', async () => {
    const r = await task(
      'p95 latency of a histogram metric by route',
      ['metrics.timeline'],
      `const r = await api.metrics.timeline({ metric_name: 'http.server.request.duration', metric_type: 'hist', aggregation: 'p95', group_by: ['http.route'], from: '-1h', granularity: '1h' });
       return r.series.map((s) => ({ route: s.group['http.route'], p95: Math.max(...s.buckets.map((b) => b.value ?? 0)) }));`,
    );
    const byRoute = Object.fromEntries(r.map((s: any) => [s.route, s.p95]));
    expect(byRoute['/cart']).toBeGreaterThan(100);
    expect(byRoute['/cart']).toBeLessThanOrEqual(250);
    expect(byRoute['/items']).toBeLessThanOrEqual(10);
  });

  it('assign a group to me and show it', async () => {
    const r = await task(
      'assign an error to me',
      ['errors.update', 'errors.list'],
      `const g = (await api.errors.list({ service: 'checkout', q: 'TypeError' })).data[0];
       const u = await api.errors.update({ error_group_id: g.id, assigned_to: 'me' });
       const me = await api.users.me({});
       return { assigned: u.assigned_to, me: me.user && me.user.id };`,
    );
    expect(r.assigned).toBeTruthy();
    expect(r.assigned).toBe(r.me);
  });

  it('which users sent feedback about errors', async () => {
    const r = await task(
      'which users sent feedback',
      ['feedback.list'],
      `const r = await api.feedback.list({});
       return r.data.map((f) => ({ user: f.user_id, email: f.contact_email, message: f.message }));`,
    );
    expect(r).toEqual([{ user: 'u-3', email: 'u-3@example.com', message: 'Checkout page crashes when I open my cart' }]);
  });
});
