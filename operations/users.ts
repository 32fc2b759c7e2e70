/**
 * Who is calling: `users.me` tells an agent whether its credential is a person (an OAuth user, who
 * can be an assignee and say `"me"`) or a project API key, with its organizations, roles, scopes and
 * the projects it reaches. Members to assign errors to come from projects.listMembers.
 */
import { z } from 'zod';
import { defineOperation } from './define.js';

const role = z.enum(['owner', 'admin', 'member']);

export const me = defineOperation({
  operationId: 'users.me',
  tag: 'users',
  summary: 'Who am I: the signed-in user or the calling credential, its organization, role and projects',
  description:
    'Who is calling. `kind` is `user` (an OAuth user or signed-in session: `user` holds id, email and name; a person can be an error assignee and may send `assigned_to: "me"`) or `api_key` (a project credential: no person, so it cannot say "me"; `api_key` holds its id, label and prefix). `organizations` lists the organizations with the role held in each (null for a project credential), `projects` the projects reached with that role, and `scopes` what the caller may do (a member\'s role still caps it).',
  method: 'GET',
  path: '/v1/users/me',
  scopes: [],
  risk: 'read',
  sensitive: false,
  projectScoped: false,
  input: z.strictObject({}),
  output: z.object({
    kind: z.enum(['user', 'api_key']),
    user: z.object({ id: z.string(), email: z.string(), name: z.string() }).nullable().describe('The person (kind `user`), else null.'),
    api_key: z
      .object({ id: z.string(), label: z.string(), prefix: z.string(), project_id: z.string() })
      .nullable()
      .describe('The key (kind `api_key`), else null.'),
    scopes: z.array(z.string()).describe('Scopes of the credential (`*` for a first-party session).'),
    organizations: z.array(z.object({ id: z.string(), name: z.string(), role: role.nullable().describe('Role of the user; null for an API key.') })),
    projects: z.array(z.object({ id: z.string(), name: z.string(), slug: z.string(), organization_id: z.string(), role: role.nullable() })),
  }),
  errors: [],
  example: {},
  handler(_input, { principal, services }) {
    const identity = services.identity;
    if (principal.kind === 'api_key') {
      const key = identity.apiKey(principal.projectId, principal.keyId);
      const project = identity.projectById(principal.projectId);
      return {
        kind: 'api_key' as const,
        user: null,
        api_key: { id: principal.keyId, label: key?.label ?? '', prefix: key?.prefix ?? '', project_id: principal.projectId },
        scopes: principal.scopes,
        organizations: identity.organizations([principal.orgId]).map((o) => ({ id: o.id, name: o.name, role: null })),
        projects: project ? [{ id: project.id, name: project.name, slug: project.slug, organization_id: project.org_id, role: null }] : [],
      };
    }
    const user = identity.userById(principal.userId);
    const orgIds = Object.keys(principal.roles);
    return {
      kind: 'user' as const,
      user: { id: principal.userId, email: user?.email ?? principal.email, name: user?.name ?? '' },
      api_key: null,
      scopes: principal.scopes,
      organizations: identity.organizations(orgIds).map((o) => ({ id: o.id, name: o.name, role: principal.roles[o.id]! })),
      projects: identity.projectsOfOrgs(orgIds).map((p) => ({ id: p.id, name: p.name, slug: p.slug, organization_id: p.org_id, role: principal.roles[p.org_id]! })),
    };
  },
});
