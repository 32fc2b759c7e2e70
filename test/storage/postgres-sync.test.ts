/**
 * The synchronous PostgreSQL client (groundwork of issue 20's control store): statements run and
 * answer synchronously, errors carry their SQLSTATE, transactions commit, roll back and nest as
 * savepoints, and a transaction holds back nothing else on the thread (there is nothing else: the
 * thread waits). Runs against the PostgreSQL on 127.0.0.1:5432 (SIGHTLINE_TEST_PG_URL to change
 * it); skips with a printed reason when there is none.
 */
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { execFileSync } from 'node:child_process';
import { randomBytes } from 'node:crypto';
import { openSyncPg, SyncPgError, type SyncPg } from '../../src/storage/postgres/sync-client.js';

const URL = process.env.SIGHTLINE_TEST_PG_URL ?? 'postgres://postgres@127.0.0.1:5432/postgres';

function reachable(): string | null {
  try {
    const c = openSyncPg(URL, { timeoutMs: 5000 });
    c.close();
    return null;
  } catch (err) {
    return (err as Error).message;
  }
}
const why = reachable();
if (why) console.log(`test/storage/postgres-sync.test.ts skipped: no PostgreSQL at ${URL} (${why})`);

describe.skipIf(why !== null)('SyncPg', () => {
  let pg: SyncPg;
  const schema = `sl_test_${randomBytes(4).toString('hex')}`;
  beforeAll(() => {
    pg = openSyncPg(URL);
    pg.query(`CREATE SCHEMA ${schema}`);
    pg.query(`CREATE TABLE ${schema}.keys (id bigint PRIMARY KEY, name text NOT NULL, created_at bigint NOT NULL)`);
  });
  afterAll(() => {
    pg?.query(`DROP SCHEMA ${schema} CASCADE`);
    pg?.close();
  });

  it('answers statements synchronously, with parameters, as objects or arrays', () => {
    const ins = pg.query(`INSERT INTO ${schema}.keys VALUES ($1, $2, $3), ($4, $5, $6)`, [1, 'a', 10, 2, 'b', 20]);
    expect(ins.rowCount).toBe(2);
    expect(pg.query<{ id: string; name: string }>(`SELECT id, name FROM ${schema}.keys ORDER BY id`).rows).toEqual([{ id: 1, name: 'a' }, { id: 2, name: 'b' }]);
    expect(pg.queryArrays(`SELECT name, created_at::int FROM ${schema}.keys WHERE id = $1`, [2]).rows).toEqual([['b', 20]]);
  });

  it('throws errors with their SQLSTATE and keeps working after them', () => {
    let caught: unknown;
    try {
      pg.query(`INSERT INTO ${schema}.keys VALUES (1, 'again', 0)`);
    } catch (err) {
      caught = err;
    }
    expect(caught).toBeInstanceOf(SyncPgError);
    expect((caught as SyncPgError).code).toBe('23505');
    expect(() => pg.query('SELEC 1')).toThrow(/syntax error/);
    expect(pg.query<{ n: number }>('SELECT 1 AS n').rows).toEqual([{ n: 1 }]);
  });

  it('commits a transaction, rolls one back when its function throws, and nests savepoints', () => {
    pg.transaction(() => {
      pg.query(`INSERT INTO ${schema}.keys VALUES (3, 'c', 30)`);
    });
    expect(() =>
      pg.transaction(() => {
        pg.query(`INSERT INTO ${schema}.keys VALUES (4, 'd', 40)`);
        throw new Error('handler failed');
      }),
    ).toThrow('handler failed');
    pg.transaction(() => {
      pg.query(`INSERT INTO ${schema}.keys VALUES (5, 'e', 50)`);
      expect(() =>
        pg.transaction(() => {
          pg.query(`INSERT INTO ${schema}.keys VALUES (6, 'f', 60)`);
          pg.query(`INSERT INTO ${schema}.keys VALUES (5, 'dup', 0)`); // unique violation: the savepoint goes
        }),
      ).toThrow(SyncPgError);
    });
    const ids = pg.queryArrays(`SELECT id::int FROM ${schema}.keys ORDER BY id`).rows.map((r) => r[0]);
    expect(ids).toEqual([1, 2, 3, 5]);
    expect(() => pg.transaction(() => Promise.resolve(1))).toThrow(/synchronous function/);
  });

  it('is seen committed by another connection at once (psql)', () => {
    pg.query(`INSERT INTO ${schema}.keys VALUES (7, 'g', 70)`);
    const out = execFileSync('psql', [URL, '-tA', '-c', `SELECT name FROM ${schema}.keys WHERE id = 7`], { encoding: 'utf8' });
    expect(out.trim()).toBe('g');
  });

  it('fails at open, with the reason, for a server that is not there', () => {
    expect(() => openSyncPg('postgres://postgres@127.0.0.1:1/postgres', { timeoutMs: 5000 })).toThrow(/could not connect to PostgreSQL/);
  });
});
