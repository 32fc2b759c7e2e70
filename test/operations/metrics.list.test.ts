import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { startTestServer, type TestServer } from '../helpers/server.js';
import { DAY, HOUR, MIN, iso, ok, read, sendMetrics } from './telemetry-fixtures.js';

const NOW = Date.parse('2026-03-02T12:00:00.000Z');

interface Series {
  metric_name: string;
  type: string;
  unit: string;
  service_name: string;
  first_seen: string;
  last_seen: string;
  point_count: number;
  sample_count: number;
}

describe('metrics.list', () => {
  let t: TestServer;
  beforeAll(async () => {
    t = await startTestServer({ now: () => NOW });
    await sendMetrics(t, [
      {
        resource: { service: 'checkout', environment: 'production' },
        metrics: [
          { name: 'Queue.Depth', unit: '{item}', description: 'Items waiting', gauge: [{ at: NOW - 2 * HOUR, value: 3 }, { at: NOW - HOUR, value: 5 }, { at: NOW - MIN, value: 1 }] },
          {
            name: 'http.server.duration',
            unit: 'ms',
            temporality: 'delta',
            hist: [
              { start: NOW - 3 * HOUR, at: NOW - 2 * HOUR, count: 7, sum: 70, bounds: [10], counts: [3, 4] },
              { start: NOW - 2 * HOUR, at: NOW - HOUR, count: 5, sum: 20, bounds: [10], counts: [5, 0] },
            ],
          },
          {
            name: 'db.duration',
            unit: 's',
            temporality: 'cumulative',
            hist: [
              // started inside the window: its whole count (4), then growth to 10; a restart adds its 3
              { start: NOW - 5 * HOUR, at: NOW - 4 * HOUR, count: 4, sum: 1, bounds: [1], counts: [4, 0] },
              { start: NOW - 5 * HOUR, at: NOW - 3 * HOUR, count: 10, sum: 2, bounds: [1], counts: [9, 1] },
              { start: NOW - 2 * HOUR, at: NOW - HOUR, count: 3, sum: 1, bounds: [1], counts: [3, 0] },
            ],
          },
          { name: 'old.metric', gauge: [{ at: NOW - 3 * DAY, value: 1 }] },
        ],
      },
      {
        resource: { service: 'billing', environment: 'staging' },
        metrics: [{ name: 'invoices.sent', unit: '{invoice}', temporality: 'cumulative', sum: [{ start: NOW - 6 * HOUR, at: NOW - 30 * MIN, value: 12 }] }],
      },
    ]);
  });
  afterAll(() => t?.close());

  it('lists each metric, type and service of the window by name with counts and first/last seen', async () => {
    const b = await ok(t, '/metrics');
    expect(b).toMatchObject({ total: 4, limit: 100, offset: 0, from: iso(NOW - DAY), to: iso(NOW) });
    expect(b.data.map((r: Series) => r.metric_name)).toEqual(['Queue.Depth', 'db.duration', 'http.server.duration', 'invoices.sent']);
    expect(b.data[0]).toEqual({
      metric_name: 'Queue.Depth',
      type: 'gauge',
      unit: '{item}',
      description: 'Items waiting',
      service_name: 'checkout',
      first_seen: iso(NOW - 2 * HOUR),
      last_seen: iso(NOW - MIN),
      point_count: 3,
      sample_count: 3,
    });
  });

  it('counts histogram samples as measurements, cumulative ones by their growth', async () => {
    const b = await ok(t, '/metrics', { metric_type: 'hist' });
    const byName = Object.fromEntries(b.data.map((r: Series) => [r.metric_name, r]));
    expect(byName['http.server.duration']).toMatchObject({ point_count: 2, sample_count: 12 });
    expect(byName['db.duration']).toMatchObject({ point_count: 3, sample_count: 13 });
  });

  it('filters by type, service, environment and a case-insensitive q over name, unit and service', async () => {
    expect((await ok(t, '/metrics', { metric_type: 'sum' })).data.map((r: Series) => r.metric_name)).toEqual(['invoices.sent']);
    expect((await ok(t, '/metrics', { service_name: 'billing' })).total).toBe(1);
    expect((await ok(t, '/metrics', { environment: 'production' })).total).toBe(3);
    expect((await ok(t, '/metrics', { q: 'QUEUE' })).data.map((r: Series) => r.metric_name)).toEqual(['Queue.Depth']);
    expect((await ok(t, '/metrics', { q: '{invoice}' })).data.map((r: Series) => r.metric_name)).toEqual(['invoices.sent']);
    expect((await ok(t, '/metrics', { q: 'BILL' })).data.map((r: Series) => r.metric_name)).toEqual(['invoices.sent']);
    expect((await ok(t, '/metrics', { q: '%' })).total).toBe(0);
    expect((await ok(t, '/metrics', { q: 'db_duration' })).total).toBe(0); // `_` is literal, not a wildcard
  });

  it('takes its window from from and to', async () => {
    const old = await ok(t, '/metrics', { from: iso(NOW - 4 * DAY), to: iso(NOW - 2 * DAY) });
    expect(old.data.map((r: Series) => r.metric_name)).toEqual(['old.metric']);
    const long = await read(t, '/metrics', { from: iso(NOW - 31 * DAY) });
    expect(long.status).toBe(400);
    expect(long.body.param).toBe('from');
  });

  it('pages with limit and offset and reports the total', async () => {
    const p1 = await ok(t, '/metrics', { limit: 3 });
    expect(p1.data).toHaveLength(3);
    expect(p1.total).toBe(4);
    const p2 = await ok(t, '/metrics', { limit: 3, offset: 3 });
    expect(p2.data.map((r: Series) => r.metric_name)).toEqual(['invoices.sent']);
    expect(p2.total).toBe(4);
    const past = await ok(t, '/metrics', { limit: 3, offset: 9 });
    expect(past.data).toEqual([]);
    expect(past.total).toBe(4);
  });
});
