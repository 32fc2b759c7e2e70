/**
 * The in-project agent's state (spec, "In-project agent" and its Endpoints; operations.md
 * `agent.*`): settings, memory, skills, conversations, signals, usage; plus outbound channels and
 * their delivery log (operations beyond operations.md, owner-level `project:write`), which alerts
 * and agent replies are posted to. The state lives in `services.agent` (src/core/agent-state.ts).
 */
import { z } from 'zod';
import { defineOperation, type HandlerContext } from './define.js';
import { projectId, toIso, uuid } from './shared.js';
import { InsufficientScopeError, NotFoundError, ConflictError } from '../src/core/errors.js';
import { principalHolds } from '../src/core/principal.js';
import { SIGNATURE_HEADER } from '../src/core/webhooks.js';
import { AUTO_FIX, MAX_DAILY_ALERT_CAP, PR_REVIEW, PROACTIVE_ALERTS, REPLY_STYLE, type AgentSettingsValues } from '../src/domain/agent/settings.js';
import { MAX_MEMORY_CONTENT, MEMORY_CAP, MEMORY_KINDS } from '../src/domain/agent/memory-rules.js';
import { PLATFORM_SKILLS, PLATFORM_SKILL_NAMES, SKILL_LIMITS, SKILL_NAME_RE } from '../src/domain/agent/skills.js';
import { STAGE_THRESHOLDS } from '../src/domain/agent/budget.js';
import type { ChannelRow, MemoryRow, SkillRow } from '../src/storage/agent-repo.js';

const LIST_LIMIT = 100;
const P = '/v1/projects/{project_id}/agent';
const project = (ctx: HandlerContext) => ({ id: ctx.project!.id, orgId: ctx.project!.orgId });

const settingsSchema = z.object({
  proactive_alerts: z.enum(PROACTIVE_ALERTS).describe('`all`, `important` (sev1 and sev2), `sev1_only` or `off`.'),
  pr_review: z.enum(PR_REVIEW),
  auto_fix: z.enum(AUTO_FIX).describe('`project_policy`: fixes allowed by the project policy (never while the budget stage is `conserve` or later); `off`.'),
  reply_style: z.enum(REPLY_STYLE),
  daily_alert_cap: z.number().int().describe(`Proactive alerts per UTC day, 0 to ${MAX_DAILY_ALERT_CAP}.`),
  alert_channel_id: z.string().nullable().describe('Channel alerts go to (agent.listChannels); null: the first channel.'),
});

const memorySchema = z.object({
  id: z.string(),
  kind: z.enum(MEMORY_KINDS),
  content: z.string(),
  scope: z.enum(['project', 'organization']),
  replaces_id: z.string().nullable(),
  created_at: z.string(),
});
const memoryOut = (m: MemoryRow): z.input<typeof memorySchema> => ({
  id: m.id,
  kind: m.kind as (typeof MEMORY_KINDS)[number],
  content: m.content,
  scope: m.scope,
  replaces_id: m.replaces_id,
  created_at: toIso(m.created_at)!,
});

const skillSchema = z.object({
  id: z.string(),
  name: z.string(),
  description: z.string(),
  content: z.string(),
  scope: z.enum(['project', 'organization']),
  overridden: z.boolean().describe('True for an organization skill a project skill of the same name overrides here.'),
  created_at: z.string(),
  updated_at: z.string(),
});
const skillOut = (s: SkillRow, overridden = false): z.input<typeof skillSchema> => ({
  id: s.id,
  name: s.name,
  description: s.description,
  content: s.content,
  scope: s.scope,
  overridden,
  created_at: toIso(s.created_at)!,
  updated_at: toIso(s.updated_at)!,
});

const channelSchema = z.object({
  id: z.string(),
  name: z.string(),
  kind: z.enum(['slack', 'webhook']),
  url_host: z.string().describe('Host of the target URL (the full URL is not shown again: Slack webhook URLs are secrets).'),
  is_alert_channel: z.boolean(),
  created_at: z.string(),
});
const channelOut = (c: ChannelRow, alertId: string | null): z.input<typeof channelSchema> => ({
  id: c.id,
  name: c.name,
  kind: c.kind,
  url_host: new URL(c.url).host,
  is_alert_channel: c.id === alertId,
  created_at: toIso(c.created_at)!,
});

const noInput = z.strictObject({ project_id: projectId });

export const getSettings = defineOperation({
  operationId: 'agent.getSettings',
  tag: 'agent',
  summary: 'Get the in-project agent settings',
  description: 'The agent settings: `proactive_alerts`, `pr_review`, `auto_fix`, `reply_style`, `daily_alert_cap` (alerts per UTC day) and `alert_channel_id`.',
  method: 'GET',
  path: `${P}/settings`,
  scopes: ['automations:read'],
  risk: 'read',
  sensitive: false,
  projectScoped: true,
  input: noInput,
  output: z.object({ settings: settingsSchema }),
  errors: [],
  handler(_input, ctx) {
    return { settings: ctx.services.agent.settings(ctx.project!.id) };
  },
});

export const updateSettings = defineOperation({
  operationId: 'agent.updateSettings',
  tag: 'agent',
  summary: 'Change agent settings (alerts, PR review, auto-fix, reply style, alert cap)',
  description: `Send only the fields to change. An unknown field is 400; a request with no valid value (nothing sent, or a value outside the allowed ones) is 422 and changes nothing. \`daily_alert_cap\` is 0 to ${MAX_DAILY_ALERT_CAP}; \`alert_channel_id\` is a channel of this project or null (the first channel).`,
  method: 'PATCH',
  path: `${P}/settings`,
  scopes: ['automations:write'],
  risk: 'write',
  sensitive: false,
  projectScoped: true,
  input: z.strictObject({
    project_id: projectId,
    proactive_alerts: z.unknown().optional().describe('`all`, `important`, `sev1_only` or `off`.'),
    pr_review: z.unknown().optional().describe('`comment_on_risk` or `off`.'),
    auto_fix: z.unknown().optional().describe('`project_policy` or `off`.'),
    reply_style: z.unknown().optional().describe('`concise` or `detailed`.'),
    daily_alert_cap: z.unknown().optional().describe(`Integer 0 to ${MAX_DAILY_ALERT_CAP}.`),
    alert_channel_id: z.unknown().optional().describe('A channel id of this project, or null for the first channel.'),
  }),
  output: z.object({ settings: settingsSchema }),
  errors: [
    { status: 400, code: 'unknown_field', when: 'a field that is not a setting' },
    { status: 422, code: 'no_valid_value', when: 'no field sent, or a value outside the allowed ones' },
  ],
  example: { proactive_alerts: 'sev1_only', daily_alert_cap: 5 },
  handler(input, ctx) {
    const { project_id: _p, ...patch } = input;
    return { settings: ctx.services.atomic(() => ctx.services.agent.updateSettings(ctx.project!.id, patch, ctx.now())) };
  },
});

export const listMemory = defineOperation({
  operationId: 'agent.listMemory',
  tag: 'agent',
  summary: 'List what the agent remembers (rules, preferences, facts, incidents)',
  description: 'Active memory entries the agent uses: this project\'s and its organization\'s, oldest first. Retired entries are not listed and never used again.',
  method: 'GET',
  path: `${P}/memory`,
  scopes: ['automations:read'],
  risk: 'read',
  sensitive: false,
  projectScoped: true,
  input: noInput,
  output: z.object({ data: z.array(memorySchema), caps: z.object({ project: z.number().int(), organization: z.number().int() }) }),
  errors: [],
  handler(_input, ctx) {
    const p = project(ctx);
    return { data: ctx.services.agent.repo.visibleMemory(p.id, p.orgId).map(memoryOut), caps: { ...MEMORY_CAP } };
  },
});

export const addMemory = defineOperation({
  operationId: 'agent.addMemory',
  tag: 'agent',
  summary: 'Teach the agent a rule, preference, fact or incident',
  description: `Adds a memory entry (\`content\` at most ${MAX_MEMORY_CONTENT} characters; \`scope\` \`project\` (default, ${MEMORY_CAP.project} active entries) or \`organization\` (${MEMORY_CAP.organization})); \`replaces_id\` retires the entry it replaces. A \`rule\` that names a setting changes it too and \`settings_applied\` shows how ("only page me for sev1" → \`proactive_alerts: sev1_only\`; phrasings in the README). Refused: a copy of an active entry or a full scope (409); content too long, holding a secret (API keys, private keys, JWTs, passwords in URLs, random-looking tokens) or trying to change safety rules — approvals, remediation, budget, scopes (422).`,
  method: 'POST',
  path: `${P}/memory`,
  scopes: ['automations:write'],
  risk: 'write',
  sensitive: false,
  projectScoped: true,
  successStatus: 201,
  input: z.strictObject({
    project_id: projectId,
    kind: z.enum(MEMORY_KINDS),
    content: z.string().trim().min(1).describe(`What to remember, at most ${MAX_MEMORY_CONTENT} characters.`),
    scope: z.enum(['project', 'organization']).default('project'),
    replaces_id: z.string().max(64).optional().describe('An active entry this one replaces (it is retired).'),
  }),
  output: memorySchema.extend({ settings_applied: settingsSchema.partial().nullable() }),
  errors: [
    { status: 400, code: 'invalid_parameter', when: 'missing or unknown `kind`, empty content, unknown scope' },
    { status: 404, code: 'not_found', when: '`replaces_id` names no active entry of this project or organization' },
    { status: 409, code: 'memory_scope_full', when: `the scope already holds its active entries (project ${MEMORY_CAP.project}, organization ${MEMORY_CAP.organization})` },
    { status: 409, code: 'memory_duplicate', when: 'an active entry already says the same' },
    { status: 422, code: 'memory_too_long', when: `content over ${MAX_MEMORY_CONTENT} characters` },
    { status: 422, code: 'memory_holds_secret', when: 'content holds an API key, private key, JWT, password in a URL or high-entropy token' },
    { status: 422, code: 'memory_changes_safety_rule', when: 'content tries to change approvals, remediation, budget or scopes' },
  ],
  example: { kind: 'rule', content: 'Only page me for sev1' },
  handler(input, ctx) {
    const r = ctx.services.atomic(() => ctx.services.agent.addMemory(project(ctx), input, ctx.now()));
    return { ...memoryOut(r.entry), settings_applied: r.settings_applied };
  },
});

export const retireMemory = defineOperation({
  operationId: 'agent.retireMemory',
  tag: 'agent',
  summary: 'Retire a memory entry',
  description: 'The entry leaves memory: the agent never uses it again (it is no longer listed or put in its instructions).',
  method: 'DELETE',
  path: `${P}/memory/{memory_id}`,
  scopes: ['automations:write'],
  risk: 'write',
  sensitive: true,
  projectScoped: true,
  input: z.strictObject({ project_id: projectId, memory_id: z.string().max(64) }),
  output: z.object({ id: z.string(), retired: z.literal(true) }),
  errors: [{ status: 404, code: 'not_found', when: 'no active entry with this id in this project or its organization' }],
  handler(input, ctx) {
    const e = ctx.services.atomic(() => ctx.services.agent.retireMemory(project(ctx), input.memory_id, ctx.now()));
    return { id: e.id, retired: true as const };
  },
});

export const listSkills = defineOperation({
  operationId: 'agent.listSkills',
  tag: 'agent',
  summary: 'List agent skills (project, organization and platform)',
  description: 'Project skills, organization skills (`overridden` when a project skill has the same name) and the names and descriptions of the platform skills that ship with Sightline.',
  method: 'GET',
  path: `${P}/skills`,
  scopes: ['automations:read'],
  risk: 'read',
  sensitive: false,
  projectScoped: true,
  input: noInput,
  output: z.object({ data: z.array(skillSchema), platform: z.array(z.object({ name: z.string(), description: z.string() })) }),
  errors: [],
  handler(_input, ctx) {
    const p = project(ctx);
    const rows = ctx.services.agent.repo.visibleSkills(p.id, p.orgId);
    const projectNames = new Set(rows.filter((r) => r.scope === 'project').map((r) => r.name));
    return {
      data: rows.map((r) => skillOut(r, r.scope === 'organization' && projectNames.has(r.name))),
      platform: PLATFORM_SKILLS.map((s) => ({ name: s.name, description: s.description })),
    };
  },
});

function requireOrgWrite(ctx: HandlerContext): void {
  if (!principalHolds(ctx.principal, ctx.project!.orgId, 'project:write'))
    throw new InsufficientScopeError(['automations:write', 'project:write'], 'insufficient_scope', 'Organization skills also need `project:write` (an owner or admin).');
}

export const upsertSkill = defineOperation({
  operationId: 'agent.upsertSkill',
  tag: 'agent',
  summary: 'Create or update an agent skill by name',
  description: `A skill is instructions the agent loads when a task matches its \`description\`. \`name\`: lowercase letters, digits and hyphens, at most ${SKILL_LIMITS.name}; \`description\` at most ${SKILL_LIMITS.description}; \`content\` at most ${SKILL_LIMITS.content}. The same name in the same scope updates the skill in place (200; created: 201). \`scope\` \`organization\` also needs \`project:write\`. A platform skill name is 409.`,
  method: 'POST',
  path: `${P}/skills`,
  scopes: ['automations:write'],
  risk: 'write',
  sensitive: true,
  projectScoped: true,
  successStatus: 201,
  input: z.strictObject({
    project_id: projectId,
    name: z.string().max(SKILL_LIMITS.name).regex(SKILL_NAME_RE, 'lowercase letters, digits and single hyphens'),
    description: z.string().trim().min(1).max(SKILL_LIMITS.description),
    content: z.string().trim().min(1).max(SKILL_LIMITS.content),
    scope: z.enum(['project', 'organization']).default('project'),
  }),
  output: skillSchema.extend({ created: z.boolean() }),
  errors: [
    { status: 400, code: 'invalid_parameter', when: 'bad name, description or content over its limit, unknown scope' },
    { status: 403, code: 'insufficient_scope', when: 'an organization skill without `project:write`' },
    { status: 409, code: 'platform_skill_name', when: 'the name of a platform skill' },
  ],
  example: { name: 'checkout-errors', description: 'Use for errors in the checkout service', content: 'Check the payment provider status first…' },
  handler(input, ctx) {
    if (PLATFORM_SKILL_NAMES.has(input.name)) throw new ConflictError('platform_skill_name', `\`${input.name}\` is a platform skill; choose another name.`, 'name');
    if (input.scope === 'organization') requireOrgWrite(ctx);
    const p = project(ctx);
    const r = ctx.services.agent.repo.upsertSkill({ scope: input.scope, project_id: p.id, org_id: p.orgId, name: input.name, description: input.description, content: input.content }, ctx.now());
    if (!r.created) ctx.response.status = 200;
    return { ...skillOut(r.row), created: r.created };
  },
});

export const deleteSkill = defineOperation({
  operationId: 'agent.deleteSkill',
  tag: 'agent',
  summary: 'Delete an agent skill',
  description: 'Deletes a project skill, or an organization skill (also needs `project:write`). Platform skills cannot be deleted.',
  method: 'DELETE',
  path: `${P}/skills/{skill_id}`,
  scopes: ['automations:write'],
  risk: 'write',
  sensitive: true,
  projectScoped: true,
  input: z.strictObject({ project_id: projectId, skill_id: z.string().max(64) }),
  output: z.object({ id: z.string(), deleted: z.literal(true) }),
  errors: [
    { status: 403, code: 'insufficient_scope', when: 'an organization skill without `project:write`' },
    { status: 404, code: 'not_found', when: 'no such skill in this project or its organization' },
  ],
  handler(input, ctx) {
    const p = project(ctx);
    const s = ctx.services.agent.repo.skill(p.id, p.orgId, input.skill_id);
    if (!s) throw new NotFoundError('Skill', 'skill_id');
    if (s.scope === 'organization') requireOrgWrite(ctx);
    ctx.services.agent.repo.deleteSkill(s.id);
    return { id: s.id, deleted: true as const };
  },
});

export const listConversations = defineOperation({
  operationId: 'agent.listConversations',
  tag: 'agent',
  summary: 'List the agent conversations (chats, investigations, threads, PR reviews)',
  description: `The last ${LIST_LIMIT} conversations, newest first: dashboard chats, investigations of signals, channel threads, pull-request reviews and automation runs, with status and which model answered.`,
  method: 'GET',
  path: `${P}/conversations`,
  scopes: ['automations:read'],
  risk: 'read',
  sensitive: false,
  projectScoped: true,
  input: noInput,
  output: z.object({
    data: z.array(
      z.object({
        id: z.string(),
        kind: z.string(),
        title: z.string(),
        thread_id: z.string().nullable(),
        signal_id: z.string().nullable(),
        status: z.string(),
        answered_by: z.string(),
        started_at: z.string(),
        ended_at: z.string().nullable(),
      }),
    ),
  }),
  errors: [],
  handler(_input, ctx) {
    return {
      data: ctx.services.agent.repo.conversations(ctx.project!.id, LIST_LIMIT).map(({ project_id: _p, ...c }) => ({ ...c, started_at: toIso(c.started_at)!, ended_at: toIso(c.ended_at) })),
    };
  },
});

export const listSignals = defineOperation({
  operationId: 'agent.listSignals',
  tag: 'agent',
  summary: 'List what the agent noticed (signals) and what it did',
  description: `The last ${LIST_LIMIT} signals, newest first, made from project events (new error group, reopened group, error spike, regressed release, monitor down, incident, feedback): \`action\` (\`investigate\`, \`attach_to_existing\`, \`ignore\`), \`severity\` (\`sev1\`…\`sev4\`), \`reason\`, the investigation's \`status\` and \`answer\`, and \`alert\` (\`posted\` or why not).`,
  method: 'GET',
  path: `${P}/signals`,
  scopes: ['automations:read'],
  risk: 'read',
  sensitive: false,
  projectScoped: true,
  input: noInput,
  output: z.object({
    data: z.array(
      z.object({
        id: z.string(),
        source: z.string(),
        subject: z.string(),
        title: z.string(),
        action: z.enum(['investigate', 'attach_to_existing', 'ignore']),
        severity: z.enum(['sev1', 'sev2', 'sev3', 'sev4']),
        reason: z.string(),
        status: z.string(),
        alert: z.string().nullable(),
        answer: z.string().nullable(),
        conversation_id: z.string().nullable(),
        created_at: z.string(),
      }),
    ),
  }),
  errors: [],
  handler(_input, ctx) {
    return {
      data: ctx.services.agent.repo.signals(ctx.project!.id, LIST_LIMIT).map((s) => ({
        id: s.id,
        source: s.source,
        subject: s.subject,
        title: s.title,
        action: s.action,
        severity: s.severity,
        reason: s.reason,
        status: s.status,
        alert: s.alert,
        answer: s.answer,
        conversation_id: s.conversation_id,
        created_at: toIso(s.created_at)!,
      })),
    };
  },
});

export const getUsage = defineOperation({
  operationId: 'agent.getUsage',
  tag: 'agent',
  summary: "Get the agent's budget use today",
  description: `Today's (UTC) use of the agent's daily budget: \`used_percent\`, \`stage\` (\`normal\` under ${STAGE_THRESHOLDS.conserve}%; \`conserve\` from ${STAGE_THRESHOLDS.conserve}%: no automatic fixes; \`notify_only\` from ${STAGE_THRESHOLDS.notify_only}%: no investigations, alerts and direct answers only; \`exhausted\` at ${STAGE_THRESHOLDS.exhausted}%: direct questions only until the next UTC day), \`wakes\` and \`alerts_posted\`.`,
  method: 'GET',
  path: `${P}/usage`,
  scopes: ['automations:read'],
  risk: 'read',
  sensitive: false,
  projectScoped: true,
  input: noInput,
  output: z.object({
    day: z.string().describe('UTC day, YYYY-MM-DD.'),
    used_percent: z.number(),
    stage: z.enum(['normal', 'conserve', 'notify_only', 'exhausted']),
    wakes: z.number().int(),
    alerts_posted: z.number().int(),
    units_used: z.number(),
    daily_budget: z.number(),
  }),
  errors: [],
  handler(_input, ctx) {
    return ctx.services.agent.usage(ctx.project!.id, ctx.now());
  },
});

export const listChannels = defineOperation({
  operationId: 'agent.listChannels',
  tag: 'agent',
  summary: 'List the channels agent alerts and replies go to',
  description: 'Outbound channels of the project (Slack-compatible incoming webhooks and signed JSON webhooks), oldest first, with the one alerts go to. Target URLs are shown by host only.',
  method: 'GET',
  path: `${P}/channels`,
  scopes: ['project:write'],
  risk: 'read',
  sensitive: false,
  projectScoped: true,
  input: noInput,
  output: z.object({ data: z.array(channelSchema) }),
  errors: [],
  handler(_input, ctx) {
    const alertId = ctx.services.agent.alertChannel(ctx.project!.id)?.id ?? null;
    return { data: ctx.services.agent.repo.channels(ctx.project!.id).map((c) => channelOut(c, alertId)) };
  },
});

export const createChannel = defineOperation({
  operationId: 'agent.createChannel',
  tag: 'agent',
  summary: 'Add an outbound channel (Slack webhook or signed JSON webhook)',
  description: `\`kind\` \`slack\`: a Slack-compatible incoming webhook URL (posted \`{"text": …}\`). \`kind\` \`webhook\`: any URL, posted JSON signed with HMAC-SHA256: header \`${SIGNATURE_HEADER}: t=<unix seconds>,v1=<hex>\`, v1 = HMAC-SHA256(secret, "<t>.<raw body>"); the \`secret\` is in this answer only. Failed deliveries are retried with backoff (6 attempts); see agent.listDeliveries. Private addresses are refused unless the operator allows them (SIGHTLINE_WEBHOOK_ALLOW_PRIVATE).`,
  method: 'POST',
  path: `${P}/channels`,
  scopes: ['project:write'],
  risk: 'write',
  sensitive: true,
  projectScoped: true,
  successStatus: 201,
  input: z.strictObject({
    project_id: projectId,
    name: z.string().trim().min(1).max(100),
    kind: z.enum(['slack', 'webhook']),
    url: z.string().url().max(2048),
  }),
  output: channelSchema.extend({ secret: z.string().nullable().describe('Signing secret of a `webhook` channel, shown only here; null for `slack`.') }),
  errors: [
    { status: 400, code: 'invalid_parameter', when: 'missing name, unknown kind, a URL that is not http(s) or carries credentials' },
    { status: 400, code: 'address_not_allowed', when: 'the URL names a private or special-purpose address the operator did not allow' },
  ],
  example: { name: 'ops alerts', kind: 'webhook', url: 'https://hooks.example.com/sightline' },
  handler(input, ctx) {
    const { channel, secret } = ctx.services.agent.createChannel(ctx.project!.id, input, ctx.now());
    return { ...channelOut(channel, ctx.services.agent.alertChannel(ctx.project!.id)?.id ?? null), secret };
  },
});

export const deleteChannel = defineOperation({
  operationId: 'agent.deleteChannel',
  tag: 'agent',
  summary: 'Delete an outbound channel',
  description: 'Deletes the channel; pending deliveries to it fail. When it was the alert channel, alerts go to the first remaining channel.',
  method: 'DELETE',
  path: `${P}/channels/{channel_id}`,
  scopes: ['project:write'],
  risk: 'write',
  sensitive: true,
  projectScoped: true,
  input: z.strictObject({ project_id: projectId, channel_id: uuid('channel id') }),
  output: z.object({ id: z.string(), deleted: z.literal(true) }),
  errors: [{ status: 404, code: 'not_found', when: 'no such channel in this project' }],
  handler(input, ctx) {
    const pid = ctx.project!.id;
    ctx.services.atomic(() => {
      if (!ctx.services.agent.repo.deleteChannel(pid, input.channel_id)) throw new NotFoundError('Channel', 'channel_id');
      const s = ctx.services.agent.settings(pid);
      if (s.alert_channel_id === input.channel_id) ctx.services.agent.repo.putSettings(pid, { ...s, alert_channel_id: null } as AgentSettingsValues, ctx.now());
    });
    return { id: input.channel_id, deleted: true as const };
  },
});

export const listDeliveries = defineOperation({
  operationId: 'agent.listDeliveries',
  tag: 'agent',
  summary: 'List deliveries to agent channels (delivery log)',
  description: `The last ${LIST_LIMIT} messages posted to channels, newest first: \`status\` (\`pending\` while retrying, \`delivered\`, \`failed\` after the last attempt), attempts, the last HTTP status and error.`,
  method: 'GET',
  path: `${P}/deliveries`,
  scopes: ['project:write'],
  risk: 'read',
  sensitive: false,
  projectScoped: true,
  input: z.strictObject({ project_id: projectId, channel_id: uuid('channel id').optional() }),
  output: z.object({
    data: z.array(
      z.object({
        id: z.string(),
        channel_id: z.string(),
        title: z.string(),
        status: z.enum(['pending', 'delivered', 'failed']),
        attempts: z.number().int(),
        last_status_code: z.number().int().nullable(),
        last_error: z.string().nullable(),
        created_at: z.string(),
        delivered_at: z.string().nullable(),
      }),
    ),
  }),
  errors: [{ status: 400, code: 'invalid_parameter', when: '`channel_id` is not a UUID' }],
  handler(input, ctx) {
    return {
      data: ctx.services.agent.repo.deliveries(ctx.project!.id, input.channel_id ?? null, LIST_LIMIT).map((d) => ({
        id: d.id,
        channel_id: d.channel_id,
        title: d.title,
        status: d.status,
        attempts: d.attempts,
        last_status_code: d.last_status_code,
        last_error: d.last_error,
        created_at: toIso(d.created_at)!,
        delivered_at: toIso(d.delivered_at),
      })),
    };
  },
});
