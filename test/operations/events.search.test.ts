/**
 * events.search over REST: the field-query syntax on hand-built events sent through the Sentry store
 * endpoint, pagination, the default window, and 400s for malformed queries.
 */
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { startTestServer, type TestServer } from '../helpers/server.js';
import { groupOfEvent, hex, rest, sendEvent } from './errors-fixtures.js';

const T0 = Date.parse('2026-03-10T12:00:00.000Z');
const H = 3_600_000;
const D = 24 * H;
let t: TestServer;
const TRACE = hex(0xbeef);

/** Named events; the expectations below list names. */
const ev: Record<string, string> = {};
let checkoutGroup = '';

beforeAll(async () => {
  t = await startTestServer({ now: () => T0 });
  ev.reset = await sendEvent(t, {
    type: 'ConnectionError', value: 'connection reset by peer', fn: 'send', service: 'checkout', environment: 'production',
    release: '1.2.3', transaction: 'GET /api/orders', server: 'web-1', trace_id: TRACE, tags: { 'http.status_code': '502', region: 'eu-west-1' }, at: T0 - 1 * H,
  });
  ev.timeout = await sendEvent(t, {
    type: 'TimeoutError', value: 'request timed out after 30s', fn: 'fetch', service: 'checkout', environment: 'staging',
    release: '1.2.4', transaction: 'POST /api/pay', server: 'web-2', tags: { 'http.status_code': '504', region: 'us-east-1' }, at: T0 - 2 * H,
  });
  ev.fatal = await sendEvent(t, {
    type: 'OutOfMemory', value: 'heap exhausted', fn: 'alloc', level: 'fatal', service: 'worker', environment: 'production',
    release: '2.0.0', tags: { 'http.status_code': '200' }, at: Date.parse('2026-03-09T08:00:00Z'), platform: 'python',
  });
  ev.warning = await sendEvent(t, { message: 'Connection pool nearly full', level: 'warning', service: 'api', environment: 'production', at: T0 - 3 * H });
  ev.reset2 = await sendEvent(t, {
    type: 'ConnectionError', value: 'connection reset while reading', fn: 'send', service: 'checkout', environment: 'production',
    release: '1.2.3', tags: { 'http.status_code': '500', region: 'eu-central-1' }, at: T0 - 4 * H,
  });
  ev.ancient = await sendEvent(t, { type: 'AncientError', value: 'from long ago', fn: 'old', service: 'legacy', at: T0 - 45 * D });
  checkoutGroup = groupOfEvent(t, ev.reset);
  // a look-alike event in the other project must never appear
  await sendEvent(t, { type: 'ConnectionError', value: 'connection reset by peer', fn: 'send', service: 'checkout', at: T0 - H }, t.otherProject.projectId, t.mintKey(['events:ingest'], t.otherProject.projectId));
});
afterAll(() => t.close());

const name = (id: string) => Object.entries(ev).find(([, v]) => v === id)?.[0] ?? id;
async function search(query: string, extra = '') {
  const r = await rest(t, 'GET', `/events/search?query=${encodeURIComponent(query)}${extra}`);
  expect(r.status, `${query}: ${JSON.stringify(r.body)}`).toBe(200);
  return r.body as { data: { event_id: string }[]; total: number; limit: number; offset: number };
}
const names = async (query: string, extra = '') => (await search(query, extra)).data.map((e) => name(e.event_id));

describe('events.search', () => {
  it('returns events of the last 30 days newest first for an empty query, with the row fields', async () => {
    const body = await search('');
    expect(body.data.map((e) => name(e.event_id))).toEqual(['reset', 'timeout', 'warning', 'reset2', 'fatal']);
    expect(body).toMatchObject({ total: 5, total_capped: false, limit: 50, offset: 0 });
    expect(body.data[0]).toEqual({
      event_id: ev.reset,
      group_id: checkoutGroup,
      timestamp: new Date(T0 - H).toISOString(),
      received_at: new Date(T0).toISOString(),
      level: 'error',
      type: 'ConnectionError',
      title: 'ConnectionError: connection reset by peer',
      message: '',
      service_name: 'checkout',
      environment: 'production',
      release: '1.2.3',
      trace_id: TRACE,
      source: 'sentry',
      user: null,
    });
  });

  it('matches free words and quoted phrases as substrings of message, title or type', async () => {
    expect(await names('connection')).toEqual(['reset', 'warning', 'reset2']);
    expect(await names('"connection reset"')).toEqual(['reset', 'reset2']);
    expect(await names('connection peer')).toEqual(['reset']);
    expect(await names('outofmemory')).toEqual(['fatal']);
    expect(await names('-connection')).toEqual(['timeout', 'fatal']);
    expect(await names('-"connection reset"')).toEqual(['timeout', 'warning', 'fatal']);
  });

  it('filters on exact fields, case-insensitively, with lists and wildcards', async () => {
    expect(await names('level:fatal')).toEqual(['fatal']);
    expect(await names('level:FATAL')).toEqual(['fatal']);
    expect(await names('level:[fatal,warning]')).toEqual(['warning', 'fatal']);
    expect(await names('service:checkout')).toEqual(['reset', 'timeout', 'reset2']);
    expect(await names('service:checkout -environment:staging')).toEqual(['reset', 'reset2']);
    expect(await names('type:TimeoutError')).toEqual(['timeout']);
    expect(await names('release:1.2.*')).toEqual(['reset', 'timeout', 'reset2']);
    expect(await names('transaction:"GET /api/orders"')).toEqual(['reset']);
    expect(await names('server:web-2')).toEqual(['timeout']);
    expect(await names(`trace:${TRACE}`)).toEqual(['reset']);
    expect(await names(`group:${checkoutGroup}`)).toEqual(['reset', 'reset2']);
    expect(await names(`event_id:${ev.timeout}`)).toEqual(['timeout']);
    expect(await names('platform:python')).toEqual(['fatal']);
    expect(await names('source:sentry')).toHaveLength(5);
    expect(await names('source:otlp')).toEqual([]);
  });

  it('matches message and title fields as substrings', async () => {
    expect(await names('message:"nearly full"')).toEqual(['warning']);
    expect(await names('title:"timed out"')).toEqual(['timeout']);
    expect(await names('title:reset -title:peer')).toEqual(['reset2']);
  });

  it('compares times with >, <, >=, <= and takes a date as a whole UTC day', async () => {
    expect(await names('timestamp:>2026-03-10T09:30:00Z')).toEqual(['reset', 'timeout']);
    expect(await names('timestamp:>=2026-03-10T10:00:00Z')).toEqual(['reset', 'timeout']);
    expect(await names('timestamp:<2026-03-10T10:00:00Z')).toEqual(['warning', 'reset2', 'fatal', 'ancient']);
    expect(await names('timestamp:<=2026-03-10T10:00:00Z service:checkout')).toEqual(['timeout', 'reset2']);
    expect(await names('timestamp:2026-03-09')).toEqual(['fatal']);
    expect(await names('timestamp:-150m')).toEqual(['reset', 'timeout']);
    // a timestamp term lifts the default 30-day window
    expect(await names('timestamp:<2026-02-01')).toEqual(['ancient']);
  });

  it('matches tags by value, wildcard and numeric comparison', async () => {
    expect(await names('tags.region:eu-*')).toEqual(['reset', 'reset2']);
    expect(await names('tags.region:US-EAST-1')).toEqual(['timeout']);
    expect(await names('tags.http.status_code:>=500')).toEqual(['reset', 'timeout', 'reset2']);
    expect(await names('tags.http.status_code:>500 tags.http.status_code:<504')).toEqual(['reset']);
    expect(await names('-tags.region:eu-*')).toEqual(['timeout', 'warning', 'fatal']);
  });

  it('takes q as an alias of query, and from/to bound event time', async () => {
    const r = await rest(t, 'GET', `/events/search?q=${encodeURIComponent('level:warning')}`);
    expect(r.body.data.map((e: { event_id: string }) => name(e.event_id))).toEqual(['warning']);
    const from = new Date(T0 - 50 * D).toISOString();
    const to = new Date(T0 - 40 * D).toISOString();
    expect(await names('', `&from=${from}&to=${to}`)).toEqual(['ancient']);
  });

  it('pages with limit and offset', async () => {
    const p = await search('', '&limit=2&offset=2');
    expect(p.data.map((e) => name(e.event_id))).toEqual(['warning', 'reset2']);
    expect(p).toMatchObject({ total: 5, limit: 2, offset: 2 });
    expect((await rest(t, 'GET', '/events/search?limit=101')).status).toBe(400);
  });

  it('treats quotes, wildcards and SQL in values as data', async () => {
    expect(await names(`message:"'; DROP TABLE error_events; --"`)).toEqual([]);
    expect(await names('type:%')).toEqual([]);
    expect(await names('"50%"')).toEqual([]);
    expect(await names('')).toHaveLength(5);
  });

  it('answers 400 with param query and a helpful message for a malformed query', async () => {
    for (const [query, hint] of [
      ['message:"unterminated', /Unterminated quote/],
      ['colour:red', /Unknown field `colour`.*Known fields: level/],
      ['level:>3', /does not support `>`/],
      ['timestamp:>yesterday', /needs a time/],
      ['tags.http.status_code:>high', /compares numbers/],
      ['level:', /has no value/],
      ['level:[error,', /Unterminated list/],
      ['- level:error', /negates nothing/],
    ] as const) {
      const r = await rest(t, 'GET', `/events/search?query=${encodeURIComponent(query)}`);
      expect(r.status, query).toBe(400);
      expect(r.body, query).toMatchObject({ code: 'invalid_query', param: 'query' });
      expect(r.body.message, query).toMatch(hint);
    }
    const viaQ = await rest(t, 'GET', `/events/search?q=${encodeURIComponent('nope:1')}`);
    expect(viaQ.status).toBe(400);
    expect(viaQ.body.param).toBe('q');
  });
});
