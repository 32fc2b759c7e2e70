/**
 * Automations (issue 16): a trigger (cron schedule in a time zone, a domain event, or manual), optional
 * conditions, and steps (Code Mode scripts or agent tasks) bounded by a capability manifest. Runs,
 * outputs, approvals and draft pull requests. The run engine is src/core/automations.ts.
 */
import { randomUUID } from 'node:crypto';
import { z } from 'zod';
import { defineOperation, type HandlerContext } from './define.js';
import { offsetPagination, projectId, toIso, uuid } from './shared.js';
import { ConflictError, ForbiddenError, NotFoundError, UnprocessableError, ValidationError } from '../src/core/errors.js';
import { AUTOMATION_STATES, checkTrigger, ConfigError, configFields, configSchema, type AutomationConfig } from '../src/domain/automations/config.js';
import { TEMPLATES } from '../src/domain/automations/templates.js';
import { contentHash, isAutomationPrincipal, type AutomationEngine } from '../src/core/automations.js';
import { githubProvider, GitProviderError, localGitProvider, type GitProvider } from '../src/domain/automations/git.js';
import type { AutomationRow, OutputRow, RunRow } from '../src/storage/automations-repo.js';

const P = '/v1/projects/{project_id}';
const automationId = uuid('automation id').describe('Automation id.');
const runId = uuid('run id').describe('Run id (from triggerRun or listRuns).');
const notFound = (what: string) => ({ status: 404, code: 'not_found', when: `no such ${what} in this project` });
const badInput = { status: 400, code: 'invalid_parameter', when: 'a field is missing or out of range' };
const unknownField = { status: 400, code: 'unknown_field', when: 'a body field this operation does not take' };

const engine = (ctx: HandlerContext): AutomationEngine => {
  const e = ctx.services.automationEngine;
  if (!e) throw new Error('automation engine not configured');
  return e;
};

// ---------- schemas ----------
const anyJson = z.unknown();
const configOut = z.object({
  trigger: z.record(z.string(), anyJson),
  conditions: z.record(z.string(), anyJson),
  steps: z.array(z.record(z.string(), anyJson)),
  capability: z.string(),
  repository: z.record(z.string(), anyJson).nullable(),
  limits: z.object({ timeout_ms: z.number().int(), max_calls: z.number().int() }),
  params: z.record(z.string(), anyJson),
});
const runSummary = z.object({
  id: z.string(),
  automation_id: z.string(),
  trigger: z.enum(['manual', 'schedule', 'event']).or(z.string()),
  status: z.string().describe('queued, running, completed, failed or cancelled.'),
  error: z.string().nullable(),
  created_at: z.string(),
  started_at: z.string().nullable(),
  ended_at: z.string().nullable(),
});
const automationSchema = z.object({
  id: z.string(),
  project_id: z.string(),
  name: z.string(),
  description: z.string(),
  template_id: z.string().nullable(),
  state: z.enum(AUTOMATION_STATES),
  config: configOut,
  next_run_at: z.string().nullable().describe('Next scheduled fire time of an enabled schedule automation.'),
  recent_runs: z.array(runSummary).describe('Up to 5 latest runs (get only; empty in list).'),
  created_at: z.string(),
  updated_at: z.string(),
});
const outputSchema = z.object({
  id: z.string(),
  run_id: z.string(),
  kind: z.string().describe('summary, triage_verdict, patch, message or write (a call held for approval).'),
  content: z.record(z.string(), anyJson),
  content_hash: z.string().describe('sha256 of the canonical content; approve must name it.'),
  needs_approval: z.boolean(),
  status: z.string().describe('final, pending_approval, approved, rejected, applied, delivered, undelivered, blocked, failed, pr_created or dry_run.'),
  detail: z.record(z.string(), anyJson).nullable(),
  created_at: z.string(),
  updated_at: z.string(),
});
const runSchema = runSummary.extend({
  input: anyJson,
  attempts: z.number().int(),
  steps: z.array(z.record(z.string(), anyJson)).describe('Per step: name, type, status, started_at, ended_at, duration_ms, logs, calls (operation_id, status, ms, recorded), result, error.'),
  outputs: z.array(outputSchema),
});
const approvalSchema = z.object({
  id: z.string(),
  run_id: z.string(),
  output_id: z.string(),
  content_hash: z.string(),
  decision: z.enum(['approved', 'rejected']),
  decided_by: z.string(),
  note: z.string().nullable(),
  created_at: z.string(),
});
const capabilitySchema = z.object({
  name: z.string(),
  description: z.string(),
  operations: z.array(z.string()),
  risk: z.enum(['read', 'write']),
  approval: z.enum(['required', 'not_required']),
  builtin: z.boolean(),
});
const skillSchema = z.object({ id: z.string(), name: z.string(), description: z.string(), content: z.string(), created_at: z.string(), updated_at: z.string() });
const page = <T extends z.ZodType>(item: T) => z.object({ data: z.array(item), total: z.number().int(), limit: z.number().int(), offset: z.number().int() });

// ---------- mappers ----------
const runSummaryOut = (r: RunRow): z.input<typeof runSummary> => ({
  id: r.id,
  automation_id: r.automation_id,
  trigger: r.trigger,
  status: r.status,
  error: r.error,
  created_at: toIso(r.created_at)!,
  started_at: toIso(r.started_at),
  ended_at: toIso(r.ended_at),
});
const outputOut = (o: OutputRow): z.input<typeof outputSchema> => ({
  id: o.id,
  run_id: o.run_id,
  kind: o.kind,
  content: o.content,
  content_hash: o.content_hash,
  needs_approval: o.needs_approval,
  status: o.status,
  detail: o.detail,
  created_at: toIso(o.created_at)!,
  updated_at: toIso(o.updated_at)!,
});
function automationOut(a: AutomationRow, ctx: HandlerContext, withRuns: boolean): z.input<typeof automationSchema> {
  const job = a.state === 'enabled' && a.config.trigger.type === 'schedule' ? ctx.services.scheduler.get('automation.tick', a.id) : undefined;
  return {
    id: a.id,
    project_id: a.project_id,
    name: a.name,
    description: a.description,
    template_id: a.template_id,
    state: a.state,
    config: a.config,
    next_run_at: job ? toIso(job.run_at) : null,
    recent_runs: withRuns ? ctx.services.automations.runs(a.project_id, a.id, null, 5, 0).rows.map(runSummaryOut) : [],
    created_at: toIso(a.created_at)!,
    updated_at: toIso(a.updated_at)!,
  };
}
const runOut = (r: RunRow, ctx: HandlerContext): z.input<typeof runSchema> => ({
  ...runSummaryOut(r),
  input: r.input,
  attempts: r.attempts,
  steps: r.steps,
  outputs: ctx.services.automations.outputs(r.project_id, r.id).map(outputOut),
});

function requireAutomation(ctx: HandlerContext, id: string): AutomationRow {
  const a = ctx.services.automations.get(ctx.project!.id, id);
  if (!a) throw new NotFoundError('Automation', 'automation_id');
  return a;
}
function requireRun(ctx: HandlerContext, id: string): RunRow {
  const r = ctx.services.automations.run(ctx.project!.id, id);
  if (!r) throw new NotFoundError('Automation run', 'run_id');
  return r;
}

/** Validates a full config beyond its schema: the crontab and that the capability exists. */
function checkConfig(ctx: HandlerContext, c: AutomationConfig): AutomationConfig {
  try {
    checkTrigger(c.trigger);
  } catch (e) {
    if (e instanceof ConfigError) throw new ValidationError(e.message, e.param);
    throw e;
  }
  if (!engine(ctx).capability(ctx.project!.id, c.capability)) {
    throw new ValidationError(`\`capability\`: no capability \`${c.capability}\` in this project (see automations.listCapabilities).`, 'capability');
  }
  return c;
}

function parseConfig(raw: unknown, param = 'config'): AutomationConfig {
  const r = configSchema.safeParse(raw);
  if (!r.success) {
    const i = r.error.issues[0]!;
    const path = [param, ...i.path.map(String)].join('.');
    throw new ValidationError(`\`${path}\`: ${i.message}`, path);
  }
  return r.data;
}

const partialConfig = z
  .strictObject({
    trigger: configFields.trigger.optional(),
    conditions: configFields.conditions.optional(),
    steps: configFields.steps.optional(),
    capability: configFields.capability.optional(),
    repository: configFields.repository.optional(),
    limits: configFields.limits.optional(),
    params: configFields.params.optional(),
  })
  .describe('Fields of the config to replace (each field replaced whole).');

// ---------- templates and automations ----------
export const listTemplates = defineOperation({
  operationId: 'automations.listTemplates',
  tag: 'automations',
  summary: 'List automation templates',
  description:
    'Built-in templates useful on day one: `triage-new-errors` (triage every new error group; automatic runs show in errors.listTriageRuns), `weekly-error-digest` (to a channel), `release-regression-watch`, `feedback-summary` and `noisy-alert-cleanup` (proposes mutes that wait for approval). Each has the full config automations.create would use; create one with `template_id` and optional overrides.',
  method: 'GET',
  path: `${P}/automation-templates`,
  scopes: ['automations:read'],
  risk: 'read',
  sensitive: false,
  projectScoped: true,
  input: z.strictObject({ project_id: projectId }),
  output: z.object({ data: z.array(z.object({ id: z.string(), name: z.string(), description: z.string(), config: configOut })) }),
  errors: [],
  handler() {
    return { data: TEMPLATES.map((t) => ({ id: t.id, name: t.name, description: t.description, config: t.config })) };
  },
});

export const list = defineOperation({
  operationId: 'automations.list',
  tag: 'automations',
  summary: 'List automations (enabled, draft and paused)',
  description: 'Automations of the project, oldest first, with their config, state and next scheduled run. Filter with `state`.',
  method: 'GET',
  path: `${P}/automations`,
  scopes: ['automations:read'],
  risk: 'read',
  sensitive: false,
  projectScoped: true,
  input: z.strictObject({ project_id: projectId, state: z.enum(AUTOMATION_STATES).optional().describe('Only automations in this state.'), ...offsetPagination(50, 200) }),
  output: page(automationSchema),
  errors: [{ status: 400, code: 'invalid_parameter', when: 'bad state, limit or offset' }],
  display: { columns: ['id', 'name', 'state', 'template_id', 'next_run_at'] },
  handler(input, ctx) {
    const r = ctx.services.automations.list(ctx.project!.id, input.state ?? null, input.limit, input.offset);
    return { data: r.rows.map((a) => automationOut(a, ctx, false)), total: r.total, limit: input.limit, offset: input.offset };
  },
});

export const create = defineOperation({
  operationId: 'automations.create',
  tag: 'automations',
  summary: 'Create an automation from a template or a custom config',
  description:
    'Body: `name`, optional `description`, and either `template_id` (from listTemplates) with optional `overrides` (config fields replaced whole, e.g. `{"trigger": {"type": "schedule", "cron": "0 8 * * 1", "timezone": "Europe/Paris"}, "params": {"channel_id": "..."}}`) or a full `config`: `trigger` (`{"type":"schedule","cron","timezone"}`, `{"type":"event","event":"error.group.created"|"error.group.reopened"|"error.spike"|"release.regressed"|"feedback.received"|"monitor.down"}` or `{"type":"manual"}`), `conditions` (service, environment, level, query), `steps` (`{"type":"script","name","code"}` Code Mode scripts with the MCP `api.*` surface, reading `input`; or `{"type":"agent","name","prompt","skills"}` agent tasks), `capability` (manifest name bounding what runs may call), `repository` (for createPr), `limits` (timeout_ms, max_calls per step) and `params`. New automations start as `draft`; enable them with automations.update `{"state":"enabled"}`.',
  method: 'POST',
  path: `${P}/automations`,
  scopes: ['automations:write'],
  risk: 'write',
  sensitive: false,
  projectScoped: true,
  successStatus: 201,
  input: z.strictObject({
    project_id: projectId,
    name: z.string().trim().min(1).max(200),
    description: z.string().max(2000).optional(),
    template_id: z.string().max(64).optional().describe('Start from this template (listTemplates).'),
    overrides: partialConfig.optional().describe('With template_id: config fields replaced whole.'),
    config: z.record(z.string(), z.unknown()).optional().describe('A full custom config (without template_id).'),
  }),
  output: automationSchema,
  errors: [badInput, unknownField, { status: 404, code: 'not_found', when: 'no template with this id' }],
  example: { name: 'Triage new errors', template_id: 'triage-new-errors' },
  handler(input, ctx) {
    let config: AutomationConfig;
    let description = input.description ?? '';
    if (input.template_id) {
      if (input.config) throw new ValidationError('Send `template_id` (with optional `overrides`) or `config`, not both.', 'config');
      const t = TEMPLATES.find((x) => x.id === input.template_id);
      if (!t) throw new NotFoundError('Automation template', 'template_id');
      config = parseConfig({ ...t.config, ...input.overrides }, 'overrides');
      if (!input.description) description = t.description;
    } else {
      if (!input.config) throw new ValidationError('Send `template_id` or a custom `config`.', 'config');
      if (input.overrides) throw new ValidationError('`overrides` go with `template_id`; put them in `config`.', 'overrides');
      config = parseConfig(input.config);
    }
    checkConfig(ctx, config);
    const now = ctx.now();
    const a = ctx.services.automations.create({ id: randomUUID(), project_id: ctx.project!.id, name: input.name, description, template_id: input.template_id ?? null, state: 'draft', config, created_at: now, updated_at: now });
    return automationOut(a, ctx, true);
  },
});

export const preview = defineOperation({
  operationId: 'automations.preview',
  tag: 'automations',
  summary: 'Dry-run a candidate automation config on recent data',
  description:
    'Nothing is stored, changed or sent. Body: `config` (same shape as automations.create; or `template_id` + `overrides`), `window_hours` (default 24, at most 720) and optional `input`. Returns `triggers`: the schedule fire times or the past events (new error groups, feedback) that would have started a run in the window, after conditions; and `run`: one run on the latest of them (or on `input`), where every write is replaced by a `write` output with status `dry_run` recording the operation and input it would have called, messages and patches are `dry_run` outputs, and agent tasks are described, not run. Everything a preview reads is read with the caller\'s own scopes as well as the capability\'s.',
  method: 'POST',
  path: `${P}/automations/preview`,
  scopes: ['automations:read'],
  risk: 'read',
  sensitive: false,
  projectScoped: true,
  input: z.strictObject({
    project_id: projectId,
    config: z.record(z.string(), z.unknown()).optional(),
    template_id: z.string().max(64).optional(),
    overrides: partialConfig.optional(),
    window_hours: z.number().int().min(1).max(720).default(24),
    input: z.unknown().optional().describe('Input of the dry run (as triggerRun takes); default: the latest triggering event.'),
  }),
  output: z.object({
    window: z.object({ from: z.string(), to: z.string() }),
    triggers: z.array(z.object({ at: z.string(), key: z.string(), event: z.record(z.string(), anyJson).nullable() })),
    note: z.string().nullable(),
    run: z.object({ status: z.string(), error: z.string().nullable(), steps: z.array(z.record(z.string(), anyJson)), outputs: z.array(z.record(z.string(), anyJson)) }),
  }),
  errors: [badInput, unknownField, { status: 404, code: 'not_found', when: 'no template with this id' }],
  example: { template_id: 'triage-new-errors', window_hours: 24 },
  async handler(input, ctx) {
    let config: AutomationConfig;
    if (input.template_id) {
      const t = TEMPLATES.find((x) => x.id === input.template_id);
      if (!t) throw new NotFoundError('Automation template', 'template_id');
      config = parseConfig({ ...t.config, ...input.overrides }, 'overrides');
    } else {
      if (!input.config) throw new ValidationError('Send a candidate `config` or a `template_id`.', 'config');
      config = parseConfig(input.config);
    }
    checkConfig(ctx, config);
    const to = ctx.now();
    const from = to - input.window_hours * 3_600_000;
    const e = engine(ctx);
    const triggers = await e.pastTriggers(ctx.project!.id, config, from, to, ctx.principal);
    const note =
      config.trigger.type === 'event' && config.trigger.event !== 'error.group.created' && config.trigger.event !== 'feedback.received'
        ? `Past \`${config.trigger.event}\` events are not kept, so the window cannot be replayed; the dry run uses \`input\`.`
        : null;
    const latest = triggers[triggers.length - 1];
    const trig = config.trigger.type === 'manual' ? 'manual' : config.trigger.type;
    const runInput = input.input !== undefined ? { input: input.input } : latest?.event ? { event: latest.event } : latest ? { scheduled_for: latest.at } : {};
    const r = await e.execute({ id: 'preview', project_id: ctx.project!.id, config }, { id: `preview-${randomUUID()}`, trigger: trig, input: runInput }, 'preview', ctx.signal, ctx.principal);
    return {
      window: { from: toIso(from)!, to: toIso(to)! },
      triggers,
      note,
      run: { status: r.status, error: r.error, steps: r.steps as unknown as Record<string, unknown>[], outputs: r.outputs as unknown as Record<string, unknown>[] },
    };
  },
});

export const get = defineOperation({
  operationId: 'automations.get',
  tag: 'automations',
  summary: 'Get an automation with its config and recent runs',
  description: 'One automation: config, state, next scheduled run and a summary of its 5 latest runs.',
  method: 'GET',
  path: `${P}/automations/{automation_id}`,
  scopes: ['automations:read'],
  risk: 'read',
  sensitive: false,
  projectScoped: true,
  input: z.strictObject({ project_id: projectId, automation_id: automationId }),
  output: automationSchema,
  errors: [notFound('automation')],
  handler(input, ctx) {
    return automationOut(requireAutomation(ctx, input.automation_id), ctx, true);
  },
});

export const update = defineOperation({
  operationId: 'automations.update',
  tag: 'automations',
  summary: 'Update, enable, pause, resume or rename an automation',
  description:
    'Body (at least one field): `name`, `description`, `state` (`enabled` enables or resumes, `paused` pauses; a draft can be enabled, and nothing goes back to `draft`) and `config` (fields replaced whole, as in create). Enabling a schedule automation arms its next fire time; pausing disarms it and event triggers stop starting runs.',
  method: 'PATCH',
  path: `${P}/automations/{automation_id}`,
  scopes: ['automations:write'],
  risk: 'write',
  sensitive: false,
  projectScoped: true,
  input: z.strictObject({
    project_id: projectId,
    automation_id: automationId,
    name: z.string().trim().min(1).max(200).optional(),
    description: z.string().max(2000).optional(),
    state: z.enum(['enabled', 'paused']).optional(),
    config: partialConfig.optional(),
  }),
  output: automationSchema,
  errors: [badInput, unknownField, notFound('automation'), { status: 409, code: 'invalid_state', when: 'pausing a draft' }],
  example: { automation_id: '0f8fad5b-d9cb-469f-a165-70867728950e', state: 'paused' },
  handler(input, ctx) {
    const a = requireAutomation(ctx, input.automation_id);
    if (input.name === undefined && input.description === undefined && input.state === undefined && input.config === undefined) {
      throw new ValidationError('Send at least one of `name`, `description`, `state`, `config`.');
    }
    if (input.state === 'paused' && a.state === 'draft') throw new ConflictError('invalid_state', 'A draft is not running: enable it first, or leave it as a draft.', 'state');
    const config = input.config ? checkConfig(ctx, parseConfig({ ...a.config, ...input.config })) : a.config;
    const next: AutomationRow = { ...a, name: input.name ?? a.name, description: input.description ?? a.description, state: input.state ?? a.state, config, updated_at: ctx.now() };
    ctx.services.atomic(() => {
      ctx.services.automations.update(next);
      engine(ctx).sync(next);
    });
    return automationOut(next, ctx, true);
  },
});

export const del = defineOperation({
  operationId: 'automations.delete',
  tag: 'automations',
  summary: 'Delete an automation and its run history',
  description: 'Removes the automation, its schedule, its queued runs and every run, output and approval it had.',
  method: 'DELETE',
  path: `${P}/automations/{automation_id}`,
  scopes: ['automations:write'],
  risk: 'write',
  sensitive: false,
  projectScoped: true,
  input: z.strictObject({ project_id: projectId, automation_id: automationId }),
  output: z.object({ id: z.string(), deleted: z.literal(true) }),
  errors: [notFound('automation')],
  handler(input, ctx) {
    const a = requireAutomation(ctx, input.automation_id);
    ctx.services.atomic(() => {
      for (const r of ctx.services.automations.runs(a.project_id, a.id, null, 100_000, 0).rows) ctx.services.scheduler.cancel('automation.run', r.id);
      engine(ctx).remove(a);
      ctx.services.automations.delete(a.project_id, a.id);
    });
    return { id: a.id, deleted: true as const };
  },
});

// ---------- skills ----------
const skillName = z
  .string()
  .max(64)
  .regex(/^[a-z0-9]+(-[a-z0-9]+)*$/, 'lowercase kebab-case (a-z, 0-9, single dashes), at most 64 characters');
const skillOut = (s: { id: string; name: string; description: string; content: string; created_at: number; updated_at: number }) => ({
  id: s.id,
  name: s.name,
  description: s.description,
  content: s.content,
  created_at: toIso(s.created_at)!,
  updated_at: toIso(s.updated_at)!,
});
const skillId = z.string().min(1).max(100).describe('Skill id (or its name).');
const findSkill = (ctx: HandlerContext, id: string) => {
  const s = ctx.services.automations.skill(ctx.project!.id, id) ?? ctx.services.automations.skillByName(ctx.project!.id, id);
  if (!s) throw new NotFoundError('Automation skill', 'skill_id');
  return s;
};

export const listSkills = defineOperation({
  operationId: 'automations.listSkills',
  tag: 'automations',
  summary: 'List project automation skills',
  description: 'Skills agent-task steps can name: instructions (markdown) given to the in-project agent for that step.',
  method: 'GET',
  path: `${P}/automation-skills`,
  scopes: ['automations:read'],
  risk: 'read',
  sensitive: false,
  projectScoped: true,
  input: z.strictObject({ project_id: projectId }),
  output: z.object({ data: z.array(skillSchema) }),
  errors: [],
  handler(_input, ctx) {
    return { data: ctx.services.automations.skills(ctx.project!.id).map(skillOut) };
  },
});

export const upsertSkill = defineOperation({
  operationId: 'automations.upsertSkill',
  tag: 'automations',
  summary: 'Create or replace a project automation skill',
  description: 'Body: `name` (lowercase kebab-case, at most 64), `description` (at most 1,024 characters) and `content` (at most 12,000). A skill with the same name is replaced (200); a new one answers 201.',
  method: 'POST',
  path: `${P}/automation-skills`,
  scopes: ['automations:write'],
  risk: 'write',
  sensitive: false,
  projectScoped: true,
  successStatus: 201,
  input: z.strictObject({ project_id: projectId, name: skillName, description: z.string().trim().min(1).max(1024), content: z.string().min(1).max(12_000) }),
  output: skillSchema,
  errors: [badInput, unknownField],
  example: { name: 'triage-checklist', description: 'How we triage', content: '1. Check the release...' },
  handler(input, ctx) {
    const now = ctx.now();
    const r = ctx.services.automations.upsertSkill({ id: randomUUID(), project_id: ctx.project!.id, name: input.name, description: input.description, content: input.content, created_at: now, updated_at: now });
    ctx.response.status = r.created ? 201 : 200;
    return skillOut(r.skill);
  },
});

export const getSkill = defineOperation({
  operationId: 'automations.getSkill',
  tag: 'automations',
  summary: 'Get one project automation skill',
  description: 'One skill by id (or name), with its content.',
  method: 'GET',
  path: `${P}/automation-skills/{skill_id}`,
  scopes: ['automations:read'],
  risk: 'read',
  sensitive: false,
  projectScoped: true,
  input: z.strictObject({ project_id: projectId, skill_id: skillId }),
  output: skillSchema,
  errors: [notFound('skill')],
  handler(input, ctx) {
    return skillOut(findSkill(ctx, input.skill_id));
  },
});

export const deleteSkill = defineOperation({
  operationId: 'automations.deleteSkill',
  tag: 'automations',
  summary: 'Delete a project automation skill',
  description: 'Removes the skill; agent-task steps naming it run without it.',
  method: 'DELETE',
  path: `${P}/automation-skills/{skill_id}`,
  scopes: ['automations:write'],
  risk: 'write',
  sensitive: false,
  projectScoped: true,
  input: z.strictObject({ project_id: projectId, skill_id: skillId }),
  output: z.object({ id: z.string(), deleted: z.literal(true) }),
  errors: [notFound('skill')],
  handler(input, ctx) {
    const s = findSkill(ctx, input.skill_id);
    ctx.services.automations.deleteSkill(ctx.project!.id, s.id);
    return { id: s.id, deleted: true as const };
  },
});

// ---------- runs ----------
export const triggerRun = defineOperation({
  operationId: 'automations.triggerRun',
  tag: 'automations',
  summary: 'Start a manual run of an automation',
  description:
    'Queues a run now (any state but the automation must exist) with optional `input`, which scripts read as `input.input`. The run is executed by the in-process engine (DB-backed queue) within the per-project concurrency limit; follow it with automations.getRun. Manual runs are not automatic: the agent budget stage does not block their agent tasks.',
  method: 'POST',
  path: `${P}/automations/{automation_id}/runs`,
  scopes: ['automations:write'],
  risk: 'write',
  sensitive: false,
  projectScoped: true,
  successStatus: 202,
  input: z.strictObject({ project_id: projectId, automation_id: automationId, input: z.unknown().optional().describe('Any JSON value handed to the run.') }),
  output: runSchema,
  errors: [unknownField, notFound('automation')],
  example: { automation_id: '0f8fad5b-d9cb-469f-a165-70867728950e', input: { error_group_id: '...' } },
  handler(input, ctx) {
    const a = requireAutomation(ctx, input.automation_id);
    return runOut(engine(ctx).triggerManual(a, input.input, ctx.now()), ctx);
  },
});

export const listRuns = defineOperation({
  operationId: 'automations.listRuns',
  tag: 'automations',
  summary: 'List the runs of an automation',
  description: 'Runs newest first: trigger (manual, schedule, event), status, error and times. Filter with `status`.',
  method: 'GET',
  path: `${P}/automations/{automation_id}/runs`,
  scopes: ['automations:read'],
  risk: 'read',
  sensitive: false,
  projectScoped: true,
  input: z.strictObject({ project_id: projectId, automation_id: automationId, status: z.enum(['queued', 'running', 'completed', 'failed', 'cancelled']).optional(), ...offsetPagination(50, 200) }),
  output: page(runSummary),
  errors: [notFound('automation'), { status: 400, code: 'invalid_parameter', when: 'bad status, limit or offset' }],
  display: { columns: ['id', 'trigger', 'status', 'created_at', 'ended_at'] },
  handler(input, ctx) {
    const a = requireAutomation(ctx, input.automation_id);
    const r = ctx.services.automations.runs(a.project_id, a.id, input.status ?? null, input.limit, input.offset);
    return { data: r.rows.map(runSummaryOut), total: r.total, limit: input.limit, offset: input.offset };
  },
});

export const getRun = defineOperation({
  operationId: 'automations.getRun',
  tag: 'automations',
  summary: 'Inspect one automation run: steps, logs, calls, outputs, timings',
  description: 'One run with its input, attempts, every step (status, logs, API calls with status and time, result, error, timings) and its outputs.',
  method: 'GET',
  path: `${P}/automation-runs/{run_id}`,
  scopes: ['automations:read'],
  risk: 'read',
  sensitive: false,
  projectScoped: true,
  input: z.strictObject({ project_id: projectId, run_id: runId }),
  output: runSchema,
  errors: [notFound('run')],
  handler(input, ctx) {
    return runOut(requireRun(ctx, input.run_id), ctx);
  },
});

export const cancelRun = defineOperation({
  operationId: 'automations.cancelRun',
  tag: 'automations',
  summary: 'Cancel a queued or running automation run',
  description: 'Marks the run cancelled, removes it from the queue and stops a running step: its pending and later API calls are refused and its results are discarded.',
  method: 'POST',
  path: `${P}/automation-runs/{run_id}/cancel`,
  scopes: ['automations:write'],
  risk: 'write',
  sensitive: false,
  projectScoped: true,
  input: z.strictObject({ project_id: projectId, run_id: runId }),
  output: runSchema,
  errors: [notFound('run'), { status: 409, code: 'run_finished', when: 'the run already completed, failed or was cancelled' }],
  handler(input, ctx) {
    const r = requireRun(ctx, input.run_id);
    if (!engine(ctx).cancel(r.project_id, r.id, ctx.now())) throw new ConflictError('run_finished', `The run is already ${r.status}; only queued or running runs can be cancelled.`);
    return runOut(requireRun(ctx, input.run_id), ctx);
  },
});

// ---------- outputs and approvals ----------
export const listOutputs = defineOperation({
  operationId: 'automations.listOutputs',
  tag: 'automations',
  summary: 'List the outputs of a run (summaries, verdicts, patches, messages, held writes)',
  description: 'Outputs in the order produced, each with its content, content hash (what approve must name), whether it needs approval and its status.',
  method: 'GET',
  path: `${P}/automation-runs/{run_id}/outputs`,
  scopes: ['automations:read'],
  risk: 'read',
  sensitive: false,
  projectScoped: true,
  input: z.strictObject({ project_id: projectId, run_id: runId }),
  output: z.object({ data: z.array(outputSchema) }),
  errors: [notFound('run')],
  handler(input, ctx) {
    const r = requireRun(ctx, input.run_id);
    return { data: ctx.services.automations.outputs(r.project_id, r.id).map(outputOut) };
  },
});

export const listApprovals = defineOperation({
  operationId: 'automations.listApprovals',
  tag: 'automations',
  summary: 'List approval decisions on a run\'s outputs',
  description: 'Who approved or rejected which output (by id and content hash), when, with their note.',
  method: 'GET',
  path: `${P}/automation-runs/{run_id}/approvals`,
  scopes: ['automations:read'],
  risk: 'read',
  sensitive: false,
  projectScoped: true,
  input: z.strictObject({ project_id: projectId, run_id: runId }),
  output: z.object({ data: z.array(approvalSchema) }),
  errors: [notFound('run')],
  handler(input, ctx) {
    const r = requireRun(ctx, input.run_id);
    return {
      data: ctx.services.automations.approvals(r.project_id, r.id).map((a) => ({
        id: a.id,
        run_id: a.run_id,
        output_id: a.output_id,
        content_hash: a.content_hash,
        decision: a.decision,
        decided_by: a.decided_by,
        note: a.note,
        created_at: toIso(a.created_at)!,
      })),
    };
  },
});

const decisionInput = z.strictObject({
  project_id: projectId,
  run_id: runId,
  output_id: uuid('output id').describe('The output decided on (listOutputs).'),
  content_hash: z.string().min(1).max(100).describe('The output\'s content_hash as you reviewed it; a changed output needs a new decision.'),
  note: z.string().max(2000).optional(),
});
const decisionErrors = [
  unknownField,
  badInput,
  notFound('run or output'),
  { status: 403, code: 'self_approval', when: 'an automation run tries to decide on an automation output' },
  { status: 409, code: 'content_changed', when: 'content_hash is not the output\'s current hash' },
  { status: 409, code: 'not_pending', when: 'the output does not wait for approval' },
];

function decide(input: z.output<typeof decisionInput>, ctx: HandlerContext, decision: 'approved' | 'rejected') {
  if (isAutomationPrincipal(ctx.principal)) {
    throw new ForbiddenError('self_approval', 'An automation can never approve or reject automation outputs: a person (or another credential) must decide.');
  }
  const r = requireRun(ctx, input.run_id);
  const o = ctx.services.automations.output(r.project_id, input.output_id);
  if (!o || o.run_id !== r.id) throw new NotFoundError('Automation output', 'output_id');
  if (o.content_hash !== input.content_hash || contentHash(o.content) !== o.content_hash) {
    throw new ConflictError('content_changed', `The output's content is ${o.content_hash}, not ${input.content_hash}: review it again and decide on the current hash.`, 'content_hash');
  }
  if (o.status !== 'pending_approval') throw new ConflictError('not_pending', `The output is \`${o.status}\`, not waiting for approval.`, 'output_id');
  const by = ctx.principal.kind === 'user' ? `user:${ctx.principal.email}` : `key:${ctx.principal.keyId}`;
  const now = ctx.now();
  ctx.services.atomic(() => {
    ctx.services.automations.addApproval({ id: randomUUID(), project_id: r.project_id, run_id: r.id, output_id: o.id, content_hash: o.content_hash, decision, decided_by: by, note: input.note ?? null, created_at: now });
    ctx.services.automations.setOutputStatus(r.project_id, o.id, decision, { decided_by: by, decided_at: toIso(now) }, now);
  });
  return { run: r, output: ctx.services.automations.output(r.project_id, o.id)!, by };
}

export const approve = defineOperation({
  operationId: 'automations.approve',
  tag: 'automations',
  summary: 'Approve one risky output of a run (by id and content hash)',
  description:
    'Body: `output_id`, `content_hash` (as listOutputs shows it; a changed output needs a new approval) and optional `note`. Records who approved, then applies the output: a held write is called with the run\'s capability (status `applied` or `failed`), a message is sent to its channel (`delivered` or `undelivered`), a patch becomes `approved` and can be turned into a draft PR with automations.createPr. An automation run\'s own credential is refused.',
  method: 'POST',
  path: `${P}/automation-runs/{run_id}/approve`,
  scopes: ['automations:write'],
  risk: 'write',
  sensitive: false,
  projectScoped: true,
  input: decisionInput,
  output: outputSchema,
  errors: decisionErrors,
  example: { run_id: '0f8fad5b-d9cb-469f-a165-70867728950e', output_id: '1f8fad5b-d9cb-469f-a165-70867728950e', content_hash: 'sha256:…' },
  async handler(input, ctx) {
    const { run, output } = decide(input, ctx, 'approved');
    const applied = await engine(ctx).apply(run.project_id, output, ctx.now());
    if (applied.status !== 'approved') ctx.services.automations.setOutputStatus(run.project_id, output.id, applied.status, { ...output.detail, ...applied.detail }, ctx.now());
    return outputOut(ctx.services.automations.output(run.project_id, output.id)!);
  },
});

export const reject = defineOperation({
  operationId: 'automations.reject',
  tag: 'automations',
  summary: 'Reject one risky output of a run',
  description: 'Body: `output_id`, `content_hash` and optional `note`. Records who rejected it; the output is never applied, sent or turned into a PR.',
  method: 'POST',
  path: `${P}/automation-runs/{run_id}/reject`,
  scopes: ['automations:write'],
  risk: 'write',
  sensitive: false,
  projectScoped: true,
  input: decisionInput,
  output: outputSchema,
  errors: decisionErrors,
  handler(input, ctx) {
    return outputOut(decide(input, ctx, 'rejected').output);
  },
});

export const createPr = defineOperation({
  operationId: 'automations.createPr',
  tag: 'automations',
  summary: 'Open a draft pull request from an approved patch output',
  description:
    'Body: `output_id` of an approved `patch` output and optional `branch` (default `sightline/automation-<run id prefix>`). Uses the automation\'s `repository`: `local` makes a branch and a commit in a git repository on disk (`git apply`), `github` creates the branch, commit and a draft PR through the GitHub REST API with SIGHTLINE_GITHUB_TOKEN. Each attempt is counted in ai.fixStats / ai.fixTimeline (source `automation`, requester, status `opened` or `failed`).',
  method: 'POST',
  path: `${P}/automation-runs/{run_id}/create-pr`,
  scopes: ['automations:write'],
  risk: 'write',
  sensitive: false,
  projectScoped: true,
  successStatus: 201,
  input: z.strictObject({ project_id: projectId, run_id: runId, output_id: uuid('output id'), branch: z.string().regex(/^[\w./-]{1,200}$/, 'a git branch name').optional() }),
  output: z.object({ output_id: z.string(), provider: z.enum(['local', 'github']), branch: z.string(), commit: z.string().nullable(), url: z.string().nullable(), number: z.number().int().nullable() }),
  errors: [
    unknownField,
    badInput,
    notFound('run or output'),
    { status: 409, code: 'not_approved', when: 'the output is not an approved patch' },
    { status: 422, code: 'no_repository', when: 'the automation has no repository, or GitHub has no token configured' },
    { status: 422, code: 'pr_failed', when: 'the patch does not apply or the git provider refused' },
  ],
  async handler(input, ctx) {
    const run = requireRun(ctx, input.run_id);
    const o = ctx.services.automations.output(run.project_id, input.output_id);
    if (!o || o.run_id !== run.id) throw new NotFoundError('Automation output', 'output_id');
    if (o.kind !== 'patch' || o.status !== 'approved') throw new ConflictError('not_approved', `Only an approved patch output can become a pull request; this one is a \`${o.kind}\` output, \`${o.status}\`.`, 'output_id');
    const a = ctx.services.automations.get(run.project_id, run.automation_id);
    const repo = a?.config.repository;
    if (!repo) throw new UnprocessableError('no_repository', 'The automation has no `repository` in its config: set one with automations.update.', 'output_id');
    let provider: GitProvider;
    if (repo.provider === 'local') provider = localGitProvider(repo.path);
    else {
      const token = ctx.services.config.automations.githubToken;
      if (!token) throw new UnprocessableError('no_repository', 'GitHub pull requests need SIGHTLINE_GITHUB_TOKEN on the server.', 'output_id');
      provider = githubProvider(repo.repo, token);
    }
    const c = o.content as { diff: string; title: string; description: string };
    const requester = ctx.principal.kind === 'user' ? ctx.principal.email : ctx.principal.keyId;
    const dispatchedAt = ctx.now();
    // ai.fixStats / ai.fixTimeline count these: source `automation`, who asked, opened or failed, and
    // whether the git provider took it (`webhook_status`: delivered or failed).
    const record = (status: 'opened' | 'failed') =>
      ctx.services.ai.recordFixDispatch(run.project_id, { dispatch_id: o.id, source: 'automation', requester, status, webhook_status: status === 'opened' ? 'delivered' : 'failed', dispatched_ms: dispatchedAt, completed_ms: ctx.now() });
    try {
      const pr = await provider.createDraftPr({ branch: input.branch ?? `sightline/automation-${run.id.slice(0, 8)}`, title: c.title, body: `${c.description}\n\nProposed by Sightline automation run ${run.id}.`, diff: c.diff, base: repo.base });
      ctx.services.atomic(() => {
        record('opened');
        ctx.services.automations.setOutputStatus(run.project_id, o.id, 'pr_created', { ...o.detail, pr }, ctx.now());
      });
      return { output_id: o.id, ...pr };
    } catch (e) {
      record('failed');
      if (e instanceof GitProviderError) throw new UnprocessableError('pr_failed', e.message, 'output_id');
      throw e;
    }
  },
});

// ---------- capabilities ----------
export const listCapabilities = defineOperation({
  operationId: 'automations.listCapabilities',
  tag: 'automations',
  summary: 'List capability manifests (what automations may call)',
  description: 'Built-in manifests (triage, digest, error-cleanup, read-only) and the project\'s own: the operationIds a run may call, their risk, and whether risky outputs (writes, messages) wait for approval. Patches always wait for approval; hidden operations are never callable.',
  method: 'GET',
  path: `${P}/automation-capabilities`,
  scopes: ['automations:read'],
  risk: 'read',
  sensitive: false,
  projectScoped: true,
  input: z.strictObject({ project_id: projectId }),
  output: z.object({ data: z.array(capabilitySchema) }),
  errors: [],
  handler(_input, ctx) {
    return { data: engine(ctx).capabilities(ctx.project!.id) };
  },
});

export const defineCapability = defineOperation({
  operationId: 'automations.defineCapability',
  tag: 'automations',
  summary: 'Define (or replace) a project capability manifest',
  description:
    'Body: `name` (kebab-case), `description`, `operations` (operationIds a run may call; hidden operations are refused), `approval` (`required`, default: writes and messages wait for approval; `not_required`: they are applied directly). `risk` is derived (`write` if any operation writes). A manifest with a built-in\'s name overrides it in this project.',
  method: 'POST',
  path: `${P}/automation-capabilities`,
  scopes: ['automations:write'],
  risk: 'write',
  sensitive: false,
  projectScoped: true,
  successStatus: 201,
  input: z.strictObject({
    project_id: projectId,
    name: skillName,
    description: z.string().trim().min(1).max(1024),
    operations: z.array(z.string().max(100)).min(1).max(100),
    approval: z.enum(['required', 'not_required']).default('required'),
  }),
  output: capabilitySchema,
  errors: [badInput, unknownField, { status: 400, code: 'unknown_operation', when: 'an operationId that does not exist or is hidden' }],
  example: { name: 'fixer', description: 'Read errors and propose patches', operations: ['errors.get', 'errors.listSuspectCommits'] },
  handler(input, ctx) {
    const ops = [...new Set(input.operations)];
    let risk: 'read' | 'write' = 'read';
    for (const id of ops) {
      const op = engine(ctx).operation(id);
      if (!op) throw new ValidationError(`\`operations\`: there is no operation \`${id}\` automations may call.`, 'operations', 'unknown_operation');
      if (op.sensitive) throw new ValidationError(`\`operations\`: ${id} is hidden (credentials or secrets); automations can never call it.`, 'operations', 'unknown_operation');
      if (op.risk === 'write') risk = 'write';
    }
    const now = ctx.now();
    const c = ctx.services.automations.upsertCapability({ id: randomUUID(), project_id: ctx.project!.id, name: input.name, description: input.description, operations: ops, risk, approval: input.approval, created_at: now, updated_at: now });
    return { name: c.name, description: c.description, operations: c.operations, risk: c.risk, approval: c.approval, builtin: false };
  },
});

