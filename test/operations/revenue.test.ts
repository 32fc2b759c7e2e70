/**
 * Revenue and product analytics end to end over HTTP: the analytics gate and scopes, the real
 * posthog-node client capturing pageviews with UTMs, identify and alias, the ledger, and overview,
 * MRR, attribution and impact values computed by hand here.
 */
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { PostHog } from 'posthog-node';
import { api, startTestServer, type TestServer } from '../helpers/server.js';
import { FX_TABLE } from '../../src/domain/revenue/fx.js';
import type { Principal } from '../../src/core/principal.js';

const DAY = 86_400_000;
const NOW = Date.now();
const D = Math.floor(NOW / DAY) * DAY - 10 * DAY;
const iso = (ms: number) => new Date(ms).toISOString();
const USD_PER_EUR = FX_TABLE.rates.USD!;
const round2 = (v: number) => Math.round(v * 100) / 100;
const share = (part: number, total: number) => Math.round((part / total) * 10000) / 100;

let t: TestServer;
let P: string;
let reader: string;
let writer: string;

beforeAll(async () => {
  t = await startTestServer({ config: { revenue: { analytics: true, secretKey: 'test-server-key', stripeApiBase: 'http://127.0.0.1:9', maxRangeRows: 1000 } } });
  P = `/v1/projects/${t.projectId}`;
  reader = t.mintKey(['revenue:read']);
  writer = t.mintKey(['revenue:write']);
});
afterAll(() => t.close());

const get = (path: string, q: Record<string, string | number> = {}, key = reader) =>
  api(t, 'GET', `${P}${path}?${new URLSearchParams(Object.entries(q).map(([k, v]): [string, string] => [k, String(v)]))}`, { key });
const range = { from: iso(D), to: iso(D + 7 * DAY) };

describe('the product-analytics gate', () => {
  it('answers 403 plan_upgrade_required until an owner or admin enables analytics, then answers', async () => {
    expect((await get('/revenue/overview')).body).toMatchObject({ code: 'plan_upgrade_required' });
    expect((await api(t, 'GET', `${P}/analytics/status`, { key: t.keys.admin })).body).toMatchObject({ state: 'disabled', enabled: false });
    const noRole = await api(t, 'POST', `${P}/analytics/enable`, { key: t.mintKey(['revenue:write']), body: {} });
    expect(noRole.status).toBe(403);
    expect(noRole.body.code).toBe('insufficient_scope');
    const ok = await api(t, 'POST', `${P}/analytics/enable`, { key: t.keys.admin, body: {} });
    expect(ok.status).toBe(200);
    expect(ok.body).toMatchObject({ state: 'enabled', enabled: true });
    expect((await get('/revenue/overview')).status).toBe(200);
  });

  it('answers 403 coming_soon when the server runs with analytics off', async () => {
    t.s.config.revenue.analytics = false;
    try {
      expect((await get('/revenue/overview')).body).toMatchObject({ code: 'coming_soon' });
      expect((await api(t, 'GET', `${P}/analytics/status`, { key: t.keys.admin })).body.state).toBe('coming_soon');
    } finally {
      t.s.config.revenue.analytics = true;
    }
  });

  it('needs revenue scopes: read and write do not cover them, and OAuth members are refused while admins pass', async () => {
    const rw = t.mintKey(['read', 'write']);
    expect((await get('/revenue/overview', {}, rw)).body.code).toBe('insufficient_scope');
    expect((await api(t, 'POST', `${P}/revenue/events`, { key: reader, body: { events: [] } })).body.code).toBe('insufficient_scope');
    const user = (role: 'member' | 'admin'): Principal => ({ kind: 'user', userId: 'u1', email: 'u@test.local', scopes: ['*'], roles: { [t.organizationId]: role }, tokenId: null, clientId: null });
    await expect(t.s.core.invoke('revenue.overview', { project_id: t.projectId }, user('member'))).rejects.toMatchObject({ status: 403, code: 'insufficient_scope' });
    expect((await t.s.core.invoke('revenue.overview', { project_id: t.projectId }, user('admin'))).status).toBe(200);
  });
});

describe('PostHog capture with the real posthog-node client', () => {
  it('records pageviews with UTMs and referrers, identify and alias merges, and sessions', async () => {
    const ph = new PostHog(t.keys.ingest, { host: `${t.url}/ingest`, flushAt: 100, flushInterval: 0 });
    const pv = (distinctId: string, at: number, url: string, session: string, extra: Record<string, unknown> = {}) =>
      ph.capture({ distinctId, event: '$pageview', timestamp: new Date(at), properties: { $current_url: url, $session_id: session, ...extra } });
    pv('anon-a', D + 1 * DAY, 'https://shop.example/pricing?utm_source=google&utm_medium=cpc&utm_campaign=spring', 'sess-a');
    ph.identify({ distinctId: 'user-a', properties: { $anon_distinct_id: 'anon-a', email: 'a@example.com' } });
    pv('anon-b', D + 1 * DAY, 'https://shop.example/', 'sess-b', { $referrer: 'https://news.ycombinator.com/item?id=1' });
    ph.alias({ distinctId: 'user-b', alias: 'anon-b' });
    ph.identify({ distinctId: 'user-c' });
    pv('user-c', D + 1 * DAY, 'https://shop.example/checkout', 'sess-c');
    pv('anon-d', D + 1 * DAY, 'https://shop.example/checkout', 'sess-d');
    pv('anon-d', D + 1 * DAY, 'https://shop.example/blog', 'sess-d2');
    pv('user-a', D + 2 * DAY, 'https://shop.example/checkout', 'sess-a2');
    ph.identify({ distinctId: 'user-z', properties: { $anon_distinct_id: 'user-a' } });
    pv('user-z', D + 2 * DAY, 'https://shop.example/careers', 'sess-z');
    await ph.shutdown();

    const a = t.s.services.analytics;
    expect(a.person(t.projectId, 'user-a')).toMatchObject({ identified: true, distinct_ids: ['anon-a', 'user-a'] });
    expect(a.person(t.projectId, 'anon-b')).toMatchObject({ identified: true, distinct_ids: ['anon-b', 'user-b'] });
    // user-a was already identified: identify(user-z, $anon_distinct_id: user-a) does not fold it in.
    expect(a.person(t.projectId, 'user-z')).toMatchObject({ identified: true, distinct_ids: ['user-z'] });
    expect(a.person(t.projectId, 'anon-d')).toBeNull();
    const status = await api(t, 'GET', `${P}/analytics/status`, { key: t.keys.admin });
    expect(status.body).toMatchObject({ events_30d: 11, persons: 4, identified_persons: 4 });
  });
});

describe('the ledger', () => {
  const ev = (id: string, type: string, amount: number, currency: string, at: number, extra: Record<string, unknown> = {}) => ({ id, type, amount, currency, occurred_at: iso(at), ...extra });
  const send = (events: unknown[]) => api(t, 'POST', `${P}/revenue/events`, { key: writer, body: { events } });

  it('writes events with 202, replaces a re-sent id, writes nothing for an identical re-send', async () => {
    const first = await send([
      ev('pay-a1', 'payment', 11000, 'USD', D + 2 * DAY, { distinct_id: 'user-a', plan: 'pro' }),
      ev('ref-a1', 'refund', 2000, 'USD', D + 3 * DAY, { distinct_id: 'user-a', parent_id: 'pay-a1' }),
      ev('pay-b1', 'payment', 5000, 'eur', D + 2 * DAY, { anonymous_id: 'anon-b', plan: 'team' }),
      ev('pay-c1', 'payment', 3000, 'USD', D + 4 * DAY, { distinct_id: 'user-c', plan: 'pro' }),
      ev('pay-u1', 'payment', 4000, 'USD', D + 4 * DAY, { customer_id: 'cus_u' }),
      ev('dis-c1', 'dispute', 3000, 'USD', D + 5 * DAY, { distinct_id: 'user-c', parent_id: 'pay-c1' }),
      ev('rev-c1', 'dispute_reversal', 3000, 'USD', D + 6 * DAY, { distinct_id: 'user-c', parent_id: 'dis-c1' }),
      ev('pay-x', 'payment', 1000, 'XYZ', D + 4 * DAY, { customer_id: 'cus_x' }),
      ev('pay-void', 'payment', 99999, 'USD', D + 4 * DAY, { customer_id: 'cus_v', status: 'voided' }),
      ev('pay-prev', 'payment', 2500, 'USD', D - 3 * DAY, { customer_id: 'cus_p' }),
    ]);
    expect(first.status).toBe(202);
    expect(first.body).toEqual({ accepted: 10, written: 10 });
    const replaced = await send([ev('pay-a1', 'payment', 10000, 'USD', D + 2 * DAY, { distinct_id: 'user-a', plan: 'pro' })]);
    expect(replaced.body).toEqual({ accepted: 1, written: 1 });
    const same = await send([ev('pay-a1', 'payment', 10000, 'USD', D + 2 * DAY, { distinct_id: 'user-a', plan: 'pro' })]);
    expect(same.body).toEqual({ accepted: 1, written: 0 });
  });

  it('refuses more than 100 items, occurred_at over a day ahead and unknown fields, writing nothing', async () => {
    const before = (await get('/revenue/events', { limit: 100 })).body.data.length;
    const many = await send(Array.from({ length: 101 }, (_, i) => ev(`m${i}`, 'payment', 1, 'USD', D)));
    expect(many.status).toBe(400);
    const ahead = await send([ev('ok-1', 'payment', 100, 'USD', D), ev('late', 'payment', 100, 'USD', Date.now() + 2 * DAY)]);
    expect(ahead.status).toBe(400);
    expect(ahead.body.param).toBe('events.1.occurred_at');
    const unknown = await send([{ ...ev('u', 'payment', 1, 'USD', D), amount_usd: 1 }]);
    expect(unknown.status).toBe(400);
    expect(unknown.body.code).toBe('unknown_field');
    expect((await get('/revenue/events', { limit: 100 })).body.data.length).toBe(before);
  });

  it('lists rows newest first with a cursor and a kind filter, amounts signed', async () => {
    const all: { id: string; occurred_at: string }[] = [];
    let cursor: string | null = null;
    do {
      const page: { body: { data: { id: string; occurred_at: string }[]; next_cursor: string | null } } = await get('/revenue/events', { limit: 3, ...(cursor ? { cursor } : {}) });
      all.push(...page.body.data);
      cursor = page.body.next_cursor;
    } while (cursor);
    expect(all).toHaveLength(10);
    expect(all.map((r) => r.occurred_at)).toEqual([...all.map((r) => r.occurred_at)].sort().reverse());
    const refunds = await get('/revenue/events', { kind: 'refund' });
    expect(refunds.body.data).toEqual([expect.objectContaining({ id: 'ref-a1', amount: -2000, type: 'refund', source: 'api' })]);
  });
});

describe('revenue reads', () => {
  it('overview: totals, customers, breakdowns, previous period and missing currencies match hand computation', async () => {
    const res = await get('/revenue/overview', range);
    expect(res.status).toBe(200);
    const eurInUsd = 50 * USD_PER_EUR;
    const gross = round2(100 + eurInUsd + 30 + 40);
    expect(res.body).toMatchObject({
      currency: 'USD',
      gross,
      refunds: -20,
      disputes: -30,
      dispute_reversals: 30,
      net: round2(gross - 20 - 30 + 30),
      payments: 5,
      customers: 5,
      interval: 'day',
      fx: { date: FX_TABLE.date, missing_currencies: ['XYZ'] },
      previous: { gross: 25, net: 25, payments: 1, customers: 1 },
      cached: false,
    });
    expect(res.body.by_currency).toEqual([
      { currency: 'EUR', gross: 50, refunds: 0, disputes: 0, dispute_reversals: 0, net: 50, net_converted: round2(eurInUsd) },
      { currency: 'USD', gross: 170, refunds: -20, disputes: -30, dispute_reversals: 30, net: 150, net_converted: 150 },
      { currency: 'XYZ', gross: 10, refunds: 0, disputes: 0, dispute_reversals: 0, net: 10, net_converted: null },
    ]);
    expect(res.body.by_plan).toEqual([
      { plan: 'pro', gross: 130, net: 130, payments: 2 },
      { plan: 'team', gross: round2(eurInUsd), net: round2(eurInUsd), payments: 1 },
      { plan: null, gross: 40, net: 20, payments: 1 },
    ]);
    expect(res.body.series).toHaveLength(7);
    expect(res.body.series[2]).toMatchObject({ start: iso(D + 2 * DAY), gross: round2(100 + eurInUsd) });
  });

  it('keeps a result up to 5 minutes and starts a fresh one after new revenue', async () => {
    expect((await get('/revenue/overview', range)).body.cached).toBe(true);
    await api(t, 'POST', `${P}/revenue/events`, { key: writer, body: { events: [{ id: 'pay-late', type: 'payment', amount: 500, currency: 'USD', occurred_at: iso(D + 6 * DAY), customer_id: 'cus_l' }] } });
    const fresh = await get('/revenue/overview', range);
    expect(fresh.body).toMatchObject({ cached: false, payments: 6, customers: 6 });
    await api(t, 'POST', `${P}/revenue/events`, { key: writer, body: { events: [{ id: 'pay-late', type: 'payment', amount: 500, currency: 'USD', occurred_at: iso(D + 6 * DAY), customer_id: 'cus_l', status: 'voided' }] } });
    expect((await get('/revenue/overview', range)).body).toMatchObject({ cached: false, payments: 5 });
  });

  it('refuses a range above 400 days (400) and a range with too many rows (422 RANGE_TOO_LARGE)', async () => {
    expect((await get('/revenue/overview', { from: iso(D - 401 * DAY), to: iso(D) })).status).toBe(400);
    t.s.config.revenue.maxRangeRows = 3;
    try {
      const r = await get('/revenue/overview', { from: iso(D), to: iso(D + 6 * DAY) });
      expect(r.status).toBe(422);
      expect(r.body.code).toBe('RANGE_TOO_LARGE');
    } finally {
      t.s.config.revenue.maxRangeRows = 1000;
    }
  });

  it('mrr: start, end and movements match hand computation', async () => {
    const subs = [
      { id: 'sub-1', status: 'active', mrr: 2000, currency: 'USD', effective_at: iso(D - 10 * DAY) },
      { id: 'sub-1', status: 'active', mrr: 4000, currency: 'USD', effective_at: iso(D + 2 * DAY) },
      { id: 'sub-2', status: 'active', mrr: 5000, currency: 'EUR', effective_at: iso(D - 10 * DAY) },
      { id: 'sub-2', status: 'canceled', mrr: 0, currency: 'EUR', effective_at: iso(D + 3 * DAY) },
      { id: 'sub-3', status: 'active', mrr: 1000, currency: 'USD', effective_at: iso(D + 1 * DAY) },
    ];
    const sent = await api(t, 'POST', `${P}/revenue/subscriptions`, { key: writer, body: { subscriptions: subs } });
    expect(sent.status).toBe(202);
    expect(sent.body).toEqual({ accepted: 5, written: 5 });
    const res = await get('/revenue/mrr', range);
    const eur = round2(50 * USD_PER_EUR);
    expect(res.body).toMatchObject({
      currency: 'USD',
      start_mrr: round2(20 + 50 * USD_PER_EUR),
      end_mrr: 50,
      movements: { new: 10, expansion: 20, contraction: 0, churn: eur, reactivation: 0 },
      subscriptions: { active_start: 2, active_end: 2 },
    });
    expect(res.body.series.at(-1)).toEqual({ at: range.to, mrr: 50 });
  });

  it('attribution: last-touch shares by source, medium and campaign match hand computation', async () => {
    const eur = 50 * USD_PER_EUR;
    const total = 100 - 20 + eur + 30 - 30 + 30 + 40;
    const bySource = await get('/revenue/attribution', range);
    expect(bySource.body).toMatchObject({ model: 'last_touch', dimension: 'source', lookback_days: 30, truncated: false, net: round2(total), fx: { missing_currencies: ['XYZ'] } });
    expect(bySource.body.rows).toEqual([
      { value: 'google', kind: 'touch', net: 80, share: share(80, total), payments: 1, people: 1 },
      { value: 'news.ycombinator.com', kind: 'touch', net: round2(eur), share: share(eur, total), payments: 1, people: 1 },
      { value: null, kind: 'direct', net: 30, share: share(30, total), payments: 1, people: 1 },
      { value: null, kind: 'unlinked', net: 40, share: share(40, total), payments: 1, people: 0 },
    ]);
    const byCampaign = await get('/revenue/attribution', { ...range, dimension: 'campaign', model: 'first_touch' });
    expect(byCampaign.body.rows.map((r: { value: string | null; kind: string; net: number }) => [r.value, r.kind, r.net])).toEqual([
      ['spring', 'touch', 80],
      [null, 'direct', round2(eur + 30)],
      [null, 'unlinked', 40],
    ]);
    const short = await get('/revenue/attribution', { ...range, lookback_days: 1, dimension: 'medium' });
    // Touches were a day before the payments at D+2d; a 1-day lookback still reaches them, payments later do not.
    expect(short.body.rows[0]).toMatchObject({ value: 'cpc', net: 100 });
  });

  it('impact of a page: range from identified revenue extended to anonymous sessions', async () => {
    const res = await get('/revenue/impact', { target: 'page', id: '/checkout' });
    // Sessions on /checkout: user-c and user-a (identified) and anon-d. R = (100 − 20) + (30 − 30 + 30).
    expect(res.body).toMatchObject({ status: 'estimated', sessions: 3, identified_sessions: 2, people: 2, low: 110, high: 165, method: 'affected_identified_net_30d' });
    expect((await get('/revenue/impact', { target: 'page', id: '/blog' })).body).toMatchObject({ status: 'no_identity', low: 0, high: 0 });
    expect((await get('/revenue/impact', { target: 'page', id: '/careers' })).body).toMatchObject({ status: 'no_revenue', low: 0, high: 0 });
    expect((await get('/revenue/impact', { target: 'page', id: '/nowhere' })).body).toMatchObject({ status: 'no_sessions' });
  });

  it('impact of an issue: sessions linked to its error events by the PostHog session tag', async () => {
    const store = await api(t, 'POST', `/ingest/api/${t.projectId}/store/`, {
      headers: { 'x-sentry-auth': `Sentry sentry_key=${t.keys.ingest}, sentry_version=7` },
      body: { event_id: 'a'.repeat(32), timestamp: (D + DAY + 60_000) / 1000, platform: 'javascript', exception: { values: [{ type: 'TypeError', value: 'checkout broke' }] }, tags: { posthog_session_id: 'sess-b' } },
    });
    expect(store.status).toBe(200);
    const groups = await api(t, 'GET', `${P}/errors`, { key: t.keys.admin });
    const groupId = groups.body.data[0].id;
    const res = await get('/revenue/impact', { target: 'issue', id: groupId });
    expect(res.body).toMatchObject({ status: 'estimated', sessions: 1, identified_sessions: 1, low: round2(50 * USD_PER_EUR), high: round2(50 * USD_PER_EUR) });
    expect((await t.s.services.analytics.session(t.projectId, 'sess-b'))?.error_event_ids).toEqual(['a'.repeat(32)]);
  });

  it('impact answers 404 for an unknown issue, release or incident (incidents are not built yet)', async () => {
    for (const target of ['issue', 'release', 'incident']) {
      const r = await get('/revenue/impact', { target, id: 'nope' });
      expect(r.status, target).toBe(404);
    }
  });

  it('settings: the reporting currency must have a rate and changes converted totals', async () => {
    expect((await api(t, 'PUT', `${P}/revenue/settings`, { key: writer, body: { currency: 'XYZ' } })).status).toBe(400);
    const set = await api(t, 'PUT', `${P}/revenue/settings`, { key: writer, body: { currency: 'eur' } });
    expect(set.body).toMatchObject({ currency: 'EUR', fx: { date: FX_TABLE.date } });
    const eurView = await get('/revenue/overview', range);
    // Each USD payment is converted and rounded to the cent on its own (as payment processors report a
    // converted transaction), then the cents are added: 96.62 + 28.99 + 38.65 + 50 = 214.26, where
    // converting the 170 USD total at once would give 214.25.
    const cents = (usd: number) => Math.round((usd / USD_PER_EUR) * 100);
    expect(eurView.body).toMatchObject({ currency: 'EUR', cached: false, gross: (cents(100) + cents(30) + cents(40) + 5000) / 100 });
    expect(eurView.body.gross).toBe(214.26);
    await api(t, 'PUT', `${P}/revenue/settings`, { key: writer, body: { currency: 'USD' } });
  });
});
