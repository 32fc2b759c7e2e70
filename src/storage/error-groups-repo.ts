import type { Statement } from 'better-sqlite3';
import type { Db } from './db.js';
import { groupFromRow, type ErrorGroupRow } from './errors-repo.js';
import type { EventQueryTerm } from '../domain/errors/event-query.js';
import { HOUR_MS } from './migrations/046-error-group-hours.js';
import { LATENCY_MAX_AGE_MS } from './error-latency.js';
import {
  createSqliteErrorEventsReader, latencyScan, MAX_MS, MIN_MS, safeJson,
  type ErrorEventFull, type ErrorEventRow, type ErrorEventsReader, type LatencyRow, type RelatedTrace,
} from './error-events-read.js';

export type { ErrorEventFull, ErrorEventRow, LatencyRow, RelatedTrace };

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

export type MergeResult =
  | { ok: true; merged: string[] }
  | { ok: false; reason: 'canonical_missing' | 'canonical_is_merged' | 'self' | 'unknown' | 'merged_elsewhere' | 'has_duplicates'; id: string };

export type UnmergeResult = { ok: true } | { ok: false; reason: 'missing' | 'not_merged' };

/* eslint-disable @typescript-eslint/no-explicit-any */
const withState = (r: any): GroupWithState => {
  const { bookmarked, subscribed, ...rest } = r;
  return { ...groupFromRow(rest), bookmarked: !!bookmarked, subscribed: !!subscribed };
};

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

/** Values with their counts, most frequent first, ties by value in UTF-8 byte order (SQLite's text order). */
function countValues(values: readonly string[]): TagValueCount[] {
  const m = new Map<string, number>();
  for (const v of values) m.set(v, (m.get(v) ?? 0) + 1);
  return [...m]
    .map(([value, count]) => ({ value, count }))
    .sort((a, b) => b.count - a.count || Buffer.compare(Buffer.from(a.value), Buffer.from(b.value)));
}

export function createErrorGroupsRepo(db: Db, opts: { events?: ErrorEventsReader; eventIds?: 'error_events' | 'error_event_ids' } = {}) {
  const events = opts.events ?? createSqliteErrorEventsReader(db);
  /** The table naming each stored event's group by its id: the events themselves, or their id index when they are in ClickHouse. */
  const eventIds = opts.eventIds ?? 'error_events';
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
  };

  /** The group plus its active merged duplicates: the group ids whose events make up its history. */
  function eventGroupIds(projectId: string, groupId: string): string[] {
    return [groupId, ...(s.mergedFrom.all(Number(projectId), groupId) as GroupRef[]).map((r) => r.id)];
  }
  /** eventGroupIds of several groups in one read. */
  function eventGroupIdSets(projectId: string, groupIds: readonly string[]): string[][] {
    if (groupIds.length <= 1) return groupIds.map((id) => eventGroupIds(projectId, id));
    const dups = new Map<string, string[]>();
    const rows = db
      .prepare(`SELECT merged_into AS c, id FROM error_groups WHERE project_id = ? AND merged_into IN (${inList(groupIds)}) ORDER BY merged_at, id`)
      .all(Number(projectId), ...groupIds) as { c: string; id: string }[];
    for (const r of rows) dups.set(r.c, [...(dups.get(r.c) ?? []), r.id]);
    return groupIds.map((id) => [id, ...(dups.get(id) ?? [])]);
  }

  const inList = (ids: readonly string[]) => ids.map(() => '?').join(', ');
  const replayPage = db.prepare(`SELECT * FROM replays WHERE project_id = ? AND error_ids NOT IN ('', '[]') ORDER BY started_ms DESC, replay_id LIMIT ? OFFSET ?`);
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
   * The two are separate reads (the tallies live with the groups, in PostgreSQL with control data
   * there; the events in SQLite or ClickHouse), combined so that only the edges' user keys travel:
   * users = distinct keys of the hours + edge keys the hours do not hold.
   */
  const windowStmts = new Map<string, { hours: Statement; overlap: Statement }>();
  /** Statements over the tallies of several disjoint sets of group ids at once, per set (`CASE` maps a group id to its set). */
  function windowStmt(sets: readonly (readonly string[])[]) {
    const key = sets.map((x) => x.length).join(',');
    let st = windowStmts.get(key);
    if (!st) {
      const n = sets.reduce((t, x) => t + x.length, 0);
      const ids = Array(n).fill('?').join(', ');
      const setOf = `CASE group_id ${sets.map((x, i) => x.map(() => `WHEN ? THEN ${i}`).join(' ')).join(' ')} END`;
      st = {
        hours: db.prepare(
          `SELECT ${setOf} AS s, COALESCE(SUM(n), 0) AS events, COUNT(DISTINCT NULLIF(user_key, '')) AS users FROM error_group_hour_users
             WHERE group_id IN (${ids}) AND hour >= ? AND hour < ? GROUP BY 1`,
        ),
        // The edge keys of each set, as "set index|key" (a key another set's edges hold is not shared by this set).
        overlap: db.prepare(
          `SELECT ${setOf} AS s, COUNT(DISTINCT user_key) AS n FROM error_group_hour_users WHERE group_id IN (${ids}) AND hour >= ? AND hour < ?
             AND (${setOf}) || '|' || user_key IN (SELECT value FROM json_each(?)) GROUP BY 1`,
        ),
      };
      windowStmts.set(key, st);
    }
    return st;
  }

  /**
   * Events and distinct users of each set of group ids (a group with its merged duplicates; the sets
   * disjoint) with event times in [from, to]: whole hours [hStart, hEnd) from the tallies, `edges` (per
   * set, the events of [from, hStart) and [hEnd, to] per user key; without whole hours, all of [from,
   * to]) from the events. Users = distinct keys of the hours + edge keys the hours do not hold.
   */
  function windowCountsOf(sets: readonly (readonly string[])[], edges: readonly (readonly { k: string | null; n: number }[])[], hStart: number, hEnd: number): { events: number; users: number }[] {
    const out = sets.map((_, i) => {
      let n = 0;
      const keys: string[] = [];
      for (const e of edges[i]!) {
        n += e.n;
        if (e.k !== null && e.k !== '') keys.push(e.k);
      }
      return { events: n, users: keys.length, keys };
    });
    if (hEnd <= hStart || !sets.length) return out.map(({ events, users }) => ({ events, users }));
    const st = windowStmt(sets);
    const flat = sets.flat();
    for (const h of st.hours.all(...flat, ...flat, hStart, hEnd) as { s: number; events: number; users: number }[]) {
      out[h.s]!.events += h.events;
      out[h.s]!.users += h.users;
    }
    const pairs = out.flatMap((o, i) => o.keys.map((k) => `${i}|${k}`));
    if (pairs.length) {
      for (const o of st.overlap.all(...flat, ...flat, hStart, hEnd, ...flat, JSON.stringify(pairs)) as { s: number; n: number }[]) out[o.s]!.users -= o.n;
    }
    return out.map(({ events, users }) => ({ events, users }));
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
    async windowCounts(projectId: string, groupIds: readonly string[], fromMs?: number, toMs?: number): Promise<Map<string, { events: number; users: number }>> {
      const pid = Number(projectId);
      const from = fromMs ?? MIN_MS;
      const to = toMs ?? MAX_MS;
      // Whole hours [hStart, hEnd): every event time in them is inside [from, to] (times may be fractional).
      const hStart = Math.ceil(from / HOUR_MS) * HOUR_MS;
      const hEnd = Math.floor(to / HOUR_MS) * HOUR_MS;
      const sets = eventGroupIdSets(projectId, groupIds);
      const ranges = hEnd > hStart ? [{ lo: from, hi: hStart, closed: false }, { lo: hEnd, hi: to, closed: true }] : [{ lo: from, hi: to, closed: true }];
      // A page of groups: one read of the events' edges, one of the tallies, one of the shared keys
      // (with control data in PostgreSQL and events in ClickHouse, round trips are the cost).
      const edges = await events.userKeys(pid, sets, ranges);
      const seen = new Set<string>();
      const disjoint = sets.every((x) => x.every((id) => !seen.has(id) && seen.add(id)));
      const counts = disjoint ? windowCountsOf(sets, edges, hStart, hEnd) : sets.map((x, i) => windowCountsOf([x], [edges[i]!], hStart, hEnd)[0]!);
      const out = new Map<string, { events: number; users: number }>();
      groupIds.forEach((id, i) => out.set(id, counts[i]!));
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
    async tags(projectId: string, groupId: string, o: { fromMs?: number; toMs?: number; sample: number; maxKeys: number; maxValues: number }): Promise<{ tags: TagBreakdown[]; sampled: number }> {
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
      const recent = await events.recent(pid, ids, o.fromMs ?? MIN_MS, o.toMs ?? MAX_MS, o.sample);
      if (windowed) {
        for (const [key, col] of [['environment', 'environment'], ['service', 'service_name'], ['release', 'release']] as const) {
          const b = top(countValues(recent.map((e) => e[col]).filter((v) => v !== '')));
          if (b) out.push({ ...b, key });
        }
      }
      // Each key's values counted over the sampled events, most frequent first (ties by value, as
      // SQLite orders text: by UTF-8 bytes).
      const perKey = new Map<string, string[]>();
      for (const e of recent) {
        const t = safeJson<Record<string, unknown>>(e.tags, {});
        if (!t || typeof t !== 'object' || Array.isArray(t)) continue;
        for (const [k, v] of Object.entries(t)) {
          if (['environment', 'service', 'release'].includes(k) || v === null || v === undefined) continue;
          let l = perKey.get(k);
          if (!l) perKey.set(k, (l = []));
          l.push(typeof v === 'string' ? v : typeof v === 'boolean' ? (v ? '1' : '0') : typeof v === 'object' ? JSON.stringify(v) : String(v));
        }
      }
      const byKey = new Map<string, TagValueCount[]>([...perKey].map(([k, vs]) => [k, countValues(vs)]));
      const eventTags = [...byKey.entries()]
        .map(([key, rows]) => ({ ...top(rows)!, key }))
        .sort((a, b) => b.total - a.total || a.key.localeCompare(b.key))
        .slice(0, Math.max(0, o.maxKeys - out.length));
      return { tags: [...out, ...eventTags], sampled: recent.length };
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
    latestEvent(projectId: string, groupId: string): Promise<ErrorEventFull | undefined> {
      return events.latestEvent(Number(projectId), eventGroupIds(projectId, groupId));
    },

    event(projectId: string, eventId: string): Promise<ErrorEventFull | undefined> {
      return events.event(Number(projectId), eventId);
    },

    /** The time of the group's earliest event within a window (for suspect commits of a regression window). */
    firstEventIn(projectId: string, groupId: string, fromMs?: number, toMs?: number): Promise<number | null> {
      return events.firstEventIn(Number(projectId), eventGroupIds(projectId, groupId), fromMs ?? MIN_MS, toMs ?? MAX_MS);
    },

    /** Distinct trace ids of the group's events in the window, newest first (their spans: TracesReader.traceSummaries). */
    relatedTraces(projectId: string, groupId: string, o: { fromMs?: number; toMs?: number; limit: number; offset: number }): Promise<{ rows: RelatedTrace[]; total: number }> {
      return events.relatedTraces(Number(projectId), eventGroupIds(projectId, groupId), { from: o.fromMs ?? MIN_MS, to: o.toMs ?? MAX_MS, limit: o.limit, offset: o.offset });
    },

    /**
     * Replays of the group: those whose error ids hold one of its events (`linked_by: 'error'`), then
     * replays of the group's environment overlapping the window (`linked_by: 'window'`). At most `limit`.
     */
    async replays(projectId: string, groupId: string, o: { fromMs: number; toMs: number; environment: string; limit: number }): Promise<LinkedReplay[]> {
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
      // Replays holding error ids, newest first, a page at a time; each page's ids looked up in one
      // read of the table naming events' groups (a separate store from the replays' with events in
      // ClickHouse and their ids in PostgreSQL).
      const linked: LinkedReplay[] = [];
      const PAGE = 500;
      for (let offset = 0; linked.length < o.limit; offset += PAGE) {
        const page = replayPage.all(pid, PAGE, offset) as any[];
        const errorIds = new Set<string>();
        const lists = page.map((r) => {
          const l = safeJson<unknown>(r.error_ids, []);
          const ids = Array.isArray(l) ? l.filter((x): x is string => typeof x === 'string') : [];
          for (const x of ids) errorIds.add(x);
          return ids;
        });
        const known = errorIds.size
          ? new Set(
              db
                .prepare(`SELECT DISTINCT event_id FROM ${eventIds} WHERE project_id = ? AND group_id IN (${inList(ids)}) AND event_id IN (SELECT value FROM json_each(?))`)
                .pluck()
                .all(pid, ...ids, JSON.stringify([...errorIds])) as string[],
            )
          : new Set<string>();
        page.forEach((r, i) => {
          if (linked.length < o.limit && lists[i]!.some((x) => known.has(x))) linked.push(fromRow(r, 'error'));
        });
        if (page.length < PAGE) break;
      }
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

    /**
     * With the events in ClickHouse, expired by whole days: the hourly tallies of the project's groups
     * before `dayStartMs` (every event of those hours is gone). Returns the rows deleted.
     */
    expireHoursBefore(projectId: string, dayStartMs: number): number {
      return db.prepare('DELETE FROM error_group_hour_users WHERE hour < ? AND group_id IN (SELECT id FROM error_groups WHERE project_id = ?)').run(dayStartMs, Number(projectId)).changes;
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
    async searchEvents(projectId: string, o: { terms: readonly EventQueryTerm[]; fromMs?: number; toMs?: number; limit: number; offset: number }): Promise<{ rows: ErrorEventRow[]; total: number; capped: boolean }> {
      const cap = Math.max(SEARCH_TOTAL_CAP, o.offset + o.limit);
      const { rows, n } = await events.search(Number(projectId), { ...o, cap });
      return { rows, total: Math.min(n, cap), capped: n > cap };
    },

    /**
     * Ingestion latency (received minus event time, negative clock skew counted as 0) of events
     * received in [fromMs, toMs], per source, by nearest-rank percentiles. Events that arrive more than
     * LATENCY_MAX_AGE_MS after they happened (an SDK's offline cache flushed days later, an imported
     * backlog) say nothing about the pipeline and are left out.
     */
    latency(projectId: string, o: { fromMs: number; toMs: number; service?: string; environment?: string }): Promise<LatencyRow[]> {
      return events.latency(Number(projectId), o);
    },

    /** events.latency from every event of the window in SQLite (the reference the tallies' read is checked against). */
    latencyScan(projectId: string, o: { fromMs: number; toMs: number; service?: string; environment?: string }): LatencyRow[] {
      return latencyScan(db, Number(projectId), o);
    },
  };
}

export type ErrorGroupsRepo = ReturnType<typeof createErrorGroupsRepo>;

/** events.search counts matches up to this many (or to the end of the requested page, when further). */
export const SEARCH_TOTAL_CAP = 1000;

/** events.latency leaves out events received more than this long after they happened. */
export { LATENCY_MAX_AGE_MS };
