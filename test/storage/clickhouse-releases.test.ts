/**
 * Issue 20: release health (rollups and activity) in ClickHouse (schema.ts migration 10,
 * src/storage/clickhouse/release-store.ts). Runs in the `clickhouse-chdb` project (ClickHouse 26
 * in-process) and the `scale-out` project (clickhouse-server 18.16, control data in PostgreSQL).
 * - releases seen through one server's ingest are read, with their health, by a second server on
 *   the same ClickHouse database, and nothing goes to SQLite's release tables;
 * - a batch whose ClickHouse insert fails is not acknowledged;
 * - seeded random span batches (services, environments, versions and none, silences, late batches
 *   filling gaps, errors, child spans, zero and fractional durations) give the same release reads
 *   (activity, streams, version keys, totals, series) and the same releases.list / releases.get
 *   answers as SQLite;
 * - `migrate --to-clickhouse` copies SQLite's cells and segments (approximate starts too), reads
 *   answer as SQLite's before and after more spans arrive, and a second copy is refused;
 * - retention drops and deletes them by day with the rollups' period.
 */
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { rng } from '../../bench/lib.js';
import type { SpanRecord } from '../../src/domain/telemetry-types.js';
import type { Totals } from '../../src/domain/releases/health.js';
import { releaseBatch, withReleaseRollups } from '../../src/storage/release-rollups.js';
import { createReleasesRepo, sqliteReleasesReader, type ReleasesReader, type SeriesBucket } from '../../src/storage/releases-repo.js';
import { createChReleasesReader, createChReleaseStore } from '../../src/storage/clickhouse/release-store.js';
import { copyReleaseRollupsToClickHouse, CopyRefusedError } from '../../src/storage/clickhouse/migrate.js';
import { clickHouseMutationsPending, expireClickHouseReleaseRollups } from '../../src/storage/clickhouse/retention.js';
import { createWriteBatcher } from '../../src/storage/write-batcher.js';
import type { ChEngine } from '../../src/storage/clickhouse/client.js';
import type { TelemetryWriter } from '../../src/storage/telemetry-store.js';
import { api, startTestServer, type TestServer } from '../helpers/server.js';
import { startSecondServer, type SecondServer } from '../support/second-server.js';
import { bodyDiffs, compareOnBoth } from '../support/body-diffs.js';
import { useChStore } from '../support/clickhouse-store-fixture.js';
import { deploy, requests, sendSpans } from '../operations/releases-fixtures.js';

const mode = process.env.SIGHTLINE_TEST_CLICKHOUSE;
const MIN = 60_000;
const HOUR = 60 * MIN;
const DAY = 24 * HOUR;
const NOW = Date.parse('2026-05-20T10:30:00.000Z');
const T0 = NOW - 4 * DAY;
const iso = (ms: number) => new Date(ms).toISOString();

let n = 0;
const resources = new Map<string, Record<string, string>>();
/** A span of a stream and version (a root server span, or a child), sharing resource objects as a batch does. */
function span(service: string, environment: string, version: string, at: number, ms: number, o: { error?: boolean; child?: boolean } = {}): SpanRecord {
  const key = `${service}\u0000${environment}\u0000${version}`;
  let resource = resources.get(key);
  if (!resource) {
    resource = { 'service.name': service };
    if (environment) resource['deployment.environment.name'] = environment;
    if (version) resource['service.version'] = version;
    resources.set(key, resource);
  }
  n++;
  return {
    resource,
    scope: { name: 's', version: '1', attributes: {} },
    service_name: service,
    trace_id: n.toString(16).padStart(32, '0'),
    span_id: n.toString(16).padStart(16, '0'),
    parent_span_id: o.child ? 'ab'.repeat(8) : null,
    trace_state: '',
    name: 'GET /x',
    kind: o.child ? 1 : 2,
    start_ms: at,
    end_ms: at + ms,
    status_code: o.error ? 2 : 0,
    status_message: '',
    attributes: {},
    events: [],
    links: [],
  };
}

const SERVICES = ['api', 'worker', 'Ünï svc'];
const ENVS = ['production', 'staging', ''];
const VERSIONS = ['1.0', '1.1', '2.0-rc', ''];

/** Seeded span batches: bursts of a few minutes to two hours, silences between them, late batches that fill gaps. */
function makeBatches(seed: number): SpanRecord[][] {
  const r = rng(seed);
  const pick = <T,>(xs: readonly T[]) => xs[Math.floor(r() * xs.length)]!;
  const batches: SpanRecord[][] = [];
  for (let b = 0; b < 70; b++) {
    const batch: SpanRecord[] = [];
    for (let g = 1 + Math.floor(r() * 3); g > 0; g--) {
      const svc = r() < 0.03 ? '' : pick(SERVICES);
      const env = pick(ENVS);
      const ver = pick(VERSIONS);
      const start = T0 + Math.floor(r() * 4 * DAY) + (r() < 0.3 ? 0.25 : 0);
      const burst = r() < 0.5 ? Math.floor(r() * 10 * MIN) : Math.floor(r() * 2 * HOUR);
      for (let i = 1 + Math.floor(r() * 40); i > 0; i--) {
        const x = r();
        const ms = x < 0.05 ? 0 : x < 0.1 ? 0.004 : x < 0.9 ? Math.floor(r() * 400) + r() : 1000 + Math.floor(r() * 5000);
        batch.push(span(svc, env, ver, start + Math.floor(r() * burst), ms, { error: r() < 0.12, child: r() < 0.3 }));
      }
    }
    batches.push(batch);
  }
  return batches;
}

const byKey = <T,>(rows: T[]) => [...rows].sort((a, b) => (JSON.stringify(a) < JSON.stringify(b) ? -1 : 1));
const sketchOf = (t: { sketch: Map<number, number> }) => [...t.sketch.entries()].filter(([, c]) => c).sort((a, b) => a[0] - b[0]);
const totalsOf = (t: Totals) => ({ requests: t.requests, errors: t.errors, sketch: sketchOf(t) });
const seriesOf = (s: SeriesBucket[]) => s.map((p) => ({ t: p.t, requests: p.requests, errors: p.errors, sketch: sketchOf(p) }));

/** Every release read of `a` and `b` over seeded windows: the same answers. Returns how many held data. */
async function compareReads(a: ReleasesReader, b: ReleasesReader, pid: string, seed: number, streams: { service: string; environment: string }[]): Promise<number> {
  const r = rng(seed);
  let withData = 0;
  const same = async (label: string, f: (x: ReleasesReader) => Promise<unknown>) => {
    const x = await f(a);
    const y = await f(b);
    expect(bodyDiffs(x, y), label).toEqual([]);
    if (JSON.stringify(x).length > 60) withData++;
  };
  await same('versionKeys', async (x) => byKey(await x.versionKeys(pid)));
  const sinces = [-Infinity, T0 - DAY, NOW + DAY, ...Array.from({ length: 6 }, () => T0 + Math.floor(r() * 4 * DAY))];
  for (const since of sinces) {
    await same(`activity since ${since}`, async (x) => byKey(await x.activity(pid, since)));
    for (const s of streams) await same(`activity ${s.service}/${s.environment} since ${since}`, async (x) => byKey(await x.activity(pid, since, s)));
    const to = since + Math.floor(r() * 2 * DAY);
    await same(`streams ${since}..${to}`, async (x) => byKey(await x.streams(pid, since, to)));
  }
  for (let i = 0; i < 40; i++) {
    const s = streams[Math.floor(r() * streams.length)]!;
    const a0 = T0 - HOUR + Math.floor(r() * 4 * DAY) + (r() < 0.3 ? 0.5 : 0);
    const b0 = a0 + (r() < 0.5 ? Math.floor(r() * 3 * HOUR) : Math.floor(r() * 2 * DAY));
    await same(`totals ${s.service}/${s.environment} ${a0}..${b0}`, async (x) => totalsOf(await x.totals(pid, s.service, s.environment, a0, b0)));
    const bucket = [MIN, 5 * MIN, HOUR][i % 3]!;
    await same(`series ${s.service}/${s.environment} ${a0}..${b0}`, async (x) => seriesOf(await x.series(pid, s.service, s.environment, a0, Math.min(b0, a0 + 60 * bucket), bucket)));
  }
  return withData;
}

const allStreams = SERVICES.flatMap((service) => ENVS.map((environment) => ({ service, environment })));

describe.skipIf(mode !== 'server' && mode !== 'chdb')('release health in ClickHouse', () => {
  describe('two servers on one ClickHouse database', () => {
    let a: TestServer;
    let b: SecondServer;
    let clock = NOW;

    beforeAll(async () => {
      a = await startTestServer({ now: () => clock });
      b = await startSecondServer(a, { now: () => clock });
    });
    afterAll(async () => {
      await b?.close();
      await a?.close();
    });

    it("reads on either server the releases and health of both servers' spans, and keeps them out of SQLite", async () => {
      const s = { service: 'web', environment: 'production' };
      const viaB = { ...a, url: b.url } as TestServer;
      // 1.0 through the first server, 1.1 (an hour later) through the second.
      await sendSpans(a, { ...s, version: '1.0' }, requests(NOW - 3 * HOUR, NOW - 60 * MIN, 200, { errors: 2, ms: 20 }));
      await sendSpans(viaB, { ...s, version: '1.1' }, requests(NOW - 60 * MIN, NOW, 200, { errors: 20, ms: 50 }));
      const list = async (url: string) => (await (await fetch(`${url}/v1/projects/${a.projectId}/releases?service_name=web`, { headers: { 'x-service-key': a.keys.admin } })).json()) as any; // eslint-disable-line @typescript-eslint/no-explicit-any
      const onA = await list(a.url);
      const onB = await list(b.url);
      expect(onB).toEqual(onA);
      expect(onA.data.map((r: { version: string; confidence: string; is_current: boolean }) => [r.version, r.confidence, r.is_current])).toEqual([
        ['1.1', 'inferred', true],
        ['1.0', 'inferred', false],
      ]);
      expect(onA.data[0].comparison).toBe('regressed');
      const get = async (url: string) => (await fetch(`${url}/v1/projects/${a.projectId}/releases/${onA.data[0].id}`, { headers: { 'x-service-key': a.keys.admin } })).json();
      const detail = (await get(b.url)) as { health: { current: { request_count: number; error_count: number }; previous: { request_count: number; error_count: number } } };
      expect(await get(a.url)).toEqual(detail);
      // The compared windows hold 1.1's requests (the second server's) and 1.0's (the first's).
      expect(detail.health.current.request_count).toBeGreaterThan(150);
      expect(detail.health.current.error_count).toBeGreaterThan(10);
      expect(detail.health.previous.request_count).toBeGreaterThan(50);
      for (const t of ['release_rollup_1m', 'release_rollup_1h', 'release_activity']) expect(a.s.db.prepare(`SELECT count(*) FROM ${t}`).pluck().get(), t).toBe(0);
      const engine = a.s.services.clickhouse!.engine;
      expect((await engine.query<{ v: string }>(`SELECT DISTINCT version AS v FROM release_activity ORDER BY v`)).map((x) => x.v)).toEqual(['1.0', '1.1']);
      clock = NOW + 1;
    });
  });

  describe('the store', () => {
    const fx = useChStore();

    it('does not acknowledge a span batch whose release rows ClickHouse refused', async () => {
      const broken: ChEngine = { ...fx.engine, insert: async () => Promise.reject(new Error('ClickHouse is down')) };
      const store = createChReleaseStore(broken);
      const base: TelemetryWriter = { insertSpans: (_p, rows) => rows.length, insertLogs: () => 0, insertMetricPoints: () => 0 };
      const writer = withReleaseRollups(fx.db, base, store);
      const batch = createWriteBatcher(fx.db, 512, [store.participant]);
      await expect(batch(() => writer.insertSpans('8', [span('api', 'prod', '1.0', NOW, 5)], 'otlp', NOW))).rejects.toThrow('ClickHouse is down');
      expect(Number((await fx.engine.query<{ n: number }>('SELECT count() AS n FROM release_activity WHERE project_id = 8'))[0]!.n)).toBe(0);
    });
  });

  describe('the same reads as SQLite over seeded span batches', () => {
    let lite: TestServer;
    let ch: TestServer;
    const batches = makeBatches(20);

    beforeAll(async () => {
      lite = await startTestServer({ clickhouse: false, now: () => NOW });
      ch = await startTestServer({ now: () => NOW });
      expect(ch.projectId).toBe(lite.projectId);
      for (const t of [lite, ch]) {
        // Deployment records of some versions (confirmed releases), the same on both.
        let i = 0;
        for (const [service, environment, version, at] of [['api', 'production', '1.1', T0 + DAY], ['worker', 'staging', '2.0-rc', T0 + 2 * DAY], ['api', 'production', '1.0', T0 + 3 * DAY]] as const) {
          await deploy(t, { service, environment, version }, at, { deployment_id: `d-${++i}` });
        }
        const jobs = batches.map((spans) => t.s.services.writeBatch(() => t.s.services.telemetry.insertSpans(t.projectId, spans, 'otlp', NOW)));
        await Promise.all(jobs);
      }
    }, 120_000);
    afterAll(async () => {
      await lite?.close();
      await ch?.close();
    });

    it('keeps the rollups in ClickHouse only', async () => {
      expect(ch.s.db.prepare('SELECT count(*) FROM release_rollup_1m').pluck().get()).toBe(0);
      expect(lite.s.db.prepare('SELECT count(*) FROM release_rollup_1m').pluck().get()).toBeGreaterThan(100);
      const [m] = await ch.s.services.clickhouse!.engine.query<{ n: number }>('SELECT count() AS n FROM release_rollup_1m');
      expect(Number(m!.n)).toBeGreaterThan(100);
    });

    it('answers every release read as SQLite', async () => {
      const withData = await compareReads(lite.s.services.releases, ch.s.services.releases, lite.projectId, 7, allStreams);
      expect(withData).toBeGreaterThan(100);
    });

    it('answers releases.list and releases.get as SQLite', async () => {
      const window = `from=${iso(T0 - DAY)}&to=${iso(NOW)}`;
      const ids = ((await api(lite, 'GET', `/v1/projects/${lite.projectId}/releases?${window}&limit=100`, { key: lite.keys.admin })).body.data as { id: string }[]).map((r) => r.id);
      expect(ids.length).toBeGreaterThan(10);
      const paths = [
        '/releases',
        `/releases?${window}&limit=100`,
        `/releases?from=${iso(T0 + DAY)}&to=${iso(T0 + 2 * DAY)}`,
        `/releases?${window}&environment=production`,
        `/releases?${window}&environment=`,
        `/releases?${window}&service_name=worker&confidence=inferred`,
      ];
      const r = await compareOnBoth(lite, ch, paths, (body) => body.data.length > 0);
      expect(r).toEqual({ ok: paths.length, nonEmpty: paths.length });
      // releases.get: deployment record ids are the servers' own (random).
      let withHealth = 0;
      for (const id of ids) {
        const [x, y] = await Promise.all([lite, ch].map(async (t) => {
          const res = await api(t, 'GET', `/v1/projects/${t.projectId}/releases/${id}`, { key: t.keys.admin });
          expect(res.status, id).toBe(200);
          for (const d of res.body.release.deployments) delete d.id;
          return res.body;
        }));
        expect(bodyDiffs(x, y), id).toEqual([]);
        if (x.health.current.request_count > 0) withHealth++;
      }
      expect(withHealth).toBeGreaterThan(10);
    });
  });

  describe('migrate --to-clickhouse', () => {
    const fx = useChStore();

    it('copies the cells and segments (approximate starts too), reads as SQLite before and after more spans, and refuses a second copy', async () => {
      const lite = await startTestServer({ clickhouse: false, now: () => NOW });
      try {
        const pid = lite.projectId;
        const [first, ...rest] = makeBatches(5);
        for (const spans of [first!, ...rest.slice(0, 40)]) await lite.s.services.writeBatch(() => lite.s.services.telemetry.insertSpans(pid, spans, 'otlp', NOW));
        // Segments backfilled to the hour before migration 014 (start_approximate), one touching a later segment's start.
        const ins = lite.s.db.prepare('INSERT INTO release_activity (project_id, service_name, environment, version, start_ms, end_ms, approx) VALUES (?, ?, ?, ?, ?, ?, 1)');
        ins.run(pid, 'api', 'production', '0.9', T0 - 3 * DAY, T0 - 3 * DAY + 40 * MIN);
        ins.run(pid, 'legacy', '', '0.1', T0 - 2 * DAY, T0 - 2 * DAY + 5 * MIN);
        const report = await copyReleaseRollupsToClickHouse(lite.s.db, fx.engine, { batch: 50 });
        const count = (t: string) => lite.s.db.prepare(`SELECT count(*) FROM ${t}`).pluck().get() as number;
        expect(report).toMatchObject({ release_rollups: count('release_rollup_1m') + count('release_rollup_1h'), release_activity: count('release_activity') });
        const sqlite = sqliteReleasesReader(createReleasesRepo(lite.s.db));
        const copied = createChReleasesReader(fx.engine, createReleasesRepo(lite.s.db));
        const streams = [...allStreams, { service: 'legacy', environment: '' }];
        expect(await compareReads(sqlite, copied, pid, 11, streams)).toBeGreaterThan(50);
        expect((await copied.activity(pid, -Infinity, { service: 'legacy', environment: '' })).map((s) => s.approx)).toEqual([true]);

        // More spans after the copy: SQLite merges them into its rows, ClickHouse appends; the reads agree.
        const store = createChReleaseStore(fx.engine);
        for (const spans of [...rest.slice(40), [span('api', 'production', '0.9', T0 - 3 * DAY + 50 * MIN, 3)]]) {
          await lite.s.services.writeBatch(() => lite.s.services.telemetry.insertSpans(pid, spans, 'otlp', NOW));
          store.add(pid, releaseBatch(spans));
        }
        await store.flush();
        expect(await compareReads(sqlite, copied, pid, 12, streams)).toBeGreaterThan(50);
        const v09 = await copied.activity(pid, -Infinity, { service: 'api', environment: 'production' });
        expect(v09.filter((s) => s.version === '0.9').map((s) => [s.start, s.end, s.approx])).toEqual([[T0 - 3 * DAY, T0 - 3 * DAY + 50 * MIN, true]]);
        await expect(copyReleaseRollupsToClickHouse(lite.s.db, fx.engine)).rejects.toThrow(CopyRefusedError);
      } finally {
        await lite.close();
      }
    });
  });

  describe('retention', () => {
    const fx = useChStore();

    it("drops days every project's period has passed, deletes a shorter-lived project's older rows, and keeps the rest", async () => {
      const store = createChReleaseStore(fx.engine);
      for (const pid of ['1', '2']) for (const d of [40, 10, 2]) store.add(pid, releaseBatch([span('api', 'prod', `v${d}`, NOW - d * DAY, 5)]));
      await store.flush();
      const left = async () => {
        const out: string[] = [];
        for (const t of ['release_rollup_1m', 'release_rollup_1h', 'release_activity']) {
          const rows = await fx.engine.query<{ p: number; v: string }>(`SELECT project_id AS p, version AS v FROM ${t} ORDER BY p, v`);
          out.push(rows.map((r) => `${r.p}:${r.v}`).join(' '));
        }
        return out;
      };
      expect(await left()).toEqual(Array(3).fill('1:v10 1:v2 1:v40 2:v10 2:v2 2:v40'));
      const expired = await expireClickHouseReleaseRollups(fx.engine, [
        { projectId: '1', cutoffMs: NOW - 7 * DAY },
        { projectId: '2', cutoffMs: NOW - 30 * DAY },
      ]);
      for (let i = 0; i < 200 && (await clickHouseMutationsPending(fx.engine)); i++) await new Promise((r) => setTimeout(r, 50));
      expect(await left()).toEqual(Array(3).fill('1:v2 2:v10 2:v2'));
      expect(expired).toBe(9);
    });
  });
});
