import type { Migration } from './index.js';
import { userFieldSql, userKeySql } from '../../domain/errors/users.js';

/**
 * Issue 19 (reads that stay flat), error reads: the in-window `window_event_count` and
 * `window_user_count` of errors.list / errors.get counted every event of the window and its distinct
 * user (a JSON extraction per event): ~0.9 s for a page at 1M events.
 *
 * `error_group_hour_users`: per group (the `group_id` an event counted on, as stored on the event),
 * hour of event time and distinct-user key ('' for events naming nobody), how many events. Event
 * counts of a window's whole hours are the sum of `n`; its distinct users are the distinct non-empty
 * keys, which stay exact across hours and across a canonical group and its merged duplicates (a
 * union of keys, not a sum of per-hour counts). Only the two partial edge hours of a window are
 * read from events. Written once per write batch with the group tallies (src/storage/errors-repo.ts);
 * expiry of error events takes their counts off and drops rows left at 0
 * (src/storage/retention-repo.ts). Events never move between groups (merge and unmerge change
 * `merged_into` only), so the rows never need moving either.
 *
 * `error_events_group_traces`: errors.listRelatedTraces groups a group's events of the window by
 * trace id; with only `error_events_group` every event of the window was read from the table (~0.4 s
 * for a group of 80k events). This partial index holds the events with a trace id and covers the read.
 *
 * `error_events_user_id`: events.search `user.id:…` (the events of one customer) compares the
 * expression the query compiles to (src/storage/error-groups-repo.ts, EXACT_COLUMN: keep the two
 * identical, collation included), so the matches are an index range instead of every event of the window.
 * `error_events_level`: `level:…` (with `service:…` read from the index too), for the same reason —
 * a rare level (fatal) or one that matches nothing read the whole window. events.search counts matches
 * only up to a cap, so broad terms stop early on the time index; these two serve the selective ones.
 */
export const HOUR_MS = 3_600_000;

/** The hour (ms) of an event time, as `hourOf` computes it in JavaScript: floor, also for negative times. */
export const HOUR_SQL = (col: string) => `CAST(floor(${col} / ${HOUR_MS}) AS INTEGER) * ${HOUR_MS}`;
export const hourOf = (ms: number) => Math.floor(ms / HOUR_MS) * HOUR_MS;

/** Rebuilds the rows from error_events (the backfill; the scaling bench seeds with it). */
export const ERROR_GROUP_HOURS_BACKFILL = `
INSERT INTO error_group_hour_users (group_id, hour, user_key, n)
  SELECT group_id, ${HOUR_SQL('timestamp_ms')} AS h, COALESCE(${userKeySql('user_json')}, '') AS k, COUNT(*)
  FROM error_events GROUP BY group_id, h, k;
`;

export const m046ErrorGroupHours: Migration = {
  version: 46,
  name: 'per-group hourly event and distinct-user tallies of error events',
  sql: `
CREATE TABLE error_group_hour_users (
  group_id TEXT NOT NULL REFERENCES error_groups(id) ON DELETE CASCADE,
  hour INTEGER NOT NULL,
  user_key TEXT NOT NULL,
  n INTEGER NOT NULL,
  PRIMARY KEY (group_id, hour, user_key)
) WITHOUT ROWID;
${ERROR_GROUP_HOURS_BACKFILL}
CREATE INDEX error_events_group_traces ON error_events(project_id, group_id, timestamp_ms, trace_id) WHERE trace_id IS NOT NULL;
CREATE INDEX error_events_level ON error_events(project_id, level COLLATE NOCASE, timestamp_ms, service_name COLLATE NOCASE);
CREATE INDEX error_events_user_id ON error_events(project_id, ${userFieldSql('user_json', 'id')} COLLATE NOCASE, timestamp_ms);
`,
};
