import { Readable } from 'node:stream';
import Router from '@koa/router';
import type Koa from 'koa';
import type { AnyOperation } from '../../operations/define.js';
import { fieldLocations } from '../../operations/define.js';
import { authenticate, credentialFromHeaders } from '../core/authenticate.js';
import { AppError, AuthenticationError, ValidationError } from '../core/errors.js';
import type { Core } from '../core/invoke.js';
import { serializeCapped } from '../core/response-size.js';
import { readJsonBody } from './body.js';
import type { RequestLimiter } from './middleware/rate-limit.js';

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

/** `application/json` or any `+json` media type, parameters (charset) ignored. */
const JSON_MEDIA_TYPE = /^application\/(?:[\w.+-]+\+)?json\s*(?:;|$)/i;

export interface RestFace {
  router: Router;
  /** Method lookup for a path the catalogue knows (405 with Allow for a wrong method). */
  allowedMethods(path: string): string[] | null;
}

/** The REST face: one route per catalogue operation, every call through core.invoke. */
export function buildRestRouter(core: Core, limiter: RequestLimiter): RestFace {
  const router = new Router();
  const routes: { re: RegExp; methods: Set<string> }[] = [];
  for (const op of core.operations.values()) {
    const where = fieldLocations(op);
    const path = koaPath(op.path);
    const re = new RegExp('^' + op.path.replace(/[.*+?^$()|[\]\\]/g, '\\$&').replace(/\{[a-z_]+\}/g, '[^/]+') + '/?$');
    let entry = routes.find((r) => r.re.source === re.source);
    if (!entry) routes.push((entry = { re, methods: new Set() }));
    entry.methods.add(op.method);
    if (op.cors) {
      entry.methods.add('OPTIONS');
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
  return {
    router,
    allowedMethods(path) {
      const r = routes.find((x) => x.re.test(path));
      if (!r) return null;
      const m = [...r.methods];
      if (m.includes('GET')) m.push('HEAD');
      return m;
    },
  };
}

async function handle(
  core: Core,
  limiter: RequestLimiter,
  op: AnyOperation,
  where: ReturnType<typeof fieldLocations>,
  ctx: Koa.Context,
) {
  ctx.set(limiter.headers());
  const secret = credentialFromHeaders(ctx.headers);
  // The same identity as the MCP face (the credential), so both faces share one budget.
  const counted = limiter.hit(secret ?? `ip:${ctx.ip}`);
  if (counted instanceof Promise) await counted;
  const principal = authenticate(core.services, secret, core.now());
  if (!principal) throw new AuthenticationError(secret ? 'The credential is not valid (unknown, revoked or expired).' : undefined);

  const input: Record<string, unknown> = {};
  if (where.body.length) {
    requireJsonContentType(ctx);
    Object.assign(input, await readJsonBody(ctx, op.maxBodyBytes ?? core.services.config.bodyLimitBytes));
  }
  for (const [q, raw] of Object.entries(ctx.query)) {
    const v = queryValue(raw);
    if (v === undefined) continue;
    if (where.query.includes(q)) input[q] = v;
    else throw unknownQueryParameter(q, where.query);
  }
  for (const [header, field] of Object.entries(op.headerInputs ?? {})) {
    // A header sent empty is an invalid value, not an absent one (issue 10 item 6).
    const v = ctx.headers[header.toLowerCase()];
    if (v !== undefined) input[field] = Array.isArray(v) ? v.join(', ') : v;
  }
  for (const p of where.path) input[p] = ctx.params[p];

  // A client asking for JSON only (the typed client, the CLI) gets the final JSON answer instead.
  const streamType = op.streams?.contentType.split(';')[0]!.trim();
  const acceptStream = !!streamType && ctx.accepts(streamType, 'application/json') === streamType;
  // The client hanging up before the answer is sent aborts a read's work (HandlerContext.signal): slow
  // reads and nested executes (automations.preview) stop instead of running for nobody. A write goes
  // on to the end: what it was asked to do is its effect (threads.ask stores the agent's answer
  // whatever happens to the caller), and stopping it half-way would leave half of it done.
  const gone = op.risk === 'read' ? new AbortController() : null;
  const onClose = () => {
    if (!ctx.res.writableEnded) gone?.abort();
  };
  if (gone) ctx.res.once('close', onClose);
  let result: Awaited<ReturnType<Core['invoke']>>;
  try {
    result = await core.invoke(op.operationId, input, principal, { requestId: ctx.state.requestId, acceptStream, ...(gone ? { signal: gone.signal } : {}) });
  } finally {
    if (gone) ctx.res.off('close', onClose);
  }
  if (result.stream && op.streams) {
    // A streamed answer: chunks go out as they come (no buffering proxies); the handler owns what
    // happens if the client leaves (the stream is destroyed, the work it started goes on).
    ctx.status = result.status;
    ctx.set({ ...result.headers, 'Cache-Control': 'no-store', 'X-Accel-Buffering': 'no' });
    ctx.type = op.streams.contentType;
    ctx.body = Readable.from(result.stream, { objectMode: false });
    return;
  }
  // Serialized once here, with the response size cap (one mechanism for every operation).
  const body = serializeCapped(op, result.value, core.services.config.maxResponseBytes);
  ctx.status = result.status;
  ctx.set(result.headers);
  ctx.type = 'application/json; charset=utf-8';
  ctx.body = body;
}

function unknownQueryParameter(name: string, accepted: string[]): ValidationError {
  const list = accepted.length ? `Accepted query parameters: ${accepted.join(', ')}.` : 'This operation takes no query parameters.';
  return new ValidationError(`Unknown query parameter \`${name}\`: this operation does not accept it. ${list}`, name, 'unknown_field');
}

/** A body operation reads JSON only; a body sent as anything else is 415 (issue 10 item 8). */
function requireJsonContentType(ctx: Koa.Context): void {
  const length = ctx.get('content-length');
  const hasBody = (length !== '' && length !== '0') || ctx.get('transfer-encoding') !== '';
  if (!hasBody) return;
  const type = ctx.get('content-type');
  if (JSON_MEDIA_TYPE.test(type)) return;
  throw new AppError(
    415,
    'invalid_request_error',
    'unsupported_media_type',
    `The request body must be JSON sent with \`Content-Type: application/json\`${type ? ` (got \`${type.slice(0, 100)}\`)` : ''}.`,
  );
}
