import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { startTestServer, type TestServer } from '../helpers/server.js';
import { DAY, HOUR, MIN, SEV, iso, ok, read, sendLogs, sendMetrics, type LogSpec } from './telemetry-fixtures.js';

const NOW = Date.parse('2026-03-02T12:00:00.000Z');

describe('observability.summary', () => {
  let t: TestServer;
  beforeAll(async () => {
    t = await startTestServer({ now: () => NOW });
    const api: LogSpec[] = [
      ...Array.from({ length: 20 }, (_, i) => ({ at: NOW - (i + 1) * 10 * MIN, body: `GET /items ${i} ok`, severity: SEV.info })),
      ...Array.from({ length: 12 }, (_, i) => ({ at: NOW - (i + 1) * 7 * MIN, body: `upstream error ${i}`, severity: i % 4 === 0 ? SEV.fatal : SEV.error })),
      { at: NOW - 2 * MIN, body: 'slow response', severity: SEV.warn },
      { at: NOW - 3 * MIN, body: 'debug detail', severity: SEV.debug, attributes: { 'log.source': 'stdout' } },
    ];
    await sendLogs(t, [
      { resource: { service: 'api', environment: 'production', release: '1.2.0' }, logs: api },
      { resource: { service: 'web', environment: 'production', release: '5.0.0' }, logs: [{ at: NOW - MIN, body: 'web warning', severity: SEV.warn }] },
      { resource: { service: 'api', environment: 'staging', release: '1.3.0-rc' }, logs: [{ at: NOW - 4 * MIN, body: 'staging error', severity: SEV.error }] },
      { resource: { service: 'api', environment: 'production' }, logs: [{ at: NOW - 2 * DAY, body: 'outside the window', severity: SEV.fatal }] },
    ]);
    const g = (name: string, values: number[], unit = '') => ({ name, unit, gauge: values.map((value, i) => ({ at: NOW - (i + 1) * MIN, value })) });
    await sendMetrics(t, [
      {
        resource: { service: 'api', environment: 'production' },
        metrics: [
          g('api.queue.depth', [1, 2, 3, 4], '{item}'),
          g('api.cpu', [0.5, 0.5]),
          g('api.memory', [100, 200, 300]),
          { name: 'api.requests', temporality: 'delta', sum: [1, 2, 3, 4, 5, 6].map((value, i) => ({ start: NOW - (i + 2) * MIN, at: NOW - (i + 1) * MIN, value })) },
          {
            name: 'api.rpc',
            unit: 'ms',
            temporality: 'cumulative',
            exp: [
              { start: NOW - 3 * HOUR, at: NOW - 2 * HOUR, count: 2, sum: 10, scale: 0, positive: { offset: 1, counts: [2] } },
              { start: NOW - 3 * HOUR, at: NOW - HOUR, count: 6, sum: 50, scale: 0, positive: { offset: 1, counts: [4, 2] } },
            ],
          },
        ],
      },
      { resource: { service: 'web', environment: 'production' }, metrics: [g('web.latency', [10, 20, 30, 40, 50, 60, 70], 'ms')] },
    ]);
  });
  afterAll(() => t?.close());

  it('summarizes log levels, sources and releases of the window', async () => {
    const b = await ok(t, '/observability-summary');
    expect(b.from).toBe(iso(NOW - DAY));
    expect(b.to).toBe(iso(NOW));
    expect(b.logs.total).toBe(36);
    expect(b.logs.levels).toEqual({ trace: 0, debug: 1, info: 20, warn: 2, error: 10, fatal: 3 });
    expect(b.logs.top_sources).toEqual([
      { value: 'otlp', count: 35 },
      { value: 'stdout', count: 1 },
    ]);
    expect(b.logs.top_releases).toEqual([
      { value: '1.2.0', count: 34 },
      { value: '1.3.0-rc', count: 1 },
      { value: '5.0.0', count: 1 },
    ]);
  });

  it('lists the newest warn, error and fatal logs up to log_limit (default 8)', async () => {
    const b = await ok(t, '/observability-summary');
    expect(b.logs.recent_notable).toHaveLength(8);
    expect(b.logs.recent_notable.map((r: { body: string }) => r.body).slice(0, 4)).toEqual(['web warning', 'slow response', 'staging error', 'upstream error 0']);
    expect(b.logs.recent_notable.every((r: { level: string }) => ['warn', 'error', 'fatal'].includes(r.level))).toBe(true);
    const all = await ok(t, '/observability-summary', { log_limit: 20 });
    expect(all.logs.recent_notable).toHaveLength(15);
    const bad = await read(t, '/observability-summary', { log_limit: 21 });
    expect(bad.status).toBe(400);
    expect(bad.body).toMatchObject({ code: 'invalid_parameter', param: 'log_limit' });
  });

  it('picks the busiest metrics and summarizes up to metric_limit (default 3) with avg, p50, p90 and p99', async () => {
    const b = await ok(t, '/observability-summary');
    expect(b.metrics.candidate_metrics.map((m: { metric_name: string; point_count: number }) => [m.metric_name, m.point_count])).toEqual([
      ['web.latency', 7],
      ['api.requests', 6],
      ['api.queue.depth', 4],
      ['api.memory', 3],
      ['api.cpu', 2],
      ['api.rpc', 2],
    ]);
    expect(b.metrics.candidate_metrics[0]).toEqual({ metric_name: 'web.latency', type: 'gauge', unit: 'ms', point_count: 7, services: ['web'] });
    expect(b.metrics.selected_metrics.map((m: { metric_name: string }) => m.metric_name)).toEqual(['web.latency', 'api.requests', 'api.queue.depth']);
    const latency = b.metrics.selected_metrics[0];
    // 10…70: avg 40; type-7 percentiles: p50 40, p90 (n−1)·0.9 = 5.4 → 60 + 0.4·10 = 64, p99 5.94 → 69.4
    expect(latency).toMatchObject({ type: 'gauge', unit: 'ms', point_count: 7, sample_count: 7, avg: 40, p50: 40 });
    expect(latency.p90).toBeCloseTo(64, 10);
    expect(latency.p99).toBeCloseTo(69.4, 10);
    const depth = b.metrics.selected_metrics[2];
    expect(depth.avg).toBe(2.5);
    expect(depth.p90).toBeCloseTo(3.7, 10);
  });

  it('narrows candidates with metric_query and keeps the average of a cumulative exponential histogram without percentiles', async () => {
    const b = await ok(t, '/observability-summary', { metric_query: 'API.R', metric_limit: 5 });
    expect(b.metrics.candidate_metrics.map((m: { metric_name: string }) => m.metric_name)).toEqual(['api.requests', 'api.rpc']);
    const rpc = b.metrics.selected_metrics.find((m: { metric_name: string }) => m.metric_name === 'api.rpc');
    // first point: start 3 h ago lies inside the window → whole (2, sum 10); second: +4, sum +40 → 50 / 6
    expect(rpc).toMatchObject({ type: 'exponential_histogram', sample_count: 6, p50: null, p90: null, p99: null });
    expect(rpc.avg).toBeCloseTo(50 / 6, 10);
    const none = await ok(t, '/observability-summary', { metric_query: 'nothing-like-this' });
    expect(none.metrics).toEqual({ candidate_metrics: [], selected_metrics: [] });
    expect(none.highlights).toContain('No metric name contains "nothing-like-this" in the window.');
  });

  it('applies service_name and environment to logs and metrics alike', async () => {
    const b = await ok(t, '/observability-summary', { service_name: 'api', environment: 'production' });
    expect(b.logs.total).toBe(34);
    expect(b.logs.recent_notable.map((r: { service: string; environment: string }) => `${r.service}/${r.environment}`)).toEqual(Array(8).fill('api/production'));
    expect(b.metrics.candidate_metrics.every((m: { services: string[] }) => m.services.join() === 'api')).toBe(true);
    expect(b.metrics.candidate_metrics.map((m: { metric_name: string }) => m.metric_name)).not.toContain('web.latency');
  });

  it('writes compact highlights', async () => {
    const b = await ok(t, '/observability-summary');
    expect(b.highlights[0]).toBe('36 logs: 3 fatal, 10 error, 2 warn.');
    expect(b.highlights).toContain('Top log source: otlp (97%).');
    expect(b.highlights.some((h: string) => h.startsWith('Latest error: "staging error" (api) at '))).toBe(true);
    expect(b.highlights).toContain('web.latency (gauge, ms): avg 40, p50 40, p90 64, p99 69.4.');
    const empty = await ok(t, '/observability-summary', { service_name: 'ghost' });
    expect(empty.highlights).toEqual(['No logs in the window for service ghost.', 'No metrics in the window.']);
  });

  it('answers 400 for metric_limit 6 and for invalid windows', async () => {
    const six = await read(t, '/observability-summary', { metric_limit: 6 });
    expect(six.status).toBe(400);
    expect(six.body).toMatchObject({ code: 'invalid_parameter', param: 'metric_limit' });
    expect((await read(t, '/observability-summary', { metric_limit: 5 })).status).toBe(200);
    const reversed = await read(t, '/observability-summary', { from: iso(NOW), to: iso(NOW - HOUR) });
    expect(reversed.status).toBe(400);
    expect(reversed.body.param).toBe('from');
    const long = await read(t, '/observability-summary', { from: iso(NOW - 31 * DAY) });
    expect(long.body.param).toBe('from');
    const naive = await read(t, '/observability-summary', { to: '2026-03-02T12:00:00' });
    expect(naive.body.param).toBe('to');
  });
});
