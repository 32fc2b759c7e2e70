/**
 * Issue 11 item 7: observability.summary answers "how is the project right now" in one call: besides
 * logs and metrics, the newest and the regressed error groups (Sentry events through the store
 * endpoint), the slowest operations (OTLP spans) and the latest deployments.
 */
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { api, startTestServer, type TestServer } from '../helpers/server.js';
import { hex, sendEvent, sendSpans, type SpanSpec } from '../operations/errors-fixtures.js';
import { ok } from '../operations/telemetry-fixtures.js';

const NOW = Date.UTC(2026, 2, 2, 12);
const MIN = 60_000;
const HOUR = 60 * MIN;
const DAY = 24 * HOUR;

describe('observability.summary: errors, slow operations, deployments', () => {
  let t: TestServer;
  beforeAll(async () => {
    t = await startTestServer({ now: () => NOW });
    const ev = (type: string, fn: string, at: number, service = 'api') => sendEvent(t, { type, fn, at, service, value: `${type} in ${fn}` });
    await ev('NewError', 'newFn', NOW - HOUR);
    await ev('OldError', 'oldFn', NOW - 3 * DAY); // seen long ago, silent the day before, back today: regressed
    await ev('OldError', 'oldFn', NOW - 2 * HOUR);
    await ev('SteadyError', 'steadyFn', NOW - 3 * DAY); // also seen yesterday: not regressed
    await ev('SteadyError', 'steadyFn', NOW - 30 * HOUR);
    await ev('SteadyError', 'steadyFn', NOW - 3 * HOUR);
    await ev('GoneError', 'goneFn', NOW - 3 * DAY); // nothing in the window
    await ev('WorkerError', 'workerFn', NOW - 10 * MIN, 'worker');

    let n = 0;
    const span = (service: string, name: string, start: number, ms: number): SpanSpec => ({ trace_id: hex(++n), span_id: hex(n, 16), name, service, start, end: start + ms });
    await sendSpans(t, [
      span('api', 'GET /slow', NOW - 2 * HOUR, 900),
      span('api', 'GET /slow', NOW - HOUR, 1100),
      span('api', 'GET /fast', NOW - HOUR, 10),
      span('worker', 'job', NOW - 30 * MIN, 500),
      span('api', 'GET /ancient', NOW - 3 * DAY, 60_000),
    ]);

    const writer = t.mintKey(['deployments:write']);
    for (const [id, service, at] of [['d-old', 'api', NOW - 5 * HOUR], ['d-new', 'api', NOW - HOUR], ['d-worker', 'worker', NOW - 2 * HOUR], ['d-future', 'api', NOW + HOUR]] as const) {
      const r = await api(t, 'POST', `/v1/projects/${t.projectId}/deployments`, { key: writer, body: { deployment_id: id, service, version: `v-${id}`, environment: 'production', status: 'ready', started_at: new Date(at).toISOString() } });
      expect(r.status).toBe(201);
    }
  });
  afterAll(() => t?.close());

  it('lists the newest error groups (first seen in the window) and the regressed ones', async () => {
    const b = await ok(t, '/observability-summary');
    expect(b.errors.newest_groups.map((g: { title: string }) => g.title)).toEqual([expect.stringContaining('WorkerError'), expect.stringContaining('NewError')]);
    expect(b.errors.newest_groups[0]).toMatchObject({ service_name: 'worker', event_count: 1, status: 'unresolved', first_seen: new Date(NOW - 10 * MIN).toISOString() });
    expect(b.errors.regressed_groups.map((g: { title: string }) => g.title)).toEqual([expect.stringContaining('OldError')]);
    expect(b.errors.regressed_groups[0]).toMatchObject({ event_count: 2, first_seen: new Date(NOW - 3 * DAY).toISOString(), last_seen: new Date(NOW - 2 * HOUR).toISOString() });
    expect(b.highlights.some((h: string) => h.startsWith('Regressed:') && h.includes('OldError'))).toBe(true);
    const api1 = await ok(t, '/observability-summary', { service_name: 'api' });
    expect(api1.errors.newest_groups.map((g: { title: string }) => g.title)).toEqual([expect.stringContaining('NewError')]);
  });

  it('lists the slowest operations by p95 of their entry spans in the window', async () => {
    const b = await ok(t, '/observability-summary');
    expect(b.slowest_operations).toEqual([
      { service_name: 'api', operation: 'GET /slow', trace_count: 2, error_count: 0, p50_ms: 1000, p95_ms: 1090 },
      { service_name: 'worker', operation: 'job', trace_count: 1, error_count: 0, p50_ms: 500, p95_ms: 500 },
      { service_name: 'api', operation: 'GET /fast', trace_count: 1, error_count: 0, p50_ms: 10, p95_ms: 10 },
    ]);
    expect(b.highlights).toContain('Slowest operation: GET /slow (api), p95 1,090 ms over 2 requests.');
    const worker = await ok(t, '/observability-summary', { service_name: 'worker' });
    expect(worker.slowest_operations.map((o: { operation: string }) => o.operation)).toEqual(['job']);
  });

  it('lists the latest deployments that started by the end of the window', async () => {
    const b = await ok(t, '/observability-summary');
    expect(b.latest_deployments.map((d: { version: string }) => d.version)).toEqual(['v-d-new', 'v-d-worker', 'v-d-old']);
    expect(b.latest_deployments[0]).toMatchObject({ provider: 'generic', service: 'api', environment: 'production', status: 'ready', started_at: new Date(NOW - HOUR).toISOString() });
    const past = await ok(t, '/observability-summary', { to: '-90m', service_name: 'api' });
    expect(past.latest_deployments.map((d: { version: string }) => d.version)).toEqual(['v-d-old']);
  });
});
