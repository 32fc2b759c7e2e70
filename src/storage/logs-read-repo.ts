import type { Statement } from 'better-sqlite3';
import type { Db } from './db.js';
import { LOG_COUNT_TABLES } from './migrations/004-log-counts.js';
import { createAttrDecoder, createKeyPositions, LOG_HTTP_METHOD_SQL, logAttrValueAtSql, logTemplateSql, scopeNameSql, type KeyPositions } from './attr-keysets.js';
import { ftsIdsArgs, ftsIdsSql, ftsPlan, phraseWhere, registerLogFtsFunctions } from './log-fts.js';
import { derivedSql, idEqSql, idTextSql, severityTextSql, traceIdFts } from './compact-ids.js';

const SEVERITY_TEXT_SQL = severityTextSql('l');
import { logDimCondSql, logDimJoinSql, logDimSql, type LogDimCol } from './log-dims.js';
import type { LogQuery } from '../domain/logs/query.js';

/** Level names as stored (see levelOf in sqlite-telemetry-store.ts), least to most severe. */
export const LOG_LEVELS = ['trace', 'debug', 'info', 'warn', 'error', 'fatal'] as const;
export type LogLevel = (typeof LOG_LEVELS)[number];

/** A stored log row (times in epoch ms; `attributes` is the stored JSON text). */
export interface LogRow {
  id: number;
  time_ms: number;
  observed_ms: number;
  severity_number: number;
  severity_text: string;
  level: string;
  body: string;
  attributes: string;
  trace_id: string | null;
  span_id: string | null;
  service_name: string;
  environment: string;
  release: string;
  source: string;
  connector_key: string | null;
  scope_name: string;
  resource_id: number;
  /** Resource attributes (JSON text), attached by {@link createLogsReadRepo}'s search. */
  resource?: string;
}

/** Filters shared by every log read. The window is half-open: `[fromMs, toMs)`. */
export interface LogFilter {
  fromMs: number;
  toMs: number;
  /** A full-text expression built by {@link ftsQuery}; never raw user text. */
  match?: string;
  connectorKey?: string;
  environment?: string;
  levels?: readonly string[];
  release?: string;
  service?: string;
  source?: string;
  /** Only logs of this trace (found through the full-text index: the writer adds the trace id to `attrs`). */
  traceId?: string;
  spanId?: string;
  /** The part of a parsed `q` that full text alone cannot answer (`key:value` terms, OR across them). */
  where?: LogQuery;
}

/** Dimensions a count can be grouped by (column names of the rollups). */
export type LogDim = 'level' | 'service_name' | 'environment' | 'release' | 'source' | 'connector_key' | 'http_method';

export interface LogCount {
  /** Bucket index from `step.firstMs` (0 when no step was given). */
  bucket: number;
  /** Values of the requested dimensions, in order. */
  keys: string[];
  n: number;
}

/** What a sample for pattern mining holds (`attributes` only when asked for). */
export type LogSample = Pick<LogRow, 'body' | 'level'> & { attributes?: string };

export interface LogSearchResult {
  /** Newest first (time, then id). */
  rows: LogRow[];
  hasMore: boolean;
  /** Exact number of matching rows when it was cheap to know, else null. */
  total: number | null;
}

// ---------------------------------------------------------------------------------------------
// Free text → FTS5

const WORD_CHAR = /[\p{L}\p{N}]/u;

/** A double-quoted FTS5 string: the tokenizer splits it, so `foo-bar` becomes the phrase "foo bar". */
const quote = (s: string) => `"${s.replace(/"/g, '""')}"`;

/**
 * Turns a user's search text into a safe FTS5 expression: every bare word and every `"quoted
 * phrase"` becomes an FTS5 string (all must match); a bare word ending in `*` is a prefix search.
 * FTS5 operators in the text (AND, OR, NOT, NEAR, column filters, parentheses) are taken literally.
 * Returns null when the text holds nothing searchable (no letter or digit).
 */
export function ftsQuery(text: string): string | null {
  const terms: string[] = [];
  const re = /"([^"]*)"?|(\S+)/g;
  for (const m of text.matchAll(re)) {
    if (m[1] !== undefined) {
      if (WORD_CHAR.test(m[1])) terms.push(quote(m[1]));
      continue;
    }
    let word = m[2]!.replace(/"/g, '');
    const prefix = word.endsWith('*');
    word = word.replace(/\*+$/, '');
    if (!WORD_CHAR.test(word)) continue;
    if (!prefix && /^[0-9a-f]{32}$/i.test(word)) terms.push(traceIdFts(word)); // a trace id: indexed by its first digits (migration 037)
    else terms.push(prefix && WORD_CHAR.test(word[word.length - 1]!) ? `${quote(word)}*` : quote(word));
  }
  return terms.length ? terms.join(' ') : null;
}

// ---------------------------------------------------------------------------------------------

const MINUTE = 60_000;
/** Full-text matches up to this many are fetched by id directly (and give an exact total). */
export const SMALL_MATCH_SET = 4096;

interface Where {
  sql: string;
  args: unknown[];
}

/** Conditions on the dimension columns, of log rows (`l.`) or `log_dims` rows. */
function dimWhere(f: LogFilter, alias: string): Where {
  const parts: string[] = [];
  const args: unknown[] = [];
  const eq = (col: string, v: string | undefined) => {
    if (v === undefined) return;
    parts.push(`${alias}${col} = ?`);
    args.push(v);
  };
  eq('connector_key', f.connectorKey);
  eq('environment', f.environment);
  eq('release', f.release);
  eq('service_name', f.service);
  eq('source', f.source);
  if (f.levels && f.levels.length) {
    parts.push(`${alias}level IN (${f.levels.map(() => '?').join(', ')})`);
    args.push(...f.levels);
  }
  return { sql: parts.map((p) => ` AND ${p}`).join(''), args };
}

/** Columns a `key:value` term names directly (the rest are log or resource attributes). */
export const COLUMN_KEYS: Record<string, string> = {
  level: 'level',
  service: 'service_name',
  'service.name': 'service_name',
  environment: 'environment',
  'deployment.environment': 'environment',
  'deployment.environment.name': 'environment',
  release: 'release',
  'service.version': 'release',
  source: 'source',
  trace_id: 'trace_id',
  span_id: 'span_id',
};

/** `*`, `?` and `[` taken literally in a GLOB pattern. */
const globLiteral = (s: string) => s.replace(/[*?[]/g, (c) => `[${c}]`);

/**
 * SQL of a parsed query's non-full-text part over log rows `l`: a `key:value` term compares the log
 * attribute or, failing that, the resource attribute as text (the resources of the project that
 * match are found once per query: a resource is stored once, not per row); free text under an OR
 * becomes a full-text subquery.
 */
function queryWhere(q: LogQuery, pid: number, keyPos: KeyPositions): Where {
  switch (q.kind) {
    case 'text': {
      // Both full-text tables, phrases checked on the row (migration 050, src/storage/log-fts.ts).
      const plan = ftsPlan(q.fts);
      const ph = phraseWhere(plan);
      return { sql: `(l.id IN (${ftsIdsSql()})${ph.sql})`, args: [...ftsIdsArgs(plan), ...ph.args] };
    }
    case 'attr': {
      const col = COLUMN_KEYS[q.key];
      const op = q.prefix ? 'GLOB' : '=';
      const v = q.prefix ? `${globLiteral(q.value)}*` : q.value;
      if (col === 'trace_id' || col === 'span_id') {
        // Stored as bytes or text (migration 037).
        const lv = v.toLowerCase();
        return q.prefix ? { sql: `${idTextSql(`l.${col}`)} GLOB ?`, args: [lv] } : { sql: idEqSql(`l.${col}`), args: [lv, lv] };
      }
      if (col) {
        const x = col === 'level' ? v.toLowerCase() : v;
        return { sql: logDimCondSql('l', col as LogDimCol, op), args: [pid, x, x] };
      }
      const path = `$."${q.key}"`;
      return {
        sql: `(CAST(${logAttrValueAtSql('l', '?', keyPos(q.key))} AS TEXT) ${op} ? OR l.resource_id IN (SELECT id FROM resources WHERE project_id = ? AND CAST(json_extract(attributes, ?) AS TEXT) ${op} ?))`,
        args: [path, v, pid, path, v],
      };
    }
    default: {
      const parts = q.items.map((x) => queryWhere(x, pid, keyPos));
      return { sql: `(${parts.map((p) => p.sql).join(q.kind === 'and' ? ' AND ' : ' OR ')})`, args: parts.flatMap((p) => p.args) };
    }
  }
}

/** Filters the rollups cannot answer (trace, span, `key:value`): such reads go to log rows. */
const rowOnly = (f: LogFilter) => f.traceId !== undefined || f.spanId !== undefined || f.where !== undefined;

/**
 * The dimension filter on log rows `l`: through the numbered combinations (`dims`, in `logs_time`,
 * so checked in the index; migration 037), or on the columns for rows from before the migration.
 */
function rowDimWhere(f: LogFilter, pid: number): Where {
  if (!hasDimFilter(f)) return { sql: '', args: [] };
  const d = dimWhere(f, '');
  const l = dimWhere(f, 'l.');
  return {
    sql: ` AND (l.dims IN (SELECT id FROM log_dims WHERE project_id = ?${d.sql}) OR (l.dims IS NULL${l.sql}))`,
    args: [pid, ...d.args, ...l.args],
  };
}

/** The dimension filter on log count rollup rows `c`, which name their combination (migration 045). */
function rollupDimWhere(f: LogFilter, pid: number): Where {
  if (!hasDimFilter(f)) return { sql: '', args: [] };
  const d = dimWhere(f, '');
  return { sql: ` AND c.dims IN (SELECT id FROM log_dims WHERE project_id = ?${d.sql})`, args: [pid, ...d.args] };
}

/** Conditions on log rows `l`: the dimensions plus trace, span and the parsed query's rest. */
function rowWhere(f: LogFilter, pid: number, keyPos: KeyPositions): Where {
  const w = rowDimWhere(f, pid);
  let sql = w.sql;
  const args = [...w.args];
  if (f.traceId !== undefined) {
    sql += ` AND ${idEqSql('l.trace_id')}`;
    args.push(f.traceId, f.traceId);
  }
  if (f.spanId !== undefined) {
    sql += ` AND ${idEqSql('l.span_id')}`;
    args.push(f.spanId, f.spanId);
  }
  if (f.where) {
    const q = queryWhere(f.where, pid, keyPos);
    sql += ` AND ${q.sql}`;
    args.push(...q.args);
  }
  return { sql, args };
}

/**
 * A trace filter as a full-text term too: the writer adds each log's trace id to its full-text row
 * (`attrs`), so one trace's logs come from the full-text index (by id, with an exact total), never
 * from a walk through a time window. The `l.trace_id = ?` condition still applies on the rows.
 */
function withTraceMatch(f: LogFilter): LogFilter {
  if (f.traceId === undefined || !/^[0-9a-f]{32}$/.test(f.traceId)) return f;
  const term = `attrs : ${traceIdFts(f.traceId)}`;
  return { ...f, match: f.match ? `(${f.match}) AND ${term}` : term };
}

const hasDimFilter = (f: LogFilter) =>
  f.connectorKey !== undefined || f.environment !== undefined || f.release !== undefined || f.service !== undefined || f.source !== undefined || !!f.levels?.length;

interface Segment {
  fromMs: number;
  toMs: number;
  table: string | null;
}

/**
 * Splits `[fromMs, toMs)` into whole hours, whole minutes and raw edges, coarsest first, so a count
 * reads as few rollup rows as possible. With a histogram step only tiers whose unit divides the step
 * are used (a rollup row must fall inside one bucket). The HTTP-method tables only when needed.
 */
function segments(fromMs: number, toMs: number, http: boolean, stepMs?: number): Segment[] {
  const tiers = LOG_COUNT_TABLES.filter((t) => t.http === http && (stepMs === undefined || stepMs % t.unitMs === 0));
  const split = (a: number, b: number, i: number): Segment[] => {
    if (a >= b) return [];
    const tier = tiers[i];
    if (!tier) return [{ fromMs: a, toMs: b, table: null }];
    const lo = Math.ceil(a / tier.unitMs) * tier.unitMs;
    const hi = Math.floor(b / tier.unitMs) * tier.unitMs;
    if (lo >= hi) return split(a, b, i + 1);
    return [...split(a, lo, i + 1), { fromMs: lo, toMs: hi, table: tier.table }, ...split(hi, b, i + 1)];
  };
  return split(fromMs, toMs, 0);
}

/* eslint-disable @typescript-eslint/no-explicit-any */
export function createLogsReadRepo(db: Db) {
  const cache = new Map<string, Statement>();
  const stmt = (sql: string): Statement => {
    let s = cache.get(sql);
    if (!s) {
      s = db.prepare(sql);
      if (cache.size > 500) cache.clear();
      cache.set(sql, s);
    }
    return s;
  };

  const keyPos = createKeyPositions(db);
  registerLogFtsFunctions(db);
  const ftsIds = db.prepare(`${ftsIdsSql()} LIMIT ?`).pluck();
  const idRange = db.prepare('SELECT min(id) AS a, max(id) AS b FROM logs WHERE project_id = ? AND time_ms >= ? AND time_ms < ?');

  const COLS = `l.id, l.time_ms, ${derivedSql('l.observed_ms', 'l.time_ms')} AS observed_ms, l.severity_number, ${SEVERITY_TEXT_SQL} AS severity_text, ${logDimSql('l', 'level')} AS level, l.body, l.attributes,
    ${idTextSql('l.trace_id')} AS trace_id, ${idTextSql('l.span_id')} AS span_id,
    ${(['service_name', 'environment', 'release', 'source', 'connector_key'] as const).map((c) => `${logDimSql('l', c)} AS ${c}`).join(', ')},
    ${scopeNameSql('l')} AS scope_name, l.resource_id, l.attr_keys, ${logTemplateSql('l')} AS attr_tmpl`;
  const decode = createAttrDecoder(db);
  /** Attribute objects of rows read with `attr_keys` (migration 037) and `attr_tmpl` (the template's text, migration 051), which are then removed. */
  function decoded<T extends { attributes?: string; attr_keys?: number | null; attr_tmpl?: string | null }>(rows: T[]): T[] {
    for (const r of rows) {
      if (r.attributes !== undefined) r.attributes = decode(r.attr_keys, r.attributes, r.attr_tmpl);
      delete r.attr_keys;
      delete r.attr_tmpl;
    }
    return rows;
  }
  const ORDER = 'ORDER BY l.time_ms DESC, l.id DESC';

  /** Rows of `[fromMs, toMs)` matching the filter (and an extra condition), newest first. */
  function rowsIn(pid: number, f: LogFilter, fromMs: number, toMs: number, extra: Where, limit: number, offset = 0): LogRow[] {
    const w = rowWhere(f, pid, keyPos);
    return decoded(stmt(
      `SELECT ${COLS} FROM logs l WHERE l.project_id = ? AND l.time_ms >= ? AND l.time_ms < ?${extra.sql}${w.sql} ${ORDER} LIMIT ? OFFSET ?`,
    ).all(pid, fromMs, toMs, ...extra.args, ...w.args, limit, offset) as LogRow[]);
  }

  /**
   * The latest whole minute `m` such that `[m, toMs)` surely holds at least `need` rows matching the
   * filter's dimensions (counted from the rollups, whole hours and minutes inside the window only),
   * or `fromMs` when the window holds fewer. Lets a selective filter skip the older part of a window.
   */
  function narrowFrom(pid: number, f: LogFilter, need: number): number {
    const w = rollupDimWhere(f, pid);
    const hours = stmt(
      `SELECT t, sum(n) AS n FROM log_counts_1h c WHERE project_id = ? AND t >= ? AND t + 3600000 <= ?${w.sql} GROUP BY t ORDER BY t DESC`,
    ).all(pid, f.fromMs, f.toMs, ...w.args) as { t: number; n: number }[];
    let cum = 0;
    for (const h of hours) {
      if (cum + h.n < need) {
        cum += h.n;
        continue;
      }
      const minutes = stmt(
        `SELECT t, sum(n) AS n FROM log_counts_1m c WHERE project_id = ? AND t >= ? AND t < ?${w.sql} GROUP BY t ORDER BY t DESC`,
      ).all(pid, h.t, h.t + 3_600_000, ...w.args) as { t: number; n: number }[];
      for (const m of minutes) {
        cum += m.n;
        if (cum >= need) return m.t;
      }
      return h.t;
    }
    return f.fromMs;
  }

  /** Newest `need` rows matching a full-text filter: by id when the text matches few rows anywhere, else slice by slice. */
  function matchRows(pid: number, f: LogFilter, need: number): { rows: LogRow[]; total: number | null } {
    const plan = ftsPlan(f.match!);
    const ph = phraseWhere(plan);
    // Candidates of both full-text tables; with phrases, rows of logs_fts2 are checked on their text.
    const ids = ftsIds.all(...ftsIdsArgs(plan), SMALL_MATCH_SET + 1) as number[];
    if (ids.length <= SMALL_MATCH_SET) {
      // Few matches in the whole index: fetch them by id (CROSS JOIN keeps that order of work),
      // filter, sort. Exact total for free.
      if (ids.length === 0) return { rows: [], total: 0 };
      const w = rowWhere(f, pid, keyPos);
      const rows = stmt(
        `SELECT ${COLS} FROM json_each(?) j CROSS JOIN logs l ON l.id = j.value
         WHERE l.project_id = ? AND l.time_ms >= ? AND l.time_ms < ?${w.sql}${ph.sql} ${ORDER}`,
      ).all(JSON.stringify(ids), pid, f.fromMs, f.toMs, ...w.args, ...ph.args) as LogRow[];
      return { rows: decoded(rows.slice(0, need)), total: rows.length };
    }
    // Many matches: walk the window backwards in growing time slices. The full-text index is read
    // only within the id range of each slice (ids grow with arrival, so the range stays tight), and
    // slices are concatenated newest first, so the order is exact whatever the arrival order.
    const out: LogRow[] = [];
    let hi = f.toMs;
    let len = Math.max(MINUTE, Math.ceil((f.toMs - f.fromMs) / 256));
    while (hi > f.fromMs && out.length < need) {
      const lo = Math.max(f.fromMs, hi - len);
      const r = idRange.get(pid, lo, hi) as { a: number | null; b: number | null };
      if (r.a !== null && r.b !== null) {
        out.push(
          ...rowsIn(
            pid,
            f,
            lo,
            hi,
            { sql: ` AND l.id IN (${ftsIdsSql(true)})${ph.sql}`, args: [...ftsIdsArgs(plan, { a: r.a, b: r.b }), ...ph.args] },
            need - out.length,
          ),
        );
      }
      hi = lo;
      len *= 2;
    }
    return { rows: out, total: null };
  }

  /** Counts over raw log rows of `[fromMs, toMs)`, grouped by bucket and dimensions. */
  function rawCounts(pid: number, f: LogFilter, fromMs: number, toMs: number, dims: readonly LogDim[], step?: { firstMs: number; stepMs: number }) {
    const w = rowWhere(f, pid, keyPos);
    const cols = dims.map((d) =>
      d === 'http_method' ? LOG_HTTP_METHOD_SQL('l') : d === 'connector_key' ? `COALESCE(${logDimJoinSql('l', d)}, '')` : logDimJoinSql('l', d),
    );
    const bucket = step ? 'CAST((l.time_ms - ?) / ? AS INTEGER)' : '0';
    // With free text: from the matches to their rows by id (CROSS JOIN keeps that order), so the cost
    // follows the number of matches rather than the size of the window.
    const plan = f.match ? ftsPlan(f.match) : null;
    const ph = plan ? phraseWhere(plan) : { sql: '', args: [] };
    const source = `${plan ? `(${ftsIdsSql()}) f CROSS JOIN logs l ON l.id = f.id` : 'logs l'} LEFT JOIN log_dims d ON d.id = l.dims`;
    const group = ['1', ...cols.map((_, i) => String(i + 2))].join(', ');
    return stmt(
      `SELECT ${bucket} AS b${cols.map((c, i) => `, ${c} AS k${i}`).join('')}, count(*) AS n FROM ${source}
       WHERE l.project_id = ? AND l.time_ms >= ? AND l.time_ms < ?${w.sql}${ph.sql} GROUP BY ${group}`,
    )
      .raw()
      .all(...(step ? [step.firstMs, step.stepMs] : []), ...(plan ? ftsIdsArgs(plan) : []), pid, fromMs, toMs, ...w.args, ...ph.args) as unknown[][];
  }

  function rollupCounts(pid: number, f: LogFilter, seg: Segment, dims: readonly LogDim[], step?: { firstMs: number; stepMs: number }) {
    const w = rollupDimWhere(f, pid);
    const bucket = step ? 'CAST((c.t - ?) / ? AS INTEGER)' : '0';
    const group = ['1', ...dims.map((_, i) => String(i + 2))].join(', ');
    // Rollup rows name their dimension combination (migration 045): its values come from log_dims.
    const join = dims.some((d) => d !== 'http_method') ? ' CROSS JOIN log_dims d ON d.id = c.dims' : '';
    return stmt(
      `SELECT ${bucket} AS b${dims.map((d) => `, ${d === 'http_method' ? 'c' : 'd'}.${d}`).join('')}, sum(c.n) AS n FROM ${seg.table} c${join}
       WHERE c.project_id = ? AND c.t >= ? AND c.t < ?${w.sql} GROUP BY ${group}`,
    )
      .raw()
      .all(...(step ? [step.firstMs, step.stepMs] : []), pid, seg.fromMs, seg.toMs, ...w.args) as unknown[][];
  }

  /**
   * Exact counts of the window's matching rows grouped by dimensions and, with `step`, by time
   * bucket (`bucket` = ⌊(time − firstMs) / stepMs⌋; `firstMs` and `stepMs` whole minutes).
   * The same bucket and values can come back in several rows (one per rollup tier or raw edge):
   * callers add them up. Ask for the dimensions you need together only: every extra one multiplies
   * the rows read.
   */
  function counts(projectId: string, f0: LogFilter, dims: readonly LogDim[], step?: { firstMs: number; stepMs: number }): LogCount[] {
    const pid = Number(projectId);
    const f = withTraceMatch(f0);
    const parts: unknown[][][] = [];
    if (f.match || rowOnly(f)) parts.push(rawCounts(pid, f, f.fromMs, f.toMs, dims, step));
    else {
      for (const seg of segments(f.fromMs, f.toMs, dims.includes('http_method'), step?.stepMs)) {
        parts.push(seg.table ? rollupCounts(pid, f, seg, dims, step) : rawCounts(pid, f, seg.fromMs, seg.toMs, dims, step));
      }
    }
    const out: LogCount[] = [];
    for (const rows of parts) {
      for (const r of rows) {
        const n = Number(r[1 + dims.length]);
        if (!n) continue;
        const keys: string[] = new Array(dims.length);
        for (let i = 0; i < dims.length; i++) keys[i] = r[1 + i] === null || r[1 + i] === undefined ? '' : String(r[1 + i]);
        out.push({ bucket: Number(r[0]), keys, n });
      }
    }
    return out;
  }

  const resourceAttrs = db.prepare('SELECT id, attributes FROM resources WHERE id IN (SELECT value FROM json_each(?))');
  /** Attaches each row's resource attributes (one read per distinct resource of the page). */
  function withResources(rows: LogRow[]): LogRow[] {
    if (!rows.length) return rows;
    const ids = [...new Set(rows.map((r) => r.resource_id))];
    const m = new Map((resourceAttrs.all(JSON.stringify(ids)) as { id: number; attributes: string }[]).map((r) => [r.id, r.attributes]));
    for (const r of rows) r.resource = m.get(r.resource_id) ?? '{}';
    return rows;
  }

  /** Exact number of matching rows in the window. */
  function total(projectId: string, f: LogFilter): number {
    return counts(projectId, f, []).reduce((s, c) => s + c.n, 0);
  }

  const after = db.prepare(`SELECT ${COLS}, l.project_id FROM logs l WHERE l.id > ? ORDER BY l.id LIMIT ?`);
  return {
    /** Every log row after id `afterId` in id order, `n` at most, with its resource (`sightline migrate --to-clickhouse`). */
    rowsAfter(afterId: number, n: number): (LogRow & { project_id: number })[] {
      return withResources(decoded(after.all(afterId, n) as LogRow[])) as (LogRow & { project_id: number })[];
    },
    counts,
    total,
    /**
     * Rows of the window matching the filter, newest first, `limit` from `offset`. `total` is exact
     * when cheap: always without free text (from the rollups), and with free text when the text
     * matches few rows.
     */
    search(projectId: string, f0: LogFilter, page: { limit: number; offset: number; withTotal?: boolean }): LogSearchResult {
      const pid = Number(projectId);
      const f = withTraceMatch(f0);
      const need = page.offset + page.limit + 1;
      if (f.match) {
        const r = matchRows(pid, f, need);
        const rows = withResources(r.rows.slice(page.offset, page.offset + page.limit));
        return { rows, hasMore: r.rows.length > page.offset + page.limit, total: r.total };
      }
      // With `key:value` terms an exact total would scan the window (a trace filter takes the full-text path above).
      const cheapTotal = !rowOnly(f);
      const exact = page.withTotal === false || !cheapTotal ? null : total(projectId, f);
      if (exact === 0) return { rows: [], hasMore: false, total: 0 };
      const from = hasDimFilter(f) && !rowOnly(f) ? narrowFrom(pid, f, need) : f.fromMs;
      const rows = rowsIn(pid, f, from, f.toMs, { sql: '', args: [] }, page.limit + 1, page.offset);
      return { rows: withResources(rows.slice(0, page.limit)), hasMore: rows.length > page.limit, total: exact };
    },

    /**
     * Body, level and (with `attributes`) the attribute JSON of the newest `n` rows of the window
     * matching the filter: a sample for pattern mining and attribute distributions.
     */
    newest(projectId: string, f0: LogFilter, n: number, opts: { attributes?: boolean } = {}): LogSample[] {
      const pid = Number(projectId);
      const f = withTraceMatch(f0);
      if (f.match) return matchRows(pid, f, n).rows;
      const from = hasDimFilter(f) && !rowOnly(f) ? narrowFrom(pid, f, n) : f.fromMs;
      const w = rowWhere(f, pid, keyPos);
      return decoded(stmt(
        `SELECT l.body, ${logDimSql('l', 'level')} AS level${opts.attributes ? `, l.attributes, l.attr_keys, ${logTemplateSql('l')} AS attr_tmpl` : ''} FROM logs l WHERE l.project_id = ? AND l.time_ms >= ? AND l.time_ms < ?${w.sql} ${ORDER} LIMIT ?`,
      ).all(pid, from, f.toMs, ...w.args, n) as LogSample[]);
    },
  };
}

export type LogsReadRepo = ReturnType<typeof createLogsReadRepo>;

/**
 * The log reads as the operations use them: asynchronous, so the ClickHouse reader
 * (src/storage/clickhouse/logs-read.ts) can stand in for the SQLite repository with the same answers.
 */
export interface LogsReader {
  counts(projectId: string, f: LogFilter, dims: readonly LogDim[], step?: { firstMs: number; stepMs: number }): Promise<LogCount[]>;
  total(projectId: string, f: LogFilter): Promise<number>;
  search(projectId: string, f: LogFilter, page: { limit: number; offset: number; withTotal?: boolean }): Promise<LogSearchResult>;
  newest(projectId: string, f: LogFilter, n: number, opts?: { attributes?: boolean }): Promise<LogSample[]>;
}

/** The SQLite repository behind the asynchronous {@link LogsReader}. */
export function asyncLogsReader(repo: LogsReadRepo): LogsReader {
  return {
    counts: async (...a) => repo.counts(...a),
    total: async (...a) => repo.total(...a),
    search: async (...a) => repo.search(...a),
    newest: async (...a) => repo.newest(...a),
  };
}
