/**
 * PostHog-compatible capture under {ingest_url}: what unmodified posthog-js and posthog-node send.
 * `/e`, `/i/v0/e`, `/capture`, `/batch` (with or without a trailing slash) take a JSON array, a
 * `{ api_key, batch }` object or one event; gzip by Content-Encoding, `compression=gzip-js` or the
 * magic bytes; base64 and form `data=`. `/flags` answers with no flags (feature flags are not a
 * Sightline feature), so SDKs fall back to their defaults. The project token is an ingest key
 * (`events:ingest`); the project needs product analytics. Writes are committed before the reply.
 */
import type Router from '@koa/router';
import type Koa from 'koa';
import { AppError, ForbiddenError, ValidationError } from '../core/errors.js';
import type { Sightline } from '../server.js';
import { CaptureDecodeError, decodeCaptureBody, parseCapturePayload } from '../domain/analytics/capture.js';
import { ingestIdentity } from './auth.js';
import { credentialFromHeaders } from '../core/authenticate.js';

const CORS = {
  'Access-Control-Allow-Origin': '*',
  'Access-Control-Allow-Methods': 'GET, POST, OPTIONS',
  'Access-Control-Allow-Headers': 'content-type, content-encoding, authorization, x-service-key',
  'Access-Control-Max-Age': '600',
};

const CAPTURE_PATHS = ['/e', '/i/v0/e', '/capture', '/batch', '/track', '/engage'];

/** `takeQuota` is the per-project ingest quota shared with the other ingestion routes (429 when over). */
export function mountPosthogCapture(
  router: Router,
  s: Sightline,
  readBody: (ctx: Koa.Context) => Promise<Buffer>,
  takeQuota: (projectId: string, records: number, now: number) => void = () => {},
): void {
  const { services } = s;
  const now = () => s.core.now();

  const capture = async (ctx: Koa.Context) => {
    ctx.set(CORS);
    let body: Buffer;
    if (ctx.method === 'GET') body = Buffer.from(String(ctx.query.data ?? ''), 'utf8');
    else body = await readBody(ctx);
    const t = now();
    let batch;
    try {
      const compression = typeof ctx.query.compression === 'string' ? ctx.query.compression : null;
      const decoded = decodeCaptureBody(body, { compression, contentType: ctx.get('content-type'), maxBytes: s.config.ingest.maxDecompressedBytes });
      batch = parseCapturePayload(decoded, t);
    } catch (err) {
      if (err instanceof CaptureDecodeError) throw new ValidationError(`The capture body could not be decoded: ${err.message}`, undefined, 'invalid_capture');
      throw err;
    }
    const token = batch.token ?? (typeof ctx.query.api_key === 'string' ? ctx.query.api_key : typeof ctx.query.token === 'string' ? ctx.query.token : null) ?? credentialFromHeaders(ctx.headers);
    const id = ingestIdentity(services, token, t);
    if (!services.config.revenue.analytics) throw new ForbiddenError('coming_soon', 'Product analytics is not available on this server yet.');
    if (!id.project.product_analytics) throw new ForbiddenError('plan_upgrade_required', 'Product analytics is not enabled for this project.');
    takeQuota(id.project.id, batch.events.length, t);
    const r = await services.writeBatch(() => services.analytics.ingest(id.project.id, batch.events, t));
    if (r.identityChanged) services.revenueCache.bump(id.project.id);
    ctx.status = 200;
    ctx.body = { status: 1, accepted: r.stored, skipped: batch.invalid };
  };

  for (const p of CAPTURE_PATHS) {
    for (const path of [p, `${p}/`]) {
      router.post(path, capture);
      router.get(path, capture);
      router.options(path, (ctx) => {
        ctx.set(CORS);
        ctx.status = 204;
      });
    }
  }

  // Feature flags: none defined. Both the v1 (`featureFlags`) and v2 (`flags`) answer shapes.
  const flags = async (ctx: Koa.Context) => {
    ctx.set(CORS);
    if (ctx.method === 'POST') {
      try {
        await readBody(ctx);
      } catch (err) {
        if (!(err instanceof AppError)) throw err;
      }
    }
    ctx.status = 200;
    ctx.body = { flags: {}, featureFlags: {}, featureFlagPayloads: {}, errorsWhileComputingFlags: false, quotaLimited: [], requestId: ctx.state.requestId ?? null };
  };
  for (const path of ['/flags', '/flags/', '/decide', '/decide/']) {
    router.post(path, flags);
    router.get(path, flags);
    router.options(path, (ctx) => {
      ctx.set(CORS);
      ctx.status = 204;
    });
  }
}
