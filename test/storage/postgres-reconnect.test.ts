/**
 * Issue 20: a Sightline process outlives a PostgreSQL restart. The synchronous client's connection,
 * once lost, is opened again on the next statement (it used to stay dead: every request failed until
 * the process was restarted); a transaction the connection was lost in is refused to its end — its
 * later statements never run outside it on the new connection. PostgreSQL is reached through a TCP
 * relay (in a worker thread: the code under test blocks this one) that drops every connection on cue.
 */
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { api, startTestServer, type TestServer } from '../helpers/server.js';
import { createPgDatabase, postgresMissing, type PgDatabase } from '../support/postgres.js';
import { pgRelay, type PgRelay } from '../support/pg-relay.js';
import { openSyncPg, SyncPgError } from '../../src/storage/postgres/sync-client.js';

const missing = await postgresMissing();
if (missing) console.log(`postgres-reconnect: skipped, ${missing}`);

describe.skipIf(missing)('a lost PostgreSQL connection', () => {
  let db: PgDatabase;
  let link: PgRelay;
  beforeAll(async () => {
    db = await createPgDatabase();
    link = await pgRelay(db.url);
  });
  afterAll(async () => {
    await link?.close();
    await db?.drop();
  });

  it('is opened again on the next statement, outside a transaction', async () => {
    const pg = openSyncPg(link.url);
    try {
      pg.query('CREATE TABLE reconnect_a (v INT)');
      pg.query('INSERT INTO reconnect_a VALUES (1)');
      await link.drop();
      pg.query('INSERT INTO reconnect_a VALUES (2)');
      expect(pg.queryArrays('SELECT v FROM reconnect_a ORDER BY v').rows).toEqual([[1], [2]]);
    } finally {
      pg.close();
    }
  });

  it('refuses the rest of a transaction it was lost in, until its ROLLBACK, and commits none of it', async () => {
    const pg = openSyncPg(link.url);
    try {
      pg.query('CREATE TABLE reconnect_b (v INT)');
      pg.query('BEGIN');
      pg.query('INSERT INTO reconnect_b VALUES (1)');
      await link.drop();
      for (const sql of ['INSERT INTO reconnect_b VALUES (2)', 'SELECT 1']) {
        let err: unknown;
        try {
          pg.query(sql);
        } catch (e) {
          err = e;
        }
        expect(err).toBeInstanceOf(SyncPgError);
        expect((err as SyncPgError).code).toBe('08006');
      }
      pg.query('ROLLBACK');
      pg.query('INSERT INTO reconnect_b VALUES (3)');
      expect(pg.queryArrays('SELECT v FROM reconnect_b ORDER BY v').rows).toEqual([[3]]);
    } finally {
      pg.close();
    }
  });

  it('keeps a server answering after PostgreSQL dropped its connections', async () => {
    const t: TestServer = await startTestServer({ config: { databaseUrl: link.url } });
    try {
      const path = `/v1/projects/${t.projectId}/feedback`;
      expect((await api(t, 'POST', path, { key: t.keys.ingest, body: { message: 'before' } })).status).toBe(201);
      await link.drop();
      const after = await api(t, 'POST', path, { key: t.keys.ingest, body: { message: 'after' } });
      expect(after.status, JSON.stringify(after.body)).toBe(201);
      const list = await api(t, 'GET', path, { key: t.keys.admin });
      expect(list.body.data.map((r: { message: string }) => r.message).sort()).toEqual(['after', 'before']);
    } finally {
      await t.close();
    }
  });
});
