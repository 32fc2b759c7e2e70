/**
 * Logs sent by the real OpenTelemetry JS SDK (protobuf and JSON exporters) to the ingest endpoint,
 * read back through logs.search, logs.histogram and logs.insights.
 */
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { SeverityNumber } from '@opentelemetry/api-logs';
import { resourceFromAttributes } from '@opentelemetry/resources';
import { LoggerProvider, SimpleLogRecordProcessor, type LogRecordExporter } from '@opentelemetry/sdk-logs';
import { OTLPLogExporter as ProtoLogExporter } from '@opentelemetry/exporter-logs-otlp-proto';
import { OTLPLogExporter as JsonLogExporter } from '@opentelemetry/exporter-logs-otlp-http';
import { startTestServer, type TestServer } from '../helpers/server.js';
import { ok } from './telemetry-fixtures.js';

async function emit(service: string, exporter: LogRecordExporter, records: { severityNumber: SeverityNumber; severityText: string; body: string; attributes?: Record<string, string | number> }[]) {
  const provider = new LoggerProvider({
    resource: resourceFromAttributes({ 'service.name': service, 'deployment.environment.name': 'sdk-test', 'service.version': '7.1.0' }),
    processors: [new SimpleLogRecordProcessor({ exporter })],
  });
  const logger = provider.getLogger('shop-logger', '1.2.3');
  for (const r of records) logger.emit(r);
  await provider.forceFlush();
  await provider.shutdown();
}

describe('logs from the OpenTelemetry SDK', () => {
  let t: TestServer;
  beforeAll(async () => {
    t = await startTestServer();
    const headers = { 'x-service-key': t.keys.ingest };
    const url = `${t.url}/ingest/v1/logs`;
    const records = (kind: string): Parameters<typeof emit>[2] => [
      { severityNumber: SeverityNumber.INFO, severityText: 'INFO', body: `order 101 shipped via ${kind}`, attributes: { 'order.id': 101, carrier: 'dhl' } },
      { severityNumber: SeverityNumber.INFO, severityText: 'INFO', body: `order 102 shipped via ${kind}`, attributes: { 'order.id': 102, carrier: 'ups' } },
      { severityNumber: SeverityNumber.WARN, severityText: 'WARN', body: `stock low for sku 7 (${kind})`, attributes: { carrier: 'dhl' } },
      { severityNumber: SeverityNumber.ERROR, severityText: 'ERROR', body: `payment gateway timeout (${kind})`, attributes: { 'http.request.method': 'POST' } },
    ];
    await emit('shop-proto', new ProtoLogExporter({ url, headers }), records('protobuf'));
    await emit('shop-json', new JsonLogExporter({ url, headers }), records('json'));
  });
  afterAll(() => t?.close());

  it('finds SDK logs by free text with their resource, scope, severity and attributes', async () => {
    const b = await ok(t, '/logs', { q: 'shipped protobuf' });
    expect(b.data.map((r: { body: string }) => r.body).sort()).toEqual(['order 101 shipped via protobuf', 'order 102 shipped via protobuf']);
    const row = b.data.find((r: { body: string }) => r.body.startsWith('order 101'));
    expect(row).toMatchObject({
      level: 'info',
      severity_number: 9,
      severity_text: 'INFO',
      service: 'shop-proto',
      environment: 'sdk-test',
      release: '7.1.0',
      source: 'otlp',
      scope: 'shop-logger',
      attributes: { 'order.id': 101, carrier: 'dhl' },
    });
    expect(Date.parse(row.timestamp)).toBeGreaterThan(Date.now() - 60_000);
    const json = await ok(t, '/logs', { q: 'shipped json', service: 'shop-json' });
    expect(json.data).toHaveLength(2);
    const byAttr = await ok(t, '/logs', { q: 'ups' });
    expect(byAttr.data.map((r: { service: string }) => r.service).sort()).toEqual(['shop-json', 'shop-proto']);
  });

  it('filters SDK logs by level and release', async () => {
    const b = await ok(t, '/logs', { level: 'warning,error', release: '7.1.0' });
    expect(b.data).toHaveLength(4);
    expect(new Set(b.data.map((r: { level: string }) => r.level))).toEqual(new Set(['warn', 'error']));
  });

  it('counts SDK logs by severity and by HTTP method in the histogram', async () => {
    const b = await ok(t, '/logs/histogram', { step: '1d', group_by: 'http_method' });
    const sum = (k: string) => b.buckets.reduce((s: number, x: { levels: Record<string, number> }) => s + x.levels[k]!, 0);
    expect(b.total).toBe(8);
    expect([sum('info'), sum('warn'), sum('error')]).toEqual([4, 2, 2]);
    const groups = b.buckets.reduce((acc: Record<string, number>, x: { groups: Record<string, number> }) => {
      for (const [k, v] of Object.entries(x.groups)) acc[k] = (acc[k] ?? 0) + v;
      return acc;
    }, {});
    expect(groups).toEqual({ POST: 2, '(none)': 6 });
  });

  it('mines SDK logs into patterns and samples an attribute', async () => {
    const b = await ok(t, '/logs/insights', { dimensions: 'carrier' });
    expect(b.total_count).toBe(8);
    const shipped = b.patterns.find((p: { pattern: string }) => p.pattern.startsWith('order <NUM> shipped via'));
    expect(shipped).toMatchObject({ count: 4, levels: { info: 4 } });
    expect(b.distributions.service.current.values.map((r: { value: string; count: number }) => [r.value, r.count]).sort()).toEqual([
      ['shop-json', 4],
      ['shop-proto', 4],
    ]);
    expect(b.custom_distributions.carrier.current.values).toEqual([
      { value: 'dhl', count: 4, share: 0.5, sampled: true },
      { value: 'ups', count: 2, share: 0.25, sampled: true },
    ]);
    expect(b.custom_distributions.carrier.current.missing_count).toBe(2);
  });
});
