// Send traces, logs and metrics to Sightline with the OpenTelemetry JS SDK over OTLP/HTTP (protobuf).
//
//   SIGHTLINE_INGEST_KEY=<ingest key> SIGHTLINE_INGEST_URL=http://localhost:8080/ingest node examples/send-otel.mjs
//
// The endpoints are {ingest_url}/v1/traces, /v1/logs and /v1/metrics, authenticated by the
// x-service-key header (an ingest key, scope events:ingest). A span with an exception event also
// feeds an error group. Read it back: sightline traces list / sightline errors list --service example-checkout
import { SpanStatusCode, trace, context } from '@opentelemetry/api';
import { resourceFromAttributes } from '@opentelemetry/resources';
import { BasicTracerProvider, BatchSpanProcessor } from '@opentelemetry/sdk-trace-base';
import { LoggerProvider, SimpleLogRecordProcessor } from '@opentelemetry/sdk-logs';
import { MeterProvider, PeriodicExportingMetricReader } from '@opentelemetry/sdk-metrics';
import { OTLPTraceExporter } from '@opentelemetry/exporter-trace-otlp-proto';
import { OTLPLogExporter } from '@opentelemetry/exporter-logs-otlp-proto';
import { OTLPMetricExporter } from '@opentelemetry/exporter-metrics-otlp-proto';

const key = process.env.SIGHTLINE_INGEST_KEY;
const ingestUrl = (process.env.SIGHTLINE_INGEST_URL ?? 'http://localhost:8080/ingest').replace(/\/+$/, '');
if (!key) {
  console.error('Set SIGHTLINE_INGEST_KEY (the ingest key `npm start` printed) and optionally SIGHTLINE_INGEST_URL.');
  process.exit(2);
}
const headers = { 'x-service-key': key };

// Exporters report failures through a callback, not an exception: collect them so a wrong key or URL is noticed.
const failures = [];
function reportFailures(exporter, signal) {
  const send = exporter.export.bind(exporter);
  exporter.export = (items, done) =>
    send(items, (result) => {
      if (result.code !== 0) failures.push(`${signal}: ${result.error?.message ?? 'export failed'}`);
      done(result);
    });
  return exporter;
}

const resource = resourceFromAttributes({
  'service.name': 'example-checkout',
  'service.version': '2.3.0',
  'deployment.environment.name': 'example',
});

// Traces: a request span with a database child and a failing payment child.
const tracerProvider = new BasicTracerProvider({
  resource,
  spanProcessors: [new BatchSpanProcessor(reportFailures(new OTLPTraceExporter({ url: `${ingestUrl}/v1/traces`, headers }), 'traces'))],
});
const tracer = tracerProvider.getTracer('example');
let traceId;
tracer.startActiveSpan('POST /checkout', { kind: 1, attributes: { 'http.request.method': 'POST', 'http.route': '/checkout' } }, (root) => {
  traceId = root.spanContext().traceId;
  const ctx = trace.setSpan(context.active(), root);
  const db = tracer.startSpan('SELECT cart', { kind: 3, attributes: { 'db.system.name': 'postgresql' } }, ctx);
  db.end();
  const pay = tracer.startSpan('charge card', { kind: 3 }, ctx);
  pay.recordException(new Error('payment provider timed out after 3000 ms'));
  pay.setStatus({ code: SpanStatusCode.ERROR, message: 'payment failed' });
  pay.end();
  root.setStatus({ code: SpanStatusCode.ERROR });
  root.end();
});

// Logs: one info and one error record. A script that ends right away exports each record as it is
// emitted (SimpleLogRecordProcessor); a long-running service would batch (BatchLogRecordProcessor).
const loggerProvider = new LoggerProvider({
  resource,
  processors: [new SimpleLogRecordProcessor({ exporter: reportFailures(new OTLPLogExporter({ url: `${ingestUrl}/v1/logs`, headers }), 'logs') })],
});
const logger = loggerProvider.getLogger('example');
logger.emit({ severityNumber: 9, severityText: 'INFO', body: 'checkout started', attributes: { 'cart.items': 3 } });
logger.emit({ severityNumber: 17, severityText: 'ERROR', body: 'payment provider timed out', attributes: { provider: 'example-pay' } });

// Metrics: a counter and a histogram, exported once at the end (forceFlush) instead of every minute.
const meterProvider = new MeterProvider({
  resource,
  readers: [
    new PeriodicExportingMetricReader({
      exporter: reportFailures(new OTLPMetricExporter({ url: `${ingestUrl}/v1/metrics`, headers }), 'metrics'),
      exportIntervalMillis: 60_000,
    }),
  ],
});
const meter = meterProvider.getMeter('example');
meter.createCounter('checkout_orders_total', { description: 'Orders placed' }).add(3, { outcome: 'declined' });
meter.createHistogram('checkout_duration_ms', { unit: 'ms' }).record(3120, { outcome: 'declined' });

for (const provider of [tracerProvider, loggerProvider, meterProvider]) {
  await provider.forceFlush().catch((err) => failures.push(err.message));
  await provider.shutdown().catch(() => {});
}

if (failures.length) {
  console.error(`Some telemetry was not accepted by ${ingestUrl}:\n  ${failures.join('\n  ')}`);
  process.exit(1);
}
console.log(`sent trace ${traceId}, 2 log records and 2 metrics to ${ingestUrl}`);
