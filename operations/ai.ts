import { z } from 'zod';
import { defineOperation } from './define.js';
import { projectId, toIso } from './shared.js';
import { NotFoundError } from '../src/core/errors.js';
import { aiWindow, aiWindowParams, observationRow, observationRowSchema, round, windowError, windowOut, windowSchema } from './ai-common.js';
import { PRICE_TABLE_VERSION } from '../src/domain/ai/prices.js';
import { sessionTree } from '../src/domain/ai/session-tree.js';
import type { PartyAggregate, UsageAggregate } from '../src/storage/ai-repo.js';

const DAY = 86_400_000;

const usageSchema = z.object({
  observations: z.number().int(),
  requests: z.number().int().describe('Generations (model calls).'),
  tool_calls: z.number().int(),
  errors: z.number().int().describe('Observations with error status.'),
  error_rate: z.number().describe('errors / observations, 0 to 1.'),
  cost_usd: z.number(),
  prompt_tokens: z.number().int(),
  completion_tokens: z.number().int(),
  total_tokens: z.number().int(),
  avg_latency_ms: z.number().nullable().describe('Mean generation duration.'),
});

function usageOut(u: UsageAggregate): z.input<typeof usageSchema> {
  return {
    observations: u.n,
    requests: u.generations,
    tool_calls: u.tool_calls,
    errors: u.errors,
    error_rate: u.n ? round(u.errors / u.n, 4) : 0,
    cost_usd: round(u.cost),
    prompt_tokens: u.prompt,
    completion_tokens: u.completion,
    total_tokens: u.tokens,
    avg_latency_ms: u.generations ? round(u.gen_duration / u.generations, 1) : null,
  };
}

const partySchema = z.object({
  id: z.string(),
  observations: z.number().int(),
  requests: z.number().int(),
  errors: z.number().int(),
  cost_usd: z.number(),
  total_tokens: z.number().int(),
  first_seen: z.string(),
  last_seen: z.string(),
});
const partyOut = (p: PartyAggregate): z.input<typeof partySchema> => ({
  id: p.key,
  observations: p.n,
  requests: p.generations,
  errors: p.errors,
  cost_usd: round(p.cost),
  total_tokens: p.tokens,
  first_seen: toIso(p.first_ms)!,
  last_seen: toIso(p.last_ms)!,
});

// ---- ai.stats -----------------------------------------------------------------------------

export const stats = defineOperation({
  operationId: 'ai.stats',
  tag: 'ai',
  summary: 'AI usage summary: requests, cost, tokens, latency, top models and providers, sessions, users',
  description:
    'Over the window (default the last 7 days, at most 90 days): summary metrics of all agent observations, the top 10 models and providers by requests, and the sessions and users active in the window (first activity before `to`, last at or after `from`) with the 10 most expensive of each (their totals since first seen). ' +
    'Cost is the sent cost, else computed from the bundled price table (`price_table_version` is its date). `privacy_mode` is the project setting (ai.updateSettings).',
  method: 'GET',
  path: '/v1/projects/{project_id}/ai/stats',
  scopes: ['read'],
  risk: 'read',
  sensitive: false,
  projectScoped: true,
  input: z.strictObject({ project_id: projectId, ...aiWindowParams('7 days', '90 days') }),
  output: z.object({
    summary: usageSchema,
    top_models: z.array(usageSchema.extend({ model: z.string() })),
    top_providers: z.array(usageSchema.extend({ provider: z.string() })),
    sessions: z.object({ count: z.number().int(), top: z.array(partySchema) }),
    users: z.object({ count: z.number().int(), top: z.array(partySchema) }),
    price_table_version: z.string().describe('Date of the bundled model price table.'),
    privacy_mode: z.boolean(),
    ...windowSchema,
  }),
  errors: [windowError(90)],
  example: { from: '2026-11-01T00:00:00Z' },
  async handler(input, ctx) {
    const w = aiWindow(input, ctx.now(), 7, 90);
    const pid = ctx.project!.id;
    const ai = ctx.services.ai;
    const [summary, models, providers, sessions, users] = await Promise.all([
      ai.usage(pid, w.fromMs, w.toMs),
      ai.usageBy(pid, w.fromMs, w.toMs, 'model', 10),
      ai.usageBy(pid, w.fromMs, w.toMs, 'provider', 10),
      ai.parties(pid, 'session', w.fromMs, w.toMs, 10),
      ai.parties(pid, 'user', w.fromMs, w.toMs, 10),
    ]);
    return {
      summary: usageOut(summary),
      top_models: models.map((g) => ({ model: g.key, ...usageOut(g) })),
      top_providers: providers.map((g) => ({ provider: g.key, ...usageOut(g) })),
      sessions: { count: sessions.count, top: sessions.top.map(partyOut) },
      users: { count: users.count, top: users.top.map(partyOut) },
      price_table_version: PRICE_TABLE_VERSION,
      privacy_mode: ai.privacyMode(pid),
      ...windowOut(w),
    };
  },
});

// ---- ai.histogram -------------------------------------------------------------------------

export const histogram = defineOperation({
  operationId: 'ai.histogram',
  tag: 'ai',
  summary: 'Daily AI series: requests, cost, latency and tokens per UTC day',
  description:
    'One bucket per UTC day of the window (default the last 30 days, at most 90 days), days without observations included with zeros: requests (generations), observations, errors, cost, mean generation latency and tokens.',
  method: 'GET',
  path: '/v1/projects/{project_id}/ai/histogram',
  scopes: ['read'],
  risk: 'read',
  sensitive: false,
  display: { chart: { kind: 'line', points: 'data', x: 'date', y: 'cost_usd', merge: 'sum', unit: 'USD', title: ['from', 'to'] } },
  projectScoped: true,
  input: z.strictObject({ project_id: projectId, ...aiWindowParams('30 days', '90 days') }),
  output: z.object({ data: z.array(usageSchema.extend({ date: z.string().describe('UTC day, YYYY-MM-DD.') })), ...windowSchema }),
  errors: [windowError(90)],
  example: { from: '2026-10-01T00:00:00Z' },
  async handler(input, ctx) {
    const w = aiWindow(input, ctx.now(), 30, 90);
    const byDay = new Map((await ctx.services.ai.usageByDay(ctx.project!.id, w.fromMs, w.toMs)).map((r) => [r.day, r]));
    const data = [];
    for (let d = Math.floor(w.fromMs / DAY) * DAY; d < w.toMs; d += DAY) {
      const u = byDay.get(d) ?? { n: 0, generations: 0, errors: 0, tool_calls: 0, cost: 0, prompt: 0, completion: 0, tokens: 0, gen_duration: 0 };
      data.push({ date: new Date(d).toISOString().slice(0, 10), ...usageOut(u) });
    }
    return { data, ...windowOut(w) };
  },
});

// ---- ai.session ---------------------------------------------------------------------------

const SESSION_MAX = 2000;

export const session = defineOperation({
  operationId: 'ai.session',
  tag: 'ai',
  summary: 'One agent session as a tree of agent steps, generations and tool calls, with tokens, cost and latency per node',
  description:
    'The session\'s observations (at most 2,000, oldest first) as a tree: `nodes` come depth-first, each with `depth`, `child_ids`, its own tokens, cost and latency, and `subtree` totals (itself and everything below), ' +
    'so where the time and money went reads top-down. An observation whose parent is not in the session is a root. `totals` sums the whole session.',
  method: 'GET',
  path: '/v1/projects/{project_id}/ai/sessions/{session_id}',
  scopes: ['read'],
  risk: 'read',
  sensitive: false,
  projectScoped: true,
  input: z.strictObject({ project_id: projectId, session_id: z.string().min(1).max(256).describe('Session id.') }),
  output: z.object({
    session_id: z.string(),
    user_ids: z.array(z.string()),
    started_at: z.string(),
    ended_at: z.string(),
    duration_ms: z.number().int(),
    totals: usageSchema,
    nodes: z.array(
      observationRowSchema.extend({
        depth: z.number().int(),
        child_ids: z.array(z.string()),
        subtree: z.object({ observations: z.number().int(), generations: z.number().int(), tool_calls: z.number().int(), total_tokens: z.number().int(), cost_usd: z.number() }),
      }),
    ),
    truncated: z.boolean().describe('True when the session has more than 2,000 observations (the first 2,000 are shown).'),
  }),
  errors: [{ status: 404, code: 'not_found', when: 'no observation of this session in the project' }],
  example: { session_id: 'conv_42' },
  async handler(input, ctx) {
    const rows = await ctx.services.ai.sessionRows(ctx.project!.id, input.session_id, SESSION_MAX + 1);
    if (!rows.length) throw new NotFoundError('The session', 'session_id');
    const truncated = rows.length > SESSION_MAX;
    const kept = rows.slice(0, SESSION_MAX);
    // Parents that are plain spans (an HTTP call between an agent step and a tool): walk the trace's spans.
    const inSession = new Set(kept.map((r) => r.observation_id));
    const spanParents = new Map<string, string | null>();
    const traces = new Set(kept.filter((r) => r.parent_observation_id && !inSession.has(r.parent_observation_id) && r.trace_id).map((r) => r.trace_id));
    for (const spans of (await ctx.services.tracesRead.tracesSpansLite(ctx.project!.id, [...traces].slice(0, 50))).values()) {
      for (const sp of spans) spanParents.set(sp.span_id, sp.parent_span_id);
    }
    const tree = sessionTree(kept, spanParents);
    const start = Math.min(...kept.map((r) => r.started_ms));
    const end = Math.max(...kept.map((r) => r.started_ms + r.duration_ms));
    const u: UsageAggregate = { n: 0, generations: 0, errors: 0, tool_calls: 0, cost: 0, prompt: 0, completion: 0, tokens: 0, gen_duration: 0 };
    for (const r of kept) {
      u.n++;
      if (r.observation_type === 'generation') (u.generations++, (u.gen_duration += r.duration_ms));
      if (r.observation_type === 'tool_call') u.tool_calls++;
      if (r.status === 'error') u.errors++;
      u.cost += r.cost_usd ?? 0;
      u.prompt += r.prompt_tokens ?? 0;
      u.completion += r.completion_tokens ?? 0;
      u.tokens += r.total_tokens ?? 0;
    }
    return {
      session_id: input.session_id,
      user_ids: [...new Set(kept.map((r) => r.user_id).filter(Boolean))].sort(),
      started_at: toIso(start)!,
      ended_at: toIso(end)!,
      duration_ms: Math.round(end - start),
      totals: usageOut(u),
      nodes: tree.map((n) => ({ ...observationRow(n.row), depth: n.depth, child_ids: n.child_ids, subtree: { ...n.subtree, cost_usd: round(n.subtree.cost_usd) } })),
      truncated,
    };
  },
});

// ---- ai.user ------------------------------------------------------------------------------

export const user = defineOperation({
  operationId: 'ai.user',
  tag: 'ai',
  summary: 'One user\'s AI usage: totals, sessions and models',
  description: 'Observations of the user in the window (default the last 30 days, at most 90 days): usage totals, the 50 most recent sessions and the models used.',
  method: 'GET',
  path: '/v1/projects/{project_id}/ai/users/{user_id}',
  scopes: ['read'],
  risk: 'read',
  sensitive: false,
  projectScoped: true,
  input: z.strictObject({ project_id: projectId, user_id: z.string().min(1).max(256).describe('User id.'), ...aiWindowParams('30 days', '90 days') }),
  output: z.object({
    user_id: z.string(),
    totals: usageSchema,
    first_seen: z.string().nullable(),
    last_seen: z.string().nullable(),
    sessions: z.array(partySchema),
    models: z.array(z.object({ model: z.string(), requests: z.number().int(), cost_usd: z.number(), total_tokens: z.number().int() })),
    ...windowSchema,
  }),
  errors: [windowError(90), { status: 404, code: 'not_found', when: 'no observation of this user in the window' }],
  example: { user_id: 'user_123' },
  async handler(input, ctx) {
    const w = aiWindow(input, ctx.now(), 30, 90);
    const b = await ctx.services.ai.userBreakdown(ctx.project!.id, input.user_id, w.fromMs, w.toMs);
    if (!b.totals.n) throw new NotFoundError('The user (in this window)', 'user_id');
    return {
      user_id: input.user_id,
      totals: usageOut(b.totals),
      first_seen: toIso(b.totals.first_ms),
      last_seen: toIso(b.totals.last_ms),
      sessions: b.sessions.map(partyOut),
      models: b.models.map((m) => ({ model: m.key, requests: m.n, cost_usd: round(m.cost), total_tokens: m.tokens })),
      ...windowOut(w),
    };
  },
});

// ---- ai.fixStats / ai.fixTimeline --------------------------------------------------------------

const FIX_NOTE =
  'Dispatches are recorded by automations when they hand an error to a hosted fixer; until automations are configured for the project there are none and the counts are zero.';
const countRow = z.object({ key: z.string(), count: z.number().int() });

export const fixStats = defineOperation({
  operationId: 'ai.fixStats',
  tag: 'ai',
  summary: 'Hosted fixer dispatch counts by source, requester, status and webhook delivery',
  description: `Dispatches in the window (default the last 30 days, at most 90 days), counted by source, requester, status and webhook delivery status. ${FIX_NOTE}`,
  method: 'GET',
  path: '/v1/projects/{project_id}/ai/fixes/stats',
  scopes: ['read'],
  risk: 'read',
  sensitive: false,
  projectScoped: true,
  input: z.strictObject({ project_id: projectId, ...aiWindowParams('30 days', '90 days') }),
  output: z.object({
    total: z.number().int(),
    by_source: z.array(countRow),
    by_requester: z.array(countRow),
    by_status: z.array(countRow),
    by_webhook_delivery: z.array(countRow),
    ...windowSchema,
  }),
  errors: [windowError(90)],
  example: {},
  handler(input, ctx) {
    const w = aiWindow(input, ctx.now(), 30, 90);
    return { ...ctx.services.ai.fixStats(ctx.project!.id, w.fromMs, w.toMs), ...windowOut(w) };
  },
});

export const fixTimeline = defineOperation({
  operationId: 'ai.fixTimeline',
  tag: 'ai',
  summary: 'Hosted fixer dispatch and completion counts over time',
  description: `Dispatches and completions per bucket (\`step\` 1h or 1d, default 1d) over the window (default the last 30 days, at most 90 days), empty buckets included. ${FIX_NOTE}`,
  method: 'GET',
  path: '/v1/projects/{project_id}/ai/fixes/timeline',
  scopes: ['read'],
  risk: 'read',
  sensitive: false,
  projectScoped: true,
  input: z.strictObject({ project_id: projectId, ...aiWindowParams('30 days', '90 days'), step: z.enum(['1h', '1d']).default('1d') }),
  output: z.object({ data: z.array(z.object({ time: z.string(), dispatched: z.number().int(), completed: z.number().int() })), step: z.string(), ...windowSchema }),
  errors: [windowError(90)],
  example: { step: '1d' },
  handler(input, ctx) {
    const w = aiWindow(input, ctx.now(), 30, 90);
    const stepMs = input.step === '1h' ? 3_600_000 : DAY;
    const t = ctx.services.ai.fixTimeline(ctx.project!.id, w.fromMs, w.toMs, stepMs);
    const d = new Map(t.dispatched.map((r) => [r.t, r.c]));
    const c = new Map(t.completed.map((r) => [r.t, r.c]));
    const data = [];
    for (let b = Math.floor(w.fromMs / stepMs) * stepMs; b < w.toMs; b += stepMs) data.push({ time: toIso(b)!, dispatched: d.get(b) ?? 0, completed: c.get(b) ?? 0 });
    return { data, step: input.step, ...windowOut(w) };
  },
});

// ---- ai.getSettings / ai.updateSettings (beyond the spec: privacy mode) -----------------------

const settingsOut = z.object({
  privacy_mode: z.boolean().describe('When true, prompt and output content of every AI observation is withheld at ingest (never stored); counts, tokens, cost and redaction markers are kept.'),
});

export const getSettings = defineOperation({
  operationId: 'ai.getSettings',
  tag: 'ai',
  summary: 'Read the project\'s AI observability settings (privacy mode)',
  description: 'The project\'s privacy mode for agent observations.',
  method: 'GET',
  path: '/v1/projects/{project_id}/ai/settings',
  scopes: ['read'],
  risk: 'read',
  sensitive: false,
  projectScoped: true,
  input: z.strictObject({ project_id: projectId }),
  output: settingsOut,
  errors: [],
  example: {},
  handler(_input, ctx) {
    return { privacy_mode: ctx.services.ai.privacyMode(ctx.project!.id) };
  },
});

export const updateSettings = defineOperation({
  operationId: 'ai.updateSettings',
  tag: 'ai',
  summary: 'Turn the project\'s AI privacy mode on or off',
  description:
    'With `privacy_mode: true`, every agent observation ingested afterwards has its prompts, outputs, system prompt, tool payloads and reasoning withheld before storage (in the stored span too); a redaction marker shows where content was. ' +
    'Already stored content is not changed. A single observation can also ask for privacy mode (`sightline.privacy_mode` span attribute, or `privacy_mode` in the batch API).',
  method: 'PATCH',
  path: '/v1/projects/{project_id}/ai/settings',
  scopes: ['project:write'],
  risk: 'write',
  sensitive: false,
  projectScoped: true,
  input: z.strictObject({ project_id: projectId, privacy_mode: z.boolean() }),
  output: settingsOut,
  errors: [],
  example: { privacy_mode: true },
  handler(input, ctx) {
    ctx.services.ai.setPrivacyMode(ctx.project!.id, input.privacy_mode, ctx.now());
    return { privacy_mode: input.privacy_mode };
  },
});

