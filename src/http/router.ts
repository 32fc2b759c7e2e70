import Router from '@koa/router';
import type Koa from 'koa';
import type { AnyOperation } from '../../operations/define.js';
import { fieldLocations } from '../../operations/define.js';
import { authenticate, credentialFromHeaders } from '../core/authenticate.js';
import { AuthenticationError } from '../core/errors.js';
import type { Core } from '../core/invoke.js';
import { readJsonBody } from './body.js';
import type { RateLimiter } from './middleware/rate-limit.js';

/** OpenAPI path form → Koa form: /v1/projects/{project_id} → /v1/projects/:project_id */
export const koaPath = (p: string) => p.replace(/\{([a-z_]+)\}/g, ':$1');

const CORS_HEADERS = {
  'Access-Control-Allow-Origin': '*',
  'Access-Control-Allow-Headers': 'content-type, x-service-key, authorization, idempotency-key, x-request-id',
  'Access-Control-Expose-Headers': 'x-request-id, retry-after, ratelimit-limit, ratelimit-policy, ratelimit',
  'Access-Control-Max-Age': '600',
};

function queryValue(v: string | string[] | undefined): string | undefined {
  if (v === undefined) return undefined;
  return Array.isArray(v) ? v.join(',') : v;
}

/** The REST face: one route per catalogue operation, every call through core.invoke. */
export function buildRestRouter(core: Core, limiter: RateLimiter): Router {
  const router = new Router();
  for (const op of core.operations.values()) {
    const where = fieldLocations(op);
    const path = koaPath(op.path);
    if (op.cors) {
      router.options(path, (ctx) => {
        ctx.set({ ...CORS_HEADERS, 'Access-Control-Allow-Methods': `${op.method}, OPTIONS` });
        ctx.status = 204;
      });
    }
    router.register(path, [op.method], async (ctx) => {
      if (op.cors) ctx.set(CORS_HEADERS);
      await handle(core, limiter, op, where, ctx);
    });
  }
  return router;
}

async function handle(core: Core, limiter: RateLimiter, op: AnyOperation, where: ReturnType<typeof fieldLocations>, ctx: Koa.Context) {
  ctx.set(limiter.headers());
  const secret = credentialFromHeaders(ctx.headers);
  limiter.hit(secret ?? `ip:${ctx.ip}`);
  const principal = authenticate(core.services, secret, core.now());
  if (!principal) throw new AuthenticationError(secret ? 'The credential is not valid (unknown, revoked or expired).' : undefined);

  const input: Record<string, unknown> = {};
  if (where.body.length) Object.assign(input, await readJsonBody(ctx, op.maxBodyBytes ?? core.services.config.bodyLimitBytes));
  for (const q of where.query) {
    const v = queryValue(ctx.query[q]);
    if (v !== undefined) input[q] = v;
  }
  for (const [header, field] of Object.entries(op.headerInputs ?? {})) {
    const v = ctx.get(header);
    if (v !== '') input[field] = v;
  }
  for (const p of where.path) input[p] = ctx.params[p];

  const result = await core.invoke(op.operationId, input, principal, { requestId: ctx.state.requestId });
  ctx.status = result.status;
  ctx.set(result.headers);
  ctx.body = result.value ?? null;
}
