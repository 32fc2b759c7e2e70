/**
 * Langfuse compatibility, so a team can point its Langfuse SDK at Sightline unchanged
 * (`baseUrl` = `{ingest_url}`):
 * - `POST {ingest_url}/api/public/otel/v1/traces`: OTLP/HTTP from `@langfuse/otel` (v4/v5); every
 *   span sent here becomes an agent observation (src/domain/ai/otel-mapping.ts reads `langfuse.*`).
 * - `POST {ingest_url}/api/public/ingestion`: the legacy batch of the `langfuse` v2/v3 SDKs; answers
 *   207 with one status per item (an item that cannot be used does not stop the others).
 *
 * Credentials: HTTP Basic with a key pair derived from an ingest key (README, "Langfuse"):
 * public key `pk-lf-<project id>`, secret key `sk-lf-<ingest key>`. The ingest key authenticates;
 * the public key must name that key's project.
 */
import type Router from '@koa/router';
import type Koa from 'koa';
import { credentialFromHeaders } from '../core/authenticate.js';
import { AppError, AuthenticationError, ValidationError } from '../core/errors.js';
import type { Sightline } from '../server.js';
import { ingestIdentity, type IngestIdentity, type IngestQuota } from './auth.js';
import { decodeTraces, encodeExportResponse, OtlpDecodeError, type OtlpEncoding } from './otlp/decode.js';
import { applyLangfuseObservation, applyTrace, LangfuseItemError, parseLangfuseItem } from '../domain/ai/langfuse-legacy.js';
import { draftFromStored, writeDrafts } from './ai-write.js';

export const LANGFUSE_PUBLIC_PREFIX = 'pk-lf-';
export const LANGFUSE_SECRET_PREFIX = 'sk-lf-';

/** The Langfuse key pair for an ingest key of a project. */
export function langfuseKeyPair(projectId: string, ingestKey: string): { publicKey: string; secretKey: string } {
  return { publicKey: `${LANGFUSE_PUBLIC_PREFIX}${projectId}`, secretKey: `${LANGFUSE_SECRET_PREFIX}${ingestKey}` };
}

export function langfuseIdentity(ctx: Koa.Context, s: Sightline): IngestIdentity {
  const auth = ctx.get('authorization');
  const m = /^Basic\s+(.+)$/i.exec(auth.trim());
  if (!m) return ingestIdentity(s.services, credentialFromHeaders(ctx.headers), s.core.now());
  const decoded = Buffer.from(m[1]!, 'base64').toString('utf8');
  const colon = decoded.indexOf(':');
  const pub = colon === -1 ? '' : decoded.slice(0, colon);
  const secret = colon === -1 ? decoded : decoded.slice(colon + 1);
  const key = secret.startsWith(LANGFUSE_SECRET_PREFIX) ? secret.slice(LANGFUSE_SECRET_PREFIX.length) : secret;
  const id = ingestIdentity(s.services, key, s.core.now());
  if (pub !== `${LANGFUSE_PUBLIC_PREFIX}${id.project.id}`) {
    throw new AuthenticationError(`The Langfuse public key must be ${LANGFUSE_PUBLIC_PREFIX}<project id> of the ingest key's project (${LANGFUSE_PUBLIC_PREFIX}${id.project.id}).`);
  }
  return id;
}

export function mountLangfuse(router: Router, s: Sightline, deps: { readBody: (ctx: Koa.Context, s: Sightline) => Promise<Buffer>; quota: IngestQuota }): void {
  const { services } = s;

  router.post('/api/public/otel/v1/traces', async (ctx) => {
    const type = (ctx.get('content-type') || '').split(';')[0]!.trim().toLowerCase();
    const enc: OtlpEncoding | null = type === 'application/x-protobuf' || type === 'application/protobuf' ? 'protobuf' : type === 'application/json' ? 'json' : null;
    if (!enc) throw new AppError(415, 'invalid_request_error', 'unsupported_media_type', 'OTLP/HTTP accepts application/x-protobuf or application/json.');
    const who = langfuseIdentity(ctx, s);
    const body = await deps.readBody(ctx, s);
    const t = s.core.now();
    let r;
    try {
      r = decodeTraces(body, enc);
    } catch (err) {
      if (err instanceof OtlpDecodeError) throw new ValidationError(`The OTLP traces body could not be decoded: ${err.message}`, undefined, 'invalid_otlp');
      throw err;
    }
    deps.quota.take(who.project.id, r.records.length, t);
    await services.writeBatch(() => services.telemetry.insertSpans(who.project.id, r.records, 'langfuse', t));
    ctx.status = 200;
    ctx.type = enc === 'protobuf' ? 'application/x-protobuf' : 'application/json';
    ctx.body = encodeExportResponse('traces', enc, r.rejected, r.rejectionMessage);
  });

  router.post('/api/public/ingestion', async (ctx) => {
    const who = langfuseIdentity(ctx, s);
    const raw = await deps.readBody(ctx, s);
    let json: { batch?: unknown };
    try {
      json = JSON.parse(raw.toString('utf8'));
    } catch {
      throw new ValidationError('The body is not JSON: send { "batch": [...] }.', undefined, 'invalid_json');
    }
    if (!json || !Array.isArray(json.batch)) throw new ValidationError('The body must hold a `batch` array.', 'batch');
    if (json.batch.length > 1000) throw new ValidationError('At most 1,000 items per batch.', 'batch', 'too_many_items');
    const t = s.core.now();
    const pid = who.project.id;
    deps.quota.take(pid, json.batch.length, t);
    const successes: { id: string; status: number }[] = [];
    const errors: { id: string; status: number; message: string; error: string }[] = [];
    // The stored observations the items may merge into (by id, by trace), read before the writes:
    // with ClickHouse they are read from there once; with SQLite the view reads the database live.
    const view = await services.ai.ingestView(pid, ...idsOf(json.batch));
    // One write job per item, in order: they commit together (group commit), each in its own savepoint.
    const jobs = json.batch.map((item) => {
      const itemId = String((item as { id?: unknown })?.id ?? '');
      return services
        .writeBatch(() => {
          const parsed = parseLangfuseItem(item, t);
          if (parsed.kind === 'trace') {
            services.ai.upsertTrace(pid, parsed.trace);
            const info = services.ai.traceInfo(pid, parsed.trace.trace_id)!;
            // Identifiers sent on the trace after its observations flow down to them.
            const stale = view.observationsOfTrace(info.trace_id).filter((o) => (!o.session_id && info.session_id) || (!o.user_id && info.user_id));
            const drafts = stale.map((o) => {
              const d = draftFromStored(o);
              applyTrace(d, info);
              return d;
            });
            writeDrafts(services, pid, drafts, [], t);
          } else if (parsed.kind === 'observation') {
            const existing = view.get(parsed.id);
            const base = existing ? draftFromStored(existing) : null;
            const traceId = String(parsed.body.traceId ?? base?.trace_id ?? '');
            const info = traceId ? services.ai.traceInfo(pid, traceId) : null;
            writeDrafts(services, pid, [applyLangfuseObservation(base, parsed.obsType, parsed.body, info)], [], t);
          } else if (parsed.kind === 'score') {
            writeDrafts(services, pid, [], [parsed.score], t);
          }
        })
        .then(
          () => successes.push({ id: itemId, status: 201 }),
          (err: unknown) => {
            if (err instanceof LangfuseItemError) errors.push({ id: itemId, status: err.status, message: err.message, error: 'invalid_item' });
            else {
              s.log.error({ err }, 'langfuse ingestion item failed');
              errors.push({ id: itemId, status: 500, message: 'The item could not be stored.', error: 'internal_error' });
            }
          },
        );
    });
    await Promise.all(jobs);
    ctx.status = 207;
    ctx.body = { successes, errors };
  });
}

/** The observation ids (bodies' `id`) and trace ids (a trace item's `id`, an observation's `traceId`) a batch may read. */
function idsOf(batch: unknown[]): [string[], string[]] {
  const ids = new Set<string>();
  const traces = new Set<string>();
  for (const item of batch) {
    const it = item as { type?: unknown; body?: { id?: unknown; traceId?: unknown } } | null;
    const body = it?.body;
    if (!body || typeof body !== 'object') continue;
    const id = typeof body.id === 'string' || typeof body.id === 'number' ? String(body.id) : '';
    const traceId = typeof body.traceId === 'string' || typeof body.traceId === 'number' ? String(body.traceId) : '';
    if (id) (String(it!.type).startsWith('trace') ? traces : ids).add(id);
    if (traceId) traces.add(traceId);
  }
  return [[...ids], [...traces]];
}
