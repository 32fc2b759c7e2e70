import type { Db } from '../storage/db.js';
import { createIdentityRepo, type IdentityRepo } from '../storage/identity-repo.js';
import { createFeedbackRepo, type FeedbackRepo } from '../storage/feedback-repo.js';
import { createDeploymentsRepo, type DeploymentsRepo } from '../storage/deployments-repo.js';
import { createSqliteTelemetryWriter } from '../storage/sqlite-telemetry-store.js';
import type { TelemetryWriter } from '../storage/telemetry-store.js';
import { withLogRollups } from '../storage/log-rollups.js';
import { withReleaseRollups } from '../storage/release-rollups.js';
import { createReleasesRepo, type ReleasesRepo } from '../storage/releases-repo.js';
import { createLogsReadRepo, type LogsReadRepo } from '../storage/logs-read-repo.js';
import { createMetricsReadRepo, type MetricsReadRepo } from '../storage/metrics-read-repo.js';
import { createTracesReadRepo, type TracesReadRepo } from '../storage/traces-read-repo.js';
import { createErrorsIngestRepo, type ErrorsIngestRepo } from '../storage/errors-repo.js';
import { createIngestMiscRepo, type IngestMiscRepo } from '../storage/ingest-misc-repo.js';
import { createErrorGroupsRepo, type ErrorGroupsRepo } from '../storage/error-groups-repo.js';
import { createWriteBatcher } from '../storage/write-batcher.js';
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
  /** Release derivation inputs, rollups and new issues (operations/releases.ts). */
  releases: ReleasesRepo;
  /** Cross-domain look-ups that later modules (error groups, replays) fill in. */
  lookups: {
    errorGroupExists(projectId: string, errorGroupId: string): boolean;
    replaySessionFor(projectId: string, replayId: string): string | null;
  };
}

export function createServices(db: Db, config: AppConfig): Services {
  const errorsIngest = createErrorsIngestRepo(db);
  const ingestMisc = createIngestMiscRepo(db);
  return {
    config,
    identity: createIdentityRepo(db),
    feedback: createFeedbackRepo(db),
    deployments: createDeploymentsRepo(db),
    tokenResolvers: [],
    telemetry: withReleaseRollups(db, withLogRollups(db, createSqliteTelemetryWriter(db))),
    writeBatch: createWriteBatcher(db),
    logsRead: createLogsReadRepo(db),
    metricsRead: createMetricsReadRepo(db),
    tracesRead: createTracesReadRepo(db),
    errorsIngest,
    ingestMisc,
    errorGroups: createErrorGroupsRepo(db),
    releases: createReleasesRepo(db),
    lookups: {
      errorGroupExists: (projectId, id) => errorsIngest.exists(projectId, id),
      replaySessionFor: (projectId, replayId) => ingestMisc.replay(projectId, replayId.replace(/-/g, '').toLowerCase())?.replay_id ?? null,
    },
  };
}
