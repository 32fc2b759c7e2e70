/**
 * Log rows in the form of an earlier schema, for migration tests: logs written by the current writer
 * are copied into a database opened at an earlier migration (column by column: a column the earlier
 * table has and the current one gives, generated columns included), with their full-text rows.
 */
import type { Db } from '../../src/storage/db.js';
import { expandLogValues } from '../../src/storage/attr-keysets.js';
import { ftsAttrsText } from '../../src/storage/log-fts.js';

/** Turns rows with an attribute template (migration 051) back into rows holding the whole value list. */
export function untemplateLogs(db: Db): void {
  const rows = db.prepare('SELECT id, attributes, (SELECT vals FROM attr_templates WHERE id = attr_tmpl) AS t FROM logs WHERE attr_tmpl IS NOT NULL').all() as { id: number; attributes: string; t: string }[];
  const up = db.prepare('UPDATE logs SET attributes = ?, attr_tmpl = NULL WHERE id = ?');
  for (const r of rows) up.run(expandLogValues(r.t, r.attributes), r.id);
}

/** Copies every row of `tables` from `from` into `to` (the columns both have), and the logs' full-text rows into `logs_fts2`. */
export function copyLogTables(from: Db, to: Db, tables: string[]): void {
  for (const t of tables) {
    const target = (to.prepare(`SELECT name FROM pragma_table_info('${t}')`).pluck().all() as string[]);
    const source = new Set(from.prepare(`SELECT name FROM pragma_table_xinfo('${t}')`).pluck().all() as string[]);
    const cols = target.filter((c) => source.has(c));
    const ins = to.prepare(`INSERT INTO ${t} (${cols.join(', ')}) VALUES (${cols.map(() => '?').join(', ')})`);
    for (const r of from.prepare(`SELECT ${cols.join(', ')} FROM ${t}`).raw().all() as unknown[][]) ins.run(...r);
  }
  const fts = to.prepare('INSERT INTO logs_fts2 (rowid, body, attrs) VALUES (?, ?, ?)');
  for (const r of from.prepare('SELECT id, body, attributes, trace_id, (SELECT vals FROM attr_templates WHERE id = attr_tmpl) FROM logs').raw().all() as unknown[][]) {
    fts.run(r[0], r[1], ftsAttrsText(r[2], r[3], r[4]));
  }
}
