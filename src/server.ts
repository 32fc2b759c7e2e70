import http from 'node:http';
import { readFileSync } from 'node:fs';
import Koa from 'koa';
import Router from '@koa/router';
import { pino, type Logger } from 'pino';
import { loadConfig, type AppConfig } from './core/config.js';
import { createCore, type Core } from './core/invoke.js';
import { createServices, type Services } from './core/services.js';
import { openDatabase, type Db } from './storage/db.js';
import { requestId } from './http/middleware/request-id.js';
import { errorHandler } from './http/middleware/errors.js';
import { RateLimiter } from './http/middleware/rate-limit.js';
import { buildRestRouter } from './http/router.js';
import { buildOpenApi } from './http/openapi.js';
import { AppError } from './core/errors.js';
import type { AnyOperation } from '../operations/define.js';
import { buildIngestRouter } from './ingest/mount.js';
import { oauthMount } from './oauth/mount.js';
import { mcpMount } from './mcp/http.js';
import { statusMount } from './status/mount.js';

export interface Sightline {
  config: AppConfig;
  db: Db;
  services: Services;
  core: Core;
  app: Koa;
  log: Logger;
  /** The per-credential rate limit shared by every face (REST, MCP). */
  limiter: RateLimiter;
  /** Extra cleanup registered by faces (MCP sessions, sandbox pool). */
  onClose: Array<() => Promise<void> | void>;
  listen(): Promise<http.Server>;
  close(): Promise<void>;
}

export interface SightlineOptions {
  now?: () => number;
  logger?: Logger;
  operations?: readonly AnyOperation[];
}

/** A face that mounts its own routes (MCP, OAuth, ingest) on the shared app. */
export type Mount = (s: Sightline, router: Router) => void;
/** Faces with routes of their own, mounted in this order before the REST router. */
const MOUNTS: Mount[] = [oauthMount, mcpMount, statusMount];

export function createSightline(configOverrides: Partial<AppConfig> = {}, opts: SightlineOptions = {}): Sightline {
  const config = loadConfig(process.env, configOverrides);
  const log = opts.logger ?? pino({ level: config.logLevel });
  const db = openDatabase(config.dbFile);
  const services = createServices(db, config, opts.now);
  services.events.onError = (err, event) => log.error({ err, event: event.type }, 'event subscriber failed');
  services.scheduler.onError = (err, job) => log.warn({ err, job: job.kind, key: job.key, attempt: job.attempts }, 'job failed');
  const core = createCore(services, { now: opts.now, operations: opts.operations });
  core.onInternalError = (err, operationId) => log.error({ err, operationId }, 'operation failed');

  const app = new Koa({ proxy: process.env.SIGHTLINE_TRUST_PROXY === '1' });
  app.silent = true;
  const limiter = new RateLimiter(config.rateLimit.limit, config.rateLimit.windowSeconds, core.now);
  const openapi = buildOpenApi(core.operations.values(), config);

  app.use(requestId());
  app.use(async (ctx, next) => {
    // Spec, Limits: responses carry RateLimit-Limit and RateLimit-Policy.
    ctx.set(limiter.headers());
    await next();
  });
  app.use(errorHandler(log, config.baseUrl));

  const base = new Router();
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
  const readme = readFileSync(new URL('../README.md', import.meta.url), 'utf8');
  base.get('/docs', (ctx) => {
    ctx.type = 'text/markdown; charset=utf-8';
    ctx.body = readme;
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
    onClose: [() => services.scheduler.stop()],
    async listen() {
      services.scheduler.start(); // monitors, mail and other due jobs (state in the database)
      const server = http.createServer(app.callback());
      await new Promise<void>((resolve) => server.listen(config.port, config.host, resolve));
      s.onClose.push(() => new Promise<void>((r) => server.close(() => r())));
      if (config.ingestPort) {
        // Ingestion on its own port as well (SIGHTLINE_INGEST_PORT), same routes and state.
        const ingestApp = new Koa({ proxy: app.proxy });
        ingestApp.silent = true;
        ingestApp.use(requestId());
        ingestApp.use(errorHandler(log, config.baseUrl));
        ingestApp.use(ingestRouter.routes());
        const ingestServer = http.createServer(ingestApp.callback());
        await new Promise<void>((resolve) => ingestServer.listen(config.ingestPort, config.host, resolve));
        s.onClose.push(() => new Promise<void>((r) => ingestServer.close(() => r())));
      }
      return server;
    },
    async close() {
      for (const fn of s.onClose.splice(0).reverse()) await fn();
      db.close();
    },
  };

  const ingestRouter = buildIngestRouter(s);
  app.use(ingestRouter.routes());
  for (const m of MOUNTS) m(s, base);
  app.use(base.routes());
  const rest = buildRestRouter(core, limiter);
  app.use(rest.routes());
  app.use(rest.allowedMethods({ throw: false }));
  app.use((ctx) => {
    if (ctx.status === 404 && ctx.body === undefined) {
      throw new AppError(404, 'not_found_error', 'route_not_found', `No route for ${ctx.method} ${ctx.path}. See ${config.baseUrl}/openapi.json.`);
    }
  });
  return s;
}
