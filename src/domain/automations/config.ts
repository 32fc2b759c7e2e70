/**
 * Why this file: the shape of an automation's config (trigger, conditions, steps, capability,
 * repository, limits, params) as one zod schema shared by the operations, the templates and the run
 * engine, plus the pure rules on it (which events match, when a schedule fires next).
 */
import { z } from 'zod';
import { nextRun, ScheduleError, validateSchedule } from '../monitors/cron.js';

/** Domain events an automation can be triggered by (src/core/events.ts). */
export const AUTOMATION_EVENTS = ['error.group.created', 'error.group.reopened', 'error.spike', 'release.regressed', 'feedback.received', 'monitor.down'] as const;
export type AutomationEvent = (typeof AUTOMATION_EVENTS)[number];
export const AUTOMATION_STATES = ['draft', 'enabled', 'paused'] as const;

export const triggerSchema = z
  .discriminatedUnion('type', [
    z.strictObject({
      type: z.literal('schedule'),
      cron: z.string().trim().min(1).max(200).describe('5-field crontab (minute hour day-of-month month day-of-week) or @daily-style alias.'),
      timezone: z.string().min(1).max(64).default('UTC').describe('IANA time zone the crontab is read in (default UTC).'),
    }),
    z.strictObject({ type: z.literal('event'), event: z.enum(AUTOMATION_EVENTS).describe('Domain event that starts a run, once per event.') }),
    z.strictObject({ type: z.literal('manual') }),
  ])
  .describe('What starts a run: `schedule` (cron + time zone), `event` (one run per domain event) or `manual` (triggerRun only).');

export const conditionsSchema = z
  .strictObject({
    service: z.string().max(200).optional().describe('Only events of this service.'),
    environment: z.string().max(200).optional().describe('Only events of this environment.'),
    level: z.string().max(32).optional().describe('Only error groups of this level (error, fatal, warning...).'),
    query: z.string().max(200).optional().describe('Case-insensitive substring the event title/message must contain.'),
  })
  .describe('Filters on the triggering event; every given field must match.');

export const stepSchema = z.discriminatedUnion('type', [
  z.strictObject({
    type: z.literal('script'),
    name: z.string().trim().min(1).max(100),
    code: z
      .string()
      .min(1)
      .max(20_000)
      .describe('Code Mode script (body of an async function, same `api.*` as MCP execute). Reads `input` ({trigger, event, params, previous}); may return {summary, verdict, patch: {diff, title}, message: {channel_id, title, text}}.'),
  }),
  z.strictObject({
    type: z.literal('agent'),
    name: z.string().trim().min(1).max(100),
    prompt: z.string().min(1).max(8000).describe('Task for the in-project agent; its answer becomes a summary output.'),
    skills: z.array(z.string()).max(10).default([]).describe('Names of project automation skills given to the agent as instructions.'),
  }),
]);

export const repositorySchema = z
  .discriminatedUnion('provider', [
    z.strictObject({ provider: z.literal('local'), path: z.string().min(1).max(1000).describe('Path of a git repository on the server.'), base: z.string().max(200).optional() }),
    z.strictObject({ provider: z.literal('github'), repo: z.string().regex(/^[\w.-]+\/[\w.-]+$/, 'owner/name').describe('GitHub owner/name.'), base: z.string().max(200).optional() }),
  ])
  .describe('Where createPr opens draft pull requests: a local git repository or GitHub (token: SIGHTLINE_GITHUB_TOKEN).');

export const limitsSchema = z.strictObject({
  timeout_ms: z.number().int().min(100).max(300_000).default(30_000).describe('Wall-clock limit of the whole run, shared by its script steps (default 30000).'),
  max_calls: z.number().int().min(0).max(1000).default(100).describe('API calls the whole run may make (default 100).'),
});

export const configFields = {
  trigger: triggerSchema,
  conditions: conditionsSchema.default({}),
  steps: z.array(stepSchema).min(1).max(10).describe('Steps run in order; a failing step fails the run.'),
  capability: z.string().min(1).max(64).describe('Name of the capability manifest bounding what the run may call (listCapabilities).'),
  repository: repositorySchema.nullable().default(null),
  limits: limitsSchema.default({ timeout_ms: 30_000, max_calls: 100 }),
  params: z.record(z.string(), z.unknown()).default({}).describe('Free parameters handed to scripts as `input.params` (e.g. channel_id).'),
};
export const configSchema = z.strictObject(configFields);
export type AutomationConfig = z.output<typeof configSchema>;
export type Trigger = AutomationConfig['trigger'];
export type Step = AutomationConfig['steps'][number];

export class ConfigError extends Error {
  constructor(
    message: string,
    readonly param: string,
  ) {
    super(message);
  }
}

/** Rules zod cannot say: a valid crontab and time zone. */
export function checkTrigger(t: Trigger): void {
  if (t.type !== 'schedule') return;
  try {
    validateSchedule({ type: 'crontab', value: t.cron, timezone: t.timezone });
  } catch (e) {
    if (e instanceof ScheduleError) throw new ConfigError(`\`trigger.cron\`: ${e.message}.`, 'trigger');
    throw e;
  }
}

/** Next fire time of a schedule trigger strictly after `after`. */
export function nextFire(t: Extract<Trigger, { type: 'schedule' }>, after: number): number {
  return nextRun({ type: 'crontab', value: t.cron, timezone: t.timezone }, after);
}

/** The event as scripts see it (`input.event`), snake_case, plus a stable id for once-per-event runs. */
export function eventPayload(e: { type: string } & Record<string, unknown>): { key: string; event: Record<string, unknown> } {
  const out: Record<string, unknown> = {};
  for (const [k, v] of Object.entries(e)) {
    if (k === 'projectId') continue;
    out[k.replace(/[A-Z]/g, (c) => `_${c.toLowerCase()}`)] = v;
  }
  const id = e.groupId ?? e.releaseId ?? e.feedbackId ?? e.monitorId ?? '';
  // A group can reopen or spike again later: the time keeps those distinct, while a replay of the same event is not.
  return { key: `${e.type}:${String(id)}:${String(e.at)}`, event: out };
}

/** Whether an event passes the automation's conditions. */
export function matches(cond: AutomationConfig['conditions'], event: Record<string, unknown>): boolean {
  const str = (k: string) => (typeof event[k] === 'string' ? (event[k] as string) : undefined);
  if (cond.service !== undefined && str('service') !== undefined && str('service') !== cond.service) return false;
  if (cond.environment !== undefined && str('environment') !== undefined && str('environment') !== cond.environment) return false;
  if (cond.level !== undefined && str('level') !== undefined && str('level') !== cond.level) return false;
  if (cond.query) {
    const text = [str('title'), str('message'), str('monitor_name'), str('version')].filter(Boolean).join(' ').toLowerCase();
    if (!text.includes(cond.query.toLowerCase())) return false;
  }
  return true;
}
