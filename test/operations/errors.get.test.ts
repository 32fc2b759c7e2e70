/**
 * errors.get over REST: the detail fields, the latest event (trimmed payload), 404s, and replay
 * linkage from replays recorded through the Sentry envelope endpoint.
 */
import { randomUUID } from 'node:crypto';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { startTestServer, type TestServer } from '../helpers/server.js';
import { groupOfEvent, hex, rest, sendEvent } from './errors-fixtures.js';

const T0 = Date.parse('2026-04-02T09:00:00.000Z');
const H = 3_600_000;
let t: TestServer;
let group: string;
let firstEvent: string;
let latestEvent: string;
let bigGroup: string;

/** A replay_event item in an envelope (what the browser SDK sends), posted with the ingest key. */
async function sendReplay(r: { id: string; start: number; end: number; error_ids: string[]; environment?: string; urls?: string[] }) {
  const header = { event_id: r.id, sent_at: new Date(r.end).toISOString() };
  const payload = {
    type: 'replay_event',
    replay_id: r.id,
    timestamp: r.end / 1000,
    replay_start_timestamp: r.start / 1000,
    urls: r.urls ?? ['https://shop.example.com/cart'],
    error_ids: r.error_ids,
    trace_ids: [],
    environment: r.environment ?? 'production',
    release: '1.0.0',
    segment_id: 0,
  };
  const body = `${JSON.stringify(header)}\n${JSON.stringify({ type: 'replay_event' })}\n${JSON.stringify(payload)}\n`;
  const res = await fetch(`${t.url}/ingest/api/${t.projectId}/envelope/?sentry_key=${t.keys.ingest}`, { method: 'POST', body });
  expect(res.status, await res.text()).toBe(200);
}

beforeAll(async () => {
  t = await startTestServer({ now: () => T0 });
  firstEvent = await sendEvent(t, { type: 'TypeError', value: 'Cannot read properties of undefined (reading \'total\')', fn: 'checkout', file: 'src/cart.ts', line: 17, service: 'shop', at: T0 - 3 * H });
  latestEvent = await sendEvent(t, { type: 'TypeError', value: 'Cannot read properties of undefined (reading \'items\')', fn: 'checkout', file: 'src/cart.ts', line: 21, service: 'shop', at: T0 - H, release: '1.4.0' });
  group = groupOfEvent(t, firstEvent);
  expect(groupOfEvent(t, latestEvent)).toBe(group);

  // an event whose payload is far above the response budget
  const big = await fetchStoreRaw({
    event_id: hex(0xb16),
    timestamp: (T0 - H) / 1000,
    level: 'error',
    exception: { values: [{ type: 'HugeError', value: 'huge', stacktrace: { frames: [{ filename: 'src/huge.ts', function: 'huge', lineno: 1, in_app: true }] } }] },
    extra: { blob: 'x'.repeat(200_000) },
    breadcrumbs: { values: Array.from({ length: 500 }, (_, i) => ({ message: `crumb ${i}`, timestamp: (T0 - H) / 1000 })) },
  });
  bigGroup = groupOfEvent(t, big);
});
afterAll(() => t.close());

async function fetchStoreRaw(body: Record<string, unknown>) {
  const r = await fetch(`${t.url}/ingest/api/${t.projectId}/store/?sentry_key=${t.keys.ingest}`, { method: 'POST', body: JSON.stringify(body) });
  expect(r.status).toBe(200);
  return body.event_id as string;
}

describe('errors.get', () => {
  it('returns the list fields plus culprit, grouping method and the latest event', async () => {
    const r = await rest(t, 'GET', `/errors/${group}?include_replay=false&include_payload=true`);
    expect(r.status, JSON.stringify(r.body)).toBe(200);
    expect(r.body).toMatchObject({
      id: group,
      title: "TypeError: Cannot read properties of undefined (reading 'total')",
      type: 'TypeError',
      status: 'unresolved',
      event_count: 2,
      service_name: 'shop',
      culprit: 'checkout (src/cart.ts)',
      grouping_method: 'exception_frames',
      triage: null,
      first_seen: new Date(T0 - 3 * H).toISOString(),
      last_seen: new Date(T0 - H).toISOString(),
    });
    expect(r.body.latest_event).toMatchObject({
      event_id: latestEvent,
      timestamp: new Date(T0 - H).toISOString(),
      received_at: new Date(T0).toISOString(),
      source: 'sentry',
      release: '1.4.0',
      type: 'TypeError',
      payload_truncated: false,
    });
    expect(r.body.latest_event.payload.exception.values[0].value).toBe("Cannot read properties of undefined (reading 'items')");
    expect(r.body).not.toHaveProperty('merged_into');
    expect(r.body).not.toHaveProperty('merged_from');
    expect(r.body).not.toHaveProperty('replays');
  });

  it('stores an SDK event whose strings carry a NUL (U+FFFD in the PostgreSQL group, whose text cannot hold one)', async () => {
    const id = await sendEvent(t, { type: 'Nul\u0000Error', value: 'bad\u0000byte', fn: 'nul\u0000fn', service: 'shop\u0000x', environment: 'env\u0000x', at: T0 - H });
    const nulGroup = groupOfEvent(t, id);
    const nul = t.s.config.databaseUrl ? '\ufffd' : '\u0000';
    const r = await rest(t, 'GET', `/errors/${nulGroup}?include_replay=false&include_payload=true`);
    expect(r.status, JSON.stringify(r.body)).toBe(200);
    expect(r.body).toMatchObject({ title: `Nul${nul}Error: bad${nul}byte`, type: `Nul${nul}Error`, service_name: `shop${nul}x`, event_count: 1 });
    expect(r.body.latest_event).toMatchObject({ event_id: id });
    expect(r.body.latest_event.payload.exception.values[0].value).toBe('bad\u0000byte'); // the event itself keeps every character
  });

  it('trims a huge event payload to at most 64 KiB and says so', async () => {
    const r = await rest(t, 'GET', `/errors/${bigGroup}?include_payload=true`);
    expect(r.status).toBe(200);
    expect(r.body.latest_event.payload_truncated).toBe(true);
    expect(Buffer.byteLength(JSON.stringify(r.body.latest_event.payload))).toBeLessThanOrEqual(64 * 1024);
    // the newest breadcrumbs are the ones kept
    const crumbs = r.body.latest_event.payload.breadcrumbs.values as { message: string }[];
    expect(crumbs.at(-1)!.message).toBe('crumb 499');
  });

  it('answers 404 for a missing group, a non-UUID id, and a group of another project', async () => {
    for (const id of [randomUUID(), 'not-a-uuid']) {
      const r = await rest(t, 'GET', `/errors/${id}`);
      expect(r.status, id).toBe(404);
      expect(r.body).toMatchObject({ code: 'not_found', param: 'error_group_id' });
    }
    const other = await fetch(`${t.url}/v1/projects/${t.otherProject.projectId}/errors/${group}`, { headers: { 'x-service-key': t.otherProject.adminKey } });
    expect(other.status).toBe(404);
  });

  it('links replays that recorded one of the group\'s events, then replays of its environment overlapping the window', async () => {
    const linked = hex(0xa1);
    const overlapping = hex(0xa2);
    const otherEnv = hex(0xa3);
    const outside = hex(0xa4);
    await sendReplay({ id: linked, start: T0 - 70 * 60_000, end: T0 - 55 * 60_000, error_ids: [latestEvent], urls: ['https://shop.example.com/checkout'] });
    await sendReplay({ id: overlapping, start: T0 - 2 * H, end: T0 - 2 * H + 60_000, error_ids: [] });
    await sendReplay({ id: otherEnv, start: T0 - 2 * H, end: T0 - 2 * H + 60_000, error_ids: [], environment: 'staging' });
    await sendReplay({ id: outside, start: T0 - 10 * H, end: T0 - 9 * H, error_ids: [] });

    const r = await rest(t, 'GET', `/errors/${group}`);
    expect(r.status).toBe(200);
    expect(r.body.replays).toEqual([
      {
        replay_id: linked,
        started_at: new Date(T0 - 70 * 60_000).toISOString(),
        ended_at: new Date(T0 - 55 * 60_000).toISOString(),
        segments: 0,
        urls: ['https://shop.example.com/checkout'],
        environment: 'production',
        release: '1.0.0',
        linked_by: 'error',
      },
      expect.objectContaining({ replay_id: overlapping, linked_by: 'window' }),
    ]);

    // an explicit window moves the overlap; the event-linked replay stays
    const wide = await rest(t, 'GET', `/errors/${group}?from=${new Date(T0 - 12 * H).toISOString()}&to=${new Date(T0).toISOString()}`);
    expect(wide.body.replays.map((x: { replay_id: string }) => x.replay_id)).toEqual([linked, overlapping, outside]);

    const off = await rest(t, 'GET', `/errors/${group}?include_replay=false`);
    expect(off.body).not.toHaveProperty('replays');
  });

  it('rejects a bad include_replay value', async () => {
    const r = await rest(t, 'GET', `/errors/${group}?include_replay=maybe`);
    expect(r.status).toBe(400);
    expect(r.body.param).toBe('include_replay');
  });
});
