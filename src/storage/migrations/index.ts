import { m001Identity } from './001-identity.js';
import { m002Telemetry } from './002-telemetry.js';
import { m003Oauth } from './003-oauth.js';
import { m004LogCounts } from './004-log-counts.js';
import { m005TraceIndexes } from './005-trace-indexes.js';
import { m006DeploymentsOrder } from './006-deployments-order.js';
import { m007TraceChunks } from './007-trace-chunks.js';
import { m008MetricCatalog } from './008-metric-catalog.js';
import { m027ServerState } from './027-server-state.js';
import { m028Retention } from './028-retention.js';
import { m029ExpiryIndexes } from './029-expiry-indexes.js';
import { m035QueryIndexes } from './035-query-indexes.js';
import { m017Status } from './017-status.js';
import { m020AgentObservations } from './020-agent-observations.js';
import { m014ReleaseRollups } from './014-release-rollups.js';
import { m023Revenue } from './023-revenue.js';
import { m024Analytics } from './024-analytics.js';
import { m025Payments } from './025-payments.js';
import { m030Agent } from './030-agent.js';
import { m036ReadRollups } from './036-read-rollups.js';
import { m042ErrorReadIndexes } from './042-error-read-indexes.js';
import { m037AttrKeysets } from './037-attr-keysets.js';
import { m031ChatThreads } from './031-chat-threads.js';
import { m032Automations } from './032-automations.js';
import { m034ErrorGroupContext } from './034-error-group-context.js';
import { m033RemoteAccess } from './033-remote-access.js';
import { m038RevenueRollups } from './038-revenue-rollups.js';
import type { Db } from '../db.js';
import { m039AgentObsTraces } from './039-agent-obs-traces.js';
import { m040MetricRollups } from './040-metric-rollups.js';
import { m041AgentObsIds } from './041-agent-obs-ids.js';
import { m044CompactSpanRows } from './044-compact-span-rows.js';
import { m043TouchDays } from './043-touch-days.js';
import { m045LogCountsValueSets } from './045-log-counts-value-sets.js';
import { m046ErrorGroupHours } from './046-error-group-hours.js';
import { m047MetricRollupLevels } from './047-metric-rollup-levels.js';
import { m048RevenueDayVersions } from './048-revenue-day-versions.js';
import { m049LogExpiryBatches } from './049-log-expiry-batches.js';
import { m050LogFtsDetailNone } from './050-log-fts-detail-none.js';
import { m051LogAttrTemplates } from './051-log-attr-templates.js';
import { m052LogRowsWithoutDeadColumns } from './052-log-rows-without-dead-columns.js';
import { m053AgentObsPartyIndexes } from './053-agent-obs-party-indexes.js';
import { m054SpanOpHours } from './054-span-op-hours.js';
import { m055ErrorLatencyTallies } from './055-error-latency-tallies.js';
import { m056ErrorEventIds } from './056-error-event-ids.js';
import { m057ErrorEventTextIndex } from './057-error-event-text-index.js';

export interface Migration {
  version: number;
  name: string;
  sql: string;
  /** Rewrites a table that may be large: the server takes a backup first (SIGHTLINE_BACKUP_BEFORE_MIGRATION). */
  rewritesLargeTable?: boolean;
  /** Runs after `sql`, in the same transaction: backfills that need application code (migrations 038, 040). */
  backfill?: (db: Db) => void;
}

/** Applied in order at start-up; `PRAGMA user_version` records the last one applied. Never edit a shipped migration: add one. */
export const MIGRATIONS: Migration[] = [m001Identity, m002Telemetry, m003Oauth, m004LogCounts, m005TraceIndexes, m006DeploymentsOrder, m007TraceChunks, m008MetricCatalog, m014ReleaseRollups, m017Status, m020AgentObservations, m023Revenue, m024Analytics, m025Payments, m027ServerState, m028Retention, m029ExpiryIndexes, m030Agent, m031ChatThreads, m032Automations, m033RemoteAccess, m034ErrorGroupContext, m035QueryIndexes, m036ReadRollups, m037AttrKeysets, m038RevenueRollups, m039AgentObsTraces, m040MetricRollups, m041AgentObsIds, m042ErrorReadIndexes, m043TouchDays, m044CompactSpanRows, m045LogCountsValueSets, m046ErrorGroupHours, m047MetricRollupLevels, m048RevenueDayVersions, m049LogExpiryBatches, m050LogFtsDetailNone, m051LogAttrTemplates, m052LogRowsWithoutDeadColumns, m053AgentObsPartyIndexes, m054SpanOpHours, m055ErrorLatencyTallies, m056ErrorEventIds, m057ErrorEventTextIndex];

/** The schema version this code writes: a database with a higher user_version comes from a newer Sightline. */
export const LATEST_SCHEMA_VERSION = Math.max(...MIGRATIONS.map((m) => m.version));
