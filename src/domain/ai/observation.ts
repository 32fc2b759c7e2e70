/**
 * Agent observations and scores as every ingest path produces them (OTLP GenAI / OpenInference /
 * Langfuse spans, the Langfuse legacy batch, our own JSON batch), and the one step that turns a
 * draft into the stored row: cost from the price table, quality flags, privacy withholding.
 */
import { costFromTable } from './prices.js';

export const OBSERVATION_TYPES = ['generation', 'tool_call', 'retrieval', 'agent_step', 'agent_session'] as const;
export type ObservationType = (typeof OBSERVATION_TYPES)[number];
export const SCORE_SOURCES = ['api', 'eval', 'annotation'] as const;
export const SCORE_DATA_TYPES = ['numeric', 'categorical', 'boolean'] as const;

/** One chat message in the stored (OpenAI-like) shape every source is normalized to. */
export interface ChatMessage {
  role: string;
  content: string | null;
  tool_calls?: { id: string; name: string; arguments: string }[];
  tool_call_id?: string;
  reasoning?: string;
}

/** Normalized content: chat messages (with the system prompt apart) or any other value. */
export interface Content {
  system?: string;
  messages?: ChatMessage[];
  value?: unknown;
}

export interface ObservationDraft {
  observation_id: string;
  parent_observation_id: string;
  trace_id: string;
  span_id: string;
  session_id: string;
  user_id: string;
  distinct_id: string;
  visitor_id: string;
  agent_id: string;
  workflow_id: string;
  step_id: string;
  observation_type: ObservationType;
  observation_name: string;
  /** GenAI operation (`chat`, `embeddings`, …) when known: decides whether a system prompt applies. */
  operation: string;
  status_message: string;
  level: string;
  status: 'ok' | 'error';
  source: string;
  model: string;
  provider: string;
  tool_name: string;
  started_ms: number;
  ended_ms: number;
  prompt_tokens: number | null;
  completion_tokens: number | null;
  total_tokens: number | null;
  cost_usd: number | null;
  environment: string;
  release: string;
  input: Content | null;
  output: Content | null;
  tags: string[];
  attributes: Record<string, unknown>;
  /** Per-observation privacy mode (attribute `sightline.privacy_mode`, batch field `privacy_mode`). */
  privacy_mode: boolean;
}

export interface ScoreDraft {
  score_id: string;
  trace_id: string;
  observation_id: string;
  span_id: string;
  session_id: string;
  user_id: string;
  name: string;
  value: number;
  string_value: string;
  data_type: 'numeric' | 'categorical' | 'boolean';
  source: 'api' | 'eval' | 'annotation';
  comment: string;
  author: string;
  model: string;
  environment: string;
  release: string;
  started_ms: number;
  deleted: boolean;
  metadata: Record<string, unknown>;
}

/** The quality and privacy flags stored with each row (0/1), summed by the rollups. */
export const FLAG_COLUMNS = [
  'f_gen', 'f_gen_ok', 'f_chat', 'f_trace', 'f_input', 'f_system', 'f_output', 'f_model', 'f_tokens', 'f_cost',
  'f_invalid_tokens', 'f_privacy', 'f_content', 'f_reasoning', 'f_tool_payload', 'f_error',
] as const;
export type FlagColumn = (typeof FLAG_COLUMNS)[number];

/** What the repository stores: list fields, JSON columns, flags. */
export interface ObservationRow {
  observation_id: string;
  parent_observation_id: string;
  trace_id: string;
  span_id: string;
  session_id: string;
  user_id: string;
  distinct_id: string;
  visitor_id: string;
  agent_id: string;
  workflow_id: string;
  step_id: string;
  observation_type: ObservationType;
  observation_name: string;
  operation: string;
  message: string;
  level: string;
  status: string;
  source: string;
  model: string;
  provider: string;
  tool_name: string;
  duration_ms: number;
  prompt_tokens: number | null;
  completion_tokens: number | null;
  total_tokens: number | null;
  cost_usd: number | null;
  cost_source: 'sent' | 'price_table' | '';
  started_ms: number;
  received_ms: number;
  environment: string;
  release: string;
  input_json: string;
  output_json: string;
  tags: string;
  attributes: string;
  had_input: number;
  had_output: number;
  had_system: number;
  flags: Record<FlagColumn, 0 | 1>;
}

export const MESSAGE_PREVIEW_CHARS = 500;
/** What privacy mode leaves in place of withheld content. */
export const PRIVACY_MARKER = { redacted: true, reason: 'privacy_mode' } as const;

const CHAT_OPERATIONS = new Set(['chat', 'generate_content', 'invoke_agent']);
const NON_CHAT_OPERATIONS = new Set(['embeddings', 'text_completion']);

function hasContent(c: Content | null): boolean {
  if (!c) return false;
  if (c.system) return true;
  if (c.messages && c.messages.length) return true;
  return c.value !== undefined && c.value !== null && c.value !== '';
}

function hasReasoning(c: Content | null): boolean {
  return !!c?.messages?.some((m) => !!m.reasoning);
}

function hasToolPayload(c: Content | null): boolean {
  return !!c?.messages?.some((m) => (m.tool_calls && m.tool_calls.length > 0) || m.role === 'tool');
}

/** Text of the last assistant message, else of the value: the list row's `message` preview. */
export function outputPreview(c: Content | null): string {
  if (!c) return '';
  if (c.messages?.length) {
    for (let i = c.messages.length - 1; i >= 0; i--) {
      const m = c.messages[i]!;
      if (m.content) return m.content.slice(0, MESSAGE_PREVIEW_CHARS);
      if (m.tool_calls?.length) return m.tool_calls.map((t) => `${t.name}(${t.arguments})`).join(' ').slice(0, MESSAGE_PREVIEW_CHARS);
    }
    return '';
  }
  if (c.value === undefined || c.value === null) return '';
  const s = typeof c.value === 'string' ? c.value : JSON.stringify(c.value);
  return s.slice(0, MESSAGE_PREVIEW_CHARS);
}

function validTokenTotals(p: number | null, c: number | null, t: number | null): boolean {
  for (const v of [p, c, t]) if (v !== null && (!Number.isInteger(v) || v < 0)) return false;
  if (p !== null && c !== null && t !== null && t < p + c) return false;
  return true;
}

export interface FinalizeOptions {
  receivedMs: number;
  /** The project's privacy mode (ai.updateSettings). */
  projectPrivacy: boolean;
}

/**
 * Draft → stored row. Privacy mode (project or observation) withholds input, output, system prompt,
 * tool payloads and the output preview before anything is stored; the JSON columns then hold the
 * PRIVACY_MARKER where content existed, so a reader sees that something was withheld. Quality
 * coverage counts what the instrumentation captured (`had_*`), withheld or not.
 */
export function finalizeObservation(d: ObservationDraft, o: FinalizeOptions): ObservationRow {
  const privacy = d.privacy_mode || o.projectPrivacy;
  const isGen = d.observation_type === 'generation';
  const ok = d.status === 'ok';
  let total = d.total_tokens;
  if (total === null && d.prompt_tokens !== null && d.completion_tokens !== null) total = d.prompt_tokens + d.completion_tokens;
  let cost = d.cost_usd;
  let costSource: ObservationRow['cost_source'] = cost !== null ? 'sent' : '';
  if (cost === null && isGen) {
    cost = costFromTable(d.model, d.prompt_tokens, d.completion_tokens);
    if (cost !== null) costSource = 'price_table';
  }
  const hadInput = hasContent(d.input && { messages: d.input.messages, value: d.input.value });
  const hadSystem = !!d.input?.system;
  const hadOutput = hasContent(d.output);
  const chat = isGen && !NON_CHAT_OPERATIONS.has(d.operation) && (CHAT_OPERATIONS.has(d.operation) || !!d.input?.messages || hadSystem);
  const storedContent = !privacy && (hadInput || hadOutput || hadSystem);
  const flags: Record<FlagColumn, 0 | 1> = {
    f_gen: isGen ? 1 : 0,
    f_gen_ok: isGen && ok ? 1 : 0,
    f_chat: chat ? 1 : 0,
    f_trace: d.trace_id ? 1 : 0,
    f_input: isGen && hadInput ? 1 : 0,
    f_system: chat && hadSystem ? 1 : 0,
    f_output: isGen && ok && hadOutput ? 1 : 0,
    f_model: isGen && !!d.model && !!d.provider ? 1 : 0,
    f_tokens: isGen && ok && d.prompt_tokens !== null && d.completion_tokens !== null ? 1 : 0,
    f_cost: isGen && ok && cost !== null ? 1 : 0,
    f_invalid_tokens: validTokenTotals(d.prompt_tokens, d.completion_tokens, d.total_tokens) ? 0 : 1,
    f_privacy: privacy ? 1 : 0,
    f_content: storedContent ? 1 : 0,
    f_reasoning: !privacy && (hasReasoning(d.input) || hasReasoning(d.output)) ? 1 : 0,
    f_tool_payload: !privacy && (hasToolPayload(d.input) || hasToolPayload(d.output) || (d.observation_type === 'tool_call' && (hadInput || hadOutput))) ? 1 : 0,
    f_error: ok ? 0 : 1,
  };
  const json = (c: Content | null, had: boolean): string => {
    if (privacy) return had ? JSON.stringify(PRIVACY_MARKER) : '{}';
    return c ? JSON.stringify(c) : '{}';
  };
  const message = d.status_message || (privacy ? '' : outputPreview(d.output));
  return {
    observation_id: d.observation_id,
    parent_observation_id: d.parent_observation_id,
    trace_id: d.trace_id,
    span_id: d.span_id,
    session_id: d.session_id,
    user_id: d.user_id,
    distinct_id: d.distinct_id,
    visitor_id: d.visitor_id,
    agent_id: d.agent_id,
    workflow_id: d.workflow_id,
    step_id: d.step_id,
    observation_type: d.observation_type,
    observation_name: d.observation_name,
    operation: d.operation,
    message,
    level: d.level || (ok ? 'info' : 'error'),
    status: d.status,
    source: d.source,
    model: d.model,
    provider: d.provider,
    tool_name: d.tool_name,
    duration_ms: Math.max(0, Math.round(d.ended_ms - d.started_ms)),
    prompt_tokens: d.prompt_tokens,
    completion_tokens: d.completion_tokens,
    total_tokens: total,
    cost_usd: cost,
    cost_source: costSource,
    started_ms: d.started_ms,
    received_ms: o.receivedMs,
    environment: d.environment,
    release: d.release,
    input_json: json(d.input, hadInput || hadSystem),
    output_json: json(d.output, hadOutput),
    tags: JSON.stringify(d.tags),
    attributes: JSON.stringify(d.attributes),
    had_input: hadInput ? 1 : 0,
    had_output: hadOutput ? 1 : 0,
    had_system: hadSystem ? 1 : 0,
    flags,
  };
}

export function emptyDraft(over: Partial<ObservationDraft> & Pick<ObservationDraft, 'observation_id' | 'started_ms'>): ObservationDraft {
  return {
    parent_observation_id: '',
    trace_id: '',
    span_id: '',
    session_id: '',
    user_id: '',
    distinct_id: '',
    visitor_id: '',
    agent_id: '',
    workflow_id: '',
    step_id: '',
    observation_type: 'agent_step',
    observation_name: '',
    operation: '',
    status_message: '',
    level: '',
    status: 'ok',
    source: 'api',
    model: '',
    provider: '',
    tool_name: '',
    ended_ms: over.started_ms,
    prompt_tokens: null,
    completion_tokens: null,
    total_tokens: null,
    cost_usd: null,
    environment: '',
    release: '',
    input: null,
    output: null,
    tags: [],
    attributes: {},
    privacy_mode: false,
    ...over,
  };
}
