/**
 * Issue 11 item 4: metrics recorded with the real OpenTelemetry SDK (OTLP/JSON exporter, delta
 * temporality) with point attributes (http.route, queue) and resource attributes (host.name), read
 * back by attribute filters, group_by (with series truncation), each aggregation with known numbers,
 * and the attribute keys of metrics.inspect. Exemplars: the JS SDK does not export them, so an
 * OTLP/JSON payload as a collector sends it carries them, and so does an OTLP protobuf one (encoded
 * with the opentelemetry-proto schema).
 */
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { resourceFromAttributes } from '@opentelemetry/resources';
import { AggregationTemporality, MeterProvider, PeriodicExportingMetricReader } from '@opentelemetry/sdk-metrics';
import { OTLPMetricExporter } from '@opentelemetry/exporter-metrics-otlp-http';
import { startTestServer, type TestServer } from '../helpers/server.js';
import { attrs, nanos, ok, read } from '../operations/telemetry-fixtures.js';
import { ExportMetricsServiceRequest } from '../../src/ingest/otlp/schema.js';

interface Bucket {
  time: string;
  value: number | null;
  sample_count: number;
  exemplars?: { time: string; value: number; trace_id: string | null; span_id: string | null; attributes: Record<string, unknown> }[];
}
/** The one bucket holding data (everything was recorded within a second). */
const only = (b: { buckets: Bucket[] }) => {
  const full = b.buckets.filter((x) => x.value !== null);
  expect(full).toHaveLength(1);
  return full[0]!;
};

const TRACE = '5b8efff798038103d269b633813fc60c';
const SPAN = 'eee19b7ec3c1b174';

let t: TestServer;
let exemplarAt = 0;
beforeAll(async () => {
  t = await startTestServer();
  const exporter = new OTLPMetricExporter({ url: `${t.url}/ingest/v1/metrics`, headers: { 'x-service-key': t.keys.ingest }, temporalityPreference: AggregationTemporality.DELTA });
  const reader = new PeriodicExportingMetricReader({ exporter, exportIntervalMillis: 3_600_000 });
  const provider = new MeterProvider({ resource: resourceFromAttributes({ 'service.name': 'api', 'host.name': 'web-1' }), readers: [reader] });
  const meter = provider.getMeter('api');
  const duration = meter.createHistogram('http.duration', { unit: 'ms' });
  for (const v of [10, 20, 30, 40]) duration.record(v, { 'http.route': '/a' });
  for (const v of [100, 200]) duration.record(v, { 'http.route': '/b' });
  duration.record(5, { 'http.route': '/c' });
  const depth = meter.createGauge('queue.depth');
  depth.record(4, { queue: 'a' });
  depth.record(10, { queue: 'b' });
  depth.record(1, { queue: 'c' });
  const requests = meter.createCounter('http.requests');
  requests.add(6, { 'http.route': '/a' });
  requests.add(3, { 'http.route': '/b' });
  // Not in the records' millisecond: a cumulative point with start == time counts zero (spec rule 4).
  await new Promise((r) => setTimeout(r, 5));
  await reader.forceFlush();
  await provider.shutdown();

  // Exemplars, as a collector forwards them (OTLP/JSON).
  exemplarAt = Date.now() - 60_000;
  const body = {
    resourceMetrics: [
      {
        resource: { attributes: attrs({ 'service.name': 'api', 'host.name': 'web-2' }) },
        scopeMetrics: [
          {
            scope: { name: 'collector' },
            metrics: [
              {
                name: 'checkout.latency',
                unit: 'ms',
                gauge: {
                  dataPoints: [
                    {
                      timeUnixNano: nanos(exemplarAt),
                      asDouble: 950,
                      attributes: attrs({ 'http.route': '/checkout' }),
                      exemplars: [
                        { timeUnixNano: nanos(exemplarAt - 10), asDouble: 950, traceId: TRACE, spanId: SPAN, filteredAttributes: attrs({ 'user.id': 'u-7' }) },
                        { timeUnixNano: nanos(exemplarAt - 20), asInt: '12' },
                      ],
                    },
                  ],
                },
              },
            ],
          },
        ],
      },
    ],
  };
  const r = await fetch(`${t.url}/ingest/v1/metrics`, { method: 'POST', headers: { 'content-type': 'application/json', 'x-service-key': t.keys.ingest }, body: JSON.stringify(body) });
  expect(r.status).toBe(200);
  const pb = ExportMetricsServiceRequest.fromObject({
    resourceMetrics: [
      {
        resource: { attributes: [{ key: 'service.name', value: { stringValue: 'api' } }] },
        scopeMetrics: [
          {
            metrics: [
              {
                name: 'checkout.latency.pb',
                histogram: {
                  aggregationTemporality: 1,
                  dataPoints: [
                    {
                      timeUnixNano: nanos(exemplarAt),
                      count: 1,
                      sum: 700,
                      explicitBounds: [500],
                      bucketCounts: [0, 1],
                      exemplars: [{ timeUnixNano: nanos(exemplarAt - 5), asDouble: 700, traceId: Buffer.from(TRACE, 'hex'), spanId: Buffer.from(SPAN, 'hex') }],
                    },
                  ],
                },
              },
            ],
          },
        ],
      },
    ],
  });
  const r2 = await fetch(`${t.url}/ingest/v1/metrics`, {
    method: 'POST',
    headers: { 'content-type': 'application/x-protobuf', 'x-service-key': t.keys.ingest },
    body: Buffer.from(ExportMetricsServiceRequest.encode(pb).finish()),
  });
  expect(r2.status).toBe(200);
});
afterAll(() => t?.close());

const timeline = (q: Record<string, string | number>) => ok(t, '/metrics/timeline', { granularity: '1m', from: '-1h', ...q });

describe('metrics.timeline aggregations', () => {
  it('gauge: min, max, avg, sum, count and rate over the attribute series', async () => {
    const g = { metric_name: 'queue.depth', metric_type: 'gauge' };
    const v = async (aggregation: string) => only(await timeline({ ...g, aggregation })).value;
    expect(await v('min')).toBe(1);
    expect(await v('max')).toBe(10);
    expect(await v('avg')).toBe(5);
    expect(await v('sum')).toBe(15);
    expect(await v('count')).toBe(3);
    expect(await v('rate')).toBeCloseTo(15 / 60, 10);
  });

  it('sum: increase and increase per second', async () => {
    const s = { metric_name: 'http.requests', metric_type: 'sum' };
    expect(only(await timeline({ ...s, aggregation: 'sum' })).value).toBe(9);
    expect(only(await timeline({ ...s, aggregation: 'rate' })).value).toBeCloseTo(9 / 60, 10);
    expect(only(await timeline({ ...s, aggregation: 'max' })).value).toBe(6);
  });

  it('histogram: min, max, count, sum, avg, rate and percentiles from the merged buckets', async () => {
    const h = { metric_name: 'http.duration', metric_type: 'hist' };
    const v = async (aggregation: string, extra: Record<string, string> = {}) => only(await timeline({ ...h, aggregation, ...extra })).value;
    expect(await v('min')).toBe(5);
    expect(await v('max')).toBe(200);
    expect(await v('count')).toBe(7);
    expect(await v('sum')).toBe(405);
    expect(await v('avg')).toBeCloseTo(405 / 7, 10);
    expect(await v('rate')).toBeCloseTo(7 / 60, 10);
    // Route /a: 10 → (5,10], 20 → (10,25], 30 and 40 → (25,50]; min 10, max 40.
    // p50: rank 2 → (10,25]: 10 + 15·1/1 = 25. p99: rank 3.96 → (25,40]: 25 + 15·1.96/2 = 39.7.
    expect(await v('p50', { attributes: 'http.route:/a' })).toBeCloseTo(25, 10);
    expect(await v('p99', { attributes: 'http.route:/a' })).toBeCloseTo(39.7, 10);
  });
});

describe('metrics.timeline by attribute', () => {
  it('filters by point attributes and by resource attributes', async () => {
    const h = { metric_name: 'http.duration', metric_type: 'hist', aggregation: 'count' };
    expect(only(await timeline({ ...h, attributes: 'http.route:/b' })).value).toBe(2);
    expect(only(await timeline({ ...h, attributes: 'host.name:web-1,http.route:/c' })).value).toBe(1);
    const none = await timeline({ ...h, attributes: 'host.name:web-9' });
    expect(none.buckets.every((b: Bucket) => b.value === null)).toBe(true);
  });

  it('groups by up to three attribute keys, busiest first, and says when series were cut', async () => {
    const h = { metric_name: 'http.duration', metric_type: 'hist', aggregation: 'sum' };
    const all = await timeline({ ...h, group_by: 'http.route' });
    expect(all.group_by).toEqual(['http.route']);
    expect(all.series.map((s: { group: object; sample_count: number }) => [s.group, s.sample_count])).toEqual([
      [{ 'http.route': '/a' }, 4],
      [{ 'http.route': '/b' }, 2],
      [{ 'http.route': '/c' }, 1],
    ]);
    expect(all.series.map((s: { buckets: Bucket[] }) => only(s).value)).toEqual([100, 300, 5]);
    expect(all).toMatchObject({ series_total: 3, truncated: false });
    expect(only(all).value).toBe(405);
    const cut = await timeline({ ...h, group_by: 'http.route', series_limit: 2 });
    expect(cut.series.map((s: { group: Record<string, string> }) => s.group['http.route'])).toEqual(['/a', '/b']);
    expect(cut).toMatchObject({ series_total: 3, truncated: true });
    const two = await timeline({ ...h, group_by: 'host.name,http.route,missing.key', attributes: 'http.route:/a' });
    expect(two.series.map((s: { group: object }) => s.group)).toEqual([{ 'host.name': 'web-1', 'http.route': '/a', 'missing.key': null }]);
    expect((await read(t, '/metrics/timeline', { ...h, group_by: 'a,b,c,d' })).status).toBe(400);
  });

  it('returns the exemplars sent with points, so a spike leads to its trace', async () => {
    const b = await timeline({ metric_name: 'checkout.latency', metric_type: 'gauge', aggregation: 'max' });
    const bucket = only(b);
    expect(bucket.value).toBe(950);
    expect(bucket.exemplars).toEqual([
      { time: new Date(exemplarAt - 10).toISOString(), value: 950, trace_id: TRACE, span_id: SPAN, attributes: { 'user.id': 'u-7' } },
      { time: new Date(exemplarAt - 20).toISOString(), value: 12, trace_id: null, span_id: null, attributes: {} },
    ]);
    const pb = only(await timeline({ metric_name: 'checkout.latency.pb', metric_type: 'hist', aggregation: 'count' }));
    expect(pb.exemplars).toEqual([{ time: new Date(exemplarAt - 5).toISOString(), value: 700, trace_id: TRACE, span_id: SPAN, attributes: {} }]);
    const noEx = await timeline({ metric_name: 'queue.depth', metric_type: 'gauge' });
    expect(noEx.buckets.some((x: Bucket) => x.exemplars !== undefined)).toBe(false);
  });
});

describe('metrics.inspect', () => {
  it('lists point and resource attribute keys with their top values', async () => {
    const b = await ok(t, '/metrics/inspect', { metric_name: 'http.duration', metric_type: 'hist' });
    const route = b.attributes.find((a: { key: string }) => a.key === 'http.route');
    expect(route).toMatchObject({ source: 'point', distinct_values: 3 });
    expect(route.top_values.map((v: { value: string }) => v.value).sort()).toEqual(['/a', '/b', '/c']);
    const host = b.attributes.find((a: { key: string; source: string }) => a.key === 'host.name' && a.source === 'resource');
    expect(host).toMatchObject({ distinct_values: 1, top_values: [{ value: 'web-1', count: 3 }] });
  });
});
