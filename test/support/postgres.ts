/**
 * PostgreSQL for the tests (issue 20): the server at SIGHTLINE_TEST_POSTGRES_URL (default the local
 * one, 127.0.0.1:5432, user postgres), a fresh database per test server.
 */
import { randomUUID } from 'node:crypto';
import pg from 'pg';

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

export async function createPgDatabase(): Promise<PgDatabase> {
  const name = `sl_t_${randomUUID().replace(/-/g, '')}`;
  await withAdmin((c) => c.query(`CREATE DATABASE ${name}`));
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
