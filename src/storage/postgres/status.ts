/**
 * What system.status and /readyz say about PostgreSQL when control data is there (issue 20): whether it
 * answers, its version, and the schema version applied against the one this code knows. Asked over a
 * connection of its own, asynchronously and bounded — never through the synchronous client the
 * repositories use, which would hold the event loop while PostgreSQL is away — so a load balancer
 * polling `/readyz` sees a process whose PostgreSQL is unreachable as not ready, and stops sending it
 * traffic, instead of "ready" (the SQLite file it also checks is still writable).
 */
import pg from 'pg';
import { PG_LATEST_SCHEMA_VERSION } from './schema.js';

export interface PostgresStatus {
  reachable: boolean;
  error?: string;
  version?: string;
  schema?: { version: number; latest: number };
}

export interface PostgresProbe {
  status(): Promise<PostgresStatus>;
  close(): Promise<void>;
}

export function createPostgresProbe(url: string, timeoutMs = 2000): PostgresProbe {
  // One connection at most, closed when idle, never keeping the process alive.
  const pool = new pg.Pool({ connectionString: url, max: 1, connectionTimeoutMillis: timeoutMs, query_timeout: timeoutMs, idleTimeoutMillis: 10_000, allowExitOnIdle: true });
  pool.on('error', () => {}); // an idle connection dropped: the next probe opens another
  return {
    async status() {
      try {
        const r = await pool.query<{ v: string; schema: string | null }>("SELECT current_setting('server_version') AS v, (SELECT max(version) FROM schema_migrations) AS schema");
        const row = r.rows[0]!;
        return { reachable: true, version: row.v, schema: { version: Number(row.schema ?? 0), latest: PG_LATEST_SCHEMA_VERSION } };
      } catch (err) {
        return { reachable: false, error: (err as Error).message || String(err) };
      }
    },
    async close() {
      await pool.end().catch(() => {});
    },
  };
}
