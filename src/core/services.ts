import type { Db } from '../storage/db.js';
import { createIdentityRepo, type IdentityRepo } from '../storage/identity-repo.js';
import { createFeedbackRepo, type FeedbackRepo } from '../storage/feedback-repo.js';
import { createDeploymentsRepo, type DeploymentsRepo } from '../storage/deployments-repo.js';
import { createSqliteTelemetryWriter } from '../storage/sqlite-telemetry-store.js';
import type { TelemetryWriter } from '../storage/telemetry-store.js';
import { withLogRollups } from '../storage/log-rollups.js';
import { createOperationRollupReader, withOperationRollups, type OperationRollupReader } from '../storage/operation-rollups.js';
import { withAgentObservations } from '../storage/ai-spans.js';
import { createAiRepo, sqliteAiService, type AiService } from '../storage/ai-repo.js';
import { withReleaseRollups } from '../storage/release-rollups.js';
import { createReleasesRepo, sqliteReleasesReader, type ReleasesReader } from '../storage/releases-repo.js';
import { createChReleaseStore, createChReleasesReader, type ChReleaseStore } from '../storage/clickhouse/release-store.js';
import { asyncLogsReader, createLogsReadRepo, type LogsReader } from '../storage/logs-read-repo.js';
import { asyncMetricsReader, createMetricsReadRepo, type MetricsReader } from '../storage/metrics-read-repo.js';
import { asyncTracesReader, createTracesReadRepo, type TracesReader } from '../storage/traces-read-repo.js';
import { createHttpEngine, type ChEngine } from '../storage/clickhouse/client.js';
import { migrateClickHouse } from '../storage/clickhouse/schema.js';
import { createChSpanStore, type ChSpanStore } from '../storage/clickhouse/span-store.js';
import { createChTracesReader } from '../storage/clickhouse/traces-read.js';
import { createChLogStore, type ChLogStore } from '../storage/clickhouse/log-store.js';
import { createChLogsReader } from '../storage/clickhouse/logs-read.js';
import { createChMetricStore, type ChMetricStore } from '../storage/clickhouse/metric-store.js';
import { createChMetricsReader } from '../storage/clickhouse/metrics-read.js';
import { createChMonitorResults } from '../storage/clickhouse/monitor-results.js';
import { createChErrorEventsReader, createChErrorEventStore, type ChErrorEventStore } from '../storage/clickhouse/error-events.js';
import { createSqliteErrorEventsReader } from '../storage/error-events-read.js';
import { createChCaptureStore, type ChCaptureStore } from '../storage/clickhouse/capture-store.js';
import { createChAiStore, type ChAiStore } from '../storage/clickhouse/ai-store.js';
import { chAiService, createChAiReader } from '../storage/clickhouse/ai-read.js';
import { createErrorsIngestRepo, type ErrorsIngestRepo } from '../storage/errors-repo.js';
import { createIngestMiscRepo, type IngestMiscRepo } from '../storage/ingest-misc-repo.js';
import { createErrorGroupsRepo, type ErrorGroupsRepo } from '../storage/error-groups-repo.js';
import { createWriteBatcher, type WriteBatch } from '../storage/write-batcher.js';
import { createSystemRepo, type SystemRepo } from '../storage/system-repo.js';
import { createRetentionRepo, type RetentionRepo } from '../storage/retention-repo.js';
import { createJobsRepo } from '../storage/jobs-repo.js';
import { createMonitorsRepo, type MonitorsRepo } from '../storage/monitors-repo.js';
import { createIncidentsRepo, type IncidentsRepo } from '../storage/incidents-repo.js';
import { createStatusPagesRepo, type StatusPagesRepo } from '../storage/status-pages-repo.js';
import { createOauthRepo } from '../storage/oauth-repo.js';
import { createThreadsRepo, type ThreadsRepo } from '../storage/threads-repo.js';
import { createAutomationsRepo, type AutomationsRepo } from '../storage/automations-repo.js';
import type { AutomationEngine } from './automations.js';
import { createRemoteRepo, type RemoteRepo } from '../storage/remote-repo.js';
import { createScheduler, type Scheduler } from './scheduler.js';
import { createEventBus, type EventBus } from './events.js';
import { createMailer, registerMailJob, type Mailer } from './mail.js';
import { createMonitoring, type Monitoring } from './monitoring.js';
import { createRevenueRepo, type RevenueRepo } from '../storage/revenue-repo.js';
import { createAnalyticsRepo, type AnalyticsRepo } from '../storage/analytics-repo.js';
import { ResultCache } from '../domain/revenue/result-cache.js';
import { postgresOf } from '../storage/postgres/split-db.js';
import { pgResultVersions } from '../storage/postgres/result-versions.js';
import { createPaymentsService, type PaymentsService } from './payments.js';
import type { AppConfig } from './config.js';
import type { AgentRunner, AgentState } from '../domain/agent/contract.js';
import { createAgentRepo } from '../storage/agent-repo.js';
import { createAgentState, type AgentStateService } from './agent-state.js';
import { createAgentSignals, type RegressedRelease } from './agent-signals.js';
import { createWebhookSender, type WebhookSender } from './webhooks.js';
import { list as listReleases } from '../../operations/releases.js';
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
  writeBatch: WriteBatch;
  /** The database itself: writability, schema version, sizes. */
  system: SystemRepo;
  /** Retention periods per project, and expiry of telemetry. */
  retention: RetentionRepo;
  /** The server's own figures (system.status); filled in by the server that owns them. */
  serverStatus?: () => Promise<Record<string, unknown>>;
  logsRead: LogsReader;
  metricsRead: MetricsReader;
  tracesRead: TracesReader;
  /** Hourly entry-span duration tallies (migration 054; SQLite spans only): observability.summary's slowest operations. */
  operationRollups: OperationRollupReader;
  /** Set when spans, logs, metric points and monitor results go to ClickHouse (SIGHTLINE_CLICKHOUSE_URL): the engine and the span, log and metric stores (flush, close). */
  clickhouse?: { engine: ChEngine; spans: ChSpanStore; logs: ChLogStore; metrics: ChMetricStore; errors: ChErrorEventStore; ai: ChAiStore; releases: ChReleaseStore; captures?: ChCaptureStore };
  errorsIngest: ErrorsIngestRepo;
  ingestMisc: IngestMiscRepo;
  errorGroups: ErrorGroupsRepo;
  /** The shared job queue (state in the database); started by the server, driven by runDue() in tests. */
  scheduler: Scheduler;
  /** In-process domain events (monitor down/recovered, incidents, check-ins). */
  events: EventBus;
  /** Outbound mail (SMTP or the outbox file); send through the `mail.send` job (enqueueMail). */
  mailer: Mailer;
  monitors: MonitorsRepo;
  incidents: IncidentsRepo;
  statusPages: StatusPagesRepo;
  /** Monitor run time: state changes, incidents, check-ins, subscriber notifications. */
  monitoring: Monitoring;
  /** Runs a function in one database transaction (a handler's writes that must land together). */
  atomic: <T>(fn: () => T) => T;
  /** Agent observations, scores, AI rollups and settings (issue 13); observations and scores in ClickHouse when it is set (reads async). */
  ai: AiService;
  /** Release derivation inputs, rollups and new issues (operations/releases.ts); rollups and activity in ClickHouse when it is set (reads async). */
  releases: ReleasesReader;
  /** Revenue ledger, subscriptions, settings and payment-provider connection. */
  revenue: RevenueRepo;
  /** Product-analytics capture: events, persons, touches, sessions. */
  analytics: AnalyticsRepo;
  /** Revenue read results, kept up to 5 minutes and invalidated by revenue or project changes. */
  revenueCache: ResultCache;
  /** Provider webhook/backfill writes and the backfill runner. */
  payments: PaymentsService;
  /** Remote access (gated preview): connectors, targets, policies, requests, step-up, audit. */
  remote: RemoteRepo;
  /** The server's Ed25519 signing key seed for remote access (jobs, bundles), from the stored secret. */
  remoteSigningSeed: () => Buffer;
  /**
   * The in-project agent's state and runner (src/domain/agent/contract.ts). Set by the server once
   * both exist; automations and signals reach the agent only through these.
   */
  agentState?: AgentState;
  agentRunner?: AgentRunner;
  /** The same state with what the `agent.*` operations need (settings, memory, skills, channels). */
  agent: AgentStateService;
  /** Outbound webhooks with the private-address policy (agent channels, automations). */
  webhooks: WebhookSender;
  /** Chat threads and their append-only messages (operations/threads.ts). */
  threads: ThreadsRepo;
  /** Automation configs, runs, outputs, approvals, capabilities and skills (issue 16). */
  automations: AutomationsRepo;
  /** The automation run engine; set by the server once the core exists (it runs operations). */
  automationEngine?: AutomationEngine;
  /** Cross-domain look-ups that later modules (error groups, replays) fill in. */
  lookups: {
    errorGroupExists(projectId: string, errorGroupId: string): boolean;
    replaySessionFor(projectId: string, replayId: string): string | null;
    /** The time window of an incident (status pages and monitors fill this in; null = unknown incident). */
    incidentWindow(projectId: string, incidentId: string): { from: number; to: number } | null;
  };
}

/** An engine whose first use applies the ClickHouse migrations (once; a failure is retried on the next use). */
function migratedOnFirstUse(engine: ChEngine): ChEngine {
  let ready: Promise<unknown> | null = null;
  const up = () => (ready ??= migrateClickHouse(engine).catch((e) => ((ready = null), Promise.reject(e))));
  return {
    command: async (s) => (await up(), engine.command(s)),
    query: async (s) => (await up(), engine.query(s)),
    insert: async (t, r) => (await up(), engine.insert(t, r)),
    insertLines: async (t, c, p) => (await up(), engine.insertLines(t, c, p)),
    close: () => engine.close(),
  };
}

export function createServices(db: Db, config: AppConfig, now: () => number = Date.now, opts: { clickhouse?: ChEngine } = {}): Services {
  const chEngine = opts.clickhouse ?? (config.clickhouseUrl ? createHttpEngine(config.clickhouseUrl) : null);
  const ch = chEngine ? { engine: migratedOnFirstUse(chEngine), spans: null as unknown as ChSpanStore, logs: null as unknown as ChLogStore, metrics: null as unknown as ChMetricStore, errors: null as unknown as ChErrorEventStore, ai: null as unknown as ChAiStore, releases: null as unknown as ChReleaseStore } : null;
  if (ch) {
    ch.spans = createChSpanStore(ch.engine, config.clickhouseFlush);
    ch.logs = createChLogStore(ch.engine, config.clickhouseFlush);
    ch.metrics = createChMetricStore(ch.engine, config.clickhouseFlush);
    ch.errors = createChErrorEventStore(ch.engine, config.clickhouseFlush);
    ch.ai = createChAiStore(ch.engine, config.clickhouseFlush);
    ch.releases = createChReleaseStore(ch.engine, config.clickhouseFlush);
  }
  // With ClickHouse, error events too (their ids stay beside the groups, in SQLite or PostgreSQL).
  const errorsIngest = createErrorsIngestRepo(db, ch ? { events: ch.errors } : {});
  const errorEvents = ch ? createChErrorEventsReader(ch.engine, db) : createSqliteErrorEventsReader(db);
  // With ClickHouse, product-analytics capture events too (persons, sessions and touches stay here).
  const captures = ch ? createChCaptureStore(ch.engine, config.clickhouseFlush) : undefined;
  const ingestMisc = createIngestMiscRepo(db);
  const jobs = createJobsRepo(db);
  const scheduler = createScheduler(jobs, { now, leaderLeaseMs: config.scheduler.leaderLeaseMs });
  const events = createEventBus();
  const mailer = createMailer(config.mail);
  // With ClickHouse, monitor results too: every process reads what the scheduler's leader wrote.
  const monitors = createMonitorsRepo(db, ch ? createChMonitorResults(ch.engine) : undefined);
  const incidents = createIncidentsRepo(db);
  const statusPages = createStatusPagesRepo(db);
  // IMMEDIATE: the write lock is taken when the block starts, so a read-then-write block never
  // interleaves with another process's writes to the same file (it waits, up to busy_timeout).
  const atomic = <T>(fn: () => T): T => db.transaction(fn).immediate();
  let secret: Buffer | null = null;
  let remoteSeed: Buffer | null = null;
  const monitoring = createMonitoring({
    monitors, incidents, statusPages, scheduler, events, atomic, now,
    baseUrl: config.baseUrl,
    allowPrivate: config.monitors.allowPrivate,
    retentionDays: config.monitors.retentionDays,
    secret: () => (secret ??= createOauthRepo(db).secretKey('status-subscribers', now())),
  });
  registerMailJob(scheduler, mailer);
  monitoring.register();
  const aiRepo = createAiRepo(db);
  // With ClickHouse, agent observations and scores go there and every AI read comes from there.
  const ai = ch ? chAiService(aiRepo, ch.ai, createChAiReader(ch.engine)) : sqliteAiService(aiRepo);
  const revenue = createRevenueRepo(db);
  // With control data in PostgreSQL, results are invalidated by writes through any process.
  const pg = postgresOf(db);
  const revenueCache = new ResultCache(500, pg ? pgResultVersions(pg) : undefined);
  const webhooks = createWebhookSender(config.webhooks.allowPrivate);
  const agent = createAgentState({ repo: createAgentRepo(db, { errorEvents }), scheduler, webhooks, dailyBudget: config.agent.dailyBudget, secretKey: config.revenue.secretKey, now });
  const services: Services = {
    agentState: agent,
    agent,
    webhooks,
    scheduler,
    events,
    mailer,
    automations: createAutomationsRepo(db),
    monitors,
    incidents,
    statusPages,
    monitoring,
    atomic,
    config,
    identity: createIdentityRepo(db),
    threads: createThreadsRepo(db),
    feedback: createFeedbackRepo(db),
    deployments: createDeploymentsRepo(db),
    tokenResolvers: [],
    // With ClickHouse, log records and metric points skip SQLite entirely (rows, full text, catalogue and rollups).
    // With ClickHouse, release rollups and activity go there with the spans (every process reads them).
    telemetry: metricsTo(logsTo(withReleaseRollups(db, withAgentObservations(db, ai, withLogRollups(db, spansTo(withOperationRollups(db, createSqliteTelemetryWriter(db)), ch?.spans))), ch?.releases), ch?.logs), ch?.metrics),
    writeBatch: createWriteBatcher(db, 512, [errorsIngest.batchParticipant, ai.batchParticipant, ...(ch ? [ch.spans.participant, ch.logs.participant, ch.metrics.participant, ch.errors.participant, ch.releases.participant, ...ch.ai.participants] : []), ...(captures ? [captures.participant] : [])]),
    ...(ch ? { clickhouse: { ...ch, captures } } : {}),
    system: createSystemRepo(db, config.dbFile),
    retention: createRetentionRepo(db),
    logsRead: ch ? createChLogsReader(ch.engine) : asyncLogsReader(createLogsReadRepo(db)),
    metricsRead: ch ? createChMetricsReader(ch.engine) : asyncMetricsReader(createMetricsReadRepo(db)),
    tracesRead: ch ? createChTracesReader(ch.engine, asyncTracesReader(createTracesReadRepo(db, { errorEvents }))) : asyncTracesReader(createTracesReadRepo(db, { errorEvents })),
    operationRollups: createOperationRollupReader(db),
    errorsIngest,
    ingestMisc,
    errorGroups: createErrorGroupsRepo(db, { events: errorEvents, eventIds: ch ? 'error_event_ids' : 'error_events' }),
    ai,
    releases: ch ? createChReleasesReader(ch.engine, createReleasesRepo(db)) : sqliteReleasesReader(createReleasesRepo(db)),
    revenue,
    analytics: createAnalyticsRepo(db, { errorEvents, captures }),
    revenueCache,
    payments: createPaymentsService(revenue, config, revenueCache),
    remote: createRemoteRepo(db),
    remoteSigningSeed: () => (remoteSeed ??= createOauthRepo(db).secretKey('remote-access-signing', now())),
    lookups: {
      errorGroupExists: (projectId, id) => errorsIngest.exists(projectId, id),
      replaySessionFor: (projectId, replayId) => ingestMisc.replay(projectId, replayId.replace(/-/g, '').toLowerCase())?.replay_id ?? null,
      // An incident (UUID or its display id INC-12) spans from its start to its resolution, or to now while open.
      incidentWindow: (projectId, incidentId) => {
        const m = /^INC-(\d+)$/i.exec(incidentId);
        const row = m ? incidents.byNumber(projectId, Number(m[1])) : incidents.get(projectId, incidentId);
        return row ? { from: row.started_at, to: row.resolved_at ?? now() } : null;
      },
    },
  };
  createAgentSignals({
    state: agent,
    events,
    scheduler,
    atomic,
    now,
    baseUrl: config.baseUrl,
    runner: () => services.agentRunner,
    regressedReleases: (projectId, orgId, at) => regressedReleases(services, projectId, orgId, at),
  }).register();
  return services;
}

/** The writer with its spans sent to ClickHouse instead, when a span store is given. */
function spansTo(writer: TelemetryWriter, spans: ChSpanStore | undefined): TelemetryWriter {
  return spans ? { ...writer, insertSpans: (projectId, rows, source, receivedMs) => spans.add(projectId, rows, source, receivedMs) } : writer;
}

/** The writer with its log records sent to ClickHouse instead, when a log store is given. */
function logsTo(writer: TelemetryWriter, logs: ChLogStore | undefined): TelemetryWriter {
  return logs ? { ...writer, insertLogs: (projectId, rows, source, receivedMs, connectorKey) => logs.add(projectId, rows, source, receivedMs, connectorKey ?? null) } : writer;
}

/** The writer with its metric points sent to ClickHouse instead, when a metric store is given. */
function metricsTo(writer: TelemetryWriter, metrics: ChMetricStore | undefined): TelemetryWriter {
  return metrics ? { ...writer, insertMetricPoints: (projectId, rows, receivedMs) => metrics.add(projectId, rows, receivedMs) } : writer;
}

/** Current releases of a project whose health verdict is `regressed`, read through `releases.list` (its rules, not a copy). */
async function regressedReleases(services: Services, projectId: string, orgId: string, now: number): Promise<RegressedRelease[]> {
  const ctx = {
    principal: { kind: 'api_key' as const, keyId: 'agent-release-watcher', projectId, orgId, scopes: ['*'] },
    project: { id: projectId, orgId, name: '' },
    services,
    now: () => now,
    requestId: 'agent-release-watcher',
    canStream: false,
    response: { headers: {} },
  };
  const out = (await listReleases.handler(listReleases.input.parse({ project_id: projectId, limit: '25', from: new Date(now - 2 * 86_400_000).toISOString() }), ctx)) as {
    data: { id: string; service_name: string; environment: string; version: string; is_current: boolean; comparison: string | null }[];
  };
  return out.data
    .filter((r) => r.is_current && r.comparison === 'regressed')
    .map((r) => ({ releaseId: r.id, service: r.service_name, environment: r.environment, version: r.version, reasons: ['error rate or p95 latency worse than the previous release'] }));
}
