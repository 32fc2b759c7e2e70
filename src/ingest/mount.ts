import Router from '@koa/router';
import type Koa from 'koa';
import { availableParallelism } from 'node:os';
import { credentialFromHeaders } from '../core/authenticate.js';
import { AppError, ForbiddenError, ValidationError } from '../core/errors.js';
import type { Sightline } from '../server.js';
import { encodeExportResponse, type OtlpEncoding, type OtlpSignal } from './otlp/decode.js';
import { resolveSentryKey } from './sentry/envelope.js';
import type { FeedbackRecord } from './sentry/normalize.js';
import { expectErrorGroups, ingestKeyedErrorEvents, publishGroupChanges, SpikeGuard } from './pipeline.js';
import { IngestQuota, ingestIdentity, type IngestIdentity } from './auth.js';
import { readIngestBody } from './body.js';
import { ingestLimitsFromEnv, type IngestLimits } from './limits.js';
import { sharedDecodePool, type DecodePool, type IngestRun } from './worker/pool.js';
import type { IngestHead, IngestJob } from './process.js';
import { mountAiIngest } from './ai-mount.js';
import { mountPosthogCapture } from './posthog.js';
import { mountStripeWebhook } from './stripe-webhook.js';
import { feedbackUserFields } from './sentry/normalize.js';
import { userField } from '../domain/errors/users.js';
import { attachPrepared } from '../domain/ai/prepared.js';
import { attachEncoded } from '../storage/clickhouse/span-rows.js';

const SENTRY_CORS = {
  'Access-Control-Allow-Origin': '*',
  'Access-Control-Allow-Methods': 'POST, OPTIONS',
  'Access-Control-Allow-Headers': 'content-type, x-sentry-auth, authorization, sentry-trace, baggage, content-encoding',
  'Access-Control-Expose-Headers': 'x-sentry-error, x-sentry-rate-limits, retry-after',
  'Access-Control-Max-Age': '600',
};

/** Decode workers: SIGHTLINE_INGEST_WORKERS, default one per core but one (at least 1, at most 4); 0 decodes on the main thread. */
/** The decode pool this server's ingestion uses, with every worker started (see DecodePool.warm). */
export function warmDecodePool(s: Sightline): DecodePool {
  const pool = sharedDecodePool(workerCount(s));
  pool.warm();
  return pool;
}

function workerCount(s: Sightline): number {
  const v = s.config.ingest.workers ?? (process.env.SIGHTLINE_INGEST_WORKERS ? Number(process.env.SIGHTLINE_INGEST_WORKERS) : undefined);
  if (v !== undefined && Number.isInteger(v) && v >= 0) return v;
  return Math.max(1, Math.min(4, availableParallelism() - 1));
}

/** Sentry's answer to a feedback or event refused by a limit: the SDK backs off for this category. */
interface SentryLimit {
  category: 'error' | 'feedback';
  wait: number;
  reason: string;
}

/**
 * OTLP/HTTP and Sentry ingestion under {ingest_url}. Each request is authenticated before its body is
 * decompressed, decoded on the decode worker pool, then written slice by slice; the reply is sent
 * when every slice is committed.
 */
export function buildIngestRouter(s: Sightline): Router {
  const router = new Router({ prefix: '/ingest' });
  const spike = new SpikeGuard();
  const quota = new IngestQuota(s.config.ingest.quotaPerMinute);
  const limits: IngestLimits = { ...ingestLimitsFromEnv(), ...(s.config.ingest.limits as Partial<IngestLimits> | undefined) };
  const pool = sharedDecodePool(workerCount(s));
  const { services } = s;
  const now = () => s.core.now();
  const bodyLimits = s.config.ingest;

  const recordOutcomes = (projectId: string, t: number, head: IngestHead) => {
    for (const o of head.outcomes) services.ingestMisc.recordOutcome(projectId, t, o.category, o.reason, o.quantity);
  };

  /**
   * Write a decoded job slice by slice (each its own write step, so other requests run between them).
   * Committed when this returns. Feedback items go through feedback.create.
   */
  async function writeRun(id: IngestIdentity, run: IngestRun, source: 'otlp' | 'sentry', t: number) {
    const pid = id.project.id;
    let accepted = 0;
    let dropped = 0;
    const limited: SentryLimit[] = [];
    let feedbackKept = 0;
    let first = true;
    for await (const slice of run.slices) {
      const head = first ? run.head : null;
      first = false;
      const r = await services.writeBatch(() => {
        if (head) recordOutcomes(pid, t, head);
        if (slice.sessions?.length) services.ingestMisc.recordSessions(pid, slice.sessions, t);
        for (const e of slice.replayEvents ?? []) recordReplayEvent(pid, e, t);
        for (const r of slice.recordings ?? []) {
          const payload = Buffer.from(r.payload.buffer, r.payload.byteOffset, r.payload.byteLength);
          services.ingestMisc.addReplayRecording(pid, r.replayId, r.segmentId, payload, t);
        }
        for (const c of slice.checkIns ?? []) services.ingestMisc.recordCheckIn(pid, c, t);
        if (slice.spans?.length) {
          if (slice.ai) attachPrepared(slice.spans, slice.ai);
          if (slice.ch) attachEncoded(slice.spans, slice.ch);
          services.telemetry.insertSpans(pid, slice.spans, source, t);
        }
        if (slice.logs?.length) services.telemetry.insertLogs(pid, slice.logs, source, t);
        if (slice.points?.length) services.telemetry.insertMetricPoints(pid, slice.points, t);
        return slice.errors?.length ? ingestKeyedErrorEvents(services, spike, id.project, slice.errors, t) : null;
      }, slice.errors?.length ? expectErrorGroups(services, id.project, slice.errors) : undefined);
      // Committed: cron monitors (src/core/monitoring.ts) take each check-in; the envelope is
      // acknowledged once its result is stored (with ClickHouse, inserted there).
      for (const c of slice.checkIns ?? []) {
        await services.monitoring.onCheckIn(pid, c.payload as Record<string, unknown>, t);
        services.events.publish({ type: 'checkin.received', projectId: pid, at: t, checkIn: c.payload as Record<string, unknown> });
      }
      if (r) {
        publishGroupChanges(services, pid, r, t);
        accepted += r.accepted;
        dropped += r.dropped;
      }
      for (const fb of slice.feedback ?? []) {
        const out = await recordFeedback(id, fb.record, fb.payload, t);
        if (out === 'ok') feedbackKept++;
        else if (out) limited.push(out);
      }
    }
    if (first && run.head.outcomes.length) await services.writeBatch(() => recordOutcomes(pid, t, run.head));
    if (dropped) limited.push({ category: 'error', wait: SpikeGuard.secondsToNextMinute(now()), reason: 'spike_protection' });
    return { accepted, dropped, limited, feedbackKept };
  }

  async function decode(job: IngestJob): Promise<IngestRun> {
    return pool.run(job, s.config.ingest.maxDecompressedBytes);
  }

  // ---- OTLP/HTTP ---------------------------------------------------------------------------
  const otlp = (signal: OtlpSignal) => async (ctx: Koa.Context) => {
    const type = (ctx.get('content-type') || '').split(';')[0]!.trim().toLowerCase();
    const enc: OtlpEncoding | null = type === 'application/x-protobuf' || type === 'application/protobuf' ? 'protobuf' : type === 'application/json' ? 'json' : null;
    if (!enc) throw new AppError(415, 'invalid_request_error', 'unsupported_media_type', 'OTLP/HTTP accepts application/x-protobuf or application/json.');
    const id = ingestIdentity(services, credentialFromHeaders(ctx.headers), now());
    const body = await readIngestBody(ctx, bodyLimits);
    const t = now();
    // Spans bound for ClickHouse are encoded as its rows on the decode worker (span-rows.ts).
    const clickhouse = signal === 'traces' && services.clickhouse ? { projectId: Number(id.project.id) } : undefined;
    const run = await decode({ kind: 'otlp', signal, enc, body, receivedMs: t, limits, ...(clickhouse ? { clickhouse } : {}) });
    try {
      quota.take(id.project.id, run.head.quotaRecords, t);
    } catch (err) {
      run.cancel();
      throw err;
    }
    const r = await writeRun(id, run, 'otlp', t);
    let message = run.head.rejectionMessage;
    if (r.dropped) message = [message, `${r.dropped} exception event(s) dropped by spike protection`].filter(Boolean).join('; ');
    ctx.status = 200;
    ctx.type = enc === 'protobuf' ? 'application/x-protobuf' : 'application/json';
    ctx.body = encodeExportResponse(signal, enc, run.head.rejected, message);
  };
  router.post('/v1/traces', otlp('traces'));
  router.post('/v1/logs', otlp('logs'));
  router.post('/v1/metrics', otlp('metrics'));

  // ---- Sentry envelope and store ------------------------------------------------------------
  /** The key from X-Sentry-Auth, Authorization or the query string (no body needed). */
  const sentryKeyFromRequest = (ctx: Koa.Context) =>
    resolveSentryKey({ authHeader: ctx.get('x-sentry-auth') || undefined, authorization: ctx.get('authorization') || undefined, query: ctx.querystring });

  const sentryIdentity = (ctx: Koa.Context, key: string | undefined): IngestIdentity => {
    const id = ingestIdentity(services, key ?? credentialFromHeaders(ctx.headers), now());
    if (id.project.id !== String(ctx.params.project_id)) {
      throw new ForbiddenError('project_mismatch', 'This key belongs to another project than the one in the URL: check the DSN.');
    }
    return id;
  };

  const sentryReply = (ctx: Koa.Context, eventId: string | undefined, limited: SentryLimit[], accepted: number) => {
    if (limited.length) {
      ctx.set('X-Sentry-Rate-Limits', limited.map((l) => `${l.wait}:${l.category}:project:${l.reason}`).join(', '));
      if (!accepted) {
        const wait = Math.max(...limited.map((l) => l.wait));
        const first = limited[0]!;
        ctx.set('Retry-After', String(wait));
        ctx.status = 429;
        ctx.body =
          first.category === 'feedback'
            ? { type: 'rate_limit_error', code: first.reason, message: 'The feedback quota of this project is used up.', retry_after: wait }
            : { type: 'rate_limit_error', code: 'spike_protection', message: 'Spike protection dropped these events.', retry_after: wait };
        return;
      }
    }
    ctx.status = 200;
    ctx.body = { id: eventId ?? null };
  };

  const handleEnvelope = async (ctx: Koa.Context) => {
    ctx.set(SENTRY_CORS);
    // Authenticate before decompressing: by header or query, else by the envelope header's dsn,
    // read from the first decompressed line before anything else is inflated.
    const key = sentryKeyFromRequest(ctx);
    let id: IngestIdentity | null = key ? sentryIdentity(ctx, key) : null;
    const body = await readIngestBody(ctx, bodyLimits, {
      beforeRest: id
        ? undefined
        : (head) => {
            let dsn: string | undefined;
            try {
              const h = JSON.parse(head.toString('utf8'));
              if (typeof h?.dsn === 'string') dsn = h.dsn;
            } catch {
              /* not an envelope header: no key */
            }
            id = sentryIdentity(ctx, resolveSentryKey({ envelopeDsn: dsn }));
          },
    });
    if (!id) id = sentryIdentity(ctx, undefined);
    const t = now();
    const run = await decode({ kind: 'envelope', body, receivedMs: t, limits });
    try {
      if (run.head.quotaRecords) quota.take(id.project.id, run.head.quotaRecords, t);
    } catch (err) {
      run.cancel();
      throw err;
    }
    const r = await writeRun(id, run, 'sentry', t);
    // Accepted when anything was kept: an error event past spike protection, or any other item.
    const feedbackLimited = r.limited.filter((l) => l.category === 'feedback').length;
    const others = run.head.itemCount - (r.accepted + r.dropped) - feedbackLimited;
    const header = run.head.envelopeHeader ?? {};
    sentryReply(ctx, typeof header.event_id === 'string' ? header.event_id : undefined, r.limited, r.accepted + Math.max(0, others));
  };

  const handleStore = async (ctx: Koa.Context) => {
    ctx.set(SENTRY_CORS);
    const id = sentryIdentity(ctx, sentryKeyFromRequest(ctx));
    const body = await readIngestBody(ctx, bodyLimits);
    const t = now();
    const run = await decode({ kind: 'store', body, receivedMs: t, limits });
    const r = await writeRun(id, run, 'sentry', t);
    sentryReply(ctx, run.head.eventId, r.limited, r.accepted);
  };

  /* eslint-disable @typescript-eslint/no-explicit-any */
  function recordReplayEvent(projectId: string, e: any, t: number) {
    const replayId = String(e?.replay_id ?? e?.event_id ?? '').replace(/-/g, '').toLowerCase();
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

  /**
   * Sentry feedback goes through feedback.create with the ingest key: the same rules, quota and
   * idempotency as REST. A message over 4,000 characters is refused as over REST (counted as
   * `feedback`/`message_too_long`); an invalid contact email is dropped from a kept feedback (counted
   * as `feedback`/`invalid_contact_email`); over quota, the SDK gets 429 / X-Sentry-Rate-Limits.
   */
  async function recordFeedback(id: IngestIdentity, fb: FeedbackRecord, payload: any, t: number): Promise<'ok' | SentryLimit | null> {
    if (!fb.message.trim()) return null;
    const replayId = payload?.contexts?.replay?.replay_id;
    const groupId = fb.associated_event_id ? services.errorsIngest.groupOfEvent(id.project.id, fb.associated_event_id) : undefined;
    const input: Record<string, unknown> = {
      project_id: id.project.id,
      idempotency_key: `sentry:${fb.event_id}`,
      message: fb.message,
      ...(fb.name || userField(fb.user, 'username') ? { name: (fb.name || userField(fb.user, 'username')).slice(0, 128) } : {}),
      ...(fb.email || userField(fb.user, 'email') ? { contact_email: fb.email || userField(fb.user, 'email') } : {}),
      ...(fb.url ? { url: fb.url } : {}),
      ...(fb.environment ? { environment: fb.environment.slice(0, 128) } : {}),
      ...(fb.release ? { release: fb.release.slice(0, 256) } : {}),
      ...(fb.service_name ? { service: fb.service_name.slice(0, 256) } : {}),
      ...(fb.trace_id ? { trace_id: fb.trace_id } : {}),
      ...(typeof replayId === 'string' ? { replay_id: replayId.replace(/-/g, '').toLowerCase().slice(0, 128) } : {}),
      ...(groupId ? { error_group_id: groupId } : {}),
      ...feedbackUserFields(fb),
    };
    const count = (reason: string) => services.writeBatch(() => services.ingestMisc.recordOutcome(id.project.id, t, 'feedback', reason, 1));
    for (let attempt = 0; attempt < 3; attempt++) {
      try {
        await s.core.invoke('feedback.create', input, id.principal);
        return 'ok';
      } catch (err) {
        if (!(err instanceof AppError)) throw err;
        if (err instanceof ValidationError && err.param && err.param !== 'message' && err.param in input && err.param !== 'project_id') {
          // A bad optional field (an invalid contact email, a malformed url…) is dropped, counted, and the feedback kept.
          await count(err.param === 'contact_email' ? 'invalid_contact_email' : `invalid_${err.param}`);
          delete input[err.param];
          continue;
        }
        if (err.status === 429) {
          await count('rate_limited');
          return { category: 'feedback', wait: err.retryAfter ?? 60, reason: err.code };
        }
        await count(err.param === 'message' && fb.message.trim().length > 4000 ? 'message_too_long' : err.code);
        return null;
      }
    }
    return null;
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
  mountAiIngest(router, s, { readBody: (ctx) => readIngestBody(ctx, bodyLimits), quota });
  mountPosthogCapture(router, s, (ctx) => readIngestBody(ctx, bodyLimits), (pid, n, t) => quota.take(pid, n, t));
  mountStripeWebhook(router, s);
  return router;
}
