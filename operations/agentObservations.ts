import { z } from 'zod';
import { defineOperation } from './define.js';
import { offsetPagination, projectId, queryBool } from './shared.js';
import { NotFoundError } from '../src/core/errors.js';
import { aiWindow, aiWindowParams, jsonObject, observationRow, observationRowSchema, optText, tagsMap, windowError, windowOut, windowSchema } from './ai-common.js';
import { coverageOf, DIMENSION_NAMES, DIMENSIONS, privacyPostureOf } from '../src/domain/ai/quality.js';
import { OBSERVATION_TYPES, SCORE_SOURCES } from '../src/domain/ai/observation.js';
import type { StoredScore } from '../src/storage/ai-repo.js';

const LIST_MAX_DAYS = 90;
const QUALITY_MAX_DAYS = 31;
const MISSING_EXAMPLES = 20;

const filterParams = {
  trace_id: optText(128, 'Trace id.'),
  session_id: optText(256, 'Session id (GenAI `gen_ai.conversation.id`, `session.id`, Langfuse session).'),
  user_id: optText(256, 'User id.'),
  agent_id: optText(256, 'Agent id (`gen_ai.agent.id`, else the agent name).'),
  workflow_id: optText(256, 'Workflow id.'),
};

// ---- agentObservations.list -----------------------------------------------------------------

export const list = defineOperation({
  operationId: 'agentObservations.list',
  tag: 'agentObservations',
  summary: 'List agent observations (generations, tool calls, retrievals, agent steps), newest first',
  description:
    'Observations started in the window (`from`/`to`, default the last 24 hours, at most 90 days), newest first. Filters combine with AND. ' +
    '`q` is a case-insensitive substring over the message, observation name, tool name, the prompt and output JSON and propagated metadata (attributes and tags). ' +
    'Offset pagination: `total` counts every match; the next page uses offset + limit.',
  method: 'GET',
  path: '/v1/projects/{project_id}/agent-observations',
  scopes: ['read'],
  risk: 'read',
  sensitive: false,
  projectScoped: true,
  input: z.strictObject({
    project_id: projectId,
    ...aiWindowParams('24 hours', '90 days'),
    ...filterParams,
    observation_type: z.enum(OBSERVATION_TYPES).optional(),
    status: z.enum(['ok', 'error']).optional(),
    model: optText(256, 'Model (response model, else request model).'),
    tool_name: optText(256, 'Tool name.'),
    q: optText(256, 'Case-insensitive text over message, name, tool, prompt and output JSON, metadata.'),
    ...offsetPagination(50, 200),
  }),
  output: z.object({ data: z.array(observationRowSchema), total: z.number().int(), limit: z.number().int(), offset: z.number().int(), ...windowSchema }),
  errors: [windowError(LIST_MAX_DAYS)],
  example: { observation_type: 'generation', status: 'error', limit: 20 },
  async handler(input, ctx) {
    const w = aiWindow(input, ctx.now(), 1, LIST_MAX_DAYS);
    const { project_id: _p, from: _f, to: _t, limit, offset, ...filters } = input;
    const { rows, total } = await ctx.services.ai.list(ctx.project!.id, { fromMs: w.fromMs, toMs: w.toMs, ...filters }, limit, offset);
    return { data: rows.map(observationRow), total, limit, offset, ...windowOut(w) };
  },
});

// ---- agentObservations.quality --------------------------------------------------------------

const coverageEntry = z.object({
  captured: z.number().int(),
  eligible: z.number().int(),
  missing: z.number().int(),
  percent: z.number().nullable().describe('captured / eligible × 100 (two decimals); null when nothing is eligible.'),
  missing_examples: z.array(z.string()).optional().describe('Up to 20 observation ids missing this field (with include_missing_examples=true).'),
});
const countPct = z.object({ count: z.number().int(), percent: z.number().nullable() });

export const quality = defineOperation({
  operationId: 'agentObservations.quality',
  tag: 'agentObservations',
  summary: 'Telemetry quality of agent observations: coverage per field, privacy posture, scores',
  description:
    'Coverage of seven dimensions over the window (default the last 24 hours, at most 31 days): `trace_linkage` (all observations), `generation_inputs` and `model_provider` (all generations), ' +
    '`system_prompts` (chat/system-capable generations), `completed_outputs`, `token_usage` and `cost` (successful generations). Each has captured, eligible, missing and percent. ' +
    'Content withheld by privacy mode counts as captured (the instrumentation sent it). `privacy_posture` counts observations in privacy mode and those whose stored record bears content, reasoning or tool payloads — never the content. ' +
    '`invalid_token_totals` counts observations with negative or fractional token counts or a total below input + output. `scores` counts current scores timed in the window and the observations they score (with filters, only scores of matching observations). ' +
    'The command-line client turns this report into a CI gate (`sightline agent-observations quality --threshold 90`).',
  method: 'GET',
  path: '/v1/projects/{project_id}/agent-observations/quality',
  scopes: ['read'],
  risk: 'read',
  sensitive: false,
  projectScoped: true,
  input: z.strictObject({
    project_id: projectId,
    ...aiWindowParams('24 hours', '31 days'),
    agent_id: optText(256, 'Agent id.'),
    workflow_id: optText(256, 'Workflow id.'),
    model: optText(256, 'Model.'),
    provider: optText(256, 'Provider.'),
    release: optText(256, 'Release.'),
    environment: optText(256, 'Environment.'),
    include_missing_examples: queryBool.default(false).describe('Return up to 20 observation ids per incomplete dimension.'),
  }),
  output: z.object({
    total_observations: z.number().int(),
    generations: z.number().int(),
    coverage: z.object(Object.fromEntries(DIMENSION_NAMES.map((d) => [d, coverageEntry])) as Record<(typeof DIMENSION_NAMES)[number], typeof coverageEntry>),
    invalid_token_totals: z.number().int(),
    privacy_posture: z.object({ observations: z.number().int(), privacy_mode: countPct, content_bearing: countPct, reasoning_bearing: countPct, tool_payload_bearing: countPct }),
    scores: z.object({ count: z.number().int(), scored_observations: z.number().int() }),
    ...windowSchema,
  }),
  errors: [windowError(QUALITY_MAX_DAYS)],
  example: { environment: 'production', include_missing_examples: true },
  async handler(input, ctx) {
    const w = aiWindow(input, ctx.now(), 1, QUALITY_MAX_DAYS);
    const pid = ctx.project!.id;
    const f = { agent_id: input.agent_id, workflow_id: input.workflow_id, model: input.model, provider: input.provider, release: input.release, environment: input.environment };
    for (const k of Object.keys(f) as (keyof typeof f)[]) if (f[k] === undefined) delete f[k];
    const sums = await ctx.services.ai.qualitySums(pid, w.fromMs, w.toMs, f);
    const coverage = coverageOf(sums) as Record<string, ReturnType<typeof coverageOf>[keyof ReturnType<typeof coverageOf>] & { missing_examples?: string[] }>;
    if (input.include_missing_examples) {
      for (const d of DIMENSION_NAMES) {
        const [cap, elig] = DIMENSIONS[d];
        coverage[d]!.missing_examples = coverage[d]!.missing > 0 ? await ctx.services.ai.missingExamples(pid, w.fromMs, w.toMs, f, cap, elig, MISSING_EXAMPLES) : [];
      }
    }
    return {
      total_observations: sums.n,
      generations: sums.f_gen,
      coverage: coverage as never,
      invalid_token_totals: sums.f_invalid_tokens,
      privacy_posture: privacyPostureOf(sums),
      scores: await ctx.services.ai.scoreCounts(pid, w.fromMs, w.toMs, f),
      ...windowOut(w),
    };
  },
});

// ---- agentObservations.export ---------------------------------------------------------------

const exportScore = z.object({
  score_id: z.string(),
  name: z.string(),
  value: z.number(),
  string_value: z.string(),
  data_type: z.string(),
  source: z.string(),
  comment: z.string(),
  metadata: z.object({ attributes: z.record(z.string(), z.unknown()), tags: z.array(z.string()) }).optional().describe('Only with include_metadata=true.'),
});

const exportRow = z.object({
  observation_id: z.string(),
  trace_id: z.string(),
  parent_observation_id: z.string(),
  observation_name: z.string(),
  model: z.string(),
  provider: z.string(),
  status: z.string(),
  started_at: z.string(),
  duration_ms: z.number().int(),
  input_json: z.record(z.string(), z.unknown()),
  output_json: z.record(z.string(), z.unknown()),
  prompt_tokens: z.number().int(),
  completion_tokens: z.number().int(),
  total_tokens: z.number().int(),
  cost_usd: z.number(),
  scores: z.array(exportScore),
  session_id: z.string().optional().describe('Only with include_identifiers=true.'),
  user_id: z.string().optional().describe('Only with include_identifiers=true.'),
  tags: z.record(z.string(), z.string()).optional().describe('Only with include_metadata=true.'),
  attributes: z.record(z.string(), z.unknown()).optional().describe('Only with include_metadata=true.'),
});

function scoreMeta(s: StoredScore) {
  const m = jsonObject(s.metadata);
  const attributes = m.attributes && typeof m.attributes === 'object' && !Array.isArray(m.attributes) ? (m.attributes as Record<string, unknown>) : Object.fromEntries(Object.entries(m).filter(([k]) => k !== 'tags'));
  const tags = Array.isArray(m.tags) ? m.tags.map(String) : [];
  return { attributes, tags };
}

const exportGenerations = defineOperation({
  operationId: 'agentObservations.export',
  tag: 'agentObservations',
  summary: 'Export completed generations with input, output, usage and current scores (bulk; for datasets and fine-tuning)',
  description:
    'Completed generations of the window (default the last 24 hours, at most 90 days) in a deterministic order (start time, then observation id), with full structured input and output, cost, token usage and current scores. ' +
    '`status` defaults to `ok`; `require_output` (default true) keeps only generations with an output. Score filters (`score_name`, `score_source`, `score_label`, `min_score`, `max_score`; boolean scores count as 1/0) keep generations with a matching current score. ' +
    '`session_id`/`user_id` only with include_identifiers=true; tags, attributes and score metadata only with include_metadata=true. Content withheld by privacy mode stays withheld. ' +
    'Page with offset while `has_more` is true. Needs scope `ai:export`; hidden from the tool server. The command-line client writes it as JSONL (`--format jsonl` or `--format openai-chat`).',
  method: 'GET',
  path: '/v1/projects/{project_id}/agent-observations/export',
  scopes: ['ai:export'],
  risk: 'read',
  sensitive: true,
  projectScoped: true,
  input: z.strictObject({
    project_id: projectId,
    ...aiWindowParams('24 hours', '90 days'),
    q: optText(256, 'Case-insensitive text over message, name, tool, prompt and output JSON, metadata.'),
    model: optText(256, 'Model.'),
    provider: optText(256, 'Provider.'),
    release: optText(256, 'Release.'),
    environment: optText(256, 'Environment.'),
    status: z.enum(['ok', 'error']).default('ok'),
    score_name: optText(256, 'Keep generations with a current score of this name.'),
    score_source: z.enum(SCORE_SOURCES).optional(),
    score_label: optText(256, 'Keep generations with a categorical score of this label.'),
    min_score: z.coerce.number().finite().optional().describe('Keep generations with a numeric or boolean score ≥ this.'),
    max_score: z.coerce.number().finite().optional().describe('Keep generations with a numeric or boolean score ≤ this.'),
    require_output: queryBool.default(true),
    include_identifiers: queryBool.default(false),
    include_metadata: queryBool.default(false),
    ...offsetPagination(25, 100),
  }),
  output: z.object({ data: z.array(exportRow), limit: z.number().int(), offset: z.number().int(), has_more: z.boolean(), ...windowSchema }),
  errors: [windowError(LIST_MAX_DAYS)],
  example: { score_name: 'helpfulness', min_score: 0.8, limit: 100 },
  async handler(input, ctx) {
    const w = aiWindow(input, ctx.now(), 1, LIST_MAX_DAYS);
    const pid = ctx.project!.id;
    const { rows, hasMore } = await ctx.services.ai.exportRows(
      pid,
      {
        fromMs: w.fromMs,
        toMs: w.toMs,
        q: input.q,
        model: input.model,
        provider: input.provider,
        release: input.release,
        environment: input.environment,
        status: input.status,
        require_output: input.require_output,
        score_name: input.score_name,
        score_source: input.score_source,
        score_label: input.score_label,
        min_score: input.min_score,
        max_score: input.max_score,
      },
      input.limit,
      input.offset,
    );
    const scores = await ctx.services.ai.scoresForObservations(pid, rows);
    const data = rows.map((r) => {
      const mine = scores.filter((s) => s.observation_id === r.observation_id || (s.observation_id === '' && s.trace_id === r.trace_id && r.trace_id !== ''));
      const row: z.input<typeof exportRow> = {
        observation_id: r.observation_id,
        trace_id: r.trace_id,
        parent_observation_id: r.parent_observation_id,
        observation_name: r.observation_name,
        model: r.model,
        provider: r.provider,
        status: r.status,
        started_at: new Date(r.started_ms).toISOString(),
        duration_ms: Math.round(r.duration_ms),
        input_json: jsonObject(r.input_json),
        output_json: jsonObject(r.output_json),
        prompt_tokens: r.prompt_tokens ?? 0,
        completion_tokens: r.completion_tokens ?? 0,
        total_tokens: r.total_tokens ?? 0,
        cost_usd: r.cost_usd ?? 0,
        scores: mine.map((s) => ({
          score_id: s.score_id,
          name: s.name,
          value: s.value,
          string_value: s.string_value,
          data_type: s.data_type,
          source: s.source,
          comment: s.comment,
          ...(input.include_metadata ? { metadata: scoreMeta(s) } : {}),
        })),
      };
      if (input.include_identifiers) Object.assign(row, { session_id: r.session_id, user_id: r.user_id });
      if (input.include_metadata) Object.assign(row, { tags: tagsMap(r.tags), attributes: jsonObject(r.attributes) });
      return row;
    });
    return { data, limit: input.limit, offset: input.offset, has_more: hasMore, ...windowOut(w) };
  },
});

// ---- agentObservations.get ------------------------------------------------------------------

// The REST router matches in catalogue order: operations/index.ts lists this one after quality and
// export, so /agent-observations/quality is not taken for an observation id.
export const get = defineOperation({
  operationId: 'agentObservations.get',
  tag: 'agentObservations',
  summary: 'Get one agent observation with its input, output, tags and attributes',
  description:
    'The full record: the list fields plus `input_json` and `output_json` (normalized: `{ system, messages: [{ role, content, tool_calls, tool_call_id, reasoning }] }` for chat, `{ value }` otherwise; ' +
    '`{ redacted: true, reason: "privacy_mode" }` where privacy mode withheld content), `tags` and `attributes` (span attributes without content), `cost_source` and `privacy_mode`.',
  method: 'GET',
  path: '/v1/projects/{project_id}/agent-observations/{observation_id}',
  scopes: ['read'],
  risk: 'read',
  sensitive: false,
  projectScoped: true,
  input: z.strictObject({ project_id: projectId, observation_id: z.string().min(1).max(256).describe('Observation id (the span id for OTLP).') }),
  output: observationRowSchema.extend({
    input_json: z.record(z.string(), z.unknown()),
    output_json: z.record(z.string(), z.unknown()),
    tags: z.record(z.string(), z.string()),
    attributes: z.record(z.string(), z.unknown()),
    cost_source: z.string().describe('`sent`, `price_table`, or empty when unknown.'),
    privacy_mode: z.boolean(),
  }),
  errors: [{ status: 404, code: 'not_found', when: 'no such observation in this project' }],
  example: { observation_id: '5b8aa5a2d2c872e8' },
  async handler(input, ctx) {
    const r = await ctx.services.ai.get(ctx.project!.id, input.observation_id);
    if (!r) throw new NotFoundError('The observation', 'observation_id');
    return {
      ...observationRow(r),
      input_json: jsonObject(r.input_json),
      output_json: jsonObject(r.output_json),
      tags: tagsMap(r.tags),
      attributes: jsonObject(r.attributes),
      cost_source: r.cost_source,
      privacy_mode: r.f_privacy === 1,
    };
  },
});

// `export` is a reserved word: exported by name so the client's method is `agentObservations.export`.
export { exportGenerations as export };
