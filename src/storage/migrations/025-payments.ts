import type { Migration } from './index.js';

/**
 * Payment-provider connection per project (restricted key and webhook secret sealed with the
 * server key, never returned), backfill progress, and the provider event ids already applied
 * (replay protection and idempotency of the webhook).
 */
export const m025Payments: Migration = {
  version: 25,
  name: 'payment provider connections',
  sql: `
CREATE TABLE payment_connections (
  project_id INTEGER PRIMARY KEY,
  provider TEXT NOT NULL,
  key_sealed TEXT,
  key_hint TEXT,
  connected_at INTEGER,
  webhook_secret_sealed TEXT,
  webhook_set_at INTEGER,
  last_event_at INTEGER,
  events_received INTEGER NOT NULL DEFAULT 0,
  backfill TEXT NOT NULL DEFAULT '{"state":"idle"}'
);
CREATE TABLE payment_webhook_events (
  project_id INTEGER NOT NULL,
  event_id TEXT NOT NULL,
  type TEXT NOT NULL,
  received_at INTEGER NOT NULL,
  PRIMARY KEY (project_id, event_id)
) WITHOUT ROWID;
`,
};
