/**
 * Issue 11 item 5 (and traces.get's logs, item 3): traces sent by the real OpenTelemetry SDK
 * (protobuf exporter) from two environments, with HTTP routes, database calls at three addresses and
 * a payment provider; read back through traces.list (sorts, environment and span attribute filters,
 * root and slowest span durations), traces.get (the trace's log records) and the service map.
 */
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { ROOT_CONTEXT, SpanKind, trace, type Tracer } from '@opentelemetry/api';
import { BasicTracerProvider, SimpleSpanProcessor } from '@opentelemetry/sdk-trace-base';
import { OTLPTraceExporter } from '@opentelemetry/exporter-trace-otlp-proto';
import { resourceFromAttributes } from '@opentelemetry/resources';
import { startTestServer, type TestServer } from '../helpers/server.js';
import { ok, read, sendLogs } from '../operations/telemetry-fixtures.js';

const NOW = Date.UTC(2026, 0, 15, 12, 0, 0);
const MIN = 60_000;

let t: TestServer;
const ids: Record<'t1' | 't2' | 't3', string> = { t1: '', t2: '', t3: '' };
let t1Root = '';

/** A root server span with children; times in ms from `at`. */
function record(tracer: Tracer, at: number, root: { name: string; ms: number; attrs?: Record<string, string> }, children: { name: string; kind: SpanKind; from: number; to: number; attrs: Record<string, string> }[]) {
  const r = tracer.startSpan(root.name, { kind: SpanKind.SERVER, startTime: at, attributes: { 'http.request.method': 'GET', ...root.attrs } });
  const ctx = trace.setSpan(ROOT_CONTEXT, r);
  for (const c of children) tracer.startSpan(c.name, { kind: c.kind, startTime: at + c.from, attributes: c.attrs }, ctx).end(at + c.to);
  r.end(at + root.ms);
  return { traceId: r.spanContext().traceId, rootId: r.spanContext().spanId };
}

beforeAll(async () => {
  t = await startTestServer({ now: () => NOW });
  const exporter = () => new OTLPTraceExporter({ url: `${t.url}/ingest/v1/traces`, headers: { 'x-service-key': t.keys.ingest } });
  const provider = (env: string) =>
    new BasicTracerProvider({
      resource: resourceFromAttributes({ 'service.name': 'shop', 'deployment.environment.name': env }),
      spanProcessors: [new SimpleSpanProcessor(exporter())],
    });
  const prod = provider('production');
  const staging = provider('staging');
  const a = record(prod.getTracer('shop'), NOW - 30 * MIN, { name: 'GET /a', ms: 100, attrs: { 'http.route': '/a' } }, [
    { name: 'SELECT a', kind: SpanKind.CLIENT, from: 10, to: 90, attrs: { 'db.system': 'postgresql', 'server.address': 'pg-main' } },
  ]);
  ids.t1 = a.traceId;
  t1Root = a.rootId;
  ids.t2 = record(staging.getTracer('shop'), NOW - 20 * MIN, { name: 'GET /b', ms: 1000, attrs: { 'http.route': '/b' } }, [
    { name: 'POST charge', kind: SpanKind.CLIENT, from: 100, to: 550, attrs: { 'peer.service': 'stripe', 'server.address': 'api.stripe.com' } },
  ]).traceId;
  ids.t3 = record(prod.getTracer('shop'), NOW - 10 * MIN, { name: 'GET /c', ms: 300, attrs: { 'http.route': '/c' } }, [
    { name: 'SELECT c', kind: SpanKind.CLIENT, from: 10, to: 60, attrs: { 'db.system': 'postgresql', 'peer.service': 'orders-db' } },
    { name: 'SELECT replica', kind: SpanKind.CLIENT, from: 60, to: 120, attrs: { 'db.system': 'postgresql', 'server.address': 'pg-replica' } },
    { name: 'async job', kind: SpanKind.INTERNAL, from: 100, to: 700, attrs: {} },
  ]).traceId;
  for (const p of [prod, staging]) {
    await p.forceFlush();
    await p.shutdown();
  }
  // 55 log records of trace 1 (newest last), one of trace 2.
  const logs = Array.from({ length: 55 }, (_, i) => ({ at: NOW - 30 * MIN + i, body: `step ${i}`, traceId: ids.t1, spanId: t1Root }));
  await sendLogs(t, [{ resource: { service: 'shop' }, logs: [...logs, { at: NOW - 20 * MIN, body: 'charge', traceId: ids.t2 }] }]);
});
afterAll(() => t?.close());

const traceIds = (b: { data: { trace_id: string }[] }) => b.data.map((r) => r.trace_id);

describe('traces.list', () => {
  it('sorts by start (newest first, default) or by duration (longest first)', async () => {
    const byStart = await ok(t, '/traces');
    expect(traceIds(byStart)).toEqual([ids.t3, ids.t2, ids.t1]);
    expect(byStart.sort).toBe('start');
    const byDuration = await ok(t, '/traces', { sort: 'duration' });
    expect(traceIds(byDuration)).toEqual([ids.t2, ids.t3, ids.t1]);
    expect(byDuration.data.map((r: { duration_ms: number }) => r.duration_ms)).toEqual([1000, 700, 100]);
    expect(byDuration.scan_truncated).toBe(false);
    const page2 = await ok(t, '/traces', { sort: 'duration', limit: 1, offset: 1 });
    expect(traceIds(page2)).toEqual([ids.t3]);
    expect(page2.has_more).toBe(true);
  });

  it("gives the root span's own duration next to the trace's, and the slowest other span", async () => {
    const row = (await ok(t, '/traces')).data.find((r: { trace_id: string }) => r.trace_id === ids.t3);
    expect(row).toMatchObject({ duration_ms: 700, root_duration_ms: 300, slowest_span: { name: 'async job', service_name: 'shop', duration_ms: 600 } });
    const t2 = (await ok(t, '/traces')).data.find((r: { trace_id: string }) => r.trace_id === ids.t2);
    expect(t2).toMatchObject({ duration_ms: 1000, root_duration_ms: 1000, slowest_span: { name: 'POST charge', duration_ms: 450 } });
  });

  it('filters by environment', async () => {
    expect(traceIds(await ok(t, '/traces', { environment: 'staging' }))).toEqual([ids.t2]);
    expect(traceIds(await ok(t, '/traces', { environment: 'production' }))).toEqual([ids.t3, ids.t1]);
    expect(traceIds(await ok(t, '/traces', { environment: 'dev' }))).toEqual([]);
  });

  it('filters by span attributes (http.route, db.system, any key; all on one span)', async () => {
    expect(traceIds(await ok(t, '/traces', { attributes: 'http.route:/b' }))).toEqual([ids.t2]);
    expect(traceIds(await ok(t, '/traces', { attributes: 'db.system:postgresql' }))).toEqual([ids.t3, ids.t1]);
    expect(traceIds(await ok(t, '/traces', { attributes: 'db.system:postgresql,server.address:pg-replica' }))).toEqual([ids.t3]);
    expect(traceIds(await ok(t, '/traces', { attributes: 'db.system:postgresql', environment: 'staging' }))).toEqual([]);
    expect(traceIds(await ok(t, '/traces', { attributes: 'peer.service:stripe', sort: 'duration' }))).toEqual([ids.t2]);
    expect((await read(t, '/traces', { attributes: 'no-colon' })).status).toBe(400);
  });

  it('accepts relative windows', async () => {
    expect(traceIds(await ok(t, '/traces', { from: '-15m' }))).toEqual([ids.t3]);
    expect(traceIds(await ok(t, '/traces', { from: '-25m', to: '-15m' }))).toEqual([ids.t2]);
  });
});

describe('traces.get', () => {
  it("returns the trace's log records: their count and the first page, oldest first", async () => {
    const g = await ok(t, `/traces/${ids.t1}`);
    expect(g.root_duration_ms).toBe(100);
    expect(g.slowest_span).toMatchObject({ name: 'SELECT a', duration_ms: 80 });
    expect(g.logs.total).toBe(55);
    expect(g.logs.has_more).toBe(true);
    expect(g.logs.data).toHaveLength(50);
    expect(g.logs.data[0]).toMatchObject({ body: 'step 0', trace_id: ids.t1, span_id: t1Root });
    expect(g.logs.data[49].body).toBe('step 49');
    const g2 = await ok(t, `/traces/${ids.t2}`);
    expect(g2.logs).toMatchObject({ total: 1, has_more: false });
    expect(g2.logs.data.map((l: { body: string }) => l.body)).toEqual(['charge']);
    expect((await ok(t, `/traces/${ids.t3}`)).logs).toEqual({ total: 0, data: [], has_more: false });
  });
});

describe('traces.serviceMap', () => {
  it('tells databases (db.system + address) and external services apart', async () => {
    const m = await ok(t, '/services');
    const kinds = Object.fromEntries(m.nodes.map((n: { service_name: string; kinds: string[] }) => [n.service_name, n.kinds]));
    expect(kinds).toEqual({
      shop: ['service'],
      'postgresql@pg-main': ['database'],
      'postgresql@orders-db': ['database'],
      'postgresql@pg-replica': ['database'],
      stripe: ['external'],
    });
    const edges = m.edges.map((e: { source: string; target: string }) => `${e.source}->${e.target}`).sort();
    expect(edges).toEqual(['shop->postgresql@orders-db', 'shop->postgresql@pg-main', 'shop->postgresql@pg-replica', 'shop->stripe']);
  });
});
