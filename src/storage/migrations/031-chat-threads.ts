import type { Migration } from './index.js';

/**
 * Chat threads and their append-only messages (spec, "Chat thread and message"): dashboard chats,
 * `ask` conversations with the in-project agent and threads mirrored from chat tools. Message
 * replays are idempotent by message id, or by source plus external message id (unique indexes).
 */
export const m031ChatThreads: Migration = {
  version: 31,
  name: 'chat threads and messages',
  sql: `
CREATE TABLE chat_threads (
  id TEXT PRIMARY KEY,
  project_id INTEGER NOT NULL REFERENCES projects(id) ON DELETE CASCADE,
  title TEXT NOT NULL,
  source TEXT NOT NULL,
  created_by TEXT NOT NULL,
  external_thread_id TEXT,
  incident_id TEXT,
  model_id TEXT,
  archived_at INTEGER,
  last_message_at INTEGER,
  message_count INTEGER NOT NULL DEFAULT 0,
  created_at INTEGER NOT NULL,
  updated_at INTEGER NOT NULL
);
CREATE INDEX chat_threads_recent ON chat_threads(project_id, updated_at);
CREATE INDEX chat_threads_incident ON chat_threads(project_id, incident_id) WHERE incident_id IS NOT NULL;
CREATE UNIQUE INDEX chat_threads_external ON chat_threads(project_id, source, external_thread_id) WHERE external_thread_id IS NOT NULL;

CREATE TABLE chat_messages (
  thread_id TEXT NOT NULL REFERENCES chat_threads(id) ON DELETE CASCADE,
  id TEXT NOT NULL,
  sequence INTEGER NOT NULL,
  role TEXT NOT NULL,
  source TEXT NOT NULL,
  text TEXT NOT NULL,
  external_message_id TEXT,
  author_name TEXT,
  author_image TEXT,
  author_user_id TEXT,
  author_key_id TEXT,
  answered_by TEXT,
  created_at INTEGER NOT NULL,
  PRIMARY KEY (thread_id, id),
  UNIQUE (thread_id, sequence)
);
CREATE UNIQUE INDEX chat_messages_external ON chat_messages(thread_id, source, external_message_id) WHERE external_message_id IS NOT NULL;
`,
};
