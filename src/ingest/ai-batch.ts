/**
 * Our own JSON batch endpoint for agent observations and scores, for anything neither OTLP nor the
 * Langfuse SDKs cover: `POST {ingest_url}/v1/ai/batch` with `{ observations: [...], scores: [...] }`
 * (at most 1,000 items in all), an ingest key in `x-service-key` or `Authorization: Bearer`.
 * All or nothing: an invalid item rejects the request (400, naming the item and field) and nothing
 * is stored; a success means every item is committed. The same id sent again replaces the item;
 * a score with `deleted: true` is a tombstone.
 */
import type Router from '@koa/router';
import type Koa from 'koa';
import { z } from 'zod';
import { credentialFromHeaders } from '../core/authenticate.js';
import { ValidationError } from '../core/errors.js';
import type { Sightline } from '../server.js';
import { ingestIdentity, type IngestQuota } from './auth.js';
import { contentFromMessages, normalizeContent } from '../domain/ai/content.js';
import { emptyDraft, OBSERVATION_TYPES, SCORE_DATA_TYPES, SCORE_SOURCES, type ObservationDraft, type ScoreDraft } from '../domain/ai/observation.js';
import { parseTimestamp } from '../domain/metrics/window.js';
import { writeDrafts } from './ai-write.js';

export const AI_BATCH_MAX_ITEMS = 1000;

const id = (max = 256) => z.string().max(max);
const time = z.string().refine((s) => parseTimestamp(s) !== null, 'must be an ISO 8601 date-time with a timezone');
const tokens = z.number().finite();

export const observationItem = z.strictObject({
  observation_id: id().min(1),
  parent_observation_id: id().optional(),
  trace_id: id(128).optional(),
  span_id: id(128).optional(),
  session_id: id().optional(),
  user_id: id().optional(),
  distinct_id: id().optional(),
  visitor_id: id().optional(),
  agent_id: id().optional(),
  workflow_id: id().optional(),
  step_id: id().optional(),
  observation_type: z.enum(OBSERVATION_TYPES),
  observation_name: id(1024).optional(),
  operation: id(64).optional().describe('GenAI operation, e.g. chat, embeddings, execute_tool'),
  message: z.string().max(4096).optional().describe('Error message (with status error)'),
  level: z.enum(['debug', 'info', 'warning', 'error']).optional(),
  status: z.enum(['ok', 'error']).optional(),
  model: id().optional(),
  provider: id().optional(),
  tool_name: id().optional(),
  started_at: time,
  ended_at: time.optional(),
  duration_ms: z.number().finite().min(0).optional(),
  prompt_tokens: tokens.optional(),
  completion_tokens: tokens.optional(),
  total_tokens: tokens.optional(),
  cost_usd: z.number().finite().min(0).optional(),
  environment: id().optional(),
  release: id().optional(),
  system: z.string().optional(),
  input: z.unknown().optional(),
  output: z.unknown().optional(),
  tags: z.union([z.array(z.string().max(256)).max(100), z.record(z.string(), z.string())]).optional(),
  attributes: z.record(z.string(), z.unknown()).optional(),
  privacy_mode: z.boolean().optional(),
});

export const scoreItem = z.strictObject({
  score_id: id().min(1),
  trace_id: id(128).optional(),
  observation_id: id().optional(),
  span_id: id(128).optional(),
  session_id: id().optional(),
  user_id: id().optional(),
  name: id().min(1),
  data_type: z.enum(SCORE_DATA_TYPES),
  value: z.union([z.number().finite(), z.boolean()]).optional(),
  string_value: z.string().max(1024).optional(),
  source: z.enum(SCORE_SOURCES).default('api'),
  comment: z.string().max(4096).optional(),
  author: id().optional(),
  model: id().optional(),
  environment: id().optional(),
  release: id().optional(),
  timestamp: time.optional(),
  metadata: z.record(z.string(), z.unknown()).optional(),
  deleted: z.boolean().optional(),
});

const batchSchema = z.strictObject({
  observations: z.array(observationItem).max(AI_BATCH_MAX_ITEMS).default([]),
  scores: z.array(scoreItem).max(AI_BATCH_MAX_ITEMS).default([]),
});

export function draftFromItem(o: z.output<typeof observationItem>): ObservationDraft {
  const started = parseTimestamp(o.started_at)!;
  const ended = o.ended_at ? parseTimestamp(o.ended_at)! : started + (o.duration_ms ?? 0);
  let input = o.input === undefined ? null : normalizeContent(o.input);
  if (o.system) input = input ? { ...input, system: input.system ? `${o.system}\n${input.system}` : o.system } : contentFromMessages([], o.system);
  const status = o.status ?? (o.level === 'error' ? 'error' : 'ok');
  return emptyDraft({
    ...Object.fromEntries(Object.entries(o).filter(([, v]) => typeof v === 'string')),
    observation_id: o.observation_id,
    observation_type: o.observation_type,
    operation: (o.operation ?? '').toLowerCase(),
    status_message: status === 'error' ? (o.message ?? '') : '',
    level: o.level ?? (status === 'error' ? 'error' : 'info'),
    status,
    source: 'api',
    started_ms: started,
    ended_ms: Math.max(started, ended),
    prompt_tokens: o.prompt_tokens ?? null,
    completion_tokens: o.completion_tokens ?? null,
    total_tokens: o.total_tokens ?? null,
    cost_usd: o.cost_usd ?? null,
    input,
    output: o.output === undefined ? null : normalizeContent(o.output),
    tags: Array.isArray(o.tags) ? o.tags : o.tags ? Object.entries(o.tags).map(([k, v]) => `${k}:${v}`) : [],
    attributes: o.attributes ?? {},
    privacy_mode: o.privacy_mode ?? false,
  } as Partial<ObservationDraft> & Pick<ObservationDraft, 'observation_id' | 'started_ms'>);
}

export function scoreFromItem(s: z.output<typeof scoreItem>, receivedMs: number): ScoreDraft {
  const v = s.value;
  const value = s.data_type === 'categorical' ? 0 : typeof v === 'boolean' ? (v ? 1 : 0) : (v ?? 0);
  return {
    score_id: s.score_id,
    trace_id: s.trace_id ?? '',
    observation_id: s.observation_id ?? '',
    span_id: s.span_id ?? '',
    session_id: s.session_id ?? '',
    user_id: s.user_id ?? '',
    name: s.name,
    value: s.data_type === 'boolean' ? (value ? 1 : 0) : value,
    string_value: s.data_type === 'categorical' ? (s.string_value ?? '') : '',
    data_type: s.data_type,
    source: s.source,
    comment: s.comment ?? '',
    author: s.author ?? '',
    model: s.model ?? '',
    environment: s.environment ?? '',
    release: s.release ?? '',
    started_ms: s.timestamp ? parseTimestamp(s.timestamp)! : receivedMs,
    deleted: s.deleted ?? false,
    metadata: s.metadata ?? {},
  };
}

export function mountAiBatch(router: Router, s: Sightline, deps: { readBody: (ctx: Koa.Context, s: Sightline) => Promise<Buffer>; quota: IngestQuota }): void {
  const { services } = s;
  router.post('/v1/ai/batch', async (ctx) => {
    const t = s.core.now();
    const who = ingestIdentity(services, credentialFromHeaders(ctx.headers), t);
    const raw = await deps.readBody(ctx, s);
    let json: unknown;
    try {
      json = JSON.parse(raw.toString('utf8'));
    } catch {
      throw new ValidationError('The body is not JSON: send { "observations": [...], "scores": [...] }.', undefined, 'invalid_json');
    }
    const parsed = batchSchema.safeParse(json);
    if (!parsed.success) {
      const issue = parsed.error.issues[0]!;
      const path = issue.path.join('.');
      const code = issue.code === 'unrecognized_keys' ? 'unknown_field' : 'invalid_parameter';
      const param = issue.code === 'unrecognized_keys' ? [path, (issue as { keys?: string[] }).keys?.[0]].filter(Boolean).join('.') : path;
      throw new ValidationError(`${param || 'body'}: ${issue.message}`, param || undefined, code);
    }
    const { observations, scores } = parsed.data;
    if (observations.length + scores.length > AI_BATCH_MAX_ITEMS) throw new ValidationError(`At most ${AI_BATCH_MAX_ITEMS} items per batch.`, 'observations', 'too_many_items');
    deps.quota.take(who.project.id, observations.length + scores.length, t);
    const drafts = observations.map(draftFromItem);
    const scoreDrafts = scores.map((x) => scoreFromItem(x, t));
    await services.writeBatch(() => writeDrafts(services, who.project.id, drafts, scoreDrafts, t));
    ctx.status = 200;
    ctx.body = { accepted: { observations: drafts.length, scores: scoreDrafts.length } };
  });
}
