import type { Migration } from './index.js';

/**
 * Revenue ledger, kept subscription states, reporting currency, and a daily rollup of posted
 * amounts (by currency, plan and type) so overview reads do not scan the ledger.
 */
export const m023Revenue: Migration = {
  version: 23,
  name: 'revenue ledger',
  sql: `
CREATE TABLE revenue_events (
  project_id INTEGER NOT NULL,
  id TEXT NOT NULL,
  type TEXT NOT NULL,
  amount INTEGER NOT NULL,
  currency TEXT NOT NULL,
  occurred_at INTEGER NOT NULL,
  customer_id TEXT,
  distinct_id TEXT,
  anonymous_id TEXT,
  parent_id TEXT,
  subscription_id TEXT,
  plan TEXT,
  recurring INTEGER NOT NULL DEFAULT 0,
  status TEXT NOT NULL,
  source TEXT NOT NULL,
  customer_key TEXT,
  received_at INTEGER NOT NULL,
  PRIMARY KEY (project_id, id)
) WITHOUT ROWID;
CREATE INDEX revenue_events_time ON revenue_events(project_id, occurred_at, id);
CREATE INDEX revenue_events_people ON revenue_events(project_id, occurred_at, status, type, amount, currency, distinct_id, anonymous_id);
CREATE INDEX revenue_events_customers ON revenue_events(project_id, occurred_at, customer_key) WHERE type = 'payment' AND status = 'posted';

CREATE TABLE revenue_daily (
  project_id INTEGER NOT NULL,
  day INTEGER NOT NULL,
  currency TEXT NOT NULL,
  plan TEXT NOT NULL,
  type TEXT NOT NULL,
  amount INTEGER NOT NULL,
  n INTEGER NOT NULL,
  PRIMARY KEY (project_id, day, currency, plan, type)
) WITHOUT ROWID;

CREATE TABLE revenue_subscriptions (
  project_id INTEGER NOT NULL,
  id TEXT NOT NULL,
  effective_at INTEGER NOT NULL,
  status TEXT NOT NULL,
  mrr INTEGER NOT NULL,
  currency TEXT NOT NULL,
  customer_id TEXT,
  plan TEXT,
  source TEXT NOT NULL,
  received_at INTEGER NOT NULL,
  PRIMARY KEY (project_id, id, effective_at)
) WITHOUT ROWID;

CREATE TABLE revenue_settings (
  project_id INTEGER PRIMARY KEY,
  currency TEXT NOT NULL,
  updated_at INTEGER NOT NULL
);
`,
};
