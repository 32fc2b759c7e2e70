/**
 * feedback.list, feedback.get and feedback.update over HTTP: newest-first cursor pagination, every
 * filter, contact-field visibility, replay link resolution, status transitions.
 */
import { randomUUID } from 'node:crypto';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { api, startTestServer, type TestServer } from '../helpers/server.js';

const T0 = Date.parse('2026-03-01T00:00:00.000Z');
let clock = T0;
let t: TestServer;
let base: string;
let reader: string;
const GROUP = randomUUID();

interface Sent {
  id: string;
  created_at: number;
  message: string;
  environment: string;
  release: string;
  service: string;
  user_id: string;
  name: string;
  contact_email: string;
  url: string;
  session_id: string;
  replay_id: string;
  trace_id: string;
  error_group_id?: string;
  status: 'new' | 'reviewed' | 'archived';
}
const sent: Sent[] = [];
const N = 55;

beforeAll(async () => {
  t = await startTestServer({ now: () => clock });
  base = `/v1/projects/${t.projectId}/feedback`;
  reader = t.mintKey(['errors:read']);
  t.s.services.lookups.errorGroupExists = (projectId, id) => projectId === t.projectId && id === GROUP;
  t.s.services.lookups.replaySessionFor = (projectId, replayId) => (projectId === t.projectId && replayId === 'r-known' ? 'session-42' : null);

  for (let i = 0; i < N; i++) {
    // Three records share each timestamp (ties are broken by id), at most 18 a minute (quota 20).
    if (i % 3 === 0) clock += 10_000;
    const rec = {
      message: i % 5 === 0 ? `The EXPORT button fails (${i})` : `message ${i}`,
      environment: ['production', 'staging', 'dev'][i % 3]!,
      release: `1.0.${i % 5}`,
      service: ['web', 'api'][i % 2]!,
      user_id: `user-${i}`,
      name: i % 7 === 0 ? `Zoë Müller ${i}` : `Person ${i}`,
      contact_email: `p${i}@Example.com`,
      url: i % 4 === 0 ? `https://App.Example.com/checkout/${i}?promo=100%_off` : `https://app.example.com/home/${i}`,
      session_id: `s-${i % 6}`,
      replay_id: i === 1 ? 'r-known' : `r-${i % 9}`,
      trace_id: i.toString(16).padStart(32, '0'),
      ...(i % 10 === 0 ? { error_group_id: GROUP } : {}),
    };
    const res = await api(t, 'POST', base, { key: t.keys.ingest, body: rec });
    if (res.status !== 201) throw new Error(`seed ${i}: ${res.status} ${JSON.stringify(res.body)}`);
    sent.push({ ...rec, id: res.body.id, created_at: clock, status: 'new' });
  }
  // Statuses: every 4th reviewed, every 6th archived (archived wins).
  for (const [i, r] of sent.entries()) {
    const status = i % 6 === 0 ? 'archived' : i % 4 === 0 ? 'reviewed' : null;
    if (!status) continue;
    const res = await api(t, 'PATCH', `${base}/${r.id}`, { key: t.keys.admin, body: { status } });
    if (res.status !== 200) throw new Error(`status ${i}: ${res.status}`);
    r.status = status;
  }
  // Noise in the other project, which must never show up here.
  for (let i = 0; i < 3; i++) {
    await api(t, 'POST', `/v1/projects/${t.otherProject.projectId}/feedback`, { key: t.otherProject.adminKey, body: { message: `other ${i}`, environment: 'production' } });
  }
});
afterAll(() => t.close());

const newestFirst = (rows: Sent[]) =>
  [...rows].sort((a, b) => b.created_at - a.created_at || (a.id < b.id ? 1 : a.id > b.id ? -1 : 0)).map((r) => r.id);

/** Walk every page with the same filters; fail on a repeated id. */
async function walk(query: Record<string, string>, limit = 4, key = reader): Promise<string[]> {
  const ids: string[] = [];
  let cursor: string | null = null;
  for (let page = 0; page < 100; page++) {
    const qs = new URLSearchParams({ ...query, limit: String(limit), ...(cursor ? { cursor } : {}) });
    const res = await api(t, 'GET', `${base}?${qs}`, { key });
    expect(res.status, JSON.stringify(res.body)).toBe(200);
    expect(res.body.data.length).toBeLessThanOrEqual(limit);
    ids.push(...res.body.data.map((r: { id: string }) => r.id));
    cursor = res.body.next_cursor;
    if (cursor === null) {
      expect(new Set(ids).size).toBe(ids.length);
      return ids;
    }
    expect(res.body.data.length).toBe(limit);
  }
  throw new Error('pagination did not end');
}

describe('feedback.list', () => {
  it('lists newest first and walks every record once with the cursor', async () => {
    const ids = await walk({}, 7);
    expect(ids).toEqual(newestFirst(sent));
  });

  it('returns 50 records by default and accepts limits 1 to 100', async () => {
    const res = await api(t, 'GET', base, { key: reader });
    expect(res.body.data).toHaveLength(50);
    expect(res.body.next_cursor).toEqual(expect.any(String));
    expect((await api(t, 'GET', `${base}?limit=100`, { key: reader })).body.data).toHaveLength(N);
    expect((await api(t, 'GET', `${base}?limit=1`, { key: reader })).body.data).toHaveLength(1);
    for (const limit of ['0', '101', 'ten']) {
      const bad = await api(t, 'GET', `${base}?limit=${limit}`, { key: reader });
      expect(bad.status, limit).toBe(400);
      expect(bad.body.param).toBe('limit');
    }
  });

  it('rejects a cursor it did not issue', async () => {
    const res = await api(t, 'GET', `${base}?cursor=not-a-cursor`, { key: reader });
    expect(res.status).toBe(400);
    expect(res.body).toMatchObject({ type: 'invalid_request_error', param: 'cursor' });
  });

  const exact: [string, string, (r: Sent) => boolean][] = [
    ['status', 'archived', (r) => r.status === 'archived'],
    ['status', 'new,reviewed', (r) => r.status !== 'archived'],
    ['environment', 'staging', (r) => r.environment === 'staging'],
    ['release', '1.0.3', (r) => r.release === '1.0.3'],
    ['service', 'api', (r) => r.service === 'api'],
    ['error_group_id', GROUP, (r) => r.error_group_id === GROUP],
    ['user_id', 'user-12', (r) => r.user_id === 'user-12'],
    ['session_id', 's-2', (r) => r.session_id === 's-2'],
    ['replay_id', 'r-4', (r) => r.replay_id === 'r-4'],
    ['trace_id', (20).toString(16).padStart(32, '0'), (r) => r.trace_id === (20).toString(16).padStart(32, '0')],
  ];
  it.each(exact)('filters by %s=%s exactly, across pages', async (name, value, keep) => {
    const expected = newestFirst(sent.filter(keep));
    expect(expected.length).toBeGreaterThan(0);
    expect(await walk({ [name]: value }, 3)).toEqual(expected);
  });

  it('matches exact filters literally (no partial environment match)', async () => {
    expect(await walk({ environment: 'stag' })).toEqual([]);
    expect(await walk({ service: 'API' })).toEqual([]);
  });

  const substring: [string, string, (r: Sent) => boolean][] = [
    ['url', 'app.example.com/CHECKOUT', (r) => r.url.toLowerCase().includes('app.example.com/checkout')],
    ['url', '100%_off', (r) => r.url.includes('100%_off')],
    ['url', '%', (r) => r.url.includes('%')],
    ['url', 'home/1', (r) => r.url.includes('home/1')],
    ['contact', 'PERSON 1', (r) => r.name.toLowerCase().includes('person 1')],
    ['contact', 'p3@example', (r) => r.contact_email.toLowerCase().includes('p3@example')],
    ['contact', 'user-4', (r) => r.user_id.includes('user-4')],
    ['contact', 'zoë', (r) => r.name.includes('Zoë')],
    ['contact', '_', (r) => [r.name, r.contact_email, r.user_id].some((v) => v.includes('_'))],
    ['q', 'export', (r) => r.message.toLowerCase().includes('export')],
  ];
  it.each(substring)('filters by %s containing %s (case-insensitive literal substring)', async (name, value, keep) => {
    expect(await walk({ [name]: value }, 3)).toEqual(newestFirst(sent.filter(keep)));
  });

  it('filters by creation time with from and to', async () => {
    const from = sent[9]!.created_at;
    const to = sent[30]!.created_at;
    const expected = newestFirst(sent.filter((r) => r.created_at >= from && r.created_at <= to));
    expect(await walk({ from: new Date(from).toISOString(), to: new Date(to).toISOString() }, 5)).toEqual(expected);
    const bad = await api(t, 'GET', `${base}?from=yesterday`, { key: reader });
    expect(bad.status).toBe(400);
    expect(bad.body.param).toBe('from');
  });

  it('combines filters and keeps them across pages', async () => {
    const keep = (r: Sent) => r.service === 'web' && r.status === 'new' && r.contact_email.toLowerCase().includes('example.com');
    expect(await walk({ service: 'web', status: 'new', contact: 'EXAMPLE.COM' }, 2)).toEqual(newestFirst(sent.filter(keep)));
  });

  it('rejects an unknown status', async () => {
    const res = await api(t, 'GET', `${base}?status=done`, { key: reader });
    expect(res.status).toBe(400);
    expect(res.body.param).toMatch(/^status/);
  });

  it('shows contact fields to readers and never resolves replay links', async () => {
    const res = await api(t, 'GET', `${base}?limit=100`, { key: t.mintKey(['read']) });
    const one = res.body.data.find((r: { id: string }) => r.id === sent[1]!.id);
    expect(one).toMatchObject({ contact_email: 'p1@Example.com', name: 'Person 1', user_id: 'user-1', replay_id: 'r-known' });
    expect(one).not.toHaveProperty('replay_session_id');
  });
});

describe('feedback.get', () => {
  it('returns the record with contact fields and replay_session_id null when the replay is unknown', async () => {
    const r = sent[2]!;
    const res = await api(t, 'GET', `${base}/${r.id}`, { key: reader });
    expect(res.status).toBe(200);
    expect(res.body).toMatchObject({
      id: r.id,
      project_id: t.projectId,
      message: r.message,
      contact_email: r.contact_email,
      name: r.name,
      user_id: r.user_id,
      url: r.url,
      replay_id: r.replay_id,
      replay_session_id: null,
      status: r.status,
      created_at: new Date(r.created_at).toISOString(),
    });
  });

  it('resolves replay_session_id from replay_id in the same project', async () => {
    const res = await api(t, 'GET', `${base}/${sent[1]!.id}`, { key: reader });
    expect(res.body.replay_session_id).toBe('session-42');
  });

  it('answers 404 for a missing record and for a record of another project', async () => {
    const missing = await api(t, 'GET', `${base}/${randomUUID()}`, { key: reader });
    expect(missing.status).toBe(404);
    expect(missing.body).toMatchObject({ type: 'not_found_error', code: 'not_found', param: 'feedback_id' });
    const theirs = await api(t, 'GET', `/v1/projects/${t.otherProject.projectId}/feedback?limit=1`, { key: t.otherProject.adminKey });
    const theirId = theirs.body.data[0].id;
    const cross = await api(t, 'GET', `${base}/${theirId}`, { key: t.keys.admin });
    expect(cross.status).toBe(404);
    expect(cross.body.param).toBe('feedback_id');
  });

  it('answers 400 to an id that is not a UUID', async () => {
    const res = await api(t, 'GET', `${base}/abc`, { key: reader });
    expect(res.status).toBe(400);
    expect(res.body.param).toBe('feedback_id');
  });
});

describe('feedback.update', () => {
  it('moves a record between new, reviewed and archived and returns the updated record', async () => {
    const r = sent[5]!;
    const writer = t.mintKey(['errors:write', 'errors:read']);
    for (const status of ['reviewed', 'archived', 'new', 'archived'] as const) {
      clock += 1000;
      const res = await api(t, 'PATCH', `${base}/${r.id}`, { key: writer, body: { status } });
      expect(res.status).toBe(200);
      expect(res.body).toMatchObject({ id: r.id, status, updated_at: new Date(clock).toISOString(), created_at: new Date(r.created_at).toISOString() });
      expect(res.body).not.toHaveProperty('replay_session_id');
      expect((await api(t, 'GET', `${base}/${r.id}`, { key: reader })).body.status).toBe(status);
    }
    r.status = 'archived';
  });

  it('hides contact fields from a key that can write but not read', async () => {
    const r = sent[6]!;
    const res = await api(t, 'PATCH', `${base}/${r.id}`, { key: t.mintKey(['errors:write']), body: { status: r.status } });
    expect(res.status).toBe(200);
    for (const f of ['contact_email', 'name', 'user_id']) expect(res.body).not.toHaveProperty(f);
    expect(res.body.message).toBe(r.message);
  });

  it('rejects a bad status, a missing status and unknown fields without changing the record', async () => {
    const r = sent[7]!;
    for (const body of [{ status: 'done' }, {}, { status: 'reviewed', message: 'edited' }]) {
      const res = await api(t, 'PATCH', `${base}/${r.id}`, { key: t.keys.admin, body });
      expect(res.status, JSON.stringify(body)).toBe(400);
      expect(res.body.type).toBe('invalid_request_error');
    }
    expect((await api(t, 'GET', `${base}/${r.id}`, { key: reader })).body).toMatchObject({ status: r.status, message: r.message });
  });

  it('needs errors:write', async () => {
    const r = sent[8]!;
    const res = await api(t, 'PATCH', `${base}/${r.id}`, { key: reader, body: { status: 'reviewed' } });
    expect(res.status).toBe(403);
    expect((await api(t, 'GET', `${base}/${r.id}`, { key: reader })).body.status).toBe(r.status);
  });

  it('answers 404 for a record of another project and leaves it alone', async () => {
    const theirs = await api(t, 'GET', `/v1/projects/${t.otherProject.projectId}/feedback?limit=1`, { key: t.otherProject.adminKey });
    const their = theirs.body.data[0];
    const res = await api(t, 'PATCH', `${base}/${their.id}`, { key: t.keys.admin, body: { status: 'archived' } });
    expect(res.status).toBe(404);
    const after = await api(t, 'GET', `/v1/projects/${t.otherProject.projectId}/feedback/${their.id}`, { key: t.otherProject.adminKey });
    expect(after.body.status).toBe(their.status);
  });
});
