import Database from 'better-sqlite3';
import { copyFileSync, existsSync, readFileSync, renameSync, rmSync, statSync, writeFileSync } from 'node:fs';
import { LATEST_SCHEMA_VERSION } from './migrations/index.js';

/**
 * Backup and restore of the SQLite file, and the lock file that tells a restore a server is using it.
 *
 * A backup is `VACUUM INTO`: it reads one snapshot (a WAL read transaction), so it is consistent as of
 * its start while ingestion keeps committing, never restarts under writes the way the page-copying
 * backup API does, and writes a compact file. It goes to `<file>.partial` and is renamed when complete,
 * so a backup file that exists is whole.
 */
export interface BackupResult {
  file: string;
  bytes: number;
  ms: number;
  schemaVersion: number;
}

export function backupDatabase(dbFile: string, target: string, opts: { db?: Database.Database; overwrite?: boolean } = {}): BackupResult {
  if (existsSync(target) && !opts.overwrite) throw new Error(`${target} exists: choose another file name (a backup never overwrites).`);
  const started = Date.now();
  const db = opts.db ?? new Database(dbFile, { fileMustExist: true });
  try {
    if (!opts.db) db.pragma('busy_timeout = 5000');
    const partial = `${target}.partial`;
    rmSync(partial, { force: true });
    db.prepare('VACUUM INTO ?').run(partial);
    renameSync(partial, target);
    const schemaVersion = db.pragma('user_version', { simple: true }) as number;
    return { file: target, bytes: statSync(target).size, ms: Date.now() - started, schemaVersion };
  } finally {
    if (!opts.db) db.close();
  }
}

// ---- the lock file: which process serves a database ----------------------------------------------

export const lockFileOf = (dbFile: string) => `${dbFile}.lock`;

/** Written by a running server; removed on a clean stop (a crash leaves it, and its pid is dead). */
export function writeLock(dbFile: string): () => void {
  if (dbFile === ':memory:') return () => {};
  const file = lockFileOf(dbFile);
  writeFileSync(file, JSON.stringify({ pid: process.pid, started_at: new Date().toISOString() }));
  return () => {
    try {
      if (JSON.parse(readFileSync(file, 'utf8')).pid === process.pid) rmSync(file, { force: true });
    } catch {
      // already gone
    }
  };
}

/** The pid of a live process serving `dbFile`, or null. */
export function runningServer(dbFile: string): number | null {
  try {
    const { pid } = JSON.parse(readFileSync(lockFileOf(dbFile), 'utf8')) as { pid: number };
    if (!Number.isInteger(pid)) return null;
    process.kill(pid, 0);
    return pid;
  } catch (err) {
    // ESRCH: no such process (a stale lock); EPERM: alive but someone else's.
    return (err as NodeJS.ErrnoException).code === 'EPERM' ? -1 : null;
  }
}

export interface RestoreResult {
  restored: string;
  from: string;
  /** Where the database that was replaced went (null when there was none). */
  previous: string | null;
  schemaVersion: number;
  bytes: number;
}

export class RestoreRefusedError extends Error {}

/**
 * Replaces `dbFile` with a backup. Refuses while a server runs on `dbFile`, and refuses a backup that
 * fails `integrity_check` or comes from a newer Sightline. The replaced database is kept beside it.
 */
export function restoreDatabase(backupFile: string, dbFile: string, now = Date.now()): RestoreResult {
  const pid = runningServer(dbFile);
  if (pid !== null) throw new RestoreRefusedError(`A Sightline server (pid ${pid === -1 ? 'unknown' : pid}) is running on ${dbFile}: stop it first, then restore.`);
  if (!existsSync(backupFile)) throw new RestoreRefusedError(`${backupFile} does not exist.`);
  const check = new Database(backupFile, { readonly: true, fileMustExist: true });
  let schemaVersion: number;
  try {
    const integrity = check.pragma('integrity_check', { simple: true });
    if (integrity !== 'ok') throw new RestoreRefusedError(`${backupFile} fails integrity_check (${String(integrity)}): not restoring it.`);
    schemaVersion = check.pragma('user_version', { simple: true }) as number;
  } finally {
    check.close();
  }
  if (schemaVersion > LATEST_SCHEMA_VERSION) throw new RestoreRefusedError(`${backupFile} comes from a newer Sightline (schema ${schemaVersion}; this version knows up to ${LATEST_SCHEMA_VERSION}).`);
  const tmp = `${dbFile}.restoring`;
  copyFileSync(backupFile, tmp);
  let previous: string | null = null;
  if (existsSync(dbFile)) {
    previous = `${dbFile}.before-restore-${new Date(now).toISOString().replace(/[:.]/g, '-')}`;
    // Fold the WAL into the old file before moving it, so the kept copy is whole.
    const old = new Database(dbFile);
    try {
      old.pragma('wal_checkpoint(TRUNCATE)');
    } finally {
      old.close();
    }
    renameSync(dbFile, previous);
  }
  for (const suffix of ['-wal', '-shm']) rmSync(`${dbFile}${suffix}`, { force: true });
  renameSync(tmp, dbFile);
  return { restored: dbFile, from: backupFile, previous, schemaVersion, bytes: statSync(dbFile).size };
}
