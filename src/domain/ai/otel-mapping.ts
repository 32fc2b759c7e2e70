/**
 * OTLP span → agent observation (and `gen_ai.evaluation.result` events → scores).
 *
 * Understood, newest first (README "AI agent observability" lists each mapping):
 * - OpenTelemetry GenAI conventions: `gen_ai.operation.name`, `gen_ai.provider.name`,
 *   `gen_ai.request.model` / `gen_ai.response.model`, `gen_ai.usage.input_tokens` / `output_tokens`,
 *   `gen_ai.conversation.id`, `gen_ai.agent.id` / `name`, `gen_ai.tool.name` / `gen_ai.tool.call.id`
 *   / `arguments` / `result`, `gen_ai.input.messages`, `gen_ai.output.messages`,
 *   `gen_ai.system_instructions`, `gen_ai.evaluation.result` events;
 * - their older names the SDKs still send: `gen_ai.system`, `gen_ai.usage.prompt_tokens` /
 *   `completion_tokens`, `gen_ai.prompt.N.*` / `gen_ai.completion.N.*`, the `gen_ai.*.message` /
 *   `gen_ai.choice` / `gen_ai.content.*` events;
 * - OpenInference (Arize Phoenix): `openinference.span.kind`, `llm.model_name`, `llm.provider`,
 *   `llm.system`, `llm.token_count.*`, `llm.input_messages.N.*`, `llm.output_messages.N.*`,
 *   `llm.cost.total`, `input.value`, `output.value`, `tool.name`, `session.id`, `user.id`, `tag.tags`;
 * - Langfuse's OTel attributes (`langfuse.observation.*`, `langfuse.trace.*`, `langfuse.session.id`,
 *   `langfuse.user.id`, `langfuse.release`, `langfuse.environment`).
 */
import { createHash } from 'node:crypto';
import type { AttrValue, Attributes, SpanRecord } from '../telemetry-types.js';
import { contentFromMessages, maybeJson, mergeContent, normalizeContent, normalizeMessage, systemText } from './content.js';
import { emptyDraft, OBSERVATION_TYPES, type ChatMessage, type Content, type ObservationDraft, type ObservationType, type ScoreDraft } from './observation.js';

/** Attribute keys (and prefixes) that carry prompt or output content: withheld in privacy mode, never copied into `attributes`. */
const CONTENT_KEYS = new Set([
  'gen_ai.input.messages', 'gen_ai.output.messages', 'gen_ai.system_instructions', 'gen_ai.prompt', 'gen_ai.completion',
  'gen_ai.tool.call.arguments', 'gen_ai.tool.call.result', 'input.value', 'output.value', 'llm.prompts', 'llm.tools',
  'langfuse.observation.input', 'langfuse.observation.output', 'langfuse.trace.input', 'langfuse.trace.output', 'tool.parameters',
  'gen_ai.tool.definitions', 'sightline.input', 'sightline.output',
]);
const CONTENT_PREFIXES = ['gen_ai.prompt.', 'gen_ai.completion.', 'llm.input_messages.', 'llm.output_messages.', 'llm.prompts.', 'llm.tools.', 'embedding.embeddings.', 'retrieval.documents.'];
/** Span events that carry content (older GenAI conventions). */
const CONTENT_EVENTS = new Set(['gen_ai.system.message', 'gen_ai.user.message', 'gen_ai.assistant.message', 'gen_ai.tool.message', 'gen_ai.choice', 'gen_ai.content.prompt', 'gen_ai.content.completion', 'gen_ai.client.inference.operation.details']);

export function isContentKey(k: string): boolean {
  if (CONTENT_KEYS.has(k)) return true;
  for (const p of CONTENT_PREFIXES) if (k.startsWith(p)) return true;
  return false;
}
export function isContentEvent(name: string): boolean {
  return CONTENT_EVENTS.has(name);
}

const isAiKey = (k: string) => k.startsWith('gen_ai.') || k.startsWith('llm.') || k === 'openinference.span.kind' || k.startsWith('langfuse.observation.') || k.startsWith('langfuse.trace.');

/** Does this span describe AI work? (Any GenAI, OpenInference or Langfuse attribute.) */
export function isAiSpan(a: Attributes): boolean {
  for (const k in a) if (isAiKey(k)) return true;
  return false;
}

/** Indexed-message prefixes (older GenAI, OpenInference) present among a span's attribute keys. */
const P_PROMPT = 1;
const P_COMPLETION = 2;
const P_OI_IN = 4;
const P_OI_OUT = 8;

/**
 * One pass over a span's attribute keys: is it AI work (cheap early-out for every other span),
 * which indexed-message prefixes occur, and the attributes without content (what the observation keeps).
 */
function scanAttributes(a: Attributes, source: string): { ai: boolean; prefixes: number; rest: Record<string, unknown> } | null {
  let ai = source === 'langfuse' || a['sightline.observation_type'] !== undefined;
  let prefixes = 0;
  for (const k in a) {
    if (isAiKey(k)) {
      ai = true;
      break;
    }
  }
  if (!ai) return null;
  const rest: Record<string, unknown> = {};
  for (const k in a) {
    if (CONTENT_KEYS.has(k)) continue;
    const c = k.charCodeAt(0);
    if (c === 103 /* g */ || c === 108 /* l */ || c === 101 /* e */ || c === 114 /* r */) {
      if (k.startsWith('gen_ai.prompt.')) (prefixes |= P_PROMPT);
      else if (k.startsWith('gen_ai.completion.')) (prefixes |= P_COMPLETION);
      else if (k.startsWith('llm.input_messages.')) (prefixes |= P_OI_IN);
      else if (k.startsWith('llm.output_messages.')) (prefixes |= P_OI_OUT);
      else if (!isContentKey(k)) {
        rest[k] = a[k];
        continue;
      }
      continue;
    }
    rest[k] = a[k];
  }
  return { ai, prefixes, rest };
}

export function privacyRequested(a: Attributes): boolean {
  const v = a['sightline.privacy_mode'];
  return v === true || v === 'true' || v === 1;
}

const s = (v: AttrValue | undefined): string => (typeof v === 'string' ? v : typeof v === 'number' || typeof v === 'boolean' ? String(v) : '');
const first = (a: Attributes, keys: readonly string[]): string => {
  for (const k of keys) {
    const v = s(a[k]);
    if (v) return v;
  }
  return '';
};
const num = (v: unknown): number | null => {
  const n = typeof v === 'string' && v.trim() !== '' ? Number(v) : v;
  return typeof n === 'number' && Number.isFinite(n) ? n : null;
};
const firstNum = (a: Attributes, keys: readonly string[]): number | null => {
  for (const k of keys) {
    const n = num(a[k]);
    if (n !== null) return n;
  }
  return null;
};

/** Flat `prefix.N.a.b` attributes → an array of nested objects (index N). */
export function unflattenIndexed(a: Attributes, prefix: string): Record<string, unknown>[] {
  const out: Record<string, unknown>[] = [];
  for (const k in a) {
    if (!k.startsWith(prefix)) continue;
    const rest = k.slice(prefix.length).split('.');
    const idx = Number(rest[0]);
    if (!Number.isInteger(idx) || idx < 0 || idx > 10_000) continue;
    let node: Record<string, unknown> | unknown[] = (out[idx] ??= {});
    for (let i = 1; i < rest.length; i++) {
      const seg = rest[i]!;
      const last = i === rest.length - 1;
      const nextIsIndex = !last && /^\d+$/.test(rest[i + 1]!);
      const key: string | number = Array.isArray(node) ? Number(seg) : seg;
      if (last) (node as Record<string | number, unknown>)[key] = a[k];
      else {
        const container = node as Record<string | number, unknown>;
        container[key] ??= nextIsIndex ? [] : {};
        node = container[key] as Record<string, unknown>;
      }
    }
  }
  return out.filter(Boolean);
}

/** OpenInference `llm.*_messages.N.message.*` objects → ChatMessages. */
function openInferenceMessages(items: Record<string, unknown>[]): ChatMessage[] {
  const out: ChatMessage[] = [];
  for (const it of items) {
    const m = (it.message ?? {}) as Record<string, unknown>;
    const contents = Array.isArray(m.contents)
      ? (m.contents as Record<string, unknown>[]).map((c) => (c?.message_content ?? {}) as Record<string, unknown>).map((c) => ({ type: 'text', text: c.text }))
      : undefined;
    const toolCalls = Array.isArray(m.tool_calls)
      ? (m.tool_calls as Record<string, unknown>[]).map((c) => (c?.tool_call ?? {}) as Record<string, unknown>).map((c) => ({ id: c.id, function: c.function }))
      : undefined;
    const msg = normalizeMessage({ role: m.role, content: contents ?? m.content, tool_calls: toolCalls, tool_call_id: m.tool_call_id });
    if (msg) out.push(msg);
  }
  return out;
}

function legacyGenAiMessages(items: Record<string, unknown>[]): ChatMessage[] {
  return items.map((m) => normalizeMessage({ ...m, role: m.role ?? 'assistant', content: maybeJsonText(m.content) })).filter((m): m is ChatMessage => m !== null);
}
const maybeJsonText = (v: unknown) => (typeof v === 'string' ? v : v === undefined ? null : JSON.stringify(v));

function messagesContent(msgs: ChatMessage[], system?: string): Content | null {
  if (!msgs.length && !system) return null;
  return contentFromMessages(msgs, system || undefined);
}

function typeOf(a: Attributes, source: string, ai: boolean): ObservationType | null {
  const own = s(a['sightline.observation_type']);
  if ((OBSERVATION_TYPES as readonly string[]).includes(own)) return own as ObservationType;
  const lf = s(a['langfuse.observation.type']).toLowerCase();
  if (lf) return lf === 'generation' || lf === 'embedding' ? 'generation' : lf === 'tool' ? 'tool_call' : lf === 'retriever' ? 'retrieval' : 'agent_step';
  const op = s(a['gen_ai.operation.name']).toLowerCase();
  if (op) {
    if (['chat', 'text_completion', 'generate_content', 'embeddings', 'completion'].includes(op)) return 'generation';
    if (op === 'execute_tool') return 'tool_call';
    if (op === 'retrieval' || op === 'retrieve' || op === 'search') return 'retrieval';
    if (op === 'invoke_workflow' || op === 'session') return 'agent_session';
    return 'agent_step';
  }
  const oi = s(a['openinference.span.kind']).toUpperCase();
  if (oi) return oi === 'LLM' || oi === 'EMBEDDING' ? 'generation' : oi === 'TOOL' ? 'tool_call' : oi === 'RETRIEVER' || oi === 'RERANKER' ? 'retrieval' : 'agent_step';
  if (a['gen_ai.request.model'] !== undefined || a['llm.model_name'] !== undefined || a['gen_ai.response.model'] !== undefined) return 'generation';
  if (a['gen_ai.tool.name'] !== undefined) return 'tool_call';
  if (ai || source === 'langfuse') return 'agent_step';
  return null;
}

function usageDetails(v: AttrValue | undefined): { input: number | null; output: number | null; total: number | null } {
  const u = maybeJson(v) as Record<string, unknown> | undefined;
  if (!u || typeof u !== 'object') return { input: null, output: null, total: null };
  return {
    input: num(u.input ?? u.prompt_tokens ?? u.input_tokens ?? u.promptTokens),
    output: num(u.output ?? u.completion_tokens ?? u.output_tokens ?? u.completionTokens),
    total: num(u.total ?? u.total_tokens ?? u.totalTokens),
  };
}

function tagsOf(a: Attributes): string[] {
  for (const k of ['langfuse.trace.tags', 'tag.tags', 'sightline.tags']) {
    const v = maybeJson(a[k]);
    if (Array.isArray(v)) return v.map(String);
    if (typeof v === 'string' && v) return v.split(',').map((x) => x.trim()).filter(Boolean);
  }
  return [];
}

/** Attribute keys read in order of preference (hoisted: the mapping runs for every AI span). */
const K_PROMPT = ['gen_ai.usage.input_tokens', 'gen_ai.usage.prompt_tokens', 'llm.token_count.prompt', 'llm.usage.prompt_tokens'];
const K_COMPLETION = ['gen_ai.usage.output_tokens', 'gen_ai.usage.completion_tokens', 'llm.token_count.completion', 'llm.usage.completion_tokens'];
const K_TOTAL = ['gen_ai.usage.total_tokens', 'llm.token_count.total', 'llm.usage.total_tokens'];
const K_COST = ['sightline.cost_usd', 'gen_ai.usage.cost', 'llm.cost.total'];
const K_SESSION = ['gen_ai.conversation.id', 'session.id', 'langfuse.session.id', 'sightline.session_id'];
const K_USER = ['user.id', 'langfuse.user.id', 'enduser.id', 'sightline.user_id'];
const K_DISTINCT = ['sightline.distinct_id', 'distinct_id', 'posthog.distinct_id'];
const K_VISITOR = ['sightline.visitor_id', 'visitor.id'];
const K_AGENT = ['gen_ai.agent.id', 'gen_ai.agent.name', 'agent.id', 'sightline.agent_id'];
const K_WORKFLOW = ['sightline.workflow_id', 'workflow.id', 'gen_ai.workflow.name', 'langfuse.trace.name'];
const K_STEP = ['sightline.step_id', 'gen_ai.step.id'];
const K_MODEL = ['gen_ai.response.model', 'gen_ai.request.model', 'llm.model_name', 'langfuse.observation.model.name', 'embedding.model_name'];
const K_PROVIDER = ['gen_ai.provider.name', 'gen_ai.system', 'llm.provider', 'llm.system'];
const K_TOOL = ['gen_ai.tool.name', 'tool.name'];
const K_ENV = ['langfuse.environment'];
const K_RELEASE = ['langfuse.release'];

const LANGFUSE_LEVELS: Record<string, string> = { DEBUG: 'debug', DEFAULT: 'info', WARNING: 'warning', ERROR: 'error' };

export interface SpanMapping {
  draft: ObservationDraft;
  scores: ScoreDraft[];
}

/**
 * Map one span, or return null when it is not AI work. `source` is the ingest route
 * (`otlp`, `sentry`, `langfuse`): every span sent to the Langfuse endpoint is an observation.
 */
export function observationFromSpan(sp: SpanRecord, source: string): SpanMapping | null {
  const a = sp.attributes;
  const scan = scanAttributes(a, source);
  if (!scan) return null;
  const type = typeOf(a, source, scan.ai);
  if (!type) return null;
  const { prefixes } = scan;
  const operation = s(a['gen_ai.operation.name']).toLowerCase() || (s(a['openinference.span.kind']).toUpperCase() === 'EMBEDDING' || s(a['langfuse.observation.type']) === 'embedding' ? 'embeddings' : '');

  // Input
  let input: Content | null = null;
  const sys = systemText(a['gen_ai.system_instructions']);
  if (a['gen_ai.input.messages'] !== undefined) input = normalizeContent(a['gen_ai.input.messages']);
  if (!input && prefixes & P_PROMPT) {
    const legacy = unflattenIndexed(a, 'gen_ai.prompt.');
    if (legacy.length) input = messagesContent(legacyGenAiMessages(legacy.map((m) => ({ ...m, role: m.role ?? 'user' }))));
  }
  if (!input && prefixes & P_OI_IN) {
    const oi = unflattenIndexed(a, 'llm.input_messages.');
    if (oi.length) input = messagesContent(openInferenceMessages(oi));
  }
  if (!input && a['langfuse.observation.input'] !== undefined) input = normalizeContent(a['langfuse.observation.input']);
  if (!input && a['gen_ai.tool.call.arguments'] !== undefined) input = { value: maybeJson(a['gen_ai.tool.call.arguments']) };
  if (!input && a['input.value'] !== undefined) input = normalizeContent(a['input.value']);
  if (!input && a['sightline.input'] !== undefined) input = normalizeContent(a['sightline.input']);
  if (sys) input = { ...(input ?? { messages: [] }), system: input?.system ? `${sys}\n${input.system}` : sys };

  // Output
  let output: Content | null = null;
  if (a['gen_ai.output.messages'] !== undefined) output = normalizeContent(a['gen_ai.output.messages']);
  if (!output && prefixes & P_COMPLETION) {
    const legacy = unflattenIndexed(a, 'gen_ai.completion.');
    if (legacy.length) output = messagesContent(legacyGenAiMessages(legacy));
  }
  if (!output && prefixes & P_OI_OUT) {
    const oi = unflattenIndexed(a, 'llm.output_messages.');
    if (oi.length) output = messagesContent(openInferenceMessages(oi));
  }
  if (!output && a['langfuse.observation.output'] !== undefined) output = normalizeContent(a['langfuse.observation.output']);
  if (!output && a['gen_ai.tool.call.result'] !== undefined) output = { value: maybeJson(a['gen_ai.tool.call.result']) };
  if (!output && a['output.value'] !== undefined) output = normalizeContent(a['output.value']);
  if (!output && a['sightline.output'] !== undefined) output = normalizeContent(a['sightline.output']);

  // Older GenAI content events.
  const scores: ScoreDraft[] = [];
  let evIn: ChatMessage[] = [];
  let evSystem = '';
  const evOut: ChatMessage[] = [];
  sp.events.forEach((ev, i) => {
    const ea = ev.attributes;
    if (ev.name === 'gen_ai.evaluation.result') {
      const name = s(ea['gen_ai.evaluation.name']);
      if (!name) return;
      const value = num(ea['gen_ai.evaluation.score.value']);
      const label = s(ea['gen_ai.evaluation.score.label']);
      scores.push({
        score_id: createHash('sha1').update(`${sp.trace_id}:${sp.span_id}:${i}:${name}`).digest('hex').slice(0, 32),
        trace_id: sp.trace_id,
        observation_id: sp.span_id,
        span_id: sp.span_id,
        session_id: '',
        user_id: '',
        name,
        value: value ?? 0,
        string_value: value === null ? label : '',
        data_type: value === null ? 'categorical' : 'numeric',
        source: 'eval',
        comment: s(ea['gen_ai.evaluation.explanation']),
        author: '',
        model: '',
        environment: '',
        release: '',
        started_ms: ev.time_ms || sp.end_ms,
        deleted: false,
        metadata: {},
      });
      return;
    }
    const content = ea['content'] ?? ea['gen_ai.prompt'] ?? ea['gen_ai.completion'];
    if (ev.name === 'gen_ai.system.message') evSystem += s(content);
    else if (ev.name === 'gen_ai.user.message' || ev.name === 'gen_ai.assistant.message' || ev.name === 'gen_ai.tool.message') {
      const m = normalizeMessage({ role: ev.name.split('.')[1], content: maybeJsonText(content), tool_calls: maybeJson(ea['tool_calls']), tool_call_id: ea['id'] });
      if (m) evIn.push(m);
    } else if (ev.name === 'gen_ai.choice') {
      const m = normalizeMessage(maybeJson(ea['message']) ?? { role: 'assistant', content: s(content) });
      if (m) evOut.push(m);
    } else if (ev.name === 'gen_ai.content.prompt') {
      const c = normalizeContent(ea['gen_ai.prompt']);
      if (c?.messages) evIn = [...evIn, ...c.messages];
      if (c?.system) evSystem += c.system;
    } else if (ev.name === 'gen_ai.content.completion') {
      const c = normalizeContent(ea['gen_ai.completion']);
      if (c?.messages) evOut.push(...c.messages);
    }
  });
  if (!input && (evIn.length || evSystem)) input = messagesContent(evIn, evSystem);
  else if (input && evSystem && !input.system) input = { ...input, system: evSystem };
  if (!output && evOut.length) output = mergeContent(null, { messages: evOut });

  // Usage and cost
  const lfUsage = usageDetails(a['langfuse.observation.usage_details']);
  const prompt = firstNum(a, K_PROMPT) ?? lfUsage.input;
  const completion = firstNum(a, K_COMPLETION) ?? lfUsage.output;
  const total = firstNum(a, K_TOTAL) ?? lfUsage.total;
  const lfCost = maybeJson(a['langfuse.observation.cost_details']) as Record<string, unknown> | undefined;
  const cost = firstNum(a, K_COST) ?? (lfCost && typeof lfCost === 'object' ? num(lfCost.total) : null);

  const lfLevel = LANGFUSE_LEVELS[s(a['langfuse.observation.level']).toUpperCase()] ?? '';
  const isError = sp.status_code === 2 || lfLevel === 'error';
  const attributes = scan.rest;

  const draft = emptyDraft({
    observation_id: sp.span_id,
    parent_observation_id: sp.parent_span_id ?? '',
    trace_id: sp.trace_id,
    span_id: sp.span_id,
    session_id: first(a, K_SESSION),
    user_id: first(a, K_USER),
    distinct_id: first(a, K_DISTINCT),
    visitor_id: first(a, K_VISITOR),
    agent_id: first(a, K_AGENT),
    workflow_id: first(a, K_WORKFLOW),
    step_id: first(a, K_STEP),
    observation_type: type,
    observation_name: sp.name,
    operation,
    status_message: isError ? sp.status_message || s(a['langfuse.observation.status_message']) || s(a['error.type']) : '',
    level: lfLevel || (isError ? 'error' : 'info'),
    status: isError ? 'error' : 'ok',
    source: source === 'langfuse' ? 'langfuse' : s(a['openinference.span.kind']) ? 'openinference' : 'otel',
    model: first(a, K_MODEL),
    provider: first(a, K_PROVIDER),
    tool_name: first(a, K_TOOL) || (type === 'tool_call' ? sp.name : ''),
    started_ms: sp.start_ms,
    ended_ms: sp.end_ms,
    prompt_tokens: prompt,
    completion_tokens: completion,
    total_tokens: total,
    cost_usd: cost,
    environment: first(a, K_ENV) || s(sp.resource['deployment.environment.name'] ?? sp.resource['deployment.environment']),
    release: first(a, K_RELEASE) || s(sp.resource['service.version']),
    input,
    output,
    tags: tagsOf(a),
    attributes,
    privacy_mode: privacyRequested(a),
  });
  if (draft.tool_name === '' && type === 'tool_call') draft.tool_name = sp.name;
  for (const sc of scores) {
    sc.session_id = draft.session_id;
    sc.user_id = draft.user_id;
    sc.model = draft.model;
    sc.environment = draft.environment;
    sc.release = draft.release;
  }
  return { draft, scores };
}
