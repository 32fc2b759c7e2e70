import { z } from 'zod';
import { ValidationError } from '../src/core/errors.js';
import { resolveWindow, WindowError, DAY_MS, type ResolvedWindow } from '../src/domain/metrics/window.js';
import type { StoredObservation } from '../src/storage/ai-repo.js';
import { toIso } from './shared.js';

/** Shared by the AI tag files (agentObservations, agentScores, ai): windows, text params, row mapping. */

export const optText = (max: number, describe: string) =>
  z
    .string()
    .max(max, `must be at most ${max} characters`)
    .optional()
    .transform((v) => (v === undefined || v === '' ? undefined : v))
    .describe(describe);

export const aiWindowParams = (dflt: string, max: string) => ({
  from: optText(64, `Window start, ISO 8601 with a timezone (e.g. 2026-01-31T12:00:00Z). Default: ${dflt} before \`to\`; at most ${max}.`),
  to: optText(64, 'Window end (exclusive), ISO 8601 with a timezone. Default: now.'),
});

export function aiWindow(input: { from?: string; to?: string }, now: number, defaultDays: number, maxDays: number): ResolvedWindow {
  try {
    return resolveWindow({ from: input.from, to: input.to }, { now, defaultMs: defaultDays * DAY_MS, maxMs: maxDays * DAY_MS });
  } catch (err) {
    if (err instanceof WindowError) throw new ValidationError(err.message, err.param === 'granularity' ? undefined : err.param);
    throw err;
  }
}

export const windowOut = (w: ResolvedWindow) => ({ from: toIso(w.fromMs)!, to: toIso(w.toMs)! });
export const windowSchema = { from: z.string().describe('Effective window start (ISO 8601).'), to: z.string().describe('Effective window end, exclusive (ISO 8601).') };
export const windowError = (maxDays: number) => ({ status: 400, code: 'invalid_parameter', when: `bad timestamp or timezone, \`from\` not before \`to\`, window above ${maxDays} days, or another parameter out of range` });

export const observationRowSchema = z.object({
  observation_id: z.string(),
  parent_observation_id: z.string().describe('Parent observation (empty for a root).'),
  trace_id: z.string(),
  span_id: z.string(),
  session_id: z.string(),
  user_id: z.string(),
  distinct_id: z.string(),
  visitor_id: z.string(),
  agent_id: z.string(),
  workflow_id: z.string(),
  step_id: z.string(),
  observation_type: z.enum(['generation', 'tool_call', 'retrieval', 'agent_step', 'agent_session']),
  observation_name: z.string(),
  message: z.string().describe('Error message, else a preview of the output (empty when withheld by privacy mode).'),
  level: z.string().describe('`debug`, `info`, `warning` or `error`.'),
  status: z.string().describe('`ok` or `error`.'),
  source: z.string().describe('Where it came from: `otel`, `openinference`, `langfuse`, `api`.'),
  model: z.string(),
  provider: z.string(),
  tool_name: z.string().describe('Empty string when none.'),
  duration_ms: z.number().int(),
  prompt_tokens: z.number().int().describe('Input tokens (0 when not reported).'),
  completion_tokens: z.number().int().describe('Output tokens (0 when not reported).'),
  total_tokens: z.number().int(),
  cost_usd: z.number().describe('Sent cost, else computed from the bundled price table (0 when unknown).'),
  started_at: z.string(),
  received_at: z.string(),
  environment: z.string(),
  release: z.string(),
});

const safeJson = (s: string, dflt: unknown) => {
  try {
    return JSON.parse(s);
  } catch {
    return dflt;
  }
};

export function tagsMap(json: string): Record<string, string> {
  const v = safeJson(json, []);
  if (Array.isArray(v)) return Object.fromEntries(v.map((t) => [String(t), 'true']));
  if (v && typeof v === 'object') return Object.fromEntries(Object.entries(v).map(([k, x]) => [k, String(x)]));
  return {};
}
export const jsonObject = (s: string): Record<string, unknown> => {
  const v = safeJson(s, {});
  return v && typeof v === 'object' && !Array.isArray(v) ? v : { value: v };
};

export function observationRow(r: StoredObservation): z.input<typeof observationRowSchema> {
  return {
    observation_id: r.observation_id,
    parent_observation_id: r.parent_observation_id,
    trace_id: r.trace_id,
    span_id: r.span_id,
    session_id: r.session_id,
    user_id: r.user_id,
    distinct_id: r.distinct_id,
    visitor_id: r.visitor_id,
    agent_id: r.agent_id,
    workflow_id: r.workflow_id,
    step_id: r.step_id,
    observation_type: r.observation_type,
    observation_name: r.observation_name,
    message: r.message,
    level: r.level,
    status: r.status,
    source: r.source,
    model: r.model,
    provider: r.provider,
    tool_name: r.tool_name,
    duration_ms: Math.round(r.duration_ms),
    prompt_tokens: r.prompt_tokens ?? 0,
    completion_tokens: r.completion_tokens ?? 0,
    total_tokens: r.total_tokens ?? 0,
    cost_usd: r.cost_usd ?? 0,
    started_at: toIso(r.started_ms)!,
    received_at: toIso(r.received_ms)!,
    environment: r.environment,
    release: r.release,
  };
}

export const round = (n: number, digits = 10) => Math.round(n * 10 ** digits) / 10 ** digits;
