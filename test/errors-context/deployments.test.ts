/**
 * Deployments as a CI job sends them (issue 11 item 10): a re-send with only some fields updates those
 * and keeps the rest; commit_sha takes any commit identifier up to 64 characters.
 */
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { startTestServer, type TestServer } from '../helpers/server.js';
import { rest } from '../operations/errors-fixtures.js';

let t: TestServer;
beforeAll(async () => {
  t = await startTestServer();
});
afterAll(() => t?.close());

const create = (body: Record<string, unknown>) => rest(t, 'POST', '/deployments', { body });

describe('deployments.create', () => {
  it('updates only the fields a re-send carries and keeps the rest', async () => {
    const first = await create({
      deployment_id: 'ci-77',
      provider: 'github',
      service: 'api',
      version: '2.4.0',
      environment: 'production',
      status: 'building',
      commit_sha: 'a1b2c3d4e5f6',
      branch: 'main',
      url: 'https://ci.example.com/runs/77',
      started_at: '2026-06-01T10:00:00.000Z',
    });
    expect(first.status, JSON.stringify(first.body)).toBe(201);
    const second = await create({ deployment_id: 'ci-77', provider: 'github', status: 'ready', finished_at: '2026-06-01T10:05:00.000Z' });
    expect(second.status, JSON.stringify(second.body)).toBe(200);
    expect(second.body).toMatchObject({
      id: first.body.id,
      status: 'ready',
      service: 'api',
      version: '2.4.0',
      environment: 'production',
      commit_sha: 'a1b2c3d4e5f6',
      branch: 'main',
      url: 'https://ci.example.com/runs/77',
      started_at: '2026-06-01T10:00:00.000Z',
      finished_at: '2026-06-01T10:05:00.000Z',
    });
    const listed = (await rest(t, 'GET', '/deployments?provider=github')).body.data;
    expect(listed).toHaveLength(1);
    expect(listed[0]).toMatchObject({ status: 'ready', version: '2.4.0' });
  });

  it('checks the merged record: a finish before the stored start is refused and nothing changes', async () => {
    const r = await create({ deployment_id: 'ci-77', provider: 'github', finished_at: '2026-06-01T09:00:00.000Z' });
    expect(r.status).toBe(400);
    expect(r.body.param).toBe('finished_at');
    expect((await rest(t, 'GET', '/deployments?provider=github')).body.data[0].finished_at).toBe('2026-06-01T10:05:00.000Z');
  });

  it('takes a 64-character commit id and non-hex ids (Mercurial, Perforce) as sent, up to 64 characters', async () => {
    const sha256 = 'AB'.repeat(32);
    const long = await create({ deployment_id: 'git-sha256', commit_sha: sha256 });
    expect(long.status, JSON.stringify(long.body)).toBe(201);
    expect(long.body.commit_sha).toBe(sha256.toLowerCase());
    const p4 = await create({ deployment_id: 'p4-1', commit_sha: 'change-128734' });
    expect(p4.status, JSON.stringify(p4.body)).toBe(201);
    expect(p4.body.commit_sha).toBe('change-128734');
    const hg = await create({ deployment_id: 'hg-1', commit_sha: '4812:Deadbeef0123' });
    expect(hg.body.commit_sha).toBe('4812:Deadbeef0123');
    const tooLong = await create({ deployment_id: 'x-1', commit_sha: 'a'.repeat(65) });
    expect(tooLong.status).toBe(400);
    expect(tooLong.body.param).toBe('commit_sha');
  });

  it('gives a first send without status the default `unknown` and provider `generic`', async () => {
    const r = await create({ deployment_id: 'plain-1' });
    expect(r.status).toBe(201);
    expect(r.body).toMatchObject({ status: 'unknown', provider: 'generic', service: null, commit_sha: null });
  });
});
