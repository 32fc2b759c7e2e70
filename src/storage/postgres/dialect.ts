/**
 * SQLite SQL as PostgreSQL runs it (issue 20, the control store). The repositories are written once,
 * in SQLite's dialect, against a synchronous database; with SIGHTLINE_DATABASE_URL set, their
 * statements on control tables run on PostgreSQL instead (split-db.ts), each translated here once,
 * when it is prepared. The translation works on tokens (strings, quoted names and comments are never
 * touched) and covers what the repositories use:
 *
 * - parameters: `?` and `@name` / `:name` / `$name` become `$1…` (`names` says which value is which);
 * - `INSERT OR IGNORE` becomes `ON CONFLICT DO NOTHING`; `INSERT OR REPLACE` an upsert on the
 *   table's primary key (its key columns come from the caller's schema look-up);
 * - `json_each(x)` → `json_array_elements_text(x)`, `group_concat` → `string_agg`, two-argument
 *   `max`/`min` → `greatest`/`least`, `instr` → `strpos`, `ifnull` → `coalesce`, `total` → a
 *   coalesced sum, `json_extract(x, '$.a.b')` → `(x::json #>> '{a,b}')`;
 * - `INDEXED BY <index>` (SQLite's index hint) is dropped;
 * - `LIKE` → `ILIKE` (SQLite's LIKE ignores ASCII case), `x IS ?` → `IS NOT DISTINCT FROM`,
 *   `CAST(… AS INTEGER/REAL)` → BIGINT / DOUBLE PRECISION, `LIMIT -1` → `LIMIT ALL`;
 * - an alias with capitals is quoted, so rows keep the key the code reads (`AS firstSeen`).
 *
 * Anything else SQLite-only (GLOB, rowid, PRAGMA, FTS MATCH) is refused with the statement named:
 * such a statement belongs on the SQLite side, and split-db routes it there by its tables.
 */

export interface Token {
  kind: 'word' | 'string' | 'qname' | 'number' | 'param' | 'punct' | 'space' | 'comment';
  text: string;
}

export function tokenize(sql: string): Token[] {
  const out: Token[] = [];
  let i = 0;
  const n = sql.length;
  while (i < n) {
    const c = sql[i]!;
    const start = i;
    if (c === "'") {
      i++;
      while (i < n) {
        if (sql[i] === "'") {
          if (sql[i + 1] === "'") i += 2;
          else {
            i++;
            break;
          }
        } else i++;
      }
      out.push({ kind: 'string', text: sql.slice(start, i) });
    } else if (c === '"' || c === '`' || c === '[') {
      const close = c === '[' ? ']' : c;
      i++;
      while (i < n && sql[i] !== close) i++;
      i++;
      out.push({ kind: 'qname', text: '"' + sql.slice(start + 1, i - 1) + '"' });
    } else if (c === '-' && sql[i + 1] === '-') {
      while (i < n && sql[i] !== '\n') i++;
      out.push({ kind: 'comment', text: sql.slice(start, i) });
    } else if (c === '/' && sql[i + 1] === '*') {
      const end = sql.indexOf('*/', i + 2);
      i = end < 0 ? n : end + 2;
      out.push({ kind: 'comment', text: sql.slice(start, i) });
    } else if (/\s/.test(c)) {
      while (i < n && /\s/.test(sql[i]!)) i++;
      out.push({ kind: 'space', text: sql.slice(start, i) });
    } else if (/[A-Za-z_]/.test(c)) {
      while (i < n && /[\w$]/.test(sql[i]!)) i++;
      out.push({ kind: 'word', text: sql.slice(start, i) });
    } else if (/[0-9]/.test(c) || (c === '.' && /[0-9]/.test(sql[i + 1] ?? ''))) {
      while (i < n && /[0-9.eE]/.test(sql[i]!)) i++;
      out.push({ kind: 'number', text: sql.slice(start, i) });
    } else if (c === '?') {
      i++;
      while (i < n && /[0-9]/.test(sql[i]!)) i++;
      out.push({ kind: 'param', text: sql.slice(start, i) });
    } else if ((c === '@' || c === ':' || c === '$') && /[A-Za-z_]/.test(sql[i + 1] ?? '')) {
      i++;
      while (i < n && /\w/.test(sql[i]!)) i++;
      out.push({ kind: 'param', text: sql.slice(start, i) });
    } else {
      // Two-character operators kept whole so `||`, `<=`, `!=`, `::` stay recognisable.
      const two = sql.slice(i, i + 2);
      if (['||', '<=', '>=', '!=', '<>', '==', '::', '->'].includes(two)) {
        i += 2;
        out.push({ kind: 'punct', text: two === '==' ? '=' : two === '->' && sql[i] === '>' ? (i++, '->>') : two });
      } else {
        i++;
        out.push({ kind: 'punct', text: c });
      }
    }
  }
  return out;
}

/** Splits a script into its statements (on top-level semicolons; a trigger's BEGIN … END is one). */
export function splitStatements(sql: string): string[] {
  const toks = tokenize(sql);
  const out: string[] = [];
  let cur = '';
  let depth = 0;
  let inTrigger = false;
  for (let k = 0; k < toks.length; k++) {
    const t = toks[k]!;
    const w = t.kind === 'word' ? t.text.toUpperCase() : '';
    if (w === 'TRIGGER') inTrigger = true;
    if (inTrigger && w === 'BEGIN') depth++;
    if (inTrigger && w === 'END') {
      depth--;
      if (depth === 0) inTrigger = false;
    }
    if (t.kind === 'punct' && t.text === ';' && depth === 0) {
      if (cur.trim()) out.push(cur.trim());
      cur = '';
    } else cur += t.text;
  }
  if (cur.trim()) out.push(cur.trim());
  return out;
}

export class UntranslatableSql extends Error {
  constructor(reason: string, sql: string) {
    super(`${reason} — this statement cannot run on PostgreSQL: ${sql.replace(/\s+/g, ' ').slice(0, 300)}`);
    this.name = 'UntranslatableSql';
  }
}

export interface Translated {
  text: string;
  /** For each `$k`, the name of the bound value (`@name`), or its position among the `?`s. */
  params: Array<{ name: string } | { index: number }>;
  /** An INSERT into a table with a generated integer key: the statement returns that key. */
  returnsKey: boolean;
}

export interface SchemaInfo {
  /** The primary-key columns of a table (INSERT OR REPLACE's conflict target). */
  primaryKey(table: string): string[] | undefined;
  /** The generated integer key of a table, if it has one (`lastInsertRowid`). */
  generatedKey(table: string): string | undefined;
  /** A column's declared SQLite type (INTEGER, TEXT, REAL, BLOB), if the table has it. */
  columnType?(table: string, column: string): string | undefined;
}

const REFUSED = new Set(['GLOB', 'PRAGMA', 'MATCH', 'STRFTIME', 'JULIANDAY', 'UNIXEPOCH', 'PRINTF']);

function matchParen(toks: Token[], open: number): number {
  let depth = 0;
  for (let k = open; k < toks.length; k++) {
    const t = toks[k]!;
    if (t.kind !== 'punct') continue;
    if (t.text === '(') depth++;
    else if (t.text === ')' && --depth === 0) return k;
  }
  return -1;
}

/** Splits the tokens between `open` and its `)` into top-level arguments. */
function args(toks: Token[], open: number, close: number): Token[][] {
  const out: Token[][] = [[]];
  let depth = 0;
  for (let k = open + 1; k < close; k++) {
    const t = toks[k]!;
    if (t.kind === 'punct' && t.text === '(') depth++;
    if (t.kind === 'punct' && t.text === ')') depth--;
    if (t.kind === 'punct' && t.text === ',' && depth === 0) out.push([]);
    else out[out.length - 1]!.push(t);
  }
  return out;
}

const text = (ts: Token[]) => ts.map((t) => t.text).join('');
const trim = (ts: Token[]) => {
  let a = 0;
  let b = ts.length;
  while (a < b && ts[a]!.kind === 'space') a++;
  while (b > a && ts[b - 1]!.kind === 'space') b--;
  return ts.slice(a, b);
};
const next = (toks: Token[], k: number) => {
  let j = k + 1;
  while (j < toks.length && (toks[j]!.kind === 'space' || toks[j]!.kind === 'comment')) j++;
  return j;
};
const prev = (toks: Token[], k: number) => {
  let j = k - 1;
  while (j >= 0 && (toks[j]!.kind === 'space' || toks[j]!.kind === 'comment')) j--;
  return j;
};
const isWord = (t: Token | undefined, ...words: string[]) => !!t && t.kind === 'word' && words.includes(t.text.toUpperCase());

/** Rewrites function calls and operators in place; returns the new token list. */
let subqueries = 0;

function rewrite(toks: Token[], sql: string): Token[] {
  const out: Token[] = [];
  for (let k = 0; k < toks.length; k++) {
    const t = toks[k]!;
    if (t.kind === 'word') {
      const up = t.text.toUpperCase();
      if (REFUSED.has(up)) throw new UntranslatableSql(`SQLite's ${up}`, sql);
      const o = next(toks, k);
      const isCall = toks[o]?.kind === 'punct' && toks[o]!.text === '(';
      if (isCall) {
        const close = matchParen(toks, o);
        if (close < 0) throw new UntranslatableSql('unbalanced parentheses', sql);
        const untrimmed = args(toks, o, close).map((x) => rewrite(x, sql));
        const a = untrimmed.map(trim);
        // Emits a call: strings are SQL text, token lists (arguments) keep their parameters.
        const call = (...pieces: Array<string | Token[]>) => {
          for (const p of pieces) typeof p === 'string' ? out.push({ kind: 'word', text: p }) : out.push(...p);
          k = close;
        };
        const joined = (xs: Token[][]) => xs.flatMap((x, i) => (i ? [{ kind: 'punct', text: ', ' } as Token, ...x] : x));
        if (up === 'JSON_EACH') {
          call('json_array_elements_text((', a[0]!, ')::json)');
          // The set's column is `value`, as json_each's is, unless the query names it.
          const after = next(toks, close);
          if (isWord(toks[after], 'AS')) {
            const aliasAt = next(toks, after);
            out.push({ kind: 'word', text: ` AS ${toks[aliasAt]!.text}(value)` });
            k = aliasAt;
          } else if (toks[after]?.kind === 'word' && !isWord(toks[after], 'WHERE', 'ON', 'JOIN', 'LEFT', 'INNER', 'CROSS', 'GROUP', 'ORDER', 'LIMIT', 'UNION', 'HAVING')) {
            out.push({ kind: 'word', text: ` AS ${toks[after]!.text}(value)` });
            k = after;
          } else out.push({ kind: 'word', text: ' AS je(value)' });
          continue;
        }
        if (up === 'GROUP_CONCAT') {
          call('string_agg((', a[0]!, ')::text, ', a[1] ?? "','", ')');
          continue;
        }
        if ((up === 'MAX' || up === 'MIN') && a.length > 1) {
          call(up === 'MAX' ? 'greatest(' : 'least(', joined(a), ')');
          continue;
        }
        if (up === 'INSTR' || up === 'IFNULL') {
          call(up === 'INSTR' ? 'strpos(' : 'coalesce(', joined(a), ')');
          continue;
        }
        if (up === 'TOTAL') {
          call('coalesce(sum(', a[0]!, ')::float8, 0)');
          continue;
        }
        if (up === 'JSON_EXTRACT') {
          const path = text(a[1]!).trim();
          const m = /^'\$((?:\.\w+|\[\d+\])*)'$/.exec(path);
          if (!m) throw new UntranslatableSql('json_extract with a computed path', sql);
          const parts = [...m[1]!.matchAll(/\.(\w+)|\[(\d+)\]/g)].map((p) => p[1] ?? p[2]);
          call('((', a[0]!, `)::json #>> '{${parts.join(',')}}')`);
          continue;
        }
        if (up === 'CAST') {
          const body = a[0]!.map((x) => (x.kind === 'word' && /^INTEGER$/i.test(x.text) ? { ...x, text: 'BIGINT' } : x.kind === 'word' && /^REAL$/i.test(x.text) ? { ...x, text: 'DOUBLE PRECISION' } : x));
          call('CAST(', body, ')');
          continue;
        }
        out.push(t);
        for (let j = k + 1; j < o; j++) out.push(toks[j]!);
        out.push({ kind: 'punct', text: '(' });
        untrimmed.forEach((x, i) => {
          if (i) out.push({ kind: 'punct', text: ',' });
          out.push(...x);
        });
        out.push({ kind: 'punct', text: ')' });
        k = close;
        // PostgreSQL (before 16) wants a name for a subquery in FROM / JOIN.
        if ((up === 'FROM' || up === 'JOIN') && isWord(toks[next(toks, o)], 'SELECT', 'WITH', 'VALUES')) {
          const after = toks[next(toks, close)];
          if (!after || after.kind !== 'word' || isWord(after, 'WHERE', 'ORDER', 'GROUP', 'LIMIT', 'JOIN', 'LEFT', 'INNER', 'CROSS', 'ON', 'UNION', 'HAVING')) {
            out.push({ kind: 'word', text: ` AS sq${++subqueries}` });
          }
        }
        continue;
      }
      if (up === 'LIKE') {
        out.push({ kind: 'word', text: 'ILIKE' });
        continue;
      }
      if (up === 'IS') {
        // `x IS ?` / `x IS NOT ?`: SQLite's null-safe equality.
        const o1 = next(toks, k);
        const not = isWord(toks[o1], 'NOT');
        const o2 = not ? next(toks, o1) : o1;
        if (toks[o2]?.kind === 'param') {
          out.push({ kind: 'word', text: not ? 'IS DISTINCT FROM' : 'IS NOT DISTINCT FROM' }, { kind: 'space', text: ' ' }, toks[o2]!);
          k = o2;
          continue;
        }
      }
      if (up === 'LIMIT') {
        const o1 = next(toks, k);
        if (toks[o1]?.text === '-' && toks[next(toks, o1)]?.text === '1') {
          out.push({ kind: 'word', text: 'LIMIT ALL' });
          k = next(toks, o1);
          continue;
        }
      }
      if (up === 'AS') {
        const o1 = next(toks, k);
        const alias = toks[o1];
        if (alias?.kind === 'word' && /[A-Z]/.test(alias.text) && !/^(INTEGER|REAL|TEXT|BIGINT)$/i.test(alias.text)) {
          out.push(t, { kind: 'space', text: ' ' }, { kind: 'qname', text: `"${alias.text}"` });
          k = o1;
          continue;
        }
      }
      if (up === 'INDEXED' && isWord(toks[next(toks, k)], 'BY')) {
        // SQLite's index hint (`FROM t INDEXED BY i`): PostgreSQL's planner chooses; the hint goes.
        k = next(toks, next(toks, k));
        continue;
      }
      if (up === 'COLLATE') {
        // Case-insensitive columns are CITEXT on PostgreSQL: the collation is the column's already.
        k = next(toks, k);
        continue;
      }
    }
    out.push(t);
  }
  return out;
}

/** Translates one DML statement (SELECT / INSERT / UPDATE / DELETE / WITH). */
export function translate(sql: string, schema: SchemaInfo): Translated {
  let toks = tokenize(sql);
  // INSERT OR IGNORE / OR REPLACE
  let onConflict: string | null = null;
  let returning = '';
  let returnsKey = false;
  let insertTable: string | null = null;
  const first = next(toks, -1);
  if (isWord(toks[first], 'INSERT', 'REPLACE')) {
    let k = first;
    let mode: 'IGNORE' | 'REPLACE' | null = isWord(toks[k], 'REPLACE') ? 'REPLACE' : null;
    if (mode) toks[k] = { kind: 'word', text: 'INSERT' };
    const o = next(toks, k);
    if (isWord(toks[o], 'OR')) {
      const m = next(toks, o);
      mode = toks[m]!.text.toUpperCase() as 'IGNORE' | 'REPLACE';
      toks.splice(k + 1, m - k);
    }
    k = next(toks, next(toks, first)); // after INTO
    const table = toks[k]!.text.replace(/"/g, '');
    insertTable = table;
    if (mode === 'IGNORE') onConflict = ' ON CONFLICT DO NOTHING';
    if (mode === 'REPLACE') {
      const pk = schema.primaryKey(table);
      if (!pk) throw new UntranslatableSql(`INSERT OR REPLACE into ${table}, whose primary key is unknown`, sql);
      const open = next(toks, k);
      if (toks[open]?.text !== '(') throw new UntranslatableSql('INSERT OR REPLACE without a column list', sql);
      const cols = args(toks, open, matchParen(toks, open)).map((a) => text(a).trim());
      const rest = cols.filter((c) => !pk.includes(c));
      onConflict = ` ON CONFLICT (${pk.join(', ')}) DO ${rest.length ? `UPDATE SET ${rest.map((c) => `${c} = EXCLUDED.${c}`).join(', ')}` : 'NOTHING'}`;
    }
    const key = schema.generatedKey(table);
    if (key && !toks.some((t) => isWord(t, 'RETURNING'))) {
      returnsKey = true;
      returning = ` RETURNING ${key}`;
    }
  }
  toks = rewrite(toks, sql);
  if (insertTable) toks = qualifyUpsert(toks, insertTable, schema);
  // Parameters.
  const params: Translated['params'] = [];
  const named = new Map<string, number>();
  let positional = 0;
  let body = '';
  for (const t of toks) {
    if (t.kind !== 'param') {
      body += t.text;
      continue;
    }
    if (t.text.startsWith('?')) {
      const idx = t.text.length > 1 ? Number(t.text.slice(1)) - 1 : positional++;
      params.push({ index: idx });
      body += `$${params.length}`;
    } else {
      const name = t.text.slice(1);
      let at = named.get(name);
      if (at === undefined) {
        params.push({ name });
        at = params.length;
        named.set(name, at);
      }
      body += `$${at}`;
    }
  }
  body = body.trim().replace(/;\s*$/, '');
  // `$n IS NULL` gives PostgreSQL no type for $n, even when a later use would: such a parameter is
  // cast where it is first used, to the type of a column it is compared with elsewhere (looked up
  // in the statement's tables), else bigint when it is compared with numbers, else text.
  const tables = schema.columnType ? tablesOf(sql) : [];
  for (let n = params.length; n >= 1; n--) {
    const p = `\\$${n}(?!\\d)`;
    if (!new RegExp(`${p}\\s+IS\\s+(NOT\\s+)?NULL`, 'i').test(body)) continue;
    const op = '(?:=|<>|!=|<=|>=|<|>)';
    const column = new RegExp(`(?:\\w+\\.)?(\\w+)\\s*${op}\\s*${p}`).exec(body)?.[1] ?? new RegExp(`${p}\\s*${op}\\s*(?:\\w+\\.)?([A-Za-z_]\\w*)`).exec(body)?.[1];
    const declared = column ? tables.map((t) => schema.columnType?.(t, column)).find((x) => x) : undefined;
    const numeric = new RegExp(`${p}\\s*${op}\\s*-?\\d`).test(body);
    const type = declared ? ({ INTEGER: 'bigint', REAL: 'float8' } as Record<string, string>)[declared.toUpperCase()] ?? 'text' : numeric ? 'bigint' : 'text';
    body = body.replace(new RegExp(p), `$${n}::${type}`);
  }
  if (onConflict) {
    // Before an explicit RETURNING, if the statement has one; else at the end.
    const m = /\sRETURNING\s[\s\S]*$/i.exec(body);
    body = m ? body.slice(0, m.index) + onConflict + m[0] : body + onConflict;
  }
  body += returning;
  return { text: body, params, returnsKey };
}

/**
 * In `ON CONFLICT … DO UPDATE SET a = b + excluded.b WHERE c IS NULL`, SQLite reads a bare column as
 * the existing row's; PostgreSQL calls it ambiguous. Bare columns of the table after DO UPDATE SET
 * (not the ones being set) are qualified with the table's name.
 */
function qualifyUpsert(toks: Token[], table: string, schema: SchemaInfo): Token[] {
  if (!schema.columnType) return toks;
  let start = -1;
  for (let k = 0; k < toks.length; k++) {
    if (isWord(toks[k], 'DO') && isWord(toks[next(toks, k)], 'UPDATE')) {
      start = next(toks, next(toks, k));
      break;
    }
  }
  if (start < 0) return toks;
  const out = toks.slice(0, start + 1);
  let depth = 0;
  let expectTarget = true; // right after SET or a top-level comma: the column being set
  for (let k = start + 1; k < toks.length; k++) {
    const t = toks[k]!;
    if (t.kind === 'punct' && t.text === '(') depth++;
    if (t.kind === 'punct' && t.text === ')') depth--;
    if (t.kind === 'punct' && t.text === ',' && depth === 0) expectTarget = true;
    if (isWord(t, 'WHERE', 'RETURNING')) expectTarget = false;
    if (t.kind === 'word' && !expectTarget) {
      const before = out[out.length - 1];
      const after = toks[next(toks, k)];
      if (before?.text !== '.' && after?.text !== '.' && after?.text !== '(' && schema.columnType(table, t.text)) {
        out.push({ kind: 'word', text: `${table}.${t.text}` });
        continue;
      }
    }
    if (t.kind === 'word' && expectTarget) expectTarget = false;
    out.push(t);
  }
  return out;
}

/** The tables a statement reads or writes (FROM, JOIN, INTO, UPDATE, TABLE, REFERENCES, ON of an index). */
export function tablesOf(sql: string): string[] {
  const toks = tokenize(sql).filter((t) => t.kind !== 'space' && t.kind !== 'comment');
  const out = new Set<string>();
  for (let k = 0; k < toks.length; k++) {
    const t = toks[k]!;
    if (t.kind !== 'word') continue;
    const up = t.text.toUpperCase();
    if (up === 'UPDATE' && isWord(toks[k - 1], 'DO')) continue; // ON CONFLICT … DO UPDATE SET
    if (['FROM', 'JOIN', 'INTO', 'UPDATE', 'TABLE', 'REFERENCES'].includes(up) || (up === 'ON' && isIndexOn(toks, k))) {
      let j = k + 1;
      if (up === 'TABLE') while (isWord(toks[j], 'IF', 'NOT', 'EXISTS')) j++;
      // FROM a [AS] x, b [AS] y
      for (;;) {
        const name = toks[j];
        if (!name || (name.kind !== 'word' && name.kind !== 'qname')) break;
        if (toks[j + 1]?.text === '(' && up !== 'INTO' && up !== 'REFERENCES' && up !== 'ON' && up !== 'TABLE') break; // a function: json_each(…)
        out.add(name.text.replace(/"/g, '').toLowerCase());
        if (up !== 'FROM') break;
        j++;
        if (isWord(toks[j], 'AS')) j++;
        if (toks[j]?.kind === 'word' && !isWord(toks[j], 'WHERE', 'JOIN', 'LEFT', 'INNER', 'CROSS', 'GROUP', 'ORDER', 'LIMIT', 'ON', 'UNION', 'INDEXED', 'NATURAL', 'HAVING', 'WINDOW')) j++;
        if (toks[j]?.text !== ',') break;
        j++;
      }
    }
  }
  return [...out];
}

function isIndexOn(toks: Token[], k: number): boolean {
  // CREATE [UNIQUE] INDEX [IF NOT EXISTS] name ON table
  for (let j = k - 1; j >= 0 && j >= k - 6; j--) if (isWord(toks[j], 'INDEX')) return true;
  return false;
}

/** One SQLite CREATE TABLE / CREATE INDEX statement in PostgreSQL's dialect. */
export function translateDdl(sql: string): string {
  let s = sql.trim().replace(/;\s*$/, '');
  s = s.replace(/\)\s*(WITHOUT\s+ROWID\s*,?\s*|STRICT\s*,?\s*)+$/i, ')');
  // SQLite assigns an INTEGER PRIMARY KEY itself when none is given: an identity column where the
  // code relies on that (AUTOINCREMENT, or a key named id); a plain key where the value is always given.
  s = s.replace(/\b(\w+)\s+INTEGER\s+PRIMARY\s+KEY(\s+AUTOINCREMENT)?/gi, (_m, col: string, auto?: string) =>
    auto || col.toLowerCase() === 'id' ? `${col} BIGINT GENERATED BY DEFAULT AS IDENTITY PRIMARY KEY` : `${col} BIGINT PRIMARY KEY`,
  );
  s = s.replace(/\bTEXT(\s+(?:NOT\s+NULL\s+)?(?:(?:UNIQUE|PRIMARY\s+KEY)\s+)?(?:DEFAULT\s+\S+\s+)?)COLLATE\s+NOCASE/gi, 'CITEXT$1');
  s = s.replace(/\s+COLLATE\s+NOCASE/gi, '');
  // Types are upper case in the migrations, column names lower case.
  s = s.replace(/\bINTEGER\b/g, 'BIGINT').replace(/\bREAL\b/g, 'DOUBLE PRECISION').replace(/\bBLOB\b/g, 'BYTEA');
  return s;
}
