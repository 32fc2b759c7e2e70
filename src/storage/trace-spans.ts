import type { Statement } from 'better-sqlite3';
import type { Db } from './db.js';
import { derivedSql, idBlob } from './compact-ids.js';

/**
 * One trace's spans through `trace_chunks` (migration 007): each chunk names a range of consecutive
 * span rowids written for the trace in one batch. Rows of the ranges are read by rowid and checked
 * against the trace id. Should the ranges no longer hold all of the trace's spans (the chunks count
 * them; a VACUUM can renumber span rowids), the spans are found by time range instead: `spans_time`
 * between the first and last span start the chunks recorded, filtered by trace id. Either way the
 * result is the same set of rows.
 */

/**
 * Span columns not repeated on new rows (migration 044, compact-ids.ts DERIVED): the name when equal to the
 * operation, the end when equal to start + duration, the service version (the resource's).
 */
export const SPAN_NAME_SQL = derivedSql('s.name', 's.operation');
export const SPAN_END_SQL = derivedSql('s.end_ms', 's.start_ms + s.duration_ms');
export const SPAN_VERSION_SQL = derivedSql(
  's.service_version',
  `COALESCE((SELECT CASE WHEN json_type(r.attributes, '$."service.version"') = 'text' THEN json_extract(r.attributes, '$."service.version"') ELSE '' END
    FROM resources r WHERE r.id = s.resource_id), '')`,
);


export interface TraceChunkSummary {
  span_count: number;
  error_count: number;
  started_ms: number | null;
  ended_ms: number | null;
  /** Latest span start (for the time-range fallback). */
  last_start_ms: number | null;
}

export interface TraceQuery {
  /** Columns of `spans s`, e.g. `s.name, s.service_name`. */
  cols: string;
  /** Extra conditions on `s`, starting with AND; positional `?` parameters in `args`. */
  where?: string;
  args?: unknown[];
  /** ORDER BY / LIMIT tail (LIMIT as a literal or a trailing `?` in `tailArgs`). */
  tail?: string;
  tailArgs?: unknown[];
  /**
   * How to tell the rowid ranges were complete: 'length' when the result (without `where`) must hold
   * `expect` rows, 'any' when any row found is an answer (lookups of one span), 'count' to count
   * the trace's spans in the ranges first.
   */
  check: { kind: 'length'; expect: number } | { kind: 'any' } | { kind: 'count' };
  raw?: boolean;
}

export function createTraceSpans(db: Db) {
  const cache = new Map<string, Statement>();
  const stmt = (sql: string): Statement => {
    let s = cache.get(sql);
    if (!s) {
      s = db.prepare(sql);
      if (cache.size > 100) cache.clear();
      cache.set(sql, s);
    }
    return s;
  };
  const summary = db.prepare(`SELECT coalesce(sum(span_count), 0) AS span_count, coalesce(sum(error_count), 0) AS error_count,
    min(min_start_ms) AS started_ms, max(max_end_ms) AS ended_ms, max(max_start_ms) AS last_start_ms
    FROM trace_chunks WHERE project_id = ? AND trace_id IN (?, ?)`);
  // Unary + keeps the planner from scanning spans_time for project_id: the rowid range is the access path.
  const RANGES = `FROM trace_chunks c CROSS JOIN spans s ON s.rowid BETWEEN c.first_rowid AND c.last_rowid
    WHERE c.project_id = ? AND c.trace_id IN (?, ?) AND +s.trace_id = c.trace_id AND +s.project_id = c.project_id`;
  const inRanges = db.prepare(`SELECT count(*) ${RANGES}`).pluck();
  const BY_TIME = 'FROM spans s INDEXED BY spans_time WHERE s.project_id = ? AND s.start_ms >= ? AND s.start_ms <= ? AND s.trace_id IN (?, ?)';

  return {
    /** Span count, errors, first start and last end of the trace, from its chunks alone. */
    summary(projectId: string, traceId: string): TraceChunkSummary {
      return summary.get(Number(projectId), traceId, idBlob(traceId, 32)) as TraceChunkSummary;
    },

    /** Rows of `q.cols` for the trace's spans matching `q.where`, `q.tail` applied. */
    rows<T>(projectId: string, traceId: string, q: TraceQuery, known?: TraceChunkSummary): T[] {
      const pid = Number(projectId);
      const key = idBlob(traceId, 32);
      const sum = known ?? this.summary(projectId, traceId);
      if (!sum.span_count) return [];
      const where = q.where ?? '';
      const tail = q.tail ?? '';
      const args = q.args ?? [];
      const tailArgs = q.tailArgs ?? [];
      const run = (sql: string, head: unknown[]) => {
        const st = stmt(sql);
        return (q.raw ? st.raw() : st).all(...head, ...args, ...tailArgs) as T[];
      };
      const byTime = () => run(`SELECT ${q.cols} ${BY_TIME}${where} ${tail}`, [pid, sum.started_ms, sum.last_start_ms, traceId, key]);
      if (q.check.kind === 'count' && (inRanges.get(pid, traceId, key) as number) !== sum.span_count) return byTime();
      const rows = run(`SELECT ${q.cols} ${RANGES}${where} ${tail}`, [pid, traceId, key]);
      if (q.check.kind === 'length' && rows.length < q.check.expect) return byTime();
      if (q.check.kind === 'any' && rows.length === 0) return byTime();
      return rows;
    },
  };
}

export type TraceSpans = ReturnType<typeof createTraceSpans>;
