/**
 * releases.list and releases.get over HTTP on hand-built deployment records and spans: derivation,
 * serving (rollback by record and by silence, overlap tie-breaks), every health edge, the list's
 * window, filters, limits and scopes, and 404s.
 */
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { api, startTestServer, type TestServer } from '../helpers/server.js';
import { deploy, MIN, requests, sendSpans } from './releases-fixtures.js';

const T0 = Date.parse('2026-03-01T00:00:00.000Z');
const HOUR = 60 * MIN;
const DAY = 24 * HOUR;
let clock = T0;
let t: TestServer;
let reader: string;

const iso = (ms: number) => new Date(ms).toISOString();
const list = (q: Record<string, string | number> = {}, key = reader) =>
  api(t, 'GET', `/v1/projects/${t.projectId}/releases?${new URLSearchParams(Object.entries(q).map(([k, v]): [string, string] => [k, String(v)]))}`, { key });
const get = (id: string, key = reader) => api(t, 'GET', `/v1/projects/${t.projectId}/releases/${id}`, { key });
async function release(service: string, version: string, environment = 'production') {
  const r = await list({ service_name: service, environment, limit: 100 });
  expect(r.status, JSON.stringify(r.body)).toBe(200);
  const item = r.body.data.find((x: { version: string }) => x.version === version);
  expect(item, `${service} ${version}`).toBeTruthy();
  const d = await get(item.id);
  expect(d.status, JSON.stringify(d.body)).toBe(200);
  return d.body;
}
const servingOf = (detail: { release: { serving: { started_at: string; ended_at: string | null }[] } }) =>
  detail.release.serving.map((s) => [(Date.parse(s.started_at) - T0) / MIN, s.ended_at === null ? null : (Date.parse(s.ended_at) - T0) / MIN]);

beforeAll(async () => {
  t = await startTestServer({ now: () => clock });
  reader = t.mintKey(['deployments:read', 'errors:read']);
  clock = T0 + 3 * HOUR;
});
afterAll(() => t.close());

describe('release derivation and serving', () => {
  it('derives confirmed releases from records; a record of the older version after a newer one is a rollback that adds a serving item, with the same id', async () => {
    const s = { service: 'web', environment: 'production' };
    await deploy(t, { ...s, version: '1.0.0' }, T0, { commit_sha: 'aaaaaaa', branch: 'main' });
    await deploy(t, { ...s, version: '1.1.0' }, T0 + 60 * MIN, { commit_sha: 'bbbbbbb', branch: 'main' });
    await sendSpans(t, { ...s, version: '1.0.0' }, requests(T0, T0 + 180 * MIN, 60));
    await sendSpans(t, { ...s, version: '1.1.0' }, requests(T0 + 60 * MIN, T0 + 95 * MIN, 20));
    const before = (await list({ service_name: 'web' })).body.data.find((x: { version: string }) => x.version === '1.0.0');
    await deploy(t, { ...s, version: '1.0.0' }, T0 + 90 * MIN, { commit_sha: 'ccccccc', branch: 'revert' });

    const v10 = await release('web', '1.0.0');
    expect(v10.release.id).toBe(before.id);
    expect(v10.release.id).toMatch(/^rel_/);
    expect(servingOf(v10)).toEqual([[0, 60], [90, null]]);
    expect(v10.release).toMatchObject({
      confidence: 'confirmed',
      started_at: iso(T0),
      start_approximate: false,
      ended_at: null,
      is_current: true,
      commit_sha: 'ccccccc',
      deployment_count: 2,
      previous_release_id: null,
    });
    expect(v10.release.commits).toEqual([{ sha: 'ccccccc', branch: 'revert' }, { sha: 'aaaaaaa', branch: 'main' }]);
    expect(v10.release.deployments.map((d: { deployment_id: string; started_at: string }) => d.started_at)).toEqual([iso(T0 + 90 * MIN), iso(T0)]);
    expect(v10.release.first_seen).toBe(iso(T0 + 1.5 * MIN));

    const v11 = await release('web', '1.1.0');
    expect(servingOf(v11)).toEqual([[60, 90]]);
    expect(v11.release).toMatchObject({ is_current: false, ended_at: iso(T0 + 90 * MIN), previous_release_id: v10.release.id });
    expect(v11.previous_release.id).toBe(v10.release.id);
  });

  it('takes a rollback from 15 minutes of silence of the serving version while an older one keeps sending, without any record', async () => {
    const s = { service: 'worker', environment: 'production' };
    await sendSpans(t, { ...s, version: 'w1' }, requests(T0, T0 + 180 * MIN, 180));
    await sendSpans(t, { ...s, version: 'w2' }, requests(T0 + 30 * MIN, T0 + 60 * MIN, 30));
    const w1 = await release('worker', 'w1');
    const w2 = await release('worker', 'w2');
    // w2's last span starts at 59.5 min: w1 serves again 15 minutes later.
    expect(servingOf(w1)).toEqual([[0.5, 30.5], [74.5, null]]);
    expect(servingOf(w2)).toEqual([[30.5, 74.5]]);
    expect(w2.release).toMatchObject({ confidence: 'inferred', first_seen: iso(T0 + 30.5 * MIN), last_seen: iso(T0 + 59.5 * MIN), commit_sha: null, deployment_count: 0 });
  });

  it('serves the later-started of overlapping versions whatever their text, and at equal start the version with a record', async () => {
    const s = { service: 'tie', environment: 'production' };
    await sendSpans(t, { ...s, version: '9.9.9' }, requests(T0, T0 + 120 * MIN, 60));
    await sendSpans(t, { ...s, version: '0.0.1' }, requests(T0 + 40 * MIN, T0 + 180 * MIN, 70));
    // Equal start at 150 min: "b" has a record, "a" only telemetry, and "a" is seen last; the record wins.
    await deploy(t, { ...s, version: 'b' }, T0 + 150 * MIN);
    await sendSpans(t, { ...s, version: 'b' }, [{ at: T0 + 150 * MIN }, ...requests(T0 + 150 * MIN, T0 + 180 * MIN, 30)]);
    await sendSpans(t, { ...s, version: 'a' }, [{ at: T0 + 150 * MIN }, { at: T0 + 179 * MIN }]);
    expect(servingOf(await release('tie', '9.9.9'))).toEqual([[1, 41]]);
    expect(servingOf(await release('tie', '0.0.1'))).toEqual([[41, 150]]);
    expect(servingOf(await release('tie', 'b'))).toEqual([[150, null]]);
    const all = (await list({ service_name: 'tie' })).body.data.map((x: { version: string }) => x.version);
    expect(all).toEqual(['b', '0.0.1', '9.9.9']); // newest first; "a" never served
  });
});

describe('release health', () => {
  // Previous release serves [0, 60) min, current from 60; now = 180 → windows of 60 minutes.
  type Side = { n: number; errors?: number; ms?: number };
  const scenarios: Array<{ service: string; prev: Side; cur: Side; expect: [string, string] }> = [
    { service: 'h-49', prev: { n: 100 }, cur: { n: 49, errors: 10 }, expect: ['insufficient_data', 'too_few_requests'] },
    { service: 'h-50', prev: { n: 100, errors: 1 }, cur: { n: 50, errors: 1 }, expect: ['regressed', 'error_rate'] }, // 1% → 2%
    { service: 'h-err-1pt', prev: { n: 200, errors: 4 }, cur: { n: 200, errors: 6 }, expect: ['regressed', 'error_rate'] }, // 2% → 3%
    { service: 'h-err-0.8pt', prev: { n: 500, errors: 10 }, cur: { n: 500, errors: 14 }, expect: ['unchanged', 'no_threshold_crossed'] }, // 2% → 2.8%
    { service: 'h-err-down', prev: { n: 200, errors: 6 }, cur: { n: 200, errors: 4 }, expect: ['improved', 'error_rate'] },
    { service: 'h-p95-30pct', prev: { n: 100, ms: 100 }, cur: { n: 100, ms: 130 }, expect: ['regressed', 'p95_latency'] },
    { service: 'h-p95-15pct', prev: { n: 100, ms: 100 }, cur: { n: 100, ms: 115 }, expect: ['unchanged', 'no_threshold_crossed'] },
    { service: 'h-p95-6ms', prev: { n: 100, ms: 10 }, cur: { n: 100, ms: 16 }, expect: ['regressed', 'p95_latency'] }, // +60%, +6 ms
    { service: 'h-p95-4ms', prev: { n: 100, ms: 10 }, cur: { n: 100, ms: 14 }, expect: ['unchanged', 'no_threshold_crossed'] }, // +40% but +4 ms
    { service: 'h-p95-down', prev: { n: 100, ms: 100 }, cur: { n: 100, ms: 60 }, expect: ['improved', 'p95_latency'] },
    { service: 'h-mixed', prev: { n: 200, errors: 2, ms: 100 }, cur: { n: 200, errors: 8, ms: 50 }, expect: ['regressed', 'error_rate'] }, // errors up 3 pts, p95 halved
  ];

  beforeAll(async () => {
    for (const sc of scenarios) {
      const s = { service: sc.service, environment: 'production' };
      await deploy(t, { ...s, version: 'old' }, T0);
      await deploy(t, { ...s, version: 'new' }, T0 + 60 * MIN);
      await sendSpans(t, { ...s, version: 'old' }, requests(T0, T0 + 60 * MIN, sc.prev.n, sc.prev));
      await sendSpans(t, { ...s, version: 'new' }, requests(T0 + 60 * MIN, T0 + 120 * MIN, sc.cur.n, sc.cur));
    }
  });

  for (const sc of scenarios) {
    it(`${sc.service}: ${sc.prev.n} requests (${sc.prev.errors ?? 0} errors, ${sc.prev.ms ?? 10} ms) → ${sc.cur.n} (${sc.cur.errors ?? 0}, ${sc.cur.ms ?? 10} ms) is ${sc.expect.join(' by ')}`, async () => {
      const d = await release(sc.service, 'new');
      expect([d.health.comparison, d.health.decided_by]).toEqual(sc.expect);
      expect(d.release.comparison).toBe(sc.expect[0]);
      const item = (await list({ service_name: sc.service })).body.data.find((x: { version: string }) => x.version === 'new');
      expect(item.comparison).toBe(sc.expect[0]);
    });
  }

  it('reports equal windows, both sides\' figures, deltas, a per-minute series and the new issues of the service and environment', async () => {
    const s = { service: 'h-p95-30pct', environment: 'production' };
    await sendSpans(t, { ...s, version: 'new' }, [{ at: T0 + 70 * MIN, error: true, exception: { type: 'CheckoutError', message: 'card declined' } }]);
    await sendSpans(t, { service: 'other-svc', environment: 'production', version: 'x' }, [{ at: T0 + 70 * MIN, error: true, exception: { type: 'OtherError', message: 'elsewhere' } }]);
    const d = await release('h-p95-30pct', 'new');
    const h = d.health;
    expect(h.window).toEqual({ from: iso(T0 + 60 * MIN), to: iso(T0 + 120 * MIN) });
    expect(h.previous_window).toEqual({ from: iso(T0), to: iso(T0 + 60 * MIN) });
    expect(h.previous).toMatchObject({ request_count: 100, error_count: 0, error_rate: 0 });
    expect(h.current).toMatchObject({ request_count: 101, error_count: 1 });
    expect(h.current.throughput_per_min).toBeCloseTo(101 / 60, 3);
    expect(Math.abs(h.current.p95_ms - 130) / 130).toBeLessThanOrEqual(0.01);
    expect(Math.abs(h.previous.p95_ms - 100) / 100).toBeLessThanOrEqual(0.01);
    expect(h.deltas.error_rate_points).toBeCloseTo(100 / 101, 3);
    expect(h.deltas.p95_percent).toBeGreaterThan(27);
    expect(h.series).toHaveLength(60);
    expect(h.series[0].time).toBe(iso(T0 + 60 * MIN));
    expect(h.series.reduce((n: number, p: { request_count: number }) => n + p.request_count, 0)).toBe(101);
    expect(h.series.reduce((n: number, p: { previous_request_count: number }) => n + p.previous_request_count, 0)).toBe(100);
    expect(h.new_issues.count).toBe(1);
    expect(h.new_issues.items[0].title).toContain('CheckoutError');
    expect(h.new_issues.truncated).toBe(false);
  });

  it('is insufficient_data with previous null and the release\'s own serving time as window when there is no previous release or under 5 minutes', async () => {
    const first = await release('h-49', 'old');
    expect(first.health).toMatchObject({ comparison: 'insufficient_data', decided_by: 'no_previous_release', previous: null, previous_window: null, deltas: null });
    expect(first.health.window).toEqual({ from: iso(T0), to: iso(T0 + 60 * MIN) });
    const s = { service: 'h-short', environment: 'production' };
    await deploy(t, { ...s, version: 'a' }, T0);
    await deploy(t, { ...s, version: 'b' }, T0 + 4 * MIN);
    await deploy(t, { ...s, version: 'c' }, T0 + 60 * MIN);
    const b = await release('h-short', 'b');
    expect(b.health).toMatchObject({ comparison: 'insufficient_data', decided_by: 'window_under_5_minutes', previous: null });
    expect(b.health.window).toEqual({ from: iso(T0 + 4 * MIN), to: iso(T0 + 60 * MIN) });
  });
});

describe('releases.list', () => {
  it('filters by environment (empty = none), service and confidence, and lists environments and services before the filters', async () => {
    await deploy(t, { service: 'noenv', version: 'n1' }, T0 + 10 * MIN);
    await sendSpans(t, { service: 'noenv', version: 'n2' }, requests(T0 + 20 * MIN, T0 + 40 * MIN, 5));
    await deploy(t, { service: 'web', environment: 'staging', version: 's1' }, T0 + 10 * MIN);
    const none = await list({ environment: '' });
    expect(none.status).toBe(200);
    expect(none.body.data.map((x: { version: string; environment: string }) => [x.version, x.environment])).toEqual([['n2', ''], ['n1', '']]);
    expect(none.body.environments).toEqual(['', 'production', 'staging']);
    expect(none.body.services).toContain('web');
    expect(none.body.services).toContain('worker');
    const inferred = await list({ environment: '', confidence: 'inferred' });
    expect(inferred.body.data.map((x: { version: string }) => x.version)).toEqual(['n2']);
    const staging = await list({ environment: 'staging', service_name: 'web' });
    expect(staging.body.data.map((x: { version: string }) => x.version)).toEqual(['s1']);
  });

  it('lists a release that served at any time in the window, defaults to 30 days and rejects reversed or over-90-day windows', async () => {
    const ok = await list({ from: iso(T0 + 61 * MIN), to: iso(T0 + 62 * MIN), service_name: 'web', environment: 'production' });
    expect(ok.body.data.map((x: { version: string }) => x.version)).toEqual(['1.1.0']);
    expect(ok.body).toMatchObject({ from: iso(T0 + 61 * MIN), to: iso(T0 + 62 * MIN) });
    const dflt = await list();
    expect(dflt.body).toMatchObject({ from: iso(clock - 30 * DAY), to: iso(clock) });
    const before = await list({ from: iso(T0 - 40 * DAY), to: iso(T0 - 10 * DAY) });
    expect(before.body.data).toEqual([]);
    expect((await list({ from: iso(T0), to: iso(T0 - 1) })).status).toBe(422);
    const long = await list({ from: iso(T0 - 91 * DAY), to: iso(T0) });
    expect(long.status).toBe(422);
    expect(long.body).toMatchObject({ code: 'invalid_window' });
    expect((await list({ from: iso(T0 - 90 * DAY), to: iso(T0) })).status).toBe(200);
  });

  it('answers 400 for an unknown confidence, a limit outside 1 to 100 and an unknown field', async () => {
    expect((await list({ confidence: 'guessed' })).status).toBe(400);
    expect((await list({ limit: 101 })).status).toBe(400);
    expect((await list({ limit: 0 })).status).toBe(400);
    await expect(t.s.core.invoke('releases.list', { project_id: t.projectId, bogus: 1 }, { kind: 'api_key', projectId: t.projectId, orgId: t.organizationId, scopes: ['*'] } as never)).rejects.toMatchObject({ status: 400 });
  });

  it('sets comparison on the first 25 items only and says when the limit truncated the list', async () => {
    for (let i = 0; i < 27; i++) await deploy(t, { service: 'many', environment: 'production', version: `m${i}` }, T0 + i * MIN);
    const r = await list({ service_name: 'many', limit: 100 });
    expect(r.body.data).toHaveLength(27);
    expect(r.body.data.slice(0, 25).every((x: { comparison: string | null }) => x.comparison !== null)).toBe(true);
    expect(r.body.data.slice(25).map((x: { comparison: string | null }) => x.comparison)).toEqual([null, null]);
    expect(r.body.truncated).toBe(false);
    const page = await list({ service_name: 'many', limit: 5 });
    expect(page.body.data.map((x: { version: string }) => x.version)).toEqual(['m26', 'm25', 'm24', 'm23', 'm22']);
    expect(page.body.truncated).toBe(true);
  });
});

describe('access and 404s', () => {
  it('needs both deployments:read and errors:read', async () => {
    expect((await list({}, t.mintKey(['deployments:read']))).status).toBe(403);
    expect((await list({}, t.mintKey(['errors:read']))).status).toBe(403);
    const id = (await list({ service_name: 'web', environment: 'production' })).body.data[0].id;
    expect((await get(id, t.mintKey(['deployments:read']))).status).toBe(403);
    expect((await get(id, t.mintKey(['read']))).status).toBe(200);
  });

  it('answers 404 for a malformed or unknown id and for another project\'s release', async () => {
    expect((await get('rel_nope')).status).toBe(404);
    expect((await get('rel_AAAAAAAAAAAAAAAAAAAAAA')).status).toBe(404);
    const id = (await list({ service_name: 'web', environment: 'production' })).body.data[0].id;
    const other = await api(t, 'GET', `/v1/projects/${t.otherProject.projectId}/releases/${id}`, { key: t.otherProject.adminKey });
    expect(other.status).toBe(404);
  });

  it('answers 404 for a release that did not serve in about the last 120 days, while the one serving now still answers', async () => {
    const s = { service: 'old-svc', environment: 'production' };
    await deploy(t, { ...s, version: 'o1' }, T0);
    await deploy(t, { ...s, version: 'o2' }, T0 + DAY);
    const saved = clock;
    try {
      clock = T0 + 2 * DAY;
      const ids = Object.fromEntries((await list({ service_name: 'old-svc' })).body.data.map((x: { version: string; id: string }) => [x.version, x.id]));
      expect(Object.keys(ids).sort()).toEqual(['o1', 'o2']);
      clock = T0 + DAY + 121 * DAY;
      expect((await get(ids.o1)).status).toBe(404);
      const o2 = await get(ids.o2);
      expect(o2.status, JSON.stringify(o2.body)).toBe(200);
      clock = T0 + DAY + 119 * DAY;
      expect((await get(ids.o1)).status).toBe(200);
    } finally {
      clock = saved;
    }
  });
});

describe('derived from the current deployment records', () => {
  it('a record re-sent with a new commit in the same millisecond shows at once (no stale derivation)', async () => {
    const s = { service: 'billing', environment: 'production', version: '7.0.0' };
    await deploy(t, s, T0 + 10 * MIN, { deployment_id: 'billing-7', commit_sha: 'aaaa1111' });
    expect((await release('billing', '7.0.0')).release.commit_sha).toBe('aaaa1111');
    // Same clock: the record's updated_at does not move, nor does the count of records.
    const r = await api(t, 'POST', `/v1/projects/${t.projectId}/deployments`, { key: t.keys.admin, body: { deployment_id: 'billing-7', commit_sha: 'bbbb2222' } });
    expect(r.status, JSON.stringify(r.body)).toBe(200);
    expect((await release('billing', '7.0.0')).release.commit_sha).toBe('bbbb2222');
  });
});
