/**
 * Issue 11 items 3 and 6: logs sent by the real OpenTelemetry SDK (protobuf exporter) with resource
 * attributes and trace context, read back by trace, span, `key:value` terms on log and resource
 * attributes, OR and parentheses; and relative `from`/`to` resolved with the server's (injected)
 * clock, in logs and in an operation of another domain (deployments.list).
 */
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { ROOT_CONTEXT, TraceFlags, trace } from '@opentelemetry/api';
import { SeverityNumber } from '@opentelemetry/api-logs';
import { resourceFromAttributes } from '@opentelemetry/resources';
import { LoggerProvider, SimpleLogRecordProcessor } from '@opentelemetry/sdk-logs';
import { OTLPLogExporter } from '@opentelemetry/exporter-logs-otlp-proto';
import { api, startTestServer, type TestServer } from '../helpers/server.js';
import { ok, read } from '../operations/telemetry-fixtures.js';

const NOW = Date.UTC(2026, 0, 15, 12, 0, 0);
const MIN = 60_000;
const HOUR = 60 * MIN;
const TRACE = '4bf92f3577b34da6a3ce929d0e0e4736';
const SPAN_A = '00f067aa0ba902b7';
const SPAN_B = '00f067aa0ba902b8';

interface Rec {
  at: number;
  body: string;
  sev?: SeverityNumber;
  attributes?: Record<string, string | number>;
  span?: string;
}

async function emit(t: TestServer, resource: Record<string, string>, records: Rec[]) {
  const provider = new LoggerProvider({
    resource: resourceFromAttributes(resource),
    processors: [new SimpleLogRecordProcessor({ exporter: new OTLPLogExporter({ url: `${t.url}/ingest/v1/logs`, headers: { 'x-service-key': t.keys.ingest } }) })],
  });
  const logger = provider.getLogger('orders-logger');
  for (const r of records) {
    const context = r.span ? trace.setSpanContext(ROOT_CONTEXT, { traceId: TRACE, spanId: r.span, traceFlags: TraceFlags.SAMPLED }) : undefined;
    logger.emit({ timestamp: r.at, observedTimestamp: r.at, severityNumber: r.sev ?? SeverityNumber.INFO, body: r.body, attributes: r.attributes, context });
  }
  await provider.forceFlush();
  await provider.shutdown();
}

const bodies = (b: { data: { body: string }[] }) => b.data.map((r) => r.body).sort();

describe('logs by trace, by attribute and with relative windows', () => {
  let t: TestServer;
  beforeAll(async () => {
    t = await startTestServer({ now: () => NOW });
    await emit(t, { 'service.name': 'orders', 'host.name': 'web-1', 'k8s.pod.name': 'orders-7f9c', 'service.instance.id': 'i-1' }, [
      { at: NOW - 10 * MIN, body: 'order 1 accepted', attributes: { 'http.route': '/api/orders', 'user.name': 'Ada Lovelace' }, span: SPAN_A },
      { at: NOW - 9 * MIN, body: 'payment timeout for order 1', sev: SeverityNumber.ERROR, attributes: { 'http.route': '/api/pay' }, span: SPAN_B },
      { at: NOW - 2 * HOUR, body: 'cache warmed', attributes: { 'http.route': '/internal/cache' } },
    ]);
    await emit(t, { 'service.name': 'orders', 'host.name': 'web-2', 'k8s.pod.name': 'orders-2b1d', 'service.instance.id': 'i-2' }, [
      { at: NOW - 5 * MIN, body: 'inventory timeout', sev: SeverityNumber.WARN, attributes: { 'http.route': '/api/stock', 'user.name': 'Grace Hopper' } },
      { at: NOW - 4 * MIN, body: 'order 2 accepted', attributes: { 'http.route': '/api/orders' } },
    ]);
    await emit(t, { 'service.name': 'billing', 'host.name': 'batch-1', 'k8s.pod.name': 'billing-0' }, [{ at: NOW - 3 * MIN, body: 'invoice run timeout' }]);
  });
  afterAll(() => t?.close());

  it('returns each record with its resource attributes', async () => {
    const b = await ok(t, '/logs', { q: '"order 1 accepted"' });
    expect(b.data).toHaveLength(1);
    expect(b.data[0].resource).toEqual({ 'service.name': 'orders', 'host.name': 'web-1', 'k8s.pod.name': 'orders-7f9c', 'service.instance.id': 'i-1' });
    expect(b.data[0]).toMatchObject({ trace_id: TRACE, span_id: SPAN_A, attributes: { 'http.route': '/api/orders' } });
  });

  it('filters by trace_id and span_id in search, histogram and insights', async () => {
    const byTrace = await ok(t, '/logs', { trace_id: TRACE.toUpperCase() });
    expect(bodies(byTrace)).toEqual(['order 1 accepted', 'payment timeout for order 1']);
    expect(byTrace.total).toBe(2);
    expect(bodies(await ok(t, '/logs', { trace_id: TRACE, span_id: SPAN_B }))).toEqual(['payment timeout for order 1']);
    expect(bodies(await ok(t, '/logs', { span_id: SPAN_A }))).toEqual(['order 1 accepted']);
    expect(bodies(await ok(t, '/logs', { trace_id: TRACE, q: 'timeout' }))).toEqual(['payment timeout for order 1']);
    const h = await ok(t, '/logs/histogram', { trace_id: TRACE, step: '1h' });
    expect(h.total).toBe(2);
    expect(h.buckets.reduce((s: number, x: { levels: { error: number } }) => s + x.levels.error, 0)).toBe(1);
    const ins = await ok(t, '/logs/insights', { trace_id: TRACE });
    expect(ins.total_count).toBe(2);
    expect((await read(t, '/logs', { trace_id: 'xyz' })).status).toBe(400);
  });

  it('matches key:value on resource attributes (host.name, k8s.pod.name, service.instance.id) and on log attributes', async () => {
    expect(bodies(await ok(t, '/logs', { q: 'host.name:web-2' }))).toEqual(['inventory timeout', 'order 2 accepted']);
    expect(bodies(await ok(t, '/logs', { q: 'service.instance.id:i-1 timeout' }))).toEqual(['payment timeout for order 1']);
    expect(bodies(await ok(t, '/logs', { q: 'k8s.pod.name:orders-* accepted' }))).toEqual(['order 1 accepted', 'order 2 accepted']);
    expect(bodies(await ok(t, '/logs', { q: 'http.route:/api/orders' }))).toEqual(['order 1 accepted', 'order 2 accepted']);
    expect(bodies(await ok(t, '/logs', { q: 'user.name:"Grace Hopper"' }))).toEqual(['inventory timeout']);
    expect(bodies(await ok(t, '/logs', { q: 'level:error' }))).toEqual(['payment timeout for order 1']);
    expect(bodies(await ok(t, '/logs', { q: `trace_id:${TRACE} accepted` }))).toEqual(['order 1 accepted']);
    expect((await ok(t, '/logs', { q: 'host.name:nowhere' })).data).toEqual([]);
  });

  it('combines terms with OR and parentheses', async () => {
    expect(bodies(await ok(t, '/logs', { q: 'invoice OR inventory' }))).toEqual(['inventory timeout', 'invoice run timeout']);
    expect(bodies(await ok(t, '/logs', { q: '(host.name:web-1 OR host.name:batch-1) timeout' }))).toEqual(['invoice run timeout', 'payment timeout for order 1']);
    expect(bodies(await ok(t, '/logs', { q: 'host.name:web-2 OR "order 1"' }))).toEqual(['inventory timeout', 'order 1 accepted', 'order 2 accepted', 'payment timeout for order 1']);
    expect(bodies(await ok(t, '/logs', { q: '(accepted OR warmed) host.name:web-1', from: '-3h' }))).toEqual(['cache warmed', 'order 1 accepted']);
    const h = await ok(t, '/logs/histogram', { q: 'host.name:web-2 OR host.name:batch-1', step: '1h' });
    expect(h.total).toBe(3);
    const ins = await ok(t, '/logs/insights', { q: 'k8s.pod.name:billing-0' });
    expect(ins.total_count).toBe(1);
  });

  it('accepts relative from/to resolved with the server clock', async () => {
    const lastHour = await ok(t, '/logs', { from: '-1h' });
    expect(lastHour.from).toBe(new Date(NOW - HOUR).toISOString());
    expect(lastHour.to).toBe(new Date(NOW).toISOString());
    expect(lastHour.data).toHaveLength(5);
    const older = await ok(t, '/logs', { from: 'now-3h', to: '-1h' });
    expect(bodies(older)).toEqual(['cache warmed']);
    expect(bodies(await ok(t, '/logs', { from: '-6m', to: 'now' }))).toEqual(['inventory timeout', 'invoice run timeout', 'order 2 accepted']);
    expect((await ok(t, '/logs', { from: '-1h30m' })).from).toBe(new Date(NOW - 90 * MIN).toISOString());
    const bad = await read(t, '/logs', { from: '-1y' });
    expect(bad.status).toBe(400);
    expect(bad.body.message).toContain('relative');
  });

  it('accepts relative from/to in an operation of another domain (deployments.list)', async () => {
    const writer = t.mintKey(['deployments:write']);
    for (const [id, at] of [['old', NOW - 3 * HOUR], ['new', NOW - 20 * MIN]] as const) {
      const r = await api(t, 'POST', `/v1/projects/${t.projectId}/deployments`, { key: writer, body: { deployment_id: id, service: 'orders', started_at: new Date(at).toISOString() } });
      expect(r.status).toBe(201);
    }
    const r = await api(t, 'GET', `/v1/projects/${t.projectId}/deployments?from=-1h&to=now`, { key: t.keys.admin });
    expect(r.status).toBe(200);
    expect(r.body.data.map((d: { deployment_id: string }) => d.deployment_id)).toEqual(['new']);
  });
});
