import { randomUUID } from 'node:crypto';
import { z } from 'zod';
import { eventSummaryOut, eventUserOut, eventUserSchema } from './events.js';
import { defineOperation, type HandlerContext } from './define.js';
import { csvList, isoDateTime, offsetPagination, parseIso, projectId, queryBool, toIso } from './shared.js';
import { ConflictError, ForbiddenError, NotFoundError, ValidationError } from '../src/core/errors.js';
import type { Services } from '../src/core/services.js';
import { BUILTIN_TRIAGER, runBuiltinTriage, type TriageResult } from '../src/domain/errors/triage.js';
import { rankSuspectCommits } from '../src/domain/errors/suspect-commits.js';
import { trimPayload } from '../src/domain/errors/payload.js';
import { compactStack } from '../src/domain/errors/stack.js';
import {
  GROUP_PRIORITIES,
  GROUP_STATUSES,
  type ErrorEventFull,
  type GroupPlaces,
  type GroupRef,
  type GroupWithState,
  type TriageRunRow,
  type TriageTrigger,
} from '../src/storage/error-groups-repo.js';

// ---------------------------------------------------------------------------------------------------------
// shapes

const SORTS = ['last_seen', 'first_seen', 'event_count', 'priority'] as const;

/** Path parameter. Anything that names no group of the project (including a non-UUID) is a 404. */
const errorGroupId = z.string().min(1).max(128).describe('Error group id (UUID) or its short id (e.g. `WEB-2`).');

const groupSchema = z.object({
  id: z.string(),
  short_id: z.string(),
  title: z.string(),
  type: z.string(),
  fingerprint: z.string(),
  status: z.enum(GROUP_STATUSES),
  priority: z.enum(GROUP_PRIORITIES),
  level: z.string(),
  service_name: z.string(),
  environment: z.string(),
  assigned_to: z.string().nullable().describe('User id of the assignee.'),
  ai_assigned: z.boolean().describe('True with assigned_to null: the in-project agent owns the group. Setting assigned_to clears it.'),
  bookmarked: z.boolean().describe('State of the current user (always false for API keys).'),
  subscribed: z.boolean().describe('State of the current user (always false for API keys).'),
  event_count: z.number().int().describe('Events over the group\'s lifetime.'),
  user_count: z.number().int().describe('Distinct users (by id, else email, username or IP address) over the group\'s lifetime.'),
  window_event_count: z.number().int().describe('Events inside the requested `from`/`to` (event time); the lifetime count without a window.'),
  window_user_count: z.number().int().describe('Distinct users inside the requested `from`/`to`.'),
  first_release: z.string().nullable().describe('Release of the earliest event that named one.'),
  last_release: z.string().nullable().describe('Release of the latest event that named one.'),
  environments: z.array(z.string()).describe('Every environment the group was seen in, most events first.'),
  services: z.array(z.string()).describe('Every service the group was seen in, most events first.'),
  first_seen: z.string(),
  last_seen: z.string(),
});

const groupRefSchema = z.object({ id: z.string(), short_id: z.string(), title: z.string(), merged_at: z.string().nullable() });

const latestEventSchema = z.object({
  event_id: z.string(),
  timestamp: z.string(),
  received_at: z.string(),
  source: z.string(),
  platform: z.string(),
  level: z.string(),
  type: z.string(),
  title: z.string(),
  message: z.string(),
  service_name: z.string(),
  environment: z.string(),
  release: z.string(),
  transaction: z.string(),
  server_name: z.string(),
  trace_id: z.string().nullable(),
  span_id: z.string().nullable(),
  tags: z.record(z.string(), z.string()),
  user: eventUserSchema.nullable().describe('Who the event happened to (id, email, username, ip_address as the SDK sent them); null when it named nobody.'),
  payload: z.unknown().optional().describe('With include_payload=true: the event as received (Sentry event JSON, or the span and exception attributes for OTLP), trimmed to 64 KiB.'),
  payload_truncated: z.boolean().optional(),
});

const stackFrameSchema = z.object({
  in_app: z.boolean(),
  file: z.string().nullable(),
  line: z.number().nullable(),
  column: z.number().nullable(),
  function: z.string().nullable(),
  context_line: z.string().nullable().describe('The source line, when the SDK sent it.'),
});

const stackTraceSchema = z.object({
  exceptions: z
    .array(z.object({ type: z.string(), value: z.string(), frames: z.array(stackFrameSchema), omitted_frames: z.number().int() }))
    .describe('The raised exception first, then the ones chained with it; in-app frames first, newest first, at most 25.'),
  text: z.string().describe('The same, readable: `  at file:line function` per frame with the source line under it.'),
});

const tagFacetSchema = z.object({
  key: z.string(),
  total: z.number().int().describe('Events carrying the key.'),
  values: z.array(z.object({ value: z.string(), count: z.number().int() })).describe('Most frequent values first, at most 10.'),
});

export const triageResultSchema = z.object({
  triager: z.string(),
  summary: z.string(),
  probable_cause: z
    .object({
      file: z.string().nullable(),
      function: z.string().nullable(),
      line: z.number().nullable(),
      column: z.number().nullable(),
      in_app: z.boolean().nullable(),
      exception_type: z.string().nullable(),
      message: z.string(),
      explanation: z.string(),
    })
    .nullable(),
  suggested_priority: z.object({ priority: z.enum(GROUP_PRIORITIES), points: z.number(), reasons: z.array(z.string()) }),
  similar_groups: z.array(z.object({ id: z.string(), short_id: z.string(), title: z.string(), type: z.string(), score: z.number(), reason: z.string() })),
  generated_at: z.string(),
});

const triageRunSchema = z.object({
  id: z.string(),
  error_group_id: z.string(),
  status: z.enum(['queued', 'running', 'completed', 'failed']),
  trigger: z.enum(['manual', 'automatic']),
  triager: z.string().describe('Which triager ran: `builtin-v1` is the deterministic built-in one.'),
  cycle: z.string().describe('Automation cycle of the run: its UTC day (YYYY-MM-DD).'),
  created_at: z.string(),
  completed_at: z.string().nullable(),
  result: triageResultSchema.nullable(),
  error: z.string().nullable(),
});

const replaySchema = z.object({
  replay_id: z.string(),
  started_at: z.string(),
  ended_at: z.string(),
  segments: z.number().int(),
  urls: z.array(z.string()),
  environment: z.string(),
  release: z.string(),
  linked_by: z.enum(['error', 'window']).describe('`error`: the replay recorded one of the group\'s events; `window`: it overlaps the window in the same environment.'),
});

const detailSchema = groupSchema.extend({
  culprit: z.string(),
  grouping_method: z.string().describe('sdk_fingerprint, exception_frames, exception_type or message.'),
  latest_event: latestEventSchema.nullable(),
  stack_trace: stackTraceSchema.nullable().describe('Compact stack trace of the latest event; null when it has no exception.'),
  tags: z
    .array(tagFacetSchema)
    .describe(
      'Tag breakdown like Sentry\'s tag facets: environment, service and release over every event (in the window when `from`/`to` is given: over its latest 1,000 events), then event tags over the latest 1,000 events; at most 20 keys.',
    ),
  tags_sampled_events: z.number().int().describe('Events the event-tag counts were taken from.'),
  triage: triageResultSchema.extend({ run_id: z.string(), completed_at: z.string().nullable() }).nullable().describe('Result of the latest completed triage run, or null.'),
  merged_into: groupRefSchema.optional().describe('Present on an active duplicate: the canonical group its new events count on.'),
  merged_from: z.array(groupRefSchema).optional().describe('Present on a canonical group: its active merged duplicates.'),
  replays: z.array(replaySchema).optional().describe('Replay linkage (errors.get unless include_replay=false).'),
});

type GroupOut = z.input<typeof groupSchema>;
type DetailOut = z.input<typeof detailSchema>;

const userIdOf = (ctx: HandlerContext) => (ctx.principal.kind === 'user' ? ctx.principal.userId : null);

type Window = { fromMs?: number; toMs?: number };
const hasWindow = (w: Window) => w.fromMs !== undefined || w.toMs !== undefined;

/** Group rows with where they were seen and their counts in the window (lifetime counts without one). */
async function groupRows(ctx: HandlerContext, groups: GroupWithState[], w: Window): Promise<GroupOut[]> {
  const repo = ctx.services.errorGroups;
  const ids = groups.map((g) => g.id);
  const places = repo.places(ids);
  const counts = hasWindow(w) ? await repo.windowCounts(ctx.project!.id, ids, w.fromMs, w.toMs) : null;
  return groups.map((g) => {
    const c = counts?.get(g.id);
    return groupOut(g, places.get(g.id)!, c ? { events: c.events, users: c.users } : { events: g.event_count, users: g.user_count });
  });
}

function groupOut(g: GroupWithState, places: GroupPlaces, window: { events: number; users: number }): GroupOut {
  return {
    id: g.id,
    short_id: g.short_id,
    title: g.title,
    type: g.type,
    fingerprint: g.fingerprint,
    status: g.status,
    priority: g.priority,
    level: g.level,
    service_name: g.service_name,
    environment: g.environment,
    assigned_to: g.assigned_to,
    ai_assigned: g.ai_assigned,
    bookmarked: g.bookmarked,
    subscribed: g.subscribed,
    event_count: g.event_count,
    user_count: g.user_count,
    window_event_count: window.events,
    window_user_count: window.users,
    first_release: g.first_release || null,
    last_release: g.last_release || null,
    environments: places.environments,
    services: places.services,
    first_seen: toIso(g.first_seen)!,
    last_seen: toIso(g.last_seen)!,
  };
}

const refOut = (r: GroupRef) => ({ id: r.id, short_id: r.short_id, title: r.title, merged_at: toIso(r.merged_at) });

function eventOut(e: ErrorEventFull, includePayload: boolean): z.input<typeof latestEventSchema> {
  const out: z.input<typeof latestEventSchema> = {
    ...eventSummaryOut(e),
    platform: e.platform,
    transaction: e.transaction_name,
    server_name: e.server_name,
    span_id: e.span_id,
    tags: e.tags,
    user: eventUserOut(e.user),
  };
  if (includePayload) {
    const { payload, truncated } = trimPayload(e.payload);
    out.payload = payload;
    out.payload_truncated = truncated;
  }
  return out;
}

function triageResultOut(r: unknown): z.input<typeof triageResultSchema> | null {
  if (!r || typeof r !== 'object') return null;
  const t = r as TriageResult;
  return { ...t, generated_at: toIso(t.generated_at)! };
}

function triageRunOut(r: TriageRunRow): z.input<typeof triageRunSchema> {
  return {
    id: r.id,
    error_group_id: r.group_id,
    status: r.status,
    trigger: r.trigger,
    triager: r.triager,
    cycle: r.cycle,
    created_at: toIso(r.created_at)!,
    completed_at: toIso(r.completed_at),
    result: triageResultOut(r.result),
    error: r.error,
  };
}

function requireGroup(ctx: HandlerContext, id: string): GroupWithState {
  const g = ctx.services.errorGroups.get(ctx.project!.id, id, userIdOf(ctx));
  if (!g) throw new NotFoundError('Error group', 'error_group_id');
  return g;
}

function window(from: string | undefined, to: string | undefined): { fromMs?: number; toMs?: number } {
  const fromMs = parseIso(from);
  const toMs = parseIso(to);
  if (fromMs !== undefined && toMs !== undefined && fromMs > toMs) throw new ValidationError('`from` is after `to`: send a window that starts before it ends.', 'from');
  return { fromMs, toMs };
}

/** The detail response of one group (errors.get, and the answer of update, merge and unmerge). */
async function detail(ctx: HandlerContext, id: string, o: { replay?: Window; window?: Window; includePayload?: boolean } = {}): Promise<DetailOut> {
  const pid = ctx.project!.id;
  const repo = ctx.services.errorGroups;
  const g = requireGroup(ctx, id);
  const w = o.window ?? {};
  const latest = await repo.latestEvent(pid, g.id);
  const run = repo.latestCompletedTriage(pid, g.id);
  const triageResult = run ? triageResultOut(run.result) : null;
  // The canonical group's users include those of its merged duplicates, like its other history.
  const users = repo.userCount(pid, g.id);
  const counts = hasWindow(w) ? (await repo.windowCounts(pid, [g.id], w.fromMs, w.toMs)).get(g.id)! : { events: g.event_count, users };
  const tags = await repo.tags(pid, g.id, { ...w, sample: 1000, maxKeys: 20, maxValues: 10 });
  const out: DetailOut = {
    ...groupOut({ ...g, user_count: users }, repo.places([g.id]).get(g.id)!, counts),
    culprit: g.culprit,
    grouping_method: g.grouping_method,
    latest_event: latest ? eventOut(latest, o.includePayload === true) : null,
    stack_trace: latest ? compactStack(latest.payload) : null,
    tags: tags.tags,
    tags_sampled_events: tags.sampled,
    triage: run && triageResult ? { ...triageResult, run_id: run.id, completed_at: toIso(run.completed_at) } : null,
  };
  if (g.merged_into) {
    const canonical = repo.ref(pid, g.merged_into);
    if (canonical) out.merged_into = { ...refOut(canonical), merged_at: toIso(g.merged_at) };
  } else {
    const from = repo.mergedFrom(pid, g.id);
    if (from.length) out.merged_from = from.map(refOut);
  }
  const replay = o.replay;
  if (replay) {
    out.replays = (
      await repo.replays(pid, g.id, { fromMs: replay.fromMs ?? g.first_seen, toMs: replay.toMs ?? g.last_seen, environment: g.environment, limit: 20 })
    ).map((r) => ({
        replay_id: r.replay_id,
        started_at: toIso(r.started_ms)!,
        ended_at: toIso(r.ended_ms)!,
        segments: r.segments,
        urls: r.urls,
        environment: r.environment,
        release: r.release,
        linked_by: r.linked_by,
      }));
  }
  return out;
}

const notFound = { status: 404, code: 'not_found', when: 'no such error group in this project' } as const;

/** `assigned_to` as sent (a user id, a member's email, or "me") → the user id of a member of the project's organization. */
function resolveAssignee(ctx: HandlerContext, value: string): string {
  const identity = ctx.services.identity;
  if (value.toLowerCase() === 'me') {
    if (ctx.principal.kind !== 'user') {
      throw new ValidationError(
        '`assigned_to: "me"` needs an OAuth user session: an API key is no user. Send a member\'s user id or email (projects.listMembers lists them).',
        'assigned_to',
        'assignee_not_a_user',
      );
    }
    return ctx.principal.userId;
  }
  const user = identity.userById(value) ?? (value.includes('@') ? identity.userByEmail(value) : undefined);
  if (!user || !identity.rolesOfUser(user.id)[ctx.project!.orgId]) {
    throw new ValidationError(
      '`assigned_to` must name a member of this project\'s organization by user id or email, or be "me" or null (projects.listMembers lists the members).',
      'assigned_to',
    );
  }
  return user.id;
}

// ---------------------------------------------------------------------------------------------------------
// operations

export const list = defineOperation({
  operationId: 'errors.list',
  tag: 'errors',
  summary: 'List error groups with filters, facets and sorting',
  description:
    'Error groups of the project. Filters: `status` (default `unresolved`; `all` for every status; comma-separated for several), `priority` and `level` (comma-separated), `service`, `environment` and `release` (groups seen there at any time: a group first seen in production and later in staging is found by `environment=staging`), `first_release` (the release the group first appeared in), `user_id` (groups that happened to this end user: the `user.id` the SDK sent), `q` (case-insensitive substring of title, type, fingerprint, service or environment), and `from`/`to` on last_seen. Each row has lifetime `event_count` and `user_count` (distinct users), `window_event_count` and `window_user_count` inside `from`/`to`, `first_release`, `last_release`, and the `environments` and `services` it was seen in. Sort: `last_seen` (default), `first_seen`, `event_count` or `priority`, highest first. Merged duplicates are not listed (fetch them by id, or see `merged_from` on their canonical group). `facets` count groups per service, environment (every one a group was seen in) and level over the filtered set, each ignoring its own filter (empty values are not counted; at most 50 values per facet). Offset pagination: the next page uses offset + limit.',
  method: 'GET',
  path: '/v1/projects/{project_id}/errors',
  scopes: ['errors:read'],
  risk: 'read',
  sensitive: false,
  display: { columns: ['short_id', 'title', 'event_count', 'user_count', 'last_seen', 'status', 'level'] },
  projectScoped: true,
  input: z.strictObject({
    project_id: projectId,
    from: isoDateTime.optional().describe('Groups last seen at or after this time.'),
    to: isoDateTime.optional().describe('Groups last seen at or before this time.'),
    status: csvList(z.enum([...GROUP_STATUSES, 'all'])).optional().describe('unresolved (default), resolved, ignored, muted or all; comma-separated for several.'),
    priority: csvList(z.enum(GROUP_PRIORITIES)).optional().describe('low, medium, high, critical (comma-separated).'),
    level: csvList(z.string().max(32)).optional().describe('fatal, error, warning, info, debug (comma-separated).'),
    service: z.string().max(256).optional().describe('Exact service name.'),
    environment: z.string().max(128).optional().describe('Exact environment the group was seen in (at any time).'),
    release: z.string().max(256).optional().describe('Exact release the group was seen in.'),
    first_release: z.string().max(256).optional().describe('Exact release the group first appeared in.'),
    user_id: z.string().max(256).optional().describe('End user id (the `user.id` the SDK sent): groups that happened to this user.'),
    q: z.string().max(256).optional().describe('Case-insensitive substring of title, type, fingerprint, service or environment.'),
    sort: z.enum(SORTS).default('last_seen').describe('last_seen (default), first_seen, event_count or priority; highest first.'),
    ...offsetPagination(50, 100),
  }),
  output: z.object({
    data: z.array(groupSchema),
    total: z.number().int(),
    limit: z.number().int(),
    offset: z.number().int(),
    facets: z.object({
      service: z.array(z.object({ value: z.string(), count: z.number().int() })),
      environment: z.array(z.object({ value: z.string(), count: z.number().int() })),
      level: z.array(z.object({ value: z.string(), count: z.number().int() })),
    }),
  }),
  errors: [{ status: 400, code: 'invalid_parameter', when: 'unknown status, priority or sort; limit out of 1–100; bad or reversed window' }],
  example: { status: 'unresolved', sort: 'event_count', limit: 20 },
  async handler(input, ctx) {
    const w = window(input.from, input.to);
    const statuses = input.status ?? ['unresolved'];
    const r = ctx.services.errorGroups.list(ctx.project!.id, {
      ...w,
      statuses: statuses.includes('all') ? undefined : (statuses as (typeof GROUP_STATUSES)[number][]),
      priorities: input.priority,
      levels: input.level,
      service: input.service,
      environment: input.environment,
      release: input.release,
      firstRelease: input.first_release,
      endUserId: input.user_id,
      q: input.q?.trim() || undefined,
      sort: input.sort,
      limit: input.limit,
      offset: input.offset,
      userId: userIdOf(ctx),
    });
    return { data: await groupRows(ctx, r.rows, w), total: r.total, limit: input.limit, offset: input.offset, facets: r.facets };
  },
});

export const get = defineOperation({
  operationId: 'errors.get',
  tag: 'errors',
  summary: 'Get one error group (by id or short id like WEB-2) with its stack trace, tags, releases, users, triage and replays',
  description:
    'One error group, by UUID or short id (`WEB-2`): the list fields (lifetime and in-window event and user counts, first and last release, environments and services) plus culprit, grouping method, the latest event with its user, `stack_trace` (compact and readable: the raised exception first, in-app frames first, `file:line function` with the source line), `tags` (top values per tag with counts, like Sentry\'s tag facets), the current triage result (latest completed run) or null, `merged_into` on an active duplicate and `merged_from` on a canonical group. The raw event payload (trimmed to 64 KiB) only with `include_payload=true`. `from`/`to` bound the window counts and tags. Unless `include_replay=false`, `replays` lists session replays that recorded one of the group\'s events, then replays of its environment overlapping `from`/`to` (default: the group\'s first to last seen), at most 20.',
  method: 'GET',
  path: '/v1/projects/{project_id}/errors/{error_group_id}',
  scopes: ['errors:read'],
  risk: 'read',
  sensitive: false,
  projectScoped: true,
  input: z.strictObject({
    project_id: projectId,
    error_group_id: errorGroupId,
    include_replay: queryBool.optional().describe('false skips replay linkage (default true).'),
    include_payload: queryBool.optional().describe('true adds the latest event\'s raw payload (default false: the compact stack_trace is usually enough).'),
    from: isoDateTime.optional().describe('Window start for window counts, tags and replays (default: first_seen for replays; unbounded for counts).'),
    to: isoDateTime.optional().describe('Window end (default: last_seen for replays; unbounded for counts).'),
  }),
  output: detailSchema,
  errors: [notFound, { status: 400, code: 'invalid_parameter', when: 'bad include_replay, include_payload or window' }],
  example: { error_group_id: 'WEB-2' },
  async handler(input, ctx) {
    const w = window(input.from, input.to);
    return detail(ctx, input.error_group_id, { replay: input.include_replay === false ? undefined : w, window: w, includePayload: input.include_payload === true });
  },
});

export const update = defineOperation({
  operationId: 'errors.update',
  tag: 'errors',
  summary: 'Change status, priority, assignee, bookmark or subscription of an error group',
  description:
    'Send at least one of `status`, `priority`, `assigned_to` (a member of the organization by user id or email — see projects.listMembers — or `"me"` for the signed-in OAuth user, or null to unassign), `bookmarked`, `subscribed`; unknown fields are rejected. An API key has no user: `"me"` from a key is a 400 `assignee_not_a_user`. Setting `assigned_to` (even to null) clears `ai_assigned`: a human has taken over from the in-project agent. `bookmarked` and `subscribed` are per-user state and need an OAuth user session; an API key sending them gets 403 `user_session_required` and nothing changes. Returns the updated group.',
  method: 'PATCH',
  path: '/v1/projects/{project_id}/errors/{error_group_id}',
  scopes: ['errors:write'],
  risk: 'write',
  sensitive: false,
  projectScoped: true,
  input: z.strictObject({
    project_id: projectId,
    error_group_id: errorGroupId,
    assigned_to: z
      .string()
      .trim()
      .min(1, 'must be a member\'s user id or email, "me", or null to unassign')
      .max(254)
      .nullable()
      .optional()
      .describe('A member\'s user id or email, "me" (the OAuth user calling), or null to unassign.'),
    bookmarked: z.boolean().optional().describe('Per-user; needs an OAuth user session.'),
    priority: z.enum(GROUP_PRIORITIES).optional(),
    status: z.enum(GROUP_STATUSES).optional(),
    subscribed: z.boolean().optional().describe('Per-user; needs an OAuth user session.'),
  }),
  output: detailSchema,
  errors: [
    { status: 400, code: 'invalid_parameter', when: 'a field breaks its rule; assigned_to is not a member of the organization' },
    { status: 400, code: 'assignee_not_a_user', when: 'assigned_to is "me" from an API key (a key is no user)' },
    { status: 400, code: 'unknown_field', when: 'a field this operation does not take' },
    { status: 400, code: 'empty_update', when: 'none of the fields was sent' },
    { status: 403, code: 'user_session_required', when: 'bookmarked or subscribed sent with an API key' },
    notFound,
  ],
  example: { error_group_id: '00000000-0000-4000-8000-000000000000', status: 'resolved' },
  async handler(input, ctx) {
    const { project_id: _p, error_group_id: id, assigned_to, bookmarked, priority, status, subscribed } = input;
    if (assigned_to === undefined && bookmarked === undefined && priority === undefined && status === undefined && subscribed === undefined) {
      throw new ValidationError('Send at least one of `assigned_to`, `bookmarked`, `priority`, `status`, `subscribed`.', undefined, 'empty_update');
    }
    const pid = ctx.project!.id;
    const gid = requireGroup(ctx, id).id;
    if ((bookmarked !== undefined || subscribed !== undefined) && ctx.principal.kind !== 'user') {
      throw new ForbiddenError(
        'user_session_required',
        '`bookmarked` and `subscribed` are per-user state and need an OAuth user session; an API key has no user. Sign in through OAuth, or leave these fields out.',
      );
    }
    const assignee = assigned_to ? resolveAssignee(ctx, assigned_to) : assigned_to;
    const now = ctx.now();
    if (assigned_to !== undefined || priority !== undefined || status !== undefined) ctx.services.errorGroups.update(pid, gid, { assigned_to: assignee, priority, status }, now);
    if ((bookmarked !== undefined || subscribed !== undefined) && ctx.principal.kind === 'user') {
      ctx.services.errorGroups.setUserState(pid, gid, ctx.principal.userId, { bookmarked, subscribed });
    }
    return detail(ctx, gid);
  },
});

export const merge = defineOperation({
  operationId: 'errors.merge',
  tag: 'errors',
  summary: 'Merge duplicate error groups into this one',
  description:
    'The URL names the canonical group; `duplicate_error_group_ids` (1 to 100 ids of other groups of the project) become its merged duplicates: they leave normal listings, `errors.get` on them shows `merged_into`, and later events matching their fingerprints count on the canonical group. Each group keeps its own past event counts. All or nothing. Rules: the canonical group must not itself be merged (400 `canonical_is_merged`); a duplicate may not be the canonical group (400 `merge_into_self`), merged into another group (400 `already_merged`: unmerge it first) or have duplicates of its own (400 `has_duplicates`: no chains); an unknown id is a 404. Ids already merged into this group are accepted unchanged. Returns the canonical group.',
  method: 'POST',
  path: '/v1/projects/{project_id}/errors/{error_group_id}/merge',
  scopes: ['errors:write'],
  risk: 'write',
  sensitive: false,
  projectScoped: true,
  input: z.strictObject({
    project_id: projectId,
    error_group_id: errorGroupId.describe('The canonical group.'),
    duplicate_error_group_ids: z
      .array(z.string().min(1).max(128))
      .min(1, 'must list at least one group id')
      .max(100, 'may list at most 100 group ids')
      .describe('Groups to merge into the canonical one (1 to 100).'),
  }),
  output: detailSchema,
  errors: [
    { status: 400, code: 'merge_into_self', when: 'the canonical group is among the duplicates' },
    { status: 400, code: 'already_merged', when: 'a duplicate is merged into another group' },
    { status: 400, code: 'has_duplicates', when: 'a duplicate is itself the canonical group of others' },
    { status: 400, code: 'canonical_is_merged', when: 'the URL group is itself a merged duplicate' },
    { status: 400, code: 'invalid_parameter', when: 'missing or empty duplicate_error_group_ids, more than 100' },
    { status: 404, code: 'not_found', when: 'the URL group or a listed duplicate is not a group of this project' },
  ],
  example: { error_group_id: '00000000-0000-4000-8000-000000000000', duplicate_error_group_ids: ['00000000-0000-4000-8000-000000000001'] },
  async handler(input, ctx) {
    const canonicalId = ctx.services.errorGroups.get(ctx.project!.id, input.error_group_id, null)?.id ?? input.error_group_id;
    const r = ctx.services.errorGroups.merge(ctx.project!.id, canonicalId, input.duplicate_error_group_ids, ctx.now());
    if (!r.ok) {
      const P = 'duplicate_error_group_ids';
      switch (r.reason) {
        case 'canonical_missing':
          throw new NotFoundError('Error group', 'error_group_id');
        case 'unknown':
          throw new NotFoundError(`Error group \`${r.id}\` (in duplicate_error_group_ids)`, P);
        case 'self':
          throw new ValidationError('`duplicate_error_group_ids` lists the canonical group itself: a group cannot be merged into itself.', P, 'merge_into_self');
        case 'canonical_is_merged':
          throw new ValidationError('This group is itself merged into another group: merge into that canonical group instead, or unmerge this one first.', 'error_group_id', 'canonical_is_merged');
        case 'merged_elsewhere':
          throw new ValidationError(`Group \`${r.id}\` is already merged into another group: unmerge it first.`, P, 'already_merged');
        case 'has_duplicates':
          throw new ValidationError(`Group \`${r.id}\` has duplicates merged into it: merge those into this group directly, or unmerge them first (merges do not chain).`, P, 'has_duplicates');
      }
    }
    return detail(ctx, canonicalId);
  },
});

export const unmerge = defineOperation({
  operationId: 'errors.unmerge',
  tag: 'errors',
  summary: 'Unmerge a duplicate error group from its canonical group',
  description:
    'The URL names a merged duplicate. It returns to normal listings and later events for its fingerprint count on it again; events counted on the canonical group while it was merged stay there. 409 `not_merged` when the group is not merged. Returns the restored group.',
  method: 'POST',
  path: '/v1/projects/{project_id}/errors/{error_group_id}/unmerge',
  scopes: ['errors:write'],
  risk: 'write',
  sensitive: false,
  projectScoped: true,
  input: z.strictObject({ project_id: projectId, error_group_id: errorGroupId.describe('The merged duplicate.') }),
  output: detailSchema,
  errors: [notFound, { status: 409, code: 'not_merged', when: 'the group is not merged into another' }],
  async handler(input, ctx) {
    const gid = ctx.services.errorGroups.get(ctx.project!.id, input.error_group_id, null)?.id ?? input.error_group_id;
    const r = ctx.services.errorGroups.unmerge(ctx.project!.id, gid, ctx.now());
    if (!r.ok) {
      if (r.reason === 'missing') throw new NotFoundError('Error group', 'error_group_id');
      throw new ConflictError('not_merged', 'This error group is not merged into another group, so there is nothing to unmerge.', 'error_group_id');
    }
    return detail(ctx, gid);
  },
});

export const listRelatedTraces = defineOperation({
  operationId: 'errors.listRelatedTraces',
  tag: 'errors',
  summary: 'Traces in which the error group\'s events occurred',
  description:
    'Distinct trace ids carried by the group\'s events (and by events of its merged duplicates) within `from`/`to` (event time), newest event first, each with the number of its events and, where spans of the trace were received, a span summary: root span name and service, duration, span and error-span counts, start. No window limit (`from`/`to` default to the group\'s whole life).',
  method: 'GET',
  path: '/v1/projects/{project_id}/errors/{error_group_id}/traces',
  scopes: ['errors:read'],
  risk: 'read',
  sensitive: false,
  projectScoped: true,
  input: z.strictObject({
    project_id: projectId,
    error_group_id: errorGroupId,
    from: isoDateTime.optional().describe('Events at or after this time.'),
    to: isoDateTime.optional().describe('Events at or before this time.'),
    ...offsetPagination(50, 100),
  }),
  output: z.object({
    data: z.array(
      z.object({
        trace_id: z.string(),
        event_count: z.number().int(),
        first_event_at: z.string(),
        last_event_at: z.string(),
        root_span_name: z.string().nullable(),
        service_name: z.string().nullable().describe('Service of the root span.'),
        duration_ms: z.number().nullable(),
        span_count: z.number().int(),
        error_count: z.number().int().describe('Spans with error status.'),
        started_at: z.string().nullable(),
      }),
    ),
    total: z.number().int(),
    limit: z.number().int(),
    offset: z.number().int(),
  }),
  errors: [notFound, { status: 400, code: 'invalid_parameter', when: 'bad or reversed window; limit out of 1–100' }],
  async handler(input, ctx) {
    const w = window(input.from, input.to);
    const g = requireGroup(ctx, input.error_group_id);
    const r = await ctx.services.errorGroups.relatedTraces(ctx.project!.id, g.id, { ...w, limit: input.limit, offset: input.offset });
    const spans = await ctx.services.tracesRead.traceSummaries(ctx.project!.id, r.rows.map((t) => t.trace_id));
    const none = { span_count: 0, error_count: 0, started_ms: null, ended_ms: null, root_span_name: null, root_service_name: null };
    return {
      data: r.rows.map((e) => ({ ...e, ...(spans.get(e.trace_id) ?? none) })).map((t) => ({
        trace_id: t.trace_id,
        event_count: t.event_count,
        first_event_at: toIso(t.first_event_ms)!,
        last_event_at: toIso(t.last_event_ms)!,
        root_span_name: t.root_span_name,
        service_name: t.root_service_name,
        duration_ms: t.started_ms !== null && t.ended_ms !== null ? Math.round((t.ended_ms - t.started_ms) * 1000) / 1000 : null,
        span_count: t.span_count,
        error_count: t.error_count,
        started_at: t.started_ms === null ? null : toIso(Math.floor(t.started_ms)),
      })),
      total: r.total,
      limit: input.limit,
      offset: input.offset,
    };
  },
});

export const listSuspectCommits = defineOperation({
  operationId: 'errors.listSuspectCommits',
  tag: 'errors',
  summary: 'Commits deployed shortly before the error group first appeared',
  description:
    'Commits of deployments (recorded with deployments.create) of the group\'s service and environment that shipped (started_at, else created_at) before the group\'s first event, or, with `from`/`to`, before its first event in that window (a regression). Ranked: the latest deployment before the event first, with a reason such as "deployed 12 min before the first event"; score falls with rank and with time before the event. Failed, canceled and skipped deployments and deployments without a commit are left out; at most 10. A group without a service name matches deployments of any service. Empty when none.',
  method: 'GET',
  path: '/v1/projects/{project_id}/errors/{error_group_id}/suspect-commits',
  scopes: ['errors:read'],
  risk: 'read',
  sensitive: false,
  projectScoped: true,
  input: z.strictObject({
    project_id: projectId,
    error_group_id: errorGroupId,
    from: isoDateTime.optional().describe('Use the group\'s first event at or after this time.'),
    to: isoDateTime.optional().describe('Use the group\'s first event at or before this time.'),
  }),
  output: z.object({
    data: z.array(
      z.object({
        sha: z.string(),
        branch: z.string().nullable(),
        deployment: z.object({
          id: z.string(),
          provider: z.string(),
          deployment_id: z.string(),
          version: z.string().nullable(),
          service: z.string().nullable(),
          environment: z.string().nullable(),
          status: z.string(),
        }),
        deployed_at: z.string(),
        rank: z.number().int(),
        score: z.number(),
        reason: z.string(),
      }),
    ),
    first_event_at: z.string().nullable().describe('The event time the deployments were compared with.'),
  }),
  errors: [notFound, { status: 400, code: 'invalid_parameter', when: 'bad or reversed window' }],
  async handler(input, ctx) {
    const w = window(input.from, input.to);
    const g = requireGroup(ctx, input.error_group_id);
    const pid = ctx.project!.id;
    const ref = w.fromMs !== undefined || w.toMs !== undefined ? await ctx.services.errorGroups.firstEventIn(pid, g.id, w.fromMs, w.toMs) : g.first_seen;
    if (ref === null) return { data: [], first_event_at: null };
    const deployments = ctx.services.deployments.before(pid, g.service_name || null, g.environment || null, ref, 50);
    const ranked = rankSuspectCommits(
      deployments.map((d) => ({ ...d, at: d.started_at ?? d.created_at })),
      ref,
    );
    return {
      data: ranked.map((c) => ({ sha: c.sha, branch: c.branch, deployment: c.deployment, deployed_at: toIso(c.deployed_at)!, rank: c.rank, score: c.score, reason: c.reason })),
      first_event_at: toIso(ref)!,
    };
  },
});

export const listTriageRuns = defineOperation({
  operationId: 'errors.listTriageRuns',
  tag: 'errors',
  summary: 'History of triage runs of an error group',
  description: 'Automatic and manual triage runs of the group, newest first: status (queued, running, completed, failed), trigger, triager, cycle (UTC day), times and result.',
  method: 'GET',
  path: '/v1/projects/{project_id}/errors/{error_group_id}/triage-runs',
  scopes: ['errors:read'],
  risk: 'read',
  sensitive: false,
  projectScoped: true,
  input: z.strictObject({ project_id: projectId, error_group_id: errorGroupId, ...offsetPagination(50, 100) }),
  output: z.object({ data: z.array(triageRunSchema), total: z.number().int(), limit: z.number().int(), offset: z.number().int() }),
  errors: [notFound],
  async handler(input, ctx) {
    const g = requireGroup(ctx, input.error_group_id);
    const r = ctx.services.errorGroups.triageRuns(ctx.project!.id, g.id, input.limit, input.offset);
    return { data: r.rows.map(triageRunOut), total: r.total, limit: input.limit, offset: input.offset };
  },
});

/** The automation cycle of a triage run: its UTC day. One automatic result per group per day. */
export const triageCycle = (now: number) => new Date(now).toISOString().slice(0, 10);

/**
 * Triage one group with the built-in triager. Without `force`, a run of the current cycle that did
 * not fail is returned instead of a new one (`created: false`). Used by errors.createTriage (manual)
 * and by automations (automatic).
 */
export async function triageErrorGroup(
  services: Services,
  projectId: string,
  groupId: string,
  opts: { trigger: TriageTrigger; force: boolean; now: number },
): Promise<{ run: TriageRunRow; created: boolean } | null> {
  const repo = services.errorGroups;
  const g = repo.get(projectId, groupId, null);
  if (!g) return null;
  const cycle = triageCycle(opts.now);
  if (!opts.force) {
    const existing = repo.triageInCycle(projectId, groupId, cycle);
    if (existing) return { run: existing, created: false };
  }
  const run = repo.createTriageRun(projectId, { id: randomUUID(), group_id: groupId, trigger: opts.trigger, triager: BUILTIN_TRIAGER, cycle, status: 'queued', created_at: opts.now });
  repo.setTriageRunning(projectId, run.id);
  try {
    const latest = await repo.latestEvent(projectId, groupId);
    const result = runBuiltinTriage({
      group: g,
      latestEvent: latest ? { message: latest.message, payload: latest.payload } : null,
      otherGroups: repo.otherGroups(projectId, groupId, 500),
      now: opts.now,
    });
    return { run: repo.finishTriageRun(projectId, run.id, { status: 'completed', result }, opts.now), created: true };
  } catch {
    return { run: repo.finishTriageRun(projectId, run.id, { status: 'failed', error: 'The triager failed on this group.' }, opts.now), created: true };
  }
}

export const createTriage = defineOperation({
  operationId: 'errors.createTriage',
  tag: 'errors',
  summary: 'Triage an error group (summary, probable cause, priority, similar groups)',
  description:
    'Runs the built-in triager (`builtin-v1`, deterministic) on the group and returns the run, completed when the call returns: a summary, the probable cause from the newest in-app frame of the latest event, a suggested priority with its reasons, and up to 5 similar groups. The automation cycle is the UTC day: without `force`, a run of today that did not fail is returned unchanged (200); with `force: true` a fresh manual run is created even if today already has a result (201).',
  method: 'POST',
  path: '/v1/projects/{project_id}/errors/{error_group_id}/triage',
  scopes: ['errors:write'],
  risk: 'write',
  sensitive: false,
  projectScoped: true,
  successStatus: 201,
  input: z.strictObject({
    project_id: projectId,
    error_group_id: errorGroupId,
    force: z.boolean().optional().describe('true: a fresh run even if today\'s cycle already has one.'),
  }),
  output: triageRunSchema,
  errors: [notFound, { status: 400, code: 'unknown_field', when: 'a body field other than force' }],
  example: { error_group_id: '00000000-0000-4000-8000-000000000000', force: true },
  async handler(input, ctx) {
    // A call from an automation run (its principal is `automation:<run id>`) is an automatic triage.
    const automatic = ctx.principal.kind === 'api_key' && ctx.principal.keyId.startsWith('automation:');
    const gid = ctx.services.errorGroups.get(ctx.project!.id, input.error_group_id, null)?.id ?? input.error_group_id;
    const r = await triageErrorGroup(ctx.services, ctx.project!.id, gid, { trigger: automatic ? 'automatic' : 'manual', force: input.force === true, now: ctx.now() });
    if (!r) throw new NotFoundError('Error group', 'error_group_id');
    ctx.response.status = r.created ? 201 : 200;
    return triageRunOut(r.run);
  },
});
