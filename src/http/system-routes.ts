/**
 * The server's own endpoints, outside the catalogue: `/healthz` (alive), `/readyz` (ready to serve),
 * `/metrics` (Prometheus text, off unless a token or `SIGHTLINE_METRICS=public`), and the middleware
 * that times every request by operation for the self-metrics.
 */
import { timingSafeEqual } from 'node:crypto';
import type Koa from 'koa';
import type Router from '@koa/router';
import type { Core } from '../core/invoke.js';
import type { SelfMetrics } from '../core/self-metrics.js';
import { runReadiness, type ReadinessCheck } from '../core/health.js';
import type { AppConfig } from '../core/config.js';
import { koaPath } from './router.js';

/** Times each request and counts it by operationId (REST), route (ingest, OAuth, MCP) and final status. */
export function requestMetrics(core: Core, metrics: SelfMetrics): Koa.Middleware {
  const byRoute = new Map<string, string>();
  for (const op of core.operations.values()) byRoute.set(`${op.method} ${koaPath(op.path)}`, op.operationId);
  return async (ctx, next) => {
    const started = performance.now();
    try {
      await next();
    } finally {
      const route = (ctx as unknown as { _matchedRoute?: string | RegExp })._matchedRoute;
      const routeText = typeof route === 'string' ? route : undefined;
      const operation = (routeText && byRoute.get(`${ctx.method} ${routeText}`)) ?? (routeText ? `${ctx.method} ${routeText}` : 'unmatched');
      metrics.observeRequest(operation, ctx.status, (performance.now() - started) / 1000);
    }
  };
}

function bearerMatches(header: string | undefined, token: string): boolean {
  const m = /^Bearer\s+(.+)$/i.exec(header ?? '');
  if (!m) return false;
  const a = Buffer.from(m[1]!.trim());
  const b = Buffer.from(token);
  return a.length === b.length && timingSafeEqual(a, b);
}

export function mountSystemRoutes(router: Router, deps: { config: AppConfig; metrics: SelfMetrics; readiness: ReadonlyMap<string, ReadinessCheck> }): void {
  const { config, metrics, readiness } = deps;
  router.get('/healthz', (ctx) => {
    ctx.set('Cache-Control', 'no-store');
    ctx.body = { status: 'ok' };
  });
  router.get('/readyz', async (ctx) => {
    const r = await runReadiness(readiness);
    ctx.set('Cache-Control', 'no-store');
    ctx.status = r.ready ? 200 : 503;
    ctx.body = { status: r.ready ? 'ready' : 'not_ready', checks: r.checks };
  });
  router.get('/metrics', async (ctx) => {
    const { token } = config.metrics;
    if (!token && !config.metrics.public) {
      ctx.status = 404;
      ctx.body = { type: 'not_found_error', code: 'metrics_disabled', message: '/metrics is off: set SIGHTLINE_METRICS_TOKEN (scrape with that bearer token) or SIGHTLINE_METRICS=public.' };
      return;
    }
    if (token && !bearerMatches(ctx.get('authorization'), token)) {
      ctx.status = 401;
      ctx.set('WWW-Authenticate', 'Bearer realm="sightline-metrics"');
      ctx.body = { type: 'authentication_error', code: 'invalid_metrics_token', message: 'Send the metrics token as Authorization: Bearer <SIGHTLINE_METRICS_TOKEN>.' };
      return;
    }
    ctx.set('Cache-Control', 'no-store');
    ctx.type = metrics.registry.contentType;
    ctx.body = await metrics.text();
  });
}
