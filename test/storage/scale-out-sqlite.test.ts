/**
 * Issue 20: with telemetry in ClickHouse and control data in PostgreSQL, a process's SQLite file holds
 * nothing the processes share — so each process (machine) can have a file of its own. Every kind of
 * telemetry and control data goes in through the real endpoints (OTLP spans with a GenAI span, logs and
 * metrics; a Sentry envelope with an error, a session, a cron check-in, a replay with its recording and
 * a client report; PostHog capture; the AI batch with a score; Langfuse trace info; feedback; a
 * deployment), then the SQLite file is read: only the schema's own rows may be there. A new table
 * written to SQLite in this mode fails here, naming it. Runs in the scale-out project only.
 */
import { randomBytes } from 'node:crypto';
import Database from 'better-sqlite3';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { api, startTestServer, type TestServer } from '../helpers/server.js';
import { sentryEvent } from '../operations/errors-fixtures.js';
import { langfuseKeyPair } from '../../src/ingest/langfuse.js';

const scaleOut = !!process.env.SIGHTLINE_TEST_POSTGRES && process.env.SIGHTLINE_TEST_CLICKHOUSE === 'server';

/** Rows every migrated SQLite file holds, whatever was sent: migrations applied, FTS5's own configuration, rollup levels. */
const SCHEMA_ROWS = new Set(['schema_migrations', 'metric_rollup_levels', 'logs_fts_config', 'logs_fts_data', 'logs_fts2_config', 'logs_fts2_data', 'error_events_fts_config', 'error_events_fts_data']);

describe.skipIf(!scaleOut)('a process SQLite file in scale-out mode', () => {
  let t: TestServer;
  beforeAll(async () => {
    t = await startTestServer();
  });
  afterAll(() => t.close());

  const post = async (path: string, body: unknown, headers: Record<string, string> = {}) => {
    const r = await fetch(`${t.url}${path}`, { method: 'POST', headers: { 'content-type': 'application/json', ...headers }, body: typeof body === 'string' || Buffer.isBuffer(body) ? body : JSON.stringify(body) });
    expect(r.status, `${path}: ${await r.clone().text()}`).toBeLessThan(300);
    return r;
  };

  it('holds only the schema after every kind of data went in', async () => {
    const now = Date.now();
    const ns = (ms: number) => String(BigInt(ms) * 1_000_000n);
    const key = { 'x-service-key': t.keys.ingest };
    const traceId = randomBytes(16).toString('hex');
    const resource = { attributes: [{ key: 'service.name', value: { stringValue: 'shop' } }, { key: 'service.version', value: { stringValue: '1.2.0' } }] };
    await post('/ingest/v1/traces', {
      resourceSpans: [{
        resource,
        scopeSpans: [{
          spans: [
            { traceId, spanId: randomBytes(8).toString('hex'), name: 'GET /cart', kind: 2, startTimeUnixNano: ns(now - 2000), endTimeUnixNano: ns(now - 1000), status: { code: 2 }, attributes: [{ key: 'http.route', value: { stringValue: '/cart' } }] },
            {
              traceId, spanId: randomBytes(8).toString('hex'), name: 'chat gpt-4o', kind: 3, startTimeUnixNano: ns(now - 1900), endTimeUnixNano: ns(now - 1100),
              attributes: [{ key: 'gen_ai.operation.name', value: { stringValue: 'chat' } }, { key: 'gen_ai.request.model', value: { stringValue: 'gpt-4o' } }, { key: 'gen_ai.usage.input_tokens', value: { intValue: '12' } }],
            },
          ],
        }],
      }],
    }, key);
    await post('/ingest/v1/logs', { resourceLogs: [{ resource, scopeLogs: [{ logRecords: [{ timeUnixNano: ns(now - 500), severityNumber: 17, severityText: 'ERROR', body: { stringValue: 'payment declined for order 7' }, traceId }] }] }] }, key);
    await post('/ingest/v1/metrics', {
      resourceMetrics: [{
        resource,
        scopeMetrics: [{
          metrics: [
            { name: 'cart.size', gauge: { dataPoints: [{ timeUnixNano: ns(now - 400), asDouble: 3 }] } },
            { name: 'http.server.requests', sum: { aggregationTemporality: 2, isMonotonic: true, dataPoints: [{ startTimeUnixNano: ns(now - 60_000), timeUnixNano: ns(now - 400), asInt: '5' }] } },
            { name: 'http.server.duration', histogram: { aggregationTemporality: 2, dataPoints: [{ startTimeUnixNano: ns(now - 60_000), timeUnixNano: ns(now - 400), count: '2', sum: 30, bucketCounts: ['1', '1'], explicitBounds: [10] }] } },
          ],
        }],
      }],
    }, key);

    // A Sentry envelope: an error, a session update and aggregates, a cron check-in, a client report.
    const nowS = now / 1000;
    const item = (header: Record<string, unknown>, payload: unknown) => `${JSON.stringify(header)}\n${JSON.stringify(payload)}\n`;
    const event = sentryEvent({ type: 'CartError', value: 'no cart', at: now - 300, event_id: randomBytes(16).toString('hex'), release: 'shop@1.2.0', service: 'shop' });
    const replay = randomBytes(16).toString('hex');
    const recording = Buffer.from('{"segment_id":0}\n[]');
    await post(`/ingest/api/${t.projectId}/envelope/?sentry_key=${t.keys.ingest}`, Buffer.concat([
      Buffer.from(`${JSON.stringify({ event_id: event.event_id })}\n`),
      Buffer.from(item({ type: 'event' }, { ...event, user: { id: 'user-1' } })),
      Buffer.from(item({ type: 'session' }, { sid: randomBytes(16).toString('hex'), did: 'user-1', init: true, started: new Date(now - 60_000).toISOString(), timestamp: new Date(now).toISOString(), status: 'exited', errors: 0, attrs: { release: 'shop@1.2.0', environment: 'production' } })),
      Buffer.from(item({ type: 'sessions' }, { aggregates: [{ started: new Date(now - 60_000).toISOString(), exited: 3, errored: 1 }], attrs: { release: 'shop@1.2.0', environment: 'production' } })),
      Buffer.from(item({ type: 'check_in' }, { check_in_id: randomBytes(16).toString('hex'), monitor_slug: 'nightly', status: 'ok', duration: 2 })),
      Buffer.from(item({ type: 'client_report' }, { discarded_events: [{ reason: 'queue_overflow', category: 'error', quantity: 2 }] })),
    ]));
    // The replay in an envelope of its own, as the browser SDK sends it (the header names the replay).
    await post(`/ingest/api/${t.projectId}/envelope/?sentry_key=${t.keys.ingest}`, Buffer.concat([
      Buffer.from(`${JSON.stringify({ event_id: replay })}\n`),
      Buffer.from(item({ type: 'replay_event' }, { type: 'replay_event', replay_id: replay, timestamp: nowS, replay_start_timestamp: nowS - 5, urls: ['https://shop.example/'], error_ids: [event.event_id], trace_ids: [] })),
      Buffer.from(`${JSON.stringify({ type: 'replay_recording', length: recording.length })}\n`),
      recording,
      Buffer.from('\n'),
    ]));

    // Product analytics (PostHog capture), the AI batch with a score, Langfuse trace info.
    await api(t, 'POST', `/v1/projects/${t.projectId}/analytics/enable`, { key: t.keys.admin, body: {} });
    await post('/ingest/e/', [
      { event: '$pageview', distinct_id: 'anon-1', properties: { token: t.keys.ingest, $session_id: 'ps-1', $current_url: 'https://shop.example/?utm_source=news' }, timestamp: new Date(now - 200).toISOString() },
      { event: '$identify', distinct_id: 'user-1', properties: { token: t.keys.ingest, $anon_distinct_id: 'anon-1', $set: { email: 'ana@example.com' } }, timestamp: new Date(now - 100).toISOString() },
    ]);
    await post('/ingest/v1/ai/batch', {
      observations: [{ observation_id: 'obs-1', observation_type: 'generation', operation: 'chat', trace_id: 'ai-trace-1', session_id: 'sess-1', user_id: 'user-1', model: 'gpt-4o-mini', started_at: new Date(now - 5000).toISOString(), duration_ms: 800, prompt_tokens: 10, completion_tokens: 5, input: [{ role: 'user', content: 'hi' }], output: { role: 'assistant', content: 'hello' } }],
      scores: [{ score_id: 'score-1', observation_id: 'obs-1', name: 'helpfulness', data_type: 'numeric', value: 0.8, timestamp: new Date(now - 4000).toISOString() }],
    }, key);
    const lf = langfuseKeyPair(t.projectId, t.keys.ingest);
    await post('/ingest/api/public/ingestion', { batch: [{ id: 'ev-1', type: 'trace-create', timestamp: new Date(now).toISOString(), body: { id: 'lf-trace-1', name: 'checkout agent', sessionId: 'sess-1', userId: 'user-1' } }] }, {
      authorization: `Basic ${Buffer.from(`${lf.publicKey}:${lf.secretKey}`).toString('base64')}`,
    });

    // Control data through the API.
    await post(`/v1/projects/${t.projectId}/feedback`, { message: 'the cart was empty', replay_id: replay, user_id: 'user-1' }, key);
    await post(`/v1/projects/${t.projectId}/deployments`, { deployment_id: 'deploy-1', service: 'shop', version: '1.2.0', environment: 'production', status: 'ready' }, { 'x-service-key': t.keys.admin });

    // What went in is readable (through the scale-out stores)…
    const get = async (path: string) => {
      const r = await api(t, 'GET', `/v1/projects/${t.projectId}${path}`, { key: t.keys.admin });
      expect(r.status, `${path}: ${JSON.stringify(r.body)}`).toBe(200);
      return r.body;
    };
    expect((await get(`/traces/${traceId}`)).spans).toHaveLength(2);
    expect((await get('/errors?q=CartError')).data).toHaveLength(1);
    expect((await get('/releases')).data.map((r: { version: string }) => r.version)).toContain('1.2.0');
    expect((await get('/agent-observations/obs-1')).model).toBe('gpt-4o-mini');
    expect(t.s.services.ingestMisc.replay(t.projectId, replay)).toMatchObject({ segments: 1 });

    // …and the process's SQLite file holds none of it.
    const db = new Database(t.dbFile, { readonly: true, fileMustExist: true });
    try {
      // (Virtual tables are left out: their rows live in their shadow tables, which are listed.)
      const tables = db.prepare("SELECT name FROM sqlite_master WHERE type = 'table' AND name NOT LIKE 'sqlite_%' AND sql NOT LIKE 'CREATE VIRTUAL TABLE%'").pluck().all() as string[];
      const holding = tables.filter((name) => !SCHEMA_ROWS.has(name) && db.prepare(`SELECT 1 FROM "${name}" LIMIT 1`).get() !== undefined);
      expect(holding).toEqual([]);
    } finally {
      db.close();
    }
  });
});
