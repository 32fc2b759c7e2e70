import Router from '@koa/router';
import type Koa from 'koa';
import { readRawBody } from '../http/body.js';
import { credentialFromHeaders } from '../core/authenticate.js';
import { AppError, ForbiddenError, PayloadTooLargeError, ValidationError } from '../core/errors.js';
import type { Sightline } from '../server.js';
import { decodeLogs, decodeMetrics, decodeTraces, encodeExportResponse, OtlpDecodeError, type OtlpEncoding, type OtlpSignal } from './otlp/decode.js';
import { BodyTooLargeError, decompressBody, itemJson, parseEnvelope, resolveSentryKey, SentryParseError, splitReplayRecording, type Envelope } from './sentry/envelope.js';
import { errorEventFromSentry, feedbackFromSentry, logsFromSentryLogItem, sessionsFromSentry, spansFromSpanItem, spansFromTransaction } from './sentry/normalize.js';
import { errorEventsFromSpans, ingestErrorEvents, SpikeGuard } from './pipeline.js';
import { IngestQuota, ingestIdentity, type IngestIdentity } from './auth.js';
import type { ErrorEventRecord, LogRecordOut, SpanRecord } from '../domain/telemetry-types.js';
import { mountPosthogCapture } from './posthog.js';
import { mountStripeWebhook } from './stripe-webhook.js';

const SENTRY_CORS = {
  'Access-Control-Allow-Origin': '*',
  'Access-Control-Allow-Methods': 'POST, OPTIONS',
  'Access-Control-Allow-Headers': 'content-type, x-sentry-auth, authorization, sentry-trace, baggage, content-encoding',
  'Access-Control-Expose-Headers': 'x-sentry-error, x-sentry-rate-limits, retry-after',
  'Access-Control-Max-Age': '600',
};

async function readBody(ctx: Koa.Context, s: Sightline): Promise<Buffer> {
  const raw = await readRawBody(ctx, s.config.ingest.maxBodyBytes);
  try {
    return decompressBody(raw, ctx.get('content-encoding') || undefined, s.config.ingest.maxDecompressedBytes);
  } catch (err) {
    if (err instanceof BodyTooLargeError) throw new PayloadTooLargeError(s.config.ingest.maxDecompressedBytes);
    if (err instanceof SentryParseError) throw new ValidationError(`The body could not be decompressed: ${err.message}`, undefined, 'invalid_encoding');
    throw err;
  }
}

/** OTLP/HTTP and Sentry ingestion under {ingest_url}. Writes are committed before the response. */
export function buildIngestRouter(s: Sightline): Router {
  const router = new Router({ prefix: '/ingest' });
  const spike = new SpikeGuard();
  const quota = new IngestQuota(s.config.ingest.quotaPerMinute);
  const { services } = s;
  const now = () => s.core.now();

  // ---- OTLP/HTTP ---------------------------------------------------------------------------
  const otlp = (signal: OtlpSignal) => async (ctx: Koa.Context) => {
    const type = (ctx.get('content-type') || '').split(';')[0]!.trim().toLowerCase();
    const enc: OtlpEncoding | null = type === 'application/x-protobuf' || type === 'application/protobuf' ? 'protobuf' : type === 'application/json' ? 'json' : null;
    if (!enc) throw new AppError(415, 'invalid_request_error', 'unsupported_media_type', 'OTLP/HTTP accepts application/x-protobuf or application/json.');
    const id = ingestIdentity(services, credentialFromHeaders(ctx.headers), now());
    const body = await readBody(ctx, s);
    let rejected = 0;
    let message = '';
    try {
      const t = now();
      if (signal === 'traces') {
        const r = decodeTraces(body, enc);
        quota.take(id.project.id, r.records.length, t);
        const errorEvents = errorEventsFromSpans(r.records, t);
        const errs = await services.writeBatch(() => {
          services.telemetry.insertSpans(id.project.id, r.records, 'otlp', t);
          return ingestErrorEvents(services, spike, id.project, errorEvents, t);
        });
        ({ rejected, rejectionMessage: message } = r);
        if (errs.dropped) message = [message, `${errs.dropped} exception event(s) dropped by spike protection`].filter(Boolean).join('; ');
      } else if (signal === 'logs') {
        const r = decodeLogs(body, enc);
        quota.take(id.project.id, r.records.length, t);
        await services.writeBatch(() => services.telemetry.insertLogs(id.project.id, r.records, 'otlp', t));
        ({ rejected, rejectionMessage: message } = r);
      } else {
        const r = decodeMetrics(body, enc);
        quota.take(id.project.id, r.records.length, t);
        await services.writeBatch(() => services.telemetry.insertMetricPoints(id.project.id, r.records, t));
        ({ rejected, rejectionMessage: message } = r);
      }
    } catch (err) {
      if (err instanceof OtlpDecodeError) throw new ValidationError(`The OTLP ${signal} body could not be decoded: ${err.message}`, undefined, 'invalid_otlp');
      throw err;
    }
    ctx.status = 200;
    ctx.type = enc === 'protobuf' ? 'application/x-protobuf' : 'application/json';
    ctx.body = encodeExportResponse(signal, enc, rejected, message);
  };
  router.post('/v1/traces', otlp('traces'));
  router.post('/v1/logs', otlp('logs'));
  router.post('/v1/metrics', otlp('metrics'));

  // ---- Sentry envelope and store ------------------------------------------------------------
  const sentryIdentity = (ctx: Koa.Context, envelopeDsn?: string): IngestIdentity => {
    const key = resolveSentryKey({
      authHeader: ctx.get('x-sentry-auth') || undefined,
      authorization: ctx.get('authorization') || undefined,
      query: ctx.querystring,
      envelopeDsn,
    });
    const id = ingestIdentity(services, key ?? credentialFromHeaders(ctx.headers), now());
    if (id.project.id !== String(ctx.params.project_id)) {
      throw new ForbiddenError('project_mismatch', 'This key belongs to another project than the one in the URL: check the DSN.');
    }
    return id;
  };

  const sentryReply = (ctx: Koa.Context, eventId: string | undefined, dropped: number, accepted: number) => {
    if (dropped) {
      const wait = SpikeGuard.secondsToNextMinute(now());
      ctx.set('X-Sentry-Rate-Limits', `${wait}:error:project:spike_protection`);
      if (!accepted) {
        ctx.set('Retry-After', String(wait));
        ctx.status = 429;
        ctx.body = { type: 'rate_limit_error', code: 'spike_protection', message: 'Spike protection dropped these events.', retry_after: wait };
        return;
      }
    }
    ctx.status = 200;
    ctx.body = { id: eventId ?? null };
  };

  const handleEnvelope = async (ctx: Koa.Context) => {
    ctx.set(SENTRY_CORS);
    const body = await readBody(ctx, s);
    let env: Envelope;
    try {
      env = parseEnvelope(body);
    } catch (err) {
      if (err instanceof SentryParseError) throw new ValidationError(`The envelope could not be parsed: ${err.message}`, undefined, 'invalid_envelope');
      throw err;
    }
    const id = sentryIdentity(ctx, typeof env.header.dsn === 'string' ? env.header.dsn : undefined);
    const t = now();
    const errors: ErrorEventRecord[] = [];
    const spans: SpanRecord[] = [];
    const logs: LogRecordOut[] = [];
    const feedbackItems: unknown[] = [];
    for (const item of env.items) {
      try {
        switch (item.type) {
          case 'event':
            errors.push(errorEventFromSentry(itemJson(item), t));
            break;
          case 'transaction':
            spans.push(...spansFromTransaction(itemJson(item)));
            break;
          case 'span':
            spans.push(...spansFromSpanItem(itemJson(item)));
            break;
          case 'log':
            logs.push(...logsFromSentryLogItem(itemJson(item), t));
            break;
          case 'feedback':
          case 'user_report':
            feedbackItems.push(itemJson(item));
            break;
          case 'session':
          case 'sessions':
            services.ingestMisc.recordSessions(id.project.id, sessionsFromSentry(item.type, itemJson(item), t), t);
            break;
          case 'replay_event':
            recordReplayEvent(id.project.id, itemJson(item), t);
            break;
          case 'replay_recording': {
            const { header } = splitReplayRecording(item.payload);
            const replayId = String(env.header.event_id ?? '').replace(/-/g, '').toLowerCase();
            if (replayId) services.ingestMisc.addReplayRecording(id.project.id, replayId, Number(header.segment_id ?? 0), item.payload, t);
            break;
          }
          case 'check_in': {
            const c = itemJson(item);
            services.ingestMisc.recordCheckIn(
              id.project.id,
              {
                check_in_id: String(c.check_in_id ?? ''),
                monitor_slug: String(c.monitor_slug ?? ''),
                status: String(c.status ?? 'unknown'),
                duration_s: typeof c.duration === 'number' ? c.duration : null,
                environment: String(c.environment ?? 'production'),
                release: String(c.release ?? ''),
                payload: c,
              },
              t,
            );
            break;
          }
          case 'client_report': {
            const r = itemJson(item);
            for (const d of Array.isArray(r.discarded_events) ? r.discarded_events : []) {
              if (typeof d?.quantity === 'number') services.ingestMisc.recordOutcome(id.project.id, t, `client:${d.category}`, String(d.reason), d.quantity);
            }
            break;
          }
          default:
            // attachment, profile, statsd… are accepted and not stored; unknown items are skipped.
            break;
        }
      } catch (err) {
        if (err instanceof SentryParseError) {
          services.ingestMisc.recordOutcome(id.project.id, t, item.type, 'invalid', 1);
          continue;
        }
        throw err;
      }
    }
    if (spans.length) quota.take(id.project.id, spans.length, t);
    const r = await services.writeBatch(() => {
      if (spans.length) services.telemetry.insertSpans(id.project.id, spans, 'sentry', t);
      if (logs.length) services.telemetry.insertLogs(id.project.id, logs, 'sentry', t);
      return ingestErrorEvents(services, spike, id.project, errors, t);
    });
    for (const fb of feedbackItems) await recordFeedback(id, fb, t);
    sentryReply(ctx, typeof env.header.event_id === 'string' ? env.header.event_id : undefined, r.dropped, r.accepted + (env.items.length - errors.length));
  };

  const handleStore = async (ctx: Koa.Context) => {
    ctx.set(SENTRY_CORS);
    const body = await readBody(ctx, s);
    const id = sentryIdentity(ctx);
    let event: unknown;
    try {
      event = JSON.parse(body.toString('utf8'));
    } catch {
      throw new ValidationError('The store body is not a JSON event.', undefined, 'invalid_event');
    }
    const t = now();
    const rec = errorEventFromSentry(event, t);
    const r = await services.writeBatch(() => ingestErrorEvents(services, spike, id.project, [rec], t));
    sentryReply(ctx, rec.event_id, r.dropped, r.accepted);
  };

  /* eslint-disable @typescript-eslint/no-explicit-any */
  function recordReplayEvent(projectId: string, e: any, t: number) {
    const replayId = String(e.replay_id ?? e.event_id ?? '').replace(/-/g, '').toLowerCase();
    if (!replayId) return;
    const ts = (v: unknown) => (typeof v === 'number' ? v * 1000 : typeof v === 'string' ? Date.parse(v) : NaN);
    const timestamp = Number.isFinite(ts(e.timestamp)) ? ts(e.timestamp) : t;
    const started = Number.isFinite(ts(e.replay_start_timestamp)) ? ts(e.replay_start_timestamp) : timestamp;
    const ids = (v: unknown) => (Array.isArray(v) ? v.map((x) => String(x).replace(/-/g, '').toLowerCase()) : []);
    services.ingestMisc.upsertReplay(
      projectId,
      {
        replay_id: replayId,
        timestamp_ms: timestamp,
        started_ms: started,
        urls: Array.isArray(e.urls) ? e.urls.map(String) : [],
        error_ids: ids(e.error_ids),
        trace_ids: ids(e.trace_ids),
        environment: String(e.environment ?? 'production'),
        release: String(e.release ?? ''),
        user: e.user ?? null,
      },
      t,
    );
  }

  /** Sentry feedback goes through feedback.create with the ingest key: same rules, quota and idempotency. */
  async function recordFeedback(id: IngestIdentity, payload: any, t: number) {
    const fb = feedbackFromSentry(payload, t);
    if (!fb.message.trim()) return;
    const replayId = payload?.contexts?.replay?.replay_id;
    const groupId = fb.associated_event_id ? services.errorsIngest.groupOfEvent(id.project.id, fb.associated_event_id) : undefined;
    const input: Record<string, unknown> = {
      project_id: id.project.id,
      idempotency_key: `sentry:${fb.event_id}`,
      message: fb.message.slice(0, 4000),
      ...(fb.name ? { name: fb.name.slice(0, 128) } : {}),
      ...(fb.email ? { contact_email: fb.email } : {}),
      ...(fb.url ? { url: fb.url } : {}),
      ...(fb.environment ? { environment: fb.environment.slice(0, 128) } : {}),
      ...(fb.release ? { release: fb.release.slice(0, 256) } : {}),
      ...(fb.service_name ? { service: fb.service_name.slice(0, 256) } : {}),
      ...(fb.trace_id ? { trace_id: fb.trace_id } : {}),
      ...(typeof replayId === 'string' ? { replay_id: replayId.replace(/-/g, '').toLowerCase().slice(0, 128) } : {}),
      ...(groupId ? { error_group_id: groupId } : {}),
      ...(fb.source ? { metadata: { source: fb.source.slice(0, 2048) } } : {}),
    };
    try {
      await s.core.invoke('feedback.create', input, id.principal);
    } catch (err) {
      // A feedback item that breaks a rule (or is over quota) is dropped and counted, not fatal to the envelope.
      if (!(err instanceof AppError)) throw err;
      services.ingestMisc.recordOutcome(id.project.id, t, 'feedback', err.code, 1);
    }
  }

  for (const path of ['/api/:project_id/envelope/', '/api/:project_id/envelope']) {
    router.post(path, handleEnvelope);
    router.options(path, (ctx) => {
      ctx.set(SENTRY_CORS);
      ctx.status = 204;
    });
  }
  for (const path of ['/api/:project_id/store/', '/api/:project_id/store']) {
    router.post(path, handleStore);
    router.options(path, (ctx) => {
      ctx.set(SENTRY_CORS);
      ctx.status = 204;
    });
  }
  mountPosthogCapture(router, s, (ctx) => readBody(ctx, s), (pid, n, t) => quota.take(pid, n, t));
  mountStripeWebhook(router, s);
  return router;
}
