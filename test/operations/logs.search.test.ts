import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { startTestServer, type TestServer } from '../helpers/server.js';
import { DAY, HOUR, MIN, SEV, iso, ok, read, sendLogs, type LogSpec } from './telemetry-fixtures.js';

/** A fixed clock: default windows end here. */
const NOW = Date.parse('2026-03-02T12:00:00.000Z');

describe('logs.search', () => {
  let t: TestServer;
  beforeAll(async () => {
    t = await startTestServer({ now: () => NOW });
    await sendLogs(t, [
      {
        resource: { service: 'checkout', environment: 'production', release: '2.3.1' },
        logs: [
          { at: NOW - 1 * MIN, body: 'POST /api/checkout 502 upstream timeout after 3000ms', severity: SEV.error, severityText: 'ERROR', attributes: { 'http.route': '/api/checkout', 'http.request.method': 'POST' }, traceId: '0af7651916cd43dd8448eb211c80319c', spanId: 'b7ad6b7169203331' },
          { at: NOW - 2 * MIN, body: 'payment declined for order 42', severity: SEV.warn, attributes: { 'customer.tier': 'gold' } },
          { at: NOW - 3 * MIN, body: 'connection reset by peer', severity: SEV.fatal },
          { at: NOW - 4 * MIN, body: 'reset the connection pool', severity: SEV.info },
          { at: NOW - 5 * MIN, body: 'timeout while reading (attempt 2)', severity: SEV.debug, attributes: { 'log.source': 'syslog' } },
        ],
      },
      {
        resource: { service: 'search', environment: 'staging', release: '0.8.0' },
        logs: [
          { at: NOW - 90 * MIN, body: 'search query returned 12 results for user alice', severity: SEV.info, attributes: { 'user.name': 'alice' } },
          { at: NOW - 25 * HOUR, body: 'old timeout outside the default window', severity: SEV.error },
          { at: NOW + 30 * MIN, body: 'timeout reported by a clock running ahead', severity: SEV.error },
        ],
      },
    ]);
  });
  afterAll(() => t?.close());

  it('returns the window newest first with each row mapped, plus the effective from and to', async () => {
    const b = await ok(t, '/logs');
    expect(b.from).toBe(iso(NOW - DAY));
    expect(b.to).toBe(iso(NOW));
    expect(b.data.map((r: { body: string }) => r.body)).toEqual([
      'POST /api/checkout 502 upstream timeout after 3000ms',
      'payment declined for order 42',
      'connection reset by peer',
      'reset the connection pool',
      'timeout while reading (attempt 2)',
      'search query returned 12 results for user alice',
    ]);
    expect(b.data[0]).toEqual({
      id: expect.any(String),
      timestamp: iso(NOW - MIN),
      observed_timestamp: iso(NOW - MIN + 1),
      level: 'error',
      severity_number: 17,
      severity_text: 'ERROR',
      body: 'POST /api/checkout 502 upstream timeout after 3000ms',
      attributes: { 'http.route': '/api/checkout', 'http.request.method': 'POST' },
      resource: { 'service.name': 'checkout', 'deployment.environment.name': 'production', 'service.version': '2.3.1' },
      trace_id: '0af7651916cd43dd8448eb211c80319c',
      span_id: 'b7ad6b7169203331',
      service: 'checkout',
      environment: 'production',
      release: '2.3.1',
      source: 'otlp',
      connector_key: null,
      scope: 'test-logger',
    });
    expect(b).toMatchObject({ total: 6, has_more: false, limit: 100, offset: 0 });
  });

  it('defaults from to 24 hours before an explicit to', async () => {
    const to = NOW - 24 * HOUR;
    const b = await ok(t, '/logs', { to: iso(to) });
    expect(b.from).toBe(iso(to - DAY));
    expect(b.data.map((r: { body: string }) => r.body)).toEqual(['old timeout outside the default window']);
    const ahead = await ok(t, '/logs', { q: 'clock', to: iso(NOW + HOUR) });
    expect(ahead.data).toHaveLength(1);
  });

  it('matches every word of q against bodies and attribute values through the full-text index', async () => {
    const words = await ok(t, '/logs', { q: 'timeout' });
    expect(words.data.map((r: { body: string }) => r.body)).toEqual(['POST /api/checkout 502 upstream timeout after 3000ms', 'timeout while reading (attempt 2)']);
    expect(words.total).toBe(2);
    const both = await ok(t, '/logs', { q: 'timeout upstream' });
    expect(both.data).toHaveLength(1);
    const attr = await ok(t, '/logs', { q: 'gold' });
    expect(attr.data.map((r: { body: string }) => r.body)).toEqual(['payment declined for order 42']);
    const caseless = await ok(t, '/logs', { q: 'ALICE' });
    expect(caseless.data).toHaveLength(1);
  });

  it('treats quoted text as a phrase and a trailing star as a prefix', async () => {
    const phrase = await ok(t, '/logs', { q: '"connection reset"' });
    expect(phrase.data.map((r: { body: string }) => r.body)).toEqual(['connection reset by peer']);
    const loose = await ok(t, '/logs', { q: 'connection reset' });
    expect(loose.data).toHaveLength(2);
    const prefix = await ok(t, '/logs', { q: 'declin*' });
    expect(prefix.data.map((r: { body: string }) => r.body)).toEqual(['payment declined for order 42']);
    const punctuated = await ok(t, '/logs', { q: '/api/checkout' });
    expect(punctuated.data).toHaveLength(1);
  });

  it('never fails on full-text operators or stray syntax in q (OR is the query syntax OR, body:… an attribute)', async () => {
    for (const q of ['timeout OR declined', 'NOT timeout', 'body:timeout', '(timeout', 'timeout"', 'NEAR(timeout reading)', '^timeout', 'time-out*']) {
      const r = await read(t, '/logs', { q });
      expect(r.status, q).toBe(200);
    }
    expect((await ok(t, '/logs', { q: 'timeout OR declined' })).data).toHaveLength(3);
    expect((await ok(t, '/logs', { q: 'body:timeout' })).data).toHaveLength(0);
  });

  it('rejects a q without any word with 400', async () => {
    const r = await read(t, '/logs', { q: '"" *** ()' });
    expect(r.status).toBe(400);
    expect(r.body).toMatchObject({ code: 'invalid_parameter', param: 'q' });
  });

  it('filters by comma-separated levels, accepting warning, err and critical', async () => {
    const b = await ok(t, '/logs', { level: 'warning,critical' });
    expect(b.data.map((r: { level: string }) => r.level)).toEqual(['warn', 'fatal']);
    const e = await ok(t, '/logs', { level: 'err' });
    expect(e.data.map((r: { level: string }) => r.level)).toEqual(['error']);
    const bad = await read(t, '/logs', { level: 'error,loud' });
    expect(bad.status).toBe(400);
    expect(bad.body).toMatchObject({ code: 'invalid_parameter', param: 'level' });
    expect(bad.body.message).toContain('loud');
  });

  it('filters by service, environment, release and source, alone and with q', async () => {
    expect((await ok(t, '/logs', { service: 'search' })).data).toHaveLength(1);
    expect((await ok(t, '/logs', { environment: 'production' })).data).toHaveLength(5);
    expect((await ok(t, '/logs', { release: '0.8.0' })).data).toHaveLength(1);
    const syslog = await ok(t, '/logs', { source: 'syslog' });
    expect(syslog.data.map((r: { source: string }) => r.source)).toEqual(['syslog']);
    expect((await ok(t, '/logs', { q: 'timeout', source: 'otlp' })).data).toHaveLength(1);
    expect((await ok(t, '/logs', { q: 'timeout', service: 'search' })).data).toHaveLength(0);
  });

  it('filters by connector_key', async () => {
    const now = NOW - 10 * MIN;
    // Through a write batch, as ingest writes (acknowledged once stored, ClickHouse included).
    await t.s.services.writeBatch(() =>
      t.s.services.telemetry.insertLogs(
        t.projectId,
        [
          {
            resource: { 'service.name': 'vercel-app' },
            scope: { name: '', version: '', attributes: {} },
            service_name: 'vercel-app',
            time_ms: now,
            observed_time_ms: now,
            severity_number: SEV.info,
            severity_text: '',
            body: 'edge function cold start',
            attributes: {},
            trace_id: null,
            span_id: null,
            flags: 0,
            event_name: '',
          },
        ],
        'drain',
        now,
        'vercel-prod',
      ),
    );
    const b = await ok(t, '/logs', { connector_key: 'vercel-prod' });
    expect(b.data.map((r: { body: string; connector_key: string }) => [r.body, r.connector_key])).toEqual([['edge function cold start', 'vercel-prod']]);
    expect((await ok(t, '/logs', { connector_key: 'other' })).data).toHaveLength(0);
  });

  it('pages with limit and offset and says whether more rows exist', async () => {
    const first = await ok(t, '/logs', { service: 'checkout', limit: 2 });
    expect(first.data).toHaveLength(2);
    expect(first).toMatchObject({ has_more: true, total: 5, limit: 2, offset: 0 });
    const last = await ok(t, '/logs', { service: 'checkout', limit: 2, offset: 4 });
    expect(last.data.map((r: { body: string }) => r.body)).toEqual(['timeout while reading (attempt 2)']);
    expect(last.has_more).toBe(false);
    const bad = await read(t, '/logs', { limit: 1001 });
    expect(bad.status).toBe(400);
    expect(bad.body.param).toBe('limit');
  });

  it('answers 400 before any query for a reversed, timezone-less or unparseable window', async () => {
    const reversed = await read(t, '/logs', { from: iso(NOW), to: iso(NOW - HOUR) });
    expect(reversed.status).toBe(400);
    expect(reversed.body).toMatchObject({ code: 'invalid_parameter', param: 'from' });
    const naive = await read(t, '/logs', { to: '2026-03-02T12:00:00' });
    expect(naive.status).toBe(400);
    expect(naive.body.param).toBe('to');
    const junk = await read(t, '/logs', { from: 'yesterday' });
    expect(junk.status).toBe(400);
    expect(junk.body.param).toBe('from');
  });

  it('never shows another project\'s logs', async () => {
    const otherIngest = t.mintKey(['events:ingest'], t.otherProject.projectId);
    await sendLogs(t, [{ resource: { service: 'intruder' }, logs: [{ at: NOW - MIN, body: 'secret timeout in the other project' }] }], otherIngest);
    const mine = await ok(t, '/logs', { q: 'secret' });
    expect(mine.data).toHaveLength(0);
    const theirs = await read(t, '/logs', { q: 'secret' }, t.otherProject.adminKey);
    expect(theirs.status).toBe(404); // the path names this project, which the other key cannot see
  });
});

describe('logs.search over many full-text matches', () => {
  let t: TestServer;
  const N = 6000; // above the direct-fetch threshold, so the time-sliced path runs
  const expected: { at: number; body: string }[] = [];
  beforeAll(async () => {
    t = await startTestServer({ now: () => NOW });
    // Arrival order differs from time order: each batch interleaves old and new records.
    const batches: LogSpec[][] = [[], [], []];
    for (let i = 0; i < N; i++) {
      const at = NOW - 1000 - ((i * 7919) % N) * 10_000; // a permutation spread over ~17 hours
      const body = `retry ${i} hit timeout`;
      expected.push({ at, body });
      batches[i % 3]!.push({ at, body, severity: i % 10 === 0 ? SEV.error : SEV.info });
    }
    for (const logs of batches) await sendLogs(t, [{ resource: { service: 'worker' }, logs }]);
    await sendLogs(t, [{ resource: { service: 'worker' }, logs: [{ at: NOW - 500, body: 'unrelated line' }] }]);
    expected.sort((a, b) => b.at - a.at);
  });
  afterAll(() => t?.close());

  it('returns exactly the newest matches in time order, page after page', async () => {
    const seen: string[] = [];
    for (const offset of [0, 1000, 2500, 5950]) {
      const b = await ok(t, '/logs', { q: 'timeout', limit: 100, offset });
      expect(b.data.map((r: { body: string }) => r.body)).toEqual(expected.slice(offset, offset + 100).map((e) => e.body));
      expect(b.has_more).toBe(offset + 100 < N);
      seen.push(...b.data.map((r: { body: string }) => r.body));
    }
    expect(new Set(seen).size).toBe(seen.length);
  });

  it('combines many matches with a level filter and a narrower window', async () => {
    const from = NOW - 5 * HOUR;
    const want = expected.filter((e) => e.at >= from && Number(e.body.split(' ')[1]) % 10 === 0);
    const b = await ok(t, '/logs', { q: 'retry timeout', level: 'error', from: iso(from), to: iso(NOW), limit: 1000 });
    expect(b.data.map((r: { body: string }) => r.body)).toEqual(want.map((e) => e.body));
    expect(b.has_more).toBe(false);
  });
});
