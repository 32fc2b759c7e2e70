import type { Db } from './db.js';
import { traceToken } from './compact-ids.js';
import { expandLogList, logTemplateSql } from './attr-keysets.js';

/**
 * The logs' full-text index in two tables (migration 050, issue 22: bytes per log record).
 *
 * - `logs_fts` (migration 002, `detail=full`): rows written before migration 050. It keeps positions,
 *   so it answers phrases and column filters itself. It is no longer written; it empties as retention
 *   expires its logs.
 * - `logs_fts2` (`detail=none`, `columnsize=0`): rows written since. It stores which rows hold a
 *   token, not where, and no per-row sizes (about 52 + 14 bytes less per log record in
 *   bench/retention-bytes.ts), so it answers words, prefixes
 *   and AND/OR, not phrases (`"connection refused"`, and every hyphenated or dotted word such as
 *   `sku-4242`, which the tokenizer splits into a phrase) nor column filters (`attrs : …`).
 *
 * A search asks both tables: the old one with the expression as built (logs-read-repo.ts ftsQuery,
 * withTraceMatch, domain/logs/query.ts), the new one with that expression relaxed — each phrase
 * becomes the AND of its tokens (its last token keeps a prefix `*`), column filters are dropped —
 * and the rows so found are checked against the phrases on their own text (body, attribute values,
 * trace token) by the SQL function `sl_log_phrases`, which tokenizes like FTS5's `unicode61`
 * (letters, digits and private-use characters are token characters, folded to lower case without
 * diacritics). Phrases appear only under AND in those expressions, so "all phrases hold" is exact.
 * A column filter is only used for the trace id, which the reading query also compares on the row.
 */

/** An expression to check on the row: a phrase (its tokens, the last one a prefix when `p`, only in the attribute text when `a`), or AND / OR of expressions. */
type Node = { t: string[]; p: boolean; a: boolean } | { o: 'and' | 'or'; c: Node[] };
/** An expression's tree, as other stores evaluate it (src/storage/clickhouse/logs-read.ts). */
export type FtsNode = Node;

export interface FtsPlan {
  /** The expression for `logs_fts` (detail=full), as given. */
  full: string;
  /** The expression for `logs_fts2` (detail=none). */
  relaxed: string;
  /** JSON of the expression's tree, checked on each candidate row (null when it has no phrase: the relaxed expression is then exact). */
  check: string | null;
  /** The expression's tree (null when it holds no term). */
  tree: Node | null;
}

const TOKEN_CHAR = /[\p{L}\p{N}\p{Co}]/u;
const fold = (c: string) => c.toLowerCase().normalize('NFD').replace(/\p{Mn}/gu, '');

/** Tokens of a text as FTS5's unicode61 tokenizer (remove_diacritics=1) makes them. */
export function ftsTokens(text: string): string[] {
  const out: string[] = [];
  let cur = '';
  for (const c of text) {
    if (TOKEN_CHAR.test(c)) cur += fold(c);
    else if (cur) {
      out.push(cur);
      cur = '';
    }
  }
  if (cur) out.push(cur);
  return out;
}

const plans = new Map<string, FtsPlan>();

/**
 * Splits an expression built by the search code into its `logs_fts` and `logs_fts2` forms. The
 * grammar is the one those builders produce: quoted strings (with an optional `*`), `AND`, `OR`,
 * parentheses, implicit AND between neighbours, and `attrs :` before a term or a group.
 */
export function ftsPlan(expr: string): FtsPlan {
  let plan = plans.get(expr);
  if (plan) return plan;
  const lex = [...expr.matchAll(/"((?:[^"]|"")*)"(\*?)|attrs\s*:|AND\b|OR\b|\(|\)|\S/g)];
  let i = 0;
  let multi = false;
  const relaxedOf = (n: Node): string =>
    'o' in n
      ? `(${n.c.map(relaxedOf).join(n.o === 'and' ? ' AND ' : ' OR ')})`
      : n.t.length === 0
        ? '""'
        : n.t.length === 1
          ? `"${n.t[0]}"${n.p ? '*' : ''}`
          : `(${n.t.map((t, k) => `"${t}"${n.p && k === n.t.length - 1 ? '*' : ''}`).join(' AND ')})`;
  const unary = (attrs: boolean): Node | null => {
    const m = lex[i];
    if (!m) return null;
    if (m[0] === '(') {
      i++;
      const e = or(attrs);
      if (lex[i]?.[0] === ')') i++;
      return e;
    }
    if (m[0].startsWith('attrs')) {
      i++;
      return unary(true);
    }
    if (m[1] !== undefined) {
      i++;
      const t = ftsTokens(m[1].replace(/""/g, '"'));
      if (t.length > 1) multi = true;
      return { t, p: m[2] === '*', a: attrs };
    }
    i++; // anything else is not produced by the builders: skipped
    return unary(attrs);
  };
  const and = (attrs: boolean): Node | null => {
    const c: Node[] = [];
    for (;;) {
      const m = lex[i];
      if (!m || m[0] === ')' || m[0] === 'OR') break;
      if (m[0] === 'AND') {
        i++;
        continue;
      }
      const u = unary(attrs);
      if (u) c.push(u);
    }
    return c.length === 0 ? null : c.length === 1 ? c[0]! : { o: 'and', c };
  };
  function or(attrs: boolean): Node | null {
    const c: Node[] = [];
    for (;;) {
      const a = and(attrs);
      if (a) c.push(a);
      if (lex[i]?.[0] !== 'OR') break;
      i++;
    }
    return c.length === 0 ? null : c.length === 1 ? c[0]! : { o: 'or', c };
  }
  const tree = or(false);
  plan = { full: expr, relaxed: tree ? relaxedOf(tree) : '""', check: tree && multi ? JSON.stringify(tree) : null, tree };
  if (plans.size > 1000) plans.clear();
  plans.set(expr, plan);
  return plan;
}

/** Rowids (`id`) of both tables matching the plan (bound: full, relaxed), optionally within a rowid range (bound after each). */
export const ftsIdsSql = (range = false) => {
  const r = range ? ' AND rowid >= ? AND rowid <= ?' : '';
  return `SELECT rowid AS id FROM logs_fts WHERE logs_fts MATCH ?${r} UNION ALL SELECT rowid AS id FROM logs_fts2 WHERE logs_fts2 MATCH ?${r}`;
};

/** Arguments of {@link ftsIdsSql}. */
export const ftsIdsArgs = (plan: FtsPlan, range?: { a: number; b: number }) =>
  range ? [plan.full, range.a, range.b, plan.relaxed, range.a, range.b] : [plan.full, plan.relaxed];

/** The row condition of a plan with phrases on log rows `alias` ('' when none). */
export const phraseWhere = (plan: FtsPlan, alias = 'l'): { sql: string; args: unknown[] } =>
  plan.check
    ? { sql: ` AND sl_log_match(?, ${alias}.body, ${alias}.attributes, ${alias}.trace_id, ${logTemplateSql(alias)})`, args: [plan.check] }
    : { sql: '', args: [] };

function flatten(v: unknown, out: string[]): void {
  if (v === null || v === undefined) return;
  if (Array.isArray(v)) for (const x of v) flatten(x, out);
  else if (typeof v === 'object') for (const x of Object.values(v as object)) flatten(x, out);
  else out.push(String(v));
}

const holds = (toks: string[], ph: { t: string[]; p: boolean }) => {
  const n = ph.t.length;
  for (let i = 0; i + n <= toks.length; i++) {
    let k = 0;
    while (k < n && (ph.p && k === n - 1 ? toks[i + k]!.startsWith(ph.t[k]!) : toks[i + k] === ph.t[k])) k++;
    if (k === n) return true;
  }
  return false;
};

/**
 * The `attrs` text of a log's full-text row, from what the row stores: its attribute values (the
 * JSON of the `attributes` column, any form; with its template's text `tmpl` when it has one,
 * migration 051) in order, then its trace token. The writer indexes
 * exactly this and expiry deletes exactly this from `logs_fts2` (a contentless table without
 * `contentless_delete` forgets a row only when given the same text), so both derive it here.
 */
export function ftsAttrsText(attributes: unknown, traceId: unknown, tmpl?: unknown): string {
  const vals: string[] = [];
  try {
    if (typeof attributes === 'string') flatten(typeof tmpl === 'string' ? expandLogList(tmpl, attributes) : JSON.parse(attributes), vals);
  } catch {
    /* not JSON: no attribute text */
  }
  const tid = Buffer.isBuffer(traceId) ? traceId.toString('hex') : typeof traceId === 'string' ? traceId : '';
  if (tid) vals.push(traceToken(tid));
  return vals.join(' ');
}

/**
 * Registers `sl_log_match(tree JSON, body, attributes, trace_id, template text)`: 1 when the expression holds on
 * the row's body and the attribute text the writer indexed (values in order, then the trace token),
 * as FTS5 with positions would answer it.
 */
export function registerLogFtsFunctions(db: Db): void {
  let lastJson = '';
  let tree: Node = { o: 'and', c: [] };
  db.function('sl_log_match', { deterministic: true }, (json: unknown, body: unknown, attributes: unknown, traceId: unknown, tmpl: unknown) => {
    if (json !== lastJson) {
      tree = JSON.parse(String(json)) as Node;
      lastJson = String(json);
    }
    let bodyToks: string[] | null = null;
    let attrToks: string[] | null = null;
    const attrsOf = () => (attrToks ??= ftsTokens(ftsAttrsText(attributes, traceId, tmpl)));
    const ev = (n: Node): boolean => {
      if ('o' in n) return n.o === 'and' ? n.c.every(ev) : n.c.some(ev);
      if (!n.a && holds((bodyToks ??= ftsTokens(typeof body === 'string' ? body : '')), n)) return true;
      return holds(attrsOf(), n);
    };
    return ev(tree) ? 1 : 0;
  });
}
