/**
 * PostgreSQL's migrations (issue 20, the control store). Each is SQL in PostgreSQL's dialect, applied
 * once, in order, under an advisory lock (several processes may start at once), and recorded in
 * `schema_migrations`. Migration 1 is the control tables as SQLite's migrations 1–55 leave them,
 * generated once by `npx tsx scripts/pg-schema.ts` from that schema (`controlSchemaDdl`).
 * test/storage/postgres-schema.test.ts compares every control table's columns in a PostgreSQL
 * database migrated from scratch with SQLite's: a SQLite migration that changes a control table
 * fails it until a PostgreSQL migration here does the same.
 */
import type { Db } from '../db.js';
import type { SyncPg } from './sync-client.js';
import { CONTROL_TABLES, CREDENTIAL_TABLES, controlTablesInOrder, FRACTIONAL_TIME_COLUMNS } from './control-tables.js';
import { translateDdl } from './dialect.js';
import { PG_CONTROL_SCHEMA_V1 } from './schema-v1.js';
import { PG_SCHEMA_V3 } from './schema-v3.js';
import { PG_SCHEMA_V4 } from './schema-v4.js';
import { PG_SCHEMA_V5 } from './schema-v5.js';
import { PG_SCHEMA_V6 } from './schema-v6.js';

export interface PgMigration {
  version: number;
  name: string;
  sql: string;
}

/**
 * `control_version` moves on every committed change to a table credentials and projects are read
 * from, whichever process made it: the key cache's `PRAGMA data_version` check (identity-repo)
 * includes it, so a key revoked through one process is refused by all of them on the next request.
 */
const CONTROL_VERSION = `
CREATE TABLE control_version (v BIGINT NOT NULL);
INSERT INTO control_version VALUES (0);
CREATE FUNCTION sightline_control_changed() RETURNS trigger LANGUAGE plpgsql AS $$
BEGIN
  UPDATE control_version SET v = v + 1;
  RETURN NULL;
END $$;
${CREDENTIAL_TABLES.map((t) => `CREATE TRIGGER ${t}_control_version AFTER INSERT OR UPDATE OR DELETE ON ${t} FOR EACH STATEMENT EXECUTE FUNCTION sightline_control_changed();`).join('\n')}
`;

/**
 * SQLite sums comparisons (`sum(status = 'open')`): PostgreSQL's sum has no boolean form, so one
 * is added — NULL over no rows, as SQLite's sum is.
 */
const SQLITE_COMPAT = `
CREATE FUNCTION sl_bool_add(bigint, boolean) RETURNS bigint LANGUAGE sql IMMUTABLE AS 'SELECT coalesce($1, 0) + CASE WHEN $2 THEN 1 ELSE 0 END';
CREATE AGGREGATE sum(boolean) (SFUNC = sl_bool_add, STYPE = bigint);
`;

export const PG_MIGRATIONS: PgMigration[] = [
  { version: 1, name: 'control tables (SQLite schema 55), control_version', sql: `CREATE EXTENSION IF NOT EXISTS citext;\n${SQLITE_COMPAT}\n${PG_CONTROL_SCHEMA_V1}\n${CONTROL_VERSION}` },
];

PG_MIGRATIONS.push({
  version: 2,
  name: 'rate_counters (the shared rate limit without Redis)',
  sql: 'CREATE UNLOGGED TABLE rate_counters (key TEXT PRIMARY KEY, count BIGINT NOT NULL, expires_at BIGINT NOT NULL)',
});

PG_MIGRATIONS.push({
  version: 3,
  name: 'error groups and their state, triage runs and the group rollups (dimensions, users, hourly user counts)',
  sql: PG_SCHEMA_V3,
});

PG_MIGRATIONS.push({
  version: 4,
  name: 'error event ids (error events in ClickHouse: which are new, their groups)',
  sql: PG_SCHEMA_V4,
});

PG_MIGRATIONS.push({
  version: 5,
  name: 'the revenue ledger, its rollups, subscription states and webhook idempotency; product-analytics persons, sessions and touches',
  // Capture times may hold fractional milliseconds (FRACTIONAL_TIME_COLUMNS); revenue_result_versions:
  // the revenue result cache's version per project, shared by the processes (result-versions.ts).
  sql: `${PG_SCHEMA_V5}
${Object.entries(FRACTIONAL_TIME_COLUMNS)
  .map(([t, cols]) => `ALTER TABLE ${t} ${cols.map((c) => `ALTER COLUMN ${c} TYPE DOUBLE PRECISION`).join(', ')};`)
  .join('\n')}
CREATE TABLE revenue_result_versions (project_id BIGINT PRIMARY KEY, v BIGINT NOT NULL);`,
});

PG_MIGRATIONS.push({
  version: 6,
  name: 'release-health sessions and aggregates, replays and their recordings, cron check-ins, ingest outcomes, Langfuse trace info, fixer dispatches',
  sql: PG_SCHEMA_V6,
});

PG_MIGRATIONS.push({
  version: 7,
  name: 'control_version moves on ai_settings changes too (privacy mode cached per process)',
  // The AI repo keeps each project's privacy mode while `PRAGMA data_version` (control_version in
  // split mode) stays put: turning it on through one process withholds content in all of them.
  sql: 'CREATE TRIGGER ai_settings_control_version AFTER INSERT OR UPDATE OR DELETE ON ai_settings FOR EACH STATEMENT EXECUTE FUNCTION sightline_control_changed();',
});

export const PG_LATEST_SCHEMA_VERSION = Math.max(...PG_MIGRATIONS.map((m) => m.version));

export class PgDatabaseTooNewError extends Error {
  constructor(found: number, known: number) {
    super(`This PostgreSQL database was written by a newer Sightline (schema version ${found}; this version knows up to ${known}). Run the newer version.`);
  }
}

/** Applies PostgreSQL's pending migrations (each in its own transaction, one process at a time). */
export function migratePostgres(pg: SyncPg, log?: (message: string) => void): void {
  pg.transaction(() => {
    // Serializes processes starting together; released at commit.
    pg.query("SELECT pg_advisory_xact_lock(hashtext('sightline-migrate'))");
    pg.query('CREATE TABLE IF NOT EXISTS schema_migrations (version BIGINT PRIMARY KEY, name TEXT NOT NULL, applied_at BIGINT NOT NULL)');
    const recorded = new Set(pg.queryArrays('SELECT version FROM schema_migrations').rows.map((r) => Number(r[0])));
    const unknown = [...recorded].filter((v) => !PG_MIGRATIONS.some((m) => m.version === v));
    if (unknown.length) throw new PgDatabaseTooNewError(Math.max(...unknown), PG_LATEST_SCHEMA_VERSION);
    for (const m of PG_MIGRATIONS) {
      if (recorded.has(m.version)) continue;
      log?.(`applying PostgreSQL migration ${m.version} (${m.name})`);
      for (const stmt of splitPg(m.sql)) pg.query(stmt);
      pg.query('INSERT INTO schema_migrations (version, name, applied_at) VALUES ($1, $2, $3)', [m.version, m.name, Date.now()]);
    }
  });
}

/** Splits on top-level semicolons, keeping `$$ … $$` bodies whole. */
function splitPg(sql: string): string[] {
  const out: string[] = [];
  let cur = '';
  let inBody = false;
  for (const part of sql.split(/(\$\$|;)/)) {
    if (part === '$$') inBody = !inBody;
    if (part === ';' && !inBody) {
      if (cur.trim()) out.push(cur.trim());
      cur = '';
    } else cur += part;
  }
  if (cur.trim()) out.push(cur.trim());
  return out;
}

/**
 * The control tables and their indexes as PostgreSQL DDL, from a SQLite database at the latest
 * schema: tables in foreign-key order; a table that SQLite gives an implicit rowid (no INTEGER
 * PRIMARY KEY, not WITHOUT ROWID) gets a `rowid` identity column, since queries order by it.
 */
export function controlSchemaDdl(sqlite: Db, only: ReadonlySet<string> = CONTROL_TABLES): string {
  const rows = sqlite.prepare("SELECT type, name, tbl_name, sql FROM sqlite_master WHERE sql IS NOT NULL AND type IN ('table', 'index') ORDER BY rowid").all() as Array<{
    type: string;
    name: string;
    tbl_name: string;
    sql: string;
  }>;
  const tables = rows.filter((r) => r.type === 'table' && only.has(r.name));
  const missing = [...only].filter((t) => !tables.some((r) => r.name === t));
  if (missing.length) throw new Error(`control tables missing from the SQLite schema: ${missing.join(', ')}`);
  const order = controlTablesInOrder(sqlite, only).filter((t) => only.has(t));
  const out: string[] = [];
  for (const name of order) {
    const t = tables.find((r) => r.name === name)!;
    out.push(translateDdl(t.sql.replace(/^CREATE TABLE\s+"?(\w+)"?/i, 'CREATE TABLE $1')) + ';');
    const withoutRowid = /\)\s*WITHOUT\s+ROWID\s*$/i.test(t.sql.trim());
    const integerKey = /\bINTEGER\s+PRIMARY\s+KEY\b/i.test(t.sql);
    if (!withoutRowid && !integerKey) out.push(`ALTER TABLE ${name} ADD COLUMN rowid BIGINT GENERATED ALWAYS AS IDENTITY;`);
  }
  for (const name of order) {
    for (const i of rows.filter((r) => r.type === 'index' && r.tbl_name === name).sort((a, b) => a.name.localeCompare(b.name))) {
      out.push(translateDdl(i.sql) + ';');
    }
  }
  return out.join('\n');
}
