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
import { controlTablesInOrder } from './control-tables.js';
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
  });
  return { tables: order.length, rows, ms: Date.now() - started };
}
