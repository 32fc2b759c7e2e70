import type { Statement } from 'better-sqlite3';
import type { Db } from './db.js';
import { groupFromRow, type ErrorGroupRow } from './errors-repo.js';
import type { EventQueryTerm } from '../domain/errors/event-query.js';
import { nearestRankIndex } from '../domain/errors/latency.js';
import { userFieldSql, userKeySql } from '../domain/errors/users.js';
import { HOUR_MS } from './migrations/046-error-group-hours.js';
import { createLatencyReader, LATENCY_MAX_AGE_MS, type LatencyStats } from './error-latency.js';

/**
 * The read and workflow side of error groups (the write side, grouping at ingest, is errors-repo.ts):
 * listing with filters and facets, detail, workflow fields, per-user state, merge/unmerge, related
 * traces, replays, triage runs, event search and ingestion latency.
 *
 * "The events of a group" are the events counted on it (error_events.group_id) plus, for a canonical
 * group, those counted on its active merged duplicates before the merge. Events that arrive for a
 * duplicate's fingerprint while it is merged count on the canonical (ingest reads merged_into live)
 * and stay in the canonical's history after an unmerge, like the event counts.
 */

export const GROUP_STATUSES = ['unresolved', 'resolved', 'ignored', 'muted'] as const;
export const GROUP_PRIORITIES = ['low', 'medium', 'high', 'critical'] as const;
export type GroupStatus = (typeof GROUP_STATUSES)[number];
export type GroupPriority = (typeof GROUP_PRIORITIES)[number];
export type GroupSort = 'last_seen' | 'first_seen' | 'event_count' | 'priority';

export interface GroupWithState extends ErrorGroupRow {
  bookmarked: boolean;
  subscribed: boolean;
}

export interface GroupListFilter {
  fromMs?: number;
  toMs?: number;
  /** Empty or undefined: every status. */
  statuses?: GroupStatus[];
  priorities?: GroupPriority[];
  levels?: string[];
  /** Groups seen in this service / environment / release (any of their events, not only the first). */
  service?: string;
  environment?: string;
  release?: string;
  /** Groups whose first release (the release of their earliest event naming one) is this. */
  firstRelease?: string;
  /** Groups with an event of this end user (the `user.id` the SDK sent). */
  endUserId?: string;
  q?: string;
  sort: GroupSort;
  limit: number;
  offset: number;
  /** The current user (per-user bookmark/subscription); null for API keys. */
  userId: string | null;
}

export interface FacetValue {
  value: string;
  count: number;
}

/** Where a group was seen: environments and services (most events first). */
export interface GroupPlaces {
  environments: string[];
  services: string[];
}

/** A value of a group's environment, service or release, or of a tag, with its event count. */
export interface TagValueCount {
  value: string;
  count: number;
}

export interface TagBreakdown {
  key: string;
  /** Events carrying the tag (within what was counted). */
  total: number;
  values: TagValueCount[];
}

export interface GroupRef {
  id: string;
  short_id: string;
  title: string;
  merged_at: number | null;
}

export interface ErrorEventRow {
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

export interface LinkedReplay {
  replay_id: string;
  started_ms: number;
  ended_ms: number;
  segments: number;
  urls: string[];
  environment: string;
  release: string;
  linked_by: 'error' | 'window';
}

export type TriageStatus = 'queued' | 'running' | 'completed' | 'failed';
export type TriageTrigger = 'manual' | 'automatic';

export interface TriageRunRow {
  id: string;
  project_id: string;
  group_id: string;
  trigger: TriageTrigger;
  triager: string;
  cycle: string;
  status: TriageStatus;
  result: unknown;
  error: string | null;
  created_at: number;
  completed_at: number | null;
}

/** One source's row of events.latency (the fields of {@link LatencyStats}). */
export type LatencyRow = LatencyStats;

export type MergeResult =
  | { ok: true; merged: string[] }
  | { ok: false; reason: 'canonical_missing' | 'canonical_is_merged' | 'self' | 'unknown' | 'merged_elsewhere' | 'has_duplicates'; id: string };

export type UnmergeResult = { ok: true } | { ok: false; reason: 'missing' | 'not_merged' };

/** Unbounded window ends (the Date range), bound as numbers. */
const MIN_MS = -8.64e15;
const MAX_MS = 8.64e15;

/* eslint-disable @typescript-eslint/no-explicit-any */
const withState = (r: any): GroupWithState => {
  const { bookmarked, subscribed, ...rest } = r;
  return { ...groupFromRow(rest), bookmarked: !!bookmarked, subscribed: !!subscribed };
};

const eventFromRow = (r: any): ErrorEventRow => ({
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

function safeJson<T>(s: string | null | undefined, dflt: T): T {
  if (!s) return dflt;
  try {
    return JSON.parse(s) as T;
  } catch {
    return dflt;
  }
}

const triageFromRow = (r: any): TriageRunRow => ({
  ...r,
  project_id: String(r.project_id),
  result: r.result ? safeJson(r.result, null) : null,
});

const PRIORITY_RANK = `CASE g.priority WHEN 'critical' THEN 4 WHEN 'high' THEN 3 WHEN 'medium' THEN 2 ELSE 1 END`;
const ORDER: Record<GroupSort, string> = {
  last_seen: 'g.last_seen DESC, g.id',
  first_seen: 'g.first_seen DESC, g.id',
  event_count: 'g.event_count DESC, g.last_seen DESC, g.id',
  priority: `${PRIORITY_RANK} DESC, g.last_seen DESC, g.id`,
};

const EVENT_COLUMNS = `event_id, group_id, fingerprint_group_id, timestamp_ms, received_ms, source, platform, level, type, message, title,
  service_name, environment, release, transaction_name, server_name, trace_id, span_id, tags, user_json`;

/** Columns an `exact` query term compares (spec keys → error_events columns; fixed strings, never user text). */
const EXACT_COLUMN: Record<string, string> = {
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
const TIME_COLUMN: Record<string, string> = { timestamp: 'timestamp_ms', received_at: 'received_ms' };

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

export function createErrorGroupsRepo(db: Db) {
  const latencyFast = createLatencyReader(db);
  const STATE_JOIN = 'LEFT JOIN error_group_user_state us ON us.group_id = g.id AND us.user_id = ?';
  const STATE_COLS = 'COALESCE(us.bookmarked, 0) AS bookmarked, COALESCE(us.subscribed, 0) AS subscribed';
  const s = {
    get: db.prepare(`SELECT g.*, ${STATE_COLS} FROM error_groups g ${STATE_JOIN} WHERE g.project_id = ? AND g.id = ?`),
    raw: db.prepare('SELECT * FROM error_groups WHERE project_id = ? AND id = ?'),
    mergedFrom: db.prepare('SELECT id, short_id, title, merged_at FROM error_groups WHERE project_id = ? AND merged_into = ? ORDER BY merged_at, id'),
    ref: db.prepare('SELECT id, short_id, title, merged_at FROM error_groups WHERE project_id = ? AND id = ?'),
    setMerged: db.prepare('UPDATE error_groups SET merged_into = ?, merged_at = ?, updated_at = ? WHERE project_id = ? AND id = ?'),
    clearMerged: db.prepare('UPDATE error_groups SET merged_into = NULL, merged_at = NULL, updated_at = ? WHERE project_id = ? AND id = ?'),
    countDuplicates: db.prepare('SELECT COUNT(*) AS n FROM error_groups WHERE project_id = ? AND merged_into = ?'),
    assignAgent: db.prepare('UPDATE error_groups SET assigned_to = NULL, ai_assigned = 1, updated_at = ? WHERE project_id = ? AND id = ?'),
    upsertState: db.prepare(`INSERT INTO error_group_user_state (group_id, user_id, bookmarked, subscribed) VALUES (@group_id, @user_id, COALESCE(@bookmarked, 0), COALESCE(@subscribed, 0))
      ON CONFLICT (group_id, user_id) DO UPDATE SET bookmarked = COALESCE(@bookmarked, bookmarked), subscribed = COALESCE(@subscribed, subscribed)`),
    others: db.prepare('SELECT * FROM error_groups WHERE project_id = ? AND id <> ? AND merged_into IS NULL ORDER BY last_seen DESC LIMIT ?'),
    triageInsert: db.prepare(`INSERT INTO triage_runs (id, project_id, group_id, trigger, triager, cycle, status, result, error, created_at, completed_at)
      VALUES (@id, @project_id, @group_id, @trigger, @triager, @cycle, @status, NULL, NULL, @created_at, NULL)`),
    triageFinish: db.prepare('UPDATE triage_runs SET status = ?, result = ?, error = ?, completed_at = ? WHERE project_id = ? AND id = ?'),
    triageStatus: db.prepare('UPDATE triage_runs SET status = ? WHERE project_id = ? AND id = ?'),
    triageGet: db.prepare('SELECT * FROM triage_runs WHERE project_id = ? AND id = ?'),
    triageList: db.prepare('SELECT * FROM triage_runs WHERE project_id = ? AND group_id = ? ORDER BY created_at DESC, rowid DESC LIMIT ? OFFSET ?'),
    triageCount: db.prepare('SELECT COUNT(*) AS n FROM triage_runs WHERE project_id = ? AND group_id = ?'),
    triageLatestCompleted: db.prepare(
      "SELECT * FROM triage_runs WHERE project_id = ? AND group_id = ? AND status = 'completed' ORDER BY completed_at DESC, created_at DESC, rowid DESC LIMIT 1",
    ),
    triageInCycle: db.prepare(
      "SELECT * FROM triage_runs WHERE project_id = ? AND group_id = ? AND cycle = ? AND status <> 'failed' ORDER BY (status = 'completed') DESC, created_at DESC, rowid DESC LIMIT 1",
    ),
    event: db.prepare(`SELECT ${EVENT_COLUMNS}, payload FROM error_events WHERE project_id = ? AND event_id = ?`),
    latestTime: db.prepare('SELECT MAX(timestamp_ms) FROM error_events WHERE project_id = ? AND group_id = ?').pluck(),
  };

  /** The group plus its active merged duplicates: the group ids whose events make up its history. */
  function eventGroupIds(projectId: string, groupId: string): string[] {
    return [groupId, ...(s.mergedFrom.all(Number(projectId), groupId) as GroupRef[]).map((r) => r.id)];
  }

  const inList = (ids: readonly string[]) => ids.map(() => '?').join(', ');
  const USER_KEY = userKeySql('user_json');
  const bySeq = db.prepare(`SELECT g.*, ${STATE_COLS} FROM error_groups g ${STATE_JOIN} WHERE g.project_id = ? AND g.seq = ?`);

  /** A group by its short id (`WEB-2A`, any case): the base-36 sequence after the last dash, checked against the whole id. */
  function byShortId(projectId: string, shortId: string, userId: string | null): unknown {
    const m = /^.+-([0-9a-z]{1,12})$/i.exec(shortId);
    if (!m) return undefined;
    const seq = parseInt(m[1]!, 36);
    if (!Number.isSafeInteger(seq)) return undefined;
    const r = bySeq.get(userId, Number(projectId), seq) as { short_id: string } | undefined;
    return r && r.short_id.toUpperCase() === shortId.toUpperCase() ? r : undefined;
  }

  /*
   * Window counts read whole hours from the per-(group, hour, user) tallies and the edges from events.
   * The two are separate statements (with control data in PostgreSQL the tallies live there, events
   * in SQLite), combined so that only the edges' user keys travel: users = distinct keys of the hours
   * + edge keys the hours do not hold.
   */
  const windowStmts = new Map<string, { edges: Statement; hours: Statement; overlap: Statement }>();
  function windowStmt(n: number) {
    let st = windowStmts.get(String(n));
    if (!st) {
      const ids = Array(n).fill('?').join(', ');
      st = {
        // Events of [from, hStart) and [hEnd, to] (or all of [from, to]) per user key (NULL: no user).
        // (Two ranges in a UNION ALL: each is an index range; an OR of the two could scan the group's events.)
        edges: db.prepare(
          `SELECT k, COUNT(*) AS n FROM (
             SELECT ${USER_KEY} AS k FROM error_events WHERE project_id = ? AND group_id IN (${ids}) AND timestamp_ms >= ? AND timestamp_ms < ?
             UNION ALL SELECT ${USER_KEY} AS k FROM error_events WHERE project_id = ? AND group_id IN (${ids}) AND timestamp_ms >= ? AND timestamp_ms <= ?) GROUP BY k`,
        ),
        hours: db.prepare(
          `SELECT COALESCE(SUM(n), 0) AS events, COUNT(DISTINCT NULLIF(user_key, '')) AS users FROM error_group_hour_users WHERE group_id IN (${ids}) AND hour >= ? AND hour < ?`,
        ),
        overlap: db.prepare(
          `SELECT COUNT(DISTINCT user_key) AS n FROM error_group_hour_users WHERE group_id IN (${ids}) AND hour >= ? AND hour < ?
             AND user_key IN (SELECT value FROM json_each(?))`,
        ),
      };
      windowStmts.set(String(n), st);
    }
    return st;
  }

  /** Events and distinct users of groups `ids` with event times in [from, to], whole hours [hStart, hEnd) from the tallies. */
  function windowCount(pid: number, ids: string[], from: number, to: number, hStart: number, hEnd: number): { events: number; users: number } {
    const st = windowStmt(ids.length);
    const whole = hEnd > hStart;
    // Without whole hours both edge ranges are the one range [from, to].
    const edges = st.edges.all(pid, ...ids, from, whole ? hStart : from, pid, ...ids, whole ? hEnd : from, to) as { k: string | null; n: number }[];
    let events = 0;
    const keys: string[] = [];
    for (const e of edges) {
      events += e.n;
      if (e.k !== null && e.k !== '') keys.push(e.k);
    }
    if (!whole) return { events, users: keys.length };
    const h = st.hours.get(...ids, hStart, hEnd) as { events: number; users: number };
    const shared = keys.length ? (st.overlap.get(...ids, hStart, hEnd, JSON.stringify(keys)) as { n: number }).n : 0;
    return { events: events + h.events, users: h.users + keys.length - shared };
  }

  function listWhere(f: GroupListFilter, skip?: 'service' | 'environment' | 'level'): { sql: string; args: unknown[] } {
    const where = ['g.project_id = ?', 'g.merged_into IS NULL'];
    const args: unknown[] = [];
    if (f.fromMs !== undefined) {
      where.push('g.last_seen >= ?');
      args.push(f.fromMs);
    }
    if (f.toMs !== undefined) {
      where.push('g.last_seen <= ?');
      args.push(f.toMs);
    }
    if (f.statuses?.length) {
      where.push(`g.status IN (${inList(f.statuses)})`);
      args.push(...f.statuses);
    }
    if (f.priorities?.length) {
      where.push(`g.priority IN (${inList(f.priorities)})`);
      args.push(...f.priorities);
    }
    if (f.levels?.length && skip !== 'level') {
      where.push(`lower(g.level) IN (${inList(f.levels)})`);
      args.push(...f.levels.map((l) => l.toLowerCase()));
    }
    const seenIn = (kind: 'environment' | 'service' | 'release', value: string) => {
      where.push('EXISTS (SELECT 1 FROM error_group_dims d WHERE d.group_id = g.id AND d.kind = ? AND d.value = ?)');
      args.push(kind, value);
    };
    if (f.service !== undefined && skip !== 'service') seenIn('service', f.service);
    if (f.environment !== undefined && skip !== 'environment') seenIn('environment', f.environment);
    if (f.release !== undefined) seenIn('release', f.release);
    if (f.firstRelease !== undefined) {
      where.push('g.first_release = ?');
      args.push(f.firstRelease);
    }
    if (f.endUserId !== undefined) {
      where.push('g.id IN (SELECT group_id FROM error_group_users WHERE user_id = ?)');
      args.push(f.endUserId);
    }
    if (f.q) {
      const q = f.q.toLowerCase();
      where.push(
        '(instr(lower(g.title), ?) > 0 OR instr(lower(g.type), ?) > 0 OR instr(lower(g.fingerprint), ?) > 0 OR instr(lower(g.service_name), ?) > 0 OR instr(lower(g.environment), ?) > 0)',
      );
      args.push(q, q, q, q, q);
    }
    return { sql: where.join(' AND '), args };
  }

  function facet(projectId: string, f: GroupListFilter, facetName: 'service' | 'environment' | 'level'): FacetValue[] {
    const w = listWhere(f, facetName);
    if (facetName !== 'level') {
      // A group counts once under every environment / service it was seen in.
      return db
        .prepare(
          `SELECT d.value AS value, COUNT(*) AS count FROM error_groups g JOIN error_group_dims d ON d.group_id = g.id AND d.kind = ?
           WHERE ${w.sql} AND d.value <> '' GROUP BY d.value ORDER BY count DESC, value LIMIT 50`,
        )
        .all(facetName, Number(projectId), ...w.args) as FacetValue[];
    }
    const col = 'g.level';
    return db
      .prepare(`SELECT ${col} AS value, COUNT(*) AS count FROM error_groups g WHERE ${w.sql} AND ${col} <> '' GROUP BY ${col} ORDER BY count DESC, value LIMIT 50`)
      .all(Number(projectId), ...w.args) as FacetValue[];
  }

  /** A page of groups (merged duplicates never listed). */
  function listRows(projectId: string, f: GroupListFilter): GroupWithState[] {
    const w = listWhere(f);
    return db
      .prepare(`SELECT g.*, ${STATE_COLS} FROM error_groups g ${STATE_JOIN} WHERE ${w.sql} ORDER BY ${ORDER[f.sort]} LIMIT ? OFFSET ?`)
      .all(f.userId, Number(projectId), ...w.args, f.limit, f.offset)
      .map(withState);
  }

  return {
    /** Groups of the project (merged duplicates never listed), with the page's total and facets. */
    list(projectId: string, f: GroupListFilter): { rows: GroupWithState[]; total: number; facets: Record<'service' | 'environment' | 'level', FacetValue[]> } {
      const w = listWhere(f);
      const pid = Number(projectId);
      const total = (db.prepare(`SELECT COUNT(*) AS n FROM error_groups g WHERE ${w.sql}`).get(pid, ...w.args) as { n: number }).n;
      const rows = listRows(projectId, f);
      return {
        rows,
        total,
        facets: { service: facet(projectId, f, 'service'), environment: facet(projectId, f, 'environment'), level: facet(projectId, f, 'level') },
      };
    },

    /** The rows of {@link list} alone, without its total and facets (observability.summary needs only the page). */
    listRows,

    get(projectId: string, groupId: string, userId: string | null): GroupWithState | undefined {
      const r = s.get.get(userId, Number(projectId), groupId) ?? byShortId(projectId, groupId, userId);
      return r ? withState(r) : undefined;
    },

    /** Environments and services each group was seen in, most events first. */
    places(groupIds: readonly string[]): Map<string, GroupPlaces> {
      const out = new Map<string, GroupPlaces>(groupIds.map((id) => [id, { environments: [], services: [] }]));
      if (!groupIds.length) return out;
      const rows = db
        .prepare(
          `SELECT group_id, kind, value FROM error_group_dims WHERE group_id IN (${inList(groupIds)}) AND kind IN ('environment', 'service')
           ORDER BY group_id, kind, event_count DESC, value`,
        )
        .all(...groupIds) as { group_id: string; kind: string; value: string }[];
      for (const r of rows) {
        const p = out.get(r.group_id)!;
        (r.kind === 'environment' ? p.environments : p.services).push(r.value);
      }
      return out;
    },

    /**
     * Events and distinct users of each group's history (with its merged duplicates) in [fromMs, toMs]
     * (event time). The window's whole hours come from the per-(group, hour, user key) tallies
     * (migration 046), the partial hours at its two edges from the events themselves; distinct users
     * are the distinct keys of both, so the count stays exact.
     */
    windowCounts(projectId: string, groupIds: readonly string[], fromMs?: number, toMs?: number): Map<string, { events: number; users: number }> {
      const pid = Number(projectId);
      const from = fromMs ?? MIN_MS;
      const to = toMs ?? MAX_MS;
      // Whole hours [hStart, hEnd): every event time in them is inside [from, to] (times may be fractional).
      const hStart = Math.ceil(from / HOUR_MS) * HOUR_MS;
      const hEnd = Math.floor(to / HOUR_MS) * HOUR_MS;
      const out = new Map<string, { events: number; users: number }>();
      for (const id of groupIds) {
        const ids = eventGroupIds(projectId, id);
        out.set(id, windowCount(pid, ids, from, to, hStart, hEnd));
      }
      return out;
    },

    /** Distinct users of the group's history (with its merged duplicates), from the rollup. */
    userCount(projectId: string, groupId: string): number {
      const ids = eventGroupIds(projectId, groupId);
      return (db.prepare(`SELECT COUNT(DISTINCT user_key) AS n FROM error_group_users WHERE group_id IN (${inList(ids)})`).get(...ids) as { n: number }).n;
    },

    /**
     * Tag facets of a group, like Sentry's: environment, service and release from the rollup (every
     * event counted), then the event tags of the group's latest `sample` events (in the window when one
     * is given), each key with its most frequent values. Keys by events carrying them, at most `maxKeys`.
     */
    tags(projectId: string, groupId: string, o: { fromMs?: number; toMs?: number; sample: number; maxKeys: number; maxValues: number }): { tags: TagBreakdown[]; sampled: number } {
      const ids = eventGroupIds(projectId, groupId);
      const pid = Number(projectId);
      const out: TagBreakdown[] = [];
      const windowed = o.fromMs !== undefined || o.toMs !== undefined;
      const top = (rows: TagValueCount[]): TagBreakdown | null => {
        if (!rows.length) return null;
        return { key: '', total: rows.reduce((a, r) => a + r.count, 0), values: rows.slice(0, o.maxValues) };
      };
      if (!windowed) {
        for (const kind of ['environment', 'service', 'release'] as const) {
          const rows = db
            .prepare(`SELECT value, SUM(event_count) AS count FROM error_group_dims WHERE group_id IN (${inList(ids)}) AND kind = ? GROUP BY value ORDER BY count DESC, value`)
            .all(...ids, kind) as TagValueCount[];
          const b = top(rows);
          if (b) out.push({ ...b, key: kind });
        }
      }
      const recent = `SELECT environment, service_name, release, tags FROM error_events WHERE project_id = ? AND group_id IN (${inList(ids)})
        AND timestamp_ms >= ? AND timestamp_ms <= ? ORDER BY timestamp_ms DESC LIMIT ?`;
      const args = [pid, ...ids, o.fromMs ?? MIN_MS, o.toMs ?? MAX_MS, o.sample];
      const sampled = (db.prepare(`SELECT COUNT(*) AS n FROM (${recent})`).get(...args) as { n: number }).n;
      if (windowed) {
        for (const [key, col] of [['environment', 'environment'], ['service', 'service_name'], ['release', 'release']] as const) {
          const rows = db
            .prepare(`SELECT ${col} AS value, COUNT(*) AS count FROM (${recent}) WHERE ${col} <> '' GROUP BY ${col} ORDER BY count DESC, value`)
            .all(...args) as TagValueCount[];
          const b = top(rows);
          if (b) out.push({ ...b, key });
        }
      }
      const tagRows = db
        .prepare(
          `SELECT t.key AS key, CAST(t.value AS TEXT) AS value, COUNT(*) AS count FROM (${recent}) e, json_each(e.tags) t
           GROUP BY t.key, t.value ORDER BY t.key, count DESC, value`,
        )
        .all(...args) as { key: string; value: string; count: number }[];
      const byKey = new Map<string, TagValueCount[]>();
      for (const r of tagRows) {
        if (['environment', 'service', 'release'].includes(r.key)) continue;
        let l = byKey.get(r.key);
        if (!l) byKey.set(r.key, (l = []));
        l.push({ value: r.value, count: r.count });
      }
      const eventTags = [...byKey.entries()]
        .map(([key, rows]) => ({ ...top(rows)!, key }))
        .sort((a, b) => b.total - a.total || a.key.localeCompare(b.key))
        .slice(0, Math.max(0, o.maxKeys - out.length));
      return { tags: [...out, ...eventTags], sampled };
    },

    ref(projectId: string, groupId: string): GroupRef | undefined {
      return s.ref.get(Number(projectId), groupId) as GroupRef | undefined;
    },

    /** Active duplicates merged into this group. */
    mergedFrom(projectId: string, groupId: string): GroupRef[] {
      return s.mergedFrom.all(Number(projectId), groupId) as GroupRef[];
    },

    /** Workflow fields. Setting `assigned_to` (even to null) clears `ai_assigned`: a human has taken over. */
    update(projectId: string, groupId: string, patch: { assigned_to?: string | null; priority?: GroupPriority; status?: GroupStatus }, now: number): boolean {
      const sets: string[] = ['updated_at = ?'];
      const args: unknown[] = [now];
      if (patch.assigned_to !== undefined) {
        sets.push('assigned_to = ?', 'ai_assigned = 0');
        args.push(patch.assigned_to);
      }
      if (patch.priority !== undefined) {
        sets.push('priority = ?');
        args.push(patch.priority);
      }
      if (patch.status !== undefined) {
        sets.push('status = ?');
        args.push(patch.status);
      }
      return db.prepare(`UPDATE error_groups SET ${sets.join(', ')} WHERE project_id = ? AND id = ?`).run(...args, Number(projectId), groupId).changes > 0;
    },

    /** The in-project agent takes the group: ai_assigned true, assigned_to null. */
    assignToAgent(projectId: string, groupId: string, now: number): boolean {
      return s.assignAgent.run(now, Number(projectId), groupId).changes > 0;
    },

    /** Per-user bookmark and subscription; undefined fields stay as they were. */
    setUserState(projectId: string, groupId: string, userId: string, patch: { bookmarked?: boolean; subscribed?: boolean }): boolean {
      if (!s.raw.get(Number(projectId), groupId)) return false;
      const b = (v: boolean | undefined) => (v === undefined ? null : v ? 1 : 0);
      s.upsertState.run({ group_id: groupId, user_id: userId, bookmarked: b(patch.bookmarked), subscribed: b(patch.subscribed) });
      return true;
    },

    /**
     * Merge `duplicateIds` into `canonicalId`, all or nothing. Rules: the canonical exists and is not
     * itself merged; each duplicate exists in the project, is not the canonical, is not merged into
     * another group and has no duplicates of its own (no chains). A duplicate already merged into this
     * canonical is left as it is.
     */
    merge: db.transaction((projectId: string, canonicalId: string, duplicateIds: string[], now: number): MergeResult => {
      const pid = Number(projectId);
      const canonical = s.raw.get(pid, canonicalId) as any;
      if (!canonical) return { ok: false, reason: 'canonical_missing', id: canonicalId };
      if (canonical.merged_into) return { ok: false, reason: 'canonical_is_merged', id: canonicalId };
      const ids = [...new Set(duplicateIds)];
      const rows: any[] = [];
      for (const id of ids) {
        if (id === canonicalId) return { ok: false, reason: 'self', id };
        const r = s.raw.get(pid, id) as any;
        if (!r) return { ok: false, reason: 'unknown', id };
        rows.push(r);
      }
      for (const r of rows) {
        if (r.merged_into && r.merged_into !== canonicalId) return { ok: false, reason: 'merged_elsewhere', id: r.id };
        if ((s.countDuplicates.get(pid, r.id) as { n: number }).n > 0) return { ok: false, reason: 'has_duplicates', id: r.id };
      }
      const merged: string[] = [];
      for (const r of rows) {
        if (r.merged_into === canonicalId) continue;
        s.setMerged.run(canonicalId, now, now, pid, r.id);
        merged.push(r.id);
      }
      return { ok: true, merged };
    }),

    unmerge(projectId: string, duplicateId: string, now: number): UnmergeResult {
      const r = s.raw.get(Number(projectId), duplicateId) as any;
      if (!r) return { ok: false, reason: 'missing' };
      if (!r.merged_into) return { ok: false, reason: 'not_merged' };
      s.clearMerged.run(now, Number(projectId), duplicateId);
      return { ok: true };
    },

    /** The newest event of the group's history, with its stored payload. */
    latestEvent(projectId: string, groupId: string): ErrorEventFull | undefined {
      const ids = eventGroupIds(projectId, groupId);
      const pid = Number(projectId);
      // The latest event time per group id is one index seek; ordering by (time, received) in one
      // query sorted every event of the group (~0.3 s for a group of 80k events).
      let latest: number | null = null;
      for (const id of ids) {
        const t = s.latestTime.get(pid, id) as number | null;
        if (t !== null && (latest === null || t > latest)) latest = t;
      }
      if (latest === null) return undefined;
      const r = db
        .prepare(`SELECT ${EVENT_COLUMNS}, payload FROM error_events WHERE project_id = ? AND group_id IN (${inList(ids)}) AND timestamp_ms = ? ORDER BY received_ms DESC LIMIT 1`)
        .get(pid, ...ids, latest) as any;
      return r ? { ...eventFromRow(r), payload: safeJson(r.payload, null) } : undefined;
    },

    event(projectId: string, eventId: string): ErrorEventFull | undefined {
      const r = s.event.get(Number(projectId), eventId) as any;
      return r ? { ...eventFromRow(r), payload: safeJson(r.payload, null) } : undefined;
    },

    /** The time of the group's earliest event within a window (for suspect commits of a regression window). */
    firstEventIn(projectId: string, groupId: string, fromMs?: number, toMs?: number): number | null {
      const ids = eventGroupIds(projectId, groupId);
      const r = db
        .prepare(`SELECT MIN(timestamp_ms) AS t FROM error_events WHERE project_id = ? AND group_id IN (${inList(ids)}) AND timestamp_ms >= ? AND timestamp_ms <= ?`)
        .get(Number(projectId), ...ids, fromMs ?? MIN_MS, toMs ?? MAX_MS) as { t: number | null };
      return r.t;
    },

    /** Distinct trace ids of the group's events in the window, newest first (their spans: TracesReader.traceSummaries). */
    relatedTraces(projectId: string, groupId: string, o: { fromMs?: number; toMs?: number; limit: number; offset: number }): { rows: RelatedTrace[]; total: number } {
      const ids = eventGroupIds(projectId, groupId);
      const pid = Number(projectId);
      const where = `project_id = ? AND group_id IN (${inList(ids)}) AND trace_id IS NOT NULL AND trace_id <> '' AND timestamp_ms >= ? AND timestamp_ms <= ?`;
      const args = [pid, ...ids, o.fromMs ?? MIN_MS, o.toMs ?? MAX_MS];
      const total = (db.prepare(`SELECT COUNT(DISTINCT trace_id) AS n FROM error_events WHERE ${where}`).get(...args) as { n: number }).n;
      const traces = db
        .prepare(
          `SELECT trace_id, COUNT(*) AS event_count, MIN(timestamp_ms) AS first_event_ms, MAX(timestamp_ms) AS last_event_ms FROM error_events WHERE ${where}
           GROUP BY trace_id ORDER BY last_event_ms DESC, trace_id LIMIT ? OFFSET ?`,
        )
        .all(...args, o.limit, o.offset) as { trace_id: string; event_count: number; first_event_ms: number; last_event_ms: number }[];
      return { rows: traces, total };
    },

    /**
     * Replays of the group: those whose error ids hold one of its events (`linked_by: 'error'`), then
     * replays of the group's environment overlapping the window (`linked_by: 'window'`). At most `limit`.
     */
    replays(projectId: string, groupId: string, o: { fromMs: number; toMs: number; environment: string; limit: number }): LinkedReplay[] {
      const ids = eventGroupIds(projectId, groupId);
      const pid = Number(projectId);
      const fromRow = (r: any, linked_by: LinkedReplay['linked_by']): LinkedReplay => ({
        replay_id: r.replay_id,
        started_ms: r.started_ms,
        ended_ms: r.ended_ms,
        segments: r.segments,
        urls: safeJson(r.urls, []),
        environment: r.environment,
        release: r.release,
        linked_by,
      });
      const linked = (
        db
          .prepare(
            `SELECT r.* FROM replays r WHERE r.project_id = ? AND EXISTS (
               SELECT 1 FROM json_each(r.error_ids) e JOIN error_events ev ON ev.project_id = r.project_id AND ev.event_id = e.value
               WHERE ev.group_id IN (${inList(ids)}))
             ORDER BY r.started_ms DESC LIMIT ?`,
          )
          .all(pid, ...ids, o.limit) as any[]
      ).map((r) => fromRow(r, 'error'));
      const seen = new Set(linked.map((r) => r.replay_id));
      const room = o.limit - linked.length;
      if (room <= 0) return linked;
      const envWhere = o.environment ? 'AND environment = ?' : '';
      const windowed = (
        db
          .prepare(`SELECT * FROM replays WHERE project_id = ? AND ended_ms >= ? AND started_ms <= ? ${envWhere} ORDER BY started_ms DESC LIMIT ?`)
          .all(pid, o.fromMs, o.toMs, ...(o.environment ? [o.environment] : []), o.limit) as any[]
      )
        .filter((r) => !seen.has(r.replay_id))
        .slice(0, room)
        .map((r) => fromRow(r, 'window'));
      return [...linked, ...windowed];
    },

    /** Other active groups of the project, most recent first (similar-group candidates). */
    otherGroups(projectId: string, groupId: string, limit: number): ErrorGroupRow[] {
      return s.others.all(Number(projectId), groupId, limit).map(groupFromRow);
    },

    // ---- triage runs ------------------------------------------------------------------------

    createTriageRun(projectId: string, r: { id: string; group_id: string; trigger: TriageTrigger; triager: string; cycle: string; status: 'queued' | 'running'; created_at: number }): TriageRunRow {
      s.triageInsert.run({ ...r, project_id: Number(projectId) });
      return triageFromRow(s.triageGet.get(Number(projectId), r.id));
    },
    setTriageRunning(projectId: string, runId: string): void {
      s.triageStatus.run('running', Number(projectId), runId);
    },
    finishTriageRun(projectId: string, runId: string, outcome: { status: 'completed'; result: unknown } | { status: 'failed'; error: string }, now: number): TriageRunRow {
      if (outcome.status === 'completed') s.triageFinish.run('completed', JSON.stringify(outcome.result), null, now, Number(projectId), runId);
      else s.triageFinish.run('failed', null, outcome.error, now, Number(projectId), runId);
      return triageFromRow(s.triageGet.get(Number(projectId), runId));
    },
    triageRuns(projectId: string, groupId: string, limit: number, offset: number): { rows: TriageRunRow[]; total: number } {
      const pid = Number(projectId);
      return {
        rows: s.triageList.all(pid, groupId, limit, offset).map(triageFromRow),
        total: (s.triageCount.get(pid, groupId) as { n: number }).n,
      };
    },
    latestCompletedTriage(projectId: string, groupId: string): TriageRunRow | undefined {
      const r = s.triageLatestCompleted.get(Number(projectId), groupId);
      return r ? triageFromRow(r) : undefined;
    },
    /** A run of this cycle that did not fail (completed ones first), if any. */
    triageInCycle(projectId: string, groupId: string, cycle: string): TriageRunRow | undefined {
      const r = s.triageInCycle.get(Number(projectId), groupId, cycle);
      return r ? triageFromRow(r) : undefined;
    },

    // ---- events -----------------------------------------------------------------------------

    /**
     * Events matching compiled query terms within an optional window, newest first. Matches are
     * counted up to SEARCH_TOTAL_CAP (or the end of the page, when further): an exact count read
     * every event of the window, ~1 s at 1M events; `capped` says there are more.
     */
    searchEvents(projectId: string, o: { terms: readonly EventQueryTerm[]; fromMs?: number; toMs?: number; limit: number; offset: number }): { rows: ErrorEventRow[]; total: number; capped: boolean } {
      const c = compileEventTerms(o.terms);
      const where = ['project_id = ?', ...c.sql];
      const args: unknown[] = [Number(projectId), ...c.args];
      if (o.fromMs !== undefined) {
        where.push('timestamp_ms >= ?');
        args.push(o.fromMs);
      }
      if (o.toMs !== undefined) {
        where.push('timestamp_ms <= ?');
        args.push(o.toMs);
      }
      const w = where.join(' AND ');
      const cap = Math.max(SEARCH_TOTAL_CAP, o.offset + o.limit);
      const n = (db.prepare(`SELECT COUNT(*) AS n FROM (SELECT 1 FROM error_events WHERE ${w} LIMIT ?)`).get(...args, cap + 1) as { n: number }).n;
      // Few matches (all counted): they are read by the index that found them and sorted (`+timestamp_ms`
      // keeps the planner from walking the time index for the order, which reads every event of the
      // window when a selective term such as user.id matches few or none). Many: the time index,
      // newest first, stops at the page.
      const order = n <= cap ? '+timestamp_ms DESC, event_id' : 'timestamp_ms DESC, event_id';
      const rows = db
        .prepare(`SELECT ${EVENT_COLUMNS} FROM error_events WHERE ${w} ORDER BY ${order} LIMIT ? OFFSET ?`)
        .all(...args, o.limit, o.offset)
        .map(eventFromRow);
      return { rows, total: Math.min(n, cap), capped: n > cap };
    },

    /**
     * Ingestion latency (received minus event time, negative clock skew counted as 0) of events
     * received in [fromMs, toMs], per source, by nearest-rank percentiles. Events that arrive more than
     * LATENCY_MAX_AGE_MS after they happened (an SDK's offline cache flushed days later, an imported
     * backlog) say nothing about the pipeline and are left out.
     */
    latency(projectId: string, o: { fromMs: number; toMs: number; service?: string; environment?: string }): LatencyRow[] {
      return latencyFast(projectId, o) ?? this.latencyScan(projectId, o);
    },

    /**
     * events.latency straight from the events of the window (every one read and sorted): the
     * reference the tallies' read is checked against, and what it falls back to.
     */
    latencyScan(projectId: string, o: { fromMs: number; toMs: number; service?: string; environment?: string }): LatencyRow[] {
      const where = ['project_id = ?', 'received_ms >= ?', 'received_ms <= ?', 'received_ms - timestamp_ms <= ?'];
      const args: unknown[] = [Number(projectId), o.fromMs, o.toMs, LATENCY_MAX_AGE_MS];
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
      return sources.map((source) => {
        const v = values.all(...args, source) as number[];
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
      });
    },
  };
}

export type ErrorGroupsRepo = ReturnType<typeof createErrorGroupsRepo>;

/** events.search counts matches up to this many (or to the end of the requested page, when further). */
export const SEARCH_TOTAL_CAP = 1000;

/** events.latency leaves out events received more than this long after they happened. */
export { LATENCY_MAX_AGE_MS };
