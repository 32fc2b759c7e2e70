/**
 * The log query syntax of `q` (logs.search, logs.histogram, logs.insights), parsed into a tree the
 * storage layer compiles (issue 11 item 3):
 *
 * - `word`, `word*` (prefix), `"a phrase"`: free text over the body and attribute values (FTS5,
 *   whole words, case-insensitive);
 * - `key:value`, `key:"a value"`, `key:val*` (prefix): a log attribute or a resource attribute
 *   (`host.name`, `k8s.pod.name`, `service.instance.id`, …) equal to the value (compared as text);
 *   a few keys name stored columns: `level`, `service`, `environment`, `release`, `source`,
 *   `trace_id`, `span_id`;
 * - terms side by side must all match (`AND` may be written); `OR` between terms; parentheses group.
 *
 * Anything else is taken literally: a lowercase `or` is a word, unbalanced parentheses are closed at
 * the end, `NOT`/`NEAR`/`^` are words or punctuation. Nothing raw reaches SQL or FTS5: every text
 * term is re-quoted here.
 */

import { isTraceIdWord, traceIdFts } from './trace-token.js';

export type LogQuery =
  | { kind: 'text'; fts: string }
  | { kind: 'attr'; key: string; value: string; prefix: boolean }
  | { kind: 'and'; items: LogQuery[] }
  | { kind: 'or'; items: LogQuery[] };

const WORD_CHAR = /[\p{L}\p{N}]/u;
/** A key: letters, digits, `_`, `.`, `-`, starting with a letter or `_`; up to 128 characters. */
const KEY_RE = /^([A-Za-z_@][\w.\-@]{0,127}):/;

/** A double-quoted FTS5 string: the tokenizer splits it, so `foo-bar` becomes the phrase "foo bar". */
const quote = (s: string) => `"${s.replace(/"/g, '""')}"`;

type Token = { t: 'lp' } | { t: 'rp' } | { t: 'or' } | { t: 'and' } | { t: 'term'; node: LogQuery | null };

/**
 * Free-text word → FTS5 term (null when it holds no letter or digit). A trace id (32 hex digits,
 * bare or quoted) matches the id as a word and as the token logs are indexed under (trace-token.ts):
 * logs of that trace are found, not only those written before the short token.
 */
function textTerm(word: string, quoted: boolean): LogQuery | null {
  if (quoted) return isTraceIdWord(word.trim()) ? { kind: 'text', fts: traceIdFts(word.trim()) } : WORD_CHAR.test(word) ? { kind: 'text', fts: quote(word) } : null;
  let w = word.replace(/"/g, '');
  const prefix = w.endsWith('*');
  w = w.replace(/\*+$/, '');
  if (!WORD_CHAR.test(w)) return null;
  if (!prefix && isTraceIdWord(w)) return { kind: 'text', fts: traceIdFts(w) };
  return { kind: 'text', fts: prefix && WORD_CHAR.test(w[w.length - 1]!) ? `${quote(w)}*` : quote(w) };
}

function tokenize(text: string): Token[] {
  const out: Token[] = [];
  let i = 0;
  const n = text.length;
  while (i < n) {
    const c = text[i]!;
    if (/\s/.test(c)) {
      i++;
      continue;
    }
    if (c === '(') {
      out.push({ t: 'lp' });
      i++;
      continue;
    }
    if (c === ')') {
      out.push({ t: 'rp' });
      i++;
      continue;
    }
    if (c === '"') {
      const end = text.indexOf('"', i + 1);
      const body = end < 0 ? text.slice(i + 1) : text.slice(i + 1, end);
      out.push({ t: 'term', node: textTerm(body, true) });
      i = end < 0 ? n : end + 1;
      continue;
    }
    // key:value / key:"value"
    const km = KEY_RE.exec(text.slice(i));
    if (km) {
      const key = km[1]!;
      const j = i + km[0].length;
      if (text[j] === '"') {
        const end = text.indexOf('"', j + 1);
        const value = end < 0 ? text.slice(j + 1) : text.slice(j + 1, end);
        out.push({ t: 'term', node: { kind: 'attr', key, value, prefix: false } });
        i = end < 0 ? n : end + 1;
        continue;
      }
      let k = j;
      while (k < n && !/[\s()]/.test(text[k]!)) k++;
      const raw = text.slice(j, k);
      // `key:` with nothing after it, or a URL (`http://…`): plain text.
      if (raw !== '' && !raw.startsWith('//')) {
        const prefix = raw.length > 1 && raw.endsWith('*');
        out.push({ t: 'term', node: { kind: 'attr', key, value: prefix ? raw.replace(/\*+$/, '') : raw, prefix } });
        i = k;
        continue;
      }
    }
    let k = i;
    while (k < n && !/[\s()]/.test(text[k]!)) k++;
    const word = text.slice(i, k);
    i = k;
    if (word === 'OR') out.push({ t: 'or' });
    else if (word === 'AND') out.push({ t: 'and' });
    else out.push({ t: 'term', node: textTerm(word, false) });
  }
  return out;
}

const and = (items: LogQuery[]): LogQuery | null => (items.length === 0 ? null : items.length === 1 ? items[0]! : { kind: 'and', items });
const or = (items: LogQuery[]): LogQuery | null => (items.length === 0 ? null : items.length === 1 ? items[0]! : { kind: 'or', items });

/**
 * Parses `q`. Returns null when it holds nothing searchable (no word with a letter or digit and no
 * `key:value`). Terms without anything searchable (`***`, `""`) are dropped.
 */
export function parseLogQuery(text: string): LogQuery | null {
  const toks = tokenize(text);
  let pos = 0;
  // orExpr := andExpr (OR andExpr)* ; andExpr := primary ((AND)? primary)* ; primary := '(' orExpr ')' | term
  function orExpr(): LogQuery | null {
    const parts: LogQuery[] = [];
    let cur = andExpr();
    if (cur) parts.push(cur);
    while (pos < toks.length && toks[pos]!.t === 'or') {
      pos++;
      cur = andExpr();
      if (cur) parts.push(cur);
    }
    return or(parts);
  }
  function andExpr(): LogQuery | null {
    const parts: LogQuery[] = [];
    while (pos < toks.length) {
      const tk = toks[pos]!;
      if (tk.t === 'or' || tk.t === 'rp') break;
      pos++;
      if (tk.t === 'and') continue;
      if (tk.t === 'lp') {
        const inner = orExpr();
        if (pos < toks.length && toks[pos]!.t === 'rp') pos++;
        if (inner) parts.push(inner);
        continue;
      }
      if (tk.node) parts.push(tk.node);
    }
    return and(parts);
  }
  const parts: LogQuery[] = [];
  while (pos < toks.length) {
    const e = orExpr();
    if (e) parts.push(e);
    // A stray `)`: skip it and go on.
    if (pos < toks.length && toks[pos]!.t === 'rp') pos++;
  }
  return and(parts);
}

/** Whether the tree is free text only (then it is one FTS5 expression). */
export function isTextOnly(q: LogQuery): boolean {
  if (q.kind === 'text') return true;
  if (q.kind === 'attr') return false;
  return q.items.every(isTextOnly);
}

/** FTS5 expression of a text-only tree (AND / OR with parentheses). */
export function ftsExpression(q: LogQuery): string {
  if (q.kind === 'text') return q.fts;
  if (q.kind === 'attr') throw new Error('not a text-only query');
  const op = q.kind === 'and' ? ' AND ' : ' OR ';
  return q.items.map((x) => (x.kind === 'text' ? x.fts : `(${ftsExpression(x)})`)).join(op);
}

/**
 * Splits a query into the part FTS5 answers alone (the free-text terms ANDed at the top) and the
 * rest (a tree with `key:value` terms, possibly holding free text under an OR), so the fast
 * full-text paths stay in use whenever the query allows.
 */
export function splitLogQuery(q: LogQuery): { match?: string; rest?: LogQuery } {
  if (isTextOnly(q)) return { match: ftsExpression(q) };
  if (q.kind !== 'and') return { rest: q };
  const text = q.items.filter(isTextOnly);
  const other = q.items.filter((x) => !isTextOnly(x));
  return { match: text.length ? ftsExpression(and(text)!) : undefined, rest: and(other)! };
}
