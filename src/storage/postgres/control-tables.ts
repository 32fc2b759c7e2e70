/**
 * The tables that live in PostgreSQL when SIGHTLINE_DATABASE_URL is set (issue 20): organizations,
 * users, credentials, OAuth, feedback, deployments, settings, the scheduler, automations, status
 * pages, monitors' configuration, remote access, the agent's configuration and threads. Everything
 * else is telemetry or derived from it and stays with the telemetry (SQLite, or ClickHouse where it
 * has moved). Error groups stay with their events for now: their counters are updated in the same
 * transaction as each event, and their rollups are joined with telemetry tables.
 *
 * PostgreSQL's schema for these tables is generated from SQLite's (scripts/pg-schema.ts writes
 * src/storage/postgres/migrations.ts; test/storage/postgres-schema.test.ts fails when they differ).
 */
import type { Db } from '../db.js';

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
]);

/** The control tables a credential or project check reads: a change to any of them moves `control_version`. */
export const CREDENTIAL_TABLES = ['organizations', 'users', 'memberships', 'projects', 'api_keys', 'oauth_grants', 'oauth_tokens'] as const;

/** The control tables in an order where each comes after the tables it references (read from SQLite's schema). */
export function controlTablesInOrder(sqlite: Db): string[] {
  const order: string[] = [];
  const visit = (t: string, seen: Set<string>) => {
    if (order.includes(t) || seen.has(t)) return;
    seen.add(t);
    for (const fk of sqlite.prepare(`PRAGMA foreign_key_list(${JSON.stringify(t)})`).all() as Array<{ table: string }>) if (fk.table !== t) visit(fk.table, seen);
    order.push(t);
  };
  for (const t of [...CONTROL_TABLES].sort()) visit(t, new Set());
  return order;
}
