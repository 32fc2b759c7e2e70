import type { Db } from './db.js';
import type { Attributes } from '../domain/telemetry-types.js';

/**
 * Attribute key sets stored once (migration 037). A log record's or span's attributes are stored as
 * the JSON array of their values, in key order, with `attr_keys` naming the row of `attr_keysets`
 * that lists the keys (a JSON array). Records of one instrumentation point carry the same keys, so
 * the key names (≈40–50% of an attribute object's text) are written once instead of on every row.
 * A row with `attr_keys` NULL holds the JSON object itself: rows written before migration 037, and
 * rows without attributes ('{}').
 *
 * Reads rebuild the object text exactly as `JSON.stringify(attributes)` wrote it before ({@link
 * createAttrDecoder}); SQL conditions on one attribute use {@link attrValueSql}.
 */

/**
 * Span attribute value lists stored once (migration 045): a value list (JSON array, the form of rows
 * with `attr_keys`) that spans keep repeating (the same query of the same database, the same
 * internal step) is stored once in `attr_valuesets`, and a span row then holds its key (a blob in
 * `attributes`: the list's number, big-endian, 1–4 bytes; a TEXT column would turn an integer into
 * text) instead of the text. A list is stored there the second time the writer sees it
 * (a list seen once stays on its row), so one-off values never cost a second copy. Log rows never
 * use this form.
 *
 * SQL of the value list text of a row `t` of either form (for rows with `attr_keys`).
 */
export const attrValuesTextSql = (t: string) =>
  `CASE WHEN typeof(${t}.attributes) = 'blob' THEN (SELECT vals FROM attr_valuesets WHERE id = ${t}.attributes) ELSE ${t}.attributes END`;

/** The key of value list number `n`: its big-endian bytes, as few as hold it. */
function valueSetKey(n: number): Buffer {
  const b = Buffer.alloc(4);
  b.writeUInt32BE(n);
  let i = 0;
  while (i < 3 && b[i] === 0) i++;
  return b.subarray(i);
}

/**
 * Writer side: the `attributes` value of a span row for a value list text (`attr_keys` set): its key
 * once the list repeats, else the text. The lists are not expired with the spans (no index says which
 * rows use one), so their number is capped: past `maxLists`, new lists stay on their rows (at most
 * some tens of MB of lists, which repeated values repay many times over).
 */
/**
 * Whether `key` is met for the second time (then forgotten from `seen`): a value list gets a stored id
 * only when it repeats, so one-off lists never reach the tables. `seen` is cleared at `cap` entries.
 */
function secondSighting(seen: Set<string>, key: string, cap: number): boolean {
  if (seen.delete(key)) return true;
  if (seen.size >= cap) seen.clear();
  seen.add(key);
  return false;
}

export function createValueSets(db: Db, maxLists = 100_000) {
  // Prepared on first use: a list is looked up only when it repeats.
  const prepare = () => ({
    get: db.prepare('SELECT id FROM attr_valuesets WHERE vals = ?').pluck(),
    next: db.prepare('SELECT coalesce(max(n), 0) + 1 FROM attr_valuesets').pluck(),
    insert: db.prepare('INSERT INTO attr_valuesets (n, id, vals) VALUES (?, ?, ?)'),
  });
  let st: ReturnType<typeof prepare> | null = null;
  let full = false;
  const ids = new Map<string, Buffer>();
  const seenOnce = new Set<string>();
  return (vals: string): string | Buffer => {
    const id = ids.get(vals);
    if (id !== undefined) return id;
    if (full) return vals;
    if (!secondSighting(seenOnce, vals, 20_000)) return vals;
    st ??= prepare();
    let n = st.get.get(vals) as Buffer | undefined;
    if (n === undefined) {
      // Inside the writer's transaction: no other writer numbers a list in between.
      const num = st.next.get() as number;
      if (num > maxLists) {
        full = true; // no more lookups: lists not met since this writer started stay on their rows
        return vals;
      }
      n = valueSetKey(num);
      st.insert.run(num, n, vals);
    }
    if (ids.size >= 20_000) ids.clear();
    ids.set(vals, n);
    return n;
  };
}

/** SQL value of the attribute whose JSON path (`$."key"`) and key name are the SQL expressions given, on rows `t`. */
export function attrValueSql(t: string, pathSql: string, keySql: string): string {
  return `CASE WHEN ${t}.attr_keys IS NULL THEN json_extract(${t}.attributes, ${pathSql}) ELSE json_extract(${attrValuesTextSql(t)},
    (SELECT '$[' || k.key || ']' FROM attr_keysets ks, json_each(ks.keys) k WHERE ks.id = ${t}.attr_keys AND k.value = ${keySql})) END`;
}

/**
 * The HTTP method of a log row `t` (attribute `http.request.method`, else `http.method`; '' when
 * absent), for the HTTP log count rollups. Key sets record where the two keys are, so no key list
 * is searched per row.
 */
export const HTTP_METHOD_KS_SQL = (t: string) =>
  `CASE WHEN ${t}.attr_keys IS NULL THEN (CASE WHEN instr(${t}.attributes, '"http.') > 0 THEN COALESCE(CAST(json_extract(${t}.attributes, '$."http.request.method"') AS TEXT), CAST(json_extract(${t}.attributes, '$."http.method"') AS TEXT), '') ELSE '' END)
  ELSE COALESCE((SELECT COALESCE(CAST(json_extract(${t}.attributes, ks.http_req_path) AS TEXT), CAST(json_extract(${t}.attributes, ks.http_path) AS TEXT)) FROM attr_keysets ks WHERE ks.id = ${t}.attr_keys), '') END`;

/** Writer side: the `attr_keysets` id of a key list (JSON text), created on first use. */
function createKeysetIds(db: Db) {
  const byKeys = db.prepare('SELECT id FROM attr_keysets WHERE keys = ?').pluck();
  const insert = db.prepare('INSERT INTO attr_keysets (keys, http_req_path, http_path) VALUES (?, ?, ?)');
  const ids = new Map<string, number>();
  return (keys: string[]): number => {
    const keyText = JSON.stringify(keys);
    let id = ids.get(keyText);
    if (id === undefined) {
      id = byKeys.get(keyText) as number | undefined;
      if (id === undefined) {
        const req = keys.indexOf('http.request.method');
        const old = keys.indexOf('http.method');
        id = Number(insert.run(keyText, req >= 0 ? `$[${req}]` : null, old >= 0 ? `$[${old}]` : null).lastInsertRowid);
      }
      if (ids.size > 100_000) ids.clear();
      ids.set(keyText, id);
    }
    return id;
  };
}

/** Writer side: `[attr_keys, attributes text]` of an attribute object, key sets created on first use. */
export function createAttrEncoder(db: Db) {
  const keysetId = createKeysetIds(db);
  return (attrs: Attributes): [number | null, string] => {
    const keys = Object.keys(attrs);
    if (!keys.length) return [null, '{}'];
    return [keysetId(keys), JSON.stringify(Object.values(attrs))];
  };
}

/**
 * Log attribute templates (migration 051; issue 22, storage per record). Most values of a log
 * record's attributes repeat from record to record (the method, the route, the status code, the
 * logger's function), a few do not (a user id, an order number). A log row with `attr_tmpl` set
 * stores in `attributes` only the JSON array of the values that vary; the `attr_templates` row it
 * names holds, for each position of the key set's value list, either `[value]` (a one-element array:
 * the value itself, the same for every row of the template) or an integer `k` (the row's k-th value;
 * `-1`: the template's only varying value, which the row then holds alone, not in an array, and ''
 * when none varies). A row with `attr_tmpl` NULL holds the whole value list (or, with `attr_keys` NULL, the object), as
 * before. Readers rebuild the whole list ({@link expandLogValues}); SQL reads one value with
 * {@link logValueAtSql}.
 *
 * The writer keeps per key set and position the distinct values it has met (up to
 * TEMPLATE_MAX_DISTINCT, past which the position varies): positions with few distinct values go
 * into the template (values of more than 1,024 characters stay on the row, templates are at most
 * 4 KB: what the writer remembers stays bounded). A template is stored the second time the
 * writer meets it (a combination met once stays on its row), and no more than `maxTemplates` are
 * stored (they are not expired with the logs, like key sets; later combinations stay on their rows).
 */
export const TEMPLATE_MAX_DISTINCT = 32;
/** Longer values stay on the row, and templates are at most this long, so what the writer remembers stays small. */
const TEMPLATE_MAX_VALUE_CHARS = 1024;
const TEMPLATE_MAX_CHARS = 4096;
/** What the distinct-value count remembers of a value: itself when short, else its length and a 32-bit hash. */
const distinctKey = (v: string) => {
  if (v.length <= 64) return v;
  let h = 0x811c9dc5;
  for (let i = 0; i < v.length; i++) h = Math.imul(h ^ v.charCodeAt(i), 0x01000193);
  return `${v.length}:${h >>> 0}`;
};

/** Rows of `attr_template_pos` for template (id, text): per position, the row's path or the shared value as json_extract gives it. */
const TEMPLATE_POS_INSERT = `INSERT INTO attr_template_pos (tmpl, pos, path, val)
  SELECT ?, '$[' || j.key || ']', CASE WHEN j.type = 'integer' THEN CASE j.value WHEN -1 THEN '$' ELSE '$[' || j.value || ']' END END,
    CASE WHEN j.type = 'array' THEN json_extract(j.value, '$[0]') END
  FROM json_each(?) j`;

export interface LogAttrs {
  attrKeys: number | null;
  attrTmpl: number | null;
  /** The row's `attributes` text. */
  stored: string;
  /** The whole value list (or object) text: what the full-text row indexes. */
  full: string;
}

export function createLogAttrEncoder(db: Db, maxTemplates = 100_000) {
  const keysetId = createKeysetIds(db);
  const prepare = () => ({
    get: db.prepare('SELECT id FROM attr_templates WHERE vals = ?').pluck(),
    count: db.prepare('SELECT count(*) FROM attr_templates').pluck(),
    insert: db.prepare('INSERT INTO attr_templates (vals) VALUES (?)'),
    positions: db.prepare(TEMPLATE_POS_INSERT),
  });
  let st: ReturnType<typeof prepare> | null = null;
  let full = false;
  /** Per key set, per position: the distinct value texts met, or null once there were too many. */
  const distinct = new Map<number, (Set<string> | null)[]>();
  const ids = new Map<string, number>();
  const seenOnce = new Set<string>();
  const templateId = (vals: string): number | null => {
    const id = ids.get(vals);
    if (id !== undefined) return id;
    if (full) return null;
    if (!secondSighting(seenOnce, vals, 5_000)) return null;
    st ??= prepare();
    let n = st.get.get(vals) as number | undefined;
    if (n === undefined) {
      // Inside the writer's transaction: no other writer adds a template in between.
      if ((st.count.get() as number) >= maxTemplates) {
        full = true;
        return null;
      }
      n = Number(st.insert.run(vals).lastInsertRowid);
      st.positions.run(n, vals);
    }
    if (ids.size >= 5_000) ids.clear();
    ids.set(vals, n);
    return n;
  };
  return (attrs: Attributes): LogAttrs => {
    const keys = Object.keys(attrs);
    if (!keys.length) return { attrKeys: null, attrTmpl: null, stored: '{}', full: '{}' };
    const ks = keysetId(keys);
    // Each value as JSON.stringify writes it inside an array (undefined and NaN as null).
    const parts = Object.values(attrs).map((v) => JSON.stringify(v) ?? 'null');
    const whole = `[${parts.join(',')}]`;
    let d = distinct.get(ks);
    if (!d || d.length !== parts.length) {
      if (distinct.size >= 10_000) distinct.clear();
      d = parts.map(() => new Set<string>());
      distinct.set(ks, d);
    }
    const tmpl: string[] = [];
    const rest: string[] = [];
    for (let p = 0; p < parts.length; p++) {
      const v = parts[p]!;
      const seen = d[p];
      if (seen) {
        seen.add(distinctKey(v));
        if (seen.size > TEMPLATE_MAX_DISTINCT) d[p] = null;
      }
      if (d[p] && v.length <= TEMPLATE_MAX_VALUE_CHARS) tmpl.push(`[${v}]`);
      else {
        tmpl.push(String(rest.length));
        rest.push(v);
      }
    }
    if (rest.length === parts.length) return { attrKeys: ks, attrTmpl: null, stored: whole, full: whole };
    // One varying value: the row holds it alone (the template says -1); none: the row holds ''.
    const one = rest.length === 1;
    const text = `[${one ? tmpl.map((x) => (x === '0' ? '-1' : x)).join(',') : tmpl.join(',')}]`;
    const id = text.length <= TEMPLATE_MAX_CHARS ? templateId(text) : null;
    return id === null
      ? { attrKeys: ks, attrTmpl: null, stored: whole, full: whole }
      : { attrKeys: ks, attrTmpl: id, stored: one ? rest[0]! : rest.length ? `[${rest.join(',')}]` : '', full: whole };
  };
}

const templates = new Map<string, (unknown[] | number)[]>();

/** The whole value list of a log row stored with a template: its `attributes` as stored and the template's text. */
export function expandLogList(tmpl: string, stored: string): unknown[] {
  let t = templates.get(tmpl);
  if (!t) {
    t = JSON.parse(tmpl) as (unknown[] | number)[];
    if (templates.size > 10_000) templates.clear();
    templates.set(tmpl, t);
  }
  let row: unknown[] | null = null;
  return t.map((x) => (typeof x !== 'number' ? x[0] : x < 0 ? JSON.parse(stored) : (row ??= JSON.parse(stored) as unknown[])[x]));
}

/** The whole value list text of a log row: its `attributes` as stored, with its template's text (null: the row holds the list). */
export function expandLogValues(tmpl: string | null | undefined, stored: string): string {
  return tmpl === null || tmpl === undefined ? stored : JSON.stringify(expandLogList(tmpl, stored));
}

/** SQL of the template text of log rows `t` (NULL for a row holding its whole list). */
export const logTemplateSql = (t: string) => `(SELECT vals FROM attr_templates WHERE id = ${t}.attr_tmpl)`;

/**
 * SQL value of the value list of a log row `t` with `attr_keys` at the JSON path given by SQL `p`
 * (`'$[i]'`), either form (migration 051).
 */
export const logValueAtSql = (t: string, p: string) =>
  `CASE WHEN ${t}.attr_tmpl IS NULL THEN json_extract(${t}.attributes, ${p}) ELSE (SELECT CASE WHEN tp.path IS NULL THEN tp.val ELSE json_extract(${t}.attributes, tp.path) END
    FROM attr_template_pos tp WHERE tp.tmpl = ${t}.attr_tmpl AND tp.pos = ${p}) END`;

/** {@link HTTP_METHOD_KS_SQL} for log rows of every form, templates included (migration 051; that one stays as shipped migrations used it). */
export const LOG_HTTP_METHOD_SQL = (t: string) =>
  `CASE WHEN ${t}.attr_keys IS NULL THEN (CASE WHEN instr(${t}.attributes, '"http.') > 0 THEN COALESCE(CAST(json_extract(${t}.attributes, '$."http.request.method"') AS TEXT), CAST(json_extract(${t}.attributes, '$."http.method"') AS TEXT), '') ELSE '' END)
  ELSE COALESCE((SELECT COALESCE(CAST(${logValueAtSql(t, 'ks.http_req_path')} AS TEXT), CAST(${logValueAtSql(t, 'ks.http_path')} AS TEXT)) FROM attr_keysets ks WHERE ks.id = ${t}.attr_keys), '') END`;

/**
 * Reader side: the attribute object text of a stored row. Key sets are read after the row query
 * (never inside it), once per process and key set.
 */
export function createAttrDecoder(db: Db) {
  const byId = db.prepare('SELECT keys FROM attr_keysets WHERE id = ?').pluck();
  const valsById = db.prepare('SELECT vals FROM attr_valuesets WHERE id = ?').pluck();
  const valsCache = new Map<string, string>();
  const cache = new Map<number, string[]>();
  const keysOf = (id: number): string[] => {
    let k = cache.get(id);
    if (!k) {
      const text = byId.get(id) as string | undefined;
      k = text ? (JSON.parse(text) as string[]) : [];
      if (cache.size > 100_000) cache.clear();
      cache.set(id, k);
    }
    return k;
  };
  /** A value list stored once (migration 045) by its key. */
  const valsOf = (key: Buffer): string => {
    const k = key.toString('hex');
    let v = valsCache.get(k);
    if (v === undefined) {
      v = (valsById.get(key) as string | undefined) ?? '[]';
      if (valsCache.size > 20_000) valsCache.clear();
      valsCache.set(k, v);
    }
    return v;
  };
  return (keysId: number | null | undefined, stored: string | Buffer, tmpl?: string | null): string => {
    const text = typeof stored === 'string' ? expandLogValues(tmpl, stored) : valsOf(stored);
    if (keysId === null || keysId === undefined) return text;
    const keys = keysOf(keysId);
    const values = JSON.parse(text) as unknown[];
    const o: Record<string, unknown> = {};
    for (let i = 0; i < keys.length; i++) o[keys[i]!] = values[i];
    return JSON.stringify(o);
  };
}

/**
 * Instrumentation scopes stored once (migration 037): rows carry `scope_id` and an empty
 * `scope_name` (and `scope_version` for spans). SQL of a row's scope name / version, either form.
 */
export const scopeNameSql = (t: string) => `CASE WHEN ${t}.scope_id IS NULL THEN ${t}.scope_name ELSE (SELECT name FROM scopes WHERE id = ${t}.scope_id) END`;
export const scopeVersionSql = (t: string) => `CASE WHEN ${t}.scope_id IS NULL THEN ${t}.scope_version ELSE (SELECT version FROM scopes WHERE id = ${t}.scope_id) END`;

/** Writer side: the id of an instrumentation scope (name and version), created on first use. */
export function createScopeIds(db: Db) {
  const get = db.prepare('SELECT id FROM scopes WHERE name = ? AND version = ?').pluck();
  const insert = db.prepare('INSERT INTO scopes (name, version) VALUES (?, ?)');
  const ids = new Map<string, number>();
  return (name: string, version: string): number => {
    const key = `${name}\u0000${version}`;
    let id = ids.get(key);
    if (id === undefined) {
      id = (get.get(name, version) as number | undefined) ?? Number(insert.run(name, version).lastInsertRowid);
      if (ids.size > 10_000) ids.clear();
      ids.set(key, id);
    }
    return id;
  };
}

/** Key set id → index of one key in its value array: for {@link attrValueAtSql}. */
export type KeyPositions = (key: string) => [number, number][];

/** The positions of a key in every key set holding it (read before a query that filters on the key). */
export function createKeyPositions(db: Db): KeyPositions {
  const st = db.prepare('SELECT ks.id, CAST(k.key AS INTEGER) FROM attr_keysets ks, json_each(ks.keys) k WHERE k.value = ?').raw();
  return (key) => st.all(key) as [number, number][];
}

/**
 * Like {@link attrValueSql}, with the key's position per key set given as literals (no key list
 * read per row): rows whose key set lacks the key give NULL.
 */
export function attrValueAtSql(t: string, pathSql: string, positions: [number, number][], valueSets = false): string {
  const at = positions.length
    ? `json_extract(${valueSets ? attrValuesTextSql(t) : `${t}.attributes`}, CASE ${t}.attr_keys ${positions.map(([id, i]) => `WHEN ${Math.trunc(id)} THEN '$[${Math.trunc(i)}]'`).join(' ')} END)`
    : 'NULL';
  return `CASE WHEN ${t}.attr_keys IS NULL THEN json_extract(${t}.attributes, ${pathSql}) ELSE ${at} END`;
}

/** {@link attrValueAtSql} for log rows, templates included (migration 051). */
export function logAttrValueAtSql(t: string, pathSql: string, positions: [number, number][]): string {
  const at = positions.length ? logValueAtSql(t, `CASE ${t}.attr_keys ${positions.map(([id, i]) => `WHEN ${Math.trunc(id)} THEN '$[${Math.trunc(i)}]'`).join(' ')} END`) : 'NULL';
  return `CASE WHEN ${t}.attr_keys IS NULL THEN json_extract(${t}.attributes, ${pathSql}) ELSE ${at} END`;
}
