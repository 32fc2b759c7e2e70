/**
 * Real OpenTelemetry JS SDK payloads for the OTLP decoder tests: spans, log records and metrics are
 * recorded through the SDK and serialized by @opentelemetry/otlp-transformer (protobuf and JSON).
 */
import {
  ROOT_CONTEXT,
  SpanKind,
  SpanStatusCode,
  TraceFlags,
  ValueType,
  createTraceState,
  trace,
  type HrTime,
} from '@opentelemetry/api';
import { SeverityNumber } from '@opentelemetry/api-logs';
import { resourceFromAttributes } from '@opentelemetry/resources';
import { BasicTracerProvider, InMemorySpanExporter, SimpleSpanProcessor, type ReadableSpan } from '@opentelemetry/sdk-trace-base';
import { InMemoryLogRecordExporter, LoggerProvider, SimpleLogRecordProcessor, type ReadableLogRecord } from '@opentelemetry/sdk-logs';
import {
  AggregationTemporality,
  AggregationType,
  MeterProvider,
  MetricReader,
  type ResourceMetrics,
} from '@opentelemetry/sdk-metrics';
import {
  JsonLogsSerializer,
  JsonMetricsSerializer,
  JsonTraceSerializer,
  ProtobufLogsSerializer,
  ProtobufMetricsSerializer,
  ProtobufTraceSerializer,
} from '@opentelemetry/otlp-transformer';

export const hrToMs = (t: HrTime): number => t[0] * 1e3 + t[1] / 1e6;
const buf = (u: Uint8Array | undefined): Buffer => {
  if (!u) throw new Error('serializer returned nothing');
  return Buffer.from(u);
};

export const RESOURCE_ATTRS = { 'service.name': 'checkout', 'deployment.environment': 'test', 'host.cpus': 8 };

/** Attribute values of every type the trace API allows. */
export const ALL_TYPES_ATTRS = {
  'str': 'hello',
  'str.empty': '',
  'int': 42,
  'int.neg': -7,
  'double': 3.25,
  'bool.true': true,
  'bool.false': false,
  'arr.str': ['a', 'b'],
  'arr.int': [1, 2, 3],
  'arr.double': [1.5, -2.5],
  'arr.bool': [true, false],
};

export const REMOTE_PARENT = {
  traceId: '0af7651916cd43dd8448eb211c80319c',
  spanId: 'b7ad6b7169203331',
  traceState: 'vendor=abc,other=x1',
};

export interface TraceFixture {
  spans: ReadableSpan[];
  protobuf: Buffer;
  json: Buffer;
}

/** Three spans: an ERROR server span with events + every attribute type, its CLIENT child with a link, and a
 *  span under a remote parent carrying trace_state. */
export async function buildTraceFixture(): Promise<TraceFixture> {
  const exporter = new InMemorySpanExporter();
  const provider = new BasicTracerProvider({
    resource: resourceFromAttributes(RESOURCE_ATTRS),
    spanProcessors: [new SimpleSpanProcessor(exporter)],
  });
  const tracer = provider.getTracer('checkout-lib', '1.4.2');
  const t0 = 1_700_000_000_123.456;

  const root = tracer.startSpan('POST /checkout', { kind: SpanKind.SERVER, attributes: ALL_TYPES_ATTRS, startTime: t0 });
  root.addEvent('cache.miss', { 'cache.key': 'cart:1', 'cache.ttl': 30 }, t0 + 1.5);
  root.addEvent('exception', { 'exception.type': 'TypeError', 'exception.message': 'x is undefined' }, t0 + 20.25);
  root.setStatus({ code: SpanStatusCode.ERROR, message: 'payment failed' });

  const other = tracer.startSpan('background', { kind: SpanKind.CONSUMER, startTime: t0 - 100 });
  other.end(t0 - 50);

  const child = tracer.startSpan(
    'GET payments',
    {
      kind: SpanKind.CLIENT,
      startTime: t0 + 2,
      attributes: { 'http.request.method': 'GET', 'http.response.status_code': 502 },
      links: [{ context: other.spanContext(), attributes: { 'link.reason': 'triggered-by', 'link.n': 2 } }],
    },
    trace.setSpan(ROOT_CONTEXT, root),
  );
  child.setStatus({ code: SpanStatusCode.OK });
  child.end(t0 + 15.125);
  root.end(t0 + 30.75);

  const remoteCtx = trace.setSpanContext(ROOT_CONTEXT, {
    traceId: REMOTE_PARENT.traceId,
    spanId: REMOTE_PARENT.spanId,
    traceFlags: TraceFlags.SAMPLED,
    isRemote: true,
    traceState: createTraceState(REMOTE_PARENT.traceState),
  });
  const remoteChild = tracer.startSpan('consume order', { kind: SpanKind.PRODUCER, startTime: t0 + 40 }, remoteCtx);
  remoteChild.end(t0 + 41);

  await provider.forceFlush();
  const spans = exporter.getFinishedSpans();
  await provider.shutdown();
  return { spans, protobuf: buf(ProtobufTraceSerializer.serializeRequest(spans)), json: buf(JsonTraceSerializer.serializeRequest(spans)) };
}

/** `n` simple spans (8 attributes, one event) for throughput checks. */
export async function buildSpanBatch(n: number): Promise<Buffer> {
  const exporter = new InMemorySpanExporter();
  const provider = new BasicTracerProvider({
    resource: resourceFromAttributes(RESOURCE_ATTRS),
    spanProcessors: [new SimpleSpanProcessor(exporter)],
  });
  const tracer = provider.getTracer('bench', '1.0.0');
  for (let i = 0; i < n; i++) {
    const s = tracer.startSpan(`span ${i % 20}`, {
      kind: SpanKind.SERVER,
      attributes: {
        'http.request.method': 'GET',
        'http.route': `/api/items/${i % 50}`,
        'http.response.status_code': 200,
        'server.address': 'api.example.com',
        'server.port': 443,
        'url.scheme': 'https',
        'user_agent.original': 'Mozilla/5.0',
        'sample.ratio': 0.25,
      },
    });
    s.addEvent('checkpoint', { step: i });
    s.end();
  }
  await provider.forceFlush();
  const spans = exporter.getFinishedSpans();
  await provider.shutdown();
  return buf(ProtobufTraceSerializer.serializeRequest(spans));
}

export interface LogsFixture {
  logs: ReadableLogRecord[];
  protobuf: Buffer;
  json: Buffer;
}

export const LOG_SPAN_CONTEXT = {
  traceId: '4bf92f3577b34da6a3ce929d0e0e4736',
  spanId: '00f067aa0ba902b7',
  traceFlags: TraceFlags.SAMPLED,
};

export async function buildLogsFixture(): Promise<LogsFixture> {
  const exporter = new InMemoryLogRecordExporter();
  const provider = new LoggerProvider({
    resource: resourceFromAttributes(RESOURCE_ATTRS),
    processors: [new SimpleLogRecordProcessor({ exporter })],
  });
  const logger = provider.getLogger('app-logger', '2.0.0');
  const t0 = 1_700_000_500_000.25;
  // 1: plain string body inside a span context.
  logger.emit({
    timestamp: t0,
    severityNumber: SeverityNumber.ERROR,
    severityText: 'ERROR',
    body: 'payment failed for order 17',
    attributes: { 'order.id': 17, 'retryable': false, 'amount': 12.5, 'tags': ['a', 'b'] },
    context: trace.setSpanContext(ROOT_CONTEXT, LOG_SPAN_CONTEXT),
  });
  // 2: structured body (map, nested array, bytes) and an event name, no span context.
  logger.emit({
    timestamp: t0 + 1,
    severityNumber: SeverityNumber.INFO,
    severityText: 'INFO',
    eventName: 'user.login',
    body: { user: 'ana', attempts: 3, ok: true, ratio: 0.5, nested: { list: [1, 'two', false] }, raw: new Uint8Array([0, 1, 254, 255]) },
    attributes: { 'auth.method': 'password' },
  });
  // 3: no body, no severity.
  logger.emit({ timestamp: t0 + 2, attributes: {} });
  await provider.forceFlush();
  const logs = exporter.getFinishedLogRecords();
  await provider.shutdown();
  return { logs, protobuf: buf(ProtobufLogsSerializer.serializeRequest(logs)), json: buf(JsonLogsSerializer.serializeRequest(logs)) };
}

class CollectingReader extends MetricReader {
  protected async onForceFlush(): Promise<void> {}
  protected async onShutdown(): Promise<void> {}
}

export interface MetricsFixture {
  cumulative: ResourceMetrics;
  delta: ResourceMetrics;
  cumulativeProtobuf: Buffer;
  cumulativeJson: Buffer;
  deltaProtobuf: Buffer;
  deltaJson: Buffer;
}

/** A counter (int), an up-down counter, a gauge, an explicit histogram and an exponential histogram (via a View),
 *  collected by one cumulative and one delta reader. */
export async function buildMetricsFixture(): Promise<MetricsFixture> {
  const cumulativeReader = new CollectingReader({ aggregationTemporalitySelector: () => AggregationTemporality.CUMULATIVE });
  const deltaReader = new CollectingReader({ aggregationTemporalitySelector: () => AggregationTemporality.DELTA });
  const provider = new MeterProvider({
    resource: resourceFromAttributes(RESOURCE_ATTRS),
    readers: [cumulativeReader, deltaReader],
    views: [{ instrumentName: 'payload.size', aggregation: { type: AggregationType.EXPONENTIAL_HISTOGRAM, options: { maxSize: 40 } } }],
  });
  const meter = provider.getMeter('checkout-metrics', '0.9.0');

  const requests = meter.createCounter('http.requests', { description: 'Requests served', unit: '{request}', valueType: ValueType.INT });
  requests.add(3, { route: '/a' });
  requests.add(2, { route: '/b' });
  requests.add(1, { route: '/a' });

  meter.createUpDownCounter('active.sessions', { valueType: ValueType.INT }).add(5);
  meter.createUpDownCounter('active.sessions', { valueType: ValueType.INT }).add(-2);

  meter.createGauge('queue.depth', { unit: '1' }).record(7.5, { queue: 'emails' });

  const latency = meter.createHistogram('http.latency', { unit: 'ms', advice: { explicitBucketBoundaries: [10, 100, 1000] } });
  for (const v of [5, 50, 500, 5000]) latency.record(v);

  const size = meter.createHistogram('payload.size', { unit: 'By' });
  for (const v of [1, 2, 4, 1000, 0]) size.record(v);

  const c = await cumulativeReader.collect();
  const d = await deltaReader.collect();
  if (c.errors.length || d.errors.length) throw new Error(`metric collection errors: ${[...c.errors, ...d.errors].join(', ')}`);
  await provider.shutdown();
  return {
    cumulative: c.resourceMetrics,
    delta: d.resourceMetrics,
    cumulativeProtobuf: buf(ProtobufMetricsSerializer.serializeRequest(c.resourceMetrics)),
    cumulativeJson: buf(JsonMetricsSerializer.serializeRequest(c.resourceMetrics)),
    deltaProtobuf: buf(ProtobufMetricsSerializer.serializeRequest(d.resourceMetrics)),
    deltaJson: buf(JsonMetricsSerializer.serializeRequest(d.resourceMetrics)),
  };
}
