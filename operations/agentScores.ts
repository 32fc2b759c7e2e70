import { z } from 'zod';
import { defineOperation } from './define.js';
import { offsetPagination, projectId, toIso } from './shared.js';
import { aiWindow, aiWindowParams, optText, windowError, windowOut, windowSchema } from './ai-common.js';
import { SCORE_DATA_TYPES, SCORE_SOURCES } from '../src/domain/ai/observation.js';

const MAX_DAYS = 90;

const filters = {
  ...aiWindowParams('24 hours', '90 days'),
  trace_id: optText(128, 'Trace id.'),
  observation_id: optText(256, 'Observation id.'),
  session_id: optText(256, 'Session id.'),
  user_id: optText(256, 'User id.'),
  name: optText(256, 'Score name.'),
  source: z.enum(SCORE_SOURCES).optional(),
  data_type: z.enum(SCORE_DATA_TYPES).optional(),
};

const scoreRow = z.object({
  score_id: z.string(),
  trace_id: z.string(),
  observation_id: z.string(),
  span_id: z.string(),
  session_id: z.string(),
  user_id: z.string(),
  name: z.string(),
  value: z.number().describe('Categorical: 0; boolean: 1 or 0.'),
  string_value: z.string().describe('Label of a categorical score; empty otherwise.'),
  data_type: z.enum(SCORE_DATA_TYPES),
  source: z.enum(SCORE_SOURCES),
  comment: z.string(),
  author: z.string(),
  model: z.string(),
  environment: z.string(),
  release: z.string(),
  started_at: z.string(),
  received_at: z.string(),
});

type Input = { fromMs: number; toMs: number } & Record<string, unknown>;
const filterOf = (input: Record<string, unknown>, w: { fromMs: number; toMs: number }): Input => {
  const f: Input = { fromMs: w.fromMs, toMs: w.toMs };
  for (const k of ['trace_id', 'observation_id', 'session_id', 'user_id', 'name', 'source', 'data_type']) if (input[k] !== undefined) f[k] = input[k];
  return f;
};

export const list = defineOperation({
  operationId: 'agentScores.list',
  tag: 'agentScores',
  summary: 'List agent scores (evaluations, annotations, API scores), newest first',
  description:
    'Current scores whose time is in the window (default the last 24 hours, at most 90 days). A later write with the same score id replaces the earlier value; a write with `deleted: true` removes it (tombstone). ' +
    'Scores come from our batch endpoint, Langfuse `score-create`, and OpenTelemetry `gen_ai.evaluation.result` span events. Offset pagination with `total`.',
  method: 'GET',
  path: '/v1/projects/{project_id}/agent-scores',
  scopes: ['read'],
  risk: 'read',
  sensitive: false,
  projectScoped: true,
  input: z.strictObject({ project_id: projectId, ...filters, ...offsetPagination(50, 100) }),
  output: z.object({ data: z.array(scoreRow), total: z.number().int(), limit: z.number().int(), offset: z.number().int(), ...windowSchema }),
  errors: [windowError(MAX_DAYS)],
  example: { name: 'helpfulness', source: 'eval' },
  async handler(input, ctx) {
    const w = aiWindow(input, ctx.now(), 1, MAX_DAYS);
    const { rows, total } = await ctx.services.ai.listScores(ctx.project!.id, filterOf(input, w) as never, input.limit, input.offset);
    return {
      data: rows.map((s) => ({
        score_id: s.score_id,
        trace_id: s.trace_id,
        observation_id: s.observation_id,
        span_id: s.span_id,
        session_id: s.session_id,
        user_id: s.user_id,
        name: s.name,
        value: s.value,
        string_value: s.string_value,
        data_type: s.data_type as (typeof SCORE_DATA_TYPES)[number],
        source: s.source as (typeof SCORE_SOURCES)[number],
        comment: s.comment,
        author: s.author,
        model: s.model,
        environment: s.environment,
        release: s.release,
        started_at: toIso(s.started_ms)!,
        received_at: toIso(s.received_ms)!,
      })),
      total,
      limit: input.limit,
      offset: input.offset,
      ...windowOut(w),
    };
  },
});

export const summary = defineOperation({
  operationId: 'agentScores.summary',
  tag: 'agentScores',
  summary: 'Summarize agent scores per name (and per label for categorical scores)',
  description:
    'Same filters as agentScores.list without paging. One row per score name and data type with count, average, minimum and maximum; categorical scores give one row per label (`string_value`) with the three numeric fields null. Only current values count (replaced and deleted scores do not). The window is at most 90 days (default the last 24 hours), as for agentScores.list.',
  method: 'GET',
  path: '/v1/projects/{project_id}/agent-scores/summary',
  scopes: ['read'],
  risk: 'read',
  sensitive: false,
  projectScoped: true,
  input: z.strictObject({ project_id: projectId, ...filters }),
  output: z.object({
    data: z.array(
      z.object({
        name: z.string(),
        data_type: z.enum(SCORE_DATA_TYPES),
        string_value: z.string(),
        count: z.number().int(),
        avg_value: z.number().nullable(),
        min_value: z.number().nullable(),
        max_value: z.number().nullable(),
      }),
    ),
    ...windowSchema,
  }),
  errors: [windowError(MAX_DAYS)],
  example: { name: 'helpfulness' },
  async handler(input, ctx) {
    const w = aiWindow(input, ctx.now(), 1, MAX_DAYS);
    const rows = await ctx.services.ai.scoreSummary(ctx.project!.id, filterOf(input, w) as never);
    return { data: rows.map((r) => ({ ...r, data_type: r.data_type as (typeof SCORE_DATA_TYPES)[number] })), ...windowOut(w) };
  },
});
