/**
 * PostgreSQL for the tests (issue 20): the server at SIGHTLINE_TEST_POSTGRES_URL (default the local
 * one, 127.0.0.1:5432, user postgres), a fresh database per test server.
 */
import { createHash, randomUUID } from 'node:crypto';
import pg from 'pg';
import { openSyncPg } from '../../src/storage/postgres/sync-client.js';
import { migratePostgres, PG_MIGRATIONS } from '../../src/storage/postgres/schema.js';
import { copyControlToPostgres } from '../../src/storage/postgres/migrate.js';
import { openDatabase } from '../../src/storage/db.js';

export const TEST_POSTGRES_URL = process.env.SIGHTLINE_TEST_POSTGRES_URL || 'postgres://postgres@127.0.0.1:5432/postgres';

const withAdmin = async <T>(fn: (c: pg.Client) => Promise<T>): Promise<T> => {
  const c = new pg.Client({ connectionString: TEST_POSTGRES_URL });
  await c.connect();
  try {
    return await fn(c);
  } finally {
    await c.end();
  }
};

/** Why the PostgreSQL tests cannot run here, or null when they can. */
export async function postgresMissing(): Promise<string | null> {
  try {
    await withAdmin((c) => c.query('SELECT 1'));
    return null;
  } catch (err) {
    return `no PostgreSQL at ${TEST_POSTGRES_URL.replace(/\/\/[^@]*@/, '//')} (${(err as Error).message})`;
  }
}

export interface PgDatabase {
  url: string;
  name: string;
  drop(): Promise<void>;
}

/**
 * A database with PostgreSQL's migrations applied, made once per migration set (its name carries
 * their hash); each test database is a copy of it (CREATE DATABASE … TEMPLATE), which is several
 * times faster than migrating every test server's database from scratch.
 */
let template: Promise<string> | null = null;
function migratedTemplate(): Promise<string> {
  return (template ??= (async () => {
    const hash = createHash('sha1').update(JSON.stringify(PG_MIGRATIONS)).digest('hex').slice(0, 12);
    const name = `sl_tpl_${hash}`;
    await withAdmin(async (c) => {
      // One maker at a time across the test workers.
      await c.query('SELECT pg_advisory_lock(7262847)');
      try {
        const exists = (await c.query('SELECT 1 FROM pg_database WHERE datname = $1', [name])).rowCount;
        if (exists) return;
        const building = `${name}_new_${process.pid}`;
        await c.query(`CREATE DATABASE ${building}`);
        const u = new URL(TEST_POSTGRES_URL);
        u.pathname = `/${building}`;
        const pg = openSyncPg(u.toString());
        try {
          migratePostgres(pg);
        } finally {
          pg.close();
        }
        await c.query(`ALTER DATABASE ${building} RENAME TO ${name}`);
      } finally {
        await c.query('SELECT pg_advisory_unlock(7262847)');
      }
    });
    return name;
  })());
}

export async function createPgDatabase(): Promise<PgDatabase> {
  const name = `sl_t_${randomUUID().replace(/-/g, '')}`;
  const tpl = await migratedTemplate();
  await withAdmin((c) => c.query(`CREATE DATABASE ${name} TEMPLATE ${tpl}`));
  const u = new URL(TEST_POSTGRES_URL);
  u.pathname = `/${name}`;
  return {
    url: u.toString(),
    name,
    drop: () => withAdmin((c) => c.query(`DROP DATABASE IF EXISTS ${name} WITH (FORCE)`)).then(() => undefined),
  };
}

/** One query on the database at `url` (a test reading what the servers wrote). */
export async function pgQuery(url: string, sql: string, params: unknown[] = []): Promise<Record<string, unknown>[]> {
  const c = new pg.Client({ connectionString: url });
  await c.connect();
  try {
    return (await c.query(sql, params)).rows;
  } finally {
    await c.end();
  }
}

/**
 * A PostgreSQL database as a Sightline before a PostgreSQL migration that moved `tables` left it: the
 * SQLite file's control data copied (`migrate --to-postgres`), those tables still empty there — for
 * the tests that a server adopts its SQLite rows of moved tables once.
 */
export async function pgAsBeforeMove(dbFile: string, tables: readonly string[]): Promise<PgDatabase> {
  const db = await createPgDatabase();
  const sqlite = openDatabase(dbFile);
  const pgc = openSyncPg(db.url);
  try {
    copyControlToPostgres(sqlite, pgc);
    for (const table of tables) pgc.query(`DELETE FROM ${table}`);
  } finally {
    pgc.close();
    sqlite.close();
  }
  return db;
}
