import type { Db } from '../db.js';
import type { EventQueryTerm } from '../../domain/errors/event-query.js';
import { userField, userKeyOf } from '../../domain/errors/users.js';
import {
  eventFromRow,
  EXACT_COLUMN,
  TIME_COLUMN,
  safeJson,
  type ErrorEventFull,
  type ErrorEventsReader,
  type LatencyRow,
  type LinkEventRow,
  type RelatedTrace,
  type StoredErrorEvent,
} from '../error-events-read.js';

export type { StoredErrorEvent };
import { LATENCY_MAX_AGE_MS } from '../error-latency.js';
import { lit, type ChEngine } from './client.js';
import { createBatchBuffer, NO_PACING, rowArrays, type BufferPacing } from './batch-buffer.js';
import { insertByPartition } from './monitor-results.js';
import { valueAtRank } from './traces-read.js';

/**
 * Error events in ClickHouse (issue 20; schema.ts migration 7, table `error_events`). What makes an
 * event new is decided beside the groups: ingest inserts its id into `error_event_ids` (SQLite, or
 * PostgreSQL with control data there) in the write batch's transaction, and only an event whose id
 * was new gets a row here, held by the batch buffer until the commit and inserted before the write
 * is acknowledged. The id index also answers `groupOfEvent` (feedback), replays' links and the
 * group of an event read by id; the rollups (groups, dimension values, users, hourly tallies) stay
 * with the groups. Reads answer as the SQLite reader (error-events-read.ts) does.
 *
 * Beside the stored columns a row carries what SQLite computes from JSON at read time: the user's
 * distinct key and fields (users.ts, computed in JavaScript as ingest keys users) and the tags as
 * key/value arrays (with each value's number, as SQLite's CAST reads a numeric prefix, for tag
 * comparisons), so every query runs on ClickHouse 18.16, which has no JSON functions.
 */

/** An error event as stored in ClickHouse: its columns and what the reads compare, derived from them. */
export interface ChErrorEventRow extends StoredErrorEvent {
  tag_keys: string[];
  tag_values: string[];
  tag_nums: (number | null)[];
  user_key: string;
  user_id: string;
  user_email: string;
  user_username: string;
}

/**
 * SQLite's CAST(text AS REAL): the longest numeric prefix after leading ASCII whitespace (SQLite skips
 * no other space), else 0. Out of range it is ±Inf in SQLite; stored as ±the largest double (JSON
 * holds no infinity), which compares with any finite bound as the infinity does.
 */
function castReal(v: string): number {
  const m = /^[ \t\n\v\f\r]*([+-]?(\d+(\.\d*)?|\.\d+)([eE][+-]?\d+)?)/.exec(v);
  if (!m) return 0;
  const n = Number(m[1]);
  return Number.isFinite(n) ? n : n > 0 ? Number.MAX_VALUE : -Number.MAX_VALUE;
}

/** A tag value as SQLite's json_extract + CAST AS TEXT gives it. */
const tagText = (v: unknown): string | null =>
  v === null || v === undefined ? null : typeof v === 'string' ? v : typeof v === 'boolean' ? (v ? '1' : '0') : typeof v === 'object' ? JSON.stringify(v) : String(v);

export function chErrorEventRow(e: StoredErrorEvent): ChErrorEventRow {
  const tags = safeJson<unknown>(e.tags, {});
  const keys: string[] = [];
  const values: string[] = [];
  const nums: (number | null)[] = [];
  if (tags && typeof tags === 'object' && !Array.isArray(tags)) {
    for (const [k, v] of Object.entries(tags as Record<string, unknown>)) {
      const t = tagText(v);
      if (t === null) continue;
      keys.push(k);
      values.push(t);
      // Only values holding a digit take part in a comparison (null: never matches, as NaN would).
      nums.push(/[0-9]/.test(t) ? castReal(t) : null);
    }
  }
  const user = e.user_json ? safeJson<unknown>(e.user_json, null) : null;
  return {
    ...e,
    tag_keys: keys,
    tag_values: values,
    tag_nums: nums,
    user_key: userKeyOf(user) ?? '',
    user_id: userField(user, 'id'),
    user_email: userField(user, 'email'),
    user_username: userField(user, 'username'),
  };
}

const DAY = 86_400_000;
/** Rows by day of event time (the table's partitions; a time before 1970 in the first day's). */
export const insertErrorEvents = (engine: ChEngine, rows: readonly ChErrorEventRow[]) => insertByPartition(engine, 'error_events', rows, (r) => Math.floor(Math.max(r.timestamp_ms, 0) / DAY));

/** The buffered writer: events held per write-batch job, inserted after the commit, before the acknowledgement. */
export function createChErrorEventStore(engine: ChEngine, pacing: BufferPacing = NO_PACING) {
  const buffer = createBatchBuffer(rowArrays<ChErrorEventRow>((rows) => insertErrorEvents(engine, rows)), pacing);
  return {
    add(e: StoredErrorEvent): void {
      buffer.add([chErrorEventRow(e)]);
    },
    participant: buffer.participant,
    flush: buffer.flush,
  };
}
export type ChErrorEventStore = ReturnType<typeof createChErrorEventStore>;

const EVENT_COLS = `event_id, group_id, fingerprint_group_id, timestamp_ms, received_ms, source, platform, level, type, message, title,
  service_name, environment, release, transaction_name, server_name, trace_id, span_id, tags, user_json`;

/* eslint-disable @typescript-eslint/no-explicit-any */
const numbered = (r: any) => ({ ...r, timestamp_ms: Number(r.timestamp_ms), received_ms: Number(r.received_ms) });
const full = (r: any): ErrorEventFull | undefined => (r ? { ...eventFromRow(numbered(r)), payload: safeJson(r.payload, null) } : undefined);

/** The columns SQLite's query terms compare, with ClickHouse's own for what SQLite reads from JSON. */
const EXACT: Record<string, string> = {
  ...EXACT_COLUMN,
  trace: "ifNull(trace_id, '')",
  'user.id': 'user_id',
  'user.email': 'user_email',
  'user.username': 'user_username',
};
const likeLit = (v: string) => lit(v.replace(/[\\%_]/g, (m) => `\\${m}`).replace(/\*/g, '%'));
/** SQLite's `a = b COLLATE NOCASE` and `a LIKE b` (ASCII letters fold; ClickHouse's lower() folds ASCII only). */
const eqNoCase = (col: string, v: string) => `lower(${col}) = lower(${lit(v)})`;
const likeNoCase = (col: string, pattern: string) => `lower(${col}) LIKE lower(${pattern})`;
const tagAt = (arr: string, key: string) => `${arr}[indexOf(tag_keys, ${lit(key)})]`;

/** compileEventTerms (error-events-read.ts) for ClickHouse: the same matches, values as literals. */
export function compileChEventTerms(terms: readonly EventQueryTerm[]): string[] {
  const out: string[] = [];
  const add = (frag: string, negated: boolean) => out.push(negated ? `NOT (${frag})` : `(${frag})`);
  for (const t of terms) {
    switch (t.kind) {
      case 'text': {
        const v = lit(t.text.toLowerCase());
        add(`position(lower(message), ${v}) > 0 OR position(lower(title), ${v}) > 0 OR position(lower(type), ${v}) > 0`, t.negated);
        break;
      }
      case 'exact': {
        const parts = t.values.map((v) => {
          if (t.field === 'group') {
            return v.includes('*')
              ? `${likeNoCase('group_id', likeLit(v))} OR ${likeNoCase('fingerprint_group_id', likeLit(v))}`
              : `group_id = ${lit(v)} OR fingerprint_group_id = ${lit(v)}`;
          }
          const col = EXACT[t.field]!;
          return v.includes('*') ? likeNoCase(col, likeLit(v)) : eqNoCase(col, v);
        });
        add(parts.join(' OR '), t.negated);
        break;
      }
      case 'contains': {
        const parts = t.values.map((v) => (v.includes('*') ? likeNoCase(t.field, lit(`%${v.replace(/[\\%_]/g, (m) => `\\${m}`).replace(/\*/g, '%')}%`)) : `position(lower(${t.field}), ${lit(v.toLowerCase())}) > 0`));
        add(parts.join(' OR '), t.negated);
        break;
      }
      case 'time': {
        const col = TIME_COLUMN[t.field]!;
        const parts: string[] = [];
        if (t.min) parts.push(`${col} ${t.min.inclusive ? '>=' : '>'} ${lit(t.min.ms)}`);
        if (t.max) parts.push(`${col} ${t.max.inclusive ? '<=' : '<'} ${lit(t.max.ms)}`);
        add(parts.join(' AND ') || '1', t.negated);
        break;
      }
      case 'tag': {
        const v = tagAt('tag_values', t.key);
        add(t.values.map((x) => (x.includes('*') ? likeNoCase(v, likeLit(x)) : eqNoCase(v, x))).join(' OR '), t.negated);
        break;
      }
      case 'tag_compare': {
        const n = tagAt('tag_nums', t.key);
        add(`indexOf(tag_keys, ${lit(t.key)}) > 0 AND isNotNull(${n}) AND ${n} ${t.op} ${lit(t.value)}`, t.negated);
        break;
      }
    }
  }
  return out;
}

/** The reads of error-events-read.ts over ClickHouse; `db` holds the id index (`error_event_ids`). */
export function createChErrorEventsReader(engine: ChEngine, db: Db): ErrorEventsReader {
  const ids = (groupIds: readonly string[]) => `group_id IN (${groupIds.map(lit).join(', ')})`;
  const ofGroups = (pid: number, groupIds: readonly string[]) => `project_id = ${lit(pid)} AND ${ids(groupIds)}`;
  const idRow = db.prepare('SELECT group_id, timestamp_ms FROM error_event_ids WHERE project_id = ? AND event_id = ?');
  const one = async <T>(q: string): Promise<T | undefined> => (await engine.query<T>(q))[0];

  return {
    async latestEvent(pid, groupIds) {
      // The latest time first (one column of the groups' rows), then the rows at that time: sorting the
      // groups' rows with every column read took ~80 ms for a group of a few thousand events.
      const where = ofGroups(pid, groupIds);
      return full(
        await one(`SELECT ${EVENT_COLS}, payload FROM error_events WHERE ${where} AND timestamp_ms = (SELECT max(timestamp_ms) FROM error_events WHERE ${where})
          ORDER BY received_ms DESC LIMIT 1`),
      );
    },
    async event(pid, eventId) {
      // The id index names the event's group and time: one primary-key range.
      const at = idRow.get(pid, eventId) as { group_id: string; timestamp_ms: number } | undefined;
      if (!at) return undefined;
      return full(
        await one(`SELECT ${EVENT_COLS}, payload FROM error_events WHERE project_id = ${lit(pid)} AND group_id = ${lit(at.group_id)}
          AND timestamp_ms = ${lit(Number(at.timestamp_ms))} AND event_id = ${lit(eventId)} LIMIT 1`),
      );
    },
    async userKeys(pid, sets, ranges) {
      const all = [...new Set(sets.flat())];
      if (!ranges.length || !all.length) return sets.map(() => []);
      const inRanges = ranges.map((r) => `(timestamp_ms >= ${lit(r.lo)} AND timestamp_ms ${r.closed ? '<=' : '<'} ${lit(r.hi)})`).join(' OR ');
      // One query for every set: counts per (group id, user key), summed per set's keys here.
      const rows = await engine.query<{ g: string; k: string; n: number }>(
        `SELECT group_id AS g, user_key AS k, count() AS n FROM error_events WHERE ${ofGroups(pid, all)} AND (${inRanges}) GROUP BY g, k`,
      );
      const byGroup = new Map<string, { k: string; n: number }[]>();
      for (const r of rows) {
        let list = byGroup.get(r.g);
        if (!list) byGroup.set(r.g, (list = []));
        list.push({ k: r.k, n: Number(r.n) });
      }
      return sets.map((ids) => {
        const perKey = new Map<string, number>();
        for (const id of new Set(ids)) for (const r of byGroup.get(id) ?? []) perKey.set(r.k, (perKey.get(r.k) ?? 0) + r.n);
        return [...perKey].map(([k, n]) => ({ k, n }));
      });
    },
    async recent(pid, groupIds, from, to, sample) {
      return engine.query(
        `SELECT environment, service_name, release, tags FROM error_events WHERE ${ofGroups(pid, groupIds)} AND timestamp_ms >= ${lit(from)} AND timestamp_ms <= ${lit(to)}
         ORDER BY timestamp_ms DESC, event_id DESC LIMIT ${lit(sample)}`,
      );
    },
    async firstEventIn(pid, groupIds, from, to) {
      const r = await one<{ t: number; n: number }>(
        `SELECT min(timestamp_ms) AS t, count() AS n FROM error_events WHERE ${ofGroups(pid, groupIds)} AND timestamp_ms >= ${lit(from)} AND timestamp_ms <= ${lit(to)}`,
      );
      return r && Number(r.n) ? Number(r.t) : null;
    },
    async relatedTraces(pid, groupIds, o) {
      const where = `${ofGroups(pid, groupIds)} AND ifNull(trace_id, '') != '' AND timestamp_ms >= ${lit(o.from)} AND timestamp_ms <= ${lit(o.to)}`;
      const [total, rows] = await Promise.all([
        one<{ n: number }>(`SELECT uniqExact(trace_id) AS n FROM error_events WHERE ${where}`),
        engine.query<RelatedTrace>(
          `SELECT assumeNotNull(trace_id) AS trace_id, count() AS event_count, min(timestamp_ms) AS first_event_ms, max(timestamp_ms) AS last_event_ms
           FROM error_events WHERE ${where} GROUP BY trace_id ORDER BY last_event_ms DESC, trace_id LIMIT ${lit(o.offset)}, ${lit(o.limit)}`,
        ),
      ]);
      return {
        rows: rows.map((r) => ({ trace_id: r.trace_id, event_count: Number(r.event_count), first_event_ms: Number(r.first_event_ms), last_event_ms: Number(r.last_event_ms) })),
        total: Number(total?.n ?? 0),
      };
    },
    async search(pid, o) {
      const where = [`project_id = ${lit(pid)}`, ...compileChEventTerms(o.terms)];
      if (o.fromMs !== undefined) where.push(`timestamp_ms >= ${lit(o.fromMs)}`);
      if (o.toMs !== undefined) where.push(`timestamp_ms <= ${lit(o.toMs)}`);
      const w = where.join(' AND ');
      const [n, rows] = await Promise.all([
        one<{ n: number }>(`SELECT count() AS n FROM (SELECT 1 FROM error_events WHERE ${w} LIMIT ${lit(o.cap + 1)})`),
        engine.query(`SELECT ${EVENT_COLS} FROM error_events WHERE ${w} ORDER BY timestamp_ms DESC, event_id LIMIT ${lit(o.offset)}, ${lit(o.limit)}`),
      ]);
      return { rows: rows.map((r) => eventFromRow(numbered(r))), n: Number(n?.n ?? 0) };
    },
    async latency(pid, o) {
      const where = [`project_id = ${lit(pid)}`, `received_ms >= ${lit(o.fromMs)}`, `received_ms <= ${lit(o.toMs)}`, `received_ms - timestamp_ms <= ${LATENCY_MAX_AGE_MS}`];
      if (o.service !== undefined) where.push(`service_name = ${lit(o.service)}`);
      if (o.environment !== undefined) where.push(`environment = ${lit(o.environment)}`);
      // Exact nearest-rank percentiles over each source's latencies (valueAtRank: no sort of the array).
      const rank = (p: number) => `least(toInt64(n), greatest(toInt64(1), toInt64(ceil(${p / 100} * n)))) - 1`;
      const rows = await engine.query<{ source: string; n: number; mx: number; sm: number; p50: number; p95: number; p99: number }>(
        `SELECT source, n, mx, sm, ${valueAtRank(rank(50), 0.5)} AS p50, ${valueAtRank(rank(95), 0.95)} AS p95, ${valueAtRank(rank(99), 0.99)} AS p99
         FROM (SELECT source, groupArray(greatest(0., received_ms - timestamp_ms)) AS s, count() AS n, max(greatest(0., received_ms - timestamp_ms)) AS mx,
           sum(greatest(0., received_ms - timestamp_ms)) AS sm FROM error_events WHERE ${where.join(' AND ')} GROUP BY source)`,
      );
      return rows
        .map(
          (r): LatencyRow => ({
            source: r.source,
            count: Number(r.n),
            p50_ms: Number(r.p50),
            p95_ms: Number(r.p95),
            p99_ms: Number(r.p99),
            max_ms: Number(r.mx),
            avg_ms: Math.round((Number(r.sm) / Number(r.n)) * 1000) / 1000,
          }),
        )
        .sort((a, b) => (a.source < b.source ? -1 : a.source > b.source ? 1 : 0));
    },
    async traceGroups(pid, traceId) {
      const rows = await engine.query<{ group_id: string; n: number; first_ms: number; last_ms: number; span_ids: string[] }>(
        `SELECT group_id, count() AS n, min(timestamp_ms) AS first_ms, max(timestamp_ms) AS last_ms, groupUniqArray(span_id) AS span_ids
         FROM error_events WHERE project_id = ${lit(pid)} AND trace_id = ${lit(traceId)} GROUP BY group_id`,
      );
      return rows.map((r) => ({ group_id: r.group_id, n: Number(r.n), first_ms: Number(r.first_ms), last_ms: Number(r.last_ms), span_ids: [...r.span_ids].filter((x) => x !== null).sort() }));
    },
    async count(pid, groupId, from, to) {
      const r = await one<{ n: number }>(`SELECT count() AS n FROM error_events WHERE ${ofGroups(pid, [groupId])} AND timestamp_ms >= ${lit(from)} AND timestamp_ms < ${lit(to)}`);
      return Number(r?.n ?? 0);
    },
    async linked(pid, q) {
      const w =
        'groupId' in q
          ? `(group_id = ${lit(q.groupId)} OR fingerprint_group_id = ${lit(q.groupId)}) AND timestamp_ms >= ${lit(q.since)}`
          : 'release' in q
            ? `release = ${lit(q.release)} AND timestamp_ms >= ${lit(q.since)}`
            : `timestamp_ms >= ${lit(q.window.from)} AND timestamp_ms <= ${lit(q.window.to)}`;
      const rows = await engine.query<LinkEventRow>(`SELECT event_id, timestamp_ms, tags, payload FROM error_events WHERE project_id = ${lit(pid)} AND ${w}`);
      return rows.map((r) => ({ ...r, timestamp_ms: Number(r.timestamp_ms) }));
    },
    async releaseSeen(pid, release) {
      const r = await one<{ n: number }>(`SELECT count() AS n FROM (SELECT 1 FROM error_events WHERE project_id = ${lit(pid)} AND release = ${lit(release)} LIMIT 1)`);
      return Number(r?.n ?? 0) > 0;
    },
  };
}
