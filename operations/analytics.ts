import { z } from 'zod';
import { defineOperation, type HandlerContext } from './define.js';
import { projectId, toIso } from './shared.js';
import { ForbiddenError } from '../src/core/errors.js';
import { DAY_MS } from '../src/domain/revenue/range.js';

const statusSchema = z.object({
  project_id: z.string(),
  state: z.enum(['enabled', 'disabled', 'coming_soon']).describe('`coming_soon`: the server runs without analytics; `disabled`: an owner or admin can enable it.'),
  enabled: z.boolean(),
  capture: z.object({
    host: z.string().describe('PostHog client `api_host`/`host`: posthog-js and posthog-node send here with an ingest key as the project token.'),
    endpoints: z.array(z.string()),
  }),
  events_30d: z.number().int(),
  sessions_30d: z.number().int(),
  persons: z.number().int(),
  identified_persons: z.number().int(),
  last_event_at: z.string().nullable(),
});

async function statusOf(ctx: HandlerContext): Promise<z.input<typeof statusSchema>> {
  const pid = ctx.project!.id;
  const p = ctx.services.identity.projectById(pid)!;
  const available = ctx.services.config.revenue.analytics;
  const st = await ctx.services.analytics.stats(pid, ctx.now() - 30 * DAY_MS);
  return {
    project_id: pid,
    state: !available ? 'coming_soon' : p.product_analytics ? 'enabled' : 'disabled',
    enabled: available && p.product_analytics,
    capture: { host: ctx.services.config.ingestUrl, endpoints: ['/e', '/i/v0/e', '/capture', '/batch', '/flags'] },
    events_30d: st.events,
    sessions_30d: st.sessions,
    persons: st.persons,
    identified_persons: st.identified,
    last_event_at: toIso(st.last_event_at),
  };
}

export const status = defineOperation({
  operationId: 'analytics.status',
  tag: 'analytics',
  summary: 'Product analytics state of a project',
  description:
    'Whether product analytics (capture, persons, revenue) is enabled for the project, available on this server (`coming_soon` when not), where PostHog clients send events, and counts of the last 30 days.',
  method: 'GET',
  path: '/v1/projects/{project_id}/analytics/status',
  scopes: ['read'],
  risk: 'read',
  sensitive: false,
  projectScoped: true,
  input: z.strictObject({ project_id: projectId }),
  output: statusSchema,
  errors: [],
  example: {},
  handler(_input, ctx) {
    return statusOf(ctx);
  },
});

export const enable = defineOperation({
  operationId: 'analytics.enable',
  tag: 'analytics',
  summary: 'Turn product analytics on for a project (owners and admins)',
  description:
    'Enables product analytics for the project: PostHog-compatible capture is accepted and revenue operations answer instead of 403 `plan_upgrade_required`. Needs `project:write` (owners and admins). Hidden from MCP.',
  method: 'POST',
  path: '/v1/projects/{project_id}/analytics/enable',
  scopes: ['project:write'],
  risk: 'write',
  sensitive: true,
  projectScoped: true,
  input: z.strictObject({ project_id: projectId }),
  output: statusSchema,
  errors: [{ status: 403, code: 'coming_soon', when: 'the server runs with product analytics off' }],
  example: {},
  handler(_input, ctx) {
    if (!ctx.services.config.revenue.analytics) {
      throw new ForbiddenError('coming_soon', 'Product analytics is not available on this server yet (SIGHTLINE_ANALYTICS is off).');
    }
    const p = ctx.services.identity.projectById(ctx.project!.id)!;
    ctx.services.identity.setProjectFlags(p.id, { product_analytics: true, remote_access_preview: p.remote_access_preview });
    ctx.services.revenueCache.bump(p.id);
    return statusOf(ctx);
  },
});
