/**
 * `sightline migrate --to-postgres` (issue 20): copies the control tables (control-tables.ts) of a
 * SQLite database into PostgreSQL, after which a server started with SIGHTLINE_DATABASE_URL reads
 * them there. Every row, every column, in one PostgreSQL transaction (a failed copy leaves nothing
 * behind); tables in foreign-key order, rows in SQLite's insertion order (the `rowid` column
 * PostgreSQL keeps for ordering ties is generated in that order); identity sequences moved past the
 * copied keys. Refused when PostgreSQL already holds control data. The SQLite rows stay where they
 * are (a server with SIGHTLINE_DATABASE_URL never reads them).
 */
import type { Db } from '../db.js';
import type { SyncPg } from './sync-client.js';
import { controlTablesInOrder, INGEST_MISC_TABLES, REVENUE_ANALYTICS_TABLES } from './control-tables.js';
import { migratePostgres } from './schema.js';

export class PgCopyRefusedError extends Error {}

export interface PgCopyResult {
  tables: number;
  rows: number;
  ms: number;
}

export function copyControlToPostgres(sqlite: Db, pg: SyncPg, opts: { onProgress?: (table: string, rows: number) => void; batchRows?: number } = {}): PgCopyResult {
  const started = Date.now();
  migratePostgres(pg);
  const order = controlTablesInOrder(sqlite);
  const holding = order.filter((t) => Number(pg.queryArrays(`SELECT count(*) FROM (SELECT 1 FROM ${t} LIMIT 1) x`).rows[0]![0]) > 0);
  if (holding.length) throw new PgCopyRefusedError(`PostgreSQL already holds control data (${holding.join(', ')}): copy into an empty database`);
  let rows = 0;
  pg.transaction(() => {
    rows = copyTables(sqlite, pg, order, opts);
  });
  return { tables: order.length, rows, ms: Date.now() - started };
}

/** Copies `order`'s rows from SQLite into PostgreSQL (inside the caller's transaction); moves identity sequences on. */
function copyTables(
  sqlite: Db,
  pg: SyncPg,
  order: string[],
  opts: { onProgress?: (table: string, rows: number) => void; batchRows?: number; keep?: (table: string, row: Record<string, unknown>) => boolean } = {},
): number {
  let rows = 0;
  for (const table of order) {
    const cols = (sqlite.prepare(`PRAGMA table_info(${JSON.stringify(table)})`).all() as Array<{ name: string }>).map((c) => c.name);
    const hasRowid = !(sqlite.prepare("SELECT sql FROM sqlite_master WHERE type = 'table' AND name = ?").pluck().get(table) as string).match(/WITHOUT\s+ROWID\s*$/i);
    // Enough rows per INSERT to amortize the round trip, under PostgreSQL's 65,535 parameters.
    const per = Math.max(1, Math.min(opts.batchRows ?? 500, Math.floor(60_000 / cols.length)));
    const select = sqlite.prepare(`SELECT ${cols.map((c) => `"${c}"`).join(', ')} FROM ${table}${hasRowid ? ' ORDER BY rowid' : ''}`).raw();
    let batch: unknown[][] = [];
    let n = 0;
    const flush = () => {
      if (!batch.length) return;
      const values = batch.map((_, i) => `(${cols.map((__, j) => `$${i * cols.length + j + 1}`).join(', ')})`).join(', ');
      pg.query(`INSERT INTO ${table} (${cols.join(', ')}) VALUES ${values}`, batch.flat().map((v) => (typeof v === 'bigint' ? v.toString() : v)));
      n += batch.length;
      batch = [];
    };
    for (const row of select.iterate() as Iterable<unknown[]>) {
      if (opts.keep && !opts.keep(table, Object.fromEntries(cols.map((c, i) => [c, row[i]])))) continue;
      batch.push(row);
      if (batch.length >= per) flush();
    }
    flush();
    rows += n;
    opts.onProgress?.(table, n);
  }
  // Identity columns: the next generated key comes after the copied ones.
  for (const r of pg.query<{ table_name: string; column_name: string }>(
    "SELECT table_name, column_name FROM information_schema.columns WHERE table_schema = current_schema() AND is_identity = 'YES' AND identity_generation = 'BY DEFAULT'",
  ).rows) {
    pg.query(`SELECT setval(pg_get_serial_sequence('${r.table_name}', '${r.column_name}'), GREATEST((SELECT max(${r.column_name}) FROM ${r.table_name}), 1), (SELECT max(${r.column_name}) FROM ${r.table_name}) IS NOT NULL)`);
  }
  return rows;
}

/**
 * Tables that became control tables in a later PostgreSQL migration (3: error groups and their
 * rollups; 5: the revenue ledger with its rollups and webhook idempotency, and the product-analytics
 * state; 6: release-health sessions, replays, check-ins, ingest outcomes, Langfuse trace info and
 * fixer dispatches). A server already running on PostgreSQL kept them in its SQLite file until then; at the
 * first start with the migration it copies them over — once per migration: only while PostgreSQL
 * holds none of that migration's tables (several processes starting together: the first copies under
 * the lock, the others see rows).
 */
export interface MovedTables {
  version: number;
  tables: readonly string[];
  /** Rows to copy (by default those of projects PostgreSQL holds). */
  keep?: (projects: ReadonlySet<number>) => (table: string, row: Record<string, unknown>) => boolean;
}

export const MOVED_LATER: readonly MovedTables[] = [
  {
    version: 3,
    tables: ['error_groups', 'error_group_user_state', 'triage_runs', 'error_group_dims', 'error_group_users', 'error_group_hour_users'],
    // With SQLite's foreign keys off beside PostgreSQL, a group may outlive its project (deleted in
    // PostgreSQL): such groups, and the rows of groups not copied, are left behind.
    keep: (projects) => {
      const groups = new Set<string>();
      return (table, row) => {
        if (table !== 'error_groups') return groups.has(String(row.group_id));
        if (!projects.has(Number(row.project_id))) return false;
        groups.add(String(row.id));
        return true;
      };
    },
  },
  // Ids of error events in ClickHouse, kept in SQLite by a server that had ClickHouse before PostgreSQL.
  { version: 4, tables: ['error_event_ids'] },
  { version: 5, tables: REVENUE_ANALYTICS_TABLES },
  // Release-health sessions, replays, check-ins, ingest outcomes, Langfuse trace info, fixer dispatches.
  { version: 6, tables: INGEST_MISC_TABLES },
];

export function adoptMovedTables(sqlite: Db, pg: SyncPg, log?: (message: string) => void): number {
  let rows = 0;
  for (const m of MOVED_LATER) rows += adoptTables(sqlite, pg, m, log);
  return rows;
}

function adoptTables(sqlite: Db, pg: SyncPg, m: MovedTables, log?: (message: string) => void): number {
  const moved = new Set(m.tables);
  const order = controlTablesInOrder(sqlite, moved).filter((t) => moved.has(t));
  const inSqlite = order.filter((t) => sqlite.prepare(`SELECT 1 FROM ${t} LIMIT 1`).get() !== undefined);
  if (!inSqlite.length) return 0;
  let rows = 0;
  pg.transaction(() => {
    pg.query("SELECT pg_advisory_xact_lock(hashtext('sightline-adopt'))");
    const holding = order.filter((t) => pg.queryArrays(`SELECT 1 FROM ${t} LIMIT 1`).rows.length > 0);
    if (holding.length) {
      log?.(`PostgreSQL already holds ${holding.join(', ')}: this SQLite file's rows of ${inSqlite.join(', ')} stay there, unread`);
      return;
    }
    const projects = new Set(pg.queryArrays('SELECT id FROM projects').rows.map((r) => Number(r[0])));
    const keep = m.keep ? m.keep(projects) : (_table: string, row: Record<string, unknown>) => projects.has(Number(row.project_id));
    rows = copyTables(sqlite, pg, order, { keep });
    log?.(`copied ${rows} rows of ${order.join(', ')} from SQLite into PostgreSQL (control tables since PostgreSQL migration ${m.version})`);
  });
  return rows;
}
