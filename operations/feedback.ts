import { randomUUID } from 'node:crypto';
import { z } from 'zod';
import { defineOperation, type HandlerContext } from './define.js';
import { csvList, isoDateTime, parseIso, projectId, queryInt, toIso } from './shared.js';
import { ConflictError, NotFoundError, RateLimitedError, ValidationError } from '../src/core/errors.js';
import { principalHolds } from '../src/core/principal.js';
import { IDEMPOTENCY_KEY, payloadHash, quotaRetryAfterSeconds } from '../src/domain/feedback/rules.js';
import type { FeedbackRow } from '../src/storage/feedback-repo.js';

const STATUSES = ['new', 'reviewed', 'archived'] as const;

/** Optional text: trimmed; empty after trimming counts as absent. */
const text = (max: number) =>
  z
    .string()
    .trim()
    .max(max, `must be at most ${max} characters`)
    .optional()
    .transform((v) => (v ? v : undefined));

const metadataValue = z.union([z.string().max(2048, 'metadata string values must be at most 2048 characters'), z.number().finite(), z.boolean(), z.null()]);
const metadata = z
  .record(z.string().min(1, 'metadata keys must be 1 to 64 characters').max(64, 'metadata keys must be 1 to 64 characters'), metadataValue)
  .refine((m) => Object.keys(m).length <= 32, 'metadata may hold at most 32 fields')
  .refine((m) => Buffer.byteLength(JSON.stringify(m)) <= 16 * 1024, 'metadata must be at most 16 KiB of encoded JSON')
  .describe('Flat object: at most 32 fields, 16 KiB; values are strings (≤ 2048), finite numbers, booleans or null.');

export const feedbackFields = {
  message: z.string().trim().min(1, 'must not be empty').max(4000, 'must be at most 4000 characters after trimming'),
  contact_email: z.string().trim().max(254).pipe(z.email('must be an email address')).optional(),
  name: text(128),
  environment: text(128),
  user_id: text(256),
  release: text(256),
  service: text(256),
  url: z
    .string()
    .trim()
    .max(2048)
    .refine((u) => {
      try {
        const p = new URL(u).protocol;
        return p === 'http:' || p === 'https:';
      } catch {
        return false;
      }
    }, 'must be an http or https URL')
    .optional(),
  session_id: text(128),
  replay_id: text(128),
  trace_id: z
    .string()
    .regex(/^[0-9a-fA-F]{32}$/, 'must be 32 hexadecimal characters')
    .transform((s) => s.toLowerCase())
    .optional(),
  error_group_id: z.string().uuid('must be an error group id (UUID)').optional(),
  metadata: metadata.optional(),
};

const feedbackSchema = z.object({
  id: z.string(),
  project_id: z.string(),
  message: z.string(),
  contact_email: z.string().nullable().optional().describe('Only for credentials that can read the project.'),
  name: z.string().nullable().optional().describe('Only for credentials that can read the project.'),
  user_id: z.string().nullable().optional().describe('Only for credentials that can read the project.'),
  environment: z.string().nullable(),
  release: z.string().nullable(),
  service: z.string().nullable(),
  url: z.string().nullable(),
  session_id: z.string().nullable(),
  replay_id: z.string().nullable(),
  trace_id: z.string().nullable(),
  error_group_id: z.string().nullable(),
  metadata: z.record(z.string(), z.union([z.string(), z.number(), z.boolean(), z.null()])).nullable(),
  status: z.enum(STATUSES),
  created_at: z.string(),
  updated_at: z.string(),
});

function feedbackOut(r: FeedbackRow, ctx: HandlerContext, reader = principalHolds(ctx.principal, ctx.project!.orgId, 'errors:read')): z.input<typeof feedbackSchema> {
  // Fields listed one by one (not rest/spread): this runs per row of every list and is a hot path.
  const out: z.input<typeof feedbackSchema> = {
    id: r.id,
    project_id: r.project_id,
    message: r.message,
    environment: r.environment,
    release: r.release,
    service: r.service,
    url: r.url,
    session_id: r.session_id,
    replay_id: r.replay_id,
    trace_id: r.trace_id,
    error_group_id: r.error_group_id,
    metadata: r.metadata,
    status: r.status,
    created_at: toIso(r.created_at)!,
    updated_at: toIso(r.updated_at)!,
  };
  // Spec: contact fields (name, email, user id) are visible only to project readers.
  if (reader) {
    out.contact_email = r.contact_email;
    out.name = r.name;
    out.user_id = r.user_id;
  }
  return out;
}

const feedbackId = z.string().uuid('must be a feedback id (UUID)');

/** Spec (Endpoints, Feedback): create returns `id`, `project_id`, `created_at`; message and contact details are not repeated. */
const createdSchema = z.object({ id: z.string(), project_id: z.string(), created_at: z.string() });
const createdOut = (r: FeedbackRow): z.input<typeof createdSchema> => ({ id: r.id, project_id: r.project_id, created_at: toIso(r.created_at)! });

export const create = defineOperation({
  operationId: 'feedback.create',
  tag: 'feedback',
  summary: 'Submit user feedback',
  description:
    'Captures a feedback record (message, optional contact, environment, release, service, url, session/replay/trace ids, error group, flat metadata). Needs `events:ingest`. Send `Idempotency-Key` to make retries safe: the same key and payload return the original 201 without using quota; the same key with a different payload is a 409. Quota: 20 per rolling minute and 1,000 per rolling day per project. Callable cross-origin from browsers (no cookies).',
  method: 'POST',
  path: '/v1/projects/{project_id}/feedback',
  scopes: ['events:ingest'],
  risk: 'write',
  sensitive: false,
  projectScoped: true,
  successStatus: 201,
  maxBodyBytes: 32 * 1024,
  cors: true,
  requiresApiKey: true,
  headerInputs: { 'idempotency-key': 'idempotency_key' },
  input: z.strictObject({
    project_id: projectId,
    idempotency_key: z
      .string()
      .regex(IDEMPOTENCY_KEY, 'must be 1 to 128 printable ASCII characters')
      .optional()
      .describe('Sent as the Idempotency-Key header over HTTP.'),
    ...feedbackFields,
  }),
  output: createdSchema,
  errors: [
    { status: 400, code: 'invalid_parameter', when: 'a field breaks its rule; unknown field; error_group_id names no group of this project' },
    { status: 403, code: 'api_key_required', when: 'the credential is an OAuth token, not a key of the project' },
    { status: 409, code: 'idempotency_conflict', when: 'Idempotency-Key reused with a different payload' },
    { status: 413, code: 'payload_too_large', when: 'body above 32 KiB' },
    { status: 429, code: 'feedback_quota_exceeded', when: 'over 20 per minute or 1,000 per day for the project' },
  ],
  example: { message: 'The export button does nothing', contact_email: 'ana@example.com', url: 'https://app.example.com/reports' },
  handler(input, ctx) {
    const { project_id: pid, idempotency_key, ...fields } = input;
    const repo = ctx.services.feedback;
    const hash = payloadHash(fields);
    if (fields.error_group_id && !ctx.services.lookups.errorGroupExists(pid, fields.error_group_id)) {
      throw new ValidationError('`error_group_id` does not name an error group of this project.', 'error_group_id');
    }
    const now = ctx.now();
    // The key's look-up, the quota check and the insert in one write transaction (taken at its
    // start): processes sharing the database admit exactly the quota between them, and a key sent
    // through two of them at once finds the other's record instead of failing on its unique index.
    const outcome = ctx.services.atomic((): { replay: FeedbackRow } | { created: FeedbackRow } => {
      if (idempotency_key !== undefined) {
        const prior = repo.idempotency(pid, idempotency_key);
        if (prior) {
          if (prior.payload_hash !== hash) {
            throw new ConflictError('idempotency_conflict', 'This Idempotency-Key was already used with a different payload.', 'idempotency_key');
          }
          const original = repo.get(pid, prior.feedback_id);
          if (original) return { replay: original };
        }
      }
      const wait = quotaRetryAfterSeconds(now, (since, k) => repo.nthNewestSince(pid, since, k));
      if (wait > 0) {
        throw new RateLimitedError(wait, `Feedback quota reached for this project (20 per minute, 1,000 per day). Retry in ${wait} s.`, 'feedback_quota_exceeded');
      }
      const created = repo.insert(
        pid,
        {
          id: randomUUID(),
          message: fields.message,
          contact_email: fields.contact_email ?? null,
          name: fields.name ?? null,
          environment: fields.environment ?? null,
          user_id: fields.user_id ?? null,
          release: fields.release ?? null,
          service: fields.service ?? null,
          url: fields.url ?? null,
          session_id: fields.session_id ?? null,
          replay_id: fields.replay_id ?? null,
          trace_id: fields.trace_id ?? null,
          error_group_id: fields.error_group_id ?? null,
          metadata: fields.metadata ?? null,
          source: 'api',
          created_at: now,
        },
        idempotency_key !== undefined ? { key: idempotency_key, payloadHash: hash } : undefined,
      );
      return { created };
    });
    if ('replay' in outcome) return createdOut(outcome.replay);
    const row = outcome.created;
    // Committed: signals and automations hear of it.
    ctx.services.events.publish({ type: 'feedback.received', projectId: pid, at: now, feedbackId: row.id, message: row.message, errorGroupId: row.error_group_id });
    return createdOut(row);
  },
});

function decodeCursor(c: string): { created_at: number; id: string } {
  try {
    const v = JSON.parse(Buffer.from(c, 'base64url').toString('utf8'));
    if (typeof v?.t === 'number' && typeof v?.id === 'string') return { created_at: v.t, id: v.id };
  } catch {
    /* fall through */
  }
  throw new ValidationError('`cursor` is not a cursor this list returned: send `next_cursor` unchanged.', 'cursor');
}

export const list = defineOperation({
  operationId: 'feedback.list',
  tag: 'feedback',
  summary: 'List user feedback, newest first',
  description:
    'Feedback records of the project, newest first, with cursor pagination: send `cursor` = the previous `next_cursor` until it is null, keeping the same filters. Exact filters: status (comma-separated), environment, release, service, user_id, session_id, replay_id, trace_id, error_group_id. Case-insensitive literal substrings: url (of the submitted URL), contact (of name, email or user id), q (of the message). from/to: creation time. No window limit: pages bound the work.',
  method: 'GET',
  path: '/v1/projects/{project_id}/feedback',
  scopes: ['errors:read'],
  risk: 'read',
  sensitive: false,
  projectScoped: true,
  input: z.strictObject({
    project_id: projectId,
    status: csvList(z.enum(STATUSES)).optional().describe('new, reviewed, archived (comma-separated)'),
    environment: z.string().optional(),
    release: z.string().optional(),
    service: z.string().optional(),
    user_id: z.string().optional(),
    session_id: z.string().optional(),
    replay_id: z.string().optional(),
    trace_id: z.string().optional(),
    error_group_id: z.string().optional(),
    q: z.string().max(256).optional().describe('Substring of the message.'),
    url: z.string().max(2048).optional().describe('Case-insensitive literal substring of the submitted URL.'),
    contact: z.string().max(256).optional().describe('Case-insensitive literal substring of the name, email or user id.'),
    from: isoDateTime.optional(),
    to: isoDateTime.optional(),
    limit: queryInt({ min: 1, max: 100, default: 50, describe: 'Page size, 1 to 100 (default 50).' }),
    cursor: z.string().max(512).optional().describe('The previous response\'s next_cursor, unchanged.'),
  }),
  output: z.object({ data: z.array(feedbackSchema), next_cursor: z.string().nullable() }),
  errors: [{ status: 400, code: 'invalid_parameter', when: 'bad cursor, status, limit or time' }],
  example: { status: 'new', limit: 20 },
  handler(input, ctx) {
    const rows = ctx.services.feedback.list(ctx.project!.id, {
      status: input.status,
      environment: input.environment,
      release: input.release,
      service: input.service,
      user_id: input.user_id,
      session_id: input.session_id,
      replay_id: input.replay_id,
      trace_id: input.trace_id?.toLowerCase(),
      error_group_id: input.error_group_id,
      q: input.q,
      url: input.url,
      contact: input.contact,
      fromMs: parseIso(input.from),
      toMs: parseIso(input.to),
      before: input.cursor ? decodeCursor(input.cursor) : undefined,
      limit: input.limit + 1,
    });
    const page = rows.slice(0, input.limit);
    const last = page[page.length - 1];
    const next_cursor =
      rows.length > input.limit && last ? Buffer.from(JSON.stringify({ t: last.created_at, id: last.id })).toString('base64url') : null;
    const reader = principalHolds(ctx.principal, ctx.project!.orgId, 'errors:read');
    return { data: page.map((r) => feedbackOut(r, ctx, reader)), next_cursor };
  },
});

export const get = defineOperation({
  operationId: 'feedback.get',
  tag: 'feedback',
  summary: 'Get one feedback record',
  description: 'One feedback record, with `replay_session_id`: the session replay resolved from `replay_id` in this project, or null.',
  method: 'GET',
  path: '/v1/projects/{project_id}/feedback/{feedback_id}',
  scopes: ['errors:read'],
  risk: 'read',
  sensitive: false,
  projectScoped: true,
  input: z.strictObject({ project_id: projectId, feedback_id: feedbackId }),
  output: feedbackSchema.extend({ replay_session_id: z.string().nullable() }),
  errors: [{ status: 404, code: 'not_found', when: 'missing, or in another project' }],
  handler(input, ctx) {
    const r = ctx.services.feedback.get(ctx.project!.id, input.feedback_id);
    if (!r) throw new NotFoundError('Feedback', 'feedback_id');
    const replay_session_id = r.replay_id ? ctx.services.lookups.replaySessionFor(ctx.project!.id, r.replay_id) : null;
    return { ...feedbackOut(r, ctx), replay_session_id };
  },
});

export const update = defineOperation({
  operationId: 'feedback.update',
  tag: 'feedback',
  summary: 'Change the status of a feedback record',
  description: 'Moves a record to `new`, `reviewed` or `archived`; the response holds the updated record.',
  method: 'PATCH',
  path: '/v1/projects/{project_id}/feedback/{feedback_id}',
  scopes: ['errors:write'],
  risk: 'write',
  sensitive: false,
  projectScoped: true,
  input: z.strictObject({ project_id: projectId, feedback_id: feedbackId, status: z.enum(STATUSES) }),
  output: feedbackSchema,
  errors: [
    { status: 400, code: 'invalid_parameter', when: 'unknown field or status' },
    { status: 404, code: 'not_found', when: 'missing, or in another project' },
  ],
  example: { feedback_id: '00000000-0000-4000-8000-000000000000', status: 'reviewed' },
  handler(input, ctx) {
    if (!ctx.services.feedback.updateStatus(ctx.project!.id, input.feedback_id, input.status, ctx.now())) {
      throw new NotFoundError('Feedback', 'feedback_id');
    }
    return feedbackOut(ctx.services.feedback.get(ctx.project!.id, input.feedback_id)!, ctx);
  },
});
