import Database from 'better-sqlite3';
import { existsSync, mkdirSync, statSync } from 'node:fs';
import { dirname } from 'node:path';
import { LATEST_SCHEMA_VERSION, MIGRATIONS, type Migration } from './migrations/index.js';
import { backupDatabase } from './backup.js';

export type Db = Database.Database;

export interface OpenOptions {
  /** Progress lines (migrations applied, backups taken); default silent. */
  log?: (message: string, fields?: Record<string, unknown>) => void;
  /** Take a backup before a migration that rewrites a large table (default true). */
  backupBeforeMigration?: boolean;
  /** The migrations to apply (tests); default all of them. */
  migrations?: readonly Migration[];
}

/** The database was written by a newer Sightline: refusing to start beats corrupting it. */
export class DatabaseTooNewError extends Error {
  constructor(
    readonly found: number,
    readonly known: number,
  ) {
    super(
      `This database was written by a newer Sightline (schema version ${found}; this version knows up to ${known}). ` +
        'Run the newer version, or restore a backup taken before the upgrade (`sightline restore <file>`).',
    );
  }
}

/**
 * Opens the SQLite file in WAL mode with a busy timeout and applies pending migrations.
 * synchronous=NORMAL in WAL mode: a committed transaction survives a process crash (SIGKILL);
 * only an OS crash or power loss can lose the last commits. New databases use incremental
 * auto-vacuum, so space freed by retention is returned to the file system (PRAGMA incremental_vacuum).
 */
export function openDatabase(file: string, opts: OpenOptions = {}): Db {
  if (file !== ':memory:') mkdirSync(dirname(file), { recursive: true });
  const isNew = file === ':memory:' || !existsSync(file) || statSync(file).size === 0;
  const db = new Database(file);
  // Must precede the first table: auto_vacuum of an existing file changes only with a VACUUM.
  if (isNew) db.pragma('auto_vacuum = INCREMENTAL');
  db.pragma('journal_mode = WAL');
  db.pragma('busy_timeout = 5000');
  db.pragma('synchronous = NORMAL');
  db.pragma('foreign_keys = ON');
  db.pragma('temp_store = MEMORY');
  db.pragma('cache_size = -65536');
  writeTransactionsFirstTakeTheLock(db);
  try {
    migrate(db, { ...opts, file });
  } catch (err) {
    db.close();
    throw err;
  }
  return db;
}

/**
 * `db.transaction(fn)` called as it is runs BEGIN IMMEDIATE (its `.deferred` is still there). Every
 * transaction this code opens writes, and many read first (an upsert's look-up, expiry's keys): as
 * a deferred transaction that read and then asked for the write lock, one fails at once with
 * SQLITE_BUSY, without the busy timeout, when another connection holds the lock then — the WAL
 * checkpoint worker's RESTART, another process on the same file. Taking the lock first, it waits.
 * Nested calls are savepoints either way.
 */
function writeTransactionsFirstTakeTheLock(db: Db): void {
  const transaction = db.transaction.bind(db);
  db.transaction = ((fn: (...args: never[]) => unknown) => {
    const t = transaction(fn);
    const immediate = t.immediate;
    return Object.assign((...args: never[]) => immediate(...args), { default: immediate, deferred: t.deferred, immediate, exclusive: t.exclusive });
  }) as Db['transaction'];
}

/**
 * Applies every migration not yet recorded in `schema_migrations`, in version order. Recording
 * each version (not only the highest, in user_version) lets migrations written in parallel land in
 * any order. A database that records a version this code does not know is refused.
 */
export function migrate(db: Db, opts: OpenOptions & { file?: string } = {}): void {
  db.exec('CREATE TABLE IF NOT EXISTS schema_migrations (version INTEGER PRIMARY KEY, name TEXT NOT NULL, applied_at INTEGER NOT NULL)');
  const userVersion = db.pragma('user_version', { simple: true }) as number;
  const recorded = new Set((db.prepare('SELECT version FROM schema_migrations').pluck().all() as number[]));
  const migrations = opts.migrations ?? MIGRATIONS;
  const latest = opts.migrations ? Math.max(0, ...migrations.map((m) => m.version)) : LATEST_SCHEMA_VERSION;
  const known = new Set(migrations.map((m) => m.version));
  const unknown = [...recorded].filter((v) => !known.has(v));
  if (userVersion > latest || unknown.length) throw new DatabaseTooNewError(Math.max(userVersion, ...unknown), latest);
  const record = db.prepare('INSERT OR IGNORE INTO schema_migrations (version, name, applied_at) VALUES (?, ?, ?)');
  if (!recorded.size && userVersion > 0) {
    // A database from before schema_migrations: user_version says how far it got.
    db.transaction(() => {
      for (const m of migrations) if (m.version <= userVersion) record.run(m.version, m.name, Date.now());
    })();
    for (const m of migrations) if (m.version <= userVersion) recorded.add(m.version);
  }
  const pending = migrations.filter((m) => !recorded.has(m.version)).sort((a, b) => a.version - b.version);
  if (!pending.length) return;
  const hasData = recorded.size > 0;
  // Backfills sort whole tables (migration 007 orders every span by trace): let the sorter spill to
  // temporary files rather than hold a large database's rows in memory, then restore the setting.
  const tempStore = db.pragma('temp_store', { simple: true }) as number;
  db.pragma('temp_store = FILE');
  try {
    applyPending(db, pending, record, hasData, opts);
  } finally {
    db.pragma(`temp_store = ${tempStore}`);
  }
}

function applyPending(db: Db, pending: Migration[], record: Database.Statement, hasData: boolean, opts: OpenOptions & { file?: string }): void {
  for (const m of pending) {
    if (m.rewritesLargeTable && hasData && opts.file && opts.file !== ':memory:' && opts.backupBeforeMigration !== false) {
      const target = `${opts.file}.before-migration-${m.version}.bak`;
      opts.log?.(`migration ${m.version} (${m.name}) rewrites a large table: backing up to ${target}`);
      const b = backupDatabase(opts.file, target, { db, overwrite: true });
      opts.log?.(`backup done`, { file: target, bytes: b.bytes, ms: b.ms });
    }
    const started = Date.now();
    if (hasData) opts.log?.(`applying migration ${m.version} (${m.name})`);
    applyOne(db, m, record);
    if (hasData) opts.log?.(`migration ${m.version} applied`, { ms: Date.now() - started });
  }
}

function applyOne(db: Db, m: Migration, record: Database.Statement): void {
  db.transaction(() => {
    db.exec(m.sql);
    m.backfill?.(db);
    record.run(m.version, m.name, Date.now());
    const top = db.prepare('SELECT max(version) FROM schema_migrations').pluck().get() as number;
    db.pragma(`user_version = ${top}`);
  })();
}
