/**
 * events.latency: received minus event time, per source, over events with known timestamps sent
 * through the Sentry store endpoint and as OTLP span exception events.
 */
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { startTestServer, type TestServer } from '../helpers/server.js';
import { hex, rest, sendEvent } from './errors-fixtures.js';

const T0 = Date.parse('2026-09-01T12:00:00.000Z');
const H = 3_600_000;
let clock = T0;
let t: TestServer;

/** OTLP spans each carrying one `exception` event at `eventAt` (→ one error event with source otlp). */
async function sendOtlpExceptions(items: { eventAt: number; service: string }[]) {
  const body = {
    resourceSpans: items.map((it, i) => ({
      resource: { attributes: [{ key: 'service.name', value: { stringValue: it.service } }] },
      scopeSpans: [
        {
          scope: { name: 'test' },
          spans: [
            {
              traceId: hex(0x9000 + i),
              spanId: hex(0x9000 + i, 16),
              name: 'GET /latency',
              kind: 2,
              startTimeUnixNano: String(BigInt(it.eventAt - 10) * 1_000_000n),
              endTimeUnixNano: String(BigInt(it.eventAt + 10) * 1_000_000n),
              status: { code: 2 },
              events: [
                {
                  name: 'exception',
                  timeUnixNano: String(BigInt(it.eventAt) * 1_000_000n),
                  attributes: [
                    { key: 'exception.type', value: { stringValue: 'LatencyError' } },
                    { key: 'exception.message', value: { stringValue: `late ${i}` } },
                  ],
                },
              ],
            },
          ],
        },
      ],
    })),
  };
  const r = await fetch(`${t.url}/ingest/v1/traces`, { method: 'POST', body: JSON.stringify(body), headers: { 'x-service-key': t.keys.ingest, 'content-type': 'application/json' } });
  expect(r.status).toBe(200);
}

beforeAll(async () => {
  t = await startTestServer({ now: () => clock });
  // Sentry: 20 events received at T0 with latencies 100, 200, …, 2000 ms (service shop)
  for (let i = 1; i <= 20; i++) await sendEvent(t, { type: 'LagError', fn: 'lag', service: 'shop', at: T0 - i * 100 });
  // one event stamped 5 s in the future (client clock ahead): counts as 0
  await sendEvent(t, { type: 'LagError', fn: 'lag', service: 'clocky', at: T0 + 5000 });
  // OTLP: 3 events with latencies 50, 150, 400 ms (service api)
  await sendOtlpExceptions([T0 - 50, T0 - 150, T0 - 400].map((eventAt) => ({ eventAt, service: 'api' })));
  // received an hour and a minute after it happened (an offline cache flushed late): not pipeline latency
  await sendEvent(t, { type: 'LagError', fn: 'lag', service: 'shop', at: T0 - 61 * 60_000 });
  // received two days earlier, outside the default window
  clock = T0 - 48 * H;
  await sendEvent(t, { type: 'LagError', fn: 'lag', service: 'shop', at: clock - 99_000 });
  clock = T0 + 60_000;
});
afterAll(() => t.close());

describe('events.latency', () => {
  it('reports count, nearest-rank percentiles, max and average per source over the last 24 hours', async () => {
    const r = await rest(t, 'GET', '/events/latency');
    expect(r.status, JSON.stringify(r.body)).toBe(200);
    expect(r.body.to).toBe(new Date(T0 + 60_000).toISOString());
    expect(r.body.from).toBe(new Date(T0 + 60_000 - 24 * H).toISOString());
    expect(r.body.data).toEqual([
      // 21 values: 0, 100, …, 2000
      { source: 'sentry', count: 21, p50_ms: 1000, p95_ms: 1900, p99_ms: 2000, max_ms: 2000, avg_ms: 1000 },
      { source: 'otlp', count: 3, p50_ms: 150, p95_ms: 400, p99_ms: 400, max_ms: 400, avg_ms: 200 },
    ]);
  });

  it('filters by service and environment, listing idle sources with zero counts', async () => {
    const shop = await rest(t, 'GET', '/events/latency?service=shop');
    expect(shop.body.data).toEqual([
      { source: 'sentry', count: 20, p50_ms: 1000, p95_ms: 1900, p99_ms: 2000, max_ms: 2000, avg_ms: 1050 },
      { source: 'otlp', count: 0, p50_ms: null, p95_ms: null, p99_ms: null, max_ms: null, avg_ms: null },
    ]);
    const staging = await rest(t, 'GET', '/events/latency?environment=staging');
    expect(staging.body.data.map((x: { count: number }) => x.count)).toEqual([0, 0]);
  });

  it('windows on received time', async () => {
    const from = new Date(T0 - 49 * H).toISOString();
    const to = new Date(T0 - 47 * H).toISOString();
    const r = await rest(t, 'GET', `/events/latency?from=${from}&to=${to}`);
    expect(r.body.data[0]).toEqual({ source: 'sentry', count: 1, p50_ms: 99_000, p95_ms: 99_000, p99_ms: 99_000, max_ms: 99_000, avg_ms: 99_000 });
  });

  it('rejects a reversed window or one longer than 31 days', async () => {
    const a = await rest(t, 'GET', `/events/latency?from=${new Date(T0).toISOString()}&to=${new Date(T0 - H).toISOString()}`);
    expect(a.status).toBe(400);
    const b = await rest(t, 'GET', `/events/latency?from=${new Date(T0 - 40 * 24 * H).toISOString()}&to=${new Date(T0).toISOString()}`);
    expect(b.status).toBe(400);
    expect(b.body.message).toMatch(/31 days/);
  });
});
