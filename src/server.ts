import http from 'node:http';
import { readFileSync } from 'node:fs';
import Koa from 'koa';
import Router from '@koa/router';
import { pino, type Logger } from 'pino';
import { loadConfig, type AppConfig } from './core/config.js';
import { createCore, type Core } from './core/invoke.js';
import type { ChEngine } from './storage/clickhouse/client.js';
import { expireClickHouseAgentObservations, expireClickHouseAgentScores, expireClickHouseCaptureEvents, expireClickHouseErrorEvents, expireClickHouseLogs, expireClickHouseMetricPoints, expireClickHouseReleaseRollups, expireClickHouseSpans, expiryDayStart } from './storage/clickhouse/retention.js';
import { createServices, type Services } from './core/services.js';
import { openDatabase, type Db } from './storage/db.js';
import { openSyncPg, type SyncPg } from './storage/postgres/sync-client.js';
import { migratePostgres } from './storage/postgres/schema.js';
import { adoptMovedTables } from './storage/postgres/migrate.js';
import { openSplitDatabase } from './storage/postgres/split-db.js';
import { createPgCounters } from './storage/postgres/pg-counters.js';
import { startWalCheckpointer } from './storage/wal-checkpointer.js';
import { requestId } from './http/middleware/request-id.js';
import { errorHandler } from './http/middleware/errors.js';
import { RateLimiter, SharedRateLimiter, type RequestLimiter } from './http/middleware/rate-limit.js';
import { clickHouseStatus } from './storage/clickhouse/status.js';
import { createPostgresProbe, type PostgresProbe } from './storage/postgres/status.js';
import { createRedisCounters, type SharedCounters } from './storage/redis-counters.js';
import { AuthThrottle } from './http/middleware/auth-throttle.js';
import { buildRestRouter } from './http/router.js';
import { buildOpenApi } from './http/openapi.js';
import { errorDocs, errorDocsMarkdown } from './http/error-docs.js';
import { docsPage } from './http/markdown.js';
import { AppError } from './core/errors.js';
import type { AnyOperation } from '../operations/define.js';
import { buildIngestRouter, warmDecodePool } from './ingest/mount.js';
import { oauthMount } from './oauth/mount.js';
import { mcpMount } from './mcp/http.js';
import { createSelfMetrics, startOtlpPush, type SelfMetrics } from './core/self-metrics.js';
import type { ReadinessCheck } from './core/health.js';
import { mountSystemRoutes, requestMetrics } from './http/system-routes.js';
import { writeLock } from './storage/backup.js';
import { createRetentionRunner, type RetentionRunner } from './core/retention.js';
import { EXPIRY_TARGETS } from './storage/retention-repo.js';
import type { TelemetryWriter } from './storage/telemetry-store.js';
import { statusMount } from './status/mount.js';
import { createQuickJsExecutor } from '../sandbox/quickjs-executor.js';
import type { Executor } from '../sandbox/executor.js';
import { createOpenAiCompatibleProvider } from './core/model-provider.js';
import { createAgentRunner } from './domain/agent/runner.js';
import { createAgentCodeMode } from './mcp/agent-tools.js';
import { createAutomationEngine } from './core/automations.js';
import { localCaller, runExecute } from './mcp/execute.js';
import { remoteConnectorMount } from './remote-connector/server-endpoints.js';
import { remoteConsoleMount } from './pages/remote/mount.js';

export interface Sightline {
  config: AppConfig;
  db: Db;
  services: Services;
  core: Core;
  app: Koa;
  log: Logger;
  /** The per-credential rate limit shared by every face (REST, MCP); across processes with Redis or PostgreSQL. */
  limiter: RequestLimiter;
  /**
   * Where the processes count the rate limit together: Redis (SIGHTLINE_REDIS_URL), else PostgreSQL
   * (SIGHTLINE_DATABASE_URL, table rate_counters); null with neither.
   */
  redis: SharedCounters | null;
  /** Failed-authentication throttle per client address, shared by every face. */
  authThrottle: AuthThrottle;
  /** Extra cleanup registered by faces (MCP sessions, sandbox pool). */
  onClose: Array<() => Promise<void> | void>;
  /** The server's own figures (GET /metrics, system.status, OTLP push); pieces register gauges here. */
  metrics: SelfMetrics;
  /** Readiness checks run by GET /readyz; pieces that must be up register one. */
  readiness: Map<string, ReadinessCheck>;
  /** Background expiry and the disk budget; started by listen(). */
  retention: RetentionRunner;
  listen(): Promise<http.Server>;
  close(): Promise<void>;
}

export interface SightlineOptions {
  now?: () => number;
  logger?: Logger;
  operations?: readonly AnyOperation[];
  /** A ClickHouse engine for spans instead of SIGHTLINE_CLICKHOUSE_URL's (tests: chdb). */
  clickhouse?: ChEngine;
}

/** A face that mounts its own routes (MCP, OAuth, ingest) on the shared app. */
export type Mount = (s: Sightline, router: Router) => void;
/** Faces with routes of their own, mounted in this order before the REST router. */
const MOUNTS: Mount[] = [oauthMount, mcpMount, statusMount, remoteConnectorMount, remoteConsoleMount];

/**
 * SQLite alone, or — SIGHTLINE_DATABASE_URL set — SQLite for telemetry with the control tables in
 * PostgreSQL (its migrations applied first) behind one handle (src/storage/postgres/split-db.ts).
 */
export function openStores(config: AppConfig, log: (msg: string, fields?: Record<string, unknown>) => void): Db {
  const sqlite = openDatabase(config.dbFile, { backupBeforeMigration: config.backupBeforeMigration, log });
  if (!config.databaseUrl) return sqlite;
  let pg: SyncPg | null = null;
  try {
    pg = openSyncPg(config.databaseUrl);
    migratePostgres(pg, log);
    adoptMovedTables(sqlite, pg, log);
  } catch (err) {
    pg?.close();
    sqlite.close();
    throw err;
  }
  // Telemetry rows (error groups, monitors' results…) name projects that are now PostgreSQL's: SQLite
  // cannot check those references across the two stores.
  sqlite.pragma('foreign_keys = OFF');
  return openSplitDatabase(sqlite, pg);
}

export function createSightline(configOverrides: Partial<AppConfig> = {}, opts: SightlineOptions = {}): Sightline {
  const config = loadConfig(process.env, configOverrides);
  const log = opts.logger ?? pino({ level: config.logLevel });
  const db = openStores(config, (msg, fields) => log.info(fields ?? {}, msg));
  const services = createServices(db, config, opts.now, { clickhouse: opts.clickhouse });
  const metrics = createSelfMetrics();
  services.telemetry = countingWriter(services.telemetry, metrics);
  const ingestErrors = services.errorsIngest.ingest.bind(services.errorsIngest);
  services.errorsIngest.ingest = (...args) => {
    const r = ingestErrors(...args);
    metrics.countIngest('error_events', 'accepted', r.inserted);
    return r;
  };
  services.events.onError = (err, event) => log.error({ err, event: event.type }, 'event subscriber failed');
  services.scheduler.onError = (err, job) => log.warn({ err, job: job.kind, key: job.key, attempt: job.attempts }, 'job failed');
  const core = createCore(services, { now: opts.now, operations: opts.operations });
  core.onInternalError = (err, operationId) => log.error({ err, operationId }, 'operation failed');
  // The in-project agent and automations run Code Mode scripts on one background sandbox pool of
  // their own (MCP clients keep theirs), started with the first run.
  let backgroundExecutor: Executor | null = null;
  const getBackgroundExecutor = () => (backgroundExecutor ??= createQuickJsExecutor({ poolSize: Math.max(1, Math.min(2, config.sandboxPoolSize || 2)) }));
  const { llm } = config;
  services.agentRunner = createAgentRunner({
    tools: createAgentCodeMode(core, getBackgroundExecutor, log),
    orgOf: (projectId) => {
      const p = services.identity.projectById(projectId);
      return p ? String(p.org_id) : null;
    },
    state: () => services.agentState,
    history: (threadId, n) => services.threads.lastMessages(threadId, n),
    provider: llm.baseUrl && llm.model ? createOpenAiCompatibleProvider({ baseUrl: llm.baseUrl, apiKey: llm.apiKey, model: llm.model }) : null,
    caps: llm,
    log,
  });
  services.automationEngine = createAutomationEngine(core, {
    caller: (principal) => localCaller(core, principal, { log }).call,
    runScript: (code, operations, call, limits, signal) => runExecute(getBackgroundExecutor(), code, operations, call, { limits, log, signal }),
  });
  services.automationEngine.register();

  const readiness = new Map<string, ReadinessCheck>([
    ['database', () => services.system.probeWritable(core.now())],
    [
      'migrations',
      () => {
        const v = services.system.schema();
        return v.pending === 0 ? { ok: true } : { ok: false, detail: `${v.pending} migration(s) not applied` };
      },
    ],
  ]);
  // Control data in PostgreSQL: a process that cannot reach it cannot serve, whatever its SQLite file says.
  const pgProbe = config.databaseUrl ? createPostgresProbe(config.databaseUrl) : null;
  if (pgProbe) {
    readiness.set('postgres', async () => {
      const st = await pgProbe.status();
      if (!st.reachable) return { ok: false, detail: `PostgreSQL: ${st.error}` };
      return st.schema!.version >= st.schema!.latest ? { ok: true } : { ok: false, detail: `PostgreSQL schema ${st.schema!.version} of ${st.schema!.latest}` };
    });
  }
  const chStore = services.clickhouse;
  if (chStore) {
    readiness.set('clickhouse', async () => {
      const st = await clickHouseStatus(chStore.engine);
      if (!st.reachable) return { ok: false, detail: `ClickHouse: ${st.error}` };
      return st.schema!.version >= st.schema!.latest ? { ok: true } : { ok: false, detail: `ClickHouse schema ${st.schema!.version} of ${st.schema!.latest}` };
    });
  }
  metrics.gauge('sightline_db_bytes', 'Size of the SQLite database file.', () => services.system.sizes().db_bytes);
  metrics.gauge('sightline_db_wal_bytes', 'Size of the write-ahead log.', () => services.system.sizes().wal_bytes);
  metrics.gauge('sightline_db_free_bytes', 'Free pages inside the database file (reused before the file grows).', () => {
    const z = services.system.sizes();
    return z.freelist_pages * z.page_size;
  });
  metrics.gauge('sightline_write_queue_depth', 'Ingest writes waiting for the next group commit.', () => services.writeBatch.depth());
  services.serverStatus = async () => serverStatus(s, pgProbe);
  const ch = services.clickhouse;
  const retention = createRetentionRunner({
    repo: services.retention, targets: EXPIRY_TARGETS, config: config.retention, now: core.now, log, metrics,
    external: ch
      ? [
          { kind: 'spans', expire: (cutoffs) => expireClickHouseSpans(ch.engine, cutoffs) },
          { kind: 'logs', expire: (cutoffs) => expireClickHouseLogs(ch.engine, cutoffs) },
          { kind: 'metric_points', expire: (cutoffs) => expireClickHouseMetricPoints(ch.engine, cutoffs) },
          {
            kind: 'error_events',
            expire: async (cutoffs) => {
              await expireClickHouseErrorEvents(ch.engine, cutoffs);
              for (const c of cutoffs) services.errorGroups.expireHoursBefore(c.projectId, expiryDayStart(c.cutoffMs));
              // Counted once, by their ids (retention-repo.ts: the error_event_ids target, by the same whole days).
              return 0;
            },
          },
          { kind: 'capture_events', expire: (cutoffs) => expireClickHouseCaptureEvents(ch.engine, cutoffs) },
          { kind: 'agent_observations', expire: (cutoffs) => expireClickHouseAgentObservations(ch.engine, cutoffs) },
          { kind: 'agent_scores', expire: (cutoffs) => expireClickHouseAgentScores(ch.engine, cutoffs) },
          // Release health goes with the other rollups (400 days by default), not with the spans; its rows are not counted as metric rollups.
          { kind: 'metric_rollups', expire: async (cutoffs) => (await expireClickHouseReleaseRollups(ch.engine, cutoffs), 0) },
        ]
      : [],
  });

  // Behind N trusted proxies the client address is the N-th X-Forwarded-For entry from the right
  // (Koa keeps the last maxIpsCount entries and takes the first of them).
  const app = new Koa({ proxy: config.trustProxy.enabled, maxIpsCount: config.trustProxy.hops });
  app.silent = true;
  const authThrottle = new AuthThrottle(config.authFailureLimit.limit, config.authFailureLimit.windowSeconds, core.now);
  const localLimiter = new RateLimiter(config.rateLimit.limit, config.rateLimit.windowSeconds, core.now);
  // The per-credential rate limit is one budget across processes: counted in Redis when it is
  // configured, else in PostgreSQL when control data is there, else per process.
  const timeoutMs = config.redis.timeoutMs;
  const redis = config.redis.url ? createRedisCounters(config.redis.url, { log, timeoutMs }) : config.databaseUrl ? createPgCounters(config.databaseUrl, { timeoutMs }) : null;
  const limiter: RequestLimiter = redis ? new SharedRateLimiter(redis, localLimiter, config.redis.prefix, core.now) : localLimiter;
  const openapi = buildOpenApi(core.operations.values(), config);

  app.use(requestId());
  app.use(requestMetrics(core, metrics));
  app.use(async (ctx, next) => {
    // Spec, Limits: responses carry RateLimit-Limit and RateLimit-Policy.
    ctx.set(limiter.headers());
    await next();
  });
  app.use(errorHandler(log, config.baseUrl));
  app.use(authThrottle.middleware());

  const base = new Router();
  mountSystemRoutes(base, { config, metrics, readiness });
  base.get('/', (ctx) => {
    ctx.body = {
      name: 'Sightline',
      version: '1.0.0',
      description: 'MCP-first observability and error tracking.',
      links: {
        docs: `${config.baseUrl}/docs`,
        openapi: `${config.baseUrl}/openapi.json`,
        mcp: config.mcpUrl,
        ingest: config.ingestUrl,
        oauth_metadata: `${config.baseUrl}/.well-known/oauth-authorization-server`,
      },
      mcp: {
        url: config.mcpUrl,
        transport: 'streamable-http',
        tools: ['search', 'execute'],
        client_config: { mcpServers: { sightline: { type: 'http', url: config.mcpUrl } } },
        stdio_config: { mcpServers: { sightline: { command: 'npx', args: ['sightline', 'mcp'], env: { SIGHTLINE_API_KEY: '<key>', SIGHTLINE_URL: config.baseUrl } } } },
      },
    };
  });
  // /docs: the README and the error reference generated from declared errors (every doc_url
  // anchor lands on an entry). A browser gets HTML; other clients keep the Markdown.
  const docsMarkdown = readFileSync(new URL('../README.md', import.meta.url), 'utf8') + '\n\n' + errorDocsMarkdown(errorDocs(core.operations.values()));
  const docsHtml = docsPage('Sightline documentation', docsMarkdown);
  base.get('/docs', (ctx) => {
    ctx.vary('Accept');
    if (ctx.accepts('text/markdown', 'text/html') === 'text/html') {
      ctx.type = 'text/html; charset=utf-8';
      ctx.body = docsHtml;
      return;
    }
    ctx.type = 'text/markdown; charset=utf-8';
    ctx.body = docsMarkdown;
  });
  base.get('/openapi.json', (ctx) => {
    ctx.body = openapi;
  });


  const s: Sightline = {
    config,
    db,
    services,
    core,
    app,
    log,
    limiter,
    redis,
    metrics,
    readiness,
    retention,
    authThrottle,
    onClose: [() => services.scheduler.stop(), async () => void (await backgroundExecutor?.close()), async () => void (await redis?.close()), async () => void (await pgProbe?.close())],
    async listen() {
      warmDecodePool(s); // decode workers load while the server starts, not on the first large batch
      services.scheduler.start(); // monitors, mail and other due jobs (state in the database)
      // The shared rate-limit counters (Redis or PostgreSQL) connected before the first request: until
      // they are, a process counts on its own, so requests right after a start would get a budget of
      // their own beside the shared one. Bounded: with the counters' store away, the API starts anyway.
      await redis?.ready(2_000);
      const server = http.createServer(app.callback());
      await new Promise<void>((resolve) => server.listen(config.port, config.host, resolve));
      s.onClose.push(() => closeGracefully(server, config.shutdownTimeoutMs));
      s.onClose.push(writeLock(config.dbFile));
      // Checkpoints off the serving thread (stopped before the database closes: onClose runs in reverse).
      const checkpointer = config.walCheckpointWorker ? startWalCheckpointer(db, config.dbFile) : null;
      if (checkpointer) s.onClose.push(() => checkpointer.stop());
      retention.start();
      s.onClose.push(() => retention.stop());
      if (config.metrics.otlpUrl) {
        const push = startOtlpPush(metrics, {
          url: config.metrics.otlpUrl,
          headers: config.metrics.otlpHeaders,
          intervalMs: config.metrics.otlpIntervalMs,
          resource: { 'service.name': 'sightline', 'service.instance.id': `${config.host}:${(server.address() as { port: number }).port}` },
          now: core.now,
          onError: (err) => log.warn({ err }, 'self-metrics OTLP push failed'),
        });
        s.onClose.push(async () => {
          push.stop();
          await push.pushNow();
        });
      }
      if (config.ingestPort) {
        // Ingestion on its own port as well (SIGHTLINE_INGEST_PORT), same routes and state.
        const ingestApp = new Koa({ proxy: app.proxy, maxIpsCount: app.maxIpsCount });
        ingestApp.silent = true;
        ingestApp.use(requestId());
        ingestApp.use(errorHandler(log, config.baseUrl));
        ingestApp.use(authThrottle.middleware());
        ingestApp.use(ingestRouter.routes());
        const ingestServer = http.createServer(ingestApp.callback());
        await new Promise<void>((resolve) => ingestServer.listen(config.ingestPort, config.host, resolve));
        s.onClose.push(() => closeGracefully(ingestServer, config.shutdownTimeoutMs));
      }
      return server;
    },
    async close() {
      for (const fn of s.onClose.splice(0).reverse()) await fn();
      if (services.clickhouse) {
        await services.clickhouse.spans.flush().catch((err) => log.error({ err }, 'ClickHouse: spans not flushed at close'));
        await services.clickhouse.logs.flush().catch((err) => log.error({ err }, 'ClickHouse: logs not flushed at close'));
        await services.clickhouse.metrics.flush().catch((err) => log.error({ err }, 'ClickHouse: metric points not flushed at close'));
        await services.clickhouse.errors.flush().catch((err) => log.error({ err }, 'ClickHouse: error events not flushed at close'));
        await services.clickhouse.captures?.flush().catch((err) => log.error({ err }, 'ClickHouse: capture events not flushed at close'));
        await services.clickhouse.ai.flush().catch((err) => log.error({ err }, 'ClickHouse: agent observations and scores not flushed at close'));
        await services.clickhouse.releases.flush().catch((err) => log.error({ err }, 'ClickHouse: release rollups not flushed at close'));
        await services.clickhouse.engine.close();
      }
      db.close();
    },
  };

  const ingestRouter = buildIngestRouter(s);
  app.use(ingestRouter.routes());
  for (const m of MOUNTS) m(s, base);
  app.use(base.routes());
  const rest = buildRestRouter(core, limiter);
  app.use(rest.router.routes());
  app.use((ctx) => {
    if (ctx.status === 404 && ctx.body === undefined) {
      // A path the catalogue knows with another method: 405 with Allow (RFC 9110 §15.5.6).
      const allow = rest.allowedMethods(ctx.path);
      if (allow) {
        throw new AppError(405, 'invalid_request_error', 'method_not_allowed', `${ctx.method} is not allowed on ${ctx.path}; use ${allow.join(', ')}.`, {
          headers: { Allow: allow.join(', ') },
        });
      }
      throw new AppError(404, 'not_found_error', 'route_not_found', `No route for ${ctx.method} ${ctx.path}. See ${config.baseUrl}/openapi.json.`);
    }
  });
  return s;
}

/**
 * Stop accepting, let in-flight requests (and the ingest writes they await) finish, then close.
 * Idle keep-alive connections are closed at once; busy ones get `timeoutMs` before being cut.
 */
function closeGracefully(server: http.Server, timeoutMs: number): Promise<void> {
  return new Promise<void>((resolve) => {
    const timer = setTimeout(() => server.closeAllConnections(), timeoutMs);
    timer.unref();
    server.close(() => {
      clearTimeout(timer);
      resolve();
    });
    server.closeIdleConnections();
  });
}

/** Counts what each telemetry write stored, by signal. */
function countingWriter(writer: TelemetryWriter, metrics: SelfMetrics): TelemetryWriter {
  return {
    ...writer,
    insertSpans: (...a) => {
      const n = writer.insertSpans(...a);
      metrics.countIngest('spans', 'accepted', n);
      return n;
    },
    insertLogs: (...a) => {
      const n = writer.insertLogs(...a);
      metrics.countIngest('logs', 'accepted', n);
      return n;
    },
    insertMetricPoints: (...a) => {
      const n = writer.insertMetricPoints(...a);
      metrics.countIngest('metric_points', 'accepted', n);
      return n;
    },
  };
}

/** What system.status answers: the self-metrics as JSON plus database facts. */
async function serverStatus(s: Sightline, pgProbe: PostgresProbe | null): Promise<Record<string, unknown>> {
  const snapshot = await s.metrics.snapshot();
  const pick = (name: string) => snapshot.find((m) => m.name === name)?.values ?? [];
  const requests = pick('sightline_http_requests_total').map((v) => ({ operation: String(v.labels.operation), status: Number(v.labels.status), count: v.value }));
  const ingest = pick('sightline_ingest_items_total').map((v) => ({ signal: String(v.labels.signal), outcome: String(v.labels.outcome), count: v.value }));
  const ready = await import('./core/health.js').then((h) => h.runReadiness(s.readiness));
  return {
    ready: ready.ready,
    checks: ready.checks,
    uptime_seconds: Math.round(process.uptime()),
    database: { file: s.config.dbFile, ...s.services.system.sizes(), schema: s.services.system.schema() },
    write_queue_depth: s.services.writeBatch.depth(),
    clickhouse: s.services.clickhouse ? await clickHouseStatus(s.services.clickhouse.engine) : null,
    postgres: pgProbe ? await pgProbe.status() : null,
    retention: s.retention.last(),
    requests: requests.sort((a, b) => b.count - a.count),
    ingest,
    gauges: Object.fromEntries(
      snapshot.filter((m) => String(m.type) === 'gauge' && m.name.startsWith('sightline_') && !m.name.startsWith('sightline_process') && !m.name.startsWith('sightline_nodejs')).map((m) => [m.name, m.values.length === 1 && !Object.keys(m.values[0]!.labels).length ? m.values[0]!.value : m.values.map((v) => ({ ...v.labels, value: v.value }))]),
    ),
  };
}
