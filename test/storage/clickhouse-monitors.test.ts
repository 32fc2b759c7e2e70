/**
 * Issue 20: monitor results in ClickHouse. Runs in the `clickhouse-chdb` project (ClickHouse 26
 * in-process) and the `scale-out` project (clickhouse-server 18.16, control data in PostgreSQL).
 * - a check run by one server's scheduler and a check-in acknowledged by one server are read at once
 *   by a second server on the same ClickHouse database (another process's view; with PostgreSQL it
 *   has a SQLite file of its own), and nothing of them is in SQLite;
 * - the ClickHouse store answers as SQLite's for the same results: pages, counts, daily counts, the
 *   check-in look-up, retention;
 * - deleting a monitor removes its results and counts; the monitor.prune job expires them;
 * - `migrate --to-clickhouse` copies them.
 */
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import http from 'node:http';
import type { AddressInfo } from 'node:net';
import { randomUUID } from 'node:crypto';
import { mkdtempSync, rmSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { createHttpEngine, type ChEngine } from '../../src/storage/clickhouse/client.js';
import { migrateClickHouse } from '../../src/storage/clickhouse/schema.js';
import { clickHouseMutationsPending } from '../../src/storage/clickhouse/retention.js';
import { createChMonitorResults } from '../../src/storage/clickhouse/monitor-results.js';
import { copyMonitorResultsToClickHouse, CopyRefusedError } from '../../src/storage/clickhouse/migrate.js';
import { createSqliteMonitorResults, type MonitorResultRow, type MonitorResultsStore } from '../../src/storage/monitors-repo.js';
import { openDatabase, type Db } from '../../src/storage/db.js';
import { createChdbEngine, dropDatabase } from '../support/clickhouse.js';
import { api, startTestServer, type TestServer } from '../helpers/server.js';
import { startSecondServer, type SecondServer } from '../support/second-server.js';

const mode = process.env.SIGHTLINE_TEST_CLICKHOUSE;
const serverUrl = process.env.SIGHTLINE_TEST_CLICKHOUSE_URL;
const DAY = 86_400_000;

/** A fresh ClickHouse database (dropped by {@link dropEngine}). */
async function freshEngine(): Promise<ChEngine> {
  const engine = mode === 'server' ? createHttpEngine(`${serverUrl}/m_${process.pid}_${randomUUID().replace(/-/g, '')}`) : createChdbEngine();
  await migrateClickHouse(engine);
  return engine;
}
async function dropEngine(engine: ChEngine) {
  if (mode === 'server') await dropDatabase(serverUrl!, (engine as ReturnType<typeof createHttpEngine>).database);
  await engine.close();
}
async function mutationsDone(engine: ChEngine) {
  for (let i = 0; i < 200 && (await clickHouseMutationsPending(engine)); i++) await new Promise((r) => setTimeout(r, 50));
}

describe.skipIf(mode !== 'server' && mode !== 'chdb')('monitor results in ClickHouse', () => {
  describe('two servers on one ClickHouse database', () => {
    let a: TestServer;
    let b: SecondServer;
    let target: http.Server;
    let targetUrl: string;
    let clock = Date.parse('2026-03-01T12:00:00Z');
    const P = () => `/v1/projects/${a.projectId}`;
    /* eslint-disable @typescript-eslint/no-explicit-any */
    const onB = async (path: string): Promise<{ status: number; body: any }> => {
      const r = await fetch(`${b.url}${path}`, { headers: { 'x-service-key': a.keys.admin } });
      return { status: r.status, body: await r.json() };
    };
    const sqliteResults = () => (a.s.db.prepare('SELECT COUNT(*) AS n FROM monitor_results').get() as { n: number }).n;

    beforeAll(async () => {
      target = http.createServer((_req, res) => res.writeHead(200).end('ok'));
      await new Promise<void>((r) => target.listen(0, '127.0.0.1', r));
      targetUrl = `http://127.0.0.1:${(target.address() as AddressInfo).port}/health`;
      a = await startTestServer({ now: () => clock, config: { monitors: { allowPrivate: '127.0.0.1/32', retentionDays: 90 } } });
      b = await startSecondServer(a, { now: () => clock });
    });
    afterAll(async () => {
      await b?.close();
      await a?.close();
      target.closeAllConnections();
      await new Promise((r) => target.close(r));
    });

    it('reads on the second server the check the first server\'s scheduler ran, with its daily counts', async () => {
      const m = (await api(a, 'POST', `${P()}/monitors`, { key: a.keys.admin, body: { kind: 'http', name: 'api', url: targetUrl, interval_s: 60, region: 'eu-test' } })).body;
      expect(await a.s.services.scheduler.runDue()).toBe(1);
      const r = await onB(`${P()}/monitors/${m.id}/results`);
      expect(r.body).toMatchObject({ total: 1, data: [{ status: 'up', http_status: 200, region: 'eu-test', error: null, check_in_id: null, at: '2026-03-01T12:00:00.000Z' }] });
      expect((await onB(`${P()}/monitors/${m.id}`)).body).toMatchObject({ state: 'up', uptime_30d: 1 });
      // A status page served by the second server shows the day's bar from the first one's check.
      const page = (await api(a, 'POST', `${P()}/status-pages`, { key: a.keys.admin, body: { name: 'Acme', slug: `acme-${randomUUID().slice(0, 8)}`, isPublic: true } })).body;
      await api(a, 'POST', `${P()}/status-pages/${page.id}/components`, { key: a.keys.admin, body: { kind: 'monitor', name: 'API', monitor_id: m.id } });
      const json = (await onB(`/status/${page.slug}.json`)).body;
      expect(json.components[0].uptime_bars.at(-1)).toMatchObject({ date: '2026-03-01', uptime: 1 });
      expect(sqliteResults()).toBe(0);
    });

    it('reads on the second server the check-ins the first one acknowledged, a repeated one once', async () => {
      const checkInId = randomUUID().replace(/-/g, '');
      const send = async (status: string, extra: Record<string, unknown> = {}) => {
        const body = [
          '{}',
          JSON.stringify({ type: 'check_in' }),
          JSON.stringify({ check_in_id: checkInId, monitor_slug: 'nightly', status, ...extra }),
        ].join('\n') + '\n';
        const r = await fetch(`${a.url}/ingest/api/${a.projectId}/envelope/?sentry_key=${a.keys.ingest}`, { method: 'POST', body });
        expect(r.status).toBe(200);
        await r.arrayBuffer();
      };
      // Both in the same millisecond: the later one reads first (its `seq`).
      await send('in_progress', { monitor_config: { schedule: { type: 'crontab', value: '0 * * * *' }, checkin_margin: 5, max_runtime: 30 } });
      await send('ok', { duration: 2 });
      await send('ok', { duration: 3 }); // a repeat of a finished run: no result
      const m = (await onB(`${P()}/monitors?kind=cron`)).body.data.find((x: { cron: { slug: string } }) => x.cron.slug === 'nightly');
      const r = await onB(`${P()}/monitors/${m.id}/results`);
      expect(r.body.data.map((x: { status: string; latency_ms: number | null }) => [x.status, x.latency_ms])).toEqual([['ok', 2000], ['in_progress', null]]);
      expect(r.body.data[0]).toMatchObject({ check_in_id: checkInId });
      expect(m.uptime_30d).toBe(1); // (the list's counts) the run in progress is not counted
      expect((await onB(`${P()}/monitors/${m.id}`)).body.uptime_30d).toBe(1);
      expect(sqliteResults()).toBe(0);
    });

    it('removes a deleted monitor\'s results and counts', async () => {
      const m = (await api(a, 'POST', `${P()}/monitors`, { key: a.keys.admin, body: { kind: 'http', name: 'gone', url: targetUrl, interval_s: 60 } })).body;
      expect(await a.s.services.scheduler.runDue()).toBe(1);
      const engine = a.s.services.clickhouse!.engine;
      const left = async () => {
        const [r] = await engine.query<{ n: number }>(`SELECT count() AS n FROM monitor_results WHERE monitor_id = '${m.id}'`);
        const [d] = await engine.query<{ n: number }>(`SELECT count() AS n FROM monitor_daily WHERE monitor_id = '${m.id}'`);
        return [Number(r!.n), Number(d!.n)];
      };
      expect(await left()).toEqual([1, 1]);
      const del = await fetch(`${b.url}${P()}/monitors/${m.id}`, { method: 'DELETE', headers: { 'x-service-key': a.keys.admin } });
      expect(del.status).toBe(200);
      await mutationsDone(engine);
      expect(await left()).toEqual([0, 0]);
    });

    it('expires results past the monitor retention through the monitor.prune job, keeping the daily counts', async () => {
      const list = (await onB(`${P()}/monitors?kind=http`)).body.data;
      const m = list.find((x: { name: string }) => x.name === 'api');
      const window = `from=2026-03-01T00:00:00Z&to=2026-03-02T00:00:00Z`;
      expect((await onB(`${P()}/monitors/${m.id}/results?${window}`)).body.total).toBe(1);
      clock += 92 * DAY; // past the 90 days of results
      await a.s.services.scheduler.runDue();
      expect((await onB(`${P()}/monitors/${m.id}/results?${window}`)).body.total).toBe(0);
      const [d] = await a.s.services.clickhouse!.engine.query<{ n: number }>(`SELECT count() AS n FROM monitor_daily WHERE monitor_id = '${m.id}' AND day = ${Date.parse('2026-03-01') / DAY}`);
      expect(Number(d!.n)).toBe(1);
    });
  });

  describe('the store against SQLite\'s', () => {
    let engine: ChEngine;
    let dir: string;
    let db: Db;
    let ch: MonitorResultsStore;
    let lite: MonitorResultsStore;
    const T0 = Date.UTC(2025, 10, 15); // 2025-11-15: four months of results up to 2026-03-14
    const mids = ['m-1', 'm-2'];
    const statuses = ['up', 'up', 'ok', 'degraded', 'down', 'error', 'missed', 'timeout', 'in_progress'];

    /** Results over 120 days for two monitors of two projects, some sharing a millisecond. */
    const dataset = () => {
      const out: { pid: number; mid: string; r: MonitorResultRow }[] = [];
      let x = 7;
      const rnd = (n: number) => ((x = (x * 48271) % 2147483647), x % n);
      for (let i = 0; i < 1200; i++) {
        const at = T0 + rnd(120) * DAY + rnd(24) * 3_600_000 + (rnd(4) === 0 ? 0 : rnd(60_000));
        const status = statuses[rnd(statuses.length)]!;
        out.push({
          pid: 1 + rnd(2),
          mid: mids[rnd(2)]!,
          r: {
            at_ms: at, status, latency_ms: rnd(3) ? rnd(5000) : null, http_status: rnd(2) ? 200 + rnd(400) : null,
            error: status === 'down' ? `HTTP ${rnd(600)}` : null, region: rnd(2) ? 'eu' : null, check_in_id: rnd(3) === 0 ? `c${rnd(40)}` : null,
          },
        });
      }
      return out;
    };
    const fill = async (store: MonitorResultsStore, rows: ReturnType<typeof dataset>) => {
      const half = rows.length - 30;
      // Recorded inside a collection (as the monitors do), the last few one by one.
      const { write } = store.collect(() => {
        for (const { pid, mid, r } of rows.slice(0, half)) void store.add(pid, mid, r);
      });
      await write();
      for (const { pid, mid, r } of rows.slice(half)) await store.add(pid, mid, r);
    };
    /** Every read the monitors make, for both projects and monitors. */
    const reads = async (store: MonitorResultsStore) => {
      const out: unknown[] = [];
      for (const pid of [1, 2]) {
        for (const mid of mids) {
          for (const since of [0, Math.floor(T0 / DAY) + 50, Math.floor(T0 / DAY) + 119]) out.push(await store.days(pid, mid, since));
          for (const f of [
            { from: 0, to: T0 + 200 * DAY, limit: 1000, offset: 0 },
            { from: T0 + 10 * DAY, to: T0 + 40 * DAY, limit: 25, offset: 10 },
            { from: 0, to: T0 + 200 * DAY, status: 'down', limit: 50, offset: 0 },
            { from: 0, to: T0 + 200 * DAY, status: 'in_progress', limit: 5, offset: 3 },
          ]) out.push(await store.results(pid, mid, f));
          for (let c = 0; c < 40; c += 5) out.push(await store.lastStatusOfCheckIn(pid, mid, `c${c}`));
        }
        out.push([...(await store.daysOf(pid, [...mids, 'm-none'], Math.floor(T0 / DAY) + 30))]);
      }
      return out;
    };

    beforeAll(async () => {
      engine = await freshEngine();
      dir = mkdtempSync(join(tmpdir(), 'sightline-ch-monitors-'));
      db = openDatabase(join(dir, 't.db'));
      ch = createChMonitorResults(engine);
      lite = createSqliteMonitorResults(db);
    });
    afterAll(async () => {
      await dropEngine(engine);
      db.close();
      rmSync(dir, { recursive: true, force: true });
    });

    it('answers every read as SQLite does for the same results', async () => {
      const rows = dataset();
      await fill(lite, rows);
      await fill(ch, rows);
      const expected = await reads(lite);
      expect((expected[0] as unknown[]).length).toBeGreaterThan(50); // days with results
      expect(await reads(ch)).toEqual(expected);
    });

    it('stores nothing of a collection whose transaction failed', async () => {
      const before = await ch.results(1, 'm-1', { from: 0, to: T0 + 200 * DAY, limit: 1, offset: 0 });
      expect(() =>
        ch.collect(() => {
          void ch.add(1, 'm-1', { at_ms: T0 + 130 * DAY, status: 'down', latency_ms: null, http_status: null, error: 'x', region: null, check_in_id: null });
          throw new Error('rolled back');
        }),
      ).toThrow('rolled back');
      expect(await ch.results(1, 'm-1', { from: 0, to: T0 + 200 * DAY, limit: 1, offset: 0 })).toEqual(before);
    });

    it('expires results and daily counts as SQLite does at day and month boundaries', async () => {
      const resultsBefore = Date.UTC(2026, 1, 1); // results of January and before
      const daysBefore = Math.floor(Date.UTC(2025, 11, 1) / DAY); // counts of November
      const n = await lite.prune(resultsBefore, daysBefore);
      expect(n).toBeGreaterThan(0);
      expect(await ch.prune(resultsBefore, daysBefore)).toBe(n);
      const after = await reads(lite);
      expect(await reads(ch)).toEqual(after);
    });

    it('copies SQLite\'s results and counts, counts kept longer than their results too (migrate --to-clickhouse)', async () => {
      // `lite` now holds results from February and counts from December: copy into a new database.
      const target = await freshEngine();
      try {
        const report = await copyMonitorResultsToClickHouse(db, target, { batch: 100 });
        expect(report.monitor_results).toBe((db.prepare('SELECT COUNT(*) AS n FROM monitor_results').get() as { n: number }).n);
        expect(report.monitors).toBe(2);
        expect(await reads(createChMonitorResults(target))).toEqual(await reads(lite));
        await expect(copyMonitorResultsToClickHouse(db, target)).rejects.toThrow(CopyRefusedError);
      } finally {
        await dropEngine(target);
      }
    });
  });
});
