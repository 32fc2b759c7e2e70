/**
 * Data shared by bench/scaling.ts and bench/metrics-reads.ts: the day they seed, one seeded random
 * stream, services, routes, resources and the metric points both write.
 */
import type { Attributes, MetricPointRecord } from '../src/domain/telemetry-types.js';
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
