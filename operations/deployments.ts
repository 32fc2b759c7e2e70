import { z } from 'zod';
import { defineOperation } from './define.js';
import { isoDateTime, offsetPagination, parseIso, projectId, toIso } from './shared.js';
import { ValidationError } from '../src/core/errors.js';
import type { DeploymentRow } from '../src/storage/deployments-repo.js';

export const DEPLOYMENT_STATUSES = ['building', 'canceled', 'failed', 'pending', 'ready', 'skipped', 'unknown'] as const;

const deploymentSchema = z.object({
  id: z.string(),
  project_id: z.string(),
  provider: z.string(),
  deployment_id: z.string(),
  service: z.string().nullable(),
  service_name: z.string().nullable().describe('Same as service.'),
  version: z.string().nullable(),
  environment: z.string().nullable(),
  status: z.enum(DEPLOYMENT_STATUSES),
  url: z.string().nullable(),
  deployment_url: z.string().nullable().describe('Same as url.'),
  commit_sha: z.string().nullable(),
  branch: z.string().nullable(),
  started_at: z.string().nullable(),
  finished_at: z.string().nullable(),
  created_at: z.string(),
  updated_at: z.string(),
});

export function deploymentOut(d: DeploymentRow): z.input<typeof deploymentSchema> {
  return {
    id: d.id,
    project_id: d.project_id,
    provider: d.provider,
    deployment_id: d.deployment_id,
    service: d.service,
    service_name: d.service,
    version: d.version,
    environment: d.environment,
    status: d.status as (typeof DEPLOYMENT_STATUSES)[number],
    url: d.url,
    deployment_url: d.url,
    commit_sha: d.commit_sha,
    branch: d.branch,
    started_at: toIso(d.started_at),
    finished_at: toIso(d.finished_at),
    created_at: toIso(d.created_at)!,
    updated_at: toIso(d.updated_at)!,
  };
}

const str = (max: number) => z.string().trim().min(1).max(max);

export const create = defineOperation({
  operationId: 'deployments.create',
  tag: 'deployments',
  summary: 'Record a deployment (create or update by provider + deployment_id)',
  description:
    'Records a deployment from any CI/CD system. Sending the same provider and deployment_id again updates that record instead of adding one: only the fields sent change and the rest are kept, so a CI job can send just `{deployment_id, status: "ready"}` when the build finishes. `commit_sha` takes any commit identifier up to 64 characters (git SHA-1 or SHA-256, Mercurial, Perforce changelist…); hex ids are stored lowercase. `service`/`service_name` and `version` should match the `service.name` and `service.version` your telemetry sends, so releases and suspect commits line up. 201 when created, 200 when updated.',
  method: 'POST',
  path: '/v1/projects/{project_id}/deployments',
  scopes: ['deployments:write'],
  risk: 'write',
  sensitive: false,
  projectScoped: true,
  successStatus: 201,
  input: z.strictObject({
    project_id: projectId,
    deployment_id: str(256).describe('Your CI/CD system\'s id of this deployment.'),
    provider: str(64).optional().describe('Who deployed (default `generic`).'),
    service: str(256).optional(),
    service_name: str(256).optional().describe('Alias of service.'),
    version: str(256).optional(),
    environment: str(128).optional(),
    status: z.enum(DEPLOYMENT_STATUSES).optional().describe('Default `unknown`.'),
    url: z.string().url().max(2048).optional(),
    deployment_url: z.string().url().max(2048).optional().describe('Alias of url.'),
    commit_sha: z
      .string()
      .trim()
      .min(1, 'must be a commit identifier (1 to 64 characters)')
      .max(64, 'must be a commit identifier of at most 64 characters')
      .optional()
      .describe('Commit identifier: a git SHA (any length), a Mercurial id, a Perforce changelist number…'),
    branch: str(256).optional(),
    started_at: isoDateTime.optional(),
    finished_at: isoDateTime.optional(),
  }),
  output: deploymentSchema,
  errors: [{ status: 400, code: 'invalid_parameter', when: 'unknown field, bad status, conflicting aliases, finished before started' }],
  example: { deployment_id: 'gh-run-4312', provider: 'github', service: 'api', version: '1.4.2', environment: 'production', status: 'ready', commit_sha: 'a1b2c3d' },
  handler(input, ctx) {
    if (input.service && input.service_name && input.service !== input.service_name) {
      throw new ValidationError('`service` and `service_name` name the same thing; send one or equal values.', 'service_name');
    }
    if (input.url && input.deployment_url && input.url !== input.deployment_url) {
      throw new ValidationError('`url` and `deployment_url` name the same thing; send one or equal values.', 'deployment_url');
    }
    const sha = input.commit_sha;
    const { row, created } = ctx.services.deployments.upsert(
      ctx.project!.id,
      {
        provider: input.provider ?? 'generic',
        deployment_id: input.deployment_id,
        service: input.service ?? input.service_name,
        version: input.version,
        environment: input.environment,
        status: input.status,
        url: input.url ?? input.deployment_url,
        commit_sha: sha === undefined ? undefined : /^[0-9a-f]+$/i.test(sha) ? sha.toLowerCase() : sha,
        branch: input.branch,
        started_at: parseIso(input.started_at),
        finished_at: parseIso(input.finished_at),
      },
      ctx.now(),
      (merged) => {
        if (merged.started_at !== null && merged.finished_at !== null && merged.finished_at < merged.started_at) {
          throw new ValidationError('`finished_at` is before `started_at`.', 'finished_at');
        }
      },
    );
    ctx.response.status = created ? 201 : 200;
    return deploymentOut(row);
  },
});

export const list = defineOperation({
  operationId: 'deployments.list',
  tag: 'deployments',
  summary: 'List deployment records',
  description:
    'Deployment records newest first (by start time, else by when they were recorded). Filters: provider, environment, service, version, status, from, to. Offset pagination: the next page uses offset + limit while offset + limit < total. No window limit: pages bound the work.',
  method: 'GET',
  path: '/v1/projects/{project_id}/deployments',
  scopes: ['deployments:read'],
  risk: 'read',
  sensitive: false,
  display: { columns: ['deployment_id', 'service', 'environment', 'version', 'status', 'commit_sha', 'created_at'] },
  projectScoped: true,
  input: z.strictObject({
    project_id: projectId,
    provider: z.string().optional(),
    environment: z.string().optional(),
    service: z.string().optional(),
    version: z.string().optional(),
    status: z.enum(DEPLOYMENT_STATUSES).optional(),
    from: isoDateTime.optional(),
    to: isoDateTime.optional(),
    ...offsetPagination(50, 100),
  }),
  output: z.object({ data: z.array(deploymentSchema), total: z.number().int(), limit: z.number().int(), offset: z.number().int() }),
  errors: [{ status: 400, code: 'invalid_parameter', when: 'bad status, limit or time' }],
  example: { environment: 'production', limit: 10 },
  handler(input, ctx) {
    const fromMs = parseIso(input.from);
    const toMs = parseIso(input.to);
    if (fromMs !== undefined && toMs !== undefined && fromMs > toMs) throw new ValidationError('`from` is after `to`.', 'from');
    const { rows, total } = ctx.services.deployments.list(ctx.project!.id, { ...input, fromMs, toMs });
    return { data: rows.map(deploymentOut), total, limit: input.limit, offset: input.offset };
  },
});
