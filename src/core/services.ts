import type { Db } from '../storage/db.js';
import { createIdentityRepo, type IdentityRepo } from '../storage/identity-repo.js';
import { createFeedbackRepo, type FeedbackRepo } from '../storage/feedback-repo.js';
import { createDeploymentsRepo, type DeploymentsRepo } from '../storage/deployments-repo.js';
import { createSqliteTelemetryWriter } from '../storage/sqlite-telemetry-store.js';
import type { TelemetryWriter } from '../storage/telemetry-store.js';
import { withLogRollups } from '../storage/log-rollups.js';
import { createLogsReadRepo, type LogsReadRepo } from '../storage/logs-read-repo.js';
import { createMetricsReadRepo, type MetricsReadRepo } from '../storage/metrics-read-repo.js';
import { createTracesReadRepo, type TracesReadRepo } from '../storage/traces-read-repo.js';
import { createErrorsIngestRepo, type ErrorsIngestRepo } from '../storage/errors-repo.js';
import { createIngestMiscRepo, type IngestMiscRepo } from '../storage/ingest-misc-repo.js';
import { createErrorGroupsRepo, type ErrorGroupsRepo } from '../storage/error-groups-repo.js';
import { createWriteBatcher } from '../storage/write-batcher.js';
import { createRevenueRepo, type RevenueRepo } from '../storage/revenue-repo.js';
import { createAnalyticsRepo, type AnalyticsRepo } from '../storage/analytics-repo.js';
import { ResultCache } from '../domain/revenue/result-cache.js';
import { createPaymentsService, type PaymentsService } from './payments.js';
import type { AppConfig } from './config.js';
import type { Principal } from './principal.js';

/** Resolves a bearer secret that is not an API key (OAuth access tokens) to a principal. */
export type TokenResolver = (secret: string, now: number) => Principal | null;

/** Everything a handler may use: repositories and domain services, never the database handle. */
export interface Services {
  config: AppConfig;
  identity: IdentityRepo;
  feedback: FeedbackRepo;
  deployments: DeploymentsRepo;
  tokenResolvers: TokenResolver[];
  telemetry: TelemetryWriter;
  /** Runs ingest writes with group commit; resolves once committed. */
  writeBatch: <T>(fn: () => T) => Promise<T>;
  logsRead: LogsReadRepo;
  metricsRead: MetricsReadRepo;
  tracesRead: TracesReadRepo;
  errorsIngest: ErrorsIngestRepo;
  ingestMisc: IngestMiscRepo;
  errorGroups: ErrorGroupsRepo;
  /** Revenue ledger, subscriptions, settings and payment-provider connection. */
  revenue: RevenueRepo;
  /** Product-analytics capture: events, persons, touches, sessions. */
  analytics: AnalyticsRepo;
  /** Revenue read results, kept up to 5 minutes and invalidated by revenue or project changes. */
  revenueCache: ResultCache;
  /** Provider webhook/backfill writes and the backfill runner. */
  payments: PaymentsService;
  /** Cross-domain look-ups that later modules (error groups, replays) fill in. */
  lookups: {
    errorGroupExists(projectId: string, errorGroupId: string): boolean;
    replaySessionFor(projectId: string, replayId: string): string | null;
    /** The time window of an incident (status pages and monitors fill this in; null = unknown incident). */
    incidentWindow(projectId: string, incidentId: string): { from: number; to: number } | null;
  };
}

export function createServices(db: Db, config: AppConfig): Services {
  const errorsIngest = createErrorsIngestRepo(db);
  const ingestMisc = createIngestMiscRepo(db);
  const revenue = createRevenueRepo(db);
  const revenueCache = new ResultCache();
  return {
    config,
    identity: createIdentityRepo(db),
    feedback: createFeedbackRepo(db),
    deployments: createDeploymentsRepo(db),
    tokenResolvers: [],
    telemetry: withLogRollups(db, createSqliteTelemetryWriter(db)),
    writeBatch: createWriteBatcher(db),
    logsRead: createLogsReadRepo(db),
    metricsRead: createMetricsReadRepo(db),
    tracesRead: createTracesReadRepo(db),
    errorsIngest,
    ingestMisc,
    errorGroups: createErrorGroupsRepo(db),
    revenue,
    analytics: createAnalyticsRepo(db),
    revenueCache,
    payments: createPaymentsService(revenue, config, revenueCache),
    lookups: {
      errorGroupExists: (projectId, id) => errorsIngest.exists(projectId, id),
      replaySessionFor: (projectId, replayId) => ingestMisc.replay(projectId, replayId.replace(/-/g, '').toLowerCase())?.replay_id ?? null,
      // Incidents arrive with the status pages and monitors module; until then every id is unknown.
      incidentWindow: () => null,
    },
  };
}
