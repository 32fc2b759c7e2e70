/**
 * Stripe-compatible payments: connect with a restricted key (sealed at rest, never returned), a
 * backfill paging a local fake of the provider's list endpoints, and the webhook receiver checked
 * with headers from the real stripe library. Webhook rows and revenue.sendEvents form one ledger;
 * a tampered signature, a replayed event and a stale timestamp are refused and change nothing.
 */
import http from 'node:http';
import type { AddressInfo } from 'node:net';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import Stripe from 'stripe';
import { api, startTestServer, type TestServer } from '../helpers/server.js';

const KEY = 'rk_test_51FakeRestrictedKey';
const SECRET = 'whsec_testSigningSecret123';
const nowS = () => Math.floor(Date.now() / 1000);
let t: TestServer;
let P: string;
let fake: http.Server;
const fakeCalls: string[] = [];

const lists: Record<string, unknown[]> = {
  '/v1/charges': [1, 2, 3].map((i) => ({ id: `ch_b${i}`, object: 'charge', amount: 1000 * i, currency: 'usd', status: 'succeeded', paid: true, created: nowS() - 86400 * i, customer: `cus_${i}`, metadata: {} })),
  '/v1/refunds': [{ id: 're_b1', object: 'refund', amount: 200, currency: 'usd', charge: 'ch_b1', status: 'succeeded', created: nowS() - 3600 }],
  '/v1/disputes': [{ id: 'dp_b1', object: 'dispute', amount: 500, currency: 'usd', charge: 'ch_b2', status: 'won', created: nowS() - 7200 }],
  '/v1/subscriptions': [{ id: 'sub_b1', object: 'subscription', status: 'active', currency: 'usd', start_date: nowS() - 86400 * 20, customer: 'cus_1', items: { data: [{ quantity: 1, price: { unit_amount: 3000, currency: 'usd', recurring: { interval: 'month', interval_count: 1 } } }] } }],
};

beforeAll(async () => {
  // A local fake of the provider's list endpoints: two objects per page, `starting_after` paging.
  fake = http.createServer((req, res) => {
    const url = new URL(req.url!, 'http://fake');
    fakeCalls.push(url.pathname + url.search);
    if (req.headers.authorization !== `Bearer ${KEY}`) {
      res.writeHead(401).end('{}');
      return;
    }
    const all = lists[url.pathname] ?? [];
    const after = url.searchParams.get('starting_after');
    const start = after ? all.findIndex((o) => (o as { id: string }).id === after) + 1 : 0;
    const data = all.slice(start, start + 2);
    res.writeHead(200, { 'content-type': 'application/json' }).end(JSON.stringify({ object: 'list', data, has_more: start + 2 < all.length }));
  });
  await new Promise<void>((r) => fake.listen(0, '127.0.0.1', r));
  const base = `http://127.0.0.1:${(fake.address() as AddressInfo).port}`;
  t = await startTestServer({ config: { revenue: { analytics: true, secretKey: 'server-key-for-tests', stripeApiBase: base, maxRangeRows: 100000 } } });
  P = `/v1/projects/${t.projectId}`;
  await api(t, 'POST', `${P}/analytics/enable`, { key: t.keys.admin, body: {} });
});
afterAll(async () => {
  await t.close();
  await new Promise((r) => fake.close(r));
});

const ledgerCount = () => (t.s.db.prepare('SELECT COUNT(*) AS n FROM revenue_events WHERE project_id = ?').get(Number(t.projectId)) as { n: number }).n;
const hook = (payload: string, header: string | null) =>
  fetch(`${t.url}/ingest/payments/stripe/${t.projectId}`, { method: 'POST', headers: { 'content-type': 'application/json', ...(header ? { 'stripe-signature': header } : {}) }, body: payload });
const event = (id: string, type: string, object: unknown) => JSON.stringify({ id, object: 'event', type, created: nowS(), data: { object } });

describe('integrations.connectPayments', () => {
  it('refuses a full secret key and a server without a secret key, storing nothing', async () => {
    const sk = await api(t, 'POST', `${P}/provider-connections/payments`, { key: t.keys.admin, body: { restricted_key: 'sk_test_abcdefgh' } });
    expect(sk.status).toBe(400);
    const saved = t.s.config.revenue.secretKey;
    t.s.config.revenue.secretKey = null;
    try {
      const r = await api(t, 'POST', `${P}/provider-connections/payments`, { key: t.keys.admin, body: { restricted_key: KEY } });
      expect(r.status).toBe(422);
      expect(r.body.code).toBe('secret_key_not_configured');
    } finally {
      t.s.config.revenue.secretKey = saved;
    }
    expect(t.s.services.revenue.connection(t.projectId)).toBeNull();
  });

  it('seals the key, never returns it, and backfills every list page into the ledger', async () => {
    const r = await api(t, 'POST', `${P}/provider-connections/payments`, { key: t.keys.admin, body: { restricted_key: KEY } });
    expect(r.status).toBe(200);
    expect(JSON.stringify(r.body)).not.toContain(KEY);
    expect(r.body).toMatchObject({ provider: 'stripe', connected: true, webhook_url: `${t.s.config.ingestUrl}/payments/stripe/${t.projectId}` });
    const stored = t.s.db.prepare('SELECT key_sealed FROM payment_connections WHERE project_id = ?').get(Number(t.projectId)) as { key_sealed: string };
    expect(stored.key_sealed).not.toContain(KEY);
    await t.s.services.payments.idle();
    expect(fakeCalls.filter((c) => c.startsWith('/v1/charges'))).toEqual(['/v1/charges?limit=100', '/v1/charges?limit=100&starting_after=ch_b2']);
    const status = await api(t, 'GET', `${P}/revenue/status`, { key: t.keys.admin });
    expect(status.body).toMatchObject({
      provider: { name: 'stripe', connected: true },
      backfill: { state: 'done', pages: 5, rows: 7, error: null },
      rows: { total: 6, by_source: { stripe: 6 } },
      subscriptions: { subscriptions: 1, states: 1 },
      webhook: { secret_set: false },
    });
    expect(JSON.stringify(status.body)).not.toContain(KEY);
    const refunds = await api(t, 'GET', `${P}/revenue/events?kind=dispute_reversal`, { key: t.keys.admin });
    expect(refunds.body.data).toEqual([expect.objectContaining({ id: 'dp_b1:reversal', amount: 500, source: 'stripe' })]);
  });
});

describe('the payment webhook', () => {
  beforeAll(async () => {
    const r = await api(t, 'PUT', `${P}/provider-connections/payments/webhook`, { key: t.keys.admin, body: { secret: SECRET } });
    expect(r.body).toMatchObject({ secret_set: true });
    expect(JSON.stringify(r.body)).not.toContain(SECRET);
  });

  it('answers 404 for a project without a webhook secret', async () => {
    const res = await fetch(`${t.url}/ingest/payments/stripe/${t.otherProject.projectId}`, { method: 'POST', body: '{}' });
    expect(res.status).toBe(404);
  });

  it('writes signed charges, refunds, disputes and subscriptions into the same ledger as revenue.sendEvents', async () => {
    const charge = event('evt_1', 'charge.succeeded', { id: 'ch_w1', object: 'charge', amount: 4900, currency: 'usd', status: 'succeeded', created: nowS(), customer: 'cus_w', metadata: { distinct_id: 'user-w', plan: 'pro' } });
    const res = await hook(charge, Stripe.webhooks.generateTestHeaderString({ payload: charge, secret: SECRET }));
    expect(res.status).toBe(200);
    expect(await res.json()).toEqual({ received: true, written: 1 });
    const refund = event('evt_2', 'refund.created', { id: 're_w1', object: 'refund', amount: 900, currency: 'usd', charge: 'ch_w1', status: 'succeeded', created: nowS() });
    expect((await hook(refund, Stripe.webhooks.generateTestHeaderString({ payload: refund, secret: SECRET }))).status).toBe(200);
    const sub = event('evt_3', 'customer.subscription.updated', { id: 'sub_b1', object: 'subscription', status: 'active', currency: 'usd', customer: 'cus_1', items: { data: [{ quantity: 2, price: { unit_amount: 3000, currency: 'usd', recurring: { interval: 'month' } } }] } });
    expect((await hook(sub, Stripe.webhooks.generateTestHeaderString({ payload: sub, secret: SECRET }))).status).toBe(200);
    const api1 = await api(t, 'POST', `${P}/revenue/events`, { key: t.keys.admin, body: { events: [{ id: 'inv-77', type: 'payment', amount: 1000, currency: 'USD', occurred_at: new Date().toISOString() }] } });
    expect(api1.status).toBe(202);

    const list = await api(t, 'GET', `${P}/revenue/events?limit=100`, { key: t.keys.admin });
    const ids = list.body.data.map((r: { id: string; source: string }) => `${r.id}:${r.source}`);
    expect(ids).toEqual(expect.arrayContaining(['ch_w1:stripe', 're_w1:stripe', 'inv-77:api', 'ch_b1:stripe']));
    expect(list.body.data.find((r: { id: string }) => r.id === 're_w1')).toMatchObject({ amount: -900, parent_id: 'ch_w1' });
    const overview = await api(t, 'GET', `${P}/revenue/overview`, { key: t.keys.admin });
    // Backfill (10 + 20 + 30 − 2 − 5 + 5) + webhook (49 − 9) + API (10).
    expect(overview.body).toMatchObject({ gross: 60 + 49 + 10, refunds: -11, disputes: -5, dispute_reversals: 5, net: 60 - 2 + 49 - 9 + 10 });
    const mrr = await api(t, 'GET', `${P}/revenue/mrr`, { key: t.keys.admin });
    // The backfilled state (30, started 20 days ago) then the webhook's update (2 × 30): new within the default 30 days.
    expect(mrr.body).toMatchObject({ start_mrr: 0, end_mrr: 60, movements: { new: 60, expansion: 0 } });
    expect(mrr.body.series.at(-5).mrr).toBe(30);
  });

  it('refuses a tampered payload, a replayed event and a stale timestamp, changing nothing', async () => {
    const before = ledgerCount();
    const status0 = (await api(t, 'GET', `${P}/revenue/status`, { key: t.keys.admin })).body.webhook.events_received;
    const payload = event('evt_9', 'charge.succeeded', { id: 'ch_w9', object: 'charge', amount: 100, currency: 'usd', status: 'succeeded', created: nowS() });
    const header = Stripe.webhooks.generateTestHeaderString({ payload, secret: SECRET });

    const tampered = await hook(payload.replace('"amount":100', '"amount":100000'), header);
    expect(tampered.status).toBe(400);
    expect(((await tampered.json()) as { code: string }).code).toBe('signature_invalid');
    const wrongSecret = await hook(payload, Stripe.webhooks.generateTestHeaderString({ payload, secret: 'whsec_someoneElse123' }));
    expect(wrongSecret.status).toBe(400);
    const stale = await hook(payload, Stripe.webhooks.generateTestHeaderString({ payload, secret: SECRET, timestamp: nowS() - 301 }));
    expect(stale.status).toBe(400);
    expect(((await stale.json()) as { code: string }).code).toBe('signature_stale_timestamp');
    expect((await hook(payload, null)).status).toBe(400);
    expect(ledgerCount()).toBe(before);

    expect((await hook(payload, header)).status).toBe(200);
    expect(ledgerCount()).toBe(before + 1);
    const replay = await hook(payload, header);
    expect(replay.status).toBe(409);
    expect(((await replay.json()) as { code: string }).code).toBe('event_replayed');
    // The same event id re-signed with a fresh timestamp is still a replay.
    expect((await hook(payload, Stripe.webhooks.generateTestHeaderString({ payload, secret: SECRET }))).status).toBe(409);
    expect(ledgerCount()).toBe(before + 1);
    const status1 = (await api(t, 'GET', `${P}/revenue/status`, { key: t.keys.admin })).body.webhook.events_received;
    expect(status1).toBe(status0 + 1);
  });
});
