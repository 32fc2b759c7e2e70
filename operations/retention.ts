import { z } from 'zod';
import { defineOperation, type HandlerContext } from './define.js';
import { projectId } from './shared.js';
import { ForbiddenError, ValidationError } from '../src/core/errors.js';
import { effectiveRetention, RETENTION_DEFAULTS, RETENTION_KINDS, type RetentionKind } from '../src/domain/retention/policy.js';

const kindRow = z.object({
  days: z.number().int().describe('The period in force.'),
  default: z.number().int(),
  source: z.enum(['default', 'project', 'server_cap']).describe('default; set for this project; or cut to the server cap.'),
});

const retentionOut = z.object({
  max_days: z.number().int().describe('The server cap (SIGHTLINE_RETENTION_MAX_DAYS): no setting keeps data longer.'),
  kinds: z.object(Object.fromEntries(RETENTION_KINDS.map((k) => [k, kindRow])) as Record<RetentionKind, typeof kindRow>),
  survives: z.string().describe('What outlives the raw rows.'),
});

const SURVIVES =
  'Error groups keep their lifetime event counts, first/last seen and workflow state after their events expire; log count rollups follow the logs; AI hourly rollups and session/user summaries and the daily revenue rollup outlive their raw rows; feedback, deployments, keys and settings never expire.';

function view(ctx: HandlerContext): z.input<typeof retentionOut> {
  const settings = ctx.services.retention.settings(ctx.project!.id);
  const max = ctx.services.config.retention.maxDays;
  return {
    max_days: max,
    kinds: Object.fromEntries(RETENTION_KINDS.map((k) => [k, { ...effectiveRetention(k, settings[k], max), default: RETENTION_DEFAULTS[k] }])) as z.input<typeof retentionOut>['kinds'],
    survives: SURVIVES,
  };
}

const KIND_LIST = RETENTION_KINDS.join(', ');

export const get = defineOperation({
  operationId: 'retention.get',
  tag: 'retention',
  summary: 'How long each kind of telemetry is kept in this project',
  description: `Retention in days per kind (${KIND_LIST}): the period in force, the default and where it comes from. Older data is deleted in the background; see \`survives\` for what outlives it.`,
  method: 'GET',
  path: '/v1/projects/{project_id}/retention',
  scopes: ['read'],
  risk: 'read',
  sensitive: false,
  projectScoped: true,
  input: z.strictObject({ project_id: projectId }),
  output: retentionOut,
  errors: [],
  example: {},
  handler: (_input, ctx) => view(ctx),
});

const daysField = z.number().int().min(1).nullable().optional();

export const update = defineOperation({
  operationId: 'retention.update',
  tag: 'retention',
  summary: 'Set how long each kind of telemetry is kept in this project (owners)',
  description: `Sets retention days per kind (${KIND_LIST}); \`null\` returns a kind to its default; kinds left out keep their setting. At least 1 day and at most the server cap (\`max_days\` of retention.get). Shortening takes effect at the next background pass. Only organization owners (OAuth) and keys holding \`*\`.`,
  method: 'PUT',
  path: '/v1/projects/{project_id}/retention',
  scopes: ['project:write'],
  risk: 'write',
  sensitive: false,
  projectScoped: true,
  input: z.strictObject({ project_id: projectId, ...(Object.fromEntries(RETENTION_KINDS.map((k) => [k, daysField.describe(`Days to keep ${k.replace('_', ' ')} (default ${RETENTION_DEFAULTS[k]}).`)])) as Record<RetentionKind, typeof daysField>) }),
  output: retentionOut,
  errors: [
    { status: 400, code: 'invalid_parameter', when: 'a period below 1 day or above the server cap, or an unknown kind' },
    { status: 403, code: 'owner_required', when: 'the credential is not an owner of the organization or a `*` key' },
  ],
  example: { logs: 14, spans: 14, error_events: 90 },
  handler(input, ctx) {
    const { principal, project } = ctx;
    const owner = principal.kind === 'api_key' ? principal.scopes.includes('*') : principal.roles[project!.orgId] === 'owner';
    if (!owner) throw new ForbiddenError('owner_required', 'Retention is set by an owner of the organization (or a key holding `*`).');
    const max = ctx.services.config.retention.maxDays;
    const changes: Partial<Record<RetentionKind, number | null>> = {};
    for (const k of RETENTION_KINDS) {
      const v = input[k];
      if (v === undefined) continue;
      if (v !== null && v > max) throw new ValidationError(`\`${k}\`: at most ${max} days on this server (SIGHTLINE_RETENTION_MAX_DAYS).`, k);
      changes[k] = v;
    }
    ctx.services.retention.setSettings(project!.id, changes, ctx.now());
    return view(ctx);
  },
});
