/**
 * The tables that live in PostgreSQL when SIGHTLINE_DATABASE_URL is set (issue 20): organizations,
 * users, credentials, OAuth, feedback, deployments, settings, the scheduler, automations, status
 * pages, monitors' configuration, remote access, the agent's configuration and threads. Everything
 * else is telemetry or derived from it and stays with the telemetry (SQLite, or ClickHouse where it
 * has moved). Error groups are control data (PostgreSQL migration 3): their counters and rollups are
 * updated in the ingest transaction, whose PostgreSQL part commits just before SQLite's.
 *
 * PostgreSQL's schema for these tables is generated from SQLite's (scripts/pg-schema.ts writes
 * src/storage/postgres/migrations.ts; test/storage/postgres-schema.test.ts fails when they differ).
 */
import type { Db } from '../db.js';

/** The tables PostgreSQL migration 5 made control tables. */
export const REVENUE_ANALYTICS_TABLES = [
  'revenue_events', 'revenue_daily', 'revenue_day_rows', 'revenue_day_versions', 'revenue_keys', 'revenue_rollup_currency', 'revenue_subscriptions', 'payment_webhook_events',
  'analytics_persons', 'analytics_distinct_ids', 'analytics_identity_epoch', 'analytics_sessions', 'analytics_session_ids', 'analytics_session_pages', 'analytics_touches', 'analytics_touch_days',
] as const;

/**
 * The tables PostgreSQL migration 6 made control tables: Sentry release-health sessions and their
 * pre-aggregated buckets, session replays with their recordings, cron check-ins and ingest outcomes
 * (dropped counts), Langfuse trace info and hosted-fixer dispatches. Written at ingest beside the
 * telemetry (separate statements in the same write batch), read by any process.
 */
export const INGEST_MISC_TABLES = ['sessions', 'session_aggregates', 'replays', 'replay_recordings', 'check_ins', 'ingest_outcomes', 'agent_traces', 'ai_fix_dispatches'] as const;

/**
 * INTEGER columns that hold capture times as clients send them, fractional milliseconds included
 * (SQLite keeps such a value as REAL in an INTEGER column): DOUBLE PRECISION in PostgreSQL, so the
 * same values are kept and compared (migration 5).
 */
export const FRACTIONAL_TIME_COLUMNS: Readonly<Record<string, readonly string[]>> = {
  analytics_sessions: ['first_ts', 'last_ts'],
  analytics_session_pages: ['last_ts'],
  analytics_touches: ['ts'],
};

export const CONTROL_TABLES: ReadonlySet<string> = new Set([
  'organizations', 'users', 'memberships', 'projects', 'api_keys',
  'oauth_clients', 'oauth_codes', 'oauth_grants', 'oauth_keys', 'oauth_requests', 'oauth_sessions', 'oauth_tokens',
  'feedback', 'feedback_idempotency', 'deployments',
  'scheduler_jobs', 'scheduler_leader', 'retention_settings',
  'automations', 'automation_approvals', 'automation_capabilities', 'automation_outputs', 'automation_runs', 'automation_skills',
  'status_pages', 'status_components', 'status_subscribers', 'incidents', 'incident_updates', 'monitors',
  'remote_audit', 'remote_connectors', 'remote_console_sessions', 'remote_executions', 'remote_policies', 'remote_requests', 'remote_stepups', 'remote_targets',
  'agent_channels', 'agent_conversations', 'agent_deliveries', 'agent_memory', 'agent_settings', 'agent_signals', 'agent_skills', 'agent_usage', 'agent_watch',
  'chat_threads', 'chat_messages', 'ai_settings', 'revenue_settings', 'payment_connections',
  // PostgreSQL migration 3: error groups (one per fingerprint, shared by every process) with their
  // state and the rollups updated with them in each ingest transaction.
  'error_groups', 'error_group_user_state', 'triage_runs', 'error_group_dims', 'error_group_users', 'error_group_hour_users',
  // PostgreSQL migration 4: the ids of error events stored in ClickHouse (which are new, their groups).
  'error_event_ids',
  // PostgreSQL migration 5: the revenue ledger (replaced by id, its rollups rebuilt from it in the same
  // transaction), subscription states, Stripe webhook idempotency, and the product-analytics state
  // attribution reads (persons, distinct ids, sessions, touches); capture events stay telemetry.
  ...REVENUE_ANALYTICS_TABLES,
  // PostgreSQL migration 6: what every process of an installation must see of release health,
  // replays, check-ins, ingest outcomes, Langfuse trace info and fixer dispatches.
  ...INGEST_MISC_TABLES,
]);

/** The control tables a credential or project check reads: a change to any of them moves `control_version`. */
export const CREDENTIAL_TABLES = ['organizations', 'users', 'memberships', 'projects', 'api_keys', 'oauth_grants', 'oauth_tokens'] as const;

/** The control tables in an order where each comes after the tables it references (read from SQLite's schema). */
export function controlTablesInOrder(sqlite: Db, tables: ReadonlySet<string> = CONTROL_TABLES): string[] {
  const order: string[] = [];
  const visit = (t: string, seen: Set<string>) => {
    if (order.includes(t) || seen.has(t)) return;
    seen.add(t);
    for (const fk of sqlite.prepare(`PRAGMA foreign_key_list(${JSON.stringify(t)})`).all() as Array<{ table: string }>) if (fk.table !== t) visit(fk.table, seen);
    order.push(t);
  };
  for (const t of [...tables].sort()) visit(t, new Set());
  return order;
}
