import type { Migration } from './index.js';
import { userKeySql } from '../../domain/errors/users.js';

/**
 * Issue 19 (reads that stay flat), error reads:
 *
 * - `error_events_group` gains the event's user key (the expression error-groups-repo counts
 *   distinct users with): the in-window event and user counts of errors.list / errors.get read the
 *   index alone instead of every event row of the window (rows hold the payload, about 1 KB each).
 * - `error_events_received`: events.latency selects events by received time; without it every
 *   event of the project was read. It holds what the read needs (source, event time, service,
 *   environment), so the window is one index range. Received time only grows: the entries append.
 */
export const m042ErrorReadIndexes: Migration = {
  version: 42,
  name: 'covering indexes for error window counts and ingestion latency',
  sql: `
DROP INDEX error_events_group;
CREATE INDEX error_events_group ON error_events(project_id, group_id, timestamp_ms, ${userKeySql('user_json')});
CREATE INDEX error_events_received ON error_events(project_id, received_ms, source, timestamp_ms, service_name, environment);
`,
};
