import { ClickHouseLogLevel, createClient } from '@clickhouse/client';
import http from 'node:http';
import https from 'node:https';

/**
 * What the ClickHouse repositories need of an engine: run a statement, read rows (JSONEachRow), and
 * insert rows. Two implementations: the HTTP client (`@clickhouse/client`) for a server — the
 * product's — and chdb (the ClickHouse engine in-process) for tests that prove the same SQL runs on a
 * current release. The SQL must run on Debian's clickhouse-server 18.16 as well as current releases:
 * no DateTime64, no TTL, no server-side query parameters (values are inlined with {@link lit}), no
 * async inserts.
 */
export interface ChEngine {
  /** A statement without a result (DDL, ALTER … DROP PARTITION). */
  command(sql: string): Promise<void>;
  /** Rows of a SELECT, parsed from JSONEachRow; 64-bit integers come back as numbers. */
  query<T = Record<string, unknown>>(sql: string): Promise<T[]>;
  /** Inserts rows (objects keyed by column) in one INSERT … FORMAT JSONEachRow. */
  insert(table: string, rows: readonly object[]): Promise<void>;
  /**
   * Inserts TabSeparated text already made (`pieces`: UTF-8, whole lines each, in order; fields in the
   * order of `columns`) in one INSERT: the span store's path (span-rows.ts), no row objects.
   */
  insertLines(table: string, columns: readonly string[], pieces: readonly Uint8Array[]): Promise<void>;
  close(): Promise<void>;
}

/** Settings sent with every query: plain numbers for 64-bit integers in JSON output. */
export const CH_SETTINGS = { output_format_json_quote_64bit_integers: 0 } as const;

/**
 * A ClickHouse server over HTTP. `url` may carry user, password and the database as its path
 * (`http://user:pass@host:8123/sightline`); the database is created when missing.
 */
export function createHttpEngine(url: string): ChEngine & { database: string } {
  const u = new URL(url);
  const database = decodeURIComponent(u.pathname.replace(/^\/+/, '')) || 'sightline';
  const base = `${u.protocol}//${u.host}`;
  const auth = { username: decodeURIComponent(u.username) || 'default', password: decodeURIComponent(u.password) };
  // The client's own console logger is off: every failure reaches the caller, which logs it (pino).
  const log = { level: ClickHouseLogLevel.OFF };
  const admin = createClient({ url: base, ...auth, clickhouse_settings: CH_SETTINGS, log });
  const client = createClient({ url: base, ...auth, database, clickhouse_settings: CH_SETTINGS, log });
  let ready: Promise<void> | null = null;
  const agent = new (u.protocol === 'https:' ? https : http).Agent({ keepAlive: true, maxSockets: 8 });
  const authHeader = 'Basic ' + Buffer.from(`${auth.username}:${auth.password}`).toString('base64');
  const ensureDb = () => (ready ??= admin.command({ query: `CREATE DATABASE IF NOT EXISTS ${ident(database)}` }).then(() => admin.close()));
  return {
    database,
    async command(sql) {
      await ensureDb();
      await client.command({ query: sql });
    },
    async query<T>(sql: string) {
      await ensureDb();
      const rs = await client.query({ query: sql, format: 'JSONEachRow' });
      return (await rs.json()) as T[];
    },
    async insert(table, rows) {
      if (!rows.length) return;
      await ensureDb();
      await client.insert({ table, values: rows as object[], format: 'JSONEachRow' });
    },
    async insertLines(table, columns, pieces) {
      if (!pieces.some((p) => p.byteLength)) return;
      await ensureDb();
      await postInsert(u, agent, authHeader, database, table, linesInsert(table, columns), pieces);
    },
    async close() {
      agent.destroy();
      await client.close();
    },
  };
}

/** The INSERT of {@link ChEngine.insertLines}' text (both engines). */
export const linesInsert = (table: string, columns: readonly string[]): string => `INSERT INTO ${ident(table)} (${columns.map(ident).join(', ')}) FORMAT TabSeparated`;

/**
 * One INSERT (`query`: its data follows) over HTTP with the pieces as its body, written one after
 * another (no copy into one buffer). Resolves when the server answered 200: the rows are stored
 * (a synchronous insert; 18.16 has no async inserts). Any other answer rejects with the server's text.
 */
function postInsert(u: URL, agent: http.Agent, authorization: string, database: string, table: string, query: string, pieces: readonly Uint8Array[]): Promise<void> {
  let length = 0;
  for (const p of pieces) length += p.byteLength;
  const mod = u.protocol === 'https:' ? https : http;
  const path = `/?database=${encodeURIComponent(database)}&query=${encodeURIComponent(query)}`;
  return new Promise((resolve, reject) => {
    const req = mod.request(
      { host: u.hostname, port: u.port || (u.protocol === 'https:' ? 443 : 80), path, method: 'POST', agent, headers: { authorization, 'content-type': 'text/plain', 'content-length': length } },
      (res) => {
        const chunks: Buffer[] = [];
        res.on('data', (c: Buffer) => chunks.push(c));
        res.on('end', () => {
          if (res.statusCode === 200) resolve();
          else reject(new Error(`ClickHouse insert into ${table}: HTTP ${res.statusCode}: ${Buffer.concat(chunks).toString('utf8').slice(0, 500).trim()}`));
        });
        res.on('error', reject);
      },
    );
    req.setTimeout(30_000, () => req.destroy(new Error(`ClickHouse insert into ${table}: no answer within 30 s`)));
    req.on('error', reject);
    for (const p of pieces) if (p.byteLength) req.write(p);
    req.end();
  });
}

/** An identifier (database, table or column name), back-quoted. */
export function ident(name: string): string {
  return '`' + name.replace(/\\/g, '\\\\').replace(/`/g, '\\`') + '`';
}

/**
 * A value as a ClickHouse SQL literal: strings quoted with backslash escapes, finite numbers as
 * written, booleans as 1/0, null as NULL, arrays as `[…]`. Anything else is refused: values are never
 * interpolated into SQL any other way.
 */
export function lit(v: unknown): string {
  if (v === null || v === undefined) return 'NULL';
  if (typeof v === 'string') return `'${v.replace(/\\/g, '\\\\').replace(/'/g, "\\'").replace(/\0/g, '\\0').replace(/\n/g, '\\n').replace(/\r/g, '\\r')}'`;
  if (typeof v === 'number') {
    if (!Number.isFinite(v)) throw new TypeError('lit: not a finite number');
    // A subnormal number (below 2^-1022) is refused by 18.16's parser (its strtod reports a range
    // error): written as a normal number divided by 2^600, both exact, so the value is the same.
    if (v !== 0 && Math.abs(v) < 2.2250738585072014e-308) return `(${String(v * 2 ** 600)} / ${String(2 ** 600)})`;
    return String(v);
  }
  if (typeof v === 'bigint') return v.toString();
  if (typeof v === 'boolean') return v ? '1' : '0';
  if (Array.isArray(v)) return `[${v.map(lit).join(', ')}]`;
  throw new TypeError(`lit: cannot write a ${typeof v} as a literal`);
}

/** Tagged template: `sql\`SELECT … WHERE p = ${x}\`` inlines every value with {@link lit}. */
export function sql(strings: TemplateStringsArray, ...values: unknown[]): string {
  let out = strings[0]!;
  for (let i = 0; i < values.length; i++) out += lit(values[i]) + strings[i + 1]!;
  return out;
}
