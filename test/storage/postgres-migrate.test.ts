/**
 * Issue 20: `sightline migrate --to-postgres` copies a SQLite database's control data into
 * PostgreSQL; a server started on the same file with SIGHTLINE_DATABASE_URL then answers as before —
 * same keys, same feedback, same deployments, same status page — and keeps writing (its generated
 * keys continue after the copied ones). Runs on the local PostgreSQL; skips, saying why, without one.
 */
import http from 'node:http';
import { spawnSync } from 'node:child_process';
import { join } from 'node:path';
import type { AddressInfo } from 'node:net';
import { afterAll, describe, expect, it } from 'vitest';
import { api, startTestServer } from '../helpers/server.js';
import { createSightline } from '../../src/server.js';
import { createPgDatabase, pgQuery, postgresMissing, type PgDatabase } from '../support/postgres.js';
import { sendEvent } from '../operations/errors-fixtures.js';

const missing = await postgresMissing();
if (missing) console.log(`[postgres-migrate] skipped: ${missing}`);
const ROOT = join(import.meta.dirname, '..', '..');

describe.skipIf(!!missing)('sightline migrate --to-postgres', () => {
  const dbs: PgDatabase[] = [];
  afterAll(async () => {
    for (const d of dbs) await d.drop();
  });

  it('copies every control row, and a server on PostgreSQL then answers the same and keeps writing', async () => {
    // A SQLite-only server with some control data.
    const t = await startTestServer({ clickhouse: false, config: { databaseUrl: null } });
    const P = `/v1/projects/${t.projectId}`;
    for (let i = 0; i < 3; i++) expect((await api(t, 'POST', `${P}/feedback`, { key: t.keys.admin, body: { message: `feedback ${i}`, contact_email: `U${i}@Example.com` } })).status).toBe(201);
    expect((await api(t, 'POST', `${P}/deployments`, { key: t.keys.admin, body: { deployment_id: 'd1', provider: 'github', service: 'api', version: '1.0.0', status: 'ready' } })).status).toBe(201);
    // Error groups (PostgreSQL migration 3) with their counts, users and state.
    const hour = 3_600_000;
    const at0 = Math.floor(Date.now() / hour) * hour - 5 * hour;
    for (let i = 0; i < 4; i++) await sendEvent(t, { type: 'TypeError', fn: 'charge', at: at0 + i * hour + 1_000, environment: 'prod', release: `1.0.${i}` });
    await sendEvent(t, { type: 'RangeError', fn: 'refund', at: at0 + 2_000, environment: 'staging' });
    const groups = (await api(t, 'GET', `${P}/errors`, { key: t.keys.admin })).body.data as Array<{ id: string }>;
    expect(groups).toHaveLength(2);
    expect((await api(t, 'PATCH', `${P}/errors/${groups[0]!.id}`, { key: t.keys.admin, body: { status: 'resolved' } })).status).toBe(200);
    const reader = t.mintKey(['errors:read', 'deployments:read'], t.projectId, { label: 'reader' });
    const window = `from=${new Date(at0 - hour).toISOString()}&to=${new Date(at0 + 10 * hour).toISOString()}`;
    const reads = [`${P}/feedback`, `${P}/deployments`, `${P}/api-keys`, `${P}/errors?status=resolved,unresolved&${window}`, `${P}/errors/${groups[0]!.id}`];
    const before = await Promise.all(reads.map((p) => api(t, 'GET', p, { key: t.keys.admin })));
    const dbFile = t.dbFile;
    await t.s.close();

    const pgdb = await createPgDatabase();
    dbs.push(pgdb);
    const run = (...args: string[]) =>
      spawnSync(process.execPath, [join(ROOT, 'bin/sightline.mjs'), 'migrate', '--to-postgres', ...args], {
        env: { ...process.env, SIGHTLINE_DB: dbFile, SIGHTLINE_DATABASE_URL: pgdb.url },
        encoding: 'utf8',
      });
    const first = run('--json');
    expect(first.status, first.stderr).toBe(0);
    const report = JSON.parse(first.stdout);
    expect(report.rows).toBeGreaterThan(8);
    expect((await pgQuery(pgdb.url, 'SELECT count(*)::int AS n FROM feedback'))[0]).toEqual({ n: 3 });
    // Copying again into a database that holds control data is refused and changes nothing.
    const again = run();
    expect(again.status).toBe(1);
    expect(again.stderr).toMatch(/already holds control data/);
    expect((await pgQuery(pgdb.url, 'SELECT count(*)::int AS n FROM feedback'))[0]).toEqual({ n: 3 });

    const s = createSightline({ logLevel: 'silent', dbFile, databaseUrl: pgdb.url, port: 0, host: '127.0.0.1' });
    const server = http.createServer(s.app.callback());
    await new Promise<void>((r) => server.listen(0, '127.0.0.1', r));
    const on = { url: `http://127.0.0.1:${(server.address() as AddressInfo).port}` };
    try {
      const after = await Promise.all(reads.map((p) => api(on, 'GET', p, { key: t.keys.admin })));
      for (const [i, a] of after.entries()) {
        expect(a.status, reads[i]).toBe(200);
        expect(a.body, reads[i]).toEqual(before[i]!.body);
      }
      // The keys are the same keys: a scoped one reads, and is refused what it does not hold.
      expect((await api(on, 'GET', `${P}/feedback`, { key: reader })).status).toBe(200);
      expect((await api(on, 'POST', `${P}/deployments`, { key: reader, body: { deployment_id: 'no', provider: 'github' } })).status).toBe(403);
      // Writes go on: a new project gets a key after the copied ones.
      expect((await api(on, 'POST', `${P}/feedback`, { key: t.keys.admin, body: { message: 'after the copy' } })).status).toBe(201);
      const projectIds = (await pgQuery(pgdb.url, 'SELECT id::int AS id FROM projects ORDER BY id')).map((r) => r.id as number);
      const org = (await pgQuery(pgdb.url, 'SELECT org_id FROM projects WHERE id = $1', [Number(t.projectId)]))[0]!.org_id as string;
      const next = s.services.identity.createProject(org, 'new', Date.now());
      expect(Number(next.id)).toBeGreaterThan(Math.max(...projectIds));
    } finally {
      await new Promise<void>((r) => (server.close(() => r()), server.closeAllConnections()));
      await s.close();
    }
  });

  it('a server already on PostgreSQL takes its error groups over from SQLite at its first start with migration 3, once', async () => {
    const t = await startTestServer({ clickhouse: false, config: { databaseUrl: null } });
    const P = `/v1/projects/${t.projectId}`;
    const at = Date.now() - 3_600_000;
    for (let i = 0; i < 3; i++) await sendEvent(t, { type: 'TypeError', fn: 'charge', at: at + i, environment: 'prod', tags: { user: `u${i}` } });
    await sendEvent(t, { type: 'RangeError', fn: 'refund', at, environment: 'prod' });
    const reads = [`${P}/errors`, `${P}/errors?environment=prod&sort=event_count`];
    const before = await Promise.all(reads.map((p) => api(t, 'GET', p, { key: t.keys.admin })));
    expect(before[0]!.body.data).toHaveLength(2);
    const dbFile = t.dbFile;
    await t.s.close();

    // PostgreSQL as a Sightline before migration 3 left it: control data copied, error groups still in SQLite.
    const pgdb = await createPgDatabase();
    dbs.push(pgdb);
    const copy = spawnSync(process.execPath, [join(ROOT, 'bin/sightline.mjs'), 'migrate', '--to-postgres'], {
      env: { ...process.env, SIGHTLINE_DB: dbFile, SIGHTLINE_DATABASE_URL: pgdb.url },
      encoding: 'utf8',
    });
    expect(copy.status, copy.stderr).toBe(0);
    await pgQuery(pgdb.url, 'DELETE FROM error_groups');
    expect((await pgQuery(pgdb.url, 'SELECT count(*)::int AS n FROM error_group_users'))[0]).toEqual({ n: 0 });

    const start = async () => {
      const s = createSightline({ logLevel: 'silent', dbFile, databaseUrl: pgdb.url, port: 0, host: '127.0.0.1' });
      const server = http.createServer(s.app.callback());
      await new Promise<void>((r) => server.listen(0, '127.0.0.1', r));
      return { s, server, url: `http://127.0.0.1:${(server.address() as AddressInfo).port}` };
    };
    const stop = async (x: Awaited<ReturnType<typeof start>>) => {
      await new Promise<void>((r) => (x.server.close(() => r()), x.server.closeAllConnections()));
      await x.s.close();
    };
    const first = await start();
    try {
      const after = await Promise.all(reads.map((p) => api(first, 'GET', p, { key: t.keys.admin })));
      for (const [i, a] of after.entries()) expect(a.body, reads[i]).toEqual(before[i]!.body);
      expect((await pgQuery(pgdb.url, 'SELECT count(*)::int AS n FROM error_groups'))[0]).toEqual({ n: 2 });
      // New events count on the adopted groups.
      await sendEvent({ ...t, url: first.url }, { type: 'TypeError', fn: 'charge', at: at + 10, environment: 'prod' });
    } finally {
      await stop(first);
    }
    // A second start finds PostgreSQL holding groups: nothing copied again.
    const second = await start();
    try {
      const list = (await api(second, 'GET', `${P}/errors?sort=event_count`, { key: t.keys.admin })).body.data as Array<{ title: string; event_count: number }>;
      expect(list.map((g) => g.event_count)).toEqual([4, 1]);
      expect((await pgQuery(pgdb.url, 'SELECT count(*)::int AS n FROM error_groups'))[0]).toEqual({ n: 2 });
    } finally {
      await stop(second);
    }
  });
});
