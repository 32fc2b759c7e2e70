import type { Migration } from './index.js';

/**
 * events.search's free text on SQLite: a trigram index over each stored error event's message,
 * title and type, so a term of 3 or more characters (`timeout`, `"order 12345"`, `message:reset`)
 * reads the events holding all of its 3-character pieces instead of every event of the window
 * (~5.4 s at 300k events). The search keeps its exact predicate on those candidates
 * (src/storage/error-event-fts.ts): the index only narrows, it never decides an answer.
 *
 * - `error_events_fts`: contentless (`content=''`), no positions (`detail=none`) and no per-row
 *   sizes (`columnsize=0`) — only which rows hold a trigram. The trigram tokenizer folds case over
 *   all of Unicode, SQLite's lower()/LIKE over ASCII only: the index then finds a superset, which the
 *   exact predicate trims.
 * - `error_event_fts_ids`: its rowid per event (`error_events` is WITHOUT ROWID), with the project
 *   and event time so a window is cut before any event row is read.
 *
 * Kept by triggers, in the statement that inserts or deletes the event (ingest's INSERT OR IGNORE: an
 * ignored retry fires nothing; retention's DELETE; any other). Event rows are never updated. With the
 * events in ClickHouse (scale-out) `error_events` stays empty in SQLite and so do these. Without
 * `contentless_delete`, a row is deleted by giving its indexed text again, which the delete trigger
 * has (old.*). Existing events are indexed here.
 */
export const m057ErrorEventTextIndex: Migration = {
  version: 57,
  name: 'trigram index of error events (events.search free text)',
  sql: `
CREATE VIRTUAL TABLE error_events_fts USING fts5(message, title, type, content='', columnsize=0, detail=none, tokenize='trigram case_sensitive 0');
CREATE TABLE error_event_fts_ids (
  id INTEGER PRIMARY KEY,
  project_id INTEGER NOT NULL,
  event_id TEXT NOT NULL,
  timestamp_ms REAL NOT NULL
);
CREATE UNIQUE INDEX error_event_fts_ids_event ON error_event_fts_ids(project_id, event_id);
CREATE TRIGGER error_events_fts_insert AFTER INSERT ON error_events BEGIN
  INSERT INTO error_event_fts_ids (project_id, event_id, timestamp_ms) VALUES (new.project_id, new.event_id, new.timestamp_ms);
  INSERT INTO error_events_fts (rowid, message, title, type) VALUES (last_insert_rowid(), new.message, new.title, new.type);
END;
CREATE TRIGGER error_events_fts_delete AFTER DELETE ON error_events BEGIN
  INSERT INTO error_events_fts (error_events_fts, rowid, message, title, type)
    SELECT 'delete', id, old.message, old.title, old.type FROM error_event_fts_ids WHERE project_id = old.project_id AND event_id = old.event_id;
  DELETE FROM error_event_fts_ids WHERE project_id = old.project_id AND event_id = old.event_id;
END;
INSERT INTO error_event_fts_ids (project_id, event_id, timestamp_ms) SELECT project_id, event_id, timestamp_ms FROM error_events ORDER BY timestamp_ms;
INSERT INTO error_events_fts (rowid, message, title, type)
  SELECT i.id, e.message, e.title, e.type FROM error_event_fts_ids i JOIN error_events e ON e.project_id = i.project_id AND e.event_id = i.event_id ORDER BY i.id;
`,
};
