/**
 * Issue 20: "every operation answers the same on both backends". Random traces (seeded: services,
 * environments, entry and inner spans, equal start times, errors, attributes of several types, events)
 * are written through the same span writer into a SQLite-only server and a server with spans in
 * ClickHouse; then a battery of trace reads with random filters, sorts, pages and windows must give
 * identical answers. Runs in the ClickHouse test projects (18.16 and chdb).
 */
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import type { SpanRecord } from '../../src/domain/telemetry-types.js';
import { api, startTestServer, type TestServer } from '../helpers/server.js';
import { rng } from '../../bench/lib.js';

const mode = process.env.SIGHTLINE_TEST_CLICKHOUSE;
const NOW = Date.parse('2026-04-10T12:00:00.000Z');
const HOUR = 3_600_000;

const SERVICES = ['web', 'api', 'billing', 'search'];
const ENVS = ['prod', 'staging'];
const ROUTES = ['/orders/{id}', '/cart', '/users/{id}', '/health'];

function makeSpans(r: () => number, traces: number): SpanRecord[] {
  const pick = <T,>(xs: readonly T[]) => xs[Math.floor(r() * xs.length)]!;
  const hex = (n: number) => Array.from({ length: n }, () => Math.floor(r() * 16).toString(16)).join('');
  const out: SpanRecord[] = [];
  for (let t = 0; t < traces; t++) {
    const trace = hex(32);
    const env = pick(ENVS);
    const svc = pick(SERVICES);
    const resource = { 'service.name': svc, 'deployment.environment.name': env, 'service.version': `1.${t % 3}` };
    // coarse start times: many equal starts across traces (ties in every ordering)
    const start = NOW - Math.floor(r() * 6) * HOUR - Math.floor(r() * 40) * 60_000;
    const route = pick(ROUTES);
    const rootId = hex(16);
    const dur = Math.round(r() * 5000) / 8; // multiples of 0.125 ms: equal durations too
    const failed = r() < 0.2;
    out.push({
      trace_id: trace, span_id: rootId, parent_span_id: null, trace_state: t % 5 ? '' : 'k=v', name: `GET ${route.replace('{id}', String(t))}`,
      kind: pick([2, 2, 5, 1]), start_ms: start, end_ms: start + dur, status_code: failed ? 2 : pick([0, 1]), status_message: failed ? 'boom' : '',
      attributes: { 'http.request.method': 'GET', 'http.route': route, 'http.response.status_code': failed ? 500 : 200, retry: r() < 0.5, ratio: Math.round(r() * 100) / 10, tags: ['a', 'b'] },
      events: r() < 0.3 ? [{ time_ms: start + 1, name: 'exception', attributes: { 'exception.type': 'Error' } }] : [],
      links: [], resource, scope: { name: 'eq', version: '1', attributes: {} }, service_name: svc,
    });
    const children = Math.floor(r() * 4);
    for (let c = 0; c < children; c++) {
      const child = pick(SERVICES);
      const cs = start + Math.floor(r() * 3);
      out.push({
        trace_id: trace, span_id: hex(16), parent_span_id: rootId, trace_state: '', name: c % 2 ? 'SELECT rows' : `call ${child}`,
        kind: pick([3, 3, 1, 4, 2]), start_ms: cs, end_ms: cs + Math.round(r() * 800) / 4, status_code: r() < 0.1 ? 2 : 0, status_message: '',
        attributes: c % 2 ? { 'db.system': 'postgresql', 'server.address': 'pg' } : { 'peer.service': child, 'messaging.destination.name': 'q1' },
        events: [], links: [], resource: { ...resource, 'service.name': child }, scope: { name: 'eq', version: '1', attributes: {} }, service_name: child,
      });
    }
  }
  return out;
}

describe.skipIf(mode !== 'server' && mode !== 'chdb')('trace reads on SQLite and on ClickHouse', () => {
  let a: TestServer;
  let b: TestServer;
  const traceIds: string[] = [];
  beforeAll(async () => {
    a = await startTestServer({ now: () => NOW, clickhouse: false });
    b = await startTestServer({ now: () => NOW });
    const spans = makeSpans(rng(20), 400);
    for (const sp of spans) if (!sp.parent_span_id) traceIds.push(sp.trace_id);
    for (const s of [a, b]) {
      // several batches, as ingest writes them (a trace's spans may arrive in two)
      for (let i = 0; i < spans.length; i += 97) await s.s.services.writeBatch(() => s.s.services.telemetry.insertSpans(s.projectId, spans.slice(i, i + 97), 'otlp', NOW));
    }
  });
  afterAll(async () => {
    await a?.close();
    await b?.close();
  });

  it('answer every trace read with the same body', async () => {
    const r = rng(7);
    const pick = <T,>(xs: readonly T[]) => xs[Math.floor(r() * xs.length)]!;
    const iso = (ms: number) => new Date(ms).toISOString();
    const paths: string[] = [];
    for (let i = 0; i < 60; i++) {
      const from = NOW - pick([7, 5, 3, 1]) * HOUR - pick([0, 0, 17]) * 60_000;
      const to = pick([NOW, NOW - HOUR, NOW - 2 * HOUR + 30_000]);
      const w = `from=${iso(from)}&to=${iso(to)}`;
      const q: string[] = [w];
      if (r() < 0.3) q.push(`service_name=${pick(SERVICES)}`);
      if (r() < 0.2) q.push(`environment=${pick(ENVS)}`);
      if (r() < 0.25) q.push(`status=${pick(['ok', 'error'])}`);
      if (r() < 0.2) q.push(`min_duration=${pick([10, 100, 300])}`);
      const kind = pick(['list', 'list', 'ops', 'map']);
      if (kind === 'list') {
        if (r() < 0.15) q.push(`attributes=${encodeURIComponent(pick(['http.route:/cart', 'retry:1', 'db.system:postgresql', 'http.response.status_code:500']))}`);
        if (r() < 0.3) q.push('sort=duration');
        q.push(`limit=${pick([5, 20, 50])}`, `offset=${pick([0, 0, 5, 30])}`);
        if (r() < 0.2) q.push(`operation=${encodeURIComponent(pick(['GET /cart', 'GET /orders/{n}', 'SELECT rows']))}`);
        paths.push(`/traces?${q.join('&')}`);
      } else if (kind === 'ops') {
        q.push(`sort=${pick(['last_seen', 'count', 'p95', 'error_rate'])}`, `limit=${pick([3, 10, 50])}`);
        paths.push(`/trace-operations?${q.join('&')}`);
      } else {
        paths.push(`/services?${q.filter((x) => !x.startsWith('environment')).join('&')}`);
      }
    }
    for (let i = 0; i < 15; i++) paths.push(`/traces/${pick(traceIds)}`, `/traces/${pick(traceIds)}/errors`);
    paths.push(`/observability-summary?from=${iso(NOW - 6 * HOUR)}&to=${iso(NOW)}`);
    let compared = 0;
    for (const p of paths) {
      const x = await api(a, 'GET', `/v1/projects/${a.projectId}${p}`, { key: a.keys.admin });
      const y = await api(b, 'GET', `/v1/projects/${b.projectId}${p}`, { key: b.keys.admin });
      expect(y.status, p).toBe(x.status);
      expect(y.body, p).toEqual(x.body);
      if (x.status === 200) compared++;
    }
    expect(compared).toBeGreaterThan(60);
  });
});
