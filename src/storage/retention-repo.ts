import { postgresOf } from './postgres/split-db.js';
import { CONTROL_TABLES } from './postgres/control-tables.js';
import type { Db } from './db.js';
import { registerObsIdKey } from './obs-ids.js';
import type { RetentionKind } from '../domain/retention/policy.js';
import { HOUR_MS, ROLLUP_LEVELS } from './metric-rollups.js';
import { LOG_COUNT_TABLES } from './migrations/004-log-counts.js';
import { rowDimsIdSql } from './log-dims.js';
import { LOG_HTTP_METHOD_SQL, logTemplateSql } from './attr-keysets.js';
import { HOUR_SQL } from './migrations/046-error-group-hours.js';
import { LatencyTally, latencyTallyWriter } from './error-latency.js';
import { userKeyOf, userKeySql } from '../domain/errors/users.js';

const safeParse = (s: string): unknown => {
  try {
    return JSON.parse(s);
  } catch {
    return null;
  }
};
import { ftsAttrsText } from './log-fts.js';
import { operationRollupExpiry } from './operation-rollups.js';

/**
 * Where each kind of telemetry lives, for expiry: the table, its per-project time column (indexed
 * with project_id first) and the unit of that column, and the key that names a row. A domain that
 * adds telemetry tables adds a target here; control tables are never listed.
 */
export interface ExpiryTarget {
  kind: RetentionKind;
  table: string;
  time: string;
  /** Milliseconds per unit of `time` (1 for ms columns, 60,000 for epoch minutes). */
  unitMs: number;
  /**
   * Cutoffs are rounded down to a multiple of this many ms first (the metric rollup levels: every
   * level then holds the same whole hours, so a coarse row never outlives the minutes it sums).
   */
  alignMs?: number;
  /** Columns naming a row (`rowid` for rowid tables). */
  key: readonly string[];
  /**
   * Rows of other tables that go with the deleted ones (full-text index entries, rollup counts): `run`
   * before the delete, `after` once the rows are gone, in the batch's transaction.
   */
  before?: (db: Db) => { run(keys: unknown[][]): void; after?(): void };
}

/** What goes with expiring AI observations: their entries in the id lookup levels (migration 041). */
const obsIdsExpiry = (db: Db) => {
  registerObsIdKey(db);
  const rows = 'SELECT project_id, sl_obs_key(observation_id), id FROM agent_observations WHERE id IN (SELECT value FROM json_each(?))';
  const dels = ['agent_obs_ids_new', 'agent_obs_ids'].map((t) => db.prepare(`DELETE FROM ${t} WHERE (project_id, k, obs) IN (${rows})`));
  return {
    run(keys: unknown[][]) {
      const ids = JSON.stringify(keys.map((k) => k[0]));
      for (const d of dels) d.run(ids);
    },
  };
};

/**
 * What goes with expiring logs: their full-text rows, and their counts in the log count rollups.
 *
 * FTS5 merges segments on writes, and a contentless-delete table rewrites a whole segment once enough
 * of it is deleted (`deletemerge`): inside an expiry batch that is a stall of hundreds of ms that grows
 * with the segment. So within the batch's transaction merging is off and the table's own settings are
 * put back before it commits; the segments are merged later by ingestion's automerge (or `merge`
 * below), not in the middle of a delete batch.
 *
 * The rollup counts come off once per batch, one GROUP BY per rollup table over the batch's rows,
 * while a row in `log_counts_batch` makes the per-row delete trigger stand aside (migration 049);
 * rollup rows left at 0 are deleted.
 */
const logsExpiry = (db: Db) => {
  // Both full-text tables (migration 050): a log written before 050 has its row in logs_fts (a
  // contentless-delete table: deleted by rowid), a newer one in logs_fts2, which forgets a row only
  // when given the text it indexed (log-fts.ts ftsAttrsText, the same function the writer used).
  const FTS = ['logs_fts', 'logs_fts2'] as const;
  const inOld = db.prepare('SELECT 1 FROM logs_fts_docsize WHERE id = ?').pluck();
  const delOld = db.prepare('DELETE FROM logs_fts WHERE rowid = ?');
  const rowText = db.prepare(`SELECT body, attributes, trace_id, ${logTemplateSql('logs')} FROM logs WHERE id = ?`).raw();
  const delNew = db.prepare("INSERT INTO logs_fts2 (logs_fts2, rowid, body, attrs) VALUES ('delete', ?, ?, ?)");
  const del = (id: unknown) => {
    if (inOld.get(id)) return void delOld.run(id);
    const r = rowText.get(id) as [unknown, unknown, unknown, unknown] | undefined;
    if (r) delNew.run(id, r[0], ftsAttrsText(r[1], r[2], r[3]));
  };
  const stored = FTS.map((t) => db.prepare(`SELECT k, v FROM ${t}_config WHERE k IN ('automerge', 'deletemerge')`).raw());
  const set = (i: number, k: 'automerge' | 'deletemerge', v: unknown) => db.exec(`INSERT INTO ${FTS[i]} (${FTS[i]}, rank) VALUES ('${k}', ${Number(v)})`);
  const DEFAULTS = { automerge: 4, deletemerge: 10 } as const;
  const ids = 'l.id IN (SELECT value FROM json_each(?))';
  const counts = LOG_COUNT_TABLES.map((t) => {
    const u = t.unitMs;
    const batch = `SELECT l.project_id AS project_id, CAST(l.time_ms / ${u} AS INTEGER) * ${u} AS t, ${rowDimsIdSql('l')} AS dims${t.http ? `, ${LOG_HTTP_METHOD_SQL('l')} AS http_method` : ''},
      count(*) AS n FROM logs l WHERE ${ids} GROUP BY ${t.http ? '1, 2, 3, 4' : '1, 2, 3'}`;
    return {
      // The trigger's decrement (migrations 045, 049), once per rollup row the batch touches.
      take: db.prepare(`UPDATE ${t.table} AS c SET n = c.n - d.n FROM (${batch}) AS d
        WHERE c.project_id = d.project_id AND c.t = d.t AND c.dims = d.dims${t.http ? ' AND c.http_method = d.http_method' : ''}`),
      empty: db.prepare(`DELETE FROM ${t.table} WHERE project_id = ? AND t BETWEEN CAST(? / ${t.unitMs} AS INTEGER) * ${t.unitMs} AND ? AND n = 0`),
    };
  });
  const span = db.prepare(`SELECT project_id, min(time_ms), max(time_ms) FROM logs l WHERE ${ids} GROUP BY project_id`).raw();
  let spans: unknown[][] = [];
  const mark = db.prepare('INSERT OR IGNORE INTO log_counts_batch (on_) VALUES (1)');
  const unmark = db.prepare('DELETE FROM log_counts_batch');
  return {
    run(keys: unknown[][]) {
      const batchIds = JSON.stringify(keys.map((k) => k[0]));
      spans = span.all(batchIds) as unknown[][];
      for (const c of counts) c.take.run(batchIds);
      mark.run();
      const saved = stored.map((st): Record<'automerge' | 'deletemerge', unknown> => ({ ...DEFAULTS, ...Object.fromEntries(st.all() as [string, unknown][]) }));
      FTS.forEach((_, i) => {
        set(i, 'automerge', 0);
        set(i, 'deletemerge', 100);
      });
      try {
        for (const k of keys) del(k[0]);
      } finally {
        FTS.forEach((_, i) => {
          set(i, 'automerge', saved[i]!.automerge);
          set(i, 'deletemerge', saved[i]!.deletemerge);
        });
      }
    },
    after() {
      unmark.run();
      for (const [pid, lo, hi] of spans) for (const c of counts) c.empty.run(pid, lo, hi);
    },
  };
};

/**
 * What goes with expiring error events: their counts in the per-(group, hour, user key) tallies
 * behind the window counts of errors.list / errors.get (migration 046), taken off per batch; rows
 * left at 0 are deleted, so a user whose events of that hour have all expired is no longer counted.
 * Likewise their latency counts and sums behind events.latency (migration 055).
 */
const errorEventsExpiry = (db: Db) => {
  // Ingest keys users in JavaScript (userKeyOf), the migration's backfill in SQL: the two agree but
  // for exotic values (a number's text form), so a count the first key does not find is taken off the second's.
  const of = db
    .prepare(`SELECT group_id, ${HOUR_SQL('timestamp_ms')}, user_json, COALESCE(${userKeySql('user_json')}, ''), source, service_name, environment, received_ms, timestamp_ms
      FROM error_events WHERE project_id = ? AND event_id = ?`)
    .raw();
  const writeLatency = latencyTallyWriter(db);
  const take = db.prepare('UPDATE error_group_hour_users SET n = n - ? WHERE group_id = ? AND hour = ? AND user_key = ?');
  const empty = db.prepare('DELETE FROM error_group_hour_users WHERE group_id = ? AND hour = ? AND user_key = ? AND n <= 0');
  return {
    run(keys: unknown[][]) {
      const tally = new Map<string, [string, number, string, string, number]>();
      const lat = new LatencyTally();
      for (const k of keys) {
        const r = of.get(k[0], k[1]) as [string, number, string | null, string, string, string, string, number, number] | undefined;
        if (!r) continue;
        lat.add(Number(k[0]), r[4], r[5], r[6], r[7], r[8], -1);
        const key = (r[2] ? userKeyOf(safeParse(r[2])) : null) ?? '';
        const id = `${r[0]}\u0000${r[1]}\u0000${key}\u0000${r[3]}`;
        const t = tally.get(id);
        if (t) t[4]++;
        else tally.set(id, [r[0], r[1], key, r[3], 1]);
      }
      for (const [g, h, u, sqlKey, n] of tally.values()) {
        if (take.run(n, g, h, u).changes === 0 && sqlKey !== u) take.run(n, g, h, sqlKey);
        empty.run(g, h, u);
        if (sqlKey !== u) empty.run(g, h, sqlKey);
      }
      writeLatency(lat);
    },
  };
};

export const EXPIRY_TARGETS: ExpiryTarget[] = [
  // The hourly entry-span tallies (migration 054) lose the expiring spans in the same batch.
  { kind: 'spans', table: 'spans', time: 'start_ms', unitMs: 1, key: ['rowid'], before: operationRollupExpiry },
  // A trace chunk goes once its latest span start is past the cutoff (its spans are gone by then).
  { kind: 'spans', table: 'trace_chunks', time: 'max_start_ms', unitMs: 1, key: ['project_id', 'trace_id', 'first_rowid'] },
  { kind: 'logs', table: 'logs', time: 'time_ms', unitMs: 1, key: ['id'], before: logsExpiry },
  { kind: 'metric_points', table: 'metric_points', time: 'time_ms', unitMs: 1, key: ['rowid'] },
  // The per-hour catalogue behind metrics.list outlives the raw points (metric rollups: 400 days).
  { kind: 'metric_rollups', table: 'metric_catalog', time: 'hour', unitMs: 1, key: ['project_id', 'hour', 'metric_name', 'type', 'service_name', 'environment', 'unit'] },
  { kind: 'metric_rollups', table: 'metric_catalog_runs', time: 'hour', unitMs: 1, key: ['project_id', 'hour', 'metric_name', 'type', 'service_name', 'environment', 'unit', 'series_key', 'scope_name', 'start_ms'] },
  // Per-minute, 5-minute and hourly rollups behind metrics.timeline / inspect and the summary
  // (migrations 040, 047): 400 days too, in whole hours at every level.
  ...ROLLUP_LEVELS.flatMap((l): ExpiryTarget[] => [
    { kind: 'metric_rollups', table: l.nc, time: 'minute', unitMs: 1, alignMs: HOUR_MS, key: ['project_id', 'metric_name', 'minute', 'type', 'service_name', 'environment'] },
    { kind: 'metric_rollups', table: l.cum, time: 'minute', unitMs: 1, alignMs: HOUR_MS, key: ['project_id', 'metric_name', 'minute', 'series_key'] },
  ]),
  { kind: 'error_events', table: 'error_events', time: 'timestamp_ms', unitMs: 1, key: ['project_id', 'event_id'], before: errorEventsExpiry },
  // The ids of events kept in ClickHouse (migration 056; empty otherwise): by whole UTC days as the
  // events there go, with their hourly tallies (server.ts, expireClickHouseErrorEvents) — an id goes
  // with its event, never before it.
  { kind: 'error_events', table: 'error_event_ids', time: 'timestamp_ms', unitMs: 1, alignMs: 86_400_000, key: ['project_id', 'event_id'] },
  { kind: 'replays', table: 'replay_recordings', time: 'received_ms', unitMs: 1, key: ['project_id', 'replay_id', 'segment_id'] },
  { kind: 'replays', table: 'replays', time: 'ended_ms', unitMs: 1, key: ['project_id', 'replay_id'] },
  { kind: 'sessions', table: 'sessions', time: 'started_ms', unitMs: 1, key: ['project_id', 'session_id'] },
  { kind: 'sessions', table: 'session_aggregates', time: 'started_ms', unitMs: 1, key: ['rowid'] },
  { kind: 'check_ins', table: 'check_ins', time: 'received_ms', unitMs: 1, key: ['project_id', 'check_in_id', 'status'] },
  // AI observations and scores: the hourly rollups and session/user summaries outlive them.
  { kind: 'agent_observations', table: 'agent_observations', time: 'started_ms', unitMs: 1, key: ['id'], before: obsIdsExpiry },
  // A trace's time range goes once its latest observation is past the cutoff (they are gone by then).
  { kind: 'agent_observations', table: 'agent_obs_traces', time: 'last_ms', unitMs: 1, key: ['project_id', 'trace_id'] },
  { kind: 'agent_scores', table: 'agent_scores', time: 'started_ms', unitMs: 1, key: ['id'] },
  { kind: 'capture_events', table: 'capture_events', time: 'ts', unitMs: 1, key: ['rowid'] },
  // Ledger rows: the daily revenue rollup outlives them (revenue reads cover at most 400 days).
  { kind: 'revenue_ledger', table: 'revenue_events', time: 'occurred_at', unitMs: 1, key: ['project_id', 'id'] },
  { kind: 'ingest_outcomes', table: 'ingest_outcomes', time: 'minute', unitMs: 60_000, key: ['project_id', 'minute', 'category', 'reason'] },
];

export interface RetentionRepo {
  projects(): string[];
  settings(projectId: string): Partial<Record<RetentionKind, number>>;
  setSettings(projectId: string, days: Partial<Record<RetentionKind, number | null>>, now: number): void;
  /** Deletes at most `limit` rows of one target older than `cutoffMs`; returns how many went. */
  expireBatch(target: ExpiryTarget, projectId: string, cutoffMs: number, limit: number): number;
  /** The oldest time (ms) of a target in a project, or null when it holds nothing. */
  oldest(target: ExpiryTarget, projectId: string): number | null;
  /**
   * Whether a target's rows are in this database file (the disk budget deletes only those): not when
   * its table is a control table kept in PostgreSQL (the revenue ledger since PostgreSQL migration 5).
   */
  inFile?(target: ExpiryTarget): boolean;
  /** Bytes in use: pages holding data (free pages are reused before the file grows). */
  usedBytes(): number;
  /** Returns up to `pages` free pages to the file system (incremental auto-vacuum); how many it freed. */
  reclaim(pages: number): number;
  /** Pages on the free list now. */
  freePages(): number;
  /** Copies the write-ahead log into the database file without waiting for readers (PRAGMA wal_checkpoint(PASSIVE)). */
  checkpoint?(): void;
}

export function createRetentionRepo(db: Db, targets: readonly ExpiryTarget[] = EXPIRY_TARGETS): RetentionRepo {
  const projects = db.prepare('SELECT id FROM projects ORDER BY id').pluck();
  const settings = db.prepare('SELECT kind, days FROM retention_settings WHERE project_id = ?');
  const upsert = db.prepare('INSERT INTO retention_settings (project_id, kind, days, updated_at) VALUES (?, ?, ?, ?) ON CONFLICT (project_id, kind) DO UPDATE SET days = excluded.days, updated_at = excluded.updated_at');
  const remove = db.prepare('DELETE FROM retention_settings WHERE project_id = ? AND kind = ?');
  const perTarget = new Map(
    targets.map((t) => {
      const keys = t.key.join(', ');
      const oldestRows = `SELECT ${keys} FROM ${t.table} WHERE project_id = ? AND ${t.time} < ? ORDER BY ${t.time} LIMIT ?`;
      const oldest = db.prepare(`SELECT min(${t.time}) FROM ${t.table} WHERE project_id = ?`).pluck();
      const before = t.before?.(db);
      // The rows are named inside SQL: keys never round-trip through JavaScript, where a text key
      // holding bytes that are not UTF-8 would come back changed, match nothing, and leave a pass
      // selecting the same rows for ever. A batch reports the rows it deleted, not the rows it chose.
      const del = db.prepare(`DELETE FROM ${t.table} WHERE ${t.key.length === 1 ? t.key[0] : `(${keys})`} IN (${oldestRows})`);
      // With rows of other tables to delete first, the keys are read once and given to both (the
      // targets with such a hook are keyed by an integer id).
      const select = before && db.prepare(oldestRows).raw();
      const delKey = before && db.prepare(`DELETE FROM ${t.table} WHERE ${t.key.map((k) => `${k} = ?`).join(' AND ')}`);
      const batch = db.transaction((projectId: string, cutoff: number, limit: number) => {
        if (!select || !delKey) return del.run(projectId, cutoff, limit).changes;
        const rows = select.all(projectId, cutoff, limit) as unknown[][];
        if (!rows.length) return 0;
        before.run(rows);
        let n = 0;
        for (const r of rows) n += delKey.run(...r).changes;
        before.after?.();
        return n;
      });
      return [t, { batch, oldest }] as const;
    }),
  );
  const pg = postgresOf(db);
  const pageCount = () => db.pragma('page_count', { simple: true }) as number;
  const freePages = () => db.pragma('freelist_count', { simple: true }) as number;
  const pageSize = db.pragma('page_size', { simple: true }) as number;

  return {
    projects: () => (projects.all() as Array<string | number>).map(String),
    settings(projectId) {
      const out: Partial<Record<RetentionKind, number>> = {};
      for (const r of settings.all(projectId) as Array<{ kind: RetentionKind; days: number }>) out[r.kind] = r.days;
      return out;
    },
    setSettings: db.transaction((projectId: string, days: Partial<Record<RetentionKind, number | null>>, now: number) => {
      for (const [kind, d] of Object.entries(days)) {
        if (d === undefined) continue;
        if (d === null) remove.run(projectId, kind);
        else upsert.run(projectId, kind, d, now);
      }
    }),
    expireBatch(target, projectId, cutoffMs, limit) {
      const t = perTarget.get(target)!;
      const cut = target.alignMs ? Math.floor(cutoffMs / target.alignMs) * target.alignMs : cutoffMs;
      // The write lock first (openDatabase does so for every db.transaction; said here too for a handle
      // opened otherwise): a deferred batch reads its keys, then fails at once under a checkpoint's lock.
      return t.batch.immediate(projectId, Math.floor(cut / target.unitMs), limit) as number;
    },
    oldest(target, projectId) {
      const v = perTarget.get(target)!.oldest.get(projectId) as number | null;
      return v === null ? null : v * target.unitMs;
    },
    inFile: (target) => !pg || !CONTROL_TABLES.has(target.table),
    usedBytes: () => (pageCount() - freePages()) * pageSize,
    freePages,
    reclaim(pages) {
      const before = freePages();
      if (!before) return 0;
      db.pragma(`incremental_vacuum(${Math.max(1, Math.floor(pages))})`);
      return before - freePages();
    },
    checkpoint() {
      db.pragma('wal_checkpoint(PASSIVE)');
    },
  };
}
