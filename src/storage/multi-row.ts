/**
 * Statements over many rows or values at once, for write paths that hold the write lock: with control
 * data in PostgreSQL (split-db.ts) every statement is a round trip to the client's worker thread and
 * to PostgreSQL, so a batch's rows go in multi-row statements of up to MULTI_ROWS rows, one prepared
 * statement cached per row count (a batch's size varies; at most MULTI_ROWS statements are prepared).
 */
import type { Statement } from 'better-sqlite3';
import type { Db } from './db.js';

export const MULTI_ROWS = 100;

/** Batches of `list` of up to MULTI_ROWS items, each with a statement made by `sql(n)` for its size (cached). */
function chunked<T>(db: Db, sql: (n: number) => string) {
  const cache = new Map<number, Statement>();
  return (list: readonly T[], each: (st: Statement, part: readonly T[]) => void) => {
    for (let i = 0; i < list.length; i += MULTI_ROWS) {
      const part = list.slice(i, i + MULTI_ROWS);
      let st = cache.get(part.length);
      if (!st) cache.set(part.length, (st = db.prepare(sql(part.length))));
      each(st, part);
    }
  };
}

/**
 * `${head} VALUES (?, …), (?, …) ${tail}`: rows of `cols` values each; `each` runs a statement with its
 * rows' values flattened. Rows in one statement must not conflict with each other (PostgreSQL refuses
 * an upsert that touches one row twice): callers merge them first. `cols` may instead list each
 * value's SQL (e.g. `CAST(? AS REAL)`): PostgreSQL types a bare parameter in a VALUES list that is
 * not an INSERT's as text.
 */
export function multiRow(db: Db, head: string, cols: number | readonly string[], tail = '') {
  const row = `(${(typeof cols === 'number' ? Array<string>(cols).fill('?') : cols).join(', ')})`;
  const run = chunked<unknown[]>(db, (n) => `${head} VALUES ${Array(n).fill(row).join(', ')} ${tail}`);
  return (rows: readonly unknown[][], each: (st: Statement, args: unknown[]) => void) => run(rows, (st, part) => each(st, part.flat()));
}

/**
 * A statement with `IN (…)` over a list: `sql(marks)` is the statement with `marks` (`?, ?, …`) in its
 * list; `each` gets a statement and its part of the list (the caller adds the other parameters).
 */
export function inList(db: Db, sql: (marks: string) => string) {
  const run = chunked<unknown>(db, (n) => sql(Array(n).fill('?').join(', ')));
  return (values: readonly unknown[], each: (st: Statement, args: unknown[]) => void) => run(values, (st, part) => each(st, [...part]));
}
