import { describe, expect, it } from 'vitest';
import { buildServiceMap, peerTargetOf, planSlices, type MapSpan, type ServiceMapInput } from '../../../src/domain/traces/service-map.js';

let seq = 0;
function sp(p: Partial<MapSpan> & { service_name: string; kind: number }): MapSpan {
  seq++;
  return { trace_id: 't1', span_id: `s${seq}`, parent_span_id: null, duration_ms: 10, status_code: 0, core: true, attributes: null, ...p };
}

const base = (spans: MapSpan[], over: Partial<ServiceMapInput> = {}): ServiceMapInput => ({
  windowMs: 60 * 60_000,
  services: [],
  spans,
  sampleFraction: 1,
  filter: {},
  serviceLimit: 50,
  callLimit: 200,
  ...over,
});

describe('peerTargetOf', () => {
  it('names a database by its system and address, then messaging, then the peer service or host', async () => {
    expect(peerTargetOf({ 'peer.service': 'stripe', 'server.address': 'api.stripe.com' })).toEqual({ name: 'stripe', kind: 'external' });
    expect(peerTargetOf({ 'db.system': 'postgresql', 'db.namespace': 'orders', 'server.address': 'db' })).toEqual({ name: 'postgresql@db', kind: 'database' });
    expect(peerTargetOf({ 'db.system': 'postgresql', 'peer.service': 'orders-db', 'server.address': '10.0.0.5' })).toEqual({ name: 'postgresql@orders-db', kind: 'database' });
    expect(peerTargetOf({ 'db.system': 'mysql' })).toEqual({ name: 'mysql', kind: 'database' });
    expect(peerTargetOf({ 'db.system.name': 'redis' })).toEqual({ name: 'redis', kind: 'database' });
    expect(peerTargetOf({ 'messaging.system': 'kafka', 'messaging.destination.name': 'orders' })).toEqual({ name: 'kafka/orders', kind: 'messaging' });
    expect(peerTargetOf({ 'messaging.system': 'rabbitmq' })).toEqual({ name: 'rabbitmq', kind: 'messaging' });
    expect(peerTargetOf({ 'net.peer.name': 'legacy.local' })).toEqual({ name: 'legacy.local', kind: 'external' });
    expect(peerTargetOf({ 'http.method': 'GET', 'peer.service': '  ' })).toBeNull();
  });
});

describe('buildServiceMap', () => {
  it('links parent and child spans of different services and client spans nobody answered', async () => {
    const root = sp({ service_name: 'web', kind: 2 });
    const call = sp({ service_name: 'web', kind: 3, parent_span_id: root.span_id, attributes: { 'server.address': 'checkout.internal' } });
    const srv = sp({ service_name: 'checkout', kind: 2, parent_span_id: call.span_id, duration_ms: 40, status_code: 2 });
    const db = sp({ service_name: 'checkout', kind: 3, parent_span_id: srv.span_id, duration_ms: 4, attributes: JSON.stringify({ 'db.system': 'postgresql' }) });
    const pay = sp({ service_name: 'checkout', kind: 3, parent_span_id: srv.span_id, duration_ms: 150, attributes: { 'peer.service': 'stripe' } });
    const pub = sp({ service_name: 'checkout', kind: 4, parent_span_id: srv.span_id, attributes: { 'messaging.system': 'kafka', 'messaging.destination.name': 'orders' } });
    const map = await buildServiceMap(
      base([root, call, srv, db, pay, pub], {
        services: [
          { service_name: 'web', request_count: 1, error_count: 0 },
          { service_name: 'checkout', request_count: 1, error_count: 1 },
        ],
      }),
    );
    const edges = Object.fromEntries(map.edges.map((e) => [`${e.source}->${e.target}`, e]));
    expect(Object.keys(edges).sort()).toEqual(['checkout->kafka/orders', 'checkout->postgresql', 'checkout->stripe', 'web->checkout']);
    // the call answered by checkout's server span is not also an edge to "checkout.internal"
    expect(edges['web->checkout']).toMatchObject({ call_count: 1, error_count: 1, error_rate: 1, p50_ms: 40 });
    expect(edges['checkout->stripe']!.p95_ms).toBe(150);
    const kinds = Object.fromEntries(map.nodes.map((n) => [n.service_name, n.kinds]));
    expect(kinds).toEqual({ web: ['service'], checkout: ['service'], postgresql: ['database'], stripe: ['external'], 'kafka/orders': ['messaging'] });
    const checkout = map.nodes.find((n) => n.service_name === 'checkout')!;
    expect(checkout).toMatchObject({ request_count: 1, error_count: 1, error_rate: 1, p50_ms: 40 });
    expect(checkout.throughput_per_min).toBeCloseTo(1 / 60, 3);
    expect(map.nodes_truncated || map.edges_truncated).toBe(false);
  });

  it('treats a peer that is an instrumented service as that service and looks up parents and consumers outside the sample', async () => {
    const cli = sp({ service_name: 'web', kind: 3, attributes: { 'peer.service': 'users' } });
    const orphan = sp({ service_name: 'billing', kind: 2, parent_span_id: 'not-read' });
    const prod = sp({ service_name: 'billing', kind: 4, attributes: { 'messaging.system': 'sqs' } });
    const map = await buildServiceMap(
      base([cli, orphan, prod], {
        services: [
          { service_name: 'users', request_count: 3, error_count: 0 },
          { service_name: 'billing', request_count: 1, error_count: 0 },
        ],
        lookups: { parentServices: async (sps) => sps.map(() => 'gateway'), childServices: async (sps) => sps.map(() => ['mailer']) },
      }),
    );
    expect(map.edges.map((e) => `${e.source}->${e.target}`).sort()).toEqual(['gateway->billing', 'web->users']);
    expect(map.nodes.find((n) => n.service_name === 'users')!.kinds).toEqual(['service']);
    expect(map.nodes.find((n) => n.service_name === 'sqs')).toBeUndefined();
  });

  it('scales sampled counts, filters spans, keeps a service\'s neighbourhood and flags truncation', async () => {
    const spans: MapSpan[] = [];
    for (let i = 0; i < 4; i++) {
      const root = sp({ service_name: 'a', kind: 2, trace_id: `t${i}` });
      spans.push(root);
      spans.push(sp({ service_name: 'b', kind: 2, trace_id: `t${i}`, parent_span_id: root.span_id, duration_ms: i * 100, status_code: i === 3 ? 2 : 0 }));
      spans.push(sp({ service_name: 'a', kind: 3, trace_id: `t${i}`, parent_span_id: root.span_id, attributes: { 'db.system': 'mysql' } }));
      spans.push(sp({ service_name: 'c', kind: 3, trace_id: `t${i}`, attributes: { 'db.system': 'redis' }, core: i < 2 }));
    }
    const services = ['a', 'b', 'c'].map((s) => ({ service_name: s, request_count: 0, error_count: 0 }));
    const exact = (b: number) => [
      { service_name: 'a', request_count: 16, error_count: 0 },
      { service_name: 'b', request_count: b, error_count: 0 },
      { service_name: 'c', request_count: 8, error_count: 0 }, // its parentless client spans are roots
    ];
    const sampled = await buildServiceMap(base(spans, { services: exact(16), sampleFraction: 0.25 }));
    expect(sampled.edges.find((e) => e.target === 'b')!.call_count).toBe(16);
    expect(sampled.edges.find((e) => e.target === 'mysql')!.call_count).toBe(16); // a's 4 sampled entries stand for 16
    expect(sampled.edges.find((e) => e.target === 'redis')!.call_count).toBe(8); // 2 core spans of c's 2 sampled roots, c has 8
    // a caller without sampled entry spans scales by the sampled share of the window
    const lone = sp({ service_name: 'd', kind: 3, parent_span_id: 'elsewhere', attributes: { 'db.system': 'oracle' } });
    expect((await buildServiceMap(base([...spans, lone], { services: exact(16), sampleFraction: 0.25 }))).edges.find((e) => e.target === 'oracle')!.call_count).toBe(4);
    // calls judged by the callee's entry spans follow the callee's exact count (a ratio estimate)
    expect((await buildServiceMap(base(spans, { services: exact(20), sampleFraction: 0.25 }))).edges.find((e) => e.target === 'b')!.call_count).toBe(20);

    const slow = await buildServiceMap(base(spans, { services, filter: { minDurationMs: 150 } }));
    expect(slow.edges.find((e) => e.target === 'b')!.call_count).toBe(2);
    const failed = await buildServiceMap(base(spans, { services, filter: { status: 'error' } }));
    expect(failed.edges.map((e) => e.target)).toEqual(['b']);

    const around = await buildServiceMap(base(spans, { services, filter: { serviceName: 'b' } }));
    expect(around.nodes.map((n) => n.service_name).sort()).toEqual(['a', 'b']);
    expect(around.edges).toHaveLength(1);

    const busy = [
      { service_name: 'a', request_count: 10, error_count: 0 },
      { service_name: 'b', request_count: 5, error_count: 0 },
      { service_name: 'c', request_count: 1, error_count: 0 },
    ];
    const cut = await buildServiceMap(base(spans, { services: busy, serviceLimit: 2, callLimit: 1 }));
    expect(cut.nodes.map((n) => n.service_name)).toEqual(['a', 'b']);
    expect(cut.nodes).toHaveLength(2);
    expect(cut.nodes_truncated).toBe(true);
    expect(cut.edges).toHaveLength(1);
    expect(cut.edges_truncated).toBe(true);
    for (const e of cut.edges) expect(cut.nodes.map((n) => n.service_name)).toEqual(expect.arrayContaining([e.source, e.target]));
  });
});

describe('planSlices', () => {
  it('covers the window once when the fraction is 1 and spreads sampled slices over it', async () => {
    expect(planSlices(0, 1000, 1)).toEqual([{ fromMs: 0, toMs: 1000 }]);
    const slices = planSlices(0, 24_000, 0.1, 24);
    expect(slices).toHaveLength(24);
    const total = slices.reduce((s, x) => s + (x.toMs - x.fromMs), 0);
    expect(total).toBeCloseTo(2400, 6);
    // one per stratum, inside it
    expect(new Set(slices.map((s) => Math.floor(s.fromMs / 1000))).size).toBe(24);
    // a prefix is spread: the first four slices sit in four different quarters
    expect(new Set(slices.slice(0, 4).map((s) => Math.floor(s.fromMs / 6000))).size).toBe(4);
    expect(planSlices(5, 5, 0.5)).toEqual([]);
  });
});
