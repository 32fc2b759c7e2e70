/**
 * Backup, restore, safe upgrades and graceful shutdown: a backup taken during ingest restores to a
 * database that passes integrity_check and holds every write acknowledged before it started; restore
 * refuses a running server's database, a damaged file and a newer schema; a database from a newer
 * Sightline is refused at start; migrations written in parallel apply in any order; a migration that
 * rewrites a large table is preceded by a backup; SIGTERM lets in-flight requests finish.
 */
import { spawn, type ChildProcess } from 'node:child_process';
import { existsSync, mkdtempSync, writeFileSync } from 'node:fs';
import { connect } from 'node:net';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import Database from 'better-sqlite3';
import { afterAll, describe, expect, it } from 'vitest';
import { startTestServer } from '../helpers/server.js';
import { backupDatabase, restoreDatabase, RestoreRefusedError, writeLock } from '../../src/storage/backup.js';
import { DatabaseTooNewError, migrate, openDatabase } from '../../src/storage/db.js';
import { LATEST_SCHEMA_VERSION, type Migration } from '../../src/storage/migrations/index.js';
import { BIN, ROOT, runBin } from '../cli/helpers.js';

const dir = () => mkdtempSync(join(tmpdir(), 'sightline-ops-'));
const children: ChildProcess[] = [];
afterAll(() => {
  for (const c of children) c.kill('SIGKILL');
});

describe('backup during ingest', () => {
  it('restores to a database that passes integrity_check and holds every write acknowledged before the backup started', async () => {
    const t = await startTestServer();
    const acked: string[] = [];
    let stop = false;
    let n = 0;
    const sender = async () => {
      while (!stop) {
        const id = `fb-${n++}`;
        const r = await fetch(`${t.url}/v1/projects/${t.projectId}/feedback`, {
          method: 'POST',
          headers: { 'content-type': 'application/json', 'x-service-key': t.keys.ingest },
          body: JSON.stringify({ message: id }),
        });
        if (r.status === 201) acked.push(id);
      }
    };
    // Feedback has a per-minute quota: a few senders, a short burst.
    const senders = [sender(), sender()];
    while (acked.length < 5) await new Promise((r) => setTimeout(r, 5));
    const ackedBefore = [...acked];
    const target = join(dir(), 'live.bak');
    const result = backupDatabase(t.s.config.dbFile, target);
    stop = true;
    await Promise.all(senders);
    expect(result).toMatchObject({ file: target, schemaVersion: LATEST_SCHEMA_VERSION });
    expect(result.bytes).toBeGreaterThan(0);

    const restoredFile = join(dir(), 'restored.db');
    const r = restoreDatabase(target, restoredFile);
    expect(r.previous).toBeNull();
    const db = new Database(restoredFile, { readonly: true });
    try {
      expect(db.pragma('integrity_check', { simple: true })).toBe('ok');
      const messages = new Set(db.prepare('SELECT message FROM feedback').pluck().all() as string[]);
      for (const id of ackedBefore) expect(messages.has(id), id).toBe(true);
    } finally {
      db.close();
    }
    await t.close();
  });

  it('never overwrites an existing file', () => {
    const d = dir();
    const src = join(d, 'a.db');
    openDatabase(src).close();
    writeFileSync(join(d, 'taken.bak'), 'x');
    expect(() => backupDatabase(src, join(d, 'taken.bak'))).toThrow(/exists/);
  });
});

describe('restore', () => {
  it('refuses while a server runs on the database, and replaces it once stopped, keeping the old one', () => {
    const d = dir();
    const file = join(d, 'main.db');
    const db = openDatabase(file);
    db.prepare("INSERT INTO server_state (key, value, updated_at) VALUES ('marker', 'current', 0)").run();
    const backup = join(d, 'b.bak');
    backupDatabase(file, backup, { db });
    db.prepare("UPDATE server_state SET value = 'changed after the backup' WHERE key = 'marker'").run();
    const unlock = writeLock(file); // as a running server does
    expect(() => restoreDatabase(backup, file)).toThrow(RestoreRefusedError);
    expect(() => restoreDatabase(backup, file)).toThrow(new RegExp(`pid ${process.pid}.*stop it first`));
    unlock();
    db.close();
    const r = restoreDatabase(backup, file, Date.parse('2026-06-01T00:00:00Z'));
    expect(r.previous).toBe(`${file}.before-restore-2026-06-01T00-00-00-000Z`);
    const restored = new Database(file);
    expect(restored.prepare("SELECT value FROM server_state WHERE key = 'marker'").pluck().get()).toBe('current');
    restored.close();
    const kept = new Database(r.previous!);
    expect(kept.prepare("SELECT value FROM server_state WHERE key = 'marker'").pluck().get()).toBe('changed after the backup');
    kept.close();
  });

  it('refuses a damaged file and a backup from a newer Sightline', () => {
    const d = dir();
    writeFileSync(join(d, 'junk.bak'), Buffer.alloc(8192, 7));
    expect(() => restoreDatabase(join(d, 'junk.bak'), join(d, 'x.db'))).toThrow();
    expect(existsSync(join(d, 'x.db'))).toBe(false);
    const newer = join(d, 'newer.bak');
    const db = new Database(newer);
    db.pragma(`user_version = ${LATEST_SCHEMA_VERSION + 1}`);
    db.close();
    expect(() => restoreDatabase(newer, join(d, 'x.db'))).toThrow(/newer Sightline/);
  });

  it('works from the CLI, printing what it did', async () => {
    const d = dir();
    const file = join(d, 'cli.db');
    openDatabase(file).close();
    const env = { SIGHTLINE_DB: file, HOME: d };
    const b = await runBin(['backup', join(d, 'cli.bak')], env);
    expect(b.code, b.stderr).toBe(0);
    expect(b.stdout).toMatch(new RegExp(`^backed up ${file} to ${d}/cli\\.bak: \\d+ bytes, schema version ${LATEST_SCHEMA_VERSION}, \\d+ ms$`, 'm'));
    const r = await runBin(['restore', join(d, 'cli.bak')], env);
    expect(r.code, r.stderr).toBe(0);
    expect(r.stdout).toMatch(/^restored .*cli\.db from .*cli\.bak \(\d+ bytes, schema version \d+\); the database it replaced is kept as .*before-restore-/m);
  });

  it('refuses from the CLI when the data is in PostgreSQL or ClickHouse, unless --sqlite-only says the file alone is meant', async () => {
    const d = dir();
    const file = join(d, 'split.db');
    openDatabase(file).close();
    for (const [k, tool] of [['SIGHTLINE_DATABASE_URL', /pg_dump/], ['SIGHTLINE_CLICKHOUSE_URL', /ClickHouse/]] as const) {
      const env = { SIGHTLINE_DB: file, HOME: d, [k]: k === 'SIGHTLINE_DATABASE_URL' ? 'postgres://127.0.0.1:1/none' : 'http://127.0.0.1:1/none' };
      for (const verb of ['backup', 'restore']) {
        const r = await runBin([verb, join(d, `${verb}.bak`)], env);
        expect(r.code, r.stderr).toBe(2);
        expect(r.stderr).toMatch(tool);
        expect(r.stderr).toContain('--sqlite-only');
      }
      expect(existsSync(join(d, 'backup.bak'))).toBe(false);
    }
    const b = await runBin(['backup', join(d, 'only.bak'), '--sqlite-only'], { SIGHTLINE_DB: file, HOME: d, SIGHTLINE_DATABASE_URL: 'postgres://127.0.0.1:1/none' });
    expect(b.code, b.stderr).toBe(0);
    expect(existsSync(join(d, 'only.bak'))).toBe(true);
  });
});

describe('upgrades', () => {
  const m = (version: number, sql: string, rewritesLargeTable = false): Migration => ({ version, name: `m${version}`, sql, rewritesLargeTable });

  it('refuses a database written by a newer Sightline, saying what to do', () => {
    const file = join(dir(), 'n.db');
    const db = new Database(file);
    db.pragma(`user_version = ${LATEST_SCHEMA_VERSION + 5}`);
    db.close();
    expect(() => openDatabase(file)).toThrow(DatabaseTooNewError);
    expect(() => openDatabase(file)).toThrow(/written by a newer Sightline \(schema version \d+; this version knows up to \d+\)\. Run the newer version, or restore a backup/);
  });

  it('applies a migration written in parallel that lands after a higher-numbered one', () => {
    const db = new Database(':memory:');
    migrate(db, { migrations: [m(1, 'CREATE TABLE a (x)'), m(5, 'CREATE TABLE e (x)')] });
    migrate(db, { migrations: [m(1, 'CREATE TABLE a (x)'), m(3, 'CREATE TABLE c (x)'), m(5, 'CREATE TABLE e (x)')] });
    expect(db.prepare("SELECT name FROM sqlite_master WHERE type = 'table' AND name IN ('a', 'c', 'e') ORDER BY name").pluck().all()).toEqual(['a', 'c', 'e']);
    expect(db.pragma('user_version', { simple: true })).toBe(5);
  });

  it('takes a backup before a migration that rewrites a large table, and reports progress', () => {
    const file = join(dir(), 'big.db');
    const first = [m(1, 'CREATE TABLE big (x)'), m(2, "INSERT INTO big VALUES ('before the rewrite')")];
    const db = new Database(file);
    migrate(db, { migrations: first, file });
    const lines: string[] = [];
    migrate(db, { migrations: [...first, m(3, "UPDATE big SET x = 'rewritten'", true)], file, log: (msg) => lines.push(msg) });
    db.close();
    const bak = `${file}.before-migration-3.bak`;
    expect(existsSync(bak)).toBe(true);
    const old = new Database(bak, { readonly: true });
    expect(old.prepare('SELECT x FROM big').pluck().get()).toBe('before the rewrite');
    old.close();
    expect(lines).toEqual([`migration 3 (m3) rewrites a large table: backing up to ${bak}`, 'backup done', 'applying migration 3 (m3)', 'migration 3 applied']);
  });
});

describe('graceful shutdown', () => {
  it('on SIGTERM refuses new connections, finishes the request in flight, and exits 0', async () => {
    const d = dir();
    const db = join(d, 'g.db');
    const port = 20000 + Math.floor(Math.random() * 20000);
    const child = spawn(process.execPath, [BIN, 'start'], { cwd: ROOT, env: { ...process.env, SIGHTLINE_DB: db, PORT: String(port), HOST: '127.0.0.1', LOG_LEVEL: 'warn' }, stdio: ['ignore', 'pipe', 'pipe'] });
    children.push(child);
    let out = '';
    child.stdout!.on('data', (x) => (out += x));
    child.stderr!.on('data', (x) => (out += x));
    const exited = new Promise<number | null>((resolve) => child.on('exit', (code) => resolve(code)));
    for (let i = 0; i < 400 && !/ingest key/.test(out); i++) await new Promise((r) => setTimeout(r, 50));
    const key = /ingest key\s+(sl_[0-9a-f]+)/.exec(out)![1]!;
    const project = /project\s+(\S+)/.exec(out)![1]!;

    // A request whose body is still arriving when SIGTERM comes.
    const body = JSON.stringify({ message: 'sent across the shutdown' });
    const socket = connect(port, '127.0.0.1');
    await new Promise<void>((r) => socket.once('connect', () => r()));
    let response = '';
    socket.on('data', (x) => (response += x));
    const closed = new Promise<void>((r) => socket.on('close', () => r()));
    socket.write(`POST /v1/projects/${project}/feedback HTTP/1.1\r\nHost: 127.0.0.1\r\nContent-Type: application/json\r\nx-service-key: ${key}\r\nContent-Length: ${Buffer.byteLength(body)}\r\nConnection: close\r\n\r\n`);
    socket.write(body.slice(0, 10));
    await new Promise((r) => setTimeout(r, 200));
    child.kill('SIGTERM');
    await new Promise((r) => setTimeout(r, 300));
    // Not accepting any more.
    const refused = await fetch(`http://127.0.0.1:${port}/healthz`).then(
      () => false,
      () => true,
    );
    expect(refused).toBe(true);
    socket.end(body.slice(10));
    await closed;
    expect(response).toMatch(/^HTTP\/1\.1 201 /);
    expect(await exited).toBe(0);
    const check = new Database(db, { readonly: true });
    expect(check.prepare('SELECT message FROM feedback').pluck().all()).toEqual(['sent across the shutdown']);
    check.close();
  });
});
