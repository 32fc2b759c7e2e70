/**
 * deployments.create and deployments.list over HTTP: idempotent create-or-update by provider +
 * deployment_id, statuses, strict body, every list filter and offset pagination.
 */
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { api, startTestServer, type TestServer } from '../helpers/server.js';
import { DEPLOYMENT_STATUSES } from '../../operations/deployments.js';

const T0 = Date.parse('2026-03-01T00:00:00.000Z');
let clock = T0;
let t: TestServer;
let base: string;
let writer: string;
let readerKey: string;

beforeAll(async () => {
  t = await startTestServer({ now: () => clock });
  base = `/v1/projects/${t.projectId}/deployments`;
  writer = t.mintKey(['deployments:write']);
  readerKey = t.mintKey(['deployments:read']);
});
afterAll(() => t.close());

const rowCount = () => (t.s.db.prepare('SELECT COUNT(*) AS n FROM deployments WHERE project_id = ?').get(Number(t.projectId)) as { n: number }).n;
const create = (body: Record<string, unknown>, key = writer) => api(t, 'POST', base, { key, body });
const list = (q: Record<string, string | number> = {}, key = readerKey) =>
  api(t, 'GET', `${base}?${new URLSearchParams(Object.entries(q).map(([k, v]): [string, string] => [k, String(v)]))}`, { key });

describe('deployments.create', () => {
  it('creates a record (201), then updates it in place for the same provider and deployment_id (200)', async () => {
    const first = await create({ deployment_id: 'run-1', provider: 'github', service: 'api', version: '1.0.0', environment: 'production', status: 'building', commit_sha: 'ABCDEF1' });
    expect(first.status).toBe(201);
    expect(first.body).toMatchObject({ project_id: t.projectId, provider: 'github', deployment_id: 'run-1', service: 'api', service_name: 'api', status: 'building', commit_sha: 'abcdef1' });
    const before = rowCount();
    clock += 60_000;
    const second = await create({ deployment_id: 'run-1', provider: 'github', service: 'api', version: '1.0.0', environment: 'production', status: 'ready', finished_at: new Date(clock).toISOString() });
    expect(second.status).toBe(200);
    expect(second.body.id).toBe(first.body.id);
    expect(second.body.status).toBe('ready');
    expect(second.body.updated_at).toBe(new Date(clock).toISOString());
    expect(second.body.created_at).toBe(first.body.created_at);
    expect(rowCount()).toBe(before);
    const listed = await list({ provider: 'github' });
    expect(listed.body.data.filter((d: { deployment_id: string }) => d.deployment_id === 'run-1')).toHaveLength(1);
  });

  it('treats the same deployment_id from another provider as another record', async () => {
    const a = await create({ deployment_id: 'shared-id', provider: 'vercel' });
    const b = await create({ deployment_id: 'shared-id', provider: 'netlify' });
    expect([a.status, b.status]).toEqual([201, 201]);
    expect(a.body.id).not.toBe(b.body.id);
  });

  it('defaults provider to generic and status to unknown', async () => {
    const res = await create({ deployment_id: 'bare' });
    expect(res.status).toBe(201);
    expect(res.body).toMatchObject({ provider: 'generic', status: 'unknown' });
  });

  it.each(DEPLOYMENT_STATUSES)('accepts status %s', async (status) => {
    const res = await create({ deployment_id: `status-${status}`, provider: 'ci', status });
    expect(res.status).toBe(201);
    expect(res.body.status).toBe(status);
  });

  it('accepts every status named by the specification and no other', () => {
    expect([...DEPLOYMENT_STATUSES].sort()).toEqual(['building', 'canceled', 'failed', 'pending', 'ready', 'skipped', 'unknown']);
  });

  it('rejects a bad status, an unknown field and a missing deployment_id with 400, storing nothing', async () => {
    const before = rowCount();
    const bad = await create({ deployment_id: 'x1', status: 'done' });
    expect(bad.status).toBe(400);
    expect(bad.body).toMatchObject({ type: 'invalid_request_error', param: 'status' });
    const unknown = await create({ deployment_id: 'x2', sha: 'abc1234' });
    expect(unknown.status).toBe(400);
    expect(unknown.body).toMatchObject({ code: 'unknown_field', param: 'sha' });
    const missing = await create({ provider: 'ci' });
    expect(missing.status).toBe(400);
    expect(missing.body.param).toBe('deployment_id');
    expect(rowCount()).toBe(before);
  });

  it('accepts service_name and deployment_url as aliases of service and url', async () => {
    const res = await create({ deployment_id: 'alias', service_name: 'worker', deployment_url: 'https://deploy.example.com/1' });
    expect(res.body).toMatchObject({ service: 'worker', service_name: 'worker', url: 'https://deploy.example.com/1', deployment_url: 'https://deploy.example.com/1' });
  });

  it('needs deployments:write (deployments:read or errors:write are not enough)', async () => {
    for (const scopes of [['deployments:read'], ['errors:write'], ['events:ingest']]) {
      const res = await create({ deployment_id: 'nope' }, t.mintKey(scopes));
      expect(res.status, scopes.join()).toBe(403);
    }
    expect((await create({ deployment_id: 'via-write' }, t.mintKey(['write']))).status).toBe(201);
  });
});

describe('deployments.list', () => {
  let l: TestServer;
  let lbase: string;
  const seeded: { id: string; provider: string; environment: string; service: string; version: string; status: string; at: number }[] = [];

  beforeAll(async () => {
    l = await startTestServer();
    lbase = `/v1/projects/${l.projectId}/deployments`;
    const start = Date.parse('2026-02-01T00:00:00.000Z');
    for (let i = 0; i < 24; i++) {
      const d = {
        deployment_id: `d-${i}`,
        provider: ['github', 'vercel', 'generic'][i % 3]!,
        environment: ['production', 'staging'][i % 2]!,
        service: ['api', 'web', 'worker', 'cron'][i % 4]!,
        version: `2.${i % 6}.0`,
        status: DEPLOYMENT_STATUSES[i % DEPLOYMENT_STATUSES.length]!,
        started_at: new Date(start + i * 3_600_000).toISOString(),
      };
      const res = await api(l, 'POST', lbase, { key: l.keys.admin, body: d });
      if (res.status !== 201) throw new Error(JSON.stringify(res.body));
      seeded.push({ ...d, id: res.body.id, at: start + i * 3_600_000 });
    }
  });
  afterAll(() => l.close());

  const get = (q: Record<string, string | number>) =>
    api(l, 'GET', `${lbase}?${new URLSearchParams(Object.entries(q).map(([k, v]): [string, string] => [k, String(v)]))}`, { key: l.keys.admin });
  const newestFirst = (rows: typeof seeded) => [...rows].sort((a, b) => b.at - a.at).map((r) => r.id);

  it('lists newest first by start time with total, limit and offset', async () => {
    const res = await get({});
    expect(res.status).toBe(200);
    expect(res.body).toMatchObject({ total: 24, limit: 50, offset: 0 });
    expect(res.body.data.map((d: { id: string }) => d.id)).toEqual(newestFirst(seeded));
  });

  it('pages with limit and offset until offset + limit reaches total, without gaps or repeats', async () => {
    const ids: string[] = [];
    for (let offset = 0; ; offset += 5) {
      const res = await get({ limit: 5, offset });
      expect(res.body).toMatchObject({ total: 24, limit: 5, offset });
      ids.push(...res.body.data.map((d: { id: string }) => d.id));
      if (offset + 5 >= res.body.total) break;
    }
    expect(ids).toEqual(newestFirst(seeded));
    expect((await get({ limit: 5, offset: 100 })).body.data).toEqual([]);
  });

  it('rejects limits outside 1 to 100 and a negative offset', async () => {
    for (const q of [{ limit: 0 }, { limit: 101 }, { offset: -1 }] as Record<string, number>[]) expect((await get(q)).status, JSON.stringify(q)).toBe(400);
  });

  it.each([
    ['provider', 'vercel'],
    ['environment', 'staging'],
    ['service', 'worker'],
    ['version', '2.3.0'],
    ['status', 'ready'],
  ] as const)('filters by %s', async (name, value) => {
    const expected = newestFirst(seeded.filter((d) => d[name] === value));
    expect(expected.length).toBeGreaterThan(0);
    const res = await get({ [name]: value });
    expect(res.body.total).toBe(expected.length);
    expect(res.body.data.map((d: { id: string }) => d.id)).toEqual(expected);
  });

  it('filters by from and to (inclusive) and rejects from after to', async () => {
    const from = seeded[5]!.at;
    const to = seeded[11]!.at;
    const res = await get({ from: new Date(from).toISOString(), to: new Date(to).toISOString() });
    expect(res.body.data.map((d: { id: string }) => d.id)).toEqual(newestFirst(seeded.filter((d) => d.at >= from && d.at <= to)));
    expect(res.body.total).toBe(7);
    const reversed = await get({ from: new Date(to).toISOString(), to: new Date(from).toISOString() });
    expect(reversed.status).toBe(400);
    expect((await get({ from: '2026-02-01' })).status).toBe(400);
  });

  it('rejects an unknown status filter', async () => {
    const res = await get({ status: 'done' });
    expect(res.status).toBe(400);
    expect(res.body.param).toBe('status');
  });

  it('combines filters', async () => {
    const expected = newestFirst(seeded.filter((d) => d.environment === 'production' && d.provider === 'github'));
    const res = await get({ environment: 'production', provider: 'github' });
    expect(res.body.data.map((d: { id: string }) => d.id)).toEqual(expected);
  });

  it('never shows another project\'s deployments', async () => {
    const res = await api(l, 'GET', `/v1/projects/${l.otherProject.projectId}/deployments`, { key: l.otherProject.adminKey });
    expect(res.body).toMatchObject({ data: [], total: 0 });
  });
});
