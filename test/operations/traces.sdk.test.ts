/**
 * The trace read operations over data sent by the real OpenTelemetry JS SDK: two tracer providers
 * (services `web` and `checkout`) joined by W3C trace-context propagation, checkout calling
 * PostgreSQL, Stripe (peer.service) and a Kafka topic, one failing request with a recorded exception.
 * Everything is read back over REST.
 */
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { context, defaultTextMapGetter, defaultTextMapSetter, ROOT_CONTEXT, SpanKind, SpanStatusCode, trace, type Tracer } from '@opentelemetry/api';
import { W3CTraceContextPropagator } from '@opentelemetry/core';
import { BasicTracerProvider, SimpleSpanProcessor } from '@opentelemetry/sdk-trace-base';
import { OTLPTraceExporter as ProtoTraceExporter } from '@opentelemetry/exporter-trace-otlp-proto';
import { OTLPTraceExporter as JsonTraceExporter } from '@opentelemetry/exporter-trace-otlp-http';
import { resourceFromAttributes } from '@opentelemetry/resources';
import { api, startTestServer, type TestServer } from '../helpers/server.js';

let t: TestServer;
let P: string;
const get = async (path: string) => {
  const r = await api(t, 'GET', `${P}${path}`, { key: t.keys.admin });
  expect(r.status, `${path}: ${JSON.stringify(r.body)}`).toBe(200);
  return r.body;
};

interface Sent {
  traceId: string;
  rootId: string;
  clientId: string;
  serverId: string;
  dbId: string;
}
const sent: Sent[] = [];

beforeAll(async () => {
  t = await startTestServer();
  P = `/v1/projects/${t.projectId}`;
  const headers = { 'x-service-key': t.keys.ingest };
  const url = `${t.url}/ingest/v1/traces`;
  const provider = (service: string, exporter: ProtoTraceExporter | JsonTraceExporter) =>
    new BasicTracerProvider({
      resource: resourceFromAttributes({ 'service.name': service, 'deployment.environment.name': 'e2e', 'service.version': '1.2.3' }),
      spanProcessors: [new SimpleSpanProcessor(exporter)],
    });
  // web exports protobuf, checkout OTLP/JSON: both encodings feed the same traces.
  const webProvider = provider('web', new ProtoTraceExporter({ url, headers }));
  const checkoutProvider = provider('checkout', new JsonTraceExporter({ url, headers }));
  const web = webProvider.getTracer('web-http');
  const checkout = checkoutProvider.getTracer('checkout-http');
  const propagator = new W3CTraceContextPropagator();

  /** checkout's side of the call: it only sees the incoming `traceparent` header. */
  const handleOrder = (tracer: Tracer, incoming: Record<string, string>, fail: boolean) => {
    const parent = propagator.extract(ROOT_CONTEXT, incoming, defaultTextMapGetter);
    const server = tracer.startSpan(
      'POST /orders/:id',
      { kind: SpanKind.SERVER, attributes: { 'http.request.method': 'POST', 'http.route': '/orders/:id', 'url.path': '/orders/77' } },
      parent,
    );
    const ctx = trace.setSpan(parent, server);
    const db = tracer.startSpan('SELECT orders', { kind: SpanKind.CLIENT, attributes: { 'db.system': 'postgresql', 'db.namespace': 'shop', 'server.address': 'pg.internal' } }, ctx);
    if (fail) {
      db.recordException(new Error('deadlock detected while charging order 77'));
      db.setStatus({ code: SpanStatusCode.ERROR, message: 'deadlock' });
      server.setStatus({ code: SpanStatusCode.ERROR });
    }
    db.end();
    const pay = tracer.startSpan('POST', { kind: SpanKind.CLIENT, attributes: { 'http.request.method': 'POST', 'peer.service': 'stripe', 'server.address': 'api.stripe.com' } }, ctx);
    pay.end();
    const pub = tracer.startSpan('orders publish', { kind: SpanKind.PRODUCER, attributes: { 'messaging.system': 'kafka', 'messaging.destination.name': 'orders' } }, ctx);
    pub.end();
    server.end();
    return { serverId: server.spanContext().spanId, dbId: db.spanContext().spanId };
  };

  for (const [user, fail] of [
    ['123', false],
    ['456', true],
  ] as const) {
    const root = web.startSpan(`GET /users/${user}`, { kind: SpanKind.SERVER, attributes: { 'http.request.method': 'GET', 'url.path': `/users/${user}` } });
    const rootCtx = trace.setSpan(context.active(), root);
    const client = web.startSpan('POST', { kind: SpanKind.CLIENT, attributes: { 'http.request.method': 'POST', 'server.address': 'checkout.internal' } }, rootCtx);
    const carrier: Record<string, string> = {};
    propagator.inject(trace.setSpan(rootCtx, client), carrier, defaultTextMapSetter);
    expect(carrier.traceparent).toMatch(/^00-[0-9a-f]{32}-[0-9a-f]{16}-01$/);
    const { serverId, dbId } = handleOrder(checkout, carrier, fail);
    client.end();
    root.end();
    sent.push({ traceId: root.spanContext().traceId, rootId: root.spanContext().spanId, clientId: client.spanContext().spanId, serverId, dbId });
  }
  await Promise.all([webProvider.forceFlush(), checkoutProvider.forceFlush()]);
  await Promise.all([webProvider.shutdown(), checkoutProvider.shutdown()]);
});
afterAll(() => t?.close());

describe('traces from the OpenTelemetry SDK', () => {
  it('lists one row per trace, newest first, with the root span, services and status', async () => {
    const r = await get('/traces');
    expect(r.data.map((x: { trace_id: string }) => x.trace_id)).toEqual([sent[1]!.traceId, sent[0]!.traceId]);
    const [failed, ok] = r.data;
    expect(ok).toMatchObject({
      root_span_id: sent[0]!.rootId,
      root_name: 'GET /users/123',
      operation: 'GET /users/{n}',
      service_name: 'web',
      environment: 'e2e',
      has_root: true,
      span_count: 6,
      error_count: 0,
      services: ['checkout', 'web'],
      status: 'ok',
    });
    expect(failed).toMatchObject({ status: 'error', error_count: 2 });
    expect(r).toMatchObject({ limit: 50, offset: 0, has_more: false });
    expect(Date.parse(r.to) - Date.parse(r.from)).toBe(24 * 3_600_000);
  });

  it('summarizes entry spans per service and normalized operation, and the rows drill down into the list', async () => {
    const r = await get('/trace-operations');
    const rows = Object.fromEntries(r.data.map((x: { service_name: string; operation: string }) => [`${x.service_name} ${x.operation}`, x]));
    expect(Object.keys(rows).sort()).toEqual(['checkout POST /orders/:id', 'web GET /users/{n}']);
    expect(rows['web GET /users/{n}']).toMatchObject({ trace_count: 2, error_count: 0, error_rate: 0 });
    expect(rows['checkout POST /orders/:id']).toMatchObject({ trace_count: 2, error_count: 1, error_rate: 0.5 });
    const row = rows['checkout POST /orders/:id'];
    expect(row.sparkline).toHaveLength(60);
    expect(row.sparkline.reduce((a: number, b: number) => a + b, 0)).toBe(2);
    expect(row.sparkline[59]).toBe(2); // both a moment ago: the last sixtieth of the day
    expect(row.p50_ms).toBeGreaterThanOrEqual(0);
    expect(row.p95_ms).toBeGreaterThanOrEqual(row.p50_ms);
    expect(r.high_cardinality_truncated).toBe(false);

    const drill = await get(`/traces?service_name=checkout&operation=${encodeURIComponent(row.operation)}`);
    expect(drill.data.map((x: { trace_id: string }) => x.trace_id).sort()).toEqual(sent.map((s) => s.traceId).sort());
    const failing = await get(`/traces?service_name=checkout&operation=${encodeURIComponent(row.operation)}&status=error`);
    expect(failing.data.map((x: { trace_id: string }) => x.trace_id)).toEqual([sent[1]!.traceId]);
  });

  it('returns a trace with its spans in order and the cross-service parent link intact', async () => {
    const s = sent[0]!;
    const r = await get(`/traces/${s.traceId.toUpperCase()}`);
    expect(r).toMatchObject({ trace_id: s.traceId, root_span_id: s.rootId, root_name: 'GET /users/123', span_count: 6, error_count: 0, status: 'ok', spans_truncated: false });
    expect(r.services).toEqual(['checkout', 'web']);
    const byId = Object.fromEntries(r.spans.map((x: { span_id: string }) => [x.span_id, x]));
    expect(byId[s.rootId]).toMatchObject({ parent_span_id: null, kind: 'server', service_name: 'web', depth: 0, children: 1, start_offset_ms: 0 });
    expect(byId[s.clientId]).toMatchObject({ parent_span_id: s.rootId, kind: 'client', depth: 1, children: 1 });
    expect(byId[s.serverId]).toMatchObject({ parent_span_id: s.clientId, kind: 'server', service_name: 'checkout', depth: 2, children: 3, operation: 'POST /orders/:id' });
    expect(byId[s.dbId]).toMatchObject({ parent_span_id: s.serverId, kind: 'client', depth: 3, service_version: '1.2.3', scope: { name: 'checkout-http', version: '' } });
    expect(byId[s.dbId].attributes).toMatchObject({ 'db.system': 'postgresql', 'db.namespace': 'shop' });
    const starts = r.spans.map((x: { started_at: string }) => Date.parse(x.started_at));
    expect([...starts].sort((a, b) => a - b)).toEqual(starts);
    expect(r.spans[0].span_id).toBe(s.rootId);
  });

  it('correlates the recorded exception to its error group', async () => {
    const s = sent[1]!;
    const r = await get(`/traces/${s.traceId}/errors`);
    expect(r.trace_id).toBe(s.traceId);
    expect(r.data).toHaveLength(1);
    const g = r.data[0];
    expect(g).toMatchObject({ type: 'Error', event_count: 1, span_ids: [s.dbId], level: 'error', status: 'unresolved' });
    expect(g.title).toContain('deadlock detected');
    expect((await api(t, 'GET', `${P}/errors/${g.id}`, { key: t.keys.admin })).status).toBe(200);
    expect((await get(`/traces/${sent[0]!.traceId}/errors`)).data).toEqual([]);
  });

  it('maps web → checkout from the propagated parent link and checkout → its database, payment provider and topic from client attributes', async () => {
    const r = await get('/services');
    expect(r).toMatchObject({ sampled: false, sample_fraction: 1, nodes_truncated: false, edges_truncated: false });
    const edges = Object.fromEntries(r.edges.map((e: { source: string; target: string }) => [`${e.source}->${e.target}`, e]));
    expect(Object.keys(edges).sort()).toEqual(['checkout->kafka/orders', 'checkout->postgresql@pg.internal', 'checkout->stripe', 'web->checkout']);
    expect(edges['web->checkout']).toMatchObject({ call_count: 2, error_count: 1, error_rate: 0.5 });
    expect(edges['checkout->postgresql@pg.internal']).toMatchObject({ call_count: 2, error_count: 1 });
    expect(edges['checkout->stripe']).toMatchObject({ call_count: 2, error_count: 0 });
    const nodes = Object.fromEntries(r.nodes.map((n: { service_name: string }) => [n.service_name, n]));
    expect(nodes.web).toMatchObject({ kinds: ['service'], request_count: 2, error_count: 0 });
    expect(nodes.checkout).toMatchObject({ kinds: ['service'], request_count: 2, error_count: 1, error_rate: 0.5 });
    expect(nodes['postgresql@pg.internal'].kinds).toEqual(['database']);
    expect(nodes.stripe.kinds).toEqual(['external']);
    expect(nodes['kafka/orders'].kinds).toEqual(['messaging']);
    expect(nodes['checkout.internal']).toBeUndefined(); // answered by checkout's own server span
    expect(nodes.web.throughput_per_min).toBeCloseTo(2 / 1440, 5);
  });

  it('needs the read scope', async () => {
    const r = await api(t, 'GET', `${P}/traces`, { key: t.keys.ingest });
    expect(r.status).toBe(403);
    const reader = t.mintKey(['read']);
    expect((await api(t, 'GET', `${P}/services`, { key: reader })).status).toBe(200);
  });
});
