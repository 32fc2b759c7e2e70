import Database from 'better-sqlite3';
import { mkdirSync } from 'node:fs';
import { dirname } from 'node:path';
import { MIGRATIONS } from './migrations/index.js';

export type Db = Database.Database;

/**
 * Opens the SQLite file in WAL mode with a busy timeout and applies pending migrations.
 * synchronous=NORMAL in WAL mode: a committed transaction survives a process crash (SIGKILL);
 * only an OS crash or power loss can lose the last commits.
 */
export function openDatabase(file: string): Db {
  if (file !== ':memory:') mkdirSync(dirname(file), { recursive: true });
  const db = new Database(file);
  db.pragma('journal_mode = WAL');
  db.pragma('busy_timeout = 5000');
  db.pragma('synchronous = NORMAL');
  db.pragma('foreign_keys = ON');
  db.pragma('temp_store = MEMORY');
  db.pragma('cache_size = -65536');
  migrate(db);
  return db;
}

export function migrate(db: Db): void {
  const current = db.pragma('user_version', { simple: true }) as number;
  if (!MIGRATIONS.some((m) => m.version > current)) return;
  // Backfills sort whole tables (migration 007 orders every span by trace): let the sorter spill to
  // temporary files rather than hold a large database's rows in memory, then restore the setting.
  const tempStore = db.pragma('temp_store', { simple: true }) as number;
  db.pragma('temp_store = FILE');
  try {
    for (const m of MIGRATIONS) {
      if (m.version <= current) continue;
      db.transaction(() => {
        db.exec(m.sql);
        db.pragma(`user_version = ${m.version}`);
      })();
    }
  } finally {
    db.pragma(`temp_store = ${tempStore}`);
  }
}
