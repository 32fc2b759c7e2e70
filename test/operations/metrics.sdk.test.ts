/**
 * Metrics recorded with the real OpenTelemetry JS SDK and exported by its OTLP exporters (protobuf
 * and JSON, cumulative and delta temporality), read back through metrics.list, metrics.timeline,
 * metrics.inspect and observability.summary.
 */
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { resourceFromAttributes } from '@opentelemetry/resources';
import { AggregationTemporality, AggregationType, MeterProvider, PeriodicExportingMetricReader, type PushMetricExporter } from '@opentelemetry/sdk-metrics';
import { OTLPMetricExporter as ProtoMetricExporter } from '@opentelemetry/exporter-metrics-otlp-proto';
import { OTLPMetricExporter as JsonMetricExporter } from '@opentelemetry/exporter-metrics-otlp-http';
import { startTestServer, type TestServer } from '../helpers/server.js';
import { ok, read } from './telemetry-fixtures.js';

interface Bucket {
  value: number | null;
  point_count: number;
  sample_count: number;
}

const sleep = (ms: number) => new Promise((r) => setTimeout(r, ms));

/** Σ of non-null bucket values of a timeline over the default window. */
const total = (b: { buckets: Bucket[] }) => b.buckets.reduce((s, x) => s + (x.value ?? 0), 0);

async function withMeter(service: string, exporter: PushMetricExporter, record: (m: MeterProvider, flush: () => Promise<void>) => Promise<void>) {
  const reader = new PeriodicExportingMetricReader({ exporter, exportIntervalMillis: 3_600_000 });
  const provider = new MeterProvider({
    resource: resourceFromAttributes({ 'service.name': service, 'deployment.environment.name': 'sdk-test' }),
    readers: [reader],
    views: [{ instrumentName: 'rpc.exp.*', aggregation: { type: AggregationType.EXPONENTIAL_HISTOGRAM } }],
  });
  await record(provider, () => reader.forceFlush());
  await provider.shutdown();
}

describe('metrics from the OpenTelemetry SDK', () => {
  let t: TestServer;
  beforeAll(async () => {
    t = await startTestServer();
    const headers = { 'x-service-key': t.keys.ingest };
    const url = `${t.url}/ingest/v1/metrics`;
    // Cumulative (the SDK default) over protobuf: every export repeats the totals since start.
    await withMeter('sdk-cumulative', new ProtoMetricExporter({ url, headers }), async (p, flush) => {
      const meter = p.getMeter('shop');
      const orders = meter.createCounter('shop.orders', { unit: '{order}' });
      const latency = meter.createHistogram('shop.latency', { unit: 'ms' });
      const rpc = meter.createHistogram('rpc.exp.cumulative', { unit: 'ms' });
      const queue = meter.createGauge('shop.queue');
      orders.add(5);
      for (const v of [3, 7, 12, 40, 80]) latency.record(v);
      for (const v of [2, 4, 8]) rpc.record(v);
      queue.record(4);
      // The SDK stamps a cumulative stream's start at its first record and the export with the time of
      // the export: in the same millisecond the point has start == time, a zero-duration point that
      // OTLP (and spec rule 4) counts as zero. Real exports come seconds later.
      await sleep(5);
      await flush();
      orders.add(7);
      latency.record(100);
      rpc.record(10);
      queue.record(6);
      await flush();
      await flush(); // nothing new: cumulative points that add zero
    });
    // Delta over JSON.
    await withMeter('sdk-delta', new JsonMetricExporter({ url, headers, temporalityPreference: AggregationTemporality.DELTA }), async (p, flush) => {
      const meter = p.getMeter('shop');
      const rpc = meter.createHistogram('rpc.exp.delta', { unit: 'ms' });
      const orders = meter.createCounter('shop.orders.delta');
      for (const v of [1.5, 3, 3, 3.5]) rpc.record(v);
      orders.add(2);
      await sleep(5);
      await flush();
      orders.add(3);
      await flush();
    });
  });
  afterAll(() => t?.close());

  const timeline = (metric_name: string, metric_type: string, aggregation: string) => read(t, '/metrics/timeline', { metric_name, metric_type, aggregation });

  it('lists the SDK metrics with their types, units and services', async () => {
    const b = await ok(t, '/metrics');
    const rows = b.data.map((r: { metric_name: string; type: string; unit: string; service_name: string }) => [r.metric_name, r.type, r.unit, r.service_name]);
    expect(rows).toEqual(
      expect.arrayContaining([
        ['shop.orders', 'sum', '{order}', 'sdk-cumulative'],
        ['shop.latency', 'hist', 'ms', 'sdk-cumulative'],
        ['rpc.exp.cumulative', 'exponential_histogram', 'ms', 'sdk-cumulative'],
        ['shop.queue', 'gauge', '', 'sdk-cumulative'],
        ['rpc.exp.delta', 'exponential_histogram', 'ms', 'sdk-delta'],
        ['shop.orders.delta', 'sum', '', 'sdk-delta'],
      ]),
    );
  });

  it('turns cumulative counter exports into increases: 5 (start inside the window), then 7, then zeros', async () => {
    const r = await timeline('shop.orders', 'sum', 'sum');
    expect(r.status).toBe(200);
    expect(total(r.body)).toBe(12);
    // three flushes, plus the export shutdown() makes: the repeated totals add nothing
    expect(r.body.buckets.reduce((s: number, b: Bucket) => s + b.point_count, 0)).toBeGreaterThanOrEqual(3);
    const delta = await timeline('shop.orders.delta', 'sum', 'sum');
    expect(total(delta.body)).toBe(5);
  });

  it('differences cumulative SDK histograms: 6 measurements summing to 242', async () => {
    const count = await timeline('shop.latency', 'hist', 'count');
    expect(total(count.body)).toBe(6);
    const sum = await timeline('shop.latency', 'hist', 'sum');
    expect(total(sum.body)).toBeCloseTo(242, 10);
  });

  it('summarizes the SDK histogram over the window from its merged buckets', async () => {
    // First export (start inside the window, whole): 3 → (0,5], 7 → (5,10], 12 → (10,25], 40 → (25,50],
    // 80 → (75,100], min 3, max 80. Second export adds 100 → (75,100] (a difference: no min/max).
    // Merged, N = 6: p50 rank 3 → (10,25]: 10 + 15·(3 − 2)/1 = 25; p90 rank 5.4 → (75,100]: 75 + 25·1.4/2;
    // p99 rank 5.94 → 75 + 25·1.94/2. avg 242 / 6.
    const b = await ok(t, '/observability-summary', { metric_query: 'shop.latency', service_name: 'sdk-cumulative' });
    expect(b.metrics.candidate_metrics.map((m: { metric_name: string }) => m.metric_name)).toEqual(['shop.latency']);
    const m = b.metrics.selected_metrics[0];
    expect(m).toMatchObject({ metric_name: 'shop.latency', type: 'hist', unit: 'ms', sample_count: 6 });
    expect(m.avg).toBeCloseTo(242 / 6, 10);
    expect(m.p50).toBeCloseTo(25, 10);
    expect(m.p90).toBeCloseTo(92.5, 10);
    expect(m.p99).toBeCloseTo(99.25, 10);
  });

  it('refuses percentiles of the cumulative SDK exponential histogram with 422 but gives its average', async () => {
    const p = await timeline('rpc.exp.cumulative', 'exponential_histogram', 'p90');
    expect(p.status).toBe(422);
    expect(p.body.code).toBe('UNSUPPORTED_METRIC_TEMPORALITY');
    const count = await timeline('rpc.exp.cumulative', 'exponential_histogram', 'count');
    expect(total(count.body)).toBe(4);
    const sum = await timeline('rpc.exp.cumulative', 'exponential_histogram', 'sum');
    expect(total(sum.body)).toBeCloseTo(24, 10);
    const inspect = await ok(t, '/metrics/inspect', { metric_name: 'rpc.exp.cumulative', metric_type: 'exponential_histogram' });
    expect(inspect.snapshots.map((s: { aggregation: string }) => s.aggregation)).toEqual(['avg']);
    const summary = await ok(t, '/observability-summary', { metric_query: 'rpc.exp.cumulative' });
    expect(summary.metrics.selected_metrics[0]).toMatchObject({ avg: 6, p50: null, p90: null, p99: null });
  });

  it('gives percentiles of the delta SDK exponential histogram', async () => {
    const r = await timeline('rpc.exp.delta', 'exponential_histogram', 'p50');
    expect(r.status).toBe(200);
    const values = r.body.buckets.filter((b: Bucket) => b.value !== null).map((b: Bucket) => b.value);
    expect(values).toHaveLength(1);
    // four values 1.5, 3, 3, 3.5: the median lies between the two 3s' bucket edges and within [min, max]
    expect(values[0]).toBeGreaterThanOrEqual(1.5);
    expect(values[0]).toBeLessThanOrEqual(3.5);
    const inspect = await ok(t, '/metrics/inspect', { metric_name: 'rpc.exp.delta', metric_type: 'exponential_histogram' });
    expect(inspect.snapshots.map((s: { aggregation: string }) => s.aggregation)).toEqual(['avg', 'p50', 'p90', 'p99']);
    expect(inspect.snapshots[0].latest_value).toBeCloseTo(11 / 4, 10);
  });

  it('takes every exported SDK gauge value as a sample', async () => {
    // 4, then 6 at every later export (flushes and shutdown)
    const count = total((await timeline('shop.queue', 'gauge', 'count')).body);
    expect(count).toBeGreaterThanOrEqual(3);
    expect(total((await timeline('shop.queue', 'gauge', 'sum')).body)).toBe(4 + 6 * (count - 1));
  });
});
