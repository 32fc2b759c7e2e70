/**
 * Real SDKs against a running server: the unmodified @sentry/node SDK (in a child process, as an
 * app would run it) and the OpenTelemetry JS SDK exporters (traces over protobuf and JSON, logs,
 * metrics). Results are checked through the REST operations a user would call.
 */
import { execFile } from 'node:child_process';
import { promisify } from 'node:util';
import { join } from 'node:path';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { context, trace } from '@opentelemetry/api';
import { BasicTracerProvider, SimpleSpanProcessor } from '@opentelemetry/sdk-trace-base';
import { OTLPTraceExporter as ProtoTraceExporter } from '@opentelemetry/exporter-trace-otlp-proto';
import { OTLPTraceExporter as JsonTraceExporter } from '@opentelemetry/exporter-trace-otlp-http';
import { OTLPLogExporter } from '@opentelemetry/exporter-logs-otlp-proto';
import { OTLPMetricExporter } from '@opentelemetry/exporter-metrics-otlp-proto';
import { LoggerProvider, SimpleLogRecordProcessor } from '@opentelemetry/sdk-logs';
import { MeterProvider, PeriodicExportingMetricReader } from '@opentelemetry/sdk-metrics';
import { resourceFromAttributes } from '@opentelemetry/resources';
import { startTestServer, type TestServer } from '../helpers/server.js';

const run = promisify(execFile);

describe('real SDKs → Sightline → REST', () => {
  let t: TestServer;
  // eslint-disable-next-line @typescript-eslint/no-explicit-any
  const get = async (path: string): Promise<any> => {
    const r = await fetch(`${t.url}/v1/projects/${t.projectId}${path}`, { headers: { 'x-service-key': t.keys.admin } });
    expect(r.status, path).toBe(200);
    return r.json();
  };
  beforeAll(async () => {
    t = await startTestServer();
  });
  afterAll(() => t.close());

  it('@sentry/node: exceptions, a message, a transaction, feedback, a session and a log arrive and are readable', async () => {
    const host = new URL(t.url).host;
    const dsn = `http://${t.keys.ingest}@${host}/ingest/${t.projectId}`;
    await run(process.execPath, [join(import.meta.dirname, 'fixtures/sentry-app.mjs')], { env: { ...process.env, SIGHTLINE_DSN: dsn }, timeout: 30_000 });

    const errors = await get('/errors?status=all');
    const declined = errors.data.find((g: { type: string }) => g.type === 'RangeError');
    expect(declined).toBeTruthy();
    expect(declined.event_count).toBe(2); // two orders, one group: the message numbers are masked
    expect(declined.environment).toBe('e2e');
    expect(errors.data.some((g: { title: string }) => g.title.startsWith('Inventory sync lagging'))).toBe(true);

    const feedback = await get('/feedback');
    expect(feedback.data.map((f: { message: string }) => f.message)).toContain('The pay button spins forever');
    expect(feedback.data[0].contact_email).toBe('jane@example.com');

    const traces = await get('/traces');
    expect(JSON.stringify(traces)).toContain('GET /cart');

    const logs = await get('/logs?q=provider');
    expect(logs.data.some((l: { body: string }) => l.body === 'Payment provider slow')).toBe(true);

    const sessions = t.s.db.prepare('SELECT status, release FROM sessions WHERE project_id = ?').all(Number(t.projectId)) as { status: string; release: string }[];
    expect(sessions.length).toBeGreaterThan(0);
    expect(sessions.every((x) => x.release === 'shop@2.0.0')).toBe(true);
  });

  it('OpenTelemetry exporters: traces over protobuf and JSON, logs and metrics', async () => {
    const headers = { 'x-service-key': t.keys.ingest };
    const resource = resourceFromAttributes({ 'service.name': 'inventory', 'deployment.environment.name': 'e2e', 'service.version': '3.1.0' });
    for (const [name, exporter] of [
      ['proto', new ProtoTraceExporter({ url: `${t.url}/ingest/v1/traces`, headers })],
      ['json', new JsonTraceExporter({ url: `${t.url}/ingest/v1/traces`, headers })],
    ] as const) {
      const provider = new BasicTracerProvider({ resource, spanProcessors: [new SimpleSpanProcessor(exporter)] });
      const tracer = provider.getTracer('e2e');
      tracer.startActiveSpan(`GET /items/${name}`, { kind: 1, attributes: { 'http.request.method': 'GET' } }, (root) => {
        const child = tracer.startSpan('load item', {}, trace.setSpan(context.active(), root));
        child.recordException(new Error(`stock missing for sku 1234 (${name})`));
        child.setStatus({ code: 2 });
        child.end();
        root.end();
      });
      await provider.forceFlush();
      await provider.shutdown();
    }
    const traces = await get('/traces?service_name=inventory');
    const names = JSON.stringify(traces);
    expect(names).toContain('GET /items/proto');
    expect(names).toContain('GET /items/json');
    const errors = await get('/errors?service=inventory&status=all');
    expect(errors.data.length).toBeGreaterThan(0);

    const loggerProvider = new LoggerProvider({ resource, processors: [new SimpleLogRecordProcessor({ exporter: new OTLPLogExporter({ url: `${t.url}/ingest/v1/logs`, headers }) })] });
    loggerProvider.getLogger('e2e').emit({ severityNumber: 17, severityText: 'ERROR', body: 'warehouse sync failed', attributes: { warehouse: 'north' } });
    await loggerProvider.forceFlush();
    await loggerProvider.shutdown();
    const logs = await get('/logs?service=inventory&level=error');
    expect(logs.data.map((l: { body: string }) => l.body)).toContain('warehouse sync failed');

    const reader = new PeriodicExportingMetricReader({ exporter: new OTLPMetricExporter({ url: `${t.url}/ingest/v1/metrics`, headers }), exportIntervalMillis: 60_000 });
    const meterProvider = new MeterProvider({ resource, readers: [reader] });
    const meter = meterProvider.getMeter('e2e');
    meter.createCounter('orders_total').add(5);
    meter.createHistogram('request_duration_ms', { unit: 'ms' }).record(120);
    // Not in the records' millisecond: a cumulative point with start == time counts zero (spec rule 4).
    await new Promise((r) => setTimeout(r, 5));
    await meterProvider.forceFlush();
    await meterProvider.shutdown();
    const metrics = await get('/metrics?service_name=inventory');
    const metricNames = metrics.data.map((m: { metric_name: string }) => m.metric_name);
    expect(metricNames).toEqual(expect.arrayContaining(['orders_total', 'request_duration_ms']));
  });
});
