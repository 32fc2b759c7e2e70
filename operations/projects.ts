import { z } from 'zod';
import { defineOperation } from './define.js';
import { projectId, toIso } from './shared.js';
import { InsufficientScopeError, NotFoundError, ValidationError } from '../src/core/errors.js';
import { principalHolds } from '../src/core/principal.js';
import type { ProjectRow } from '../src/storage/identity-repo.js';

export const projectSchema = z.object({
  id: z.string(),
  organization_id: z.string(),
  name: z.string(),
  slug: z.string(),
  features: z.object({
    product_analytics: z.boolean().describe('Revenue and product analytics are enabled.'),
    remote_access_preview: z.boolean().describe('The remote-access preview is enabled.'),
  }),
  spike_protection: z.object({
    enabled: z.boolean(),
    threshold_per_minute: z.number().int().nullable().describe('Error events accepted per minute before the rest are dropped.'),
  }),
  created_at: z.string(),
});

export function projectOut(p: ProjectRow): z.input<typeof projectSchema> {
  return {
    id: p.id,
    organization_id: p.org_id,
    name: p.name,
    slug: p.slug,
    features: { product_analytics: p.product_analytics, remote_access_preview: p.remote_access_preview },
    spike_protection: { enabled: p.spike_protection_enabled, threshold_per_minute: p.spike_threshold_per_minute },
    created_at: toIso(p.created_at)!,
  };
}

export const list = defineOperation({
  operationId: 'projects.list',
  tag: 'projects',
  summary: 'List the projects this credential (API key or user) can access',
  description:
    'Returns the projects of the authenticated organization that the credential may use: the one project an API key is bound to, or every project of the organizations a signed-in user belongs to.',
  method: 'GET',
  path: '/v1/projects',
  scopes: [],
  risk: 'read',
  sensitive: false,
  projectScoped: false,
  input: z.strictObject({}),
  output: z.object({ data: z.array(projectSchema) }),
  errors: [],
  example: {},
  handler(_input, { principal, services }) {
    const rows =
      principal.kind === 'api_key'
        ? [services.identity.projectById(principal.projectId)].filter((p): p is ProjectRow => !!p)
        : services.identity.projectsOfOrgs(Object.keys(principal.roles));
    return { data: rows.map(projectOut) };
  },
});

export const get = defineOperation({
  operationId: 'projects.get',
  tag: 'projects',
  summary: 'Get one project',
  description: 'Returns one project: name, feature flags (product analytics, remote-access preview) and spike-protection settings.',
  method: 'GET',
  path: '/v1/projects/{project_id}',
  scopes: [],
  risk: 'read',
  sensitive: false,
  projectScoped: false,
  input: z.strictObject({ project_id: projectId }),
  output: projectSchema,
  errors: [{ status: 404, code: 'not_found', when: 'the project does not exist or the credential cannot reach it' }],
  example: {},
  handler(_input, { project, services }) {
    const row = services.identity.projectById(project!.id);
    if (!row) throw new NotFoundError('Project', 'project_id');
    return projectOut(row);
  },
});

export const updateSpikeProtection = defineOperation({
  operationId: 'projects.updateSpikeProtection',
  tag: 'projects',
  summary: 'Set the spike-protection threshold of a project',
  description:
    'Sets the per-project spike protection: when enabled, error events above `threshold_per_minute` in one minute are dropped, counted, and answered with 429 (with X-Sentry-Rate-Limits for Sentry SDKs, Retry-After for OTLP).',
  method: 'PUT',
  path: '/v1/projects/{project_id}/spike-protection',
  scopes: ['project:write'],
  risk: 'write',
  sensitive: false,
  projectScoped: true,
  input: z.strictObject({
    project_id: projectId,
    enabled: z.boolean().describe('Turn spike protection on or off.'),
    threshold_per_minute: z
      .number()
      .int()
      .min(1)
      .max(10_000_000)
      .nullable()
      .optional()
      .describe('Error events accepted per minute (required when enabling).'),
  }),
  output: projectSchema,
  errors: [{ status: 400, code: 'invalid_parameter', when: 'enabled without a threshold, or an unknown field' }],
  example: { enabled: true, threshold_per_minute: 1000 },
  handler(input, { project, services }) {
    const current = services.identity.projectById(project!.id)!;
    const threshold = input.threshold_per_minute === undefined ? current.spike_threshold_per_minute : input.threshold_per_minute;
    if (input.enabled && threshold === null) {
      throw new ValidationError('`threshold_per_minute` is required when enabling spike protection.', 'threshold_per_minute');
    }
    services.identity.setSpikeProtection(project!.id, input.enabled, threshold);
    return projectOut(services.identity.projectById(project!.id)!);
  },
});

export const listMembers = defineOperation({
  operationId: 'projects.listMembers',
  tag: 'projects',
  summary: 'List the members of a project (whom to assign an error to)',
  description:
    'The people of the project\'s organization: user id, name, email and role (owner, admin, member), owners first. Use an id or email as `assigned_to` of errors.update. Open to any member\'s own user token; a project credential needs `project:write`.',
  method: 'GET',
  path: '/v1/projects/{project_id}/members',
  scopes: [],
  risk: 'read',
  sensitive: false,
  projectScoped: true,
  display: { columns: ['name', 'email', 'role', 'id'] },
  input: z.strictObject({ project_id: projectId }),
  output: z.object({
    data: z.array(
      z.object({
        id: z.string().describe('User id (for errors.update assigned_to).'),
        name: z.string(),
        email: z.string(),
        role: z.enum(['owner', 'admin', 'member']),
        joined_at: z.string(),
      }),
    ),
  }),
  errors: [{ status: 403, code: 'insufficient_scope', when: 'an API key without project:write' }],
  example: {},
  handler(_input, { principal, project, services }) {
    // A member reads the people of their own organization (invoke already checked membership); a key needs project:write.
    if (principal.kind === 'api_key' && !principalHolds(principal, project!.orgId, 'project:write')) throw new InsufficientScopeError(['project:write']);
    return {
      data: services.identity.membersOfOrg(project!.orgId).map((m) => ({ id: m.id, name: m.name, email: m.email, role: m.role, joined_at: toIso(m.joined_at)! })),
    };
  },
});
