/**
 * Issue 20: product-analytics capture events in ClickHouse. Runs in the `clickhouse-chdb` project
 * (ClickHouse 26 in-process) and the `scale-out` project (clickhouse-server 18.16, control data in
 * PostgreSQL).
 * - events captured (PostHog's endpoint) and acknowledged by one server are counted at once by a
 *   second server on the same ClickHouse database (another process's view), and none is in SQLite;
 * - a batch whose insert fails is not acknowledged;
 * - retention drops and deletes them per project;
 * - `migrate --to-clickhouse` copies SQLite's events, and refuses a second copy.
 */
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { randomUUID } from 'node:crypto';
import { createHttpEngine, type ChEngine } from '../../src/storage/clickhouse/client.js';
import { migrateClickHouse } from '../../src/storage/clickhouse/schema.js';
import { createChCaptureStore } from '../../src/storage/clickhouse/capture-store.js';
import { copyCaptureEventsToClickHouse, CopyRefusedError } from '../../src/storage/clickhouse/migrate.js';
import { createAnalyticsRepo } from '../../src/storage/analytics-repo.js';
import { createWriteBatcher } from '../../src/storage/write-batcher.js';
import { createChdbEngine, dropDatabase } from '../support/clickhouse.js';
import { useChStore } from '../support/clickhouse-store-fixture.js';
import { DAY, describeClickHouseRetention, T0 } from '../support/clickhouse-retention.js';
import { api, startTestServer, type TestServer } from '../helpers/server.js';
import { startSecondServer, type SecondServer } from '../support/second-server.js';
import { captureEvent } from '../support/capture-events.js';

const mode = process.env.SIGHTLINE_TEST_CLICKHOUSE;
const serverUrl = process.env.SIGHTLINE_TEST_CLICKHOUSE_URL;
const ANALYTICS = { revenue: { analytics: true, secretKey: null, stripeApiBase: 'http://127.0.0.1:9', maxRangeRows: 1000 } };

describe.skipIf(mode !== 'server' && mode !== 'chdb')('capture events in ClickHouse', () => {
  describe('two servers on one ClickHouse database', () => {
    let a: TestServer;
    let b: SecondServer;

    beforeAll(async () => {
      a = await startTestServer({ config: ANALYTICS });
      await api(a, 'POST', `/v1/projects/${a.projectId}/analytics/enable`, { key: a.keys.admin, body: {} });
      b = await startSecondServer(a);
    });
    afterAll(async () => {
      await b?.close();
      await a?.close();
    });

    it('counts on the second server the events the first one acknowledged, and keeps them out of SQLite', async () => {
      const at = Date.now() - 60_000;
      const events = [1, 2, 3].map((n) => ({ event: 'clicked', distinct_id: `d-${n}`, timestamp: new Date(at + n).toISOString(), properties: { $session_id: 's-1' } }));
      const r = await fetch(`${a.url}/ingest/batch/`, { method: 'POST', headers: { 'content-type': 'application/json' }, body: JSON.stringify({ api_key: a.keys.ingest, batch: events }) });
      expect(r.status).toBe(200);
      expect(await r.json()).toMatchObject({ accepted: 3 });
      const onB = await fetch(`${b.url}/v1/projects/${a.projectId}/analytics/status`, { headers: { 'x-service-key': a.keys.admin } });
      expect(await onB.json()).toMatchObject({ events_30d: 3, last_event_at: new Date(at + 3).toISOString() });
      expect((await api(a, 'GET', `/v1/projects/${a.projectId}/analytics/status`, { key: a.keys.admin })).body).toMatchObject({ events_30d: 3, sessions_30d: 1 });
      expect(a.s.db.prepare('SELECT COUNT(*) FROM capture_events').pluck().get()).toBe(0);
      const rows = await a.s.services.clickhouse!.engine.query<{ distinct_id: string; event: string; session_id: string | null; properties: string }>(
        `SELECT distinct_id, event, session_id, properties FROM capture_events ORDER BY distinct_id`,
      );
      expect(rows.map((x) => [x.distinct_id, x.event, x.session_id, JSON.parse(x.properties).$session_id])).toEqual([1, 2, 3].map((n) => [`d-${n}`, 'clicked', 's-1', 's-1']));
    });
  });

  describe('the store', () => {
    const fx = useChStore();

    it('does not acknowledge an ingest whose ClickHouse insert fails', async () => {
      const broken: ChEngine = { ...fx.engine, insert: async () => Promise.reject(new Error('ClickHouse is down')) };
      const store = createChCaptureStore(broken);
      const repo = createAnalyticsRepo(fx.db, { captures: store });
      const batch = createWriteBatcher(fx.db, 512, [store.participant]);
      // Its SQLite part (persons, sessions, touches) is committed first, as with spans; the request fails (the client retries).
      await expect(batch(() => repo.ingest('8', [captureEvent('lost', 1_000)], 1_000))).rejects.toThrow('ClickHouse is down');
      expect((await fx.engine.query<{ n: number }>('SELECT count() AS n FROM capture_events WHERE project_id = 8'))[0]!.n).toBe(0);
    });

    it('answers no events and no latest time for a project without events, as SQLite', async () => {
      const repo = createAnalyticsRepo(fx.db, { captures: createChCaptureStore(fx.engine) });
      expect(await repo.stats('9', 0)).toEqual(await createAnalyticsRepo(fx.db).stats('9', 0));
      expect(await repo.stats('9', 0)).toMatchObject({ events: 0, last_event_at: null });
    });

    it('stores events of client times before 1970 and across more than 100 days in one batch', async () => {
      const store = createChCaptureStore(fx.engine);
      const repo = createAnalyticsRepo(fx.db, { captures: store });
      const batch = createWriteBatcher(fx.db, 512, [store.participant]);
      const events = Array.from({ length: 150 }, (_, i) => captureEvent(`old-${i}`, Date.UTC(2025, 0, 1) + i * DAY + 0.5));
      events.push(captureEvent('before-1970', -5 * DAY));
      await batch(() => repo.ingest('10', events, Date.UTC(2026, 0, 1)));
      expect(await repo.stats('10', Date.UTC(2025, 0, 1) + 100 * DAY)).toMatchObject({ events: 50, last_event_at: Date.UTC(2025, 0, 1) + 149 * DAY + 0.5 });
      expect(await repo.stats('10', -10 * DAY)).toMatchObject({ events: 151 });
    });
  });

  describe('migrate --to-clickhouse', () => {
    it('copies every capture event of SQLite, answering as SQLite, and refuses a second copy', async () => {
      const lite = await startTestServer({ clickhouse: false });
      const target = mode === 'server' ? createHttpEngine(`${serverUrl}/c_${process.pid}_${randomUUID().replace(/-/g, '')}`) : createChdbEngine();
      try {
        await migrateClickHouse(target);
        const pid = lite.projectId;
        const now = Date.UTC(2026, 2, 1);
        const events = Array.from({ length: 57 }, (_, i) =>
          captureEvent(`u-${i % 9}`, now - i * 3_600_000 * 7, { event: i % 3 ? '$pageview' : 'clicked', session_id: i % 2 ? `s-${i % 5}` : null, pathname: i % 4 ? '/p' : null, uuid: i % 6 ? randomUUID() : null, properties: { i } }),
        );
        await lite.s.services.writeBatch(() => lite.s.services.analytics.ingest(pid, events, now));
        await lite.s.services.writeBatch(() => lite.s.services.analytics.ingest(lite.otherProject.projectId, events.slice(0, 5), now));
        const report = await copyCaptureEventsToClickHouse(lite.s.db, target, { batch: 10 });
        expect(report).toMatchObject({ capture_events: 62, projects: 2 });
        const copied = createAnalyticsRepo(lite.s.db, { captures: createChCaptureStore(target) });
        for (const since of [0, now - 7 * DAY, now - 3 * DAY, now - 1, now + 1]) {
          for (const p of [pid, lite.otherProject.projectId]) expect(await copied.stats(p, since)).toEqual(await lite.s.services.analytics.stats(p, since));
        }
        const cols = 'project_id, ts, event, distinct_id, session_id, pathname, uuid, properties, received_at';
        const fromSqlite = lite.s.db.prepare(`SELECT ${cols} FROM capture_events ORDER BY rowid`).all();
        expect(await target.query(`SELECT ${cols} FROM capture_events ORDER BY seq`)).toEqual(fromSqlite);
        await expect(copyCaptureEventsToClickHouse(lite.s.db, target)).rejects.toThrow(CopyRefusedError);
      } finally {
        if (mode === 'server') await dropDatabase(serverUrl!, (target as ReturnType<typeof createHttpEngine>).database);
        await target.close();
        await lite.close();
      }
    });
  });
});

describeClickHouseRetention({
  kind: 'capture_events',
  rows: 'events',
  otherDays: 30,
  write: (t, pid, rows) => t.s.services.writeBatch(() => t.s.services.analytics.ingest(pid, rows.map((r) => captureEvent(r.label, T0 - r.daysAgo * DAY)), T0)),
  left: async (engine) => (await engine.query<{ distinct_id: string }>('SELECT distinct_id FROM capture_events ORDER BY distinct_id')).map((r) => r.distinct_id),
  async after(t) {
    expect(await t.s.services.analytics.stats(t.projectId, 0)).toMatchObject({ events: 1, last_event_at: T0 - 2 * DAY });
  },
});
