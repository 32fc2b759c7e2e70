/**
 * Product-analytics capture storage: events, persons (distinct ids merged by $identify and
 * $create_alias), marketing touches and sessions. Distinct ids with no person row are anonymous
 * visitors; a person key is `p:<person id>` for a mapped id, else `d:<distinct id>`.
 */
import type { Db } from './db.js';
import { createSqliteErrorEventsReader, type ErrorEventsReader } from './error-events-read.js';
import { touchOf, type CaptureEvent } from '../domain/analytics/capture.js';
import type { Touch } from '../domain/revenue/attribution.js';
import { noScratch, type PackedTouches, type ScratchArrays } from '../domain/revenue/attribution-fast.js';
import { keyInterner, keyStringsOf } from './revenue-rollup.js';
import { inList, multiRow } from './multi-row.js';
import { appendTouches, touchDayStatements, TOUCH_BYTES, type TouchInput } from './touch-days.js';

/**
 * Person keys of distinct ids (`p:<person id>`), loaded once per project and kept until its identity
 * epoch moves. Every write that maps or moves a distinct id (merge, identify) bumps
 * `analytics_identity_epoch` in its own transaction (migration 036), so a read checks one row instead
 * of loading every mapping; writes from another process are seen the same way. One cache per database
 * handle, shared by the analytics and revenue repositories.
 */
const personKeyCaches = new WeakMap<Db, (projectId: number) => ReadonlyMap<string, string>>();
export function personKeysOf(db: Db): (projectId: number) => ReadonlyMap<string, string> {
  let f = personKeyCaches.get(db);
  if (f) return f;
  const epoch = db.prepare('SELECT epoch FROM analytics_identity_epoch WHERE project_id = ?').pluck();
  const all = db.prepare('SELECT distinct_id, person_id FROM analytics_distinct_ids WHERE project_id = ?').raw(true);
  const cache = new Map<number, { epoch: number; map: Map<string, string> }>();
  f = (pid: number) => {
    const e = (epoch.get(pid) as number | undefined) ?? 0;
    const c = cache.get(pid);
    if (c && c.epoch === e) return c.map;
    const map = new Map<string, string>();
    for (const [d, p] of all.all(pid) as [string, number][]) map.set(d, `p:${p}`);
    cache.set(pid, { epoch: e, map });
    return map;
  };
  personKeyCaches.set(db, f);
  return f;
}

/**
 * Dense person indexes (0, 1, …) for person keys, numbered per person map: stable while the identity
 * epoch stays, so the revenue and analytics repositories resolve ids to the same indexes and can memo
 * their resolutions across reads (attribution-fast.ts).
 */
export interface PersonIndex {
  persons: ReadonlyMap<string, string>;
  indexOf(key: string): number;
  size(): number;
  /** Memo tables of callers, dropped with the index when the epoch moves. */
  memo: Map<string, unknown>;
}
const personIndexes = new WeakMap<ReadonlyMap<string, string>, PersonIndex>();
export function personIndexOf(db: Db): (projectId: number) => PersonIndex {
  const keys = personKeysOf(db);
  return (pid: number) => {
    const persons = keys(pid);
    let x = personIndexes.get(persons);
    if (!x) {
      const m = new Map<string, number>();
      x = {
        persons,
        indexOf(key: string) {
          let i = m.get(key);
          if (i === undefined) m.set(key, (i = m.size));
          return i;
        },
        size: () => m.size,
        memo: new Map(),
      };
      personIndexes.set(persons, x);
    }
    return x;
  };
}

/**
 * Person index of a `revenue_keys` `d:` id (a distinct or anonymous id), memoized per person index:
 * `mapped` is the index of the id's person (-1 when the id has none), `own` the index of its own
 * `d:<id>` key. Shared by the packed ledger rows and the packed touches, which use the same key ids.
 */
export function keyPersons(px: PersonIndex, ks: readonly string[], pid: number): { mapped(id: number): number; own(id: number): number; memo: { mapped: Int32Array; own: Int32Array } } {
  const memoKey = `key-persons:${pid}`;
  // Per key id: index of its mapped person (-1 unmapped), and of its own `d:` key; -2 not yet resolved.
  let memo = px.memo.get(memoKey) as { mapped: Int32Array; own: Int32Array } | undefined;
  if (!memo || memo.mapped.length < ks.length) {
    const grown = { mapped: new Int32Array(ks.length + 1024).fill(-2), own: new Int32Array(ks.length + 1024).fill(-2) };
    if (memo) {
      grown.mapped.set(memo.mapped);
      grown.own.set(memo.own);
    }
    px.memo.set(memoKey, (memo = grown));
  }
  const { mapped: mm, own: om } = memo;
  return {
    /** The memo tables themselves (-2: not resolved yet), for loops that read them inline. */
    memo,
    mapped(id: number) {
      let v = mm[id]!;
      if (v === -2) {
        const p = px.persons.get(ks[id]!.slice(2));
        mm[id] = v = p === undefined ? -1 : px.indexOf(p);
      }
      return v;
    },
    own(id: number) {
      let v = om[id]!;
      if (v === -2) om[id] = v = px.indexOf(ks[id]!);
      return v;
    },
  };
}

export type MergeOutcome = 'merged' | 'linked' | 'refused_identified' | 'noop';

/**
 * Where capture events go instead of SQLite's `capture_events` (ClickHouse, issue 20:
 * clickhouse/capture-store.ts), and the reads of them. Only the append-only events move: persons,
 * distinct ids, sessions and touches stay with the control data (SQLite, or PostgreSQL when
 * SIGHTLINE_DATABASE_URL is set: migration 5).
 */
export interface CaptureEventStore {
  /** Events of one ingest call, held with the running write-batch job (acknowledged once stored). */
  add(projectId: number, events: readonly CaptureEvent[], receivedAt: number): void;
  /** Events with `ts >= since`, and the latest `ts` of all (null when none). */
  stats(projectId: number, since: number): Promise<{ events: number; last_event_at: number | null }>;
}

/* eslint-disable @typescript-eslint/no-explicit-any */
export function createAnalyticsRepo(db: Db, opts: { errorEvents?: ErrorEventsReader; captures?: CaptureEventStore } = {}) {
  // Error events (session links) are read where they are stored: SQLite, or ClickHouse (issue 20).
  const errorEvents = opts.errorEvents ?? createSqliteErrorEventsReader(db);
  const eventStore = opts.captures;
  const s = {
    insertEvent: db.prepare('INSERT INTO capture_events (project_id, ts, event, distinct_id, session_id, pathname, uuid, properties, received_at) VALUES (?, ?, ?, ?, ?, ?, ?, ?, ?)'),
    personOf: db.prepare('SELECT d.person_id, p.identified FROM analytics_distinct_ids d JOIN analytics_persons p ON p.id = d.person_id WHERE d.project_id = ? AND d.distinct_id = ?'),
    moveIds: db.prepare('UPDATE analytics_distinct_ids SET person_id = ? WHERE project_id = ? AND person_id = ?'),
    // The covering index gives ties in (distinct_id, source, medium, campaign) order; stated so it is a rule.
    touches: db.prepare('SELECT distinct_id, ts, source, medium, campaign FROM analytics_touches WHERE project_id = ? AND ts >= ? AND ts <= ? ORDER BY ts, distinct_id, source, medium, campaign').raw(true),
    touchDays: db.prepare('SELECT day, touches FROM analytics_touch_days WHERE project_id = ? AND day >= ? AND day <= ? ORDER BY day').raw(true),
    bumpIdentity: db.prepare('INSERT INTO analytics_identity_epoch (project_id, epoch) VALUES (?, 1) ON CONFLICT (project_id) DO UPDATE SET epoch = epoch + 1'),
    sessionsOfPage: db.prepare('SELECT session_id FROM analytics_session_pages WHERE project_id = ? AND pathname = ? AND last_ts >= ? ORDER BY session_id'),
    sessionsByReplay: db.prepare('SELECT session_id FROM analytics_sessions WHERE project_id = ? AND replay_id = ?'),
    sessionRow: db.prepare('SELECT * FROM analytics_sessions WHERE project_id = ? AND session_id = ?'),
    sessionIds: db.prepare(`SELECT i.distinct_id, m.person_id, p.identified FROM analytics_session_ids i
      LEFT JOIN analytics_distinct_ids m ON m.project_id = i.project_id AND m.distinct_id = i.distinct_id
      LEFT JOIN analytics_persons p ON p.id = m.person_id WHERE i.project_id = ? AND i.session_id = ? ORDER BY i.distinct_id`),
    sessionsInWindow: db.prepare('SELECT session_id FROM analytics_sessions WHERE project_id = ? AND last_ts >= ? AND first_ts <= ?'),
    replayOfEvent: db.prepare(`SELECT replay_id FROM replays WHERE project_id = ? AND EXISTS (SELECT 1 FROM json_each(replays.error_ids) WHERE value = ?)`),
    replayErrors: db.prepare('SELECT error_ids FROM replays WHERE project_id = ? AND replay_id = ?'),
    // Two statements: capture events are telemetry, persons and sessions control data (PostgreSQL when SIGHTLINE_DATABASE_URL is set).
    eventStats: db.prepare(`SELECT (SELECT COUNT(*) FROM capture_events WHERE project_id = @p AND ts >= @x) AS events,
      (SELECT MAX(ts) FROM capture_events WHERE project_id = @p) AS last_event_at`),
    // Persons and sessions (the events' counts come from eventStats or the event store).
    statsNoEvents: db.prepare(`SELECT (SELECT COUNT(*) FROM analytics_persons WHERE project_id = @p) AS persons,
      (SELECT COUNT(*) FROM analytics_persons WHERE project_id = @p AND identified = 1) AS identified,
      (SELECT COUNT(*) FROM analytics_sessions WHERE project_id = @p AND last_ts >= @x) AS sessions`),
    // Two statements: deployments are control data (PostgreSQL when SIGHTLINE_DATABASE_URL is set), error events telemetry.
    releaseDeployed: db.prepare('SELECT EXISTS (SELECT 1 FROM deployments WHERE project_id = @p AND version = @x) AS known'),
    personDistinctIds: db.prepare('SELECT distinct_id FROM analytics_distinct_ids WHERE project_id = ? AND person_id = ? ORDER BY distinct_id'),
  };

  const personKeys = personKeysOf(db);
  const personIndex = personIndexOf(db);

  const touchDays = touchDayStatements(db);
  const interner = keyInterner(db);
  /** `revenue_keys` strings by id (shared per database handle, revenue-rollup.ts). */
  const keys = keyStringsOf(db);

  function personOf(pid: number, distinctId: string): { person_id: number; identified: number } | undefined {
    return s.personOf.get(pid, distinctId) as any;
  }

  /*
   * A batch's writes go in multi-row statements and its reads are made once (multi-row.ts): with
   * this state in PostgreSQL each statement is a round trip made while the batch holds the write
   * lock (bench/posthog-ingest.ts: about 165 per 100-event batch when each row had its own).
   */
  const st = {
    personsOf: inList(db, (marks) => `SELECT d.distinct_id, d.person_id, p.identified FROM analytics_distinct_ids d JOIN analytics_persons p ON p.id = d.person_id
      WHERE d.project_id = ? AND d.distinct_id IN (${marks})`),
    // RETURNING: the new ids, taken in the order of the rows (ascending: AUTOINCREMENT, an identity column).
    newPersons: multiRow(db, 'INSERT INTO analytics_persons (project_id, identified, created_at)', 3, 'RETURNING id'),
    mapIds: multiRow(db, 'INSERT INTO analytics_distinct_ids (project_id, distinct_id, person_id)', 3, 'ON CONFLICT (project_id, distinct_id) DO UPDATE SET person_id = excluded.person_id'),
    identify: inList(db, (marks) => `UPDATE analytics_persons SET identified = 1 WHERE project_id = ? AND id IN (${marks})`),
    deletePersons: inList(db, (marks) => `DELETE FROM analytics_persons WHERE project_id = ? AND id IN (${marks})`),
    touches: multiRow(db, 'INSERT INTO analytics_touches (project_id, distinct_id, ts, source, medium, campaign, referrer)', 7),
    sessions: multiRow(db, 'INSERT INTO analytics_sessions (project_id, session_id, first_ts, last_ts, events, pageviews, replay_id)', 7,
      `ON CONFLICT (project_id, session_id) DO UPDATE SET first_ts = MIN(first_ts, excluded.first_ts), last_ts = MAX(last_ts, excluded.last_ts),
        events = events + excluded.events, pageviews = pageviews + excluded.pageviews, replay_id = COALESCE(excluded.replay_id, replay_id)`),
    sessionIds: multiRow(db, 'INSERT OR IGNORE INTO analytics_session_ids (project_id, session_id, distinct_id)', 3),
    sessionPages: multiRow(db, 'INSERT INTO analytics_session_pages (project_id, pathname, session_id, last_ts)', 4, 'ON CONFLICT (project_id, pathname, session_id) DO UPDATE SET last_ts = MAX(last_ts, excluded.last_ts)'),
  };
  const runAll = (rows: readonly unknown[][], f: ReturnType<typeof multiRow>) => f(rows, (q, args) => q.run(...args));

  /**
   * The identity events of a batch ($identify, $create_alias: spec, merges of anonymous ids into a
   * person, refused when the source is already identified; identify() alone marks the person
   * identified), in order, on the persons of the batch's ids read once; then written at once. New
   * persons get the ids one insert each would give (AUTOINCREMENT, an identity column: never reused).
   */
  function identities(pid: number, events: readonly CaptureEvent[], now: number): { refused: number; changed: boolean } {
    const involved = new Set<string>();
    for (const e of events) {
      if (e.merge_from) involved.add(e.distinct_id).add(e.merge_from);
      else if (e.event === '$identify') involved.add(e.distinct_id);
    }
    if (!involved.size) return { refused: 0, changed: false };
    /** Person of each involved distinct id (one with a person row), as the batch moves them; and the reverse. */
    const personOfId = new Map<string, number>();
    const idsOf = new Map<number, Set<string>>();
    const identified = new Map<number, boolean>();
    const setPerson = (d: string, p: number) => {
      const was = personOfId.get(d);
      if (was !== undefined) idsOf.get(was)!.delete(d);
      personOfId.set(d, p);
      let l = idsOf.get(p);
      if (!l) idsOf.set(p, (l = new Set()));
      l.add(d);
    };
    st.personsOf([...involved], (q, part) => {
      for (const [d, p, i] of q.raw(true).all(pid, ...part) as [string, number, number][]) {
        setPerson(d, p);
        identified.set(p, !!i);
      }
    });
    // New persons are -1, -2, … until inserted; `moved`: a merged person's ids went to another person.
    let created = 0;
    const mapped = new Set<string>();
    const toIdentify = new Set<number>();
    const moved = new Map<number, number>();
    const deleted = new Set<number>();
    const identify = (p: number) => {
      identified.set(p, true);
      toIdentify.add(p);
    };
    const newPerson = () => {
      const p = -++created;
      identified.set(p, true);
      return p;
    };
    const mapId = (d: string, p: number) => {
      setPerson(d, p);
      mapped.add(d);
    };
    const merge = (target: string, source: string): MergeOutcome => {
      const pt = personOfId.get(target);
      const ps = personOfId.get(source);
      if (pt !== undefined && pt === ps) {
        identify(pt);
        return 'noop';
      }
      if (ps !== undefined && identified.get(ps)) {
        // The source already belongs to an identified person: never fold one known user into another.
        if (pt === undefined) mapId(target, newPerson());
        else identify(pt);
        return 'refused_identified';
      }
      if (pt !== undefined && ps !== undefined) {
        for (const d of [...(idsOf.get(ps) ?? [])]) setPerson(d, pt);
        moved.set(ps, pt);
        deleted.add(ps);
        identify(pt);
        return 'merged';
      }
      if (pt !== undefined) {
        mapId(source, pt);
        identify(pt);
        return 'linked';
      }
      if (ps !== undefined) {
        mapId(target, ps);
        identify(ps);
        return 'linked';
      }
      const p = newPerson();
      mapId(target, p);
      mapId(source, p);
      return 'linked';
    };
    let refused = 0;
    for (const e of events) {
      if (e.merge_from) {
        if (merge(e.distinct_id, e.merge_from) === 'refused_identified') refused++;
      } else if (e.event === '$identify') {
        const p = personOfId.get(e.distinct_id);
        if (p !== undefined) identify(p);
        else mapId(e.distinct_id, newPerson());
      }
    }
    const ids: number[] = [];
    st.newPersons(Array.from({ length: created }, () => [pid, 1, now]), (q, args) => {
      for (const id of (q.all(...args) as { id: number }[]).map((r) => Number(r.id)).sort((x, y) => x - y)) ids.push(id);
    });
    const real = (p: number) => (p < 0 ? ids[-p - 1]! : p);
    // Ids of merged persons not in the batch follow them to where their person ended.
    for (const ps of moved.keys()) {
      if (ps < 0) continue;
      let to = moved.get(ps)!;
      while (moved.has(to)) to = moved.get(to)!;
      s.moveIds.run(real(to), pid, ps);
    }
    runAll([...mapped].map((d) => [pid, d, real(personOfId.get(d)!)]), st.mapIds);
    st.identify([...toIdentify].filter((p) => p > 0 && !deleted.has(p)), (q, part) => q.run(pid, ...part));
    st.deletePersons([...deleted].map(real), (q, part) => q.run(pid, ...part));
    return { refused, changed: true };
  }

  return {
    /** Store one batch of capture events (call inside a transaction). Returns merges refused. */
    ingest(projectId: string, events: readonly CaptureEvent[], now: number): { stored: number; refusedMerges: number; identityChanged: boolean } {
      const pid = Number(projectId);
      const sessions = new Map<string, { first: number; last: number; events: number; pageviews: number; replay: string | null; ids: Set<string>; pages: Map<string, number> }>();
      const touches: TouchInput[] = [];
      const touchRows: unknown[][] = [];
      if (eventStore) eventStore.add(pid, events, now);
      else for (const e of events) s.insertEvent.run(pid, e.ts, e.event, e.distinct_id, e.session_id, e.pathname, e.uuid, JSON.stringify(e.properties), now);
      const { refused, changed: identityChanged } = identities(pid, events, now);
      for (const e of events) {
        const t = touchOf(e);
        if (t) {
          touchRows.push([pid, e.distinct_id, e.ts, t.source, t.medium, t.campaign, e.referrer]);
          touches.push({ ts: e.ts, distinct_id: e.distinct_id, source: t.source, medium: t.medium, campaign: t.campaign });
        }
        if (e.session_id) {
          let ss = sessions.get(e.session_id);
          if (!ss) sessions.set(e.session_id, (ss = { first: e.ts, last: e.ts, events: 0, pageviews: 0, replay: null, ids: new Set(), pages: new Map() }));
          ss.first = Math.min(ss.first, e.ts);
          ss.last = Math.max(ss.last, e.ts);
          ss.events++;
          if (e.event === '$pageview') ss.pageviews++;
          if (e.replay_id) ss.replay = e.replay_id;
          ss.ids.add(e.distinct_id);
          if (e.merge_from) ss.ids.add(e.merge_from);
          if (e.pathname && (e.event === '$pageview' || e.event === '$exception')) ss.pages.set(e.pathname, Math.max(ss.pages.get(e.pathname) ?? 0, e.ts));
        }
      }
      runAll(touchRows, st.touches);
      const sessionRows: unknown[][] = [];
      const idRows: unknown[][] = [];
      const pageRows: unknown[][] = [];
      for (const [id, ss] of sessions) {
        sessionRows.push([pid, id, ss.first, ss.last, ss.events, ss.pageviews, ss.replay]);
        for (const d of ss.ids) idRows.push([pid, id, d]);
        for (const [p, ts] of ss.pages) pageRows.push([pid, p, id, ts]);
      }
      runAll(sessionRows, st.sessions);
      runAll(idRows, st.sessionIds);
      runAll(pageRows, st.sessionPages);
      // The packed touch days (migration 043) in the same transaction as the touch rows.
      if (touches.length) appendTouches(touchDays, interner.session(), pid, touches);
      if (identityChanged) s.bumpIdentity.run(pid);
      return { stored: events.length, refusedMerges: refused, identityChanged };
    },
    /** Touches in [from, to] grouped by person key, each list sorted by time. */
    touchesByPerson(projectId: string, from: number, to: number): Map<string, Touch[]> {
      const pid = Number(projectId);
      const persons = personKeys(pid);
      const out = new Map<string, Touch[]>();
      for (const [d, ts, source, medium, campaign] of s.touches.all(pid, from, to) as [string, number, string | null, string | null, string | null][]) {
        const person = persons.get(d) ?? `d:${d}`;
        const t = { ts, source, medium, campaign };
        const l = out.get(person);
        if (l) l.push(t);
        else out.set(person, [t]);
      }
      return out;
    },
    /**
     * Touches in [from, to] with a value for `dim`, as attribution-fast.ts takes them, from the packed
     * touch days (migration 043): person indexes of `personIndexOf` (person of the distinct id, else
     * `d:<distinct id>`), ties in the order of touchesByPerson. The arrays come from `scratch`
     * (attribution-fast.ts Scratch) when given.
     */
    packedTouches(projectId: string, from: number, to: number, dim: 'source' | 'medium' | 'campaign', scratch: ScratchArrays = noScratch): PackedTouches {
      const pid = Number(projectId);
      const px = personIndex(pid);
      const blobs = s.touchDays.all(pid, Math.floor(from / 86_400_000) * 86_400_000, to) as [number, Buffer][];
      const ks = keys(pid);
      const kp = keyPersons(px, ks, pid);
      const slot = dim === 'source' ? 2 : dim === 'medium' ? 3 : 4;
      let cap = 0;
      for (const [, blob] of blobs) cap += blob.byteLength / TOUCH_BYTES;
      const ts = scratch.f64('touches.ts', cap);
      const person = scratch.i32('touches.person', cap);
      const valueId = scratch.i32('touches.valueId', cap);
      // Key ids of each kept touch (distinct id and the three values), for ties.
      const ids = scratch.i32('touches.ids', cap * 4);
      // Dense value index per key id of this dimension: -1 not seen yet, -2 empty (no value).
      const dense = scratch.i32('touches.dense', ks.length).fill(-1);
      const values: string[] = [];
      let n = 0;
      for (const [day, blob] of blobs) {
        // An int32 view (5 int32 per touch, layout in touch-days.ts) on the blob itself, each its own
        // aligned allocation; on an aligned copy otherwise.
        const u8 = blob.byteOffset % 4 === 0 ? blob : new Uint8Array(blob);
        const i32 = new Int32Array(u8.buffer, u8.byteOffset, u8.byteLength >> 2);
        const count = blob.byteLength / TOUCH_BYTES;
        const full = day >= from && day + 86_400_000 - 1 <= to;
        for (let k = 0; k < count; k++) {
          const o = k * 5;
          const v = i32[o + slot]!;
          if (v < 0) continue;
          const t = day + (i32[o]! >>> 0);
          if (!full && (t < from || t > to)) continue;
          let dv = dense[v]!;
          if (dv === -1) {
            const value = ks[v]!.slice(2);
            dense[v] = dv = value ? values.push(value) - 1 : -2;
          }
          if (dv === -2) continue;
          const d = i32[o + 1]!;
          const mp = kp.mapped(d);
          ts[n] = t;
          person[n] = mp >= 0 ? mp : kp.own(d);
          valueId[n] = dv;
          ids[n * 4] = d;
          ids[n * 4 + 1] = i32[o + 2]!;
          ids[n * 4 + 2] = i32[o + 3]!;
          ids[n * 4 + 3] = i32[o + 4]!;
          n++;
        }
      }
      // Key strings compare as their texts do (one prefix per kind); no value (-1) first, as NULL in SQL.
      const cmp = (x: number, y: number) => (x === y ? 0 : x < 0 ? -1 : y < 0 ? 1 : ks[x]! < ks[y]! ? -1 : 1);
      return {
        n,
        ts: ts.subarray(0, n),
        person: person.subarray(0, n),
        valueId: valueId.subarray(0, n),
        values,
        tie: (a, b) => cmp(ids[a * 4]!, ids[b * 4]!) || cmp(ids[a * 4 + 1]!, ids[b * 4 + 1]!) || cmp(ids[a * 4 + 2]!, ids[b * 4 + 2]!) || cmp(ids[a * 4 + 3]!, ids[b * 4 + 3]!),
      };
    },
    person(projectId: string, distinctId: string): { id: string; identified: boolean; distinct_ids: string[] } | null {
      const p = personOf(Number(projectId), distinctId);
      if (!p) return null;
      const ids = (s.personDistinctIds.all(Number(projectId), p.person_id) as { distinct_id: string }[]).map((r) => r.distinct_id);
      return { id: String(p.person_id), identified: !!p.identified, distinct_ids: ids };
    },
    /** A session with its distinct ids, person keys, identified flag, linked replay and error event ids. */
    async session(projectId: string, sessionId: string): Promise<{ session_id: string; first_ts: number; last_ts: number; replay_id: string | null; people: string[]; identified: boolean; error_event_ids: string[] } | null> {
      const pid = Number(projectId);
      const row = s.sessionRow.get(pid, sessionId) as any;
      if (!row) return null;
      const ids = s.sessionIds.all(pid, sessionId) as { distinct_id: string; person_id: number | null; identified: number | null }[];
      const errors = new Set<string>();
      for (const e of await errorEvents.linked(pid, { window: { from: row.first_ts - 3600_000, to: row.last_ts + 3600_000 } })) {
        if (errorEventSession(e) === sessionId || (row.replay_id && errorEventReplay(e) === row.replay_id)) errors.add(e.event_id);
      }
      // The Sentry replay of the session lists the error events it saw.
      const replay = row.replay_id ? (s.replayErrors.get(pid, row.replay_id) as { error_ids: string } | undefined) : undefined;
      if (replay) for (const id of JSON.parse(replay.error_ids) as string[]) errors.add(id);
      return {
        session_id: sessionId,
        first_ts: row.first_ts,
        last_ts: row.last_ts,
        replay_id: row.replay_id,
        people: [...new Set(ids.map((i) => (i.person_id !== null ? `p:${i.person_id}` : `d:${i.distinct_id}`)))],
        identified: ids.some((i) => !!i.identified),
        error_event_ids: [...errors].sort(),
      };
    },
    /** Sessions linked to error events: by a session tag on the event, else through the event's replay. */
    async sessionsOfErrors(projectId: string, q: { groupId?: string; release?: string; window?: { from: number; to: number }; since: number }): Promise<{ errorEvents: number; sessions: string[] }> {
      const pid = Number(projectId);
      const rows = await errorEvents.linked(
        pid,
        q.groupId !== undefined ? { groupId: q.groupId, since: q.since } : q.release !== undefined ? { release: q.release, since: q.since } : { window: q.window! },
      );
      const sessions = new Set<string>();
      for (const e of rows) {
        const sid = errorEventSession(e);
        if (sid) sessions.add(sid);
        const replay = errorEventReplay(e) ?? (s.replayOfEvent.get(pid, e.event_id) as { replay_id: string } | undefined)?.replay_id;
        if (replay) for (const r of s.sessionsByReplay.all(pid, replay) as { session_id: string }[]) sessions.add(r.session_id);
      }
      return { errorEvents: rows.length, sessions: [...sessions] };
    },
    /** Person keys of a session's distinct ids and whether any of them is an identified person. */
    sessionPeople(projectId: string, sessionId: string): { people: string[]; identifiedPeople: string[] } {
      const ids = s.sessionIds.all(Number(projectId), sessionId) as { distinct_id: string; person_id: number | null; identified: number | null }[];
      const key = (i: (typeof ids)[number]) => (i.person_id !== null ? `p:${i.person_id}` : `d:${i.distinct_id}`);
      return { people: [...new Set(ids.map(key))], identifiedPeople: [...new Set(ids.filter((i) => !!i.identified).map(key))] };
    },
    async releaseKnown(projectId: string, version: string): Promise<boolean> {
      const args = { p: Number(projectId), x: version };
      return !!(s.releaseDeployed.get(args) as { known: number }).known || (await errorEvents.releaseSeen(Number(projectId), version));
    },
    sessionsOfPage(projectId: string, pathname: string, since: number): string[] {
      return (s.sessionsOfPage.all(Number(projectId), pathname, since) as { session_id: string }[]).map((r) => r.session_id);
    },
    /** Events since `since` and the latest event's time (from the event store when there is one), persons, identified persons, sessions active since `since`. */
    async stats(projectId: string, since: number): Promise<{ events: number; persons: number; identified: number; sessions: number; last_event_at: number | null }> {
      const args = { p: Number(projectId), x: since };
      const ev = eventStore ? await eventStore.stats(args.p, since) : (s.eventStats.get(args) as { events: number; last_event_at: number | null });
      const rest = s.statsNoEvents.get(args) as { persons: number; identified: number; sessions: number };
      return { events: ev.events, persons: rest.persons, identified: rest.identified, sessions: rest.sessions, last_event_at: ev.last_event_at };
    },
  };
}

/** The capture session an error event belongs to: `posthog_session_id` / `$session_id` / `session_id` tag or context. */
function errorEventSession(e: { tags: string; payload?: string }): string | null {
  try {
    const tags = JSON.parse(e.tags);
    const pick = (o: any) => (o && typeof o === 'object' ? (o.posthog_session_id ?? o.$session_id ?? o.session_id) : undefined);
    const fromTags = Array.isArray(tags) ? (tags.find((t: any) => Array.isArray(t) && ['posthog_session_id', '$session_id', 'session_id'].includes(t[0]))?.[1]) : pick(tags);
    if (typeof fromTags === 'string' && fromTags) return fromTags;
  } catch {
    /* tags are always JSON; ignore a bad row */
  }
  return null;
}

function errorEventReplay(e: { payload?: string }): string | null {
  if (!e.payload) return null;
  try {
    const p = JSON.parse(e.payload);
    const r = p?.contexts?.replay?.replay_id ?? p?.tags?.replayId;
    return typeof r === 'string' ? r.replace(/-/g, '').toLowerCase() : null;
  } catch {
    return null;
  }
}

export type AnalyticsRepo = ReturnType<typeof createAnalyticsRepo>;
