import { z } from 'zod';
import { defineOperation, type HandlerContext } from './define.js';
import { isoDateTime, offsetPagination, parseIso, projectId, toIso, uuid } from './shared.js';
import { NotFoundError, ConflictError, ValidationError } from '../src/core/errors.js';
import { MONITOR_STATES, parseExpectedStatus, uptimeRatio, DAY_MS, type DayCounts } from '../src/domain/monitors/health.js';
import { ScheduleError, validateSchedule, type Schedule } from '../src/domain/monitors/cron.js';
import type { CronMonitorConfig, HttpMonitorConfig, MonitorRow } from '../src/storage/monitors-repo.js';

const INTERVAL_UNITS = ['minute', 'hour', 'day', 'week', 'month', 'year'] as const;

const monitorSchema = z.object({
  id: z.string(),
  project_id: z.string(),
  name: z.string(),
  kind: z.enum(['http', 'cron']),
  state: z.enum(MONITOR_STATES),
  paused: z.boolean(),
  http: z
    .object({
      method: z.enum(['GET', 'HEAD', 'POST']),
      url: z.string(),
      interval_s: z.number().int(),
      timeout_ms: z.number().int(),
      expected_status: z.string(),
      body_contains: z.string().nullable(),
      region: z.string(),
      degraded_after_ms: z.number().int().nullable(),
    })
    .nullable(),
  cron: z
    .object({
      slug: z.string(),
      schedule: z.string().nullable().describe('Crontab, when the schedule is a crontab.'),
      schedule_interval: z.object({ value: z.number().int(), unit: z.enum(INTERVAL_UNITS) }).nullable(),
      checkin_margin_min: z.number().int(),
      max_runtime_min: z.number().int(),
      timezone: z.string(),
      next_expected_at: z.string().nullable(),
    })
    .nullable(),
  last_result_at: z.string().nullable(),
  last_result_status: z.string().nullable(),
  state_changed_at: z.string(),
  open_incident_id: z.string().nullable(),
  uptime_30d: z.number().nullable().describe('Share of checks up or degraded over the last 30 days (null: no results).'),
  created_at: z.string(),
  updated_at: z.string(),
});

/** A monitor as returned; `days`: its daily counts of the last 30 days when already read (a list reads them at once). */
async function monitorOut(m: MonitorRow, ctx: HandlerContext, days?: DayCounts[]): Promise<z.input<typeof monitorSchema>> {
  const http = m.kind === 'http' ? (m.config as HttpMonitorConfig) : null;
  const cron = m.kind === 'cron' ? (m.config as CronMonitorConfig) : null;
  const today = Math.floor(ctx.now() / DAY_MS);
  return {
    id: m.id,
    project_id: m.project_id,
    name: m.name,
    kind: m.kind,
    state: m.paused ? 'paused' : m.state,
    paused: m.paused,
    http,
    cron: cron
      ? {
          slug: m.slug!,
          schedule: cron.schedule.type === 'crontab' ? cron.schedule.value : null,
          schedule_interval: cron.schedule.type === 'interval' ? { value: cron.schedule.value, unit: cron.schedule.unit } : null,
          checkin_margin_min: cron.checkin_margin_min,
          max_runtime_min: cron.max_runtime_min,
          timezone: cron.timezone,
          next_expected_at: toIso(m.next_expected_at),
        }
      : null,
    last_result_at: toIso(m.last_result_at),
    last_result_status: m.last_result_status,
    state_changed_at: toIso(m.state_changed_at)!,
    open_incident_id: m.open_incident_id,
    uptime_30d: uptimeRatio(days ?? (await ctx.services.monitors.days(m.project_id, m.id, today - 29))),
    created_at: toIso(m.created_at)!,
    updated_at: toIso(m.updated_at)!,
  };
}

const name = z.string().trim().min(1).max(200);
const httpFields = {
  url: z.string().url().max(2048).describe('http:// or https:// URL to check.'),
  method: z.enum(['GET', 'HEAD', 'POST']).describe('Default GET.'),
  interval_s: z.number().int().min(30).max(86_400).describe('Seconds between checks, at least 30 (default 60).'),
  timeout_ms: z.number().int().min(100).max(60_000).describe('Give up after this many milliseconds (default 10000; at most the interval).'),
  expected_status: z.string().max(200).describe('Expected statuses: codes and ranges, e.g. "200-299,301" (default "200-299").'),
  body_contains: z.string().min(1).max(1000).nullable().describe('Text the body must contain (null: no body check).'),
  region: z.string().trim().min(1).max(64).describe('Where the check runs, a label (default "default").'),
  degraded_after_ms: z.number().int().min(1).max(60_000).nullable().describe('A correct response slower than this is `degraded`.'),
};
const cronFields = {
  slug: z.string().trim().regex(/^[a-z0-9][a-z0-9_-]{0,127}$/i, 'letters, digits, - and _ (max 128)').describe('The monitor slug Sentry check-ins name.'),
  schedule: z.string().trim().min(1).max(200).describe('Crontab (5 fields or @hourly-style), in `timezone`.'),
  schedule_interval: z.object({ value: z.number().int().min(1).max(1000), unit: z.enum(INTERVAL_UNITS) }).describe('Instead of a crontab: every value × unit.'),
  checkin_margin_min: z.number().int().min(1).max(1440).describe('Minutes a check-in may be late before it is missed (default 1).'),
  max_runtime_min: z.number().int().min(1).max(1440).describe('Minutes a run may stay in progress before it timed out (default 30).'),
  timezone: z.string().min(1).max(64).describe('IANA time zone of the crontab (default UTC).'),
};
const HTTP_KEYS = Object.keys(httpFields);
const CRON_KEYS = Object.keys(cronFields);

function checkUrl(url: string, ctx: HandlerContext): void {
  const u = new URL(url);
  if (u.protocol !== 'http:' && u.protocol !== 'https:') throw new ValidationError('`url` must be http:// or https://.', 'url');
  if (u.username || u.password) throw new ValidationError('`url` may not carry credentials.', 'url');
  const host = u.hostname.replace(/^\[|\]$/g, '');
  const refused = /^[\d.]+$|:/.test(host) ? ctx.services.monitoring.policy.check(host) : null;
  if (refused) throw new ValidationError(`\`url\`: ${refused}.`, 'url', 'address_not_allowed');
}

function checkHttp(c: HttpMonitorConfig): void {
  try {
    parseExpectedStatus(c.expected_status);
  } catch (e) {
    throw new ValidationError(`\`expected_status\`: ${(e as Error).message}.`, 'expected_status');
  }
  if (c.timeout_ms > c.interval_s * 1000) throw new ValidationError('`timeout_ms` may not exceed the interval.', 'timeout_ms');
}

function cronSchedule(input: { schedule?: string; schedule_interval?: { value: number; unit: (typeof INTERVAL_UNITS)[number] } }, timezone: string, prev?: Schedule): Schedule {
  if (input.schedule && input.schedule_interval) throw new ValidationError('Send `schedule` or `schedule_interval`, not both.', 'schedule');
  const s: Schedule | undefined = input.schedule
    ? { type: 'crontab', value: input.schedule, timezone }
    : input.schedule_interval
      ? { type: 'interval', ...input.schedule_interval }
      : prev && prev.type === 'crontab'
        ? { ...prev, timezone }
        : prev;
  if (!s) throw new ValidationError('A cron monitor needs `schedule` (crontab) or `schedule_interval`.', 'schedule');
  try {
    validateSchedule(s);
  } catch (e) {
    if (e instanceof ScheduleError) throw new ValidationError(`\`schedule\`: ${e.message}.`, 'schedule');
    throw e;
  }
  return s;
}

function requireMonitor(ctx: HandlerContext, id: string): MonitorRow {
  const m = ctx.services.monitors.get(ctx.project!.id, id);
  if (!m) throw new NotFoundError('Monitor', 'monitor_id');
  return m;
}

function uniqueName(ctx: HandlerContext, name: string, selfId?: string): void {
  const other = ctx.services.monitors.byName(ctx.project!.id, name);
  if (other && other.id !== selfId) throw new ConflictError('monitor_name_taken', `A monitor named \`${name}\` exists in this project.`, 'name');
}

const monitorIdParam = uuid('monitor id').describe('Monitor id (UUID).');

export const list = defineOperation({
  operationId: 'monitors.list',
  tag: 'monitors',
  summary: 'List uptime and cron monitors',
  description: 'Monitors of the project, oldest first, with their state (`up`, `down`, `degraded`, `paused`). Filters: kind, state. Offset pagination.',
  method: 'GET',
  path: '/v1/projects/{project_id}/monitors',
  scopes: ['read'],
  risk: 'read',
  sensitive: false,
  projectScoped: true,
  input: z.strictObject({
    project_id: projectId,
    kind: z.enum(['http', 'cron']).optional(),
    state: z.enum(MONITOR_STATES).optional(),
    ...offsetPagination(50, 200),
  }),
  output: z.object({ data: z.array(monitorSchema), total: z.number().int(), limit: z.number().int(), offset: z.number().int() }),
  errors: [{ status: 400, code: 'invalid_parameter', when: 'bad kind, state, limit or offset' }],
  example: { state: 'down' },
  async handler(input, ctx) {
    const { rows, total } = ctx.services.monitors.list(ctx.project!.id, { kind: input.kind, state: input.state, limit: input.limit, offset: input.offset });
    const days = await ctx.services.monitors.daysOf(ctx.project!.id, rows.map((m) => m.id), Math.floor(ctx.now() / DAY_MS) - 29);
    return { data: await Promise.all(rows.map((m) => monitorOut(m, ctx, days.get(m.id)))), total, limit: input.limit, offset: input.offset };
  },
});

export const get = defineOperation({
  operationId: 'monitors.get',
  tag: 'monitors',
  summary: 'Get a monitor',
  description: 'One monitor with its configuration, state, last result, open incident and 30-day uptime.',
  method: 'GET',
  path: '/v1/projects/{project_id}/monitors/{monitor_id}',
  scopes: ['read'],
  risk: 'read',
  sensitive: false,
  projectScoped: true,
  input: z.strictObject({ project_id: projectId, monitor_id: monitorIdParam }),
  output: monitorSchema,
  errors: [{ status: 404, code: 'not_found', when: 'no such monitor in this project' }],
  example: { monitor_id: '0f8fad5b-d9cb-469f-a165-70867728950e' },
  handler(input, ctx) {
    return monitorOut(requireMonitor(ctx, input.monitor_id), ctx);
  },
});

export const create = defineOperation({
  operationId: 'monitors.create',
  tag: 'monitors',
  summary: 'Create an HTTP uptime monitor or a cron monitor',
  description:
    'kind `http`: checks `url` every `interval_s` seconds (≥ 30) from the server, expecting `expected_status` and optionally `body_contains`; a slow correct answer (over `degraded_after_ms`) is `degraded`. Private, loopback and link-local addresses are refused unless the operator allows them (SIGHTLINE_MONITOR_ALLOW_PRIVATE). kind `cron`: expects Sentry check-ins for `slug` on `schedule` (crontab in `timezone`) or `schedule_interval`; a check-in later than `checkin_margin_min` is missed, a run in progress longer than `max_runtime_min` timed out. Cron monitors are also created by the first Sentry check-in that carries a monitor config. A monitor going down opens an incident; recovering resolves it.',
  method: 'POST',
  path: '/v1/projects/{project_id}/monitors',
  scopes: ['write'],
  risk: 'write',
  sensitive: false,
  projectScoped: true,
  successStatus: 201,
  input: z.strictObject({
    project_id: projectId,
    name,
    kind: z.enum(['http', 'cron']),
    paused: z.boolean().optional(),
    ...Object.fromEntries(Object.entries(httpFields).map(([k, v]) => [k, v.optional()])) as { [K in keyof typeof httpFields]: z.ZodOptional<(typeof httpFields)[K]> },
    ...Object.fromEntries(Object.entries(cronFields).map(([k, v]) => [k, v.optional()])) as { [K in keyof typeof cronFields]: z.ZodOptional<(typeof cronFields)[K]> },
  }),
  output: monitorSchema,
  errors: [
    { status: 400, code: 'invalid_parameter', when: 'unknown field, missing url/slug/schedule, fields of the other kind, bad schedule or statuses' },
    { status: 400, code: 'address_not_allowed', when: 'the URL names a private or special-purpose address the operator did not allow' },
    { status: 409, code: 'monitor_name_taken', when: 'another monitor has this name (or slug)' },
  ],
  example: { name: 'API health', kind: 'http', url: 'https://api.example.com/health', interval_s: 60, expected_status: '200-299' },
  handler(input, ctx) {
    const pid = ctx.project!.id;
    const wrong = Object.keys(input).filter((k) => input[k as keyof typeof input] !== undefined && (input.kind === 'http' ? CRON_KEYS : HTTP_KEYS).includes(k));
    if (wrong.length) throw new ValidationError(`\`${wrong[0]}\` does not apply to a ${input.kind} monitor.`, wrong[0]);
    uniqueName(ctx, input.name);
    const now = ctx.now();
    let row: MonitorRow;
    if (input.kind === 'http') {
      if (!input.url) throw new ValidationError('An http monitor needs `url`.', 'url');
      checkUrl(input.url, ctx);
      const config: HttpMonitorConfig = {
        method: input.method ?? 'GET',
        url: input.url,
        interval_s: input.interval_s ?? 60,
        timeout_ms: input.timeout_ms ?? Math.min(10_000, (input.interval_s ?? 60) * 1000),
        expected_status: input.expected_status ?? '200-299',
        body_contains: input.body_contains ?? null,
        region: input.region ?? 'default',
        degraded_after_ms: input.degraded_after_ms ?? null,
      };
      checkHttp(config);
      row = ctx.services.atomic(() => {
        const m = ctx.services.monitors.create(pid, { name: input.name, kind: 'http', config, slug: null, paused: !!input.paused, next_expected_at: null }, now);
        ctx.services.monitoring.scheduleMonitor(m);
        return m;
      });
    } else {
      if (!input.slug) throw new ValidationError('A cron monitor needs `slug` (the monitor slug your check-ins send).', 'slug');
      if (ctx.services.monitors.bySlug(pid, input.slug)) throw new ConflictError('monitor_name_taken', `A monitor with slug \`${input.slug}\` exists.`, 'slug');
      const timezone = input.timezone ?? 'UTC';
      const config: CronMonitorConfig = {
        schedule: cronSchedule(input, timezone),
        checkin_margin_min: input.checkin_margin_min ?? 1,
        max_runtime_min: input.max_runtime_min ?? 30,
        timezone,
      };
      row = ctx.services.atomic(() => {
        const next = ctx.services.monitoring.nextExpected(config, now, now);
        const m = ctx.services.monitors.create(pid, { name: input.name, kind: 'cron', config, slug: input.slug!, paused: !!input.paused, next_expected_at: next }, now);
        ctx.services.monitoring.scheduleMonitor(m);
        return m;
      });
    }
    return monitorOut(row, ctx);
  },
});

export const update = defineOperation({
  operationId: 'monitors.update',
  tag: 'monitors',
  summary: 'Update or pause a monitor',
  description:
    'Changes name, check settings or schedule (fields of the monitor\'s own kind only), or pauses (`paused: true`: no checks, no missed check-ins, state `paused`) and resumes it. The kind and a cron monitor\'s slug do not change.',
  method: 'PATCH',
  path: '/v1/projects/{project_id}/monitors/{monitor_id}',
  scopes: ['write'],
  risk: 'write',
  sensitive: false,
  projectScoped: true,
  input: z.strictObject({
    project_id: projectId,
    monitor_id: monitorIdParam,
    name: name.optional(),
    paused: z.boolean().optional(),
    ...Object.fromEntries(Object.entries(httpFields).filter(([k]) => k !== 'slug').map(([k, v]) => [k, v.optional()])) as { [K in keyof typeof httpFields]: z.ZodOptional<(typeof httpFields)[K]> },
    ...Object.fromEntries(Object.entries(cronFields).filter(([k]) => k !== 'slug').map(([k, v]) => [k, v.optional()])) as { [K in Exclude<keyof typeof cronFields, 'slug'>]: z.ZodOptional<(typeof cronFields)[K]> },
  }),
  output: monitorSchema,
  errors: [
    { status: 400, code: 'invalid_parameter', when: 'unknown field, a field of the other kind, bad values' },
    { status: 400, code: 'address_not_allowed', when: 'the URL names an address the operator did not allow' },
    { status: 404, code: 'not_found', when: 'no such monitor' },
    { status: 409, code: 'monitor_name_taken', when: 'another monitor has this name' },
  ],
  example: { monitor_id: '0f8fad5b-d9cb-469f-a165-70867728950e', paused: true },
  handler(input, ctx) {
    const m = requireMonitor(ctx, input.monitor_id);
    const fields = Object.keys(input).filter((k) => k !== 'project_id' && k !== 'monitor_id' && input[k as keyof typeof input] !== undefined);
    if (!fields.length) throw new ValidationError('Send at least one field to change.');
    const wrong = fields.filter((k) => (m.kind === 'http' ? CRON_KEYS : HTTP_KEYS).includes(k));
    if (wrong.length) throw new ValidationError(`\`${wrong[0]}\` does not apply to a ${m.kind} monitor.`, wrong[0]);
    if (input.name) uniqueName(ctx, input.name, m.id);
    const now = ctx.now();
    const next: MonitorRow = { ...m, name: input.name ?? m.name };
    if (m.kind === 'http') {
      const c = m.config as HttpMonitorConfig;
      if (input.url) checkUrl(input.url, ctx);
      const config: HttpMonitorConfig = {
        method: input.method ?? c.method,
        url: input.url ?? c.url,
        interval_s: input.interval_s ?? c.interval_s,
        timeout_ms: input.timeout_ms ?? c.timeout_ms,
        expected_status: input.expected_status ?? c.expected_status,
        body_contains: input.body_contains !== undefined ? input.body_contains : c.body_contains,
        region: input.region ?? c.region,
        degraded_after_ms: input.degraded_after_ms !== undefined ? input.degraded_after_ms : c.degraded_after_ms,
      };
      checkHttp(config);
      next.config = config;
    } else {
      const c = m.config as CronMonitorConfig;
      const timezone = input.timezone ?? c.timezone;
      const config: CronMonitorConfig = {
        schedule: cronSchedule(input, timezone, c.schedule),
        checkin_margin_min: input.checkin_margin_min ?? c.checkin_margin_min,
        max_runtime_min: input.max_runtime_min ?? c.max_runtime_min,
        timezone,
      };
      next.config = config;
      if (JSON.stringify(config.schedule) !== JSON.stringify(c.schedule) || (input.paused === false && m.paused)) {
        next.next_expected_at = ctx.services.monitoring.nextExpected(config, now, m.created_at);
      }
    }
    if (input.paused !== undefined && input.paused !== m.paused) {
      next.paused = input.paused;
      next.state = input.paused ? 'paused' : m.open_incident_id ? 'down' : 'up';
      next.state_changed_at = now;
    }
    const row = ctx.services.atomic(() => {
      ctx.services.monitors.save(next, now);
      const saved = ctx.services.monitors.get(m.project_id, m.id)!;
      ctx.services.monitoring.scheduleMonitor(saved);
      return saved;
    });
    return monitorOut(row, ctx);
  },
});

export const del = defineOperation({
  operationId: 'monitors.delete',
  tag: 'monitors',
  summary: 'Delete a monitor and its results',
  description: 'Deletes the monitor, its results and its jobs. Status-page components linked to it stay, unlinked (health `unknown`); its incidents stay, without the monitor link.',
  method: 'DELETE',
  path: '/v1/projects/{project_id}/monitors/{monitor_id}',
  scopes: ['write'],
  risk: 'write',
  sensitive: false,
  projectScoped: true,
  input: z.strictObject({ project_id: projectId, monitor_id: monitorIdParam }),
  output: z.object({ id: z.string(), deleted: z.literal(true) }),
  errors: [{ status: 404, code: 'not_found', when: 'no such monitor' }],
  example: { monitor_id: '0f8fad5b-d9cb-469f-a165-70867728950e' },
  async handler(input, ctx) {
    const m = requireMonitor(ctx, input.monitor_id);
    ctx.services.atomic(() => {
      ctx.services.monitoring.forgetMonitor(m);
      ctx.services.monitors.remove(m.project_id, m.id);
    });
    await ctx.services.monitors.forgetResults(m.project_id, m.id);
    return { id: m.id, deleted: true as const };
  },
});

const resultSchema = z.object({
  at: z.string(),
  status: z.enum(['up', 'down', 'degraded', 'ok', 'error', 'missed', 'timeout', 'in_progress']),
  latency_ms: z.number().int().nullable().describe('HTTP: response time; cron: the run\'s reported duration.'),
  http_status: z.number().int().nullable(),
  error: z.string().nullable(),
  region: z.string().nullable(),
  check_in_id: z.string().nullable(),
});

export const listResults = defineOperation({
  operationId: 'monitors.listResults',
  tag: 'monitors',
  summary: 'List a monitor\'s check results',
  description:
    'Results newest first: HTTP checks (`up`, `degraded`, `down` with the status code, latency and error) and cron check-ins (`in_progress`, `ok`, `error`, `missed`, `timeout`). Window `from`/`to` (default the last 24 hours). Results are kept for SIGHTLINE_MONITOR_RETENTION_DAYS (default 90) days. No window limit beyond the results kept.',
  method: 'GET',
  path: '/v1/projects/{project_id}/monitors/{monitor_id}/results',
  scopes: ['read'],
  risk: 'read',
  sensitive: false,
  projectScoped: true,
  input: z.strictObject({
    project_id: projectId,
    monitor_id: monitorIdParam,
    from: isoDateTime.optional(),
    to: isoDateTime.optional(),
    status: resultSchema.shape.status.optional(),
    ...offsetPagination(100, 1000),
  }),
  output: z.object({ data: z.array(resultSchema), total: z.number().int(), limit: z.number().int(), offset: z.number().int() }),
  errors: [
    { status: 400, code: 'invalid_parameter', when: 'bad window, status or limit' },
    { status: 404, code: 'not_found', when: 'no such monitor' },
  ],
  example: { monitor_id: '0f8fad5b-d9cb-469f-a165-70867728950e', status: 'down' },
  async handler(input, ctx) {
    const m = requireMonitor(ctx, input.monitor_id);
    const to = parseIso(input.to) ?? ctx.now();
    const from = parseIso(input.from) ?? to - DAY_MS;
    if (from > to) throw new ValidationError('`from` is after `to`.', 'from');
    const { rows, total } = await ctx.services.monitors.results(m.project_id, m.id, { from, to, status: input.status, limit: input.limit, offset: input.offset });
    return {
      data: rows.map((r) => ({ at: toIso(r.at_ms)!, status: r.status as z.infer<typeof resultSchema>['status'], latency_ms: r.latency_ms, http_status: r.http_status, error: r.error, region: r.region, check_in_id: r.check_in_id })),
      total,
      limit: input.limit,
      offset: input.offset,
    };
  },
});
