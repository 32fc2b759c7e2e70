/**
 * API keys over HTTP: the secret is shown once and stored only as a hash, revoked and expired keys
 * answer 401, and no key can mint or widen scopes it does not hold.
 */
import Database from 'better-sqlite3';
import { postgresOf } from '../../src/storage/postgres/split-db.js';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { api, startTestServer, type TestServer } from '../helpers/server.js';

let clock = Date.parse('2026-03-01T00:00:00.000Z');
let t: TestServer;
let keys: string;

beforeAll(async () => {
  t = await startTestServer({ now: () => clock });
  keys = `/v1/projects/${t.projectId}/api-keys`;
});
afterAll(() => t.close());

const feedbackList = (key: string) => api(t, 'GET', `/v1/projects/${t.projectId}/feedback`, { key });

describe('apiKeys.create', () => {
  it('returns the secret once; list and get never include it; the database holds only its hash', async () => {
    const res = await api(t, 'POST', keys, { key: t.keys.admin, body: { label: 'ci reader', scopes: ['errors:read'] } });
    expect(res.status).toBe(201);
    const { secret, id } = res.body;
    expect(secret).toMatch(/^sl_[A-Za-z0-9_-]{40,}$/);
    expect(res.body).toMatchObject({ label: 'ci reader', scopes: ['errors:read'], project_id: t.projectId, expires_at: null });
    expect(secret.startsWith(res.body.prefix)).toBe(true);

    // The secret works, in either header.
    expect((await feedbackList(secret)).status).toBe(200);
    expect((await api(t, 'GET', `/v1/projects/${t.projectId}/feedback`, { headers: { authorization: `Bearer ${secret}` } })).status).toBe(200);

    const listed = await api(t, 'GET', keys, { key: t.keys.admin });
    const got = await api(t, 'GET', `${keys}/${id}`, { key: t.keys.admin });
    expect(got.status).toBe(200);
    for (const body of [listed.body, got.body]) {
      expect(JSON.stringify(body)).not.toContain(secret);
      expect(JSON.stringify(body)).not.toContain('"secret"');
    }
    expect(listed.body.data.map((k: { id: string }) => k.id)).toContain(id);

    // Where the keys are kept: the SQLite file, or PostgreSQL when the server has SIGHTLINE_DATABASE_URL.
    const pg = postgresOf(t.s.db);
    const db = pg ? { prepare: (sql: string) => ({ all: () => pg.query(sql).rows }), close() {} } : new Database(t.dbFile, { readonly: true });
    try {
      const rows = db.prepare('SELECT * FROM api_keys').all() as Record<string, unknown>[];
      expect(rows.length).toBeGreaterThanOrEqual(3);
      for (const row of rows) for (const v of Object.values(row)) expect(String(v)).not.toContain(secret);
      // Nor the setup keys.
      const all = JSON.stringify(rows);
      expect(all).not.toContain(t.keys.admin);
      expect(all).not.toContain(t.keys.ingest);
    } finally {
      db.close();
    }
  });

  it('refuses scopes the calling key does not hold (403 scope_escalation)', async () => {
    const manager = t.mintKey(['project:write']);
    for (const scopes of [['read'], ['*'], ['project:write', 'events:ingest']]) {
      const res = await api(t, 'POST', keys, { key: manager, body: { label: 'wider', scopes } });
      expect(res.status, scopes.join()).toBe(403);
      expect(res.body).toMatchObject({ type: 'permission_error', code: 'scope_escalation' });
    }
    const ok = await api(t, 'POST', keys, { key: manager, body: { label: 'same', scopes: ['project:write'] } });
    expect(ok.status).toBe(201);
  });

  it('refuses to widen a key with apiKeys.update beyond the caller\'s scopes', async () => {
    const manager = t.mintKey(['project:write', 'errors:read']);
    const made = await api(t, 'POST', keys, { key: manager, body: { label: 'narrow', scopes: ['errors:read'] } });
    const res = await api(t, 'PATCH', `${keys}/${made.body.id}`, { key: manager, body: { scopes: ['errors:read', 'revenue:read'] } });
    expect(res.status).toBe(403);
    expect(res.body.code).toBe('scope_escalation');
    const still = await api(t, 'GET', `${keys}/${made.body.id}`, { key: t.keys.admin });
    expect(still.body.scopes).toEqual(['errors:read']);
  });

  it('rejects unknown scopes, an empty label and a past expiry', async () => {
    for (const body of [
      { label: 'x', scopes: ['everything'] },
      { label: '  ', scopes: ['read'] },
      { label: 'x', scopes: [] },
      { label: 'x', scopes: ['read'], expires_at: new Date(clock - 1000).toISOString() },
    ]) {
      const res = await api(t, 'POST', keys, { key: t.keys.admin, body });
      expect(res.status, JSON.stringify(body)).toBe(400);
    }
  });
});

describe('key lifecycle', () => {
  it('answers 401 to a revoked key', async () => {
    const made = await api(t, 'POST', keys, { key: t.keys.admin, body: { label: 'short-lived', scopes: ['errors:read'] } });
    expect((await feedbackList(made.body.secret)).status).toBe(200);
    const del = await api(t, 'DELETE', `${keys}/${made.body.id}`, { key: t.keys.admin });
    expect(del.status).toBe(200);
    expect(del.body).toEqual({ id: made.body.id, revoked: true });
    const after = await feedbackList(made.body.secret);
    expect(after.status).toBe(401);
    expect(after.body.code).toBe('unauthenticated');
    expect((await api(t, 'GET', `${keys}/${made.body.id}`, { key: t.keys.admin })).status).toBe(404);
    expect((await api(t, 'DELETE', `${keys}/${made.body.id}`, { key: t.keys.admin })).status).toBe(404);
  });

  it('answers 401 to an expired key', async () => {
    const made = await api(t, 'POST', keys, {
      key: t.keys.admin,
      body: { label: 'expiring', scopes: ['errors:read'], expires_at: new Date(clock + 60_000).toISOString() },
    });
    expect(made.status).toBe(201);
    expect((await feedbackList(made.body.secret)).status).toBe(200);
    clock += 60_000;
    expect((await feedbackList(made.body.secret)).status).toBe(401);
  });

  it('changes the label and scopes of a key, keeping its secret', async () => {
    const made = await api(t, 'POST', keys, { key: t.keys.admin, body: { label: 'before', scopes: ['errors:read'] } });
    const res = await api(t, 'PATCH', `${keys}/${made.body.id}`, { key: t.keys.admin, body: { label: 'after', scopes: ['deployments:read'] } });
    expect(res.status).toBe(200);
    expect(res.body).toMatchObject({ label: 'after', scopes: ['deployments:read'] });
    expect((await feedbackList(made.body.secret)).status).toBe(403);
    expect((await api(t, 'GET', `/v1/projects/${t.projectId}/deployments`, { key: made.body.secret })).status).toBe(200);
  });

  it('cannot reach keys of another project', async () => {
    const theirs = await api(t, 'GET', `/v1/projects/${t.otherProject.projectId}/api-keys`, { key: t.otherProject.adminKey });
    const theirId = theirs.body.data[0].id;
    expect((await api(t, 'GET', `${keys}/${theirId}`, { key: t.keys.admin })).status).toBe(404);
    expect((await api(t, 'DELETE', `${keys}/${theirId}`, { key: t.keys.admin })).status).toBe(404);
    expect((await api(t, 'GET', `/v1/projects/${t.otherProject.projectId}`, { key: t.otherProject.adminKey })).status).toBe(200);
  });
});
