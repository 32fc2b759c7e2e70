/**
 * Data shared by bench/scaling.ts, bench/metrics-reads.ts and bench/operation-rollups.ts: the day they
 * seed, one seeded random stream, services, routes, resources, the metric points and the traces they write.
 */
import { randomBytes } from 'node:crypto';
import type { Attributes, MetricPointRecord, SpanRecord } from '../src/domain/telemetry-types.js';
import { rng } from './lib.js';

export const DAY = 86_400_000;
export const NOW = Date.parse('2026-03-02T00:00:00.000Z');
export const FROM = NOW - DAY;

export const rand = rng(11);
export const int = (n: number) => Math.floor(rand() * n);
export const pick = <T>(xs: readonly T[]): T => xs[int(xs.length)]!;

export const SERVICES = ['frontend', 'checkout', 'payments', 'inventory', 'search', 'worker', 'mailer', 'gateway'];
export const ROUTES = ['/api/orders/{id}', '/api/checkout', '/api/products', '/api/cart', '/api/users/{id}', '/health'];
export const resources = new Map<string, Attributes>(
  SERVICES.map((s) => [s, { 'service.name': s, 'service.version': '1.0.0', 'deployment.environment.name': s === 'gateway' ? 'staging' : 'production' }]),
);
export const scope = { name: 'bench', version: '1', attributes: {} };

/** Metric points: per service a gauge, a cumulative counter per route, a delta histogram per route. */
export function points(t: number, n: number, cum: Map<string, number>): MetricPointRecord[] {
  const out: MetricPointRecord[] = [];
  for (let i = 0; i < n; i++) {
    const svc = pick(SERVICES);
    const route = pick(ROUTES);
    const k = int(3);
    const base = { description: '', flags: 0, resource: resources.get(svc)!, scope, service_name: svc, time_ms: t + i * 0.01 } as const;
    if (k === 0) out.push({ ...base, metric_name: 'process.cpu.utilization', unit: '1', type: 'gauge', temporality: 'unspecified', monotonic: false, start_ms: null, attributes: {}, value: rand() });
    else if (k === 1) {
      const key = `${svc} ${route}`;
      const v = (cum.get(key) ?? 0) + int(100);
      cum.set(key, v);
      out.push({ ...base, metric_name: 'http.server.requests', unit: '{request}', type: 'sum', temporality: 'cumulative', monotonic: true, start_ms: FROM - 1000, attributes: { 'http.route': route }, value: v });
    } else {
      const c = [int(10), int(30), int(20), int(5), int(2)];
      out.push({
        ...base,
        metric_name: 'http.server.request.duration',
        unit: 'ms',
        type: 'hist',
        temporality: 'delta',
        monotonic: false,
        start_ms: t - 60_000,
        attributes: { 'http.route': route },
        count: c.reduce((a, b) => a + b, 0),
        sum: 1000,
        min: 1,
        max: 900,
        bucket_counts: c,
        explicit_bounds: [10, 50, 200, 1000],
      });
    }
  }
  return out;
}

const hex = (n: number) => randomBytes(n).toString('hex');

/**
 * A trace of six spans over two services: server root, internal, client → server child, db client,
 * internal. `fractional`: durations with a fraction of a millisecond; `traceIds` / `errorTraceIds`
 * collect up to 200 ids of traces (about 1 %) and of failed traces for reads to look up.
 */
export function sixSpanTrace(t: number, opts: { fractional?: boolean; traceIds?: string[]; errorTraceIds?: string[] } = {}): SpanRecord[] {
  const a = pick(SERVICES);
  const b = pick(SERVICES.filter((s) => s !== a));
  const route = pick(ROUTES);
  const id = hex(16);
  const failed = rand() < 0.02;
  if (opts.traceIds && opts.traceIds.length < 200 && rand() < 0.01) opts.traceIds.push(id);
  if (failed && opts.errorTraceIds && opts.errorTraceIds.length < 200) opts.errorTraceIds.push(id);
  const dur = 5 + int(400) + (opts.fractional ? rand() : 0);
  const ids = Array.from({ length: 6 }, () => hex(8));
  const mk = (i: number, parent: number | null, svc: string, kind: number, name: string, start: number, d: number, attrs: Attributes = {}): SpanRecord => ({
    trace_id: id,
    span_id: ids[i]!,
    parent_span_id: parent === null ? null : ids[parent]!,
    trace_state: '',
    name,
    kind,
    start_ms: t + start,
    end_ms: t + start + d,
    status_code: failed && (i === 0 || i === 3) ? 2 : 1,
    status_message: '',
    attributes: attrs,
    events: [],
    links: [],
    resource: resources.get(svc)!,
    scope,
    service_name: svc,
  });
  return [
    mk(0, null, a, 2, `GET ${route}`, 0, dur, { 'http.request.method': 'GET', 'http.route': route, 'http.response.status_code': failed ? 500 : 200 }),
    mk(1, 0, a, 1, 'authorize', 1, 2),
    mk(2, 0, a, 3, 'POST', 4, dur - 8, { 'http.request.method': 'POST', 'server.address': b }),
    mk(3, 2, b, 2, 'POST /internal', 5, dur - 10, { 'http.request.method': 'POST', 'http.route': '/internal' }),
    mk(4, 3, b, 3, 'SELECT orders', 6, (dur - 12) / 2, { 'db.system': 'postgresql' }),
    mk(5, 3, b, 1, 'render', 6 + (dur - 12) / 2, 2),
  ];
}
