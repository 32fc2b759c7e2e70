import { beforeAll, describe, expect, it } from 'vitest';
import { DataPointType, type ExponentialHistogram, type Histogram, type MetricData, type ResourceMetrics } from '@opentelemetry/sdk-metrics';
import { decodeMetrics, OtlpDecodeError, type OtlpEncoding } from '../../../src/ingest/otlp/decode.js';
import { ExportMetricsServiceRequest } from '../../../src/ingest/otlp/schema.js';
import type { MetricPointRecord } from '../../../src/domain/telemetry-types.js';
import { RESOURCE_ATTRS, buildMetricsFixture, hrToMs, type MetricsFixture } from './fixtures.js';

const within1ms = (actual: number | null, expected: number) => {
  expect(actual).not.toBeNull();
  expect(Math.abs((actual as number) - expected)).toBeLessThan(1);
};

let fx: MetricsFixture;
beforeAll(async () => {
  fx = await buildMetricsFixture();
});

const sdkMetric = (rm: ResourceMetrics, name: string): MetricData => {
  const m = rm.scopeMetrics.flatMap((s) => s.metrics).find((x) => x.descriptor.name === name);
  if (!m) throw new Error(`no sdk metric ${name}`);
  return m;
};
const points = (records: MetricPointRecord[], name: string) => records.filter((r) => r.metric_name === name);
const one = (records: MetricPointRecord[], name: string): MetricPointRecord => {
  const p = points(records, name);
  expect(p).toHaveLength(1);
  return p[0];
};

type Case = { enc: OtlpEncoding; temporality: 'cumulative' | 'delta' };
const cases: Case[] = [
  { enc: 'protobuf', temporality: 'cumulative' },
  { enc: 'protobuf', temporality: 'delta' },
  { enc: 'json', temporality: 'cumulative' },
  { enc: 'json', temporality: 'delta' },
];

describe.each(cases)('decodeMetrics($enc) of SDK metrics, $temporality reader', ({ enc, temporality }) => {
  const body = () =>
    temporality === 'cumulative'
      ? enc === 'protobuf' ? fx.cumulativeProtobuf : fx.cumulativeJson
      : enc === 'protobuf' ? fx.deltaProtobuf : fx.deltaJson;
  const sdk = () => (temporality === 'cumulative' ? fx.cumulative : fx.delta);
  const decode = () => decodeMetrics(body(), enc);

  it('keeps one record per data point with shared context', () => {
    const r = decode();
    expect(r.rejected).toBe(0);
    expect(r.rejectionMessage).toBe('');
    const expected = sdk().scopeMetrics.flatMap((s) => s.metrics).reduce((n, m) => n + m.dataPoints.length, 0);
    expect(r.records).toHaveLength(expected);
    expect(expected).toBe(6);
    for (const rec of r.records) {
      expect(rec.service_name).toBe('checkout');
      expect(rec.resource).toEqual(sdk().resource.attributes);
      expect(rec.resource).toMatchObject(RESOURCE_ATTRS);
      expect(rec.scope).toEqual({ name: 'checkout-metrics', version: '0.9.0', attributes: {} });
      expect(rec.flags).toBe(0);
    }
  });

  it('decodes the monotonic int counter', () => {
    const recs = points(decode().records, 'http.requests');
    const m = sdkMetric(sdk(), 'http.requests');
    expect(recs).toHaveLength(2);
    for (const rec of recs) {
      expect(rec).toMatchObject({ type: 'sum', temporality, monotonic: true, description: 'Requests served', unit: '{request}' });
      const dp = m.dataPoints.find((p) => p.attributes.route === rec.attributes.route)!;
      expect(rec.value).toBe(dp.value);
      within1ms(rec.start_ms, hrToMs(dp.startTime));
      within1ms(rec.time_ms, hrToMs(dp.endTime));
    }
    expect(Object.fromEntries(recs.map((r) => [r.attributes.route, r.value]))).toEqual({ '/a': 4, '/b': 2 });
  });

  it('decodes the up-down counter as a non-monotonic sum', () => {
    const rec = one(decode().records, 'active.sessions');
    expect(rec).toMatchObject({ type: 'sum', temporality, monotonic: false, value: 3, attributes: {} });
  });

  it('decodes the gauge', () => {
    const rec = one(decode().records, 'queue.depth');
    const dp = sdkMetric(sdk(), 'queue.depth').dataPoints[0];
    expect(rec).toMatchObject({ type: 'gauge', temporality: 'unspecified', monotonic: false, value: 7.5, unit: '1', attributes: { queue: 'emails' } });
    within1ms(rec.time_ms, hrToMs(dp.endTime));
  });

  it('decodes the explicit-bucket histogram', () => {
    const rec = one(decode().records, 'http.latency');
    const m = sdkMetric(sdk(), 'http.latency');
    expect(m.dataPointType).toBe(DataPointType.HISTOGRAM);
    const v = m.dataPoints[0].value as Histogram;
    expect(rec).toMatchObject({
      type: 'hist',
      temporality,
      monotonic: false,
      unit: 'ms',
      count: v.count,
      sum: v.sum,
      min: v.min,
      max: v.max,
      bucket_counts: v.buckets.counts,
      explicit_bounds: v.buckets.boundaries,
    });
    expect(rec).toMatchObject({ count: 4, sum: 5555, min: 5, max: 5000, bucket_counts: [1, 1, 1, 1], explicit_bounds: [10, 100, 1000] });
    expect(rec.value).toBeUndefined();
    within1ms(rec.start_ms, hrToMs(m.dataPoints[0].startTime));
  });

  it('decodes the exponential histogram (from a View)', () => {
    const rec = one(decode().records, 'payload.size');
    const m = sdkMetric(sdk(), 'payload.size');
    expect(m.dataPointType).toBe(DataPointType.EXPONENTIAL_HISTOGRAM);
    const v = m.dataPoints[0].value as ExponentialHistogram;
    expect(rec).toMatchObject({
      type: 'exponential_histogram',
      temporality,
      unit: 'By',
      count: 5,
      sum: 1007,
      min: 0,
      max: 1000,
      zero_count: 1,
      scale: v.scale,
      positive: { offset: v.positive.offset, bucket_counts: v.positive.bucketCounts },
      negative: { offset: v.negative.offset, bucket_counts: v.negative.bucketCounts },
    });
    expect(rec.zero_threshold).toBe(0);
    expect(v.scale).toBeLessThan(20); // maxSize 40 forced the SDK to downscale
    expect(rec.positive!.bucket_counts.reduce((a, b) => a + b, 0)).toBe(4);
  });
});

describe('decodeMetrics: protobuf and JSON agree', () => {
  it('produces the same records from both encodings', () => {
    const pb = decodeMetrics(fx.cumulativeProtobuf, 'protobuf').records;
    const js = decodeMetrics(fx.cumulativeJson, 'json').records;
    const strip = (p: MetricPointRecord) => ({ ...p, time_ms: 0, start_ms: 0 });
    expect(js.map(strip)).toEqual(pb.map(strip));
  });
});

// ------------------------------------------------------------------------------------------------
// Hand-built payloads
// ------------------------------------------------------------------------------------------------

const T = '1700000000000000000';
const json = (v: unknown) => Buffer.from(JSON.stringify(v));
const metricsReq = (metrics: unknown[]) => ({
  resourceMetrics: [{ resource: { attributes: [{ key: 'service.name', value: { stringValue: 'm' } }] }, scopeMetrics: [{ metrics }] }],
});

describe('decodeMetrics: hand-built OTLP/JSON', () => {
  it('accepts asInt as string and as number, enum names, snake_case; start 0 → null', () => {
    const r = decodeMetrics(
      json(
        metricsReq([
          {
            name: 'g',
            gauge: {
              dataPoints: [
                { timeUnixNano: T, asInt: '42' },
                { timeUnixNano: T, asInt: 43, startTimeUnixNano: '0' },
                { time_unix_nano: T, as_double: 1.25, start_time_unix_nano: '1699999999000000000' },
              ],
            },
          },
          {
            name: 's',
            sum: { aggregationTemporality: 'AGGREGATION_TEMPORALITY_DELTA', isMonotonic: true, dataPoints: [{ timeUnixNano: T, asDouble: '2.5' }] },
          },
          { name: 's2', sum: { aggregation_temporality: 2, is_monotonic: false, data_points: [{ timeUnixNano: T, asInt: '-3' }] } },
        ]),
      ),
      'json',
    );
    expect(r.rejected).toBe(0);
    expect(r.records.map((p) => [p.metric_name, p.type, p.value, p.temporality, p.monotonic, p.start_ms])).toEqual([
      ['g', 'gauge', 42, 'unspecified', false, null],
      ['g', 'gauge', 43, 'unspecified', false, null],
      ['g', 'gauge', 1.25, 'unspecified', false, 1_699_999_999_000],
      ['s', 'sum', 2.5, 'delta', true, null],
      ['s2', 'sum', -3, 'cumulative', false, null],
    ]);
    expect(r.records[0].time_ms).toBe(1_700_000_000_000);
    expect(r.records[0].service_name).toBe('m');
  });

  it('rejects points without time and summary metrics; a metric without data has zero points', () => {
    const r = decodeMetrics(
      json(
        metricsReq([
          { name: 'ok', gauge: { dataPoints: [{ timeUnixNano: T, asDouble: 1 }, { asDouble: 2 }, { timeUnixNano: '0', asDouble: 3 }] } },
          { name: 'legacy', summary: { dataPoints: [{ timeUnixNano: T, count: '1', sum: 1 }, { timeUnixNano: T, count: '2', sum: 2 }] } },
          { name: 'empty', description: 'no data at all' },
          { name: 'hist', histogram: { aggregationTemporality: 1, dataPoints: [{ count: '1', bucketCounts: ['1'], explicitBounds: [] }] } },
        ]),
      ),
      'json',
    );
    expect(r.records.map((p) => p.metric_name)).toEqual(['ok']);
    expect(r.rejected).toBe(5);
    expect(r.rejectionMessage).toMatch(/^rejected 5 data points: /);
    expect(r.rejectionMessage).toContain('data point without time_unix_nano (3)');
    expect(r.rejectionMessage).toContain('summary metrics are not supported (2)');
  });

  it('decodes histograms with string counts, missing sum/min/max, and exponential buckets', () => {
    const r = decodeMetrics(
      json(
        metricsReq([
          {
            name: 'h',
            histogram: {
              aggregationTemporality: 2,
              dataPoints: [{ timeUnixNano: T, count: '7', bucketCounts: ['1', 2, '4'], explicitBounds: [0.5, 1], flags: 1 }],
            },
          },
          {
            name: 'e',
            exponentialHistogram: {
              aggregationTemporality: 'AGGREGATION_TEMPORALITY_CUMULATIVE',
              dataPoints: [
                { timeUnixNano: T, count: '6', sum: 10.5, scale: -2, zeroCount: '1', zeroThreshold: 0.001, positive: { offset: -3, bucketCounts: ['2', '3'] } },
              ],
            },
          },
        ]),
      ),
      'json',
    );
    const [h, e] = r.records;
    expect(h).toMatchObject({ type: 'hist', temporality: 'cumulative', count: 7, sum: null, min: null, max: null, bucket_counts: [1, 2, 4], explicit_bounds: [0.5, 1], flags: 1 });
    expect(e).toMatchObject({
      type: 'exponential_histogram',
      count: 6,
      sum: 10.5,
      min: null,
      max: null,
      scale: -2,
      zero_count: 1,
      zero_threshold: 0.001,
      positive: { offset: -3, bucket_counts: [2, 3] },
      negative: { offset: 0, bucket_counts: [] },
    });
  });

  it('throws OtlpDecodeError for non-object JSON', () => {
    expect(() => decodeMetrics(Buffer.from('not json'), 'json')).toThrow(OtlpDecodeError);
    expect(() => decodeMetrics(Buffer.from('null'), 'json')).toThrow(OtlpDecodeError);
  });
});

describe('decodeMetrics: hand-built protobuf', () => {
  const pb = (metrics: unknown[]) =>
    Buffer.from(ExportMetricsServiceRequest.encode(ExportMetricsServiceRequest.fromObject(metricsReq(metrics))).finish());

  it('distinguishes an absent histogram sum/min/max from an explicit 0', () => {
    const r = decodeMetrics(
      pb([
        {
          name: 'h',
          histogram: {
            aggregationTemporality: 1,
            dataPoints: [
              { timeUnixNano: T, count: 0, bucketCounts: [0], explicitBounds: [] },
              { timeUnixNano: T, count: 1, sum: 0, min: 0, max: 0, bucketCounts: [1], explicitBounds: [] },
            ],
          },
        },
      ]),
      'protobuf',
    );
    expect(r.records.map((p) => [p.sum, p.min, p.max, p.temporality, p.count])).toEqual([
      [null, null, null, 'delta', 0],
      [0, 0, 0, 'delta', 1],
    ]);
  });

  it('rejects summary points and untimed points, keeps the rest, reads asInt/asDouble', () => {
    const r = decodeMetrics(
      pb([
        { name: 'sum', sum: { aggregationTemporality: 2, isMonotonic: true, dataPoints: [{ timeUnixNano: T, asInt: '9007199254740' }, { asInt: 1 }] } },
        { name: 'g', gauge: { dataPoints: [{ timeUnixNano: T, startTimeUnixNano: T, asDouble: -0.5 }] } },
        { name: 'legacy', summary: { dataPoints: [{ timeUnixNano: T }, { timeUnixNano: T }, { timeUnixNano: T }] } },
        { name: 'nodata' },
      ]),
      'protobuf',
    );
    expect(r.records.map((p) => [p.metric_name, p.value, p.monotonic, p.temporality, p.start_ms])).toEqual([
      ['sum', 9007199254740, true, 'cumulative', null],
      ['g', -0.5, false, 'unspecified', 1_700_000_000_000],
    ]);
    expect(r.rejected).toBe(4);
    expect(r.rejectionMessage).toContain('summary metrics are not supported (3)');
    expect(r.rejectionMessage).toContain('data point without time_unix_nano (1)');
  });

  it('throws OtlpDecodeError on corrupt protobuf', () => {
    expect(() => decodeMetrics(fx.cumulativeProtobuf.subarray(0, fx.cumulativeProtobuf.length - 3), 'protobuf')).toThrow(OtlpDecodeError);
    expect(() => decodeMetrics(Buffer.from('{"resourceMetrics":[]}'), 'protobuf')).toThrow(OtlpDecodeError);
  });
});
