/**
 * Releases end to end: the real OpenTelemetry JS SDK sends spans of two `service.version`s over
 * OTLP/protobuf, the CLI records the deployments, and the CLI reads the releases, their health
 * verdict and the gate's exit code back.
 */
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { SpanKind, SpanStatusCode } from '@opentelemetry/api';
import { BasicTracerProvider, BatchSpanProcessor } from '@opentelemetry/sdk-trace-base';
import { OTLPTraceExporter } from '@opentelemetry/exporter-trace-otlp-proto';
import { resourceFromAttributes } from '@opentelemetry/resources';
import { startTestServer, type TestServer } from '../helpers/server.js';
import { runInProcess } from '../cli/helpers.js';
import { releaseGate } from '../../src/cli/release-gate.js';
import { Readable } from 'node:stream';

const MIN = 60_000;
const T0 = Date.parse('2026-05-01T10:00:00.000Z');
let clock = T0 + 150 * MIN;
let t: TestServer;
let env: Record<string, string>;

/** `n` SERVER spans of `version` over [from, from + 60 min), `errors` of them failed, each `ms` long. */
async function sendWithSdk(version: string, from: number, n: number, ms: number, errors: number) {
  const provider = new BasicTracerProvider({
    resource: resourceFromAttributes({ 'service.name': 'shop', 'service.version': version, 'deployment.environment.name': 'production' }),
    spanProcessors: [
      new BatchSpanProcessor(new OTLPTraceExporter({ url: `${t.url}/ingest/v1/traces`, headers: { 'x-service-key': t.keys.ingest } }), { maxExportBatchSize: 512, maxQueueSize: 4096 }),
    ],
  });
  const tracer = provider.getTracer('e2e-releases');
  for (let i = 0; i < n; i++) {
    const start = from + (i + 0.5) * (60 * MIN / n);
    const span = tracer.startSpan('GET /cart', { kind: SpanKind.SERVER, startTime: start, attributes: { 'http.request.method': 'GET', 'http.route': '/cart' } });
    if (i < errors) span.setStatus({ code: SpanStatusCode.ERROR });
    span.end(start + ms);
  }
  await provider.forceFlush();
  await provider.shutdown();
}

beforeAll(async () => {
  t = await startTestServer({ now: () => clock });
  env = { SIGHTLINE_URL: t.url, SIGHTLINE_API_KEY: t.keys.admin };
});
afterAll(() => t.close());

describe('releases from real OTel spans and CLI deployments', () => {
  it('derives two confirmed releases and judges the second regressed on error rate and p95', async () => {
    for (const [id, version, at, sha] of [['gh-1', '1.0.0', T0, 'a1b2c3d'], ['gh-2', '2.0.0', T0 + 60 * MIN, 'e4f5a6b']] as const) {
      const r = await runInProcess(
        ['deployments', 'create', '--deployment-id', id, '--provider', 'github', '--service', 'shop', '--version', version, '--environment', 'production', '--status', 'ready', '--commit-sha', sha, '--started-at', new Date(at).toISOString(), '--json'],
        env,
      );
      expect(r.code, r.stderr).toBe(0);
    }
    await sendWithSdk('1.0.0', T0, 120, 20, 0);
    await sendWithSdk('2.0.0', T0 + 60 * MIN, 120, 45, 12);

    const listed = await runInProcess(['releases', 'list', '--service-name', 'shop', '--json'], env);
    expect(listed.code, listed.stderr).toBe(0);
    const body = JSON.parse(listed.stdout);
    expect(body.data.map((r: { version: string; confidence: string; comparison: string }) => [r.version, r.confidence, r.comparison])).toEqual([
      ['2.0.0', 'confirmed', 'regressed'],
      ['1.0.0', 'confirmed', 'insufficient_data'],
    ]);
    expect(body.data[0]).toMatchObject({ is_current: true, commit_sha: 'e4f5a6b', first_seen: new Date(T0 + 60 * MIN + 15_000).toISOString() });

    const got = await runInProcess(['releases', 'get', '--release-id', body.data[0].id, '--json'], env);
    expect(got.code, got.stderr).toBe(0);
    const d = JSON.parse(got.stdout);
    expect(d.health).toMatchObject({ comparison: 'regressed', decided_by: 'error_rate_and_p95_latency' });
    expect(d.health.current).toMatchObject({ request_count: 120, error_count: 12, error_rate: 0.1 });
    expect(d.health.previous).toMatchObject({ request_count: 120, error_count: 0 });
    expect(Math.abs(d.health.current.p95_ms - 45) / 45).toBeLessThanOrEqual(0.01);
    expect(d.release.serving).toEqual([{ started_at: new Date(T0 + 60 * MIN).toISOString(), ended_at: null }]);
    expect(d.previous_release.version).toBe('1.0.0');

    let out = '';
    const code = await releaseGate(['--service', 'shop', '--environment', 'production'], {
      io: { stdout: { write: (s: string) => (out += s) }, stderr: { write: () => true }, stdin: Readable.from([]), env },
    });
    expect(code).toBe(3);
    expect(JSON.parse(out).release.version).toBe('2.0.0');
  });
});
