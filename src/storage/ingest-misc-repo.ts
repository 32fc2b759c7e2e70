import type { Db } from './db.js';
import { postgresOf } from './postgres/split-db.js';
import type { SessionRecord } from '../domain/telemetry-types.js';

export interface ReplayUpsert {
  replay_id: string;
  timestamp_ms: number;
  started_ms: number;
  urls: string[];
  error_ids: string[];
  trace_ids: string[];
  environment: string;
  release: string;
  user: unknown;
}

export interface ReplayRow {
  replay_id: string;
  started_ms: number;
  ended_ms: number;
  segments: number;
  urls: string[];
  error_ids: string[];
  trace_ids: string[];
  environment: string;
  release: string;
}

export interface CheckInRow {
  check_in_id: string;
  monitor_slug: string;
  status: string;
  duration_s: number | null;
  environment: string;
  release: string;
  payload: unknown;
}

/* eslint-disable @typescript-eslint/no-explicit-any */
const replayFromRow = (r: any): ReplayRow => ({
  replay_id: r.replay_id,
  started_ms: r.started_ms,
  ended_ms: r.ended_ms,
  segments: r.segments,
  urls: JSON.parse(r.urls),
  error_ids: JSON.parse(r.error_ids),
  trace_ids: JSON.parse(r.trace_ids),
  environment: r.environment,
  release: r.release,
});

const union = (a: string, b: string[]) => JSON.stringify([...new Set([...(JSON.parse(a) as string[]), ...b])].slice(0, 1000));

/** Sessions (release health), session replays, cron check-ins and ingest outcomes (dropped counts). */
export function createIngestMiscRepo(db: Db) {
  // PostgreSQL's BIGINT columns refuse a fraction that SQLite keeps as REAL: a count an SDK sent as a
  // fraction (session errors, a bucket's or client report's quantity, a segment id) is truncated
  // there, so one malformed item does not fail its envelope's write. SQLite keeps what was sent.
  const int = postgresOf(db) ? Math.trunc : (v: number) => v;
  const s = {
    session: db.prepare(`INSERT INTO sessions (project_id, session_id, distinct_id, status, errors, started_ms, duration_ms, release, environment, updated_ms)
      VALUES (@pid, @sid, @did, @status, @errors, @started, @duration, @release, @environment, @now)
      ON CONFLICT (project_id, session_id) DO UPDATE SET status = excluded.status, errors = MAX(errors, excluded.errors),
      duration_ms = COALESCE(excluded.duration_ms, duration_ms), updated_ms = excluded.updated_ms`),
    aggregate: db.prepare(`INSERT INTO session_aggregates (project_id, started_ms, release, environment, exited, errored, abnormal, crashed, received_ms)
      VALUES (?, ?, ?, ?, ?, ?, ?, ?, ?)`),
    replayGet: db.prepare('SELECT * FROM replays WHERE project_id = ? AND replay_id = ?'),
    replayInsert: db.prepare(`INSERT INTO replays (project_id, replay_id, started_ms, ended_ms, segments, urls, error_ids, trace_ids, environment, release, user_json, updated_ms)
      VALUES (?, ?, ?, ?, 0, ?, ?, ?, ?, ?, ?, ?)`),
    replayUpdate: db.prepare(`UPDATE replays SET started_ms = MIN(started_ms, ?), ended_ms = MAX(ended_ms, ?), urls = ?, error_ids = ?, trace_ids = ?, updated_ms = ?
      WHERE project_id = ? AND replay_id = ?`),
    recording: db.prepare(`INSERT OR REPLACE INTO replay_recordings (project_id, replay_id, segment_id, payload, received_ms) VALUES (?, ?, ?, ?, ?)`),
    replaySegments: db.prepare(`UPDATE replays SET segments = (SELECT COUNT(*) FROM replay_recordings WHERE project_id = ? AND replay_id = ?) WHERE project_id = ? AND replay_id = ?`),
    replayForError: db.prepare(`SELECT r.* FROM replays r, json_each(r.error_ids) e WHERE r.project_id = ? AND e.value = ? LIMIT 1`),
    replaysInWindow: db.prepare(`SELECT * FROM replays WHERE project_id = ? AND ended_ms >= ? AND started_ms <= ? ORDER BY started_ms DESC LIMIT 200`),
    checkIn: db.prepare(`INSERT OR REPLACE INTO check_ins (project_id, check_in_id, monitor_slug, status, duration_s, environment, release, payload, received_ms)
      VALUES (?, ?, ?, ?, ?, ?, ?, ?, ?)`),
    checkIns: db.prepare('SELECT * FROM check_ins WHERE project_id = ? AND monitor_slug = ? ORDER BY received_ms DESC LIMIT ?'),
    outcome: db.prepare(`INSERT INTO ingest_outcomes (project_id, minute, category, reason, quantity) VALUES (?, ?, ?, ?, ?)
      ON CONFLICT (project_id, minute, category, reason) DO UPDATE SET quantity = quantity + excluded.quantity`),
    outcomes: db.prepare('SELECT category, reason, SUM(quantity) AS quantity FROM ingest_outcomes WHERE project_id = ? AND minute >= ? GROUP BY category, reason'),
  };

  return {
    recordSessions: db.transaction((projectId: string, sessions: SessionRecord[], now: number) => {
      const pid = Number(projectId);
      for (const x of sessions) {
        if (x.sid) {
          s.session.run({ pid, sid: x.sid, did: x.distinct_id, status: x.status, errors: int(x.errors), started: x.started_ms, duration: x.duration_ms, release: x.release, environment: x.environment, now });
        } else {
          const q = int(x.quantity);
          s.aggregate.run(pid, x.started_ms, x.release, x.environment, x.status === 'exited' ? q : 0, x.status === 'errored' ? q : 0, x.status === 'abnormal' ? q : 0, x.status === 'crashed' ? q : 0, now);
        }
      }
    }),
    upsertReplay(projectId: string, r: ReplayUpsert, now: number): void {
      const pid = Number(projectId);
      const existing = s.replayGet.get(pid, r.replay_id) as any;
      if (!existing) {
        s.replayInsert.run(pid, r.replay_id, r.started_ms, r.timestamp_ms, JSON.stringify(r.urls), JSON.stringify(r.error_ids), JSON.stringify(r.trace_ids), r.environment, r.release, r.user ? JSON.stringify(r.user) : null, now);
      } else {
        s.replayUpdate.run(r.started_ms, r.timestamp_ms, union(existing.urls, r.urls), union(existing.error_ids, r.error_ids), union(existing.trace_ids, r.trace_ids), now, pid, r.replay_id);
      }
    },
    addReplayRecording(projectId: string, replayId: string, segmentId: number, payload: Buffer, now: number): void {
      const pid = Number(projectId);
      s.recording.run(pid, replayId, int(segmentId), payload, now);
      s.replaySegments.run(pid, replayId, pid, replayId);
    },
    replay(projectId: string, replayId: string): ReplayRow | undefined {
      const r = s.replayGet.get(Number(projectId), replayId);
      return r ? replayFromRow(r) : undefined;
    },
    replayForErrorEvent(projectId: string, eventId: string): ReplayRow | undefined {
      const r = s.replayForError.get(Number(projectId), eventId);
      return r ? replayFromRow(r) : undefined;
    },
    replaysInWindow(projectId: string, fromMs: number, toMs: number): ReplayRow[] {
      return s.replaysInWindow.all(Number(projectId), fromMs, toMs).map(replayFromRow);
    },
    recordCheckIn(projectId: string, c: CheckInRow, now: number): void {
      s.checkIn.run(Number(projectId), c.check_in_id, c.monitor_slug, c.status, c.duration_s, c.environment, c.release, JSON.stringify(c.payload), now);
    },
    checkIns(projectId: string, monitorSlug: string, limit: number): CheckInRow[] {
      return (s.checkIns.all(Number(projectId), monitorSlug, limit) as any[]).map((r) => ({ ...r, payload: JSON.parse(r.payload) }));
    },
    recordOutcome(projectId: string, nowMs: number, category: string, reason: string, quantity: number): void {
      if (quantity > 0) s.outcome.run(Number(projectId), Math.floor(nowMs / 60_000), category, reason, int(quantity));
    },
    outcomesSince(projectId: string, sinceMs: number): { category: string; reason: string; quantity: number }[] {
      return s.outcomes.all(Number(projectId), Math.floor(sinceMs / 60_000)) as { category: string; reason: string; quantity: number }[];
    },
  };
}

export type IngestMiscRepo = ReturnType<typeof createIngestMiscRepo>;
