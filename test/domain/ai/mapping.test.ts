import { describe, expect, it } from 'vitest';
import { observationFromSpan, unflattenIndexed } from '../../../src/domain/ai/otel-mapping.js';
import { costFromTable, priceOf } from '../../../src/domain/ai/prices.js';
import { normalizeContent } from '../../../src/domain/ai/content.js';
import { evaluateGate } from '../../../src/domain/ai/quality.js';
import { openAiChatLine } from '../../../src/domain/ai/chat-export.js';
import { emptyDraft, finalizeObservation } from '../../../src/domain/ai/observation.js';
import type { SpanRecord } from '../../../src/domain/telemetry-types.js';

const span = (attributes: SpanRecord['attributes'], extra: Partial<SpanRecord> = {}): SpanRecord => ({
  trace_id: 'a'.repeat(32),
  span_id: 'b'.repeat(16),
  parent_span_id: null,
  trace_state: '',
  name: 'span',
  kind: 1,
  start_ms: 1000,
  end_ms: 1500,
  status_code: 0,
  status_message: '',
  attributes,
  events: [],
  links: [],
  resource: {},
  scope: { name: '', version: '', attributes: {} },
  service_name: '',
  ...extra,
});

describe('span → observation mapping', () => {
  it('ignores spans without AI attributes, except on the Langfuse endpoint', () => {
    expect(observationFromSpan(span({ 'http.request.method': 'GET' }), 'otlp')).toBeNull();
    expect(observationFromSpan(span({}), 'langfuse')?.draft.observation_type).toBe('agent_step');
  });

  it('maps gen_ai.operation.name and OpenInference span kinds to observation types', () => {
    const type = (a: SpanRecord['attributes']) => observationFromSpan(span(a), 'otlp')?.draft.observation_type;
    expect(type({ 'gen_ai.operation.name': 'embeddings' })).toBe('generation');
    expect(type({ 'gen_ai.operation.name': 'execute_tool' })).toBe('tool_call');
    expect(type({ 'gen_ai.operation.name': 'invoke_agent' })).toBe('agent_step');
    expect(type({ 'openinference.span.kind': 'RETRIEVER' })).toBe('retrieval');
    expect(type({ 'openinference.span.kind': 'LLM' })).toBe('generation');
    expect(type({ 'langfuse.observation.type': 'tool' })).toBe('tool_call');
  });

  it('reads OpenInference indexed messages with tool calls', () => {
    const m = observationFromSpan(
      span({
        'openinference.span.kind': 'LLM',
        'llm.output_messages.0.message.role': 'assistant',
        'llm.output_messages.0.message.tool_calls.0.tool_call.id': 'c1',
        'llm.output_messages.0.message.tool_calls.0.tool_call.function.name': 'f',
        'llm.output_messages.0.message.tool_calls.0.tool_call.function.arguments': '{}',
      }),
      'otlp',
    )!;
    expect(m.draft.output).toEqual({ messages: [{ role: 'assistant', content: null, tool_calls: [{ id: 'c1', name: 'f', arguments: '{}' }] }] });
  });

  it('unflattens indexed attributes into nested objects', () => {
    expect(unflattenIndexed({ 'p.0.role': 'user', 'p.1.content': 'x', 'p.1.role': 'assistant' }, 'p.')).toEqual([{ role: 'user' }, { content: 'x', role: 'assistant' }]);
  });

  it('keeps content out of the attributes map', () => {
    const m = observationFromSpan(span({ 'gen_ai.request.model': 'm', 'gen_ai.prompt.0.content': 'secret', 'gen_ai.input.messages': '[]' }), 'otlp')!;
    expect(Object.keys(m.draft.attributes)).toEqual(['gen_ai.request.model']);
  });
});

describe('price table', () => {
  it('matches the longest model prefix, dated and provider-prefixed names included', () => {
    expect(priceOf('gpt-4o-mini-2024-07-18')?.model).toBe('gpt-4o-mini');
    expect(priceOf('openai/gpt-4o')?.model).toBe('gpt-4o');
    expect(priceOf('gpt-4oo')).toBeNull();
    expect(costFromTable('gpt-4o', 1_000_000, 1_000_000)).toBe(12.5);
    expect(costFromTable('unknown', 10, 10)).toBeNull();
  });
});

describe('content normalization', () => {
  it('turns GenAI parts, OpenAI messages and plain values into one shape', () => {
    expect(normalizeContent('[{"role":"system","content":"s"},{"role":"user","content":[{"type":"text","text":"hi"}]}]')).toEqual({ system: 's', messages: [{ role: 'user', content: 'hi' }] });
    expect(normalizeContent([{ role: 'assistant', parts: [{ type: 'reasoning', content: 'think' }, { type: 'text', content: 'ok' }] }])).toEqual({
      messages: [{ role: 'assistant', content: 'ok', reasoning: 'think' }],
    });
    expect(normalizeContent('plain')).toEqual({ value: 'plain' });
  });
});

describe('finalizeObservation', () => {
  it('withholds content in privacy mode but counts what was captured', () => {
    const r = finalizeObservation(
      emptyDraft({ observation_id: 'x', started_ms: 0, observation_type: 'generation', operation: 'chat', input: { system: 's', messages: [{ role: 'user', content: 'q' }] }, output: { value: 'a' }, privacy_mode: true }),
      { receivedMs: 0, projectPrivacy: false },
    );
    expect(r.input_json).toBe('{"redacted":true,"reason":"privacy_mode"}');
    expect(r.message).toBe('');
    expect(r.flags).toMatchObject({ f_input: 1, f_system: 1, f_output: 1, f_content: 0, f_privacy: 1 });
  });

  it('flags token totals below input + output, and negative counts', () => {
    const f = (p: number, c: number, t: number | null) => finalizeObservation(emptyDraft({ observation_id: 'x', started_ms: 0, prompt_tokens: p, completion_tokens: c, total_tokens: t }), { receivedMs: 0, projectPrivacy: false }).flags.f_invalid_tokens;
    expect(f(10, 5, 15)).toBe(0);
    expect(f(10, 5, null)).toBe(0);
    expect(f(10, 5, 12)).toBe(1);
    expect(f(-1, 5, null)).toBe(1);
  });
});

describe('quality gate', () => {
  const report = {
    total_observations: 10,
    invalid_token_totals: 0,
    coverage: { cost: { percent: 50, eligible: 4 }, system_prompts: { percent: null, eligible: 0 } },
    privacy_posture: { observations: 10, privacy_mode: { count: 10 }, content_bearing: { percent: 0 } },
    scores: { count: 2, scored_observations: 1 },
  };
  it('ignores dimensions nothing is eligible for', () => {
    expect(evaluateGate(report, { threshold: 50, require_privacy_mode: true })).toEqual({ passed: true, failures: [] });
    expect(evaluateGate(report, { threshold: 51 }).failures).toEqual(['cost coverage 50% is below the threshold 51%']);
  });
});

describe('openai-chat lines', () => {
  it('builds system, user and assistant messages with OpenAI tool calls, and skips withheld content', () => {
    expect(
      openAiChatLine({
        input_json: { system: 's', messages: [{ role: 'user', content: 'q' }] },
        output_json: { messages: [{ role: 'assistant', content: null, tool_calls: [{ id: 'c', name: 'f', arguments: '{}' }] }] },
      }),
    ).toEqual({
      messages: [
        { role: 'system', content: 's' },
        { role: 'user', content: 'q' },
        { role: 'assistant', content: null, tool_calls: [{ id: 'c', type: 'function', function: { name: 'f', arguments: '{}' } }] },
      ],
    });
    expect(openAiChatLine({ input_json: { redacted: true }, output_json: { redacted: true } })).toBeNull();
  });
});
