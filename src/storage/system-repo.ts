import { statSync } from 'node:fs';
import type { Db } from './db.js';
import { LATEST_SCHEMA_VERSION, MIGRATIONS } from './migrations/index.js';

/** Facts about the database itself: writability, schema, file and page sizes. */
export interface SystemRepo {
  /** Commits a one-row write with a short lock wait: proves the file is writable and the disk not full. */
  probeWritable(now: number): { ok: true } | { ok: false; detail: string };
  schema(): { version: number; latest: number; pending: number };
  /** Bytes of the database file and its WAL (0 when absent); pages in use and free. */
  sizes(): { db_bytes: number; wal_bytes: number; page_size: number; page_count: number; freelist_pages: number };
}

export function createSystemRepo(db: Db, dbFile: string): SystemRepo {
  const probe = db.prepare("INSERT INTO server_state (key, value, updated_at) VALUES ('readiness_probe', 'ok', ?) ON CONFLICT(key) DO UPDATE SET updated_at = excluded.updated_at");
  const applied = db.prepare('SELECT count(*) FROM schema_migrations').pluck();
  const fileSize = (f: string) => {
    try {
      return statSync(f).size;
    } catch {
      return 0;
    }
  };
  return {
    probeWritable(now) {
      const wait = db.pragma('busy_timeout', { simple: true }) as number;
      db.pragma('busy_timeout = 250');
      try {
        probe.run(now);
        return { ok: true };
      } catch (err) {
        const e = err as { code?: string; message?: string };
        return { ok: false, detail: `database not writable (${e.code ?? e.message ?? 'error'})` };
      } finally {
        db.pragma(`busy_timeout = ${wait}`);
      }
    },
    schema() {
      const version = db.pragma('user_version', { simple: true }) as number;
      return { version, latest: LATEST_SCHEMA_VERSION, pending: MIGRATIONS.length - (applied.get() as number) };
    },
    sizes() {
      return {
        db_bytes: dbFile === ':memory:' ? 0 : fileSize(dbFile),
        wal_bytes: dbFile === ':memory:' ? 0 : fileSize(`${dbFile}-wal`),
        page_size: db.pragma('page_size', { simple: true }) as number,
        page_count: db.pragma('page_count', { simple: true }) as number,
        freelist_pages: db.pragma('freelist_count', { simple: true }) as number,
      };
    },
  };
}
