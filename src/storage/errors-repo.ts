import { randomUUID } from 'node:crypto';
import type { Db } from './db.js';
import { batchTallies } from './write-batcher.js';
import { inList, multiRow } from './multi-row.js';
import { postgresOf } from './postgres/split-db.js';
import type { ErrorEventRecord } from '../domain/telemetry-types.js';
import type { GroupKey } from '../domain/grouping/fingerprint.js';
import { userField, userKeyOf } from '../domain/errors/users.js';
import { hourOf } from './migrations/046-error-group-hours.js';
import { LatencyTally, latencyTallyWriter } from './error-latency.js';
import type { StoredErrorEvent } from './error-events-read.js';

export interface ErrorGroupRow {
  id: string;
  project_id: string;
  seq: number;
  short_id: string;
  fingerprint: string;
  grouping_method: string;
  type: string;
  title: string;
  culprit: string;
  level: string;
  service_name: string;
  environment: string;
  status: 'unresolved' | 'resolved' | 'ignored' | 'muted';
  priority: 'low' | 'medium' | 'high' | 'critical';
  assigned_to: string | null;
  ai_assigned: boolean;
  first_seen: number;
  last_seen: number;
  event_count: number;
  /** Distinct users (error_group_users) of the events counted on the group. */
  user_count: number;
  /** Release of the group's earliest / latest event that named one ('' when none did). */
  first_release: string;
  last_release: string;
  merged_into: string | null;
  merged_at: number | null;
  updated_at: number;
}

/* eslint-disable @typescript-eslint/no-explicit-any */
export function groupFromRow(r: any): ErrorGroupRow {
  return { ...r, project_id: String(r.project_id), ai_assigned: !!r.ai_assigned };
}

const LEVEL_RANK: Record<string, number> = { debug: 0, info: 1, warning: 2, error: 3, fatal: 4 };

/** Adds `value` to the set `map` holds for `key` (made when missing). */
function addToSetOf<K, V>(map: Map<K, Set<V>>, key: K, value: V): void {
  let set = map.get(key);
  if (!set) map.set(key, (set = new Set()));
  set.add(value);
}

/** Sentry-style short id: project slug + base-36 sequence (e.g. CHECKOUT-1A). */
export function shortId(projectSlug: string, seq: number): string {
  const prefix = projectSlug.toUpperCase().replace(/[^A-Z0-9]+/g, '-').replace(/^-|-$/g, '').slice(0, 16) || 'PROJECT';
  return `${prefix}-${seq.toString(36).toUpperCase()}`;
}

/**
 * The write side of error groups: group lookup by fingerprint, creation, and event recording.
 * A merged duplicate keeps its fingerprint; its later events count on the canonical group
 * (spec, States and transitions).
 */
export function createErrorsIngestRepo(db: Db, opts: { events?: ErrorEventSink } = {}) {
  /*
   * With error events in ClickHouse (`events`), an event's id goes into `error_event_ids` here (new
   * or not is decided in this transaction, as INSERT OR IGNORE into error_events decides it) and the
   * event to the sink, which inserts it after the commit. events.latency then reads the events in
   * ClickHouse: no latency tallies are kept.
   */
  const sink = opts.events;
  const eventIds = sink ? 'error_event_ids' : 'error_events';
  const s = {
    byId: db.prepare('SELECT id, short_id, title, level, service_name, environment, status, merged_into FROM error_groups WHERE project_id = ? AND id = ?'),
    nextSeq: db.prepare('SELECT COALESCE(MAX(seq), 0) + 1 AS n FROM error_groups WHERE project_id = ?'),
    insertEvent: db.prepare(`INSERT OR IGNORE INTO error_events (${EVENT_ROW_COLUMNS.join(', ')}) VALUES (${EVENT_ROW_COLUMNS.map(() => '?').join(', ')})`),
    // A resolved group that gets an event is unresolved at once (a second event of the same batch must not reopen it again).
    reopen: db.prepare(`UPDATE error_groups SET status = 'unresolved', updated_at = ? WHERE id = ? AND status = 'resolved'`),
    // Rollups kept beside the group in the same transaction (migration 034): reads never scan events.
    exists: db.prepare('SELECT 1 FROM error_groups WHERE project_id = ? AND id = ?'),
    groupOfEvent: db.prepare(`SELECT group_id FROM ${eventIds} WHERE project_id = ? AND event_id = ?`),
  };

  /*
   * Group counts, levels, releases, users and dimension counts are tallied in memory and written once
   * per group (and per dimension value, per user) at the end: of the write batch when ingest runs
   * inside one (createWriteBatcher's participant below: a job whose savepoint rolls back leaves its
   * tally out), else of this call. The event rows themselves are inserted as they come.
   */
  const tallies = batchTallies(newTally, (into, from) => into.merge(from), (t) => write(t));

  const writeLatency = sink ? () => {} : latencyTallyWriter(db);
  // The batch's rollup rows go in multi-row statements (multi-row.ts): with error groups in PostgreSQL each statement is a round trip.
  const dims = multiRow(
    db,
    'INSERT INTO error_group_dims (group_id, kind, value, event_count, first_seen, last_seen)',
    6,
    `ON CONFLICT (group_id, kind, value) DO UPDATE SET event_count = event_count + excluded.event_count, first_seen = MIN(first_seen, excluded.first_seen),
      last_seen = MAX(last_seen, excluded.last_seen)`,
  );
  // RETURNING: the rows inserted, i.e. the users new to their group.
  const users = multiRow(db, 'INSERT OR IGNORE INTO error_group_users (group_id, user_key, user_id, first_seen)', 4, 'RETURNING group_id');
  // Ids of events stored in ClickHouse (migration 056); RETURNING: the ids new to the table.
  const insertIds = multiRow(db, 'INSERT OR IGNORE INTO error_event_ids (project_id, event_id, group_id, timestamp_ms)', 4, 'RETURNING event_id');
  // A batch's ids, inserted at its end (with error groups in PostgreSQL): new ones only, as read before.
  const insertNewIds = multiRow(db, 'INSERT OR IGNORE INTO error_event_ids (project_id, event_id, group_id, timestamp_ms)', 4);
  const idsIn = inList(db, (marks) => `SELECT event_id FROM error_event_ids WHERE project_id = ? AND event_id IN (${marks})`);
  // Per (group, hour, user key) event counts behind the window counts (migration 046).
  const hours = multiRow(db, 'INSERT INTO error_group_hour_users (group_id, hour, user_key, n)', 4, 'ON CONFLICT (group_id, hour, user_key) DO UPDATE SET n = n + excluded.n');
  // The heads of a call's fingerprints not yet known to the batch, read at once (100 a statement).
  const headsOf = inList(db, (marks) => `SELECT fingerprint, id, short_id, title, level, service_name, environment, status, merged_into FROM error_groups
    WHERE project_id = ? AND fingerprint IN (${marks})`);
  // A call's new groups, inserted once every event of the call has its group (before any event row).
  const insertGroups = multiRow(
    db,
    `INSERT INTO error_groups (id, project_id, seq, short_id, fingerprint, grouping_method, type, title, culprit, level,
      service_name, environment, first_seen, last_seen, event_count, updated_at)`,
    16,
  );
  /*
   * The batch's tally per group, 100 groups a statement: an UPDATE from a VALUES list (SQLite 3.33+;
   * both name its columns column1, column2…), whose SET expressions all see the row before the update.
   * The casts: PostgreSQL types a bare parameter in such a list as text. Columns: 1 id, 2 n, 3 max ts,
   * 4 min ts, 5 first release, 6 its ts, 7 last release, 8 its ts, 9 new users, 10 level rank, 11 level, 12 now.
   */
  const [int, real] = ['CAST(? AS INTEGER)', 'CAST(? AS REAL)'];
  const bumps = multiRow(
    db,
    `UPDATE error_groups SET event_count = event_count + v.column2, last_seen = MAX(last_seen, v.column3), first_seen = MIN(first_seen, v.column4),
      first_release = CASE WHEN v.column5 <> '' AND (first_release = '' OR v.column6 < first_seen) THEN v.column5 ELSE first_release END,
      last_release = CASE WHEN v.column7 <> '' AND (last_release = '' OR v.column8 >= last_seen) THEN v.column7 ELSE last_release END,
      user_count = user_count + v.column9,
      level = CASE WHEN v.column10 > (CASE level WHEN 'debug' THEN 0 WHEN 'info' THEN 1 WHEN 'warning' THEN 2 WHEN 'error' THEN 3 WHEN 'fatal' THEN 4 ELSE 3 END)
        THEN v.column11 ELSE level END,
      updated_at = v.column12 FROM (`,
    ['?', int, real, real, '?', real, '?', real, int, int, '?', int],
    ') AS v WHERE error_groups.id = v.column1',
  );

  /*
   * With error groups in PostgreSQL, a write batch's new groups are inserted at its end, before its
   * tallies (a job's with its tally: a job rolled back leaves none), so a batch of one-event jobs does
   * not pay a round trip per new group. The batch holds the advisory lock (split-db.ts) from its first
   * PostgreSQL statement, the heads read included, to its commit: no other process adds a group of
   * the project meanwhile, and the unique (project_id, fingerprint) stays the backstop (a violation
   * fails the batch). On SQLite alone a job inserts its groups itself, as before.
   */
  const deferGroups = !!postgresOf(db);

  const write = (t: Tally) => {
    insertGroups(t.newGroups, (st, args) => st.run(...args));
    insertNewIds(t.newIds, (st, args) => st.run(...args));
    writeLatency(t.lat);
    const newUsers = new Map<string, number>();
    users(
      [...t.users.values()].map((u) => [u.group, u.key, u.id, u.ts]),
      (st, args) => {
        for (const r of st.all(...args) as { group_id: string }[]) newUsers.set(r.group_id, (newUsers.get(r.group_id) ?? 0) + 1);
      },
    );
    bumps(
      [...t.groups.values()].map((g) => [g.id, g.n, g.maxTs, g.minTs, g.relFirst, g.relFirstTs, g.relLast, g.relLastTs, newUsers.get(g.id) ?? 0, g.rank, g.level, g.now]),
      (st, args) => st.run(...args),
    );
    dims([...t.dims.values()].map((d) => [d.group, d.kind, d.value, d.n, d.min, d.max]), (st, args) => st.run(...args));
    hours([...t.hours.values()].map((h) => [h.group, h.hour, h.key, h.n]), (st, args) => st.run(...args));
  };

  /*
   * The group of a fingerprint, read once per write batch: a job finds it in its own tally, else in
   * the batch's (copied into its own, so a job rolled back leaves the batch's copy as it was), else
   * in the table. With error groups in PostgreSQL this saves a round trip per event; a change another
   * process makes to a group meanwhile (a merge, a status) is seen by the next batch. The table is
   * read for all of a call's fingerprints at once (`readHeads`, before `head`), not one by one, and
   * inside a batch with those the batch's jobs said they would need (`expect`, from their `prepare`):
   * a batch of one-event jobs reads its heads in one statement per 100 fingerprints, not one per job.
   * Inside a batch what is read goes to the batch's heads (a table row does not depend on the job
   * that read it; a job changes its own copy), and what is not found to `absent`, so no later job
   * of the batch reads it again.
   */
  const readHeads = (pid: number, items: KeyedErrorEvent[], t: Tally, batch: Tally | null) => {
    const known = (k: string) => t.heads.has(k) || !!batch?.heads.has(k) || !!batch?.absent.has(k);
    const want = new Map<number, Set<string>>();
    const add = (p: number, v: string) => addToSetOf(want, p, v);
    for (const { key } of items) if (!known(`${pid}\u0000${key.fingerprint}`)) add(pid, key.fingerprint);
    if (!want.size) return;
    if (batch) {
      for (const [p, fps] of batch.expected) for (const fp of fps) if (!known(`${p}\u0000${fp}`)) add(p, fp);
      batch.expected.clear();
    }
    const into = batch ?? t;
    for (const [p, fps] of want) {
      headsOf([...fps], (st, args) => {
        for (const { fingerprint, ...g } of st.all(p, ...args) as (GroupHead & { fingerprint: string })[]) into.heads.set(`${p}\u0000${fingerprint}`, g);
      });
      if (batch) for (const fp of fps) if (!batch.heads.has(`${p}\u0000${fp}`)) batch.absent.add(`${p}\u0000${fp}`);
    }
  };
  /*
   * With the ids of events in ClickHouse kept in PostgreSQL, inside a batch: which of a job's event
   * ids are in the table is read with those of the batch's other jobs (`expect`), at the first job
   * that needs one; taken ids go to the batch's `idsTaken`, free ones to `idsFree`. A job's new ids
   * are taken in its tally (the batch's once it ends well) and inserted at the batch's end: the
   * advisory lock the batch holds keeps another process from inserting one meanwhile.
   */
  const readIds = (pid: number, placed: readonly { row: StoredErrorEvent }[], t: Tally, batch: Tally) => {
    const known = (k: string) => t.idsTaken.has(k) || batch.idsTaken.has(k) || batch.idsFree.has(k);
    const want = new Map<number, Set<string>>();
    const add = (p: number, v: string) => addToSetOf(want, p, v);
    for (const { row } of placed) if (!known(`${pid}\u0000${row.event_id}`)) add(pid, row.event_id);
    if (!want.size) return;
    for (const [p, ids] of batch.expectedIds) for (const id of ids) if (!known(`${p}\u0000${id}`)) add(p, id);
    batch.expectedIds.clear();
    for (const [p, ids] of want) {
      idsIn([...ids], (st, args) => {
        for (const r of st.all(p, ...args) as { event_id: string }[]) batch.idsTaken.add(`${p}\u0000${r.event_id}`);
      });
      for (const id of ids) if (!batch.idsTaken.has(`${p}\u0000${id}`)) batch.idsFree.add(`${p}\u0000${id}`);
    }
  };
  const head = (pid: number, fingerprint: string, t: Tally, batch: Tally | null): GroupHead | undefined => {
    const k = `${pid}\u0000${fingerprint}`;
    let g = t.heads.get(k);
    if (g) return g;
    const b = batch?.heads.get(k);
    if (b) t.heads.set(k, (g = { ...b }));
    return g;
  };
  /*
   * A project's next group seq, read once per write batch (then counted in the tallies, as the heads
   * are): the batch holds the write lock, and with error groups in PostgreSQL the advisory lock, so
   * no other writer adds a group meanwhile.
   */
  const nextSeq = (pid: number, t: Tally, batch: Tally | null): number => {
    let n = t.seqs.get(pid) ?? batch?.seqs.get(pid);
    if (n === undefined) {
      n = (s.nextSeq.get(pid) as { n: number }).n;
      // The table's next seq holds for the whole batch (a job rolled back does not take it back).
      batch?.seqs.set(pid, n);
    }
    t.seqs.set(pid, n + 1);
    return n;
  };

  const ingestRows = (projectId: string, projectSlug: string, items: KeyedErrorEvent[], now: number, t: Tally, batch: Tally | null): ErrorsIngestOutcome => {
    const pid = Number(projectId);
    let inserted = 0;
    const groups: string[] = [];
    const created: GroupChange[] = [];
    const reopened: GroupChange[] = [];
    // First every event's group (found or created) and row, then which events are new, then their counts.
    readHeads(pid, items, t, batch);
    const newGroups: unknown[][] = [];
    const placed = items.map(({ event: e, key, json }) => {
      let g = head(pid, key.fingerprint, t, batch);
      if (!g) {
        const seq = nextSeq(pid, t, batch);
        const row = {
          id: randomUUID(), project_id: pid, seq, short_id: shortId(projectSlug, seq), fingerprint: key.fingerprint,
          grouping_method: key.method, type: key.type, title: key.title, culprit: key.culprit, level: e.level,
          service_name: e.service_name, environment: e.environment, ts: e.timestamp_ms, now,
        };
        newGroups.push([
          row.id, row.project_id, row.seq, row.short_id, row.fingerprint, row.grouping_method, row.type, row.title, row.culprit, row.level,
          row.service_name, row.environment, row.ts, row.ts, 0, row.now,
        ]);
        g = { id: row.id, short_id: row.short_id, title: row.title, level: row.level, service_name: row.service_name, environment: row.environment, status: 'unresolved', merged_into: null };
        t.heads.set(`${pid}\u0000${key.fingerprint}`, g);
        created.push(groupChange(g));
      }
      const own = g.id;
      const effective = g.merged_into ?? own;
      const row: StoredErrorEvent = {
        project_id: pid, event_id: e.event_id, group_id: effective, fingerprint_group_id: own, timestamp_ms: e.timestamp_ms, received_ms: e.received_ms,
        source: e.source, platform: e.platform, level: e.level, type: json ? json.type : e.exceptions.length ? e.exceptions[e.exceptions.length - 1]!.type : key.type,
        message: e.message, title: key.title, service_name: e.service_name, environment: e.environment, release: e.release, transaction_name: e.transaction,
        server_name: e.server_name, trace_id: e.trace_id, span_id: e.span_id, tags: json ? json.tags : JSON.stringify(e.tags),
        user_json: json ? json.user : e.user ? JSON.stringify(e.user) : null, payload: json ? json.payload : JSON.stringify(e.payload),
      };
      return { e, g, own, effective, row };
    });
    if (batch && deferGroups) t.newGroups.push(...newGroups);
    else insertGroups(newGroups, (st, args) => st.run(...args));
    // With the events in ClickHouse, the ids go in multi-row statements (one round trip per 100 with
    // the groups in PostgreSQL); the first of equal ids in the call is the one stored.
    let fresh: Set<string> | null = null;
    if (sink && batch && deferGroups) {
      // Inside a batch, with the ids in PostgreSQL: which are taken is read for the batch's ids at once,
      // and the new ones are inserted at the batch's end (`newIds`, kept with the job's tally).
      fresh = new Set();
      readIds(pid, placed, t, batch);
      for (const x of placed) {
        const k = `${pid}\u0000${x.row.event_id}`;
        if (batch.idsTaken.has(k) || t.idsTaken.has(k)) continue;
        t.idsTaken.add(k);
        t.newIds.push([pid, x.row.event_id, x.effective, x.row.timestamp_ms]);
        fresh.add(x.row.event_id);
      }
    } else if (sink) {
      fresh = new Set();
      const newIds = fresh;
      insertIds(
        placed.map((x) => [pid, x.row.event_id, x.effective, x.row.timestamp_ms]),
        (st, args) => {
          for (const r of st.all(...args) as { event_id: string }[]) newIds.add(r.event_id);
        },
      );
    }
    for (const { e, g, own, effective, row } of placed) {
      let isNew: boolean;
      if (fresh) {
        isNew = fresh.delete(row.event_id);
        if (isNew) sink!.add(row);
      } else isNew = s.insertEvent.run(...EVENT_ROW_COLUMNS.map((c) => row[c])).changes > 0;
      if (isNew) {
        inserted++;
        const target = effective === own ? g : (s.byId.get(pid, effective) as GroupHead | undefined);
        if (target?.status === 'resolved') {
          // With error groups in PostgreSQL a head may have been read for the batch before an earlier
          // job reopened its group through a merged duplicate (whose canonical is read from the
          // table): the group counts as reopened only when this update reopened it.
          const changed = s.reopen.run(now, effective).changes > 0;
          if ((changed || !deferGroups) && !reopened.some((r) => r.groupId === effective)) reopened.push(groupChange(target));
          target.status = 'unresolved';
        }
        t.add(effective, e, now);
        t.lat.add(pid, e.source, e.service_name, e.environment, e.received_ms, e.timestamp_ms);
      }
      groups.push(effective);
    }
    return { inserted, groups, created, reopened };
  };

  const ingestAlone = db.transaction((projectId: string, projectSlug: string, items: KeyedErrorEvent[], now: number): ErrorsIngestOutcome => {
    const t = newTally();
    const out = ingestRows(projectId, projectSlug, items, now, t, null);
    write(t);
    return out;
  });

  return {
    /** Group and store events in one transaction; a repeated event_id is ignored (SDK retries). */
    ingest(projectId: string, projectSlug: string, items: KeyedErrorEvent[], now: number): ErrorsIngestOutcome {
      const job = tallies.job();
      if (!job) return ingestAlone(projectId, projectSlug, items, now);
      // Inside a write batch the job already runs in its own savepoint; a throw here rolls it back and drops its tally.
      return ingestRows(projectId, projectSlug, items, now, job, tallies.batch());
    },
    /**
     * Inside a write batch (a job's `prepare`), with error groups in PostgreSQL: the groups of these
     * events (and, with the events in ClickHouse, their ids) will be needed, and are read with those
     * of the batch's other jobs, at the first job that needs one. Otherwise nothing.
     */
    expect(projectId: string, items: readonly KeyedErrorEvent[]): void {
      const b = tallies.batch();
      // On SQLite alone a job's reads cost no round trip: each job reads its own, as before.
      if (!b || !deferGroups) return;
      const pid = Number(projectId);
      for (const { key } of items) addToSetOf(b.expected, pid, key.fingerprint);
      if (sink) for (const { event } of items) addToSetOf(b.expectedIds, pid, event.event_id);
    },
    /** Hooks for createWriteBatcher: per-group tallies written once per batch, before its commit. */
    batchParticipant: tallies.participant,
    /** The group an event was counted on, by the SDK's event id. */
    groupOfEvent(projectId: string, eventId: string): string | undefined {
      return (s.groupOfEvent.get(Number(projectId), eventId) as { group_id: string } | undefined)?.group_id;
    },
    exists(projectId: string, groupId: string): boolean {
      return !!s.exists.get(Number(projectId), groupId);
    },
  };
}

interface GroupHead {
  id: string;
  short_id: string;
  title: string;
  level: string;
  service_name: string;
  environment: string;
  status: string;
  merged_into: string | null;
}

interface GroupTally {
  id: string;
  n: number;
  minTs: number;
  maxTs: number;
  /** Release of the earliest event that named one (first of equals), and of the latest (last of equals). */
  relFirst: string;
  relFirstTs: number;
  relLast: string;
  relLastTs: number;
  /** Highest level rank seen (first event reaching it), -1 when none. */
  rank: number;
  level: string;
  now: number;
}

interface DimTally { group: string; kind: string; value: string; n: number; min: number; max: number }
interface UserTally { group: string; key: string; id: string | null; ts: number }
interface HourTally { group: string; hour: number; key: string; n: number }

interface Tally {
  groups: Map<string, GroupTally>;
  dims: Map<string, DimTally>;
  users: Map<string, UserTally>;
  hours: Map<string, HourTally>;
  /** Latency bucket counts and sums behind events.latency (migration 055). */
  lat: LatencyTally;
  /** Groups read or created, by project and fingerprint (not written: what the next job of the batch finds). */
  heads: Map<string, GroupHead>;
  /** The next group seq by project, once read (a job's own, then the batch's). */
  seqs: Map<number, number>;
  /** Groups created and not yet inserted (with error groups in PostgreSQL, inside a batch): error_groups rows, in order. */
  newGroups: unknown[][];
  /** The batch's: fingerprints (project, fingerprint) read and not found in the table. */
  absent: Set<string>;
  /** The batch's: fingerprints by project its jobs said they would need (`expect`), not yet read. */
  expected: Map<number, Set<string>>;
  /** Event ids (project, id) in error_event_ids or taken by a job (a job's own, then the batch's), with the ids in PostgreSQL inside a batch. */
  idsTaken: Set<string>;
  /** The batch's: event ids read and not in the table. */
  idsFree: Set<string>;
  /** The batch's: event ids by project its jobs said they would write, not yet read. */
  expectedIds: Map<number, Set<string>>;
  /** error_event_ids rows to insert at the end (the new ids of `idsTaken`). */
  newIds: unknown[][];
  add(group: string, e: ErrorEventRecord, now: number): void;
  merge(o: Tally): void;
}

/**
 * Counts of events per group, per (group, environment/service/release) and the users per group, in
 * event order, so that writing them once gives what writing them event by event gave.
 */
function newTally(): Tally {
  const groups = new Map<string, GroupTally>();
  const dims = new Map<string, DimTally>();
  const users = new Map<string, UserTally>();
  const hours = new Map<string, HourTally>();
  const lat = new LatencyTally();
  const heads = new Map<string, GroupHead>();
  const seqs = new Map<number, number>();
  const newGroups: unknown[][] = [];
  const idsTaken = new Set<string>();
  const newIds: unknown[][] = [];
  const hourUser = (group: string, hour: number, key: string, n: number) => {
    const k = `${group}\u0000${hour}\u0000${key}`;
    const h = hours.get(k);
    if (h) h.n += n;
    else hours.set(k, { group, hour, key, n });
  };
  const dim = (group: string, kind: string, value: string, n: number, min: number, max: number) => {
    const k = `${group}\u0000${kind}\u0000${value}`;
    const d = dims.get(k);
    if (!d) dims.set(k, { group, kind, value, n, min, max });
    else {
      d.n += n;
      if (min < d.min) d.min = min;
      if (max > d.max) d.max = max;
    }
  };
  const mergeGroup = (x: GroupTally) => {
    const g = groups.get(x.id);
    if (!g) {
      groups.set(x.id, { ...x });
      return;
    }
    g.n += x.n;
    if (x.minTs < g.minTs) g.minTs = x.minTs;
    if (x.maxTs > g.maxTs) g.maxTs = x.maxTs;
    if (x.relFirst && (!g.relFirst || x.relFirstTs < g.relFirstTs)) [g.relFirst, g.relFirstTs] = [x.relFirst, x.relFirstTs];
    if (x.relLast && (!g.relLast || x.relLastTs >= g.relLastTs)) [g.relLast, g.relLastTs] = [x.relLast, x.relLastTs];
    if (x.rank > g.rank) [g.rank, g.level] = [x.rank, x.level];
    if (x.now > g.now) g.now = x.now;
  };
  return {
    groups,
    dims,
    users,
    hours,
    lat,
    heads,
    seqs,
    newGroups,
    absent: new Set(),
    expected: new Map(),
    idsTaken,
    idsFree: new Set(),
    expectedIds: new Map(),
    newIds,
    add(group: string, e: ErrorEventRecord, now: number) {
      const ts = e.timestamp_ms;
      const rank = LEVEL_RANK[e.level] ?? 3;
      mergeGroup({
        id: group, n: 1, minTs: ts, maxTs: ts, relFirst: e.release, relFirstTs: ts, relLast: e.release, relLastTs: ts, rank, level: e.level, now,
      });
      if (e.environment) dim(group, 'environment', e.environment, 1, ts, ts);
      if (e.service_name) dim(group, 'service', e.service_name, 1, ts, ts);
      if (e.release) dim(group, 'release', e.release, 1, ts, ts);
      const key = e.user ? userKeyOf(e.user) : null;
      hourUser(group, hourOf(ts), key ?? '', 1);
      if (key !== null) {
        const k = `${group}\u0000${key}`;
        if (!users.has(k)) users.set(k, { group, key, id: userField(e.user, 'id') || null, ts });
      }
    },
    merge(o: Tally) {
      for (const [k, h] of o.heads) heads.set(k, h);
      for (const [k, n] of o.seqs) seqs.set(k, n);
      for (const r of o.newGroups) newGroups.push(r);
      for (const k of o.idsTaken) idsTaken.add(k);
      for (const r of o.newIds) newIds.push(r);
      for (const g of o.groups.values()) mergeGroup(g);
      for (const d of o.dims.values()) dim(d.group, d.kind, d.value, d.n, d.min, d.max);
      for (const [k, u] of o.users) if (!users.has(k)) users.set(k, u);
      for (const h of o.hours.values()) hourUser(h.group, h.hour, h.key, h.n);
      lat.merge(o.lat);
    },
  };
}

/** Where events go instead of SQLite's `error_events` (ClickHouse's store: held until the write batch commits). */
export interface ErrorEventSink {
  add(e: StoredErrorEvent): void;
}

/** An error event's stored columns, in `error_events` order. */
export const EVENT_ROW_COLUMNS = [
  'project_id', 'event_id', 'group_id', 'fingerprint_group_id', 'timestamp_ms', 'received_ms', 'source', 'platform', 'level', 'type', 'message', 'title',
  'service_name', 'environment', 'release', 'transaction_name', 'server_name', 'trace_id', 'span_id', 'tags', 'user_json', 'payload',
] as const satisfies readonly (keyof StoredErrorEvent)[];

/** An event's JSON columns, serialized where it was decoded; `type` is the raised exception's type (else the key's). */
export interface EventJson {
  type: string;
  tags: string;
  user: string | null;
  payload: string;
}

/** An event to write with its grouping key; with `json`, the columns are taken from it (the event's own payload, tags and exceptions are not read). */
export interface KeyedErrorEvent {
  event: ErrorEventRecord;
  key: GroupKey;
  json?: EventJson;
}

/** A group that ingest created or reopened (published as a domain event once committed). */
export interface GroupChange {
  groupId: string;
  shortId: string;
  title: string;
  level: string;
  service: string;
  environment: string;
}

export interface ErrorsIngestOutcome {
  inserted: number;
  groups: string[];
  created: GroupChange[];
  reopened: GroupChange[];
}

function groupChange(g: any): GroupChange {
  return { groupId: g.id, shortId: g.short_id, title: g.title, level: g.level, service: g.service_name ?? '', environment: g.environment ?? '' };
}

export type ErrorsIngestRepo = ReturnType<typeof createErrorsIngestRepo>;
