import { gzipSync, deflateSync, brotliCompressSync } from 'node:zlib';
import Database from 'better-sqlite3';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { startTestServer, type TestServer } from '../helpers/server.js';
// A span's name column holds an empty blob when the name equals the operation (migration 044).
import { SPAN_NAME_SQL } from '../../src/storage/traces-read-repo.js';

const hex = (n: number, len = 32) => n.toString(16).padStart(len, '0');

function otlpJsonTraces(spans: { traceId: string; spanId: string; name: string }[]) {
  return {
    resourceSpans: [
      {
        resource: { attributes: [{ key: 'service.name', value: { stringValue: 'api' } }] },
        scopeSpans: [
          {
            scope: { name: 'test' },
            spans: spans.map((s) => ({
              ...s,
              kind: 2,
              startTimeUnixNano: '1795300000000000000',
              endTimeUnixNano: 1795300000250000000,
              someFutureField: { ignored: true },
            })),
          },
        ],
      },
    ],
  };
}

describe('ingestion over HTTP', () => {
  let t: TestServer;
  let clock = Date.parse('2026-11-22T10:00:05Z');
  beforeAll(async () => {
    // Spans stay in SQLite (read below with SQL); in the scale-out project control data (error groups,
    // replays, ingest outcomes) is in PostgreSQL, read through the server's split handle.
    t = await startTestServer({ now: () => clock, clickhouse: false, config: { ingest: { maxBodyBytes: 1024 * 1024, maxDecompressedBytes: 64 * 1024, quotaPerMinute: 0 } } });
  });
  afterAll(() => t.close());
  const count = (sql: string) => (t.s.db.prepare(sql).get() as { n: number }).n;

  describe('OTLP/HTTP', () => {
    const post = (path: string, body: Buffer | string, headers: Record<string, string> = {}) =>
      fetch(`${t.url}/ingest${path}`, { method: 'POST', body, headers: { 'x-service-key': t.keys.ingest, 'content-type': 'application/json', ...headers } });

    it('accepts OTLP/JSON with int64 as strings or numbers, ignoring unknown fields, and answers in JSON', async () => {
      const r = await post('/v1/traces', JSON.stringify(otlpJsonTraces([{ traceId: hex(1), spanId: hex(1, 16), name: 'GET /a' }])));
      expect(r.status).toBe(200);
      expect(r.headers.get('content-type')).toContain('application/json');
      expect(await r.json()).toEqual({});
      expect(count(`SELECT COUNT(*) n FROM spans s WHERE ${SPAN_NAME_SQL} = 'GET /a'`)).toBe(1);
    });

    it('accepts a gzip body', async () => {
      const body = gzipSync(JSON.stringify(otlpJsonTraces([{ traceId: hex(2), spanId: hex(2, 16), name: 'GET /gz' }])));
      const r = await post('/v1/traces', body, { 'content-encoding': 'gzip' });
      expect(r.status).toBe(200);
      expect(count(`SELECT COUNT(*) n FROM spans s WHERE ${SPAN_NAME_SQL} = 'GET /gz'`)).toBe(1);
    });

    it('reports rejected spans as partial success and keeps the valid ones', async () => {
      const r = await post('/v1/traces', JSON.stringify(otlpJsonTraces([
        { traceId: hex(3), spanId: hex(3, 16), name: 'good' },
        { traceId: 'zz', spanId: hex(4, 16), name: 'bad-trace-id' },
      ])));
      expect(r.status).toBe(200);
      const body = (await r.json()) as { partialSuccess: { rejectedSpans: string; errorMessage: string } };
      expect(Number(body.partialSuccess.rejectedSpans)).toBe(1);
      expect(body.partialSuccess.errorMessage).toBeTruthy();
      expect(count(`SELECT COUNT(*) n FROM spans s WHERE ${SPAN_NAME_SQL} IN ('good','bad-trace-id')`)).toBe(1);
    });

    it('answers 400 for an undecodable body and stores nothing', async () => {
      const before = count('SELECT COUNT(*) n FROM spans');
      const r = await post('/v1/traces', 'not json{');
      expect(r.status).toBe(400);
      const p = await post('/v1/traces', Buffer.from([0xff, 0xff, 0xff, 0x01, 0x02]), { 'content-type': 'application/x-protobuf' });
      expect(p.status).toBe(400);
      expect(count('SELECT COUNT(*) n FROM spans')).toBe(before);
    });

    it('answers 413 when the decompressed body exceeds the cap (a gzip bomb never expands)', async () => {
      const bomb = gzipSync(Buffer.alloc(1024 * 1024, 0x20));
      expect(bomb.length).toBeLessThan(64 * 1024);
      const r = await post('/v1/logs', bomb, { 'content-encoding': 'gzip' });
      expect(r.status).toBe(413);
    });

    it('refuses missing keys (401), keys without events:ingest (403) and unknown media types (415)', async () => {
      const body = JSON.stringify(otlpJsonTraces([]));
      expect((await fetch(`${t.url}/ingest/v1/traces`, { method: 'POST', body, headers: { 'content-type': 'application/json' } })).status).toBe(401);
      const reader = t.mintKey(['read', 'write']);
      expect((await post('/v1/traces', body, { 'x-service-key': reader })).status).toBe(403);
      expect((await post('/v1/traces', body, { 'content-type': 'text/plain' })).status).toBe(415);
    });

    it('turns span exception events into grouped error events', async () => {
      const payload = otlpJsonTraces([{ traceId: hex(9), spanId: hex(9, 16), name: 'POST /pay' }]);
      (payload.resourceSpans[0]!.scopeSpans[0]!.spans[0] as Record<string, unknown>).events = [
        {
          name: 'exception',
          timeUnixNano: '1795300000100000000',
          attributes: [
            { key: 'exception.type', value: { stringValue: 'PaymentDeclined' } },
            { key: 'exception.message', value: { stringValue: 'card 4242 declined' } },
            { key: 'exception.stacktrace', value: { stringValue: 'PaymentDeclined: card 4242 declined\n    at charge (/app/src/pay.js:10:5)\n    at handler (/app/src/routes.js:3:1)' } },
          ],
        },
      ];
      expect((await post('/v1/traces', JSON.stringify(payload))).status).toBe(200);
      expect(count(`SELECT COUNT(*) n FROM error_events WHERE trace_id = '${hex(9)}' AND type = 'PaymentDeclined'`)).toBe(1);
    });
  });

  describe('Sentry envelope and store', () => {
    const envelope = (items: { header: Record<string, unknown>; payload: unknown }[], header: Record<string, unknown> = {}) =>
      [JSON.stringify(header), ...items.flatMap((i) => [JSON.stringify(i.header), JSON.stringify(i.payload)])].join('\n') + '\n';
    const event = (id: number, message: string) => ({ header: { type: 'event' }, payload: { event_id: hex(id), message, level: 'error', platform: 'node' } });

    it('authenticates by X-Sentry-Auth, by sentry_key in the query and by the envelope dsn', async () => {
      const base = `${t.url}/ingest/api/${t.projectId}/envelope/`;
      const a = await fetch(base, { method: 'POST', body: envelope([event(101, 'auth header')]), headers: { 'x-sentry-auth': `Sentry sentry_version=7, sentry_key=${t.keys.ingest}` } });
      const b = await fetch(`${base}?sentry_key=${t.keys.ingest}&sentry_version=7`, { method: 'POST', body: envelope([event(102, 'auth query')]) });
      const c = await fetch(base, { method: 'POST', body: envelope([event(103, 'auth dsn')], { dsn: `http://${t.keys.ingest}@localhost/ingest/${t.projectId}` }) });
      const d = await fetch(base, { method: 'POST', body: envelope([event(104, 'no auth')]) });
      expect([a.status, b.status, c.status, d.status]).toEqual([200, 200, 200, 401]);
      expect(count(`SELECT COUNT(*) n FROM error_events WHERE event_id IN ('${hex(101)}','${hex(102)}','${hex(103)}','${hex(104)}')`)).toBe(3);
    });

    it('decodes gzip, deflate and br bodies', async () => {
      const url = `${t.url}/ingest/api/${t.projectId}/envelope/?sentry_key=${t.keys.ingest}`;
      const bodies: [string, Buffer][] = [
        ['gzip', gzipSync(envelope([event(201, 'gz')]))],
        ['deflate', deflateSync(envelope([event(202, 'df')]))],
        ['br', brotliCompressSync(envelope([event(203, 'br')]))],
      ];
      for (const [enc, body] of bodies) {
        const r = await fetch(url, { method: 'POST', body, headers: { 'content-encoding': enc } });
        expect(r.status, enc).toBe(200);
      }
      expect(count(`SELECT COUNT(*) n FROM error_events WHERE event_id IN ('${hex(201)}','${hex(202)}','${hex(203)}')`)).toBe(3);
    });

    it('skips unknown items, accepts attachments and client reports, and refuses a key of another project', async () => {
      const url = `${t.url}/ingest/api/${t.projectId}/envelope/?sentry_key=${t.keys.ingest}`;
      const body = envelope([
        { header: { type: 'made_up_item' }, payload: { x: 1 } },
        { header: { type: 'client_report' }, payload: { discarded_events: [{ reason: 'queue_overflow', category: 'error', quantity: 2 }] } },
        event(301, 'with friends'),
      ]);
      expect((await fetch(url, { method: 'POST', body })).status).toBe(200);
      expect(count(`SELECT COUNT(*) n FROM error_events WHERE event_id = '${hex(301)}'`)).toBe(1);
      const other = await fetch(`${t.url}/ingest/api/${t.otherProject.projectId}/envelope/?sentry_key=${t.keys.ingest}`, { method: 'POST', body: envelope([event(302, 'x')]) });
      expect(other.status).toBe(403);
    });

    it('answers CORS preflight for browser SDKs without credentials', async () => {
      const r = await fetch(`${t.url}/ingest/api/${t.projectId}/envelope/`, {
        method: 'OPTIONS',
        headers: { origin: 'https://shop.example.com', 'access-control-request-method': 'POST', 'access-control-request-headers': 'content-type' },
      });
      expect(r.status).toBe(204);
      expect(r.headers.get('access-control-allow-origin')).toBe('*');
      expect(r.headers.get('access-control-expose-headers')).toContain('x-sentry-rate-limits');
    });

    it('stores replays from replay_event + replay_recording and links them from feedback.get', async () => {
      const replayId = 'ab'.repeat(16);
      const url = `${t.url}/ingest/api/${t.projectId}/envelope/?sentry_key=${t.keys.ingest}`;
      const now = Date.now() / 1000;
      const recording = Buffer.concat([Buffer.from('{"segment_id":0}\n'), Buffer.from('[{"type":4,"data":{"href":"https://shop.example.com/"},"timestamp":1}]')]);
      const body = Buffer.concat([
        Buffer.from(`${JSON.stringify({ event_id: replayId })}\n`),
        Buffer.from(`${JSON.stringify({ type: 'replay_event' })}\n${JSON.stringify({ type: 'replay_event', replay_id: replayId, timestamp: now, replay_start_timestamp: now - 5, urls: ['https://shop.example.com/'], error_ids: [], trace_ids: [] })}\n`),
        Buffer.from(`${JSON.stringify({ type: 'replay_recording', length: recording.length })}\n`),
        recording,
        Buffer.from('\n'),
      ]);
      expect((await fetch(url, { method: 'POST', body })).status).toBe(200);
      expect(count(`SELECT segments n FROM replays WHERE replay_id = '${replayId}'`)).toBe(1);

      const headers = { 'content-type': 'application/json' };
      const created = await fetch(`${t.url}/v1/projects/${t.projectId}/feedback`, {
        method: 'POST',
        headers: { ...headers, 'x-service-key': t.keys.ingest },
        body: JSON.stringify({ message: 'replay me', replay_id: replayId }),
      });
      const { id } = (await created.json()) as { id: string };
      const missing = await fetch(`${t.url}/v1/projects/${t.projectId}/feedback`, {
        method: 'POST',
        headers: { ...headers, 'x-service-key': t.keys.ingest },
        body: JSON.stringify({ message: 'no such replay', replay_id: 'cd'.repeat(16) }),
      });
      const other = (await missing.json()) as { id: string };
      const get = async (fid: string) =>
        (await (await fetch(`${t.url}/v1/projects/${t.projectId}/feedback/${fid}`, { headers: { 'x-service-key': t.keys.admin } })).json()) as { replay_session_id: string | null };
      expect((await get(id)).replay_session_id).toBe(replayId);
      expect((await get(other.id)).replay_session_id).toBeNull();
    });

    it('is idempotent per event id: an SDK retry does not count twice', async () => {
      const url = `${t.url}/ingest/api/${t.projectId}/store/?sentry_key=${t.keys.ingest}`;
      const body = JSON.stringify({ event_id: hex(401), message: 'retried event', level: 'error' });
      await fetch(url, { method: 'POST', body });
      await fetch(url, { method: 'POST', body });
      expect(count(`SELECT COUNT(*) n FROM error_events WHERE event_id = '${hex(401)}'`)).toBe(1);
      expect(count(`SELECT event_count n FROM error_groups WHERE title = 'retried event'`)).toBe(1);
    });
  });

  describe('spike protection', () => {
    it('drops error events above the threshold within a minute, counts them, answers 429 with X-Sentry-Rate-Limits, and admits again next minute', async () => {
      const put = await fetch(`${t.url}/v1/projects/${t.projectId}/spike-protection`, {
        method: 'PUT',
        headers: { 'x-service-key': t.keys.admin, 'content-type': 'application/json' },
        body: JSON.stringify({ enabled: true, threshold_per_minute: 3 }),
      });
      expect(put.status).toBe(200);
      clock = Date.parse('2026-11-22T11:00:10Z');
      const url = `${t.url}/ingest/api/${t.projectId}/store/?sentry_key=${t.keys.ingest}`;
      const statuses: number[] = [];
      let limitHeader: string | null = null;
      for (let i = 0; i < 5; i++) {
        const r = await fetch(url, { method: 'POST', body: JSON.stringify({ event_id: hex(500 + i), message: 'spiky', level: 'error' }) });
        statuses.push(r.status);
        if (r.status === 429) limitHeader = r.headers.get('x-sentry-rate-limits');
      }
      expect(statuses).toEqual([200, 200, 200, 429, 429]);
      expect(limitHeader).toMatch(/^\d+:error:project/);
      expect(Number(limitHeader!.split(':')[0])).toBe(50);
      expect(count(`SELECT SUM(quantity) n FROM ingest_outcomes WHERE reason = 'spike_protection'`)).toBe(2);
      expect(count(`SELECT event_count n FROM error_groups WHERE title = 'spiky'`)).toBe(3);

      clock = Date.parse('2026-11-22T11:01:00Z');
      const next = await fetch(url, { method: 'POST', body: JSON.stringify({ event_id: hex(600), message: 'spiky', level: 'error' }) });
      expect(next.status).toBe(200);
      expect(count(`SELECT event_count n FROM error_groups WHERE title = 'spiky'`)).toBe(4);
      await fetch(`${t.url}/v1/projects/${t.projectId}/spike-protection`, {
        method: 'PUT',
        headers: { 'x-service-key': t.keys.admin, 'content-type': 'application/json' },
        body: JSON.stringify({ enabled: false }),
      });
    });
  });

  describe('ingest quota', () => {
    it('answers OTLP with 429 and Retry-After over the per-project quota, storing nothing of that batch', async () => {
      const q = await startTestServer({ now: () => Date.parse('2026-11-22T12:00:30Z'), clickhouse: false, config: { ingest: { maxBodyBytes: 1 << 20, maxDecompressedBytes: 1 << 22, quotaPerMinute: 2 } } });
      try {
        const send = (n: number) =>
          fetch(`${q.url}/ingest/v1/traces`, {
            method: 'POST',
            headers: { 'x-service-key': q.keys.ingest, 'content-type': 'application/json' },
            body: JSON.stringify(otlpJsonTraces(Array.from({ length: n }, (_, i) => ({ traceId: hex(700 + i), spanId: hex(700 + i, 16), name: `q${n}` })))),
          });
        expect((await send(2)).status).toBe(200);
        const r = await send(1);
        expect(r.status).toBe(429);
        expect(r.headers.get('retry-after')).toBe('30');
        const db = new Database(q.dbFile, { readonly: true });
        expect((db.prepare(`SELECT COUNT(*) n FROM spans s WHERE ${SPAN_NAME_SQL} = 'q1'`).get() as { n: number }).n).toBe(0);
        db.close();
      } finally {
        await q.close();
      }
    });
  });
});
