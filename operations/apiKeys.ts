import { z } from 'zod';
import { defineOperation, type HandlerContext } from './define.js';
import { isoDateTime, projectId, toIso } from './shared.js';
import { ForbiddenError, NotFoundError, ValidationError } from '../src/core/errors.js';
import { KNOWN_SCOPES } from '../src/core/scopes.js';
import { principalHolds } from '../src/core/principal.js';
import { hashSecret, newSecret } from '../src/domain/identity/secrets.js';
import type { ApiKeyRow } from '../src/storage/identity-repo.js';

const scopeList = z
  .array(z.enum(KNOWN_SCOPES))
  .min(1)
  .max(KNOWN_SCOPES.length)
  .describe('Scopes the key holds; `*` holds all. read/write do not include revenue:*, ai:export or events:ingest.');

const keySchema = z.object({
  id: z.string(),
  project_id: z.string(),
  label: z.string(),
  prefix: z.string().describe('The first characters of the secret, to recognise it.'),
  scopes: z.array(z.string()),
  expires_at: z.string().nullable(),
  created_at: z.string(),
  updated_at: z.string(),
  last_used_at: z.string().nullable(),
});

const keyOut = (k: ApiKeyRow): z.input<typeof keySchema> => ({
  id: k.id,
  project_id: k.project_id,
  label: k.label,
  prefix: k.prefix,
  scopes: k.scopes,
  expires_at: toIso(k.expires_at),
  created_at: toIso(k.created_at)!,
  updated_at: toIso(k.updated_at)!,
  last_used_at: toIso(k.last_used_at),
});

/** No credential may mint or widen a key beyond what it holds itself. */
function assertGrantable(scopes: readonly string[], ctx: HandlerContext): void {
  const over = scopes.filter((s) => !principalHolds(ctx.principal, ctx.project!.orgId, s));
  if (over.length) throw new ForbiddenError('scope_escalation', `A key cannot be given scopes this credential does not hold: ${over.join(', ')}.`);
}

/**
 * A credential may change or revoke only keys whose scopes it holds itself (issue 10 item 5: a
 * `project:write` key rewrote and deleted `*` keys).
 */
function assertOutranks(target: ApiKeyRow, ctx: HandlerContext): void {
  const over = target.scopes.filter((s) => !principalHolds(ctx.principal, ctx.project!.orgId, s));
  if (over.length) {
    throw new ForbiddenError('key_outranks_credential', `This key holds scopes this credential does not hold (${over.join(', ')}); only a credential holding them can change or revoke it.`);
  }
}

const keyId = z.string().uuid('must be a key id (UUID)');
const common = { tag: 'apiKeys', sensitive: true, projectScoped: true, scopes: ['project:write'] as const };

export const list = defineOperation({
  ...common,
  operationId: 'apiKeys.list',
  summary: 'List API keys of a project',
  description: 'Key metadata (label, scopes, prefix, expiry, last use). Secrets are never returned after creation.',
  method: 'GET',
  path: '/v1/projects/{project_id}/api-keys',
  risk: 'read',
  input: z.strictObject({ project_id: projectId }),
  output: z.object({ data: z.array(keySchema) }),
  errors: [],
  handler: (_i, { project, services }) => ({ data: services.identity.apiKeys(project!.id).map(keyOut) }),
});

export const get = defineOperation({
  ...common,
  operationId: 'apiKeys.get',
  summary: 'Get the metadata of one API key',
  description: 'Metadata of one key of the project; its secret is never returned.',
  method: 'GET',
  path: '/v1/projects/{project_id}/api-keys/{key_id}',
  risk: 'read',
  input: z.strictObject({ project_id: projectId, key_id: keyId }),
  output: keySchema,
  errors: [{ status: 404, code: 'not_found', when: 'no such key in this project' }],
  handler(input, { project, services }) {
    const k = services.identity.apiKey(project!.id, input.key_id);
    if (!k) throw new NotFoundError('API key', 'key_id');
    return keyOut(k);
  },
});

export const create = defineOperation({
  ...common,
  operationId: 'apiKeys.create',
  summary: 'Create an API key (secret shown once)',
  description:
    'Creates a key bound to this project with the given scopes and optional expiry. The response carries `secret` once; only its hash is stored.',
  method: 'POST',
  path: '/v1/projects/{project_id}/api-keys',
  risk: 'write',
  successStatus: 201,
  input: z.strictObject({
    project_id: projectId,
    label: z.string().trim().min(1).max(128),
    scopes: scopeList,
    expires_at: isoDateTime.optional().describe('When the key stops working (ISO 8601, in the future).'),
  }),
  output: keySchema.extend({ secret: z.string().describe('Shown once. Send it as x-service-key or Authorization: Bearer.') }),
  errors: [
    { status: 400, code: 'invalid_parameter', when: 'unknown scope, empty label, past expiry' },
    { status: 403, code: 'scope_escalation', when: 'a scope this credential does not hold' },
  ],
  example: { label: 'ci reader', scopes: ['read'] },
  handler(input, ctx) {
    const expiresAt = input.expires_at ? Date.parse(input.expires_at) : null;
    if (expiresAt !== null && expiresAt <= ctx.now()) throw new ValidationError('`expires_at` must be in the future.', 'expires_at');
    assertGrantable(input.scopes, ctx);
    const secret = newSecret('sl');
    const row = ctx.services.identity.createApiKey(
      ctx.project!.id,
      { label: input.label, prefix: secret.slice(0, 10), secretHash: hashSecret(secret), scopes: [...new Set(input.scopes)], expiresAt },
      ctx.now(),
    );
    return { ...keyOut(row), secret };
  },
});

export const update = defineOperation({
  ...common,
  operationId: 'apiKeys.update',
  summary: 'Rename an API key or change its scopes',
  description: 'Changes the label or the scopes of a key. The secret stays the same.',
  method: 'PATCH',
  path: '/v1/projects/{project_id}/api-keys/{key_id}',
  risk: 'write',
  input: z.strictObject({
    project_id: projectId,
    key_id: keyId,
    label: z.string().trim().min(1).max(128).optional(),
    scopes: scopeList.optional(),
  }),
  output: keySchema,
  errors: [
    { status: 400, code: 'invalid_parameter', when: 'no field to change, unknown scope' },
    { status: 403, code: 'key_outranks_credential', when: 'the key holds a scope this credential does not hold' },
    { status: 403, code: 'scope_escalation', when: 'a new scope this credential does not hold' },
    { status: 404, code: 'not_found', when: 'no such key in this project' },
  ],
  handler(input, ctx) {
    if (input.label === undefined && input.scopes === undefined) throw new ValidationError('Send `label` or `scopes`.');
    const k = ctx.services.identity.apiKey(ctx.project!.id, input.key_id);
    if (!k) throw new NotFoundError('API key', 'key_id');
    assertOutranks(k, ctx);
    if (input.scopes) assertGrantable(input.scopes, ctx);
    ctx.services.identity.updateApiKey(ctx.project!.id, k.id, input.label ?? k.label, input.scopes ? [...new Set(input.scopes)] : k.scopes, ctx.now());
    return keyOut(ctx.services.identity.apiKey(ctx.project!.id, k.id)!);
  },
});

export const del = defineOperation({
  ...common,
  operationId: 'apiKeys.delete',
  summary: 'Revoke an API key',
  description: 'Revokes the key at once; requests made with it afterwards answer 401.',
  method: 'DELETE',
  path: '/v1/projects/{project_id}/api-keys/{key_id}',
  risk: 'write',
  input: z.strictObject({ project_id: projectId, key_id: keyId }),
  output: z.object({ id: z.string(), revoked: z.literal(true) }),
  errors: [
    { status: 403, code: 'key_outranks_credential', when: 'the key holds a scope this credential does not hold' },
    { status: 404, code: 'not_found', when: 'no such key in this project' },
  ],
  handler(input, ctx) {
    const k = ctx.services.identity.apiKey(ctx.project!.id, input.key_id);
    if (!k) throw new NotFoundError('API key', 'key_id');
    assertOutranks(k, ctx);
    if (!ctx.services.identity.revokeApiKey(ctx.project!.id, input.key_id, ctx.now())) throw new NotFoundError('API key', 'key_id');
    return { id: input.key_id, revoked: true as const };
  },
});
