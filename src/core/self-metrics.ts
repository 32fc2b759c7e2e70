/**
 * Figures about the server itself: request counts and latency by operation and status, ingest items
 * by signal and outcome, queue depths, database and WAL size, retention progress, plus Node's process
 * and event-loop metrics. One prom-client registry per server (tests run several in one process);
 * read three ways: `GET /metrics` (Prometheus text), `system.status` (JSON for the CLI and agents),
 * and pushed as OTLP/JSON to another Sightline or any OTLP endpoint (`SIGHTLINE_SELF_METRICS_OTLP_URL`).
 * Gauges whose value lives elsewhere (pool use, file sizes) are read when scraped, never polled.
 */
import { Counter, Gauge, Histogram, Registry, collectDefaultMetrics, type MetricObjectWithValues, type MetricValue } from 'prom-client';

export type Collect = () => number | Array<{ labels: Record<string, string>; value: number }>;

export interface SelfMetrics {
  registry: Registry;
  /** One HTTP request answered: `operation` is an operationId or a route such as `ingest /v1/traces`. */
  observeRequest(operation: string, status: number, seconds: number): void;
  /** Ingest items by signal (spans, logs, metric_points, error_events…) and outcome (accepted, dropped…). */
  countIngest(signal: string, outcome: string, n: number): void;
  /** A gauge read at scrape time. Registering a name twice replaces the reader. */
  gauge(name: string, help: string, collect: Collect, labelNames?: string[]): void;
  /** A counter other modules increment (retention deletes…). */
  counter(name: string, help: string, labelNames?: string[]): Counter<string>;
  /** Prometheus text exposition. */
  text(): Promise<string>;
  /** Every metric with its values, for system.status and the OTLP push. */
  snapshot(): Promise<MetricObjectWithValues<MetricValue<string>>[]>;
}

export function createSelfMetrics(opts: { defaultMetrics?: boolean } = {}): SelfMetrics {
  const registry = new Registry();
  if (opts.defaultMetrics !== false) collectDefaultMetrics({ register: registry, prefix: 'sightline_' });
  const requests = new Counter({ name: 'sightline_http_requests_total', help: 'HTTP requests answered, by operation and status.', labelNames: ['operation', 'status'], registers: [registry] });
  const latency = new Histogram({
    name: 'sightline_http_request_duration_seconds',
    help: 'Time from request to response, by operation.',
    labelNames: ['operation'],
    buckets: [0.001, 0.0025, 0.005, 0.01, 0.025, 0.05, 0.1, 0.25, 0.5, 1, 2.5, 5, 10],
    registers: [registry],
  });
  const ingest = new Counter({ name: 'sightline_ingest_items_total', help: 'Telemetry items received, by signal and outcome.', labelNames: ['signal', 'outcome'], registers: [registry] });
  const gauges = new Map<string, { collect: Collect }>();
  const counters = new Map<string, Counter<string>>();

  return {
    registry,
    observeRequest(operation, status, seconds) {
      requests.inc({ operation, status: String(status) });
      latency.observe({ operation }, seconds);
    },
    countIngest(signal, outcome, n) {
      if (n > 0) ingest.inc({ signal, outcome }, n);
    },
    gauge(name, help, collect, labelNames = []) {
      const existing = gauges.get(name);
      if (existing) {
        existing.collect = collect;
        return;
      }
      const entry = { collect };
      gauges.set(name, entry);
      new Gauge({
        name,
        help,
        labelNames,
        registers: [registry],
        collect() {
          let v: ReturnType<Collect>;
          try {
            v = entry.collect();
          } catch {
            return; // a reader that fails (a file gone) leaves the gauge out of this scrape
          }
          this.reset();
          if (typeof v === 'number') this.set(v);
          else for (const { labels, value } of v) this.set(labels, value);
        },
      });
    },
    counter(name, help, labelNames = []) {
      let c = counters.get(name);
      if (!c) {
        c = new Counter({ name, help, labelNames, registers: [registry] });
        counters.set(name, c);
      }
      return c;
    },
    text: () => registry.metrics(),
    snapshot: () => registry.getMetricsAsJSON() as Promise<MetricObjectWithValues<MetricValue<string>>[]>,
  };
}

// ---- OTLP push ------------------------------------------------------------------------------------

const kv = (labels: Record<string, string | number | undefined>) => Object.entries(labels).filter(([, v]) => v !== undefined).map(([key, v]) => ({ key, value: { stringValue: String(v) } }));

/**
 * The registry as an OTLP/JSON metrics request: counters as cumulative monotonic sums, gauges as
 * gauges, histograms as cumulative explicit-bucket histograms (prom-client's cumulative `le` buckets
 * become per-bucket counts). `startMs` is when the counters started.
 */
export function toOtlp(metrics: MetricObjectWithValues<MetricValue<string>>[], resource: Record<string, string>, nowMs: number, startMs: number): unknown {
  const nanos = (ms: number) => (BigInt(Math.round(ms)) * 1_000_000n).toString();
  const time = nanos(nowMs);
  const start = nanos(startMs);
  const out: unknown[] = [];
  for (const m of metrics) {
    const type = String(m.type);
    if (type === 'counter') {
      out.push({ name: m.name, description: m.help, sum: { aggregationTemporality: 2, isMonotonic: true, dataPoints: m.values.map((v) => ({ attributes: kv(v.labels), startTimeUnixNano: start, timeUnixNano: time, asDouble: v.value })) } });
    } else if (type === 'gauge') {
      out.push({ name: m.name, description: m.help, gauge: { dataPoints: m.values.map((v) => ({ attributes: kv(v.labels), timeUnixNano: time, asDouble: v.value })) } });
    } else if (type === 'histogram') {
      // Group prom-client's flat series (…_bucket{le}, …_sum, …_count) by their other labels.
      const series = new Map<string, { labels: Record<string, string | number>; bounds: Array<[number, number]>; sum: number; count: number }>();
      for (const v of m.values) {
        const { le, ...labels } = v.labels as Record<string, string | number>;
        const key = JSON.stringify(labels);
        const s = series.get(key) ?? { labels, bounds: [], sum: 0, count: 0 };
        series.set(key, s);
        const metricName = (v as { metricName?: string }).metricName ?? '';
        if (metricName.endsWith('_bucket') && le !== undefined && le !== '+Inf') s.bounds.push([Number(le), v.value]);
        else if (metricName.endsWith('_sum')) s.sum = v.value;
        else if (metricName.endsWith('_count')) s.count = v.value;
      }
      const dataPoints = [...series.values()].map((s) => {
        s.bounds.sort((a, b) => a[0] - b[0]);
        const counts: number[] = [];
        let prev = 0;
        for (const [, cumulative] of s.bounds) {
          counts.push(cumulative - prev);
          prev = cumulative;
        }
        counts.push(s.count - prev);
        return { attributes: kv(s.labels), startTimeUnixNano: start, timeUnixNano: time, count: String(s.count), sum: s.sum, bucketCounts: counts.map(String), explicitBounds: s.bounds.map(([b]) => b) };
      });
      out.push({ name: m.name, description: m.help, histogram: { aggregationTemporality: 2, dataPoints } });
    }
  }
  return { resourceMetrics: [{ resource: { attributes: kv(resource) }, scopeMetrics: [{ scope: { name: 'sightline.self' }, metrics: out }] }] };
}

/**
 * Pushes the registry to an OTLP/HTTP JSON endpoint every `intervalMs`. Failures are logged and
 * retried at the next interval; nothing queues up.
 */
export function startOtlpPush(
  metrics: SelfMetrics,
  opts: { url: string; headers: Record<string, string>; intervalMs: number; resource: Record<string, string>; now: () => number; onError: (err: unknown) => void },
): { stop(): void; pushNow(): Promise<void> } {
  const started = opts.now();
  const pushNow = async () => {
    try {
      const body = toOtlp(await metrics.snapshot(), opts.resource, opts.now(), started);
      const r = await fetch(opts.url, { method: 'POST', headers: { 'content-type': 'application/json', ...opts.headers }, body: JSON.stringify(body) });
      if (!r.ok) opts.onError(new Error(`OTLP push answered ${r.status}`));
    } catch (err) {
      opts.onError(err);
    }
  };
  const timer = setInterval(() => void pushNow(), opts.intervalMs);
  timer.unref();
  return { stop: () => clearInterval(timer), pushNow };
}
