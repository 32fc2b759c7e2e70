/**
 * Trace read operations on hand-built OTLP/JSON payloads with exact times and durations: operation
 * normalization, cardinality truncation, sorting, sparklines, every filter, windows, pagination,
 * partial traces, error correlation, service-map limits, and tenant isolation.
 */
import { randomBytes } from 'node:crypto';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { api, startTestServer, type TestServer } from '../helpers/server.js';

const T0 = Date.parse('2026-03-01T00:00:00.000Z');
const HOUR = 3_600_000;
let clock = T0 + HOUR;
let t: TestServer;
let P: string;

type Attr = string | number;
interface SpanIn {
  service: string;
  trace: string;
  id?: string;
  parent?: string | null;
  name: string;
  kind: number;
  start: number; // ms
  dur: number; // ms
  error?: boolean;
  attrs?: Record<string, Attr>;
  env?: string;
  exception?: { type: string; message: string };
}

const hex = (bytes: number) => randomBytes(bytes).toString('hex');
const nanos = (ms: number) => (BigInt(Math.round(ms * 1000)) * 1000n).toString();
const kv = (attrs: Record<string, Attr>) =>
  Object.entries(attrs).map(([key, v]) => ({ key, value: typeof v === 'number' ? { intValue: String(v) } : { stringValue: v } }));

/** Posts spans as OTLP/JSON (one resource per service and environment) through the ingest endpoint. */
async function send(spans: SpanIn[], key = t.keys.ingest): Promise<void> {
  const groups = new Map<string, SpanIn[]>();
  for (const s of spans) {
    const k = `${s.service}\u0000${s.env ?? 'prod'}`;
    groups.set(k, [...(groups.get(k) ?? []), s]);
  }
  const body = {
    resourceSpans: [...groups].map(([k, list]) => {
      const [service, env] = k.split('\u0000');
      return {
        resource: { attributes: kv({ 'service.name': service!, 'deployment.environment.name': env! }) },
        scopeSpans: [
          {
            scope: { name: 'hand' },
            spans: list.map((s) => ({
              traceId: s.trace,
              spanId: s.id ?? hex(8),
              parentSpanId: s.parent ?? '',
              name: s.name,
              kind: s.kind,
              startTimeUnixNano: nanos(s.start),
              endTimeUnixNano: nanos(s.start + s.dur),
              attributes: kv(s.attrs ?? {}),
              status: { code: s.error ? 2 : 0 },
              events: s.exception
                ? [{ name: 'exception', timeUnixNano: nanos(s.start + s.dur), attributes: kv({ 'exception.type': s.exception.type, 'exception.message': s.exception.message }) }]
                : [],
            })),
          },
        ],
      };
    }),
  };
  const r = await api(t, 'POST', '/ingest/v1/traces', { key, body });
  if (r.status !== 200) throw new Error(`ingest ${r.status}: ${JSON.stringify(r.body)}`);
  expect(r.body.partialSuccess?.rejectedSpans ?? 0).toBe(0);
}

const get = async (path: string, expectStatus = 200) => {
  const r = await api(t, 'GET', `${P}${path}`, { key: t.keys.admin });
  expect(r.status, `${path}: ${JSON.stringify(r.body)}`).toBe(expectStatus);
  return r.body;
};
const W = `from=${encodeURIComponent(new Date(T0).toISOString())}&to=${encodeURIComponent(new Date(T0 + HOUR).toISOString())}`;

// Traces of the `shop` service, one server span each (roots): ids per purpose.
const users: string[] = [];
const trunc: string[] = [];
let orphanTrace = '';
let errorTrace = '';
let errorSpan = '';
let multiTrace = '';

beforeAll(async () => {
  t = await startTestServer({ now: () => clock });
  P = `/v1/projects/${t.projectId}`;

  // shop: GET /users/<n> ×4 (two numeric ids normalize together with two more), durations 10/50/200/400 ms,
  // the 400 ms one failing; GET /items/<uuid> ×2; at minutes 5, 10, 15, 20 and 25, 26.
  const userSpans: SpanIn[] = [10, 50, 200, 400].map((dur, i) => {
    const trace = hex(16);
    users.push(trace);
    return { service: 'shop', trace, name: `GET /users/${[123, 456, 7, 99999][i]}?page=${i}`, kind: 2, start: T0 + (5 + 5 * i) * 60_000, dur, error: dur === 400 };
  });
  const itemSpans: SpanIn[] = ['6f1c2a4e-9b3d-4c5e-8f70-1a2b3c4d5e6f', '0A1B2C3D-4E5F-4A6B-8C7D-9E0F1A2B3C4D'].map((u, i) => ({
    service: 'shop',
    trace: hex(16),
    name: `GET /items/${u}`,
    kind: 2,
    start: T0 + (25 + i) * 60_000,
    dur: 5,
    env: 'staging',
  }));
  // trunc: three operations, the busiest first by count.
  const truncSpans: SpanIn[] = [];
  for (const [op, n] of [
    ['alpha', 3],
    ['beta', 2],
    ['gamma', 1],
  ] as const) {
    for (let i = 0; i < n; i++) {
      const trace = hex(16);
      trunc.push(trace);
      truncSpans.push({ service: 'trunc', trace, name: `job ${op}`, kind: 5, parent: hex(8), start: T0 + 40 * 60_000 + truncSpans.length * 1000, dur: 1 });
    }
  }
  // A trace whose root never arrived: two backend spans, the earliest one's parent missing.
  orphanTrace = hex(16);
  const orphanTop = hex(8);
  const orphanSpans: SpanIn[] = [
    { service: 'backend', trace: orphanTrace, id: orphanTop, parent: hex(8), name: 'POST /orders', kind: 2, start: T0 + 45 * 60_000, dur: 30 },
    { service: 'backend', trace: orphanTrace, parent: orphanTop, name: 'validate', kind: 1, start: T0 + 45 * 60_000 + 1, dur: 3 },
  ];
  // A failing trace: api → (client, db) with an exception event on the db span.
  errorTrace = hex(16);
  const errRoot = hex(8);
  errorSpan = hex(8);
  const errorSpans: SpanIn[] = [
    { service: 'api', trace: errorTrace, id: errRoot, name: 'GET /checkout', kind: 2, start: T0 + 50 * 60_000, dur: 80, error: true },
    {
      service: 'api',
      trace: errorTrace,
      id: errorSpan,
      parent: errRoot,
      name: 'INSERT orders',
      kind: 3,
      start: T0 + 50 * 60_000 + 5,
      dur: 20,
      error: true,
      attrs: { 'db.system': 'mysql', 'db.name': 'shop' },
      exception: { type: 'IntegrityError', message: 'duplicate key order_id=81' },
    },
  ];
  // A multi-service trace whose second service is slow: gateway → orders (server) → kafka producer → mailer consumer.
  multiTrace = hex(16);
  const gw = hex(8);
  const call = hex(8);
  const srv = hex(8);
  const prod = hex(8);
  const multiSpans: SpanIn[] = [
    { service: 'gateway', trace: multiTrace, id: gw, name: 'GET /orders/42', kind: 2, start: T0 + 55 * 60_000, dur: 900, attrs: { 'http.request.method': 'GET', 'http.route': '/orders/{id}' } },
    { service: 'gateway', trace: multiTrace, id: call, parent: gw, name: 'GET', kind: 3, start: T0 + 55 * 60_000 + 1, dur: 850, attrs: { 'server.address': 'orders' } },
    { service: 'orders', trace: multiTrace, id: srv, parent: call, name: 'GET /orders/42', kind: 2, start: T0 + 55 * 60_000 + 2, dur: 800 },
    { service: 'orders', trace: multiTrace, id: prod, parent: srv, name: 'order publish', kind: 4, start: T0 + 55 * 60_000 + 700, dur: 2, attrs: { 'messaging.system': 'kafka', 'messaging.destination.name': 'orders' } },
    // the consumer starts a minute later, far from its producer
    { service: 'mailer', trace: multiTrace, parent: prod, name: 'order process', kind: 5, start: T0 + 56 * 60_000 + 30_000, dur: 40 },
  ];
  // Outside the window (and newer than it): must never show up in windowed reads.
  const outside: SpanIn[] = [{ service: 'shop', trace: hex(16), name: 'GET /users/1', kind: 2, start: T0 + HOUR + 60_000, dur: 1 }];
  await send([...userSpans, ...itemSpans, ...truncSpans, ...orphanSpans, ...errorSpans, ...multiSpans, ...outside]);

  // The same trace id in another project, with a different service: invisible here.
  await send([{ service: 'intruder', trace: users[0]!, name: 'GET /secret', kind: 2, start: T0 + 5 * 60_000, dur: 1 }], t.otherProject.adminKey);
  clock = T0 + 2 * HOUR;
});
afterAll(() => t?.close());

const ids = (r: { data: { trace_id: string }[] }) => r.data.map((x) => x.trace_id);
const opRows = (r: { data: { service_name: string; operation: string }[] }) => r.data.map((x) => `${x.service_name} ${x.operation}`);

describe('traces.operations', () => {
  it('normalizes numeric and UUID path segments into one row each, and drops query strings', async () => {
    const r = await get(`/trace-operations?${W}&service_name=shop`);
    expect(opRows(r).sort()).toEqual(['shop GET /items/{uuid}', 'shop GET /users/{n}']);
    const u = r.data.find((x: { operation: string }) => x.operation === 'GET /users/{n}');
    expect(u).toMatchObject({ trace_count: 4, error_count: 1, error_rate: 0.25, p50_ms: 125, p95_ms: 370 }); // 10,50,200,400 interpolated
    expect(u.last_seen).toBe(new Date(T0 + 20 * 60_000).toISOString());
    // one span in each of the 60 one-minute buckets at minutes 5, 10, 15, 20
    expect(u.sparkline.map((v: number, i: number) => (v ? i : -1)).filter((i: number) => i >= 0)).toEqual([5, 10, 15, 20]);
    expect(r.sparkline_bucket_ms).toBe(60_000);
  });

  it('flags high cardinality when more operations match than the limit', async () => {
    const two = await get(`/trace-operations?${W}&service_name=trunc&limit=2&sort=count`);
    expect(opRows(two)).toEqual(['trunc job alpha', 'trunc job beta']);
    expect(two).toMatchObject({ high_cardinality_truncated: true, total_operations: 3 });
    const three = await get(`/trace-operations?${W}&service_name=trunc&limit=3`);
    expect(three.high_cardinality_truncated).toBe(false);
    expect(three.data).toHaveLength(3);
  });

  it('sorts by last_seen by default, and by count, p95 and error rate', async () => {
    const last = await get(`/trace-operations?${W}`);
    const seen = last.data.map((x: { last_seen: string }) => Date.parse(x.last_seen));
    expect(seen).toEqual([...seen].sort((a, b) => b - a));
    expect(opRows(last)[0]).toBe('mailer order process');
    expect(opRows(await get(`/trace-operations?${W}&sort=count`))[0]).toBe('shop GET /users/{n}');
    expect(opRows(await get(`/trace-operations?${W}&sort=p95`)).slice(0, 2)).toEqual(['gateway GET /orders/{id}', 'orders GET /orders/{n}']);
    expect(opRows(await get(`/trace-operations?${W}&sort=error_rate`))[0]).toBe('api GET /checkout');
  });

  it('filters entry spans by min_duration, status, environment and operation', async () => {
    const slow = await get(`/trace-operations?${W}&service_name=shop&min_duration=100`);
    expect(slow.data.map((x: { trace_count: number }) => x.trace_count)).toEqual([2]);
    const failed = await get(`/trace-operations?${W}&status=error`);
    expect(opRows(failed).sort()).toEqual(['api GET /checkout', 'shop GET /users/{n}']);
    expect(failed.data.every((x: { error_rate: number }) => x.error_rate === 1)).toBe(true);
    const ok = await get(`/trace-operations?${W}&service_name=shop&status=ok&operation=${encodeURIComponent('GET /users/{n}')}`);
    expect(ok.data[0]).toMatchObject({ trace_count: 3, error_count: 0 });
    const staging = await get(`/trace-operations?${W}&environment=staging`);
    expect(opRows(staging)).toEqual(['shop GET /items/{uuid}']);
    // a raw name is normalized like the stored operations
    const raw = await get(`/trace-operations?${W}&operation=${encodeURIComponent('GET /users/31337')}`);
    expect(opRows(raw)).toEqual(['shop GET /users/{n}']);
  });

  it('counts consumer and root spans as entry spans but not client, producer or internal spans', async () => {
    const r = await get(`/trace-operations?${W}&limit=100`);
    const rows = opRows(r);
    expect(rows).toEqual(expect.arrayContaining(['mailer order process', 'backend POST /orders', 'trunc job gamma']));
    expect(rows.some((x: string) => /publish|validate|INSERT|^gateway GET$/.test(x))).toBe(false);
  });

  it('defaults to the last 24 hours before now and rejects bad windows and limits', async () => {
    const dflt = await get('/trace-operations');
    expect(dflt.to).toBe(new Date(clock).toISOString());
    expect(dflt.from).toBe(new Date(clock - 24 * HOUR).toISOString());
    expect(dflt.data.length).toBeGreaterThan(0);
    const reversed = await get(`/trace-operations?from=${encodeURIComponent('2026-03-01T02:00:00Z')}&to=${encodeURIComponent('2026-03-01T01:00:00Z')}`, 400);
    expect(reversed).toMatchObject({ code: 'invalid_parameter', param: 'from' });
    const noZone = await get(`/trace-operations?to=${encodeURIComponent('2026-03-01T01:00:00')}`, 400);
    expect(noZone.param).toBe('to');
    expect((await get(`/trace-operations?from=${encodeURIComponent('2026-01-01T00:00:00Z')}&to=${encodeURIComponent('2026-03-01T00:00:00Z')}`, 400)).param).toBe('from');
    expect((await get(`/trace-operations?limit=0`, 400)).param).toBe('limit');
    expect((await get(`/trace-operations?limit=101`, 400)).param).toBe('limit');
    expect((await get(`/trace-operations?sort=slowest`, 400)).param).toBe('sort');
  });
});

describe('traces.list', () => {
  it('lists traces starting in the window newest first and pages with offset', async () => {
    const all = await get(`/traces?${W}&limit=100`);
    expect(all.data).toHaveLength(4 + 2 + 6 + 3);
    const starts = all.data.map((x: { started_at: string }) => Date.parse(x.started_at));
    expect(starts).toEqual([...starts].sort((a, b) => b - a));
    expect(ids(all)[0]).toBe(multiTrace);
    const p1 = await get(`/traces?${W}&limit=4`);
    const p2 = await get(`/traces?${W}&limit=4&offset=4`);
    expect(p1.has_more).toBe(true);
    expect([...ids(p1), ...ids(p2)]).toEqual(ids(all).slice(0, 8));
    const last = await get(`/traces?${W}&limit=4&offset=12`);
    expect(last).toMatchObject({ has_more: false, offset: 12, limit: 4 });
    expect(ids(last)).toEqual(ids(all).slice(12));
  });

  it('drills down from an operation row with service_name and operation', async () => {
    const r = await get(`/traces?${W}&service_name=shop&operation=${encodeURIComponent('GET /users/{n}')}`);
    expect(ids(r)).toEqual([...users].reverse());
    expect(r.data[0]).toMatchObject({ root_name: 'GET /users/99999?page=3', operation: 'GET /users/{n}', service_name: 'shop', span_count: 1 });
    expect(ids(await get(`/traces?${W}&operation=${encodeURIComponent('GET /items/{uuid}')}`))).toHaveLength(2);
    expect(ids(await get(`/traces?${W}&service_name=nobody`))).toEqual([]);
  });

  it('filters by min_duration and status', async () => {
    expect(ids(await get(`/traces?${W}&service_name=shop&min_duration=100`))).toEqual([users[3], users[2]]);
    const slow = await get(`/traces?${W}&min_duration=500`);
    expect(ids(slow)).toEqual([multiTrace]);
    const failed = await get(`/traces?${W}&status=error`);
    expect(ids(failed)).toEqual([errorTrace, users[3]]);
    expect(failed.data.every((x: { status: string }) => x.status === 'error')).toBe(true);
    const failedShop = await get(`/traces?${W}&status=error&service_name=shop`);
    expect(ids(failedShop)).toEqual([users[3]]);
    const ok = await get(`/traces?${W}&status=ok&service_name=shop&operation=${encodeURIComponent('GET /users/{n}')}`);
    expect(ids(ok)).toEqual([users[2], users[1], users[0]]);
    expect((await get(`/traces?${W}&status=maybe`, 400)).param).toBe('status');
    expect((await get(`/traces?${W}&min_duration=-1`, 400)).param).toBe('min_duration');
  });

  it('shows a trace whose root never arrived through its earliest orphan span', async () => {
    const r = await get(`/traces?${W}&service_name=backend`);
    expect(r.data).toEqual([
      expect.objectContaining({ trace_id: orphanTrace, has_root: false, root_name: 'POST /orders', service_name: 'backend', span_count: 2, duration_ms: 30 }),
    ]);
  });

  it('keeps a multi-service trace whole and rejects reversed windows', async () => {
    const r = await get(`/traces?${W}&service_name=mailer`);
    expect(r.data).toEqual([expect.objectContaining({ trace_id: multiTrace, root_name: 'GET /orders/42', service_name: 'gateway', services: ['gateway', 'mailer', 'orders'], span_count: 5 })]);
    expect(r.data[0].duration_ms).toBe(90_040);
    expect((await get(`/traces?from=${encodeURIComponent('2026-03-02T00:00:00Z')}&to=${encodeURIComponent('2026-03-01T00:00:00Z')}`, 400)).param).toBe('from');
  });
});

describe('traces.get and traces.errors', () => {
  it('returns 400 for a malformed id and 404 for a trace this project does not have', async () => {
    expect((await get('/traces/not-a-trace', 400)).param).toBe('trace_id');
    expect((await get(`/traces/${hex(16)}`, 404)).code).toBe('not_found');
    expect((await get(`/traces/${hex(16)}/errors`, 404)).code).toBe('not_found');
  });

  it('shows only this project\'s spans of a trace id another project also used', async () => {
    const r = await get(`/traces/${users[0]}`);
    expect(r.services).toEqual(['shop']);
    expect(r.span_count).toBe(1);
    const other = await api(t, 'GET', `/v1/projects/${t.otherProject.projectId}/traces/${users[0]}`, { key: t.otherProject.adminKey });
    expect(other.body.services).toEqual(['intruder']);
    expect((await api(t, 'GET', `/v1/projects/${t.otherProject.projectId}/traces/${users[0]}`, { key: t.keys.admin })).status).toBe(404);
  });

  it('marks a missing parent and gives offsets from the trace start', async () => {
    const r = await get(`/traces/${orphanTrace}`);
    expect(r).toMatchObject({ has_root: false, span_count: 2, duration_ms: 30, status: 'ok' });
    expect(r.spans.map((s: { depth: number; parent_missing: boolean; start_offset_ms: number }) => [s.depth, s.parent_missing, s.start_offset_ms])).toEqual([
      [0, true, 0],
      [1, false, 1],
    ]);
  });

  it('turns a span exception event into an error group correlated to the trace', async () => {
    const r = await get(`/traces/${errorTrace}/errors`);
    expect(r.data).toHaveLength(1);
    expect(r.data[0]).toMatchObject({ type: 'IntegrityError', event_count: 1, span_ids: [errorSpan] });
    expect(r.data[0].title).toContain('duplicate key');
    const tr = await get(`/traces/${errorTrace}`);
    const db = tr.spans.find((s: { span_id: string }) => s.span_id === errorSpan);
    expect(db).toMatchObject({ status: 'error', kind: 'client' });
    expect(db.events).toEqual([expect.objectContaining({ name: 'exception', offset_ms: 20, attributes: expect.objectContaining({ 'exception.type': 'IntegrityError' }) })]);
  });
});

describe('traces.serviceMap', () => {
  it('links a producer to its consumer in another service a minute later, and names uninstrumented databases', async () => {
    const r = await get(`/services?${W}`);
    const edges = r.edges.map((e: { source: string; target: string }) => `${e.source}->${e.target}`);
    expect(edges).toEqual(expect.arrayContaining(['gateway->orders', 'orders->mailer', 'api->mysql']));
    expect(edges).not.toContain('orders->kafka/orders');
    expect(r.nodes.find((n: { service_name: string }) => n.service_name === 'mysql')).toMatchObject({ kinds: ['database'], request_count: 1, error_count: 1 });
    expect(r.nodes.find((n: { service_name: string }) => n.service_name === 'shop')).toMatchObject({ request_count: 6, error_count: 1 });
    expect(r.sampled).toBe(false);
  });

  it('filters by service, duration and status and flags truncation', async () => {
    const around = await get(`/services?${W}&service_name=orders`);
    expect(around.nodes.map((n: { service_name: string }) => n.service_name).sort()).toEqual(['gateway', 'mailer', 'orders']);
    const slow = await get(`/services?${W}&min_duration=500`);
    expect(slow.edges.map((e: { source: string; target: string }) => `${e.source}->${e.target}`)).toEqual(['gateway->orders']);
    expect(slow.nodes.find((n: { service_name: string }) => n.service_name === 'shop')).toBeUndefined();
    const failed = await get(`/services?${W}&status=error`);
    expect(failed.edges.map((e: { source: string; target: string }) => `${e.source}->${e.target}`)).toEqual(['api->mysql']);
    const cut = await get(`/services?${W}&service_limit=2&call_limit=1`);
    expect(cut.nodes).toHaveLength(2);
    expect(cut).toMatchObject({ nodes_truncated: true });
    expect(cut.edges.length).toBeLessThanOrEqual(1);
    expect((await get(`/services?${W}&service_limit=201`, 400)).param).toBe('service_limit');
    expect((await get(`/services?${W}&call_limit=0`, 400)).param).toBe('call_limit');
  });
});
