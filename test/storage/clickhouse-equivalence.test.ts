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

/**
 * Root spans 10 to 20 hours before NOW (outside the windows of the random reads), in groups of 1 to
 * 45 spans and a few large ones, with repeated durations: ClickHouse finds each percentile's ranks
 * without sorting (traces-read.ts, valueAtRank), at every group size.
 */
function percentileSpans(r: () => number): SpanRecord[] {
  const out: SpanRecord[] = [];
  const hex = (n: number) => Array.from({ length: n }, () => Math.floor(r() * 16).toString(16)).join('');
  const sizes = [...Array.from({ length: 45 }, (_, i) => i + 1), 97, 200, 401, 1000, 2500];
  for (const n of sizes) {
    const svc = n % 2 ? 'pct-odd' : 'pct-even';
    const few = n % 3 === 0; // few distinct durations: long runs of equal values
    for (let i = 0; i < n; i++) {
      const start = NOW - 20 * HOUR + Math.floor(r() * 10 * HOUR);
      const dur = few ? Math.floor(r() * 4) * 2.5 : Math.round(r() * r() * 80_000) / 8;
      out.push({
        trace_id: hex(32), span_id: hex(16), parent_span_id: null, trace_state: '', name: `GET /p${n}`, kind: 2, start_ms: start, end_ms: start + dur,
        status_code: r() < 0.1 ? 2 : 1, status_message: '', attributes: { 'http.route': `/p${n}` }, events: [], links: [],
        resource: { 'service.name': svc, 'deployment.environment.name': r() < 0.5 ? 'prod' : 'staging' }, scope: { name: 'eq', version: '1', attributes: {} }, service_name: svc,
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
    const pcts = percentileSpans(rng(21));
    for (const s of [a, b]) {
      // several batches, as ingest writes them (a trace's spans may arrive in two)
      for (let i = 0; i < spans.length; i += 97) await s.s.services.writeBatch(() => s.s.services.telemetry.insertSpans(s.projectId, spans.slice(i, i + 97), 'otlp', NOW));
      for (let i = 0; i < pcts.length; i += 500) await s.s.services.writeBatch(() => s.s.services.telemetry.insertSpans(s.projectId, pcts.slice(i, i + 500), 'otlp', NOW));
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

  it('answer operation stats with the same percentiles at every group size', async () => {
    const w = `from=${new Date(NOW - 21 * HOUR).toISOString()}&to=${new Date(NOW - 9 * HOUR).toISOString()}`;
    const paths = [
      `/trace-operations?${w}&sort=p95&limit=100`,
      `/trace-operations?${w}&sort=last_seen&limit=100`,
      `/trace-operations?${w}&sort=count&limit=7`,
      `/trace-operations?${w}&sort=p95&limit=5&service_name=pct-odd`,
      `/trace-operations?${w}&status=ok&environment=prod&limit=100`,
      `/trace-operations?${w}&min_duration=100&sort=error_rate&limit=100`,
      `/trace-operations?from=${new Date(NOW - 16 * HOUR).toISOString()}&to=${new Date(NOW - 13 * HOUR - 7).toISOString()}&limit=100`,
      `/services?${w}`,
      // windows cut inside minutes, fewer rows than groups: counts and last-seen times from whole minutes plus the partial ends
      `/trace-operations?from=${new Date(NOW - 19 * HOUR + 12_345).toISOString()}&to=${new Date(NOW - 11 * HOUR - 54_321).toISOString()}&status=error&limit=3`,
      `/trace-operations?from=${new Date(NOW - 17 * HOUR - 1).toISOString()}&to=${new Date(NOW - 12 * HOUR + 999).toISOString()}&environment=staging&sort=count&limit=4`,
      `/trace-operations?from=${new Date(NOW - 15 * HOUR + 30_000).toISOString()}&to=${new Date(NOW - 15 * HOUR + 50_000).toISOString()}&limit=2`,
      `/services?from=${new Date(NOW - 18 * HOUR + 777).toISOString()}&to=${new Date(NOW - 10 * HOUR - 777).toISOString()}&status=ok`,
    ];
    for (const p of paths) {
      const x = await api(a, 'GET', `/v1/projects/${a.projectId}${p}`, { key: a.keys.admin });
      const y = await api(b, 'GET', `/v1/projects/${b.projectId}${p}`, { key: b.keys.admin });
      expect(x.status, p).toBe(200);
      expect(y.body, p).toEqual(x.body);
    }
    const rows = (await api(b, 'GET', `/v1/projects/${b.projectId}${paths[0]}`, { key: b.keys.admin })).body.data as { p95_ms: number | null }[];
    expect(rows.length).toBe(50);
  });

  it('estimate the spans of a window as SQLite does', async () => {
    for (const probe of [1, 7, 50, 400, 5000]) {
      for (const [from, to] of [[NOW - 21 * HOUR, NOW], [NOW - 6 * HOUR, NOW - HOUR], [NOW - 15 * HOUR, NOW - 15 * HOUR + 60_000]]) {
        const x = await a.s.services.tracesRead.estimateSpans(a.projectId, from!, to!, probe);
        const y = await b.s.services.tracesRead.estimateSpans(b.projectId, from!, to!, probe);
        expect(y, `${probe} ${from}-${to}`).toEqual(x);
      }
    }
  });
});
