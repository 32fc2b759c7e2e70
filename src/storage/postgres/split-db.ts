/**
 * The database handle the repositories get when SIGHTLINE_DATABASE_URL is set (issue 20): control
 * data in PostgreSQL, telemetry where it was (SQLite, or ClickHouse for what has moved there).
 *
 * It is the SQLite handle with `prepare`, `exec` and `transaction` routed: a statement whose tables
 * are all control tables (control-tables.ts) runs on PostgreSQL, translated once when it is prepared
 * (dialect.ts), through SyncPg, so the repositories stay synchronous and unchanged; any other
 * statement is SQLite's own prepared statement, at SQLite's speed. A statement that mixes the two
 * kinds is refused when it is prepared, naming its tables: it is found at start-up, not in a request.
 *
 * Transactions: `db.transaction(fn)` is SQLite's, and a PostgreSQL transaction (a savepoint when
 * nested) is opened only when `fn` first runs a PostgreSQL statement; it commits just before SQLite
 * does, and rolls back when `fn` throws; it holds an advisory lock until then, so transactions
 * that touch PostgreSQL run one at a time across every process, as SQLite's write lock makes them
 * on one file (the feedback quota's count-then-insert stays exact). Each side is atomic; a failure between the two commits (the
 * PostgreSQL commit succeeded, SQLite's then failed) can leave the PostgreSQL part alone — no
 * repository writes both kinds in one transaction except error groups with their events, which
 * stay together on SQLite.
 */
import type Database from 'better-sqlite3';
import type { Db } from '../db.js';
import { SyncPgError, type SyncPg } from './sync-client.js';
import { splitStatements, tablesOf, translate, type SchemaInfo, type Translated } from './dialect.js';
import { CONTROL_TABLES } from './control-tables.js';

export class SqliteLikeError extends Error {
  constructor(
    message: string,
    readonly code: string,
  ) {
    super(message);
    this.name = 'SqliteError';
  }
}

/** PostgreSQL's SQLSTATE as the SQLite error code the code above may test. */
function sqliteError(err: unknown, sql: string): unknown {
  if (!(err instanceof SyncPgError)) return err;
  const codes: Record<string, [string, string]> = {
    '23505': ['SQLITE_CONSTRAINT_UNIQUE', 'UNIQUE constraint failed'],
    '23503': ['SQLITE_CONSTRAINT_FOREIGNKEY', 'FOREIGN KEY constraint failed'],
    '23514': ['SQLITE_CONSTRAINT_CHECK', 'CHECK constraint failed'],
    '23502': ['SQLITE_CONSTRAINT_NOTNULL', 'NOT NULL constraint failed'],
  };
  const c = err.code ? codes[err.code] : undefined;
  return c ? new SqliteLikeError(`${c[1]}: ${err.message}`, c[0]) : new SyncPgError(`${err.message} (in: ${sql.replace(/\s+/g, ' ').slice(0, 300)})`, err.code);
}

/** The advisory lock every transaction holds (an arbitrary constant: "SLWR"). */
const WRITE_LOCK = 0x534c5752;

interface Frame {
  opened: boolean;
}

export interface SplitDatabase {
  db: Db;
  pg: SyncPg;
}

export function openSplitDatabase(sqlite: Db, pg: SyncPg, opts: { control?: ReadonlySet<string> } = {}): Db {
  const control = opts.control ?? CONTROL_TABLES;
  const frames: Frame[] = [];
  const schema = schemaInfo(sqlite);

  /** Opens, in order, the PostgreSQL transaction and savepoints of the frames that have none yet. */
  function ensureOpen(): void {
    for (let i = 0; i < frames.length; i++) {
      const f = frames[i]!;
      if (f.opened) continue;
      // A transaction takes one advisory lock for its duration, as a SQLite transaction takes the
      // file's write lock: check-then-write blocks (the feedback quota, idempotency keys) stay exact
      // across processes, on one machine or several.
      // Sent with the statement that needs it, in one round trip (SyncPg.defer).
      pg.defer(i === 0 ? `BEGIN; SELECT pg_advisory_xact_lock(${WRITE_LOCK})` : `SAVEPOINT f${i}`);
      f.opened = true;
    }
  }
  function finish(depth: number, commit: boolean): void {
    const f = frames[depth]!;
    if (!f.opened) return;
    f.opened = false;
    if (depth === 0) pg.query(commit ? 'COMMIT' : 'ROLLBACK');
    // A nested frame's end goes with the next statement (at the latest the COMMIT; a ROLLBACK drops it).
    else pg.defer(commit ? `RELEASE SAVEPOINT f${depth}` : `ROLLBACK TO SAVEPOINT f${depth}`);
  }

  function run(t: Translated, sql: string, args: unknown[], array: boolean) {
    const values = bind(t, args, sql);
    const inTxn = frames.length > 0;
    if (inTxn) ensureOpen();
    try {
      // A failed write inside a transaction must leave it usable, as in SQLite: it runs in a savepoint of
      // its own. Reads do not (two round trips fewer); a read that fails aborts the frame, whose
      // rollback (the job's savepoint, or the transaction) restores it.
      const guard = inTxn && !/^\s*SELECT\b/i.test(t.text);
      return array ? pg.queryArrays(t.text, values, { guard }) : pg.query(t.text, values, { guard });
    } catch (err) {
      throw sqliteError(err, t.text);
    }
  }

  function route(sql: string): 'pg' | 'sqlite' {
    const tables = tablesOf(sql);
    const inPg = tables.filter((t) => control.has(t));
    if (!inPg.length) return 'sqlite';
    if (inPg.length < tables.length) {
      throw new Error(
        `This statement joins control tables (${inPg.join(', ')}, in PostgreSQL) with telemetry tables (${tables.filter((t) => !control.has(t)).join(', ')}, in SQLite): ${sql.replace(/\s+/g, ' ').slice(0, 300)}`,
      );
    }
    return 'pg';
  }

  const prepare = (sql: string) => {
    if (/^\s*PRAGMA\s+data_version\s*;?\s*$/i.test(sql)) return dataVersionStatement(sqlite, pg);
    if (route(sql) === 'sqlite') return sqlite.prepare(sql);
    return new PgStatement(sql, translate(sql, schema), run) as unknown as Database.Statement;
  };

  const exec = (sql: string) => {
    for (const stmt of splitStatements(sql)) {
      if (route(stmt) === 'sqlite') sqlite.exec(stmt);
      else run(translate(stmt, schema), stmt, [], false);
    }
    return proxy;
  };

  const sqliteTransaction = sqlite.transaction.bind(sqlite);
  const transaction = ((fn: (...a: never[]) => unknown) => {
    const wrapped = (...a: never[]) => {
      const depth = frames.length;
      frames.push({ opened: false });
      try {
        const out = fn(...a);
        finish(depth, true);
        return out;
      } catch (err) {
        try {
          finish(depth, false);
        } catch {
          /* the PostgreSQL side is gone: SQLite's rollback still runs */
        }
        throw err;
      } finally {
        frames.length = depth;
      }
    };
    const t = sqliteTransaction(wrapped);
    return Object.assign((...a: never[]) => t(...a), { default: t.default, deferred: t.deferred, immediate: t.immediate, exclusive: t.exclusive });
  }) as Db['transaction'];

  const close = () => {
    try {
      pg.close();
    } finally {
      sqlite.close();
    }
  };

  const overrides: Record<PropertyKey, unknown> = { prepare, exec, transaction, close, postgres: pg };
  const proxy = new Proxy(sqlite, {
    get(target, prop) {
      if (prop in overrides) return overrides[prop];
      const v = Reflect.get(target, prop, target);
      return typeof v === 'function' ? v.bind(target) : v;
    },
  });
  return proxy;
}

/** The PostgreSQL handle behind a split database, if `db` is one. */
export function postgresOf(db: Db): SyncPg | undefined {
  return (db as unknown as { postgres?: SyncPg }).postgres;
}

function bind(t: Translated, args: unknown[], sql: string): unknown[] {
  const flat: unknown[] = [];
  let named: Record<string, unknown> | null = null;
  for (const a of args) {
    if (Array.isArray(a)) flat.push(...a);
    else if (a && typeof a === 'object' && !Buffer.isBuffer(a) && !(a instanceof Uint8Array)) named = a as Record<string, unknown>;
    else flat.push(a);
  }
  return t.params.map((p) => {
    if ('name' in p) {
      if (!named || !(p.name in named)) throw new RangeError(`Missing named parameter "${p.name}" for: ${sql.slice(0, 200)}`);
      return value(named[p.name]);
    }
    if (p.index >= flat.length) throw new RangeError(`Too few parameter values were provided for: ${sql.slice(0, 200)}`);
    return value(flat[p.index]);
  });
}

function value(v: unknown): unknown {
  if (v === undefined) return null;
  if (typeof v === 'bigint') return v.toString();
  return v;
}

type Runner = (t: Translated, sql: string, args: unknown[], array: boolean) => { rows: unknown[]; rowCount: number };

/** A prepared statement on PostgreSQL with better-sqlite3's methods (run, get, all, iterate, pluck, raw). */
class PgStatement {
  private plucked = false;
  private rawRows = false;
  readonly reader: boolean;
  /** PostgreSQL's copy of SQLite's implicit rowid is a real column: `SELECT *` must not return it. */
  private readonly hideRowid: boolean;
  constructor(
    readonly source: string,
    private readonly t: Translated,
    private readonly runner: Runner,
  ) {
    this.reader = /^\s*(SELECT|WITH|VALUES)\b/i.test(source) || /\bRETURNING\b/i.test(source);
    this.hideRowid = !/\browid\b/i.test(source.split(/\bFROM\b/i)[0]!);
  }
  pluck(on = true) {
    this.plucked = on;
    if (on) this.rawRows = false;
    return this;
  }
  raw(on = true) {
    this.rawRows = on;
    if (on) this.plucked = false;
    return this;
  }
  bind() {
    throw new Error('bind() is not supported on a PostgreSQL statement');
  }
  run(...args: unknown[]) {
    const r = this.runner(this.t, this.source, args, false);
    const key = this.t.returnsKey ? (r.rows[0] as Record<string, unknown> | undefined) : undefined;
    return { changes: r.rowCount, lastInsertRowid: key ? Number(Object.values(key)[0]) : 0 };
  }
  private rows(args: unknown[]): unknown[] {
    const array = this.plucked || this.rawRows;
    let r;
    try {
      r = this.runner(this.t, this.source, args, array);
    } catch (err) {
      // A value that cannot be the column's type (a text id where a number is kept) matches no row,
      // as it does in SQLite.
      if (err instanceof SyncPgError && err.code === '22P02') return [];
      throw err;
    }
    if (this.plucked) return (r.rows as unknown[][]).map((a) => a[0]);
    if (this.hideRowid && !this.rawRows) for (const row of r.rows as Array<Record<string, unknown>>) delete row.rowid;
    return r.rows;
  }
  get(...args: unknown[]) {
    return this.rows(args)[0];
  }
  all(...args: unknown[]) {
    return this.rows(args);
  }
  iterate(...args: unknown[]) {
    return this.rows(args)[Symbol.iterator]();
  }
}

/**
 * `PRAGMA data_version` of a split database: SQLite's, plus PostgreSQL's control version, which a
 * trigger on the tables credentials and projects come from moves on every committed change (by any
 * process): the key cache (identity-repo) drops what it holds when either moves.
 */
function dataVersionStatement(sqlite: Db, pg: SyncPg): Database.Statement {
  const local = sqlite.prepare('PRAGMA data_version').pluck();
  const stmt = {
    pluck: () => stmt,
    get: () => (local.get() as number) + Number(pg.queryArrays('SELECT v FROM control_version').rows[0]?.[0] ?? 0),
  };
  return stmt as unknown as Database.Statement;
}

/** Primary keys and generated integer keys, read from the SQLite schema (the same tables exist there). */
function schemaInfo(sqlite: Db): SchemaInfo {
  const cache = new Map<string, { pk: string[]; generated?: string; types: Map<string, string> }>();
  const info = (table: string) => {
    let v = cache.get(table);
    if (!v) {
      const cols = sqlite.prepare(`PRAGMA table_info(${JSON.stringify(table)})`).all() as Array<{ name: string; type: string; pk: number }>;
      const pk = cols.filter((c) => c.pk > 0).sort((a, b) => a.pk - b.pk).map((c) => c.name);
      // As translateDdl makes it an identity column: INTEGER PRIMARY KEY with AUTOINCREMENT or named id.
      const ddl = (sqlite.prepare("SELECT sql FROM sqlite_master WHERE type = 'table' AND name = ?").pluck().get(table) as string | undefined) ?? '';
      const generated =
        pk.length === 1 && /^INTEGER$/i.test(cols.find((c) => c.name === pk[0])!.type) && (pk[0] === 'id' || /\bAUTOINCREMENT\b/i.test(ddl)) ? pk[0] : undefined;
      v = { pk, ...(generated ? { generated } : {}), types: new Map(cols.map((c) => [c.name, c.type])) };
      cache.set(table, v);
    }
    return v;
  };
  return {
    primaryKey: (t) => (info(t).pk.length ? info(t).pk : undefined),
    generatedKey: (t) => info(t).generated,
    columnType: (t, c) => info(t).types.get(c),
  };
}
