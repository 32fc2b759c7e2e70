import { z } from 'zod';
import { defineOperation, type HandlerContext } from './define.js';
import { offsetPagination, projectId, toIso, uuid } from './shared.js';
import { ConflictError, NotFoundError, ValidationError } from '../src/core/errors.js';
import { componentViews, type ComponentView } from '../src/core/status-view.js';
import { HEALTH, worstHealth } from '../src/domain/monitors/health.js';
import type { ComponentRow, StatusPageRow } from '../src/storage/status-pages-repo.js';
import type { MonitorRow } from '../src/storage/monitors-repo.js';

const STATIC_STATUSES = ['operational', 'degraded', 'down'] as const;

const componentSchema = z.object({
  id: z.string(),
  status_page_id: z.string(),
  kind: z.enum(['monitor', 'static', 'group']),
  name: z.string(),
  description: z.string().nullable(),
  parent_id: z.string().nullable().describe('The group holding it (null: top level).'),
  monitor_id: z.string().nullable(),
  monitor_name: z.string().nullable(),
  status: z.enum(STATIC_STATUSES).nullable().describe('Static components: the status set by hand.'),
  external_url: z.string().nullable().describe('Static components: a third-party status page.'),
  health: z.enum(HEALTH).describe('monitor: from the monitor (unknown when unlinked or paused); static: its status; group: worst child.'),
  position: z.number().int(),
  created_at: z.string(),
  updated_at: z.string(),
});

const countsSchema = z.object({
  components: z.number().int(),
  monitor_components: z.number().int(),
  groups: z.number().int(),
  subscribers: z.number().int(),
  confirmed_subscribers: z.number().int(),
});

const pageSchema = z.object({
  id: z.string(),
  project_id: z.string(),
  name: z.string(),
  slug: z.string(),
  isPublic: z.boolean(),
  customDomain: z.string().nullable(),
  themeConfig: z.record(z.string(), z.unknown()),
  url: z.string().describe('Public address: /status/{slug} (or the custom domain).'),
  health: z.enum(HEALTH).describe('Worst health of the top-level components.'),
  components: z.array(componentSchema),
  counts: countsSchema,
  created_at: z.string(),
  updated_at: z.string(),
});

const componentOut = (c: ComponentView): z.input<typeof componentSchema> => ({
  id: c.id,
  status_page_id: c.page_id,
  kind: c.kind,
  name: c.name,
  description: c.description,
  parent_id: c.parent_id,
  monitor_id: c.monitor_id,
  monitor_name: c.monitor_name,
  status: (c.kind === 'static' ? c.status : null) as (typeof STATIC_STATUSES)[number] | null,
  external_url: c.external_url,
  health: c.health,
  position: c.position,
  created_at: toIso(c.created_at)!,
  updated_at: toIso(c.updated_at)!,
});

function pageOut(p: StatusPageRow, ctx: HandlerContext): z.input<typeof pageSchema> {
  const comps = componentViews(ctx.services, p);
  return {
    id: p.id,
    project_id: p.project_id,
    name: p.name,
    slug: p.slug,
    isPublic: p.is_public,
    customDomain: p.custom_domain,
    themeConfig: p.theme_config,
    url: ctx.services.monitoring.pageUrl(p),
    health: worstHealth(comps.filter((c) => !c.parent_id).map((c) => c.health)),
    components: comps.map(componentOut),
    counts: ctx.services.statusPages.counts(p.id),
    created_at: toIso(p.created_at)!,
    updated_at: toIso(p.updated_at)!,
  };
}

const pageIdParam = uuid('status page id').describe('Status page id (UUID).');
const componentIdParam = uuid('component id').describe('Component id (UUID).');
const slug = z
  .string()
  .trim()
  .toLowerCase()
  .regex(/^[a-z0-9](?:[a-z0-9-]{0,62}[a-z0-9])?$/, 'lowercase letters, digits and hyphens, 1 to 64, not starting or ending with a hyphen')
  .describe('Public path /status/{slug}.');
const customDomain = z
  .string()
  .trim()
  .toLowerCase()
  .regex(/^(?=.{1,253}$)([a-z0-9](?:[a-z0-9-]{0,61}[a-z0-9])?\.)+[a-z]{2,63}$/, 'must be a host name such as status.example.com')
  .nullable()
  .describe('Host name served from this page (point its DNS at the server).');
const themeConfig = z
  .record(z.string(), z.unknown())
  .refine((v) => JSON.stringify(v).length <= 4096, 'at most 4 KiB of JSON')
  .refine((v) => v.accentColor === undefined || (typeof v.accentColor === 'string' && /^#[0-9a-f]{3,8}$/i.test(v.accentColor)), 'accentColor must be a hex color like #2f54eb')
  .describe('Theme settings; the page uses `accentColor` (hex). Other keys are stored for your own use.');

function requirePage(ctx: HandlerContext, id: string): StatusPageRow {
  const p = ctx.services.statusPages.get(ctx.project!.id, id);
  if (!p) throw new NotFoundError('Status page', 'status_page_id');
  return p;
}

function requireComponent(ctx: HandlerContext, page: StatusPageRow, id: string): ComponentRow {
  const c = ctx.services.statusPages.component(page.id, id);
  if (!c) throw new NotFoundError('Component', 'component_id');
  return c;
}

function checkSlugAndDomain(ctx: HandlerContext, s: string | undefined, domain: string | null | undefined, selfId?: string): void {
  if (s !== undefined) {
    const other = ctx.services.statusPages.bySlug(s);
    // Public addresses /status/{slug} form one namespace per server, so a slug is unique across organizations too.
    if (other && other.id !== selfId) throw new ConflictError('slug_taken', `The slug \`${s}\` is in use; choose another.`, 'slug');
  }
  if (domain) {
    if (domain === new URL(ctx.services.config.baseUrl).hostname) throw new ValidationError('`customDomain` may not be the server\'s own host.', 'customDomain');
    const other = ctx.services.statusPages.byDomain(domain);
    if (other && other.id !== selfId) throw new ConflictError('custom_domain_taken', `The domain \`${domain}\` is used by another status page.`, 'customDomain');
  }
}

/** A monitor named by id or by name, in the page's project. */
function findMonitor(ctx: HandlerContext, input: { monitor_id?: string; monitor_name?: string }): MonitorRow {
  if ((input.monitor_id === undefined) === (input.monitor_name === undefined)) {
    throw new ValidationError('Name the monitor by `monitor_id` or by `monitor_name` (one of them).', 'monitor_id');
  }
  const m = input.monitor_id ? ctx.services.monitors.get(ctx.project!.id, input.monitor_id) : ctx.services.monitors.byName(ctx.project!.id, input.monitor_name!);
  if (!m) throw new NotFoundError('Monitor', input.monitor_id ? 'monitor_id' : 'monitor_name');
  return m;
}

function checkParent(ctx: HandlerContext, page: StatusPageRow, parentId: string | null, self?: ComponentRow): void {
  if (!parentId) return;
  const parent = ctx.services.statusPages.component(page.id, parentId);
  if (!parent) throw new NotFoundError('Parent group', 'parent_id');
  if (parent.kind !== 'group') throw new ValidationError('`parent_id` must name a group component.', 'parent_id');
  if (self?.kind === 'group' || parent.id === self?.id) throw new ValidationError('Groups hold monitor and static components only; a group cannot go into a group.', 'parent_id');
}

function componentResult(ctx: HandlerContext, page: StatusPageRow, id: string): z.input<typeof componentSchema> {
  return componentOut(componentViews(ctx.services, page).find((c) => c.id === id)!);
}

const PAGE_BASE = '/v1/projects/{project_id}/status-pages';
const COMPONENT_BASE = `${PAGE_BASE}/{status_page_id}/components`;

export const list = defineOperation({
  operationId: 'statusPages.list',
  tag: 'statusPages',
  summary: 'List status pages with components and counts',
  description: 'Status pages of the project, oldest first, each with its components (and their health) and counts of components, groups and subscribers.',
  method: 'GET',
  path: PAGE_BASE,
  scopes: ['read'],
  risk: 'read',
  sensitive: false,
  projectScoped: true,
  input: z.strictObject({ project_id: projectId, ...offsetPagination(50, 100) }),
  output: z.object({ data: z.array(pageSchema), total: z.number().int(), limit: z.number().int(), offset: z.number().int() }),
  errors: [{ status: 400, code: 'invalid_parameter', when: 'bad limit or offset' }],
  example: { limit: 10 },
  handler(input, ctx) {
    const { rows, total } = ctx.services.statusPages.list(ctx.project!.id, input.limit, input.offset);
    return { data: rows.map((p) => pageOut(p, ctx)), total, limit: input.limit, offset: input.offset };
  },
});

export const create = defineOperation({
  operationId: 'statusPages.create',
  tag: 'statusPages',
  summary: 'Create a status page',
  description:
    'A status page served at /status/{slug} (and on `customDomain` through the Host header) as HTML that works without JavaScript, plus /status/{slug}.json and an Atom feed of incidents. `isPublic` false (default): the page answers 404 to anyone without a read credential of the project. Slugs are unique across the server (they share the /status/ namespace).',
  method: 'POST',
  path: PAGE_BASE,
  scopes: ['write'],
  risk: 'write',
  sensitive: false,
  projectScoped: true,
  successStatus: 201,
  input: z.strictObject({
    project_id: projectId,
    name: z.string().trim().min(1).max(200),
    slug,
    isPublic: z.boolean().optional().describe('Default false.'),
    customDomain: customDomain.optional(),
    themeConfig: themeConfig.optional(),
  }),
  output: pageSchema,
  errors: [
    { status: 400, code: 'invalid_parameter', when: 'unknown field, bad slug, domain or theme' },
    { status: 409, code: 'slug_taken', when: 'the slug is in use' },
    { status: 409, code: 'custom_domain_taken', when: 'another page uses the domain' },
  ],
  example: { name: 'Acme status', slug: 'acme', isPublic: true },
  handler(input, ctx) {
    checkSlugAndDomain(ctx, input.slug, input.customDomain);
    const page = ctx.services.statusPages.create(
      ctx.project!.id,
      ctx.project!.orgId,
      { name: input.name, slug: input.slug, is_public: input.isPublic ?? false, custom_domain: input.customDomain ?? null, theme_config: input.themeConfig ?? {} },
      ctx.now(),
    );
    return pageOut(page, ctx);
  },
});

export const get = defineOperation({
  operationId: 'statusPages.get',
  tag: 'statusPages',
  summary: 'Get a status page with its components',
  description: 'One status page with its components, their health and the page\'s counts.',
  method: 'GET',
  path: `${PAGE_BASE}/{status_page_id}`,
  scopes: ['read'],
  risk: 'read',
  sensitive: false,
  projectScoped: true,
  input: z.strictObject({ project_id: projectId, status_page_id: pageIdParam }),
  output: pageSchema,
  errors: [{ status: 404, code: 'not_found', when: 'no such page in this project' }],
  example: { status_page_id: '0f8fad5b-d9cb-469f-a165-70867728950e' },
  handler(input, ctx) {
    return pageOut(requirePage(ctx, input.status_page_id), ctx);
  },
});

export const update = defineOperation({
  operationId: 'statusPages.update',
  tag: 'statusPages',
  summary: 'Update a status page',
  description: 'Changes name, slug, public state, custom domain (null removes it) or theme config.',
  method: 'PATCH',
  path: `${PAGE_BASE}/{status_page_id}`,
  scopes: ['write'],
  risk: 'write',
  sensitive: false,
  projectScoped: true,
  input: z.strictObject({
    project_id: projectId,
    status_page_id: pageIdParam,
    name: z.string().trim().min(1).max(200).optional(),
    slug: slug.optional(),
    isPublic: z.boolean().optional(),
    customDomain: customDomain.optional(),
    themeConfig: themeConfig.optional(),
  }),
  output: pageSchema,
  errors: [
    { status: 400, code: 'invalid_parameter', when: 'unknown field, nothing to change, bad values' },
    { status: 404, code: 'not_found', when: 'no such page' },
    { status: 409, code: 'slug_taken', when: 'the slug is in use' },
    { status: 409, code: 'custom_domain_taken', when: 'another page uses the domain' },
  ],
  example: { status_page_id: '0f8fad5b-d9cb-469f-a165-70867728950e', isPublic: true },
  handler(input, ctx) {
    const p = requirePage(ctx, input.status_page_id);
    if ([input.name, input.slug, input.isPublic, input.customDomain, input.themeConfig].every((v) => v === undefined)) {
      throw new ValidationError('Send at least one of name, slug, isPublic, customDomain, themeConfig.');
    }
    checkSlugAndDomain(ctx, input.slug, input.customDomain, p.id);
    const next: StatusPageRow = {
      ...p,
      name: input.name ?? p.name,
      slug: input.slug ?? p.slug,
      is_public: input.isPublic ?? p.is_public,
      custom_domain: input.customDomain !== undefined ? input.customDomain : p.custom_domain,
      theme_config: input.themeConfig ?? p.theme_config,
    };
    ctx.services.statusPages.save(next, ctx.now());
    return pageOut(requirePage(ctx, p.id), ctx);
  },
});

export const del = defineOperation({
  operationId: 'statusPages.delete',
  tag: 'statusPages',
  summary: 'Delete a status page, its components and subscribers',
  description: 'Deletes the page with its components and subscribers. Linked monitors and incidents are kept.',
  method: 'DELETE',
  path: `${PAGE_BASE}/{status_page_id}`,
  scopes: ['write'],
  risk: 'write',
  sensitive: false,
  projectScoped: true,
  input: z.strictObject({ project_id: projectId, status_page_id: pageIdParam }),
  output: z.object({ id: z.string(), deleted: z.literal(true) }),
  errors: [{ status: 404, code: 'not_found', when: 'no such page' }],
  example: { status_page_id: '0f8fad5b-d9cb-469f-a165-70867728950e' },
  handler(input, ctx) {
    const p = requirePage(ctx, input.status_page_id);
    ctx.services.statusPages.remove(p.project_id, p.id);
    return { id: p.id, deleted: true as const };
  },
});

export const listComponents = defineOperation({
  operationId: 'statusPages.listComponents',
  tag: 'statusPages',
  summary: 'List the components of a status page',
  description: 'Components in display order with their kind, group (`parent_id`), linked monitor and health.',
  method: 'GET',
  path: COMPONENT_BASE,
  scopes: ['read'],
  risk: 'read',
  sensitive: false,
  projectScoped: true,
  input: z.strictObject({ project_id: projectId, status_page_id: pageIdParam }),
  output: z.object({ data: z.array(componentSchema) }),
  errors: [{ status: 404, code: 'not_found', when: 'no such page' }],
  example: { status_page_id: '0f8fad5b-d9cb-469f-a165-70867728950e' },
  handler(input, ctx) {
    const p = requirePage(ctx, input.status_page_id);
    return { data: componentViews(ctx.services, p).map(componentOut) };
  },
});

export const createComponent = defineOperation({
  operationId: 'statusPages.createComponent',
  tag: 'statusPages',
  summary: 'Add a monitor, static or group component',
  description:
    '`monitor`: health from a monitor (link it here with `monitor_id` or `monitor_name`, or later with linkMonitor). `static`: a `status` you set, optionally an `external_url` (a third-party status page). `group`: holds other components (`parent_id` of the children); its health is its worst child. Groups do not nest.',
  method: 'POST',
  path: COMPONENT_BASE,
  scopes: ['write'],
  risk: 'write',
  sensitive: false,
  projectScoped: true,
  successStatus: 201,
  input: z.strictObject({
    project_id: projectId,
    status_page_id: pageIdParam,
    kind: z.enum(['monitor', 'static', 'group']),
    name: z.string().trim().min(1).max(200),
    description: z.string().trim().max(1000).optional(),
    parent_id: componentIdParam.optional().describe('Group to put it in.'),
    monitor_id: uuid('monitor id').optional(),
    monitor_name: z.string().min(1).max(200).optional(),
    status: z.enum(STATIC_STATUSES).optional().describe('Static components (default operational).'),
    external_url: z.string().url().max(2048).optional().describe('Static components: an external status page.'),
  }),
  output: componentSchema,
  errors: [
    { status: 400, code: 'invalid_parameter', when: 'unknown field, a field of another kind, parent not a group, nested group' },
    { status: 404, code: 'not_found', when: 'no such page, parent or monitor' },
  ],
  example: { kind: 'monitor', name: 'API', monitor_name: 'API health' },
  handler(input, ctx) {
    const p = requirePage(ctx, input.status_page_id);
    if (input.kind !== 'monitor' && (input.monitor_id || input.monitor_name)) throw new ValidationError('Only monitor components link a monitor.', 'monitor_id');
    if (input.kind !== 'static' && (input.status || input.external_url)) throw new ValidationError('`status` and `external_url` belong to static components.', input.status ? 'status' : 'external_url');
    if (input.external_url && !/^https?:/i.test(input.external_url)) throw new ValidationError('`external_url` must be http(s).', 'external_url');
    if (input.kind === 'group' && input.parent_id) throw new ValidationError('Groups hold monitor and static components only; a group cannot go into a group.', 'parent_id');
    checkParent(ctx, p, input.parent_id ?? null);
    const monitor = input.monitor_id || input.monitor_name ? findMonitor(ctx, input) : null;
    const c = ctx.services.statusPages.createComponent(
      p.id,
      {
        kind: input.kind,
        name: input.name,
        description: input.description ?? null,
        parent_id: input.parent_id ?? null,
        monitor_id: monitor?.id ?? null,
        status: input.kind === 'static' ? (input.status ?? 'operational') : null,
        external_url: input.external_url ?? null,
      },
      ctx.now(),
    );
    return componentResult(ctx, p, c.id);
  },
});

export const updateComponent = defineOperation({
  operationId: 'statusPages.updateComponent',
  tag: 'statusPages',
  summary: 'Update a component, or move it into or out of a group',
  description: '`parent_id`: a group id moves it into that group, null moves it to the top level. Static components take `status` and `external_url`. `position` orders components.',
  method: 'PATCH',
  path: `${COMPONENT_BASE}/{component_id}`,
  scopes: ['write'],
  risk: 'write',
  sensitive: false,
  projectScoped: true,
  input: z.strictObject({
    project_id: projectId,
    status_page_id: pageIdParam,
    component_id: componentIdParam,
    name: z.string().trim().min(1).max(200).optional(),
    description: z.string().trim().max(1000).nullable().optional(),
    parent_id: componentIdParam.nullable().optional(),
    status: z.enum(STATIC_STATUSES).optional(),
    external_url: z.string().url().max(2048).nullable().optional(),
    position: z.number().int().min(0).max(10_000).optional(),
  }),
  output: componentSchema,
  errors: [
    { status: 400, code: 'invalid_parameter', when: 'unknown field, nothing to change, a field of another kind, parent not a group' },
    { status: 404, code: 'not_found', when: 'no such page, component or parent' },
  ],
  example: { status_page_id: '0f8fad5b-d9cb-469f-a165-70867728950e', component_id: '7c9e6679-7425-40de-944b-e07fc1f90ae7', parent_id: null },
  handler(input, ctx) {
    const p = requirePage(ctx, input.status_page_id);
    const c = requireComponent(ctx, p, input.component_id);
    const fields = ['name', 'description', 'parent_id', 'status', 'external_url', 'position'] as const;
    if (fields.every((f) => input[f] === undefined)) throw new ValidationError('Send at least one field to change.');
    if (c.kind !== 'static' && (input.status !== undefined || input.external_url !== undefined)) {
      throw new ValidationError('`status` and `external_url` belong to static components.', input.status !== undefined ? 'status' : 'external_url');
    }
    if (input.external_url && !/^https?:/i.test(input.external_url)) throw new ValidationError('`external_url` must be http(s).', 'external_url');
    if (input.parent_id !== undefined) checkParent(ctx, p, input.parent_id, c);
    const next: ComponentRow = {
      ...c,
      name: input.name ?? c.name,
      description: input.description !== undefined ? input.description : c.description,
      parent_id: input.parent_id !== undefined ? input.parent_id : c.parent_id,
      status: input.status ?? c.status,
      external_url: input.external_url !== undefined ? input.external_url : c.external_url,
      position: input.position ?? c.position,
    };
    ctx.services.statusPages.saveComponent(next, ctx.now());
    return componentResult(ctx, p, c.id);
  },
});

export const deleteComponent = defineOperation({
  operationId: 'statusPages.deleteComponent',
  tag: 'statusPages',
  summary: 'Delete a component (never its monitor)',
  description: 'Deletes the component; a group\'s children go with it. A linked monitor is not deleted.',
  method: 'DELETE',
  path: `${COMPONENT_BASE}/{component_id}`,
  scopes: ['write'],
  risk: 'write',
  sensitive: false,
  projectScoped: true,
  input: z.strictObject({ project_id: projectId, status_page_id: pageIdParam, component_id: componentIdParam }),
  output: z.object({ id: z.string(), deleted: z.literal(true) }),
  errors: [{ status: 404, code: 'not_found', when: 'no such page or component' }],
  example: { status_page_id: '0f8fad5b-d9cb-469f-a165-70867728950e', component_id: '7c9e6679-7425-40de-944b-e07fc1f90ae7' },
  handler(input, ctx) {
    const p = requirePage(ctx, input.status_page_id);
    const c = requireComponent(ctx, p, input.component_id);
    ctx.services.statusPages.removeComponent(p.id, c.id);
    return { id: c.id, deleted: true as const };
  },
});

const linkInput = z.strictObject({
  project_id: projectId,
  status_page_id: pageIdParam,
  component_id: componentIdParam,
  monitor_id: uuid('monitor id').optional(),
  monitor_name: z.string().min(1).max(200).optional(),
});

export const linkMonitor = defineOperation({
  operationId: 'statusPages.linkMonitor',
  tag: 'statusPages',
  summary: 'Link a monitor to a monitor component (by id or name)',
  description: 'The component\'s health then follows the monitor. Send `monitor_id` or `monitor_name`. Replaces an earlier link.',
  method: 'POST',
  path: `${COMPONENT_BASE}/{component_id}/link-monitor`,
  scopes: ['write'],
  risk: 'write',
  sensitive: false,
  projectScoped: true,
  input: linkInput,
  output: componentSchema,
  errors: [
    { status: 400, code: 'invalid_parameter', when: 'neither or both of monitor_id and monitor_name; unknown field' },
    { status: 400, code: 'invalid_component_kind', when: 'the component is not a monitor component' },
    { status: 404, code: 'not_found', when: 'no such page, component or monitor' },
  ],
  example: { status_page_id: '0f8fad5b-d9cb-469f-a165-70867728950e', component_id: '7c9e6679-7425-40de-944b-e07fc1f90ae7', monitor_name: 'API health' },
  handler(input, ctx) {
    const p = requirePage(ctx, input.status_page_id);
    const c = requireComponent(ctx, p, input.component_id);
    if (c.kind !== 'monitor') throw new ValidationError(`A ${c.kind} component does not link a monitor; create a monitor component.`, 'component_id', 'invalid_component_kind');
    const m = findMonitor(ctx, input);
    ctx.services.statusPages.saveComponent({ ...c, monitor_id: m.id }, ctx.now());
    return componentResult(ctx, p, c.id);
  },
});

export const unlinkMonitor = defineOperation({
  operationId: 'statusPages.unlinkMonitor',
  tag: 'statusPages',
  summary: 'Clear a component\'s monitor link (by id or name)',
  description: 'Clears the direct link when it names the given monitor (`monitor_id` or `monitor_name`); the monitor itself stays. The component\'s health becomes `unknown`.',
  method: 'POST',
  path: `${COMPONENT_BASE}/{component_id}/unlink-monitor`,
  scopes: ['write'],
  risk: 'write',
  sensitive: false,
  projectScoped: true,
  input: linkInput,
  output: componentSchema,
  errors: [
    { status: 400, code: 'invalid_parameter', when: 'neither or both of monitor_id and monitor_name; unknown field' },
    { status: 404, code: 'not_found', when: 'no such page, component or monitor' },
    { status: 409, code: 'monitor_not_linked', when: 'the component is not linked to that monitor' },
  ],
  example: { status_page_id: '0f8fad5b-d9cb-469f-a165-70867728950e', component_id: '7c9e6679-7425-40de-944b-e07fc1f90ae7', monitor_name: 'API health' },
  handler(input, ctx) {
    const p = requirePage(ctx, input.status_page_id);
    const c = requireComponent(ctx, p, input.component_id);
    const m = findMonitor(ctx, input);
    if (c.monitor_id !== m.id) throw new ConflictError('monitor_not_linked', `The component is not linked to monitor \`${m.name}\`.`, input.monitor_id ? 'monitor_id' : 'monitor_name');
    ctx.services.statusPages.saveComponent({ ...c, monitor_id: null }, ctx.now());
    return componentResult(ctx, p, c.id);
  },
});
