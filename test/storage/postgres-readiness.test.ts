/**
 * Issue 20: with control data in PostgreSQL, /readyz and system.status say whether PostgreSQL answers
 * and its schema is current. A process that has lost PostgreSQL is not ready (503, the check named), so
 * a load balancer stops sending it traffic; it was "ready" while its SQLite file stayed writable.
 * PostgreSQL is reached through a TCP relay the test closes to cut it off.
 */
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { api, startTestServer, type TestServer } from '../helpers/server.js';
import { createPgDatabase, postgresMissing, type PgDatabase } from '../support/postgres.js';
import { pgRelay, type PgRelay } from '../support/pg-relay.js';
import { PG_LATEST_SCHEMA_VERSION } from '../../src/storage/postgres/schema.js';

const missing = await postgresMissing();
if (missing) console.log(`postgres-readiness: skipped, ${missing}`);

describe.skipIf(missing)('PostgreSQL in /readyz and system.status', () => {
  let db: PgDatabase;
  let link: PgRelay;
  let t: TestServer;
  beforeAll(async () => {
    db = await createPgDatabase();
    link = await pgRelay(db.url);
    t = await startTestServer({ config: { databaseUrl: link.url } });
  });
  afterAll(async () => {
    await t?.close().catch(() => {});
    await link?.close();
    await db?.drop();
  });

  it('is ready with PostgreSQL answering, and system.status gives its version and schema', async () => {
    const r = await fetch(`${t.url}/readyz`);
    expect(r.status).toBe(200);
    expect(((await r.json()) as { checks: Record<string, unknown> }).checks.postgres).toEqual({ ok: true });
    const st = await api(t, 'GET', `/v1/projects/${t.projectId}/system/status`, { key: t.keys.admin });
    expect(st.status, JSON.stringify(st.body)).toBe(200);
    expect(st.body.postgres).toMatchObject({ reachable: true, version: expect.stringMatching(/^\d+/), schema: { version: PG_LATEST_SCHEMA_VERSION, latest: PG_LATEST_SCHEMA_VERSION } });
  });

  it('answers 503 naming PostgreSQL once it is unreachable, within the probe bound', async () => {
    await link.close();
    const started = Date.now();
    const r = await fetch(`${t.url}/readyz`);
    expect(r.status).toBe(503);
    const body = (await r.json()) as { checks: Record<string, { ok: boolean; detail?: string }> };
    expect(body.checks.postgres.ok).toBe(false);
    expect(body.checks.postgres.detail).toMatch(/^PostgreSQL: /);
    expect(Date.now() - started).toBeLessThan(10_000);
  });
});

describe('without PostgreSQL configured', () => {
  it('has no postgres check and system.status says null', async () => {
    const t = await startTestServer({ config: { databaseUrl: null } });
    try {
      const r = await fetch(`${t.url}/readyz`);
      expect(((await r.json()) as { checks: object }).checks).not.toHaveProperty('postgres');
      const st = await api(t, 'GET', `/v1/projects/${t.projectId}/system/status`, { key: t.keys.admin });
      expect(st.body.postgres).toBeNull();
    } finally {
      await t.close();
    }
  });
});
