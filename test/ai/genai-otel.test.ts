/**
 * A small agent loop instrumented with the real OpenTelemetry SDK using GenAI attributes (current
 * names on one generation, the older names on another), exported over OTLP/protobuf; then read
 * back: list, get, quality percentages (hand-computed below), scores and the session tree.
 */
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { context, SpanKind, SpanStatusCode, trace } from '@opentelemetry/api';
import { BasicTracerProvider, SimpleSpanProcessor } from '@opentelemetry/sdk-trace-base';
import { OTLPTraceExporter } from '@opentelemetry/exporter-trace-otlp-proto';
import { resourceFromAttributes } from '@opentelemetry/resources';
import { api, startTestServer, type TestServer } from '../helpers/server.js';

let t: TestServer;
let P: string;
const ids: Record<string, string> = {};
const get = async (path: string) => {
  const r = await api(t, 'GET', `${P}${path}`, { key: t.keys.admin });
  expect(r.status, `${path}: ${JSON.stringify(r.body)}`).toBe(200);
  return r.body;
};

beforeAll(async () => {
  t = await startTestServer();
  P = `/v1/projects/${t.projectId}`;
  const provider = new BasicTracerProvider({
    resource: resourceFromAttributes({ 'service.name': 'travel-agent', 'deployment.environment.name': 'staging', 'service.version': '2.0.0' }),
    spanProcessors: [new SimpleSpanProcessor(new OTLPTraceExporter({ url: `${t.url}/ingest/v1/traces`, headers: { 'x-service-key': t.keys.ingest } }))],
  });
  const tracer = provider.getTracer('agent-loop');
  const common = { 'gen_ai.conversation.id': 'conv-1', 'user.id': 'user-7', 'gen_ai.agent.id': 'travel-agent' };

  // The agent loop: plan with the model, call a tool (inside an HTTP client span), answer with the model.
  // Distinct start times in the order of the loop, so the tree's order does not depend on the clock's resolution.
  const base = Date.now();
  const at = (n: number) => new Date(base - 10 + n);
  const root = tracer.startSpan('invoke_agent travel-agent', { startTime: at(0), attributes: { ...common, 'gen_ai.operation.name': 'invoke_agent', 'gen_ai.agent.name': 'Travel agent' } });
  ids.root = root.spanContext().spanId;
  const ctx = trace.setSpan(context.active(), root);

  const gen1 = tracer.startSpan('chat gpt-4o-mini', { startTime: at(1),
    kind: SpanKind.CLIENT,
    attributes: {
      ...common,
      'gen_ai.operation.name': 'chat',
      'gen_ai.provider.name': 'openai',
      'gen_ai.request.model': 'gpt-4o-mini',
      'gen_ai.response.model': 'gpt-4o-mini-2024-07-18',
      'gen_ai.usage.input_tokens': 100,
      'gen_ai.usage.output_tokens': 20,
      'gen_ai.system_instructions': JSON.stringify([{ type: 'text', content: 'You are a travel agent.' }]),
      'gen_ai.input.messages': JSON.stringify([{ role: 'user', parts: [{ type: 'text', content: 'Weather in Paris?' }] }]),
      'gen_ai.output.messages': JSON.stringify([
        { role: 'assistant', parts: [{ type: 'tool_call', id: 'call_1', name: 'get_weather', arguments: { city: 'Paris' } }], finish_reason: 'tool_call' },
      ]),
    },
  }, ctx);
  ids.gen1 = gen1.spanContext().spanId;
  gen1.end();

  const http = tracer.startSpan('GET /weather', { startTime: at(2), kind: SpanKind.CLIENT, attributes: { 'http.request.method': 'GET', 'url.path': '/weather' } }, ctx);
  ids.http = http.spanContext().spanId;
  const tool = tracer.startSpan('execute_tool get_weather', { startTime: at(3),
    attributes: {
      ...common,
      'gen_ai.operation.name': 'execute_tool',
      'gen_ai.tool.name': 'get_weather',
      'gen_ai.tool.call.id': 'call_1',
      'gen_ai.tool.call.arguments': '{"city":"Paris"}',
      'gen_ai.tool.call.result': '{"temp_c":18}',
    },
  }, trace.setSpan(ctx, http));
  ids.tool = tool.spanContext().spanId;
  tool.end();
  http.end();

  // Older attribute names (gen_ai.system, prompt_tokens/completion_tokens, gen_ai.prompt.N / completion.N) and an evaluation event.
  const gen2 = tracer.startSpan('chat gpt-4o-mini', { startTime: at(4),
    kind: SpanKind.CLIENT,
    attributes: {
      ...common,
      'gen_ai.system': 'openai',
      'gen_ai.request.model': 'gpt-4o-mini',
      'gen_ai.usage.prompt_tokens': 150,
      'gen_ai.usage.completion_tokens': 30,
      'gen_ai.prompt.0.role': 'user',
      'gen_ai.prompt.0.content': 'Weather in Paris?',
      'gen_ai.prompt.1.role': 'tool',
      'gen_ai.prompt.1.content': '{"temp_c":18}',
      'gen_ai.completion.0.role': 'assistant',
      'gen_ai.completion.0.content': 'It is 18°C and sunny in Paris.',
    },
  }, ctx);
  gen2.addEvent('gen_ai.evaluation.result', { 'gen_ai.evaluation.name': 'helpfulness', 'gen_ai.evaluation.score.value': 0.9, 'gen_ai.evaluation.explanation': 'answered' });
  ids.gen2 = gen2.spanContext().spanId;
  gen2.end();

  // A failed model call: a model but no provider, no input, no output, no usage.
  const gen3 = tracer.startSpan('chat', { startTime: at(5), attributes: { ...common, 'gen_ai.operation.name': 'chat', 'gen_ai.request.model': 'gpt-4o' } }, ctx);
  gen3.setStatus({ code: SpanStatusCode.ERROR, message: 'rate limited by provider' });
  ids.gen3 = gen3.spanContext().spanId;
  gen3.end();

  root.end();
  await provider.forceFlush();
  await provider.shutdown();
});
afterAll(() => t.close());

describe('agent loop sent with the OpenTelemetry SDK (GenAI attributes)', () => {
  it('lists one observation per AI span with the mapped fields, and not the plain HTTP span', async () => {
    const r = await get('/agent-observations');
    expect(r.total).toBe(5);
    const byId = Object.fromEntries(r.data.map((o: any) => [o.observation_id, o]));
    expect(byId[ids.root!]).toMatchObject({ observation_type: 'agent_step', agent_id: 'travel-agent', session_id: 'conv-1', user_id: 'user-7', environment: 'staging', release: '2.0.0', source: 'otel' });
    expect(byId[ids.gen1!]).toMatchObject({
      observation_type: 'generation',
      model: 'gpt-4o-mini-2024-07-18',
      provider: 'openai',
      prompt_tokens: 100,
      completion_tokens: 20,
      total_tokens: 120,
      parent_observation_id: ids.root,
    });
    // Price table: gpt-4o-mini at $0.15 / $0.60 per million tokens → 100 × 0.15e-6 + 20 × 0.6e-6.
    expect(byId[ids.gen1!].cost_usd).toBeCloseTo(0.000027, 10);
    // Spans are exported one by one: the tool call's recorded parent is the HTTP client span around it.
    expect(byId[ids.tool!]).toMatchObject({ observation_type: 'tool_call', tool_name: 'get_weather', parent_observation_id: ids.http });
    expect(byId[ids.gen2!]).toMatchObject({ provider: 'openai', model: 'gpt-4o-mini', prompt_tokens: 150, completion_tokens: 30, total_tokens: 180, message: 'It is 18°C and sunny in Paris.' });
    expect(byId[ids.gen3!]).toMatchObject({ status: 'error', level: 'error', message: 'rate limited by provider' });
  });

  it('filters by type, tool and text over the prompt JSON', async () => {
    expect((await get('/agent-observations?observation_type=generation')).total).toBe(3);
    expect((await get('/agent-observations?tool_name=get_weather')).data.map((o: any) => o.observation_id)).toEqual([ids.tool]);
    const q = await get('/agent-observations?q=TRAVEL%20AGENT');
    expect(q.data.map((o: any) => o.observation_id).sort()).toEqual([ids.gen1, ids.root].sort());
  });

  it('returns the normalized input and output messages of a generation', async () => {
    const g = await get(`/agent-observations/${ids.gen1}`);
    expect(g.input_json).toEqual({ system: 'You are a travel agent.', messages: [{ role: 'user', content: 'Weather in Paris?' }] });
    expect(g.output_json.messages[0]).toMatchObject({ role: 'assistant', tool_calls: [{ id: 'call_1', name: 'get_weather', arguments: '{"city":"Paris"}' }] });
    expect(g.cost_source).toBe('price_table');
    expect(g.attributes['gen_ai.input.messages']).toBeUndefined();
    expect(g.attributes['gen_ai.request.model']).toBe('gpt-4o-mini');
    const old = await get(`/agent-observations/${ids.gen2}`);
    expect(old.input_json.messages).toEqual([{ role: 'user', content: 'Weather in Paris?' }, { role: 'tool', content: '{"temp_c":18}' }]);
  });

  it('computes the quality coverage with the spec denominators', async () => {
    const q = await get('/agent-observations/quality?include_missing_examples=true');
    // 5 observations; generations gen1, gen2, gen3; successful generations gen1, gen2; all three are chat generations.
    expect(q.total_observations).toBe(5);
    expect(q.generations).toBe(3);
    expect(q.coverage.trace_linkage).toMatchObject({ captured: 5, eligible: 5, missing: 0, percent: 100 });
    expect(q.coverage.generation_inputs).toMatchObject({ captured: 2, eligible: 3, missing: 1, percent: 66.67, missing_examples: [ids.gen3] });
    expect(q.coverage.system_prompts).toMatchObject({ captured: 1, eligible: 3, percent: 33.33 });
    expect(q.coverage.completed_outputs).toMatchObject({ captured: 2, eligible: 2, percent: 100, missing_examples: [] });
    expect(q.coverage.model_provider).toMatchObject({ captured: 2, eligible: 3, percent: 66.67, missing_examples: [ids.gen3] });
    expect(q.coverage.token_usage).toMatchObject({ captured: 2, eligible: 2, percent: 100 });
    expect(q.coverage.cost).toMatchObject({ captured: 2, eligible: 2, percent: 100 });
    expect(q.invalid_token_totals).toBe(0);
    // Content: gen1, gen2 and the tool call (3 of 5); tool payloads: gen1's tool call, gen2's tool message and the tool call (3 of 5).
    expect(q.privacy_posture).toMatchObject({
      observations: 5,
      privacy_mode: { count: 0, percent: 0 },
      content_bearing: { count: 3, percent: 60 },
      tool_payload_bearing: { count: 3, percent: 60 },
      reasoning_bearing: { count: 0, percent: 0 },
    });
    expect(q.scores).toEqual({ count: 1, scored_observations: 1 });
  });

  it('turns a gen_ai.evaluation.result event into a score', async () => {
    const s = await get('/agent-scores');
    expect(s.data).toHaveLength(1);
    expect(s.data[0]).toMatchObject({ name: 'helpfulness', value: 0.9, data_type: 'numeric', source: 'eval', observation_id: ids.gen2, comment: 'answered', session_id: 'conv-1' });
  });

  it('returns the session as a tree with tokens, cost and latency per node, the tool call under the agent step past the HTTP span', async () => {
    const s = await get('/ai/sessions/conv-1');
    expect(s.nodes.map((n: any) => [n.observation_id, n.depth])).toEqual([
      [ids.root, 0],
      [ids.gen1, 1],
      [ids.tool, 1],
      [ids.gen2, 1],
      [ids.gen3, 1],
    ]);
    expect(s.nodes[0].child_ids).toEqual([ids.gen1, ids.tool, ids.gen2, ids.gen3]);
    expect(s.nodes[0].subtree).toMatchObject({ observations: 5, generations: 3, tool_calls: 1, total_tokens: 300 });
    // gen2: 150 × 0.15e-6 + 30 × 0.6e-6 = 0.0000405; plus gen1's 0.000027.
    expect(s.nodes[0].subtree.cost_usd).toBeCloseTo(0.0000675, 10);
    expect(s.totals).toMatchObject({ observations: 5, requests: 3, tool_calls: 1, errors: 1, total_tokens: 300 });
    expect(s.user_ids).toEqual(['user-7']);
    expect(typeof s.nodes[1].duration_ms).toBe('number');
  });

  it('summarizes usage in ai.stats with the price table date', async () => {
    const st = await get('/ai/stats');
    expect(st.summary).toMatchObject({ observations: 5, requests: 3, tool_calls: 1, errors: 1, prompt_tokens: 250, completion_tokens: 50, total_tokens: 300 });
    expect(st.top_models.map((m: any) => [m.model, m.requests])).toEqual([['gpt-4o', 1], ['gpt-4o-mini', 1], ['gpt-4o-mini-2024-07-18', 1]]);
    expect(st.top_providers).toMatchObject([{ provider: 'openai', requests: 2 }]);
    expect(st.sessions).toMatchObject({ count: 1, top: [{ id: 'conv-1', observations: 5 }] });
    expect(st.users).toMatchObject({ count: 1, top: [{ id: 'user-7' }] });
    expect(st.price_table_version).toMatch(/^\d{4}-\d{2}-\d{2}$/);
    const u = await get('/ai/users/user-7');
    expect(u.totals.requests).toBe(3);
    expect(u.sessions.map((x: any) => x.id)).toEqual(['conv-1']);
  });
});
