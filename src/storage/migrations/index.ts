import { m001Identity } from './001-identity.js';
import { m002Telemetry } from './002-telemetry.js';
import { m003Oauth } from './003-oauth.js';
import { m004LogCounts } from './004-log-counts.js';
import { m005TraceIndexes } from './005-trace-indexes.js';
import { m006DeploymentsOrder } from './006-deployments-order.js';
import { m023Revenue } from './023-revenue.js';
import { m024Analytics } from './024-analytics.js';
import { m025Payments } from './025-payments.js';

export interface Migration {
  version: number;
  name: string;
  sql: string;
}

/** Applied in order at start-up; `PRAGMA user_version` records the last one applied. Never edit a shipped migration: add one. */
export const MIGRATIONS: Migration[] = [m001Identity, m002Telemetry, m003Oauth, m004LogCounts, m005TraceIndexes, m006DeploymentsOrder, m023Revenue, m024Analytics, m025Payments];
