import type { LogQuery } from '../../domain/logs/query.js';
import { ftsPlan, type FtsNode } from '../log-fts.js';
import { COLUMN_KEYS, SMALL_MATCH_SET, type LogCount, type LogDim, type LogFilter, type LogRow, type LogSample, type LogSearchResult, type LogsReader } from '../logs-read-repo.js';
import { lit, type ChEngine } from './client.js';

/**
 * The log reads (logs-read-repo.ts) from the ClickHouse `logs` table (schema.ts, migration 4),
 * giving the SQLite repository's answers. Full text is FTS5's semantics, evaluated on the tokens
 * the writer stored (log-store.ts): a phrase — one word or several, its last one a prefix with `*` —
 * holds when ' tok1 tok2 ' (or ' tok1 tok2' for a prefix) is a substring of the row's body tokens or
 * attribute tokens, which is FTS5's positional match (log-fts.ts `holds`). `key:value` terms compare
 * the attribute texts stored as 'key\0value' (log-store.ts sqliteValueText). Counts are read from the
 * rows (no rollups: ClickHouse counts a window's rows without an index).
 */

// With free text, the total is given when the matches are SMALL_MATCH_SET or fewer; COLUMN_KEYS: the
// columns a `key:value` term names directly — both as SQLite's reader has them.

/** `col` starts with `prefix` (bytes: a UTF-8 prefix is a character prefix). */
const startsWith = (col: string, prefix: string) => `substring(${col}, 1, ${Buffer.byteLength(prefix)}) = ${lit(prefix)}`;

/** An FTS5 expression's tree as a condition on the token columns. */
function textCond(n: FtsNode | null): string {
  if (!n) return '0';
  if ('o' in n) return n.c.length ? `(${n.c.map(textCond).join(n.o === 'and' ? ' AND ' : ' OR ')})` : n.o === 'and' ? '1' : '0';
  if (!n.t.length) return '0';
  const needle = lit(` ${n.t.join(' ')}${n.p ? '' : ' '}`);
  return n.a ? `position(attr_tokens, ${needle}) > 0` : `(position(body_tokens, ${needle}) > 0 OR position(attr_tokens, ${needle}) > 0)`;
}

/** A parsed query's non-full-text part (logs-read-repo.ts queryWhere). */
function queryCond(q: LogQuery): string {
  switch (q.kind) {
    case 'text':
      return textCond(ftsPlan(q.fts).tree);
    case 'attr': {
      const col = COLUMN_KEYS[q.key];
      if (col === 'trace_id' || col === 'span_id') {
        const v = q.value.toLowerCase();
        return `(${col} != '' AND ${q.prefix ? startsWith(col, v) : `${col} = ${lit(v)}`})`;
      }
      if (col) {
        const v = col === 'level' ? q.value.toLowerCase() : q.value;
        return q.prefix ? startsWith(col, v) : `${col} = ${lit(v)}`;
      }
      const key = `${q.key}\u0000${q.value}`;
      if (!q.prefix) return `(has(attr_kv, ${lit(key)}) OR has(res_kv, ${lit(key)}))`;
      return `(arrayExists(x -> ${startsWith('x', key)}, attr_kv) OR arrayExists(x -> ${startsWith('x', key)}, res_kv))`;
    }
    default:
      return `(${q.items.map(queryCond).join(q.kind === 'and' ? ' AND ' : ' OR ')})`;
  }
}

/** Every condition of a filter on `logs`, window included. */
function where(pid: number, f: LogFilter): string {
  const parts = [`project_id = ${lit(pid)}`, `time_ms >= ${lit(f.fromMs)}`, `time_ms < ${lit(f.toMs)}`];
  const eq = (col: string, v: string | undefined) => v !== undefined && parts.push(`${col} = ${lit(v)}`);
  eq('connector_key', f.connectorKey);
  eq('environment', f.environment);
  eq('release', f.release);
  eq('service_name', f.service);
  eq('source', f.source);
  if (f.levels?.length) parts.push(`level IN (${f.levels.map(lit).join(', ')})`);
  if (f.traceId !== undefined) parts.push(`trace_id = ${lit(f.traceId)}`);
  if (f.spanId !== undefined) parts.push(`span_id = ${lit(f.spanId)}`);
  if (f.match) parts.push(textCond(ftsPlan(f.match).tree));
  if (f.where) parts.push(queryCond(f.where));
  return parts.join(' AND ');
}

const ROW_COLS = `id, time_ms, observed_ms, severity_number, severity_text, level, body, attributes, trace_id, span_id, service_name, environment, release, source,
  connector_key, scope_name, resource`;
const ORDER = 'ORDER BY time_ms DESC, id DESC';

/** Reads SQLite answers through the full-text index: free text, or a trace (logs-read-repo.ts withTraceMatch). */
const textPath = (f: LogFilter) => !!f.match || (f.traceId !== undefined && /^[0-9a-f]{32}$/.test(f.traceId));

/** Filters the SQLite rollups cannot answer: there, a search without free text gives no total. */
const rowOnly = (f: LogFilter) => f.traceId !== undefined || f.spanId !== undefined || f.where !== undefined;

type ChLogOut = Omit<LogRow, 'trace_id' | 'span_id' | 'connector_key' | 'resource_id'> & { trace_id: string; span_id: string; connector_key: string };
const rowOut = (r: ChLogOut): LogRow => ({
  ...r,
  id: Number(r.id),
  trace_id: r.trace_id || null,
  span_id: r.span_id || null,
  connector_key: r.connector_key || null,
  resource_id: 0,
});

export function createChLogsReader(engine: ChEngine): LogsReader {
  async function count(pid: number, f: LogFilter): Promise<number> {
    const [r] = await engine.query<{ n: number }>(`SELECT count() AS n FROM logs WHERE ${where(pid, f)}`);
    return Number(r?.n ?? 0);
  }

  /**
   * A page of rows in two reads: the page's (time, id) keys, sorting only those two columns and the
   * filter's, then the page's whole rows within its time range. A one-read ORDER BY … LIMIT on
   * 18.16 reads every column of every matching row of the window before sorting.
   */
  async function rows(pid: number, f: LogFilter, limit: number, offset: number): Promise<LogRow[]> {
    if (limit <= 0) return [];
    const keys = await engine.query<{ time_ms: number; id: number }>(`SELECT time_ms, id FROM logs WHERE ${where(pid, f)} ${ORDER} LIMIT ${Math.trunc(offset)}, ${Math.trunc(limit)}`);
    if (!keys.length) return [];
    const full = await engine.query<ChLogOut>(
      `SELECT ${ROW_COLS} FROM logs WHERE project_id = ${lit(pid)} AND time_ms >= ${lit(keys[keys.length - 1]!.time_ms)} AND time_ms <= ${lit(keys[0]!.time_ms)}
       AND id IN (${keys.map((k) => lit(Number(k.id))).join(', ')})`,
    );
    const byKey = new Map(full.map((r) => [`${r.time_ms}/${r.id}`, r]));
    const out: LogRow[] = [];
    for (const k of keys) {
      const r = byKey.get(`${k.time_ms}/${k.id}`);
      if (r) out.push(rowOut(r));
    }
    return out;
  }

  async function counts(projectId: string, f: LogFilter, dims: readonly LogDim[], step?: { firstMs: number; stepMs: number }): Promise<LogCount[]> {
    const bucket = step ? `toInt64(floor((time_ms - ${lit(step.firstMs)}) / ${lit(step.stepMs)}))` : 'toInt64(0)';
    const keys = dims.map((d, i) => `, ${d} AS k${i}`).join('');
    const group = ['b', ...dims.map((_, i) => `k${i}`)].join(', ');
    const out = await engine.query<Record<string, unknown>>(`SELECT ${bucket} AS b${keys}, count() AS n FROM logs WHERE ${where(Number(projectId), f)} GROUP BY ${group}`);
    return out.map((r) => ({ bucket: Number(r.b), keys: dims.map((_, i) => String(r[`k${i}`] ?? '')), n: Number(r.n) }));
  }

  return {
    counts,
    async total(projectId, f) {
      return count(Number(projectId), f);
    },
    async search(projectId, f, page) {
      const pid = Number(projectId);
      if (textPath(f)) {
        // SQLite: the matches through the full-text index, with an exact total when they are few.
        const n = await count(pid, f);
        const r = n > page.offset ? await rows(pid, f, page.limit, page.offset) : [];
        return { rows: r, hasMore: n > page.offset + page.limit, total: n <= SMALL_MATCH_SET ? n : null };
      }
      const exact = page.withTotal === false || rowOnly(f) ? null : await count(pid, f);
      if (exact === 0) return { rows: [], hasMore: false, total: 0 };
      const r = await rows(pid, f, page.limit + 1, page.offset);
      return { rows: r.slice(0, page.limit), hasMore: r.length > page.limit, total: exact } satisfies LogSearchResult;
    },
    async newest(projectId, f, n, opts = {}) {
      const withAttrs = opts.attributes || textPath(f);
      const out = await engine.query<LogSample>(
        `SELECT body, level${withAttrs ? ', attributes' : ''} FROM logs WHERE ${where(Number(projectId), f)} ${ORDER} LIMIT ${Math.trunc(n)}`,
      );
      return out;
    },
  };
}
