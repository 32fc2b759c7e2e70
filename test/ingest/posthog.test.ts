/**
 * PostHog-compatible capture over HTTP: every endpoint and body form posthog-js and posthog-node
 * use, /flags, the token and analytics checks, and sessions linked to Sentry replays and errors.
 */
import { gzipSync } from 'node:zlib';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { api, startTestServer, type TestServer } from '../helpers/server.js';

let t: TestServer;
beforeAll(async () => {
  t = await startTestServer({ config: { revenue: { analytics: true, secretKey: null, stripeApiBase: 'http://127.0.0.1:9', maxRangeRows: 1000 } } });
  await api(t, 'POST', `/v1/projects/${t.projectId}/analytics/enable`, { key: t.keys.admin, body: {} });
});
afterAll(() => t.close());

// Through the repository: the events are in SQLite, or in ClickHouse in the ClickHouse test projects (counted there once acknowledged).
const count = async () => (await t.s.services.analytics.stats(t.projectId, 0)).events;
const ev = (n: number, extra: Record<string, unknown> = {}) => ({ event: 'clicked', distinct_id: `d-${n}`, properties: { token: t.keys.ingest, $session_id: `s-${n}`, ...extra }, timestamp: new Date().toISOString() });
const post = (path: string, body: string | Buffer, headers: Record<string, string> = {}) => fetch(`${t.url}/ingest${path}`, { method: 'POST', headers: { 'content-type': 'application/json', ...headers }, body });

describe('capture endpoints', () => {
  it.each(['/e', '/e/', '/i/v0/e', '/i/v0/e/', '/capture', '/capture/', '/batch', '/batch/'])('%s accepts an array, a batch object and a single event', async (path) => {
    const before = await count();
    expect((await post(path, JSON.stringify([ev(1), ev(2)]))).status).toBe(200);
    expect((await post(path, JSON.stringify({ api_key: t.keys.ingest, batch: [ev(3)] }))).status).toBe(200);
    const single = await post(path, JSON.stringify({ ...ev(4), api_key: t.keys.ingest }));
    expect(await single.json()).toMatchObject({ status: 1, accepted: 1 });
    expect(await count()).toBe(before + 4);
  });

  it('decodes gzip (header, compression=gzip-js, magic bytes), base64 and form data=', async () => {
    const before = await count();
    const json = JSON.stringify([ev(5)]);
    expect((await post('/batch/', gzipSync(json), { 'content-encoding': 'gzip' })).status).toBe(200);
    expect((await post('/e/?compression=gzip-js', gzipSync(json), { 'content-type': 'text/plain' })).status).toBe(200);
    expect((await post('/e/', gzipSync(json), { 'content-type': 'text/plain' })).status).toBe(200);
    expect((await post('/e/?compression=base64', Buffer.from(json).toString('base64'), { 'content-type': 'text/plain' })).status).toBe(200);
    const form = `data=${encodeURIComponent(Buffer.from(json).toString('base64'))}`;
    expect((await post('/e/', form, { 'content-type': 'application/x-www-form-urlencoded' })).status).toBe(200);
    expect(await count()).toBe(before + 5);
  });

  it('refuses an undecodable body, a bad token and a project without analytics, storing nothing', async () => {
    const before = await count();
    const bad = await post('/e/', 'not json {');
    expect(bad.status).toBe(400);
    expect(((await bad.json()) as { code: string }).code).toBe('invalid_capture');
    expect((await post('/e/', JSON.stringify({ ...ev(6), api_key: 'phc_unknown' }))).status).toBe(401);
    const other = t.mintKey(['events:ingest'], t.otherProject.projectId);
    const off = await post('/e/', JSON.stringify({ ...ev(7), api_key: other }));
    expect(off.status).toBe(403);
    expect(((await off.json()) as { code: string }).code).toBe('plan_upgrade_required');
    expect(await count()).toBe(before);
  });

  it('answers /flags with no flags in both response shapes', async () => {
    for (const path of ['/flags/?v=2', '/flags', '/decide/?v=3']) {
      const r = await post(path, JSON.stringify({ token: t.keys.ingest, distinct_id: 'x' }));
      expect(r.status).toBe(200);
      expect(await r.json()).toMatchObject({ flags: {}, featureFlags: {}, errorsWhileComputingFlags: false });
    }
  });

  it('answers CORS preflight for browsers', async () => {
    const r = await fetch(`${t.url}/ingest/e/`, { method: 'OPTIONS' });
    expect(r.status).toBe(204);
    expect(r.headers.get('access-control-allow-origin')).toBe('*');
  });
});

describe('sessions', () => {
  it('link a capture session to its Sentry replay and the error events the replay saw', async () => {
    const replayId = 'b'.repeat(32);
    const errorId = 'c'.repeat(32);
    await post('/e/', JSON.stringify([{ ...ev(8), event: '$pageview', properties: { ...ev(8).properties, $session_id: 'sess-r', $sentry_replay_id: replayId, $current_url: 'https://app.example/settings' } }]));
    const envelope = [
      JSON.stringify({ event_id: replayId, sent_at: new Date().toISOString() }),
      JSON.stringify({ type: 'replay_event' }),
      JSON.stringify({ type: 'replay_event', replay_id: replayId, timestamp: Date.now() / 1000, error_ids: [errorId], urls: ['https://app.example/settings'] }),
    ].join('\n');
    const r = await fetch(`${t.url}/ingest/api/${t.projectId}/envelope/?sentry_key=${t.keys.ingest}`, { method: 'POST', body: envelope });
    expect(r.status).toBe(200);
    expect(await t.s.services.analytics.session(t.projectId, 'sess-r')).toMatchObject({ replay_id: replayId, error_event_ids: [errorId], people: ['d:d-8'], identified: false });
    expect(await t.s.services.analytics.session(t.projectId, 'no-such-session')).toBeNull();
  });
});
