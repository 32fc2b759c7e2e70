/**
 * Issue 20: reads of product-analytics capture events answer the same on both backends. Random
 * capture events (seeded: several projects, pageviews, custom events, $identify and $create_alias
 * merges, sessions, UTM touches, client times spread over 60 days with fractional and pre-1970 ones,
 * equal times, events far in the past) are ingested through the same repository, in the same write
 * batches, into a SQLite-only server and a server with capture events in ClickHouse; then
 * analytics.status (events of the last 30 days, latest event, persons, sessions) over HTTP at several
 * times, and the repository's counts for random `since` values, must be equal. Runs in the
 * clickhouse-chdb and scale-out projects.
 */
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import type { CaptureEvent } from '../../src/domain/analytics/capture.js';
import { api, startTestServer, type TestServer } from '../helpers/server.js';
import { rng } from '../../bench/lib.js';
import { captureEvent } from '../support/capture-events.js';

const mode = process.env.SIGHTLINE_TEST_CLICKHOUSE;
const DAY = 86_400_000;
const NOW = Date.parse('2026-05-20T09:30:00.000Z');
const ANALYTICS = { revenue: { analytics: true, secretKey: null, stripeApiBase: 'http://127.0.0.1:9', maxRangeRows: 1000 } };

function makeBatches(seed: number, n: number): CaptureEvent[][] {
  const r = rng(seed);
  const pick = <T,>(xs: readonly T[]) => xs[Math.floor(r() * xs.length)]!;
  const batches: CaptureEvent[][] = [];
  let cur: CaptureEvent[] = [];
  for (let i = 0; i < n; i++) {
    const x = r();
    const ts =
      x < 0.02 ? -Math.floor(r() * 400) * DAY - Math.floor(r() * DAY) // before 1970
        : x < 0.05 ? NOW - 400 * DAY - Math.floor(r() * 100 * DAY) // older than any window
          : x < 0.1 ? NOW - 30 * DAY + Math.floor(r() * 3) - 1 // at the 30-day edge
            : x < 0.2 ? NOW - Math.floor(r() * 60 * DAY) + 0.25 // fractional
              : NOW - Math.floor(r() * 60) * DAY - Math.floor(r() * 24) * 3_600_000; // whole hours (equal times)
    const d = `u-${Math.floor(r() * 40)}`;
    const kind = r();
    const session = r() < 0.7 ? `s-${Math.floor(r() * 30)}` : null;
    const path = pick(['/', '/pricing', '/checkout', '/blog']);
    const e =
      kind < 0.05
        ? captureEvent(d, ts, { event: '$identify', merge_from: `anon-${Math.floor(r() * 40)}`, session_id: session })
        : kind < 0.08
          ? captureEvent(d, ts, { event: '$create_alias', merge_from: `alias-${Math.floor(r() * 10)}`, session_id: session })
          : kind < 0.6
            ? captureEvent(d, ts, {
                event: '$pageview', session_id: session, pathname: path, url: `https://shop.example${path}`, uuid: r() < 0.5 ? `uuid-${i}` : null,
                ...(r() < 0.3 ? { utm_source: pick(['google', 'news']), utm_medium: pick(['cpc', null]), utm_campaign: pick(['spring', null]) } : {}),
                properties: { $current_url: `https://shop.example${path}`, n: i },
              })
            : captureEvent(d, ts, { event: pick(['clicked', 'signed up', 'exported']), session_id: session, properties: { n: i, note: "it's \\ \n 'quoted'" } });
    cur.push(e);
    if (cur.length >= 1 + Math.floor(r() * 60)) {
      batches.push(cur);
      cur = [];
    }
  }
  if (cur.length) batches.push(cur);
  return batches;
}

describe.skipIf(mode !== 'server' && mode !== 'chdb')('capture event reads on SQLite and on ClickHouse', () => {
  let a: TestServer;
  let b: TestServer;
  let clock = NOW;
  const EVENTS = 2000;
  let projects: string[];

  beforeAll(async () => {
    a = await startTestServer({ now: () => clock, clickhouse: false, config: ANALYTICS });
    b = await startTestServer({ now: () => clock, config: ANALYTICS });
    for (const s of [a, b]) {
      for (const [pid, key] of [[s.projectId, s.keys.admin], [s.otherProject.projectId, s.otherProject.adminKey]] as const) {
        expect((await api(s, 'POST', `/v1/projects/${pid}/analytics/enable`, { key, body: {} })).status).toBe(200);
      }
    }
    projects = [a.projectId, a.otherProject.projectId];
    expect([b.projectId, b.otherProject.projectId]).toEqual(projects);
    const batches = makeBatches(41, EVENTS);
    for (const s of [a, b]) {
      // Three ingest calls at a time (one write batch, as concurrent capture requests), in order.
      for (let i = 0; i < batches.length; i += 3) {
        await Promise.all(
          batches.slice(i, i + 3).map((events, j) => {
            const pid = (i + j) % 4 === 3 ? s.otherProject.projectId : s.projectId;
            return s.s.services.writeBatch(() => s.s.services.analytics.ingest(pid, events, NOW - ((i + j) % 5)));
          }),
        );
      }
    }
  }, 120_000);
  afterAll(async () => {
    await a?.close();
    await b?.close();
  });

  it('keeps capture events out of SQLite when they go to ClickHouse', async () => {
    expect(a.s.db.prepare('SELECT count(*) FROM capture_events').pluck().get()).toBe(EVENTS);
    expect(b.s.db.prepare('SELECT count(*) FROM capture_events').pluck().get()).toBe(0);
    const [c] = await b.s.services.clickhouse!.engine.query<{ n: number }>('SELECT count() AS n FROM capture_events');
    expect(Number(c!.n)).toBe(EVENTS);
    // Persons, distinct ids, sessions and touches stay in SQLite, the same on both.
    for (const t of ['analytics_persons', 'analytics_distinct_ids', 'analytics_sessions', 'analytics_touches']) {
      expect(b.s.db.prepare(`SELECT count(*) FROM ${t}`).pluck().get(), t).toBe(a.s.db.prepare(`SELECT count(*) FROM ${t}`).pluck().get());
    }
  });

  it('answer analytics.status with the same body at every time', async () => {
    let compared = 0;
    for (const at of [NOW, NOW - 10 * DAY + 1, NOW - 29 * DAY, NOW + 31 * DAY, NOW + 100 * DAY, Date.UTC(1971, 0, 1)]) {
      clock = at;
      for (const [i, pid] of projects.entries()) {
        const key = (s: TestServer) => (i === 0 ? s.keys.admin : s.otherProject.adminKey);
        const x = await api(a, 'GET', `/v1/projects/${pid}/analytics/status`, { key: key(a) });
        const y = await api(b, 'GET', `/v1/projects/${pid}/analytics/status`, { key: key(b) });
        expect(x.status).toBe(200);
        expect(y.body, `${pid} at ${new Date(at).toISOString()}`).toEqual(x.body);
        compared++;
      }
    }
    clock = NOW;
    expect(compared).toBe(12);
  });

  it('count the events since any time and give the latest event as SQLite', async () => {
    const r = rng(7);
    const sinces = [0, -1e15, NOW, NOW - 30 * DAY, NOW - 30 * DAY + 0.25, NOW - 400 * DAY, -200 * DAY, NOW + DAY];
    for (let i = 0; i < 20; i++) sinces.push(NOW - Math.floor(r() * 500 * DAY) + (r() < 0.3 ? 0.25 : 0));
    let nonEmpty = 0;
    for (const since of sinces) {
      for (const pid of [...projects, '999']) {
        const x = await a.s.services.analytics.stats(pid, since);
        expect(await b.s.services.analytics.stats(pid, since), `${pid} since ${since}`).toEqual(x);
        if (x.events > 0) nonEmpty++;
      }
    }
    expect(nonEmpty).toBeGreaterThan(20);
  });
});
