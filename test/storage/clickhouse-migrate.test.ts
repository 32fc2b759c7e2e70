/**
 * Issue 20, item 5: `sightline migrate --to-clickhouse` copies a SQLite database's spans, log
 * records and metric points into ClickHouse; a server reading them there answers the trace, log and
 * metric reads exactly as the SQLite server did, and cumulative series continue across the copy.
 * Runs in the ClickHouse test projects (18.16 and chdb).
 */
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { SpanKind, SpanStatusCode, trace, ROOT_CONTEXT } from '@opentelemetry/api';
import { BasicTracerProvider, SimpleSpanProcessor } from '@opentelemetry/sdk-trace-base';
import { OTLPTraceExporter } from '@opentelemetry/exporter-trace-otlp-proto';
import { resourceFromAttributes } from '@opentelemetry/resources';
import { createHttpEngine, type ChEngine } from '../../src/storage/clickhouse/client.js';
import { copyLogsToClickHouse, copyMetricPointsToClickHouse, copySpansToClickHouse, CopyRefusedError } from '../../src/storage/clickhouse/migrate.js';
import { SEV, sendLogs, type LogSpec } from '../operations/telemetry-fixtures.js';
import { main } from '../../src/cli/main.js';
import { createChdbEngine, dropDatabase } from '../support/clickhouse.js';
import { api, startTestServer, type TestServer } from '../helpers/server.js';
import type { MetricPointRecord } from '../../src/domain/telemetry-types.js';

const mode = process.env.SIGHTLINE_TEST_CLICKHOUSE;
const serverUrl = process.env.SIGHTLINE_TEST_CLICKHOUSE_URL;
const NOW = Date.parse('2026-03-02T10:00:00.000Z');

/** A cumulative counter and a gauge of two services, one point a minute, and a delta histogram with exemplars. */
function metricPoints(minutes: number[], value: (m: number) => number): MetricPointRecord[] {
  const out: MetricPointRecord[] = [];
  for (const m of minutes) {
    const at = NOW - m * 60_000;
    for (const service of ['web', 'worker']) {
      const base = {
        description: 'd', flags: 0, attributes: { 'http.route': '/cart' }, resource: { 'service.name': service, 'deployment.environment.name': 'prod', 'host.name': `${service}-1` },
        scope: { name: 'app', version: '', attributes: {} }, service_name: service, time_ms: at,
      };
      out.push({ ...base, metric_name: 'requests', unit: '{request}', type: 'sum', temporality: 'cumulative', monotonic: true, start_ms: NOW - 2 * 3600_000, value: value(m) });
      out.push({ ...base, metric_name: 'cpu', unit: '1', type: 'gauge', temporality: 'unspecified', monotonic: false, start_ms: null, value: (m % 7) / 4 });
      out.push({
        ...base, metric_name: 'latency', unit: 'ms', type: 'hist', temporality: 'delta', monotonic: false, start_ms: at - 60_000, count: 3, sum: 40 + m,
        min: 2, max: 30, bucket_counts: [1, 1, 1], explicit_bounds: [5, 20],
        ...(m % 10 === 0 ? { exemplars: [{ time_ms: at - 5, value: 30, trace_id: '0af7651916cd43dd8448eb211c80319c', span_id: 'b7ad6b7169203331', attributes: {} }] } : {}),
      });
    }
  }
  return out;
}

describe.skipIf(mode !== 'server' && mode !== 'chdb')('migrate --to-clickhouse', () => {
  let sqlite: TestServer;
  let copy: TestServer;
  let engine: ChEngine;
  const database = `mig_${process.pid}_${Date.now()}`;
  const traceIds: string[] = [];

  beforeAll(async () => {
    sqlite = await startTestServer({ now: () => NOW, clickhouse: false });
    const exporter = new OTLPTraceExporter({ url: `${sqlite.url}/ingest/v1/traces`, headers: { 'x-service-key': sqlite.keys.ingest } });
    const provider = (service: string) =>
      new BasicTracerProvider({ resource: resourceFromAttributes({ 'service.name': service, 'deployment.environment.name': 'prod', 'service.version': '3.1' }), spanProcessors: [new SimpleSpanProcessor(exporter)] });
    const web = provider('web').getTracer('web');
    for (let i = 0; i < 6; i++) {
      const at = NOW - (i + 1) * 60_000;
      const root = web.startSpan(i % 2 ? 'GET /cart' : 'POST /orders/:id', { kind: SpanKind.SERVER, startTime: at, attributes: { 'http.request.method': i % 2 ? 'GET' : 'POST', 'http.route': i % 2 ? '/cart' : '/orders/:id', n: i } });
      const ctx = trace.setSpan(ROOT_CONTEXT, root);
      const db = web.startSpan('SELECT orders', { kind: SpanKind.CLIENT, startTime: at + 5, attributes: { 'db.system': 'postgresql', 'server.address': 'pg' } }, ctx);
      db.addEvent('retry', { attempt: 2 }, at + 7);
      if (i === 3) db.setStatus({ code: SpanStatusCode.ERROR, message: 'deadlock' });
      db.end(at + 20 + i);
      root.end(at + 40 + i * 3);
      traceIds.push(root.spanContext().traceId);
    }
    await exporter.forceFlush();
    // Log records: equal times, repeated attribute sets (stored with templates in SQLite), trace ids.
    const logs: LogSpec[] = Array.from({ length: 30 }, (_, i) => ({
      at: NOW - Math.floor(i / 3) * 60_000 - (i % 2) * 500,
      body: `${['payment declined', 'connection reset by peer', 'cache miss'][i % 3]} order-${i % 4}`,
      severity: [SEV.info, SEV.warn, SEV.error][i % 3],
      attributes: i % 5 ? { 'http.route': '/cart', 'http.request.method': 'GET', attempt: i % 2 } : ({ 'user.id': `u${i}` } as LogSpec['attributes']),
      ...(i % 4 === 0 ? { traceId: traceIds[i % traceIds.length], spanId: 'b7ad6b7169203331' } : {}),
    }));
    await sendLogs(sqlite, [
      { resource: { service: 'web', environment: 'prod', release: '3.1' }, logs: logs.slice(0, 20) },
      { resource: { service: 'worker' }, logs: logs.slice(20) },
    ]);
    const pts = metricPoints(Array.from({ length: 50 }, (_, i) => 50 - i), (m) => (50 - m) * 3);
    await sqlite.s.services.writeBatch(() => sqlite.s.services.telemetry.insertMetricPoints(sqlite.projectId, pts, NOW));
    engine = mode === 'server' ? createHttpEngine(`${serverUrl}/${database}`) : createChdbEngine();
  });
  afterAll(async () => {
    await sqlite?.close();
    await copy?.close();
    if (mode === 'server') await dropDatabase(serverUrl!, database);
  });

  it('copies every span, log record and metric point, and the copy answers the trace, log and metric reads as SQLite does', async () => {
    const r = await copySpansToClickHouse(sqlite.s.db, engine, { batch: 5 });
    expect(r.spans).toBe(12);
    expect(r.projects).toBe(1);
    const l = await copyLogsToClickHouse(sqlite.s.db, engine, { batch: 7 });
    expect(l).toMatchObject({ logs: 30, projects: 1 });
    const m = await copyMetricPointsToClickHouse(sqlite.s.db, engine, { batch: 40 });
    expect(m).toMatchObject({ points: 300, projects: 1 });
    copy = await startTestServer({ now: () => NOW, options: { clickhouse: engine } });
    expect(copy.projectId).toBe(sqlite.projectId);
    const w = `from=${new Date(NOW - 3600_000).toISOString()}&to=${new Date(NOW).toISOString()}`;
    const paths = [
      `/traces?${w}`,
      `/traces?${w}&sort=duration`,
      `/traces?${w}&status=error`,
      `/trace-operations?${w}`,
      `/services?${w}`,
      `/logs?${w}`,
      `/logs?${w}&q=${encodeURIComponent('"connection reset" order*')}`,
      `/logs?${w}&q=${encodeURIComponent('http.route:/cart attempt:1')}&limit=3&offset=2`,
      `/logs?${w}&service=worker&level=error,warn`,
      `/logs/histogram?${w}&step=5m&group_by=http_method`,
      `/logs/insights?${w}&dimensions=http.route,user.id`,
      ...traceIds.map((t) => `/traces/${t}`),
      `/metrics?${w}`,
      `/metrics/timeline?${w}&metric_name=requests&metric_type=sum&aggregation=sum&granularity=5m`,
      `/metrics/timeline?${w}&metric_name=cpu&metric_type=gauge&aggregation=p90&granularity=15m&group_by=host.name`,
      `/metrics/timeline?${w}&metric_name=latency&metric_type=hist&aggregation=p50&granularity=5m&attributes=host.name:web-1`,
      `/metrics/inspect?${w}&metric_name=latency&metric_type=hist`,
      `/observability-summary?${w}`,
    ];
    for (const p of paths) {
      const a = await api(sqlite, 'GET', `/v1/projects/${sqlite.projectId}${p}`, { key: sqlite.keys.admin });
      const b = await api(copy, 'GET', `/v1/projects/${copy.projectId}${p}`, { key: copy.keys.admin });
      expect(a.status, p).toBe(200);
      expect(b.body, p).toEqual(a.body);
    }
    await expect(copySpansToClickHouse(sqlite.s.db, engine)).rejects.toThrow(CopyRefusedError);
    await expect(copyLogsToClickHouse(sqlite.s.db, engine)).rejects.toThrow(CopyRefusedError);
    await expect(copyMetricPointsToClickHouse(sqlite.s.db, engine)).rejects.toThrow(CopyRefusedError);

    // A counter's next export, sent after the copy, is differenced against the copied points.
    const next = metricPoints([0], () => 49 * 3 + 14); // 14 more than the last copied point, per service
    for (const s of [sqlite, copy]) await s.s.services.writeBatch(() => s.s.services.telemetry.insertMetricPoints(s.projectId, next, NOW));
    const t = `/metrics/timeline?from=${new Date(NOW - 600_000).toISOString()}&to=${new Date(NOW + 60_000).toISOString()}&metric_name=requests&metric_type=sum&aggregation=sum&granularity=1m`;
    const a = await api(sqlite, 'GET', `/v1/projects/${sqlite.projectId}${t}`, { key: sqlite.keys.admin });
    const b = await api(copy, 'GET', `/v1/projects/${copy.projectId}${t}`, { key: copy.keys.admin });
    expect(a.body.buckets.at(-1)).toMatchObject({ value: 28, point_count: 2 });
    expect(b.body).toEqual(a.body);
  });

  it.skipIf(mode !== 'server')('runs from the command line against SIGHTLINE_DB', async () => {
    const target = `${database}_cli`;
    const saved = process.env.SIGHTLINE_DB;
    process.env.SIGHTLINE_DB = sqlite.dbFile;
    const out: string[] = [];
    const write = process.stdout.write.bind(process.stdout);
    process.stdout.write = ((chunk: string) => (out.push(String(chunk)), true)) as typeof process.stdout.write;
    try {
      expect(await main(['migrate', '--to-clickhouse', '--url', `${serverUrl}/${target}`, '--json'])).toBe(0);
      expect(await main(['migrate', '--to-clickhouse', '--url', `${serverUrl}/${target}`, '--json'])).toBe(1); // refused: already copied
      expect(await main(['migrate', '--to-postgres'])).toBe(2);
    } finally {
      process.stdout.write = write;
      process.env.SIGHTLINE_DB = saved;
      await dropDatabase(serverUrl!, target);
    }
    expect(JSON.parse(out.join('').trim().split('\n')[0]!)).toMatchObject({ spans: 12, projects: 1, logs: 30, metric_points: 306 }); // with the counter's next export the first test sent
  });
});
