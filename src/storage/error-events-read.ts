import type { Statement } from 'better-sqlite3';
import type { Db } from './db.js';
import type { EventQueryTerm } from '../domain/errors/event-query.js';
import { nearestRankIndex } from '../domain/errors/latency.js';
import { userFieldSql, userKeySql } from '../domain/errors/users.js';
import { createLatencyReader, LATENCY_MAX_AGE_MS, type LatencyStats } from './error-latency.js';
import { CANDIDATE_EVENTS_SQL, errorEventFtsExpr, ftsCandidatesSql, FTS_ROWS_SQL } from './error-event-fts.js';

/**
 * Reads of stored error events (issue 20): one interface, answered from SQLite's `error_events`
 * (below) or from ClickHouse's (src/storage/clickhouse/error-events.ts) when events go there. Error
 * groups, their rollups and workflow state are read by error-groups-repo.ts, which asks this for
 * anything that needs the events themselves. Group ids given are a group's history (the group and
 * its active merged duplicates).
 */

/** An error event's stored columns (SQLite's `error_events`; ClickHouse's adds derived ones). */
export interface StoredErrorEvent {
  project_id: number;
  event_id: string;
  group_id: string;
  fingerprint_group_id: string;
  timestamp_ms: number;
  received_ms: number;
  source: string;
  platform: string;
  level: string;
  type: string;
  message: string;
  title: string;
  service_name: string;
  environment: string;
  release: string;
  transaction_name: string;
  server_name: string;
  trace_id: string | null;
  span_id: string | null;
  /** JSON text. */
  tags: string;
  user_json: string | null;
  payload: string;
}

/** An event as read: its JSON columns parsed (the payload only in {@link ErrorEventFull}). */
export interface ErrorEventRow extends Omit<StoredErrorEvent, 'project_id' | 'tags' | 'user_json' | 'payload'> {
  tags: Record<string, string>;
  user: Record<string, unknown> | null;
}

export interface ErrorEventFull extends ErrorEventRow {
  payload: unknown;
}

export interface RelatedTrace {
  trace_id: string;
  event_count: number;
  first_event_ms: number;
  last_event_ms: number;
}


/** One source's row of events.latency (the fields of {@link LatencyStats}). */
export type LatencyRow = LatencyStats;

/** The events of an error (group, release or window) that sessions are linked from (analytics). */
export type LinkedEventsQuery = { groupId: string; since: number } | { release: string; since: number } | { window: { from: number; to: number } };

/** An event as read for session links: its id, time, tags and payload as stored (JSON text). */
export interface LinkEventRow {
  event_id: string;
  timestamp_ms: number;
  tags: string;
  payload: string;
}

export interface TraceEventGroup {
  group_id: string;
  n: number;
  first_ms: number;
  last_ms: number;
  span_ids: string[];
}

export interface ErrorEventsReader {
  /** The newest event of the groups (latest event time, then latest received), with its payload. */
  latestEvent(pid: number, groupIds: readonly string[]): Promise<ErrorEventFull | undefined>;
  event(pid: number, eventId: string): Promise<ErrorEventFull | undefined>;
  /**
   * For each set of group ids (a group with its merged duplicates), its events per distinct-user key
   * (null or '': none) in [lo, hi) / [lo, hi] ranges — one answer per set, in order (errors.list asks
   * for a page of groups at once: one ClickHouse query, not one per group).
   */
  userKeys(pid: number, groupSets: readonly (readonly string[])[], ranges: readonly { lo: number; hi: number; closed: boolean }[]): Promise<{ k: string | null; n: number }[][]>;
  /** The groups' latest `sample` events in [from, to] (newest first): environment, service, release and tags (JSON text). */
  recent(pid: number, groupIds: readonly string[], from: number, to: number, sample: number): Promise<{ environment: string; service_name: string; release: string; tags: string }[]>;
  firstEventIn(pid: number, groupIds: readonly string[], from: number, to: number): Promise<number | null>;
  relatedTraces(pid: number, groupIds: readonly string[], o: { from: number; to: number; limit: number; offset: number }): Promise<{ rows: RelatedTrace[]; total: number }>;
  /** Matches of compiled query terms, newest first, counted up to `cap` (+1 tells there are more). */
  search(pid: number, o: { terms: readonly EventQueryTerm[]; fromMs?: number; toMs?: number; limit: number; offset: number; cap: number }): Promise<{ rows: ErrorEventRow[]; n: number }>;
  latency(pid: number, o: { fromMs: number; toMs: number; service?: string; environment?: string }): Promise<LatencyRow[]>;
  /** Events of a trace per group id counted on. */
  traceGroups(pid: number, traceId: string): Promise<TraceEventGroup[]>;
  /** Events counted on a group (its own id only) in [from, to). */
  count(pid: number, groupId: string, from: number, to: number): Promise<number>;
  /** Events in [from, to] (session links of analytics). */
  linked(pid: number, q: LinkedEventsQuery): Promise<LinkEventRow[]>;
  /** Whether any event names the release. */
  releaseSeen(pid: number, release: string): Promise<boolean>;
}

/** events.latency straight from values: count, nearest-rank percentiles, max and a compensated mean. */
export function latencyOf(source: string, v: readonly number[]): LatencyRow {
  let max = -Infinity;
  let sum = 0;
  let comp = 0;
  for (const x of v) {
    if (x > max) max = x;
    // Kahan–Babuška–Neumaier summation, as SQLite's AVG sums.
    const t = sum + x;
    comp += Math.abs(sum) >= Math.abs(x) ? sum - t + x : x - t + sum;
    sum = t;
  }
  const a = Float64Array.from(v).sort();
  const n = a.length;
  return {
    source,
    count: n,
    p50_ms: a[nearestRankIndex(n, 50)]!,
    p95_ms: a[nearestRankIndex(n, 95)]!,
    p99_ms: a[nearestRankIndex(n, 99)]!,
    max_ms: max,
    avg_ms: Math.round(((sum + comp) / n) * 1000) / 1000,
  };
}

/** Unbounded window ends (the Date range), bound as numbers. */
export const MIN_MS = -8.64e15;
export const MAX_MS = 8.64e15;

export function safeJson<T>(s: string | null | undefined, dflt: T): T {
  if (!s) return dflt;
  try {
    return JSON.parse(s) as T;
  } catch {
    return dflt;
  }
}

/* eslint-disable @typescript-eslint/no-explicit-any */
export const eventFromRow = (r: any): ErrorEventRow => ({
  event_id: r.event_id,
  group_id: r.group_id,
  fingerprint_group_id: r.fingerprint_group_id,
  timestamp_ms: r.timestamp_ms,
  received_ms: r.received_ms,
  source: r.source,
  platform: r.platform,
  level: r.level,
  type: r.type,
  message: r.message,
  title: r.title,
  service_name: r.service_name,
  environment: r.environment,
  release: r.release,
  transaction_name: r.transaction_name,
  server_name: r.server_name,
  trace_id: r.trace_id,
  span_id: r.span_id,
  tags: safeJson(r.tags, {}),
  user: r.user_json ? safeJson(r.user_json, null) : null,
});


export const EVENT_COLUMNS = `event_id, group_id, fingerprint_group_id, timestamp_ms, received_ms, source, platform, level, type, message, title,
  service_name, environment, release, transaction_name, server_name, trace_id, span_id, tags, user_json`;

/** Columns an `exact` query term compares (spec keys → error_events columns; fixed strings, never user text). */
export const EXACT_COLUMN: Record<string, string> = {
  level: 'level',
  type: 'type',
  service: 'service_name',
  environment: 'environment',
  release: 'release',
  transaction: 'transaction_name',
  server: 'server_name',
  trace: "COALESCE(trace_id, '')",
  source: 'source',
  platform: 'platform',
  event_id: 'event_id',
  'user.id': userFieldSql('user_json', 'id'),
  'user.email': userFieldSql('user_json', 'email'),
  'user.username': userFieldSql('user_json', 'username'),
};
export const TIME_COLUMN: Record<string, string> = { timestamp: 'timestamp_ms', received_at: 'received_ms' };

/** `*` wildcard → LIKE pattern with `\` escaping % and _. */
const likePattern = (v: string) => v.replace(/[\\%_]/g, (m) => `\\${m}`).replace(/\*/g, '%');
/** JSON path of a tag key, as a bound parameter: `$."key"` (quotes in keys escaped). */
const tagPath = (key: string) => `$."${key.replace(/\\/g, '\\\\').replace(/"/g, '\\"')}"`;

/** Compiles parsed query terms to a WHERE fragment with bound parameters (values are never spliced into SQL). */
export function compileEventTerms(terms: readonly EventQueryTerm[]): { sql: string[]; args: unknown[] } {
  const sql: string[] = [];
  const args: unknown[] = [];
  const add = (frag: string, negated: boolean, a: unknown[]) => {
    sql.push(negated ? `NOT (${frag})` : `(${frag})`);
    args.push(...a);
  };
  for (const t of terms) {
    switch (t.kind) {
      case 'text': {
        const v = t.text.toLowerCase();
        add('instr(lower(message), ?) > 0 OR instr(lower(title), ?) > 0 OR instr(lower(type), ?) > 0', t.negated, [v, v, v]);
        break;
      }
      case 'exact': {
        const parts: string[] = [];
        const a: unknown[] = [];
        for (const v of t.values) {
          if (t.field === 'group') {
            if (v.includes('*')) {
              parts.push("group_id LIKE ? ESCAPE '\\' OR fingerprint_group_id LIKE ? ESCAPE '\\'");
              a.push(likePattern(v), likePattern(v));
            } else {
              parts.push('group_id = ? OR fingerprint_group_id = ?');
              a.push(v, v);
            }
            continue;
          }
          const col = EXACT_COLUMN[t.field]!;
          if (v.includes('*')) {
            parts.push(`${col} LIKE ? ESCAPE '\\'`);
            a.push(likePattern(v));
          } else {
            parts.push(`${col} = ? COLLATE NOCASE`);
            a.push(v);
          }
        }
        add(parts.join(' OR '), t.negated, a);
        break;
      }
      case 'contains': {
        const parts: string[] = [];
        const a: unknown[] = [];
        for (const v of t.values) {
          if (v.includes('*')) {
            parts.push(`${t.field} LIKE ? ESCAPE '\\'`);
            a.push(`%${likePattern(v)}%`);
          } else {
            parts.push(`instr(lower(${t.field}), ?) > 0`);
            a.push(v.toLowerCase());
          }
        }
        add(parts.join(' OR '), t.negated, a);
        break;
      }
      case 'time': {
        const col = TIME_COLUMN[t.field]!;
        const parts: string[] = [];
        const a: unknown[] = [];
        if (t.min) {
          parts.push(`${col} ${t.min.inclusive ? '>=' : '>'} ?`);
          a.push(t.min.ms);
        }
        if (t.max) {
          parts.push(`${col} ${t.max.inclusive ? '<=' : '<'} ?`);
          a.push(t.max.ms);
        }
        add(parts.join(' AND ') || '1', t.negated, a);
        break;
      }
      case 'tag': {
        const path = tagPath(t.key);
        const parts: string[] = [];
        const a: unknown[] = [];
        for (const v of t.values) {
          if (v.includes('*')) {
            parts.push(`COALESCE(json_extract(tags, ?), '') LIKE ? ESCAPE '\\'`);
            a.push(path, likePattern(v));
          } else {
            parts.push(`COALESCE(json_extract(tags, ?), '') = ? COLLATE NOCASE`);
            a.push(path, v);
          }
        }
        add(parts.join(' OR '), t.negated, a);
        break;
      }
      case 'tag_compare': {
        const path = tagPath(t.key);
        // Only tag values that read as numbers take part in a comparison.
        add(`json_extract(tags, ?) IS NOT NULL AND trim(json_extract(tags, ?)) GLOB '*[0-9]*' AND CAST(json_extract(tags, ?) AS REAL) ${t.op} ?`, t.negated, [
          path,
          path,
          path,
          t.value,
        ]);
        break;
      }
    }
  }
  return { sql, args };
}


/** The reads over SQLite's `error_events` (the embedded default). */
export function createSqliteErrorEventsReader(db: Db): ErrorEventsReader {
  const latencyFast = createLatencyReader(db);
  const inList = (ids: readonly string[]) => ids.map(() => '?').join(', ');
  const USER_KEY = userKeySql('user_json');
  const s = {
    event: db.prepare(`SELECT ${EVENT_COLUMNS}, payload FROM error_events WHERE project_id = ? AND event_id = ?`),
    latestTime: db.prepare('SELECT MAX(timestamp_ms) FROM error_events WHERE project_id = ? AND group_id = ?').pluck(),
    traceEvents: db.prepare(`SELECT group_id, count(*) AS n, min(timestamp_ms) AS first_ms, max(timestamp_ms) AS last_ms, group_concat(DISTINCT span_id) AS span_ids
      FROM error_events WHERE trace_id = ? AND project_id = ? GROUP BY group_id`),
    count: db.prepare('SELECT count(*) AS n FROM error_events WHERE project_id = ? AND group_id = ? AND timestamp_ms >= ? AND timestamp_ms < ?').pluck(),
    groupEvents: db.prepare(`SELECT event_id, timestamp_ms, tags, payload FROM error_events WHERE project_id = ? AND (group_id = ? OR fingerprint_group_id = ?) AND timestamp_ms >= ?`),
    releaseEvents: db.prepare(`SELECT event_id, timestamp_ms, tags, payload FROM error_events WHERE project_id = ? AND release = ? AND timestamp_ms >= ?`),
    windowEvents: db.prepare(`SELECT event_id, timestamp_ms, tags, payload FROM error_events WHERE project_id = ? AND timestamp_ms >= ? AND timestamp_ms <= ?`),
    releaseSeen: db.prepare('SELECT EXISTS (SELECT 1 FROM error_events WHERE project_id = ? AND release = ?)').pluck(),
  };
  const full = (r: any): ErrorEventFull | undefined => (r ? { ...eventFromRow(r), payload: safeJson(r.payload, null) } : undefined);
  // Per number of group ids and of ranges: events per user key in index ranges of one group list
  // (two ranges in a UNION ALL: each is an index range; an OR of the two could scan the group's events).
  const keyStmts = new Map<string, Statement>();
  const keyStmt = (n: number, ranges: readonly { closed: boolean }[]) => {
    const k = `${n}:${ranges.map((r) => (r.closed ? 1 : 0)).join('')}`;
    let st = keyStmts.get(k);
    if (!st) {
      const ids = Array(n).fill('?').join(', ');
      const parts = ranges.map((r) => `SELECT ${USER_KEY} AS k FROM error_events WHERE project_id = ? AND group_id IN (${ids}) AND timestamp_ms >= ? AND timestamp_ms ${r.closed ? '<=' : '<'} ?`);
      keyStmts.set(k, (st = db.prepare(`SELECT k, COUNT(*) AS n FROM (${parts.join(' UNION ALL ')}) GROUP BY k`)));
    }
    return st;
  };

  return {
    async latestEvent(pid, ids) {
      // The latest event time per group id is one index seek; ordering by (time, received) in one
      // query sorted every event of the group (~0.3 s for a group of 80k events).
      let latest: number | null = null;
      for (const id of ids) {
        const t = s.latestTime.get(pid, id) as number | null;
        if (t !== null && (latest === null || t > latest)) latest = t;
      }
      if (latest === null) return undefined;
      return full(
        db
          // INDEXED BY: without it the planner walked the project's events by received time (the
          // ORDER BY's index) — ~1.4 s for errors.get with 300k events in the project; with it, one seek.
          .prepare(`SELECT ${EVENT_COLUMNS}, payload FROM error_events INDEXED BY error_events_group WHERE project_id = ? AND group_id IN (${inList(ids)}) AND timestamp_ms = ? ORDER BY received_ms DESC LIMIT 1`)
          .get(pid, ...ids, latest),
      );
    },
    async event(pid, eventId) {
      return full(s.event.get(pid, eventId));
    },
    async userKeys(pid, sets, ranges) {
      if (!ranges.length) return sets.map(() => []);
      return sets.map((ids) => keyStmt(ids.length, ranges).all(...ranges.flatMap((r) => [pid, ...ids, r.lo, r.hi])) as { k: string | null; n: number }[]);
    },
    async recent(pid, ids, from, to, sample) {
      return db
        .prepare(`SELECT environment, service_name, release, tags FROM error_events WHERE project_id = ? AND group_id IN (${inList(ids)})
          AND timestamp_ms >= ? AND timestamp_ms <= ? ORDER BY timestamp_ms DESC LIMIT ?`)
        .all(pid, ...ids, from, to, sample) as { environment: string; service_name: string; release: string; tags: string }[];
    },
    async firstEventIn(pid, ids, from, to) {
      const r = db
        .prepare(`SELECT MIN(timestamp_ms) AS t FROM error_events WHERE project_id = ? AND group_id IN (${inList(ids)}) AND timestamp_ms >= ? AND timestamp_ms <= ?`)
        .get(pid, ...ids, from, to) as { t: number | null };
      return r.t;
    },
    async relatedTraces(pid, ids, o) {
      const where = `project_id = ? AND group_id IN (${inList(ids)}) AND trace_id IS NOT NULL AND trace_id <> '' AND timestamp_ms >= ? AND timestamp_ms <= ?`;
      const args = [pid, ...ids, o.from, o.to];
      const total = (db.prepare(`SELECT COUNT(DISTINCT trace_id) AS n FROM error_events WHERE ${where}`).get(...args) as { n: number }).n;
      const rows = db
        .prepare(
          `SELECT trace_id, COUNT(*) AS event_count, MIN(timestamp_ms) AS first_event_ms, MAX(timestamp_ms) AS last_event_ms FROM error_events WHERE ${where}
           GROUP BY trace_id ORDER BY last_event_ms DESC, trace_id LIMIT ? OFFSET ?`,
        )
        .all(...args, o.limit, o.offset) as RelatedTrace[];
      return { rows, total };
    },
    async search(pid, o) {
      const c = compileEventTerms(o.terms);
      // Free text of 3+ characters (migration 057): the events the trigram index names in the window,
      // when they are few, each checked by the same predicate. Many (a common word): the window is
      // read as below, newest first, where matches are then dense enough to stop at the count's cap.
      const fts = searchCandidates(db, pid, o);
      const where = ['project_id = ?'];
      const args: unknown[] = [pid];
      if (fts) {
        where.push(`event_id IN (${fts.sql})`);
        args.push(...fts.args);
      }
      where.push(...c.sql);
      args.push(...c.args);
      // With candidates, the window's ends (already applied to them) are no range of the time index,
      // which the planner took over the candidates' primary keys: it read every event of the window.
      const time = fts ? '+timestamp_ms' : 'timestamp_ms';
      if (o.fromMs !== undefined) {
        where.push(`${time} >= ?`);
        args.push(o.fromMs);
      }
      if (o.toMs !== undefined) {
        where.push(`${time} <= ?`);
        args.push(o.toMs);
      }
      const w = where.join(' AND ');
      const n = (db.prepare(`SELECT COUNT(*) AS n FROM (SELECT 1 FROM error_events WHERE ${w} LIMIT ?)`).get(...args, o.cap + 1) as { n: number }).n;
      // Few matches (all counted), or candidates from the index: they are read by the index that found
      // them and sorted (`+timestamp_ms` keeps the planner from walking the time index for the order,
      // which reads every event of the window when a selective term such as user.id matches few or
      // none). Many: the time index, newest first, stops at the page.
      const order = n <= o.cap || fts ? '+timestamp_ms DESC, event_id' : 'timestamp_ms DESC, event_id';
      const rows = db
        .prepare(`SELECT ${EVENT_COLUMNS} FROM error_events WHERE ${w} ORDER BY ${order} LIMIT ? OFFSET ?`)
        .all(...args, o.limit, o.offset)
        .map(eventFromRow);
      return { rows, n };
    },
    async latency(pid, o) {
      return latencyFast(String(pid), o) ?? latencyScan(db, pid, o);
    },
    async traceGroups(pid, traceId) {
      return (s.traceEvents.all(traceId, pid) as { group_id: string; n: number; first_ms: number; last_ms: number; span_ids: string | null }[]).map((e) => ({
        ...e,
        span_ids: e.span_ids ? e.span_ids.split(',').sort() : [],
      }));
    },
    async count(pid, groupId, from, to) {
      return s.count.get(pid, groupId, from, to) as number;
    },
    async linked(pid, q) {
      return (
        'groupId' in q ? s.groupEvents.all(pid, q.groupId, q.groupId, q.since) : 'release' in q ? s.releaseEvents.all(pid, q.release, q.since) : s.windowEvents.all(pid, q.window.from, q.window.to)
      ) as LinkEventRow[];
    },
    async releaseSeen(pid, release) {
      return !!s.releaseSeen.get(pid, release);
    },
  };
}

/** events.search reads the trigram index's candidates when they number fewer than this in the window. */
export const FTS_CANDIDATES_MAX = 10_000;
/**
 * It reads at most this many index rows (all projects and times) per event of the window, counted up
 * to WINDOW_COUNT_MAX: an index row costs about 0.8 µs to check, an event of the window 13–15 µs to
 * read (bench/error-reads.ts), so a word common outside a narrow window reads the window instead.
 */
export const FTS_ROWS_PER_EVENT = 10;
export const WINDOW_COUNT_MAX = 10_000;
/** With a window of WINDOW_COUNT_MAX or more events, the index rows read at most. */
export const FTS_ROWS_MAX = 200_000;

/**
 * The trigram index's candidates for a search (an `event_id IN (…)` subquery and its argument: the
 * candidates read once, not by each of the count and the page), or null when it has no term the
 * index narrows, or names `max` or more events in the window, or more index rows in all than its
 * budget (`maxRows`, by default from the window's size): the window is then read as without the index.
 */
export function searchCandidates(
  db: Db,
  pid: number,
  o: { terms: readonly EventQueryTerm[]; fromMs?: number; toMs?: number },
  max = FTS_CANDIDATES_MAX,
  maxRows?: number,
): { sql: string; args: unknown[] } | null {
  const expr = errorEventFtsExpr(o.terms);
  if (!expr) return null;
  const window: unknown[] = [pid];
  if (o.fromMs !== undefined) window.push(o.fromMs);
  if (o.toMs !== undefined) window.push(o.toMs);
  if (maxRows === undefined) {
    const w = db
      .prepare(`SELECT COUNT(*) FROM (SELECT 1 FROM error_events WHERE project_id = ?${o.fromMs !== undefined ? ' AND timestamp_ms >= ?' : ''}${o.toMs !== undefined ? ' AND timestamp_ms <= ?' : ''} LIMIT ?)`)
      .pluck()
      .get(...window, WINDOW_COUNT_MAX) as number;
    if (w === 0) return null;
    maxRows = w >= WINDOW_COUNT_MAX ? FTS_ROWS_MAX : Math.max(1000, w * FTS_ROWS_PER_EVENT);
  }
  const ids = db.prepare(ftsCandidatesSql(o.fromMs !== undefined, o.toMs !== undefined)).pluck().all(expr, maxRows, ...window, max) as number[];
  if (ids.length >= max) return null;
  // Fewer than max: all of them, unless the index rows read stopped at maxRows.
  if ((db.prepare(FTS_ROWS_SQL).pluck().get(expr, maxRows) as number) >= maxRows) return null;
  return { sql: CANDIDATE_EVENTS_SQL, args: [JSON.stringify(ids)] };
}

/**
 * events.latency straight from the events of the window (every one read and sorted): the
 * reference the tallies' read is checked against, and what it falls back to.
 */
export function latencyScan(db: Db, pid: number, o: { fromMs: number; toMs: number; service?: string; environment?: string }): LatencyRow[] {
  const where = ['project_id = ?', 'received_ms >= ?', 'received_ms <= ?', 'received_ms - timestamp_ms <= ?'];
  const args: unknown[] = [pid, o.fromMs, o.toMs, LATENCY_MAX_AGE_MS];
  if (o.service !== undefined) {
    where.push('service_name = ?');
    args.push(o.service);
  }
  if (o.environment !== undefined) {
    where.push('environment = ?');
    args.push(o.environment);
  }
  const w = where.join(' AND ');
  const LAT = 'MAX(0, received_ms - timestamp_ms)';
  // error_events_received covers these reads (one index range each). Per source, its latencies
  // come back as plain numbers (pluck: a third of the cost of two-column rows) and are counted,
  // summed and sorted here; an aggregate query beside it read the range once more.
  const sources = (db.prepare(`SELECT DISTINCT source FROM error_events WHERE ${w}`).pluck().all(...args) as string[]).sort();
  const values = db.prepare(`SELECT ${LAT} FROM error_events WHERE ${w} AND source = ?`).pluck();
  return sources.map((source) => latencyOf(source, values.all(...args, source) as number[]));
}
