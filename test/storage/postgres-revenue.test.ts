/**
 * Issue 20, PostgreSQL migration 5: the revenue ledger (replaced by id, its rollups rebuilt in the
 * same transaction), subscription states, Stripe webhook idempotency and the product-analytics
 * state attribution reads are control data. Two servers with SQLite files of their own over one
 * PostgreSQL database answer from one ledger: a write through either is read, replaced and
 * attributed through the other (no stale cached result, no stale decoded day), and a Stripe event
 * delivered to both is applied once. A server already on PostgreSQL adopts these tables from its
 * SQLite file at its first start with migration 5, once; the disk budget (SQLite's file) leaves the
 * ledger in PostgreSQL alone. Runs on the local PostgreSQL; skips,
 * saying why, without one.
 */
import { mkdtempSync, rmSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { afterAll, describe, expect, it } from 'vitest';
import Stripe from 'stripe';
import { PostHog } from 'posthog-node';
import { api, startTestServer, type TestServer } from '../helpers/server.js';
import { openDatabase } from '../../src/storage/db.js';
import { REVENUE_ANALYTICS_TABLES } from '../../src/storage/postgres/control-tables.js';
import { createPgDatabase, pgAsBeforeMove, pgQuery, postgresMissing, type PgDatabase } from '../support/postgres.js';
import { startServerOn } from '../support/second-server.js';

const missing = await postgresMissing();
if (missing) console.log(`[postgres-revenue] skipped: ${missing}`);

const DAY = 86_400_000;
const D = Math.floor(Date.now() / DAY) * DAY - 10 * DAY;
const iso = (ms: number) => new Date(ms).toISOString();
const SECRET = 'whsec_sharedSigningSecret42';
const REVENUE = { analytics: true, secretKey: 'server-key-for-tests', stripeApiBase: 'http://127.0.0.1:9', maxRangeRows: 100_000 };
const range = `from=${iso(D - DAY)}&to=${iso(D + 8 * DAY)}`;
const ev = (id: string, amount: number, at: number, extra: Record<string, unknown> = {}) => ({ id, type: 'payment', amount, currency: 'USD', occurred_at: iso(at), ...extra });
const stripeEvent = (id: string, charge: string, amount: number) =>
  JSON.stringify({ id, object: 'event', type: 'charge.succeeded', created: Math.floor(Date.now() / 1000), data: { object: { id: charge, object: 'charge', amount, currency: 'usd', status: 'succeeded', created: Math.floor(D / 1000) + 3 * 86_400, customer: 'cus_s', metadata: {} } } });
const deliver = (url: string, projectId: string, payload: string) =>
  fetch(`${url}/ingest/payments/stripe/${projectId}`, { method: 'POST', headers: { 'content-type': 'application/json', 'stripe-signature': Stripe.webhooks.generateTestHeaderString({ payload, secret: SECRET }) }, body: payload });

const startServer = (dbFile: string, databaseUrl: string) => startServerOn(dbFile, databaseUrl, { revenue: REVENUE });

/** Pageviews with UTMs and an identify through the real posthog-node client. */
async function capture(url: string, ingestKey: string): Promise<void> {
  const ph = new PostHog(ingestKey, { host: `${url}/ingest`, flushAt: 100, flushInterval: 0 });
  ph.capture({ distinctId: 'anon-a', event: '$pageview', timestamp: new Date(D), properties: { $current_url: 'https://shop.example/?utm_source=google&utm_medium=cpc', $session_id: 's-a' } });
  ph.identify({ distinctId: 'user-a', properties: { $anon_distinct_id: 'anon-a' } });
  ph.capture({ distinctId: 'anon-b', event: '$pageview', timestamp: new Date(D), properties: { $current_url: 'https://shop.example/?utm_source=newsletter', $session_id: 's-b' } });
  await ph.shutdown();
}

describe.skipIf(!!missing)('revenue and product analytics in PostgreSQL (migration 5)', () => {
  const cleanup: Array<() => Promise<void>> = [];
  afterAll(async () => {
    while (cleanup.length) await cleanup.pop()!();
  });

  it('two servers over one PostgreSQL database share the ledger, its rollups, attribution state and Stripe webhook idempotency', async () => {
    const pgdb = await createPgDatabase();
    cleanup.push(() => pgdb.drop());
    const a = await startTestServer({ clickhouse: false, config: { databaseUrl: pgdb.url, revenue: REVENUE } });
    cleanup.push(() => a.close());
    const dir = mkdtempSync(join(tmpdir(), 'sightline-b-'));
    const b = await startServer(join(dir, 'b.db'), pgdb.url);
    cleanup.push(async () => (await b.stop(), rmSync(dir, { recursive: true, force: true })));
    const P = `/v1/projects/${a.projectId}`;
    const key = a.keys.admin;
    expect((await api(a, 'POST', `${P}/analytics/enable`, { key, body: {} })).status).toBe(200);

    await capture(a.url, a.keys.ingest);
    expect((await api(a, 'POST', `${P}/revenue/events`, { key, body: { events: [ev('pay-1', 10_000, D + DAY, { distinct_id: 'user-a' }), ev('pay-2', 4_000, D + DAY, { anonymous_id: 'anon-b' })] } })).status).toBe(202);
    const overview = async (on: { url: string }) => (await api(on, 'GET', `${P}/revenue/overview?${range}`, { key })).body;
    const attribution = async (on: { url: string }) => (await api(on, 'GET', `${P}/revenue/attribution?${range}`, { key })).body.rows.map((r: { value: string | null; net: number }) => [r.value, r.net]);
    expect((await api(b, 'GET', `${P}/revenue/events`, { key })).body.data.map((r: { id: string }) => r.id).sort()).toEqual(['pay-1', 'pay-2']);
    expect(await overview(b)).toMatchObject({ net: 140, cached: false });
    expect(await overview(b)).toMatchObject({ net: 140, cached: true });
    expect(await attribution(b)).toEqual([
      ['google', 100],
      ['newsletter', 40],
    ]);
    // Replaced through A (the day's packed rows rebuilt): B's kept result and decoded day give way.
    expect((await api(a, 'POST', `${P}/revenue/events`, { key, body: { events: [ev('pay-1', 7_000, D + DAY, { distinct_id: 'user-a' })] } })).body).toMatchObject({ written: 1 });
    expect(await overview(b)).toMatchObject({ net: 110, cached: false });
    expect(await attribution(b)).toEqual([
      ['google', 70],
      ['newsletter', 40],
    ]);
    // An identity merge through B moves anon-b's touch onto user-a's person, as A sees it.
    const ph = new PostHog(a.keys.ingest, { host: `${b.url}/ingest`, flushAt: 100, flushInterval: 0 });
    ph.alias({ distinctId: 'user-a', alias: 'anon-b' });
    await ph.shutdown();
    expect(a.s.services.analytics.person(a.projectId, 'anon-b')).toMatchObject({ distinct_ids: ['anon-a', 'anon-b', 'user-a'] });
    expect((await api(a, 'GET', `${P}/analytics/status`, { key })).body).toMatchObject({ persons: 1, identified_persons: 1 });

    // One Stripe event delivered to both servers at once is applied once; again later, refused by either.
    expect((await api(b, 'PUT', `${P}/provider-connections/payments/webhook`, { key, body: { secret: SECRET } })).status).toBe(200);
    const payload = stripeEvent('evt_shared', 'ch_shared', 2_500);
    const statuses = (await Promise.all([deliver(a.url, a.projectId, payload), deliver(b.url, a.projectId, payload)])).map((r) => r.status);
    expect(statuses.sort()).toEqual([200, 409]);
    expect(await pgQuery(pgdb.url, "SELECT count(*)::int AS n FROM revenue_events WHERE id = 'ch_shared'")).toEqual([{ n: 1 }]);
    expect(await pgQuery(pgdb.url, "SELECT count(*)::int AS n FROM payment_webhook_events WHERE event_id = 'evt_shared'")).toEqual([{ n: 1 }]);
    expect((await deliver(a.url, a.projectId, payload)).status).toBe(409);
    expect(await overview(a)).toMatchObject({ net: 135 });
    expect(await overview(b)).toMatchObject({ net: 135 });
    expect((await api(b, 'GET', `${P}/revenue/status`, { key })).body.webhook.events_received).toBe(1);
  });

  it('expires the ledger in PostgreSQL by its retention period, and the disk budget never deletes it there (that frees nothing in the SQLite file)', async () => {
    const pgdb = await createPgDatabase();
    cleanup.push(() => pgdb.drop());
    const t = await startTestServer({ clickhouse: false, config: { databaseUrl: pgdb.url, revenue: REVENUE, retention: { maxDays: 400, intervalMs: 0, batchRows: 50, maxDbBytes: 0 } } });
    cleanup.push(() => t.close());
    const P = `/v1/projects/${t.projectId}`;
    expect((await api(t, 'POST', `${P}/analytics/enable`, { key: t.keys.admin, body: {} })).status).toBe(200);
    expect((await api(t, 'POST', `${P}/revenue/events`, { key: t.keys.admin, body: { events: [ev('old-1', 1_000, D - 500 * DAY), ev('old-2', 1_000, D)] } })).status).toBe(202);
    // A budget nothing can meet: only telemetry in the file may go, and there is none.
    (t.s.config.retention as { maxDbBytes: number }).maxDbBytes = 1;
    const report = await t.s.retention.runOnce();
    expect(report.budget.state).toBe('over_budget');
    expect(report.trimmed.revenue_ledger).toBeUndefined();
    // The retention period applies there: the row past 400 days went, the other stays.
    expect(report.expired.revenue_ledger).toBe(1);
    expect(await pgQuery(pgdb.url, 'SELECT id FROM revenue_events')).toEqual([{ id: 'old-2' }]);
  });

  it('a server already on PostgreSQL takes its revenue and analytics rows over from SQLite at its first start with migration 5, once', async () => {
    const t: TestServer = await startTestServer({ clickhouse: false, config: { databaseUrl: null, revenue: REVENUE } });
    const P = `/v1/projects/${t.projectId}`;
    const key = t.keys.admin;
    expect((await api(t, 'POST', `${P}/analytics/enable`, { key, body: {} })).status).toBe(200);
    await capture(t.url, t.keys.ingest);
    await api(t, 'POST', `${P}/revenue/events`, { key, body: { events: [ev('pay-1', 10_000, D + DAY, { distinct_id: 'user-a' }), ev('pay-2', 4_000, D + 2 * DAY, { anonymous_id: 'anon-b' })] } });
    await api(t, 'PUT', `${P}/provider-connections/payments/webhook`, { key, body: { secret: SECRET } });
    const payload = stripeEvent('evt_old', 'ch_old', 1_500);
    expect((await deliver(t.url, t.projectId, payload)).status).toBe(200);
    const reads = [`${P}/revenue/overview?${range}`, `${P}/revenue/attribution?${range}`, `${P}/revenue/events`, `${P}/revenue/status`, `${P}/analytics/status`];
    const before = await Promise.all(reads.map((p) => api(t, 'GET', p, { key })));
    expect(before[0]!.body).toMatchObject({ net: 155 });
    const dbFile = t.dbFile;
    await t.s.close();

    // PostgreSQL as a Sightline before migration 5 left it: control data copied, revenue and analytics still in SQLite.
    const pgdb: PgDatabase = await pgAsBeforeMove(dbFile, REVENUE_ANALYTICS_TABLES);
    cleanup.push(() => pgdb.drop());

    const first = await startServer(dbFile, pgdb.url);
    try {
      const after = await Promise.all(reads.map((p) => api(first, 'GET', p, { key })));
      for (const [i, a] of after.entries()) expect(a.body, reads[i]).toEqual(before[i]!.body);
      expect(await pgQuery(pgdb.url, 'SELECT count(*)::int AS n FROM revenue_events')).toEqual([{ n: 3 }]);
      expect(await pgQuery(pgdb.url, 'SELECT count(*)::int AS n FROM analytics_distinct_ids')).toEqual([{ n: 2 }]);
      // The adopted blobs are the same bytes.
      const blobs = await pgQuery(pgdb.url, "SELECT encode(rows, 'hex') AS h FROM revenue_day_rows ORDER BY day");
      const local = openDatabase(dbFile);
      try {
        expect(blobs.map((r) => r.h)).toEqual((local.prepare('SELECT rows FROM revenue_day_rows ORDER BY day').pluck().all() as Buffer[]).map((b) => b.toString('hex')));
      } finally {
        local.close();
      }
      // The adopted webhook ids still refuse a replay; new writes go on.
      expect((await deliver(first.url, t.projectId, payload)).status).toBe(409);
      expect((await api(first, 'POST', `${P}/revenue/events`, { key, body: { events: [ev('pay-3', 1_000, D + 3 * DAY)] } })).status).toBe(202);
      // New persons get ids after the adopted ones (the identity sequence moved on).
      const ph = new PostHog(t.keys.ingest, { host: `${first.url}/ingest`, flushAt: 100, flushInterval: 0 });
      ph.identify({ distinctId: 'user-new' });
      await ph.shutdown();
      const ids = (await pgQuery(pgdb.url, 'SELECT d.distinct_id, d.person_id::int AS p FROM analytics_distinct_ids d ORDER BY d.distinct_id')).map((r) => [r.distinct_id, r.p]);
      expect(ids.map((r) => r[0])).toEqual(['anon-a', 'user-a', 'user-new']);
      expect(ids[2]![1]).toBeGreaterThan(ids[1]![1] as number);
    } finally {
      await first.stop();
    }
    // A second start finds PostgreSQL holding these tables: nothing copied again.
    const second = await startServer(dbFile, pgdb.url);
    try {
      expect((await api(second, 'GET', `${P}/revenue/overview?${range}`, { key })).body).toMatchObject({ net: 165 });
      expect(await pgQuery(pgdb.url, 'SELECT count(*)::int AS n FROM revenue_events')).toEqual([{ n: 4 }]);
    } finally {
      await second.stop();
    }
  });
});
