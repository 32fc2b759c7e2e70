/**
 * traces.serviceMap on a window too large to read whole (about 24,000 spans): edges come from
 * spread time slices, scaled up, and partners outside the slices (a producer's consumer 30 seconds
 * later) are looked up. Estimates must land near the true call counts; node counts stay exact.
 */
import { randomBytes } from 'node:crypto';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { ExportTraceServiceRequest } from '../../src/ingest/otlp/schema.js';
import { api, startTestServer, type TestServer } from '../helpers/server.js';

const T0 = Date.parse('2026-04-01T00:00:00.000Z');
const HOUR = 3_600_000;
const TRACES = 3000;
let t: TestServer;

const attr = (key: string, v: string) => ({ key, value: { stringValue: v } });
const ns = (ms: number) => (BigInt(Math.round(ms * 1000)) * 1000n).toString();
interface S {
  service: string;
  traceId: Buffer;
  spanId: Buffer;
  parent: Buffer;
  name: string;
  kind: number;
  start: number;
  dur: number;
  attrs?: ReturnType<typeof attr>[];
}

function traceSpans(i: number): S[] {
  const traceId = randomBytes(16);
  const t0 = T0 + i * (HOUR / TRACES);
  const mk = (p: Omit<S, 'traceId' | 'spanId'>): S => ({ ...p, traceId, spanId: randomBytes(8) });
  const root = mk({ service: 'web', parent: Buffer.alloc(0), name: 'GET /', kind: 2, start: t0, dur: 50 });
  const call = mk({ service: 'web', parent: root.spanId, name: 'GET', kind: 3, start: t0 + 1, dur: 40, attrs: [attr('server.address', 'api.internal')] });
  const srv = mk({ service: 'api', parent: call.spanId, name: 'GET /work', kind: 2, start: t0 + 2, dur: 38 });
  const db = mk({ service: 'api', parent: srv.spanId, name: 'SELECT', kind: 3, start: t0 + 3, dur: 5, attrs: [attr('db.system', 'postgresql')] });
  const prod = mk({ service: 'api', parent: srv.spanId, name: 'jobs publish', kind: 4, start: t0 + 10, dur: 1, attrs: [attr('messaging.system', 'kafka'), attr('messaging.destination.name', 'jobs')] });
  // the consumer picks the message up half a minute later
  const cons = mk({ service: 'worker', parent: prod.spanId, name: 'jobs process', kind: 5, start: t0 + 30_000, dur: 20 });
  const spans = [root, call, srv, db, prod, cons];
  for (let k = 0; k < 2; k++) spans.push(mk({ service: 'api', parent: srv.spanId, name: `step ${k}`, kind: 1, start: t0 + 12 + k, dur: 1 }));
  if (i % 10 === 0) spans.push(mk({ service: 'api', parent: srv.spanId, name: 'POST', kind: 3, start: t0 + 20, dur: 9, attrs: [attr('peer.service', 'stripe')] }));
  return spans;
}

function encode(spans: S[]): Buffer {
  const by = new Map<string, S[]>();
  for (const s of spans) by.set(s.service, [...(by.get(s.service) ?? []), s]);
  const msg = ExportTraceServiceRequest.fromObject({
    resourceSpans: [...by].map(([service, list]) => ({
      resource: { attributes: [attr('service.name', service)] },
      scopeSpans: [
        {
          scope: { name: 'sampled-test' },
          spans: list.map((s) => ({
            traceId: s.traceId,
            spanId: s.spanId,
            parentSpanId: s.parent,
            name: s.name,
            kind: s.kind,
            startTimeUnixNano: ns(s.start),
            endTimeUnixNano: ns(s.start + s.dur),
            attributes: s.attrs ?? [],
          })),
        },
      ],
    })),
  });
  return Buffer.from(ExportTraceServiceRequest.encode(msg).finish());
}

let total = 0;
beforeAll(async () => {
  t = await startTestServer({ now: () => T0 + 2 * HOUR });
  let batch: S[] = [];
  const flush = async () => {
    const body = encode(batch);
    const r = await fetch(`${t.url}/ingest/v1/traces`, { method: 'POST', headers: { 'content-type': 'application/x-protobuf', 'x-service-key': t.keys.ingest }, body });
    expect(r.status).toBe(200);
    total += batch.length;
    batch = [];
  };
  for (let i = 0; i < TRACES; i++) {
    batch.push(...traceSpans(i));
    if (batch.length >= 2048) await flush();
  }
  if (batch.length) await flush();
}, 120_000);
afterAll(() => t?.close());

describe('traces.serviceMap on a large window', () => {
  it('estimates edges from spread slices, resolves far-away consumers and keeps node counts exact', async () => {
    expect(total).toBeGreaterThan(24_000);
    const W = `from=${encodeURIComponent(new Date(T0).toISOString())}&to=${encodeURIComponent(new Date(T0 + HOUR).toISOString())}`;
    const r = await api(t, 'GET', `/v1/projects/${t.projectId}/services?${W}`, { key: t.keys.admin });
    expect(r.status).toBe(200);
    expect(r.body.sampled).toBe(true);
    expect(r.body.sample_fraction).toBeGreaterThan(0.2);
    expect(r.body.sample_fraction).toBeLessThan(1);

    const edges = Object.fromEntries(r.body.edges.map((e: { source: string; target: string; call_count: number }) => [`${e.source}->${e.target}`, e.call_count]));
    expect(Object.keys(edges).sort()).toEqual(['api->postgresql', 'api->stripe', 'api->worker', 'web->api']);
    const near = (got: number, want: number, tol: number) => expect(Math.abs(got - want) / want, `${got} vs ${want}`).toBeLessThan(tol);
    near(edges['web->api']!, TRACES, 0.1);
    near(edges['api->postgresql']!, TRACES, 0.1);
    near(edges['api->worker']!, TRACES - 25, 0.1); // the last consumers start after the window
    near(edges['api->stripe']!, TRACES / 10, 0.3);

    const nodes = Object.fromEntries(r.body.nodes.map((n: { service_name: string }) => [n.service_name, n]));
    expect(nodes.web.request_count).toBe(TRACES);
    expect(nodes.api.request_count).toBe(TRACES);
    expect(nodes.worker.request_count).toBe(TRACES - 25);
    expect(nodes['kafka/jobs']).toBeUndefined(); // every message had a consumer
    expect(nodes.api.p50_ms).toBeCloseTo(38, 3);
  });
});
