import { z } from 'zod';
import { defineOperation, type HandlerContext } from './define.js';
import { offsetPagination, projectId, toIso, uuid } from './shared.js';
import { NotFoundError, ValidationError } from '../src/core/errors.js';
import { displayId } from '../src/domain/monitors/health.js';
import { INCIDENT_IMPACTS, INCIDENT_STATUSES, type IncidentRow } from '../src/storage/incidents-repo.js';

const updateSchema = z.object({ id: z.string(), at: z.string(), status: z.enum(INCIDENT_STATUSES), message: z.string(), author: z.string() });

const incidentSchema = z.object({
  id: z.string().describe('UUID.'),
  display_id: z.string().describe('INC-<n>, numbered per project.'),
  project_id: z.string(),
  title: z.string(),
  status: z.enum(INCIDENT_STATUSES),
  impact: z.enum(INCIDENT_IMPACTS),
  monitor_id: z.string().nullable().describe('The monitor whose going down opened it (null: opened by a person).'),
  started_at: z.string(),
  resolved_at: z.string().nullable(),
  created_at: z.string(),
  updated_at: z.string(),
});
const incidentWithTimeline = incidentSchema.extend({ updates: z.array(updateSchema).describe('Timeline, oldest first.') });

export function incidentOut(i: IncidentRow): z.input<typeof incidentSchema> {
  return {
    id: i.id,
    display_id: displayId(i),
    project_id: i.project_id,
    title: i.title,
    status: i.status,
    impact: i.impact,
    monitor_id: i.monitor_id,
    started_at: toIso(i.started_at)!,
    resolved_at: toIso(i.resolved_at),
    created_at: toIso(i.created_at)!,
    updated_at: toIso(i.updated_at)!,
  };
}

function withTimeline(i: IncidentRow, ctx: HandlerContext): z.input<typeof incidentWithTimeline> {
  return { ...incidentOut(i), updates: ctx.services.incidents.updates(i.id).map((u) => ({ id: u.id, at: toIso(u.at_ms)!, status: u.status, message: u.message, author: u.author })) };
}

export const incidentIdParam = z
  .string()
  .regex(/^(INC-\d{1,9}|[0-9a-f]{8}-[0-9a-f]{4}-[0-9a-f]{4}-[0-9a-f]{4}-[0-9a-f]{12})$/i, 'must be an incident id (UUID) or display id (INC-12)')
  .describe('Incident UUID or display id (INC-12).');

export function requireIncident(ctx: HandlerContext, id: string): IncidentRow {
  const m = /^INC-(\d+)$/i.exec(id);
  const row = m ? ctx.services.incidents.byNumber(ctx.project!.id, Number(m[1])) : ctx.services.incidents.get(ctx.project!.id, id.toLowerCase());
  if (!row) throw new NotFoundError('Incident', 'incident_id');
  return row;
}

const author = (ctx: HandlerContext) => (ctx.principal.kind === 'api_key' ? `api key ${ctx.principal.keyId}` : ctx.principal.email);

export const list = defineOperation({
  operationId: 'incidents.list',
  tag: 'incidents',
  summary: 'List incidents',
  description: 'Incidents newest first. `status`: `open` (not resolved), `resolved` or `all` (default). Filter by the monitor that opened them. Offset pagination.',
  method: 'GET',
  path: '/v1/projects/{project_id}/incidents',
  scopes: ['read'],
  risk: 'read',
  sensitive: false,
  projectScoped: true,
  input: z.strictObject({
    project_id: projectId,
    status: z.enum(['open', 'resolved', 'all']).default('all'),
    monitor_id: uuid('monitor id').optional(),
    ...offsetPagination(50, 200),
  }),
  output: z.object({ data: z.array(incidentSchema), total: z.number().int(), limit: z.number().int(), offset: z.number().int() }),
  errors: [{ status: 400, code: 'invalid_parameter', when: 'bad status, monitor id or limit' }],
  example: { status: 'open' },
  handler(input, ctx) {
    const open = input.status === 'all' ? undefined : input.status === 'open';
    const { rows, total } = ctx.services.incidents.list(ctx.project!.id, { open, monitorId: input.monitor_id, limit: input.limit, offset: input.offset });
    return { data: rows.map(incidentOut), total, limit: input.limit, offset: input.offset };
  },
});

export const get = defineOperation({
  operationId: 'incidents.get',
  tag: 'incidents',
  summary: 'Get an incident with its timeline',
  description: 'One incident by UUID or display id (INC-12), with its timeline of updates (who or what changed it, when, and the message).',
  method: 'GET',
  path: '/v1/projects/{project_id}/incidents/{incident_id}',
  scopes: ['read'],
  risk: 'read',
  sensitive: false,
  projectScoped: true,
  input: z.strictObject({ project_id: projectId, incident_id: incidentIdParam }),
  output: incidentWithTimeline,
  errors: [{ status: 404, code: 'not_found', when: 'no such incident in this project' }],
  example: { incident_id: 'INC-12' },
  handler(input, ctx) {
    return withTimeline(requireIncident(ctx, input.incident_id), ctx);
  },
});

export const create = defineOperation({
  operationId: 'incidents.create',
  tag: 'incidents',
  summary: 'Open an incident by hand',
  description:
    'Opens an incident that no monitor reported (monitors open their own). It shows on the status pages of the project (on the pages linking `monitor_id` when given) and confirmed subscribers are mailed.',
  method: 'POST',
  path: '/v1/projects/{project_id}/incidents',
  scopes: ['write'],
  risk: 'write',
  sensitive: false,
  projectScoped: true,
  successStatus: 201,
  input: z.strictObject({
    project_id: projectId,
    title: z.string().trim().min(1).max(200),
    message: z.string().trim().min(1).max(5000).describe('First timeline entry.'),
    status: z.enum(INCIDENT_STATUSES).default('investigating'),
    impact: z.enum(INCIDENT_IMPACTS).default('minor'),
    monitor_id: uuid('monitor id').optional(),
  }),
  output: incidentWithTimeline,
  errors: [
    { status: 400, code: 'invalid_parameter', when: 'unknown field, missing title or message' },
    { status: 404, code: 'not_found', when: 'monitor_id names no monitor of this project' },
  ],
  example: { title: 'Delayed email delivery', message: 'We are investigating delays.', impact: 'minor' },
  handler(input, ctx) {
    if (input.monitor_id && !ctx.services.monitors.get(ctx.project!.id, input.monitor_id)) throw new NotFoundError('Monitor', 'monitor_id');
    const now = ctx.now();
    const row = ctx.services.atomic(() => {
      const inc = ctx.services.incidents.create(ctx.project!.id, { title: input.title, status: input.status, impact: input.impact, monitor_id: input.monitor_id ?? null, started_at: now, message: input.message, author: author(ctx) }, now);
      ctx.services.monitoring.notifySubscribers(inc, input.message);
      return inc;
    });
    ctx.services.events.publish({ type: 'incident.opened', projectId: row.project_id, at: now, incidentId: row.id, displayId: displayId(row), title: row.title });
    return withTimeline(row, ctx);
  },
});

export const update = defineOperation({
  operationId: 'incidents.update',
  tag: 'incidents',
  summary: 'Update an incident (status, title, impact, timeline message)',
  description:
    'Adds a timeline entry and changes the given fields. `status: resolved` resolves it (a monitor that is still down then opens a new incident only after it recovers and fails again); a resolved incident may be reopened. Confirmed subscribers of the pages showing it are mailed.',
  method: 'PATCH',
  path: '/v1/projects/{project_id}/incidents/{incident_id}',
  scopes: ['write'],
  risk: 'write',
  sensitive: false,
  projectScoped: true,
  input: z.strictObject({
    project_id: projectId,
    incident_id: incidentIdParam,
    title: z.string().trim().min(1).max(200).optional(),
    status: z.enum(INCIDENT_STATUSES).optional(),
    impact: z.enum(INCIDENT_IMPACTS).optional(),
    message: z.string().trim().min(1).max(5000).optional().describe('Timeline entry text.'),
  }),
  output: incidentWithTimeline,
  errors: [
    { status: 400, code: 'invalid_parameter', when: 'unknown field or no field to change' },
    { status: 404, code: 'not_found', when: 'no such incident' },
  ],
  example: { incident_id: 'INC-12', status: 'identified', message: 'A bad deploy; rolling back.' },
  handler(input, ctx) {
    if (input.title === undefined && input.status === undefined && input.impact === undefined && input.message === undefined) {
      throw new ValidationError('Send at least one of title, status, impact, message.');
    }
    const inc = requireIncident(ctx, input.incident_id);
    const now = ctx.now();
    const status = input.status ?? inc.status;
    const message = input.message ?? (status !== inc.status ? `Status changed to ${status}.` : 'Incident details updated.');
    const next: IncidentRow = {
      ...inc,
      title: input.title ?? inc.title,
      impact: input.impact ?? inc.impact,
      status,
      resolved_at: status === 'resolved' ? (inc.resolved_at ?? now) : null,
    };
    const row = ctx.services.atomic(() => {
      const saved = ctx.services.incidents.update(next, { message, author: author(ctx) }, now);
      ctx.services.monitoring.incidentChanged(saved, inc.status);
      ctx.services.monitoring.notifySubscribers(saved, message);
      return saved;
    });
    const base = { projectId: row.project_id, at: now, incidentId: row.id, displayId: displayId(row) };
    ctx.services.events.publish(row.status === 'resolved' && inc.status !== 'resolved' ? { type: 'incident.resolved', ...base } : { type: 'incident.updated', ...base, status: row.status });
    return withTimeline(row, ctx);
  },
});
