/**
 * The real `openai` client, instrumented by OpenInference's OpenAI instrumentation (as Arize Phoenix
 * users run it), talking to a local fake OpenAI-compatible server this test starts; spans go to
 * Sightline over OTLP/JSON and come back as generations with messages, tool calls, usage and cost.
 */
import http from 'node:http';
import type { AddressInfo } from 'node:net';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import OpenAI from 'openai';
import { OpenAIInstrumentation } from '@arizeai/openinference-instrumentation-openai';
import { BasicTracerProvider, SimpleSpanProcessor } from '@opentelemetry/sdk-trace-base';
import { OTLPTraceExporter } from '@opentelemetry/exporter-trace-otlp-http';
import { resourceFromAttributes } from '@opentelemetry/resources';
import { api, startTestServer, type TestServer } from '../helpers/server.js';

let t: TestServer;
let fake: http.Server;
let P: string;
const requests: any[] = [];

beforeAll(async () => {
  t = await startTestServer();
  P = `/v1/projects/${t.projectId}`;
  // A fake OpenAI-compatible chat completions endpoint: first a tool call, then an answer.
  fake = http.createServer((req, res) => {
    let body = '';
    req.on('data', (c) => (body += c));
    req.on('end', () => {
      const r = JSON.parse(body);
      requests.push(r);
      const toolTurn = !r.messages.some((m: any) => m.role === 'tool');
      const message = toolTurn
        ? { role: 'assistant', content: null, tool_calls: [{ id: 'call_9', type: 'function', function: { name: 'lookup_order', arguments: '{"order_id":"A17"}' } }] }
        : { role: 'assistant', content: 'Order A17 ships tomorrow.' };
      res.setHeader('content-type', 'application/json');
      res.end(
        JSON.stringify({
          id: `chatcmpl-${requests.length}`,
          object: 'chat.completion',
          created: 1_700_000_000,
          model: 'gpt-4o-mini-2024-07-18',
          choices: [{ index: 0, message, finish_reason: toolTurn ? 'tool_calls' : 'stop' }],
          usage: toolTurn ? { prompt_tokens: 50, completion_tokens: 10, total_tokens: 60 } : { prompt_tokens: 80, completion_tokens: 12, total_tokens: 92 },
        }),
      );
    });
  });
  await new Promise<void>((r) => fake.listen(0, '127.0.0.1', r));
  const provider = new BasicTracerProvider({
    resource: resourceFromAttributes({ 'service.name': 'support-bot' }),
    spanProcessors: [new SimpleSpanProcessor(new OTLPTraceExporter({ url: `${t.url}/ingest/v1/traces`, headers: { 'x-service-key': t.keys.ingest } }))],
  });
  const instrumentation = new OpenAIInstrumentation({ tracerProvider: provider });
  instrumentation.manuallyInstrument(OpenAI);
  const client = new OpenAI({ apiKey: 'test', baseURL: `http://127.0.0.1:${(fake.address() as AddressInfo).port}/v1` });
  const messages: OpenAI.Chat.ChatCompletionMessageParam[] = [
    { role: 'system', content: 'You are a support bot.' },
    { role: 'user', content: 'Where is my order A17?' },
  ];
  const tools: OpenAI.Chat.ChatCompletionTool[] = [{ type: 'function', function: { name: 'lookup_order', parameters: { type: 'object', properties: { order_id: { type: 'string' } } } } }];
  const first = await client.chat.completions.create({ model: 'gpt-4o-mini', messages, tools });
  messages.push(first.choices[0]!.message as OpenAI.Chat.ChatCompletionMessageParam);
  messages.push({ role: 'tool', tool_call_id: 'call_9', content: '{"status":"ships tomorrow"}' });
  await client.chat.completions.create({ model: 'gpt-4o-mini', messages, tools });
  await provider.forceFlush();
  await provider.shutdown();
  instrumentation.disable();
});
afterAll(async () => {
  await t.close();
  await new Promise<void>((r) => fake.close(() => r()));
});

describe('openai client instrumented by OpenInference', () => {
  it('records each chat completion as a generation with model, provider, usage and price-table cost', async () => {
    expect(requests).toHaveLength(2);
    const r = await api(t, 'GET', `${P}/agent-observations?observation_type=generation`, { key: t.keys.admin });
    expect(r.status).toBe(200);
    expect(r.body.total).toBe(2);
    const [second, first] = r.body.data; // newest first
    expect(first).toMatchObject({ source: 'openinference', model: 'gpt-4o-mini-2024-07-18', provider: 'openai', prompt_tokens: 50, completion_tokens: 10, total_tokens: 60, status: 'ok' });
    expect(first.cost_usd).toBeCloseTo((50 * 0.15 + 10 * 0.6) / 1e6, 12);
    expect(second).toMatchObject({ prompt_tokens: 80, completion_tokens: 12, message: 'Order A17 ships tomorrow.' });
  });

  it('keeps the system prompt, the conversation and the tool calls as structured messages', async () => {
    const list = await api(t, 'GET', `${P}/agent-observations?q=ships%20tomorrow&observation_type=generation`, { key: t.keys.admin });
    const latest = list.body.data.find((o: any) => o.message === 'Order A17 ships tomorrow.');
    const g = await api(t, 'GET', `${P}/agent-observations/${latest.observation_id}`, { key: t.keys.admin });
    expect(g.body.input_json.system).toBe('You are a support bot.');
    expect(g.body.input_json.messages.map((m: any) => m.role)).toEqual(['user', 'assistant', 'tool']);
    expect(g.body.input_json.messages[1].tool_calls).toEqual([{ id: 'call_9', name: 'lookup_order', arguments: '{"order_id":"A17"}' }]);
    expect(g.body.output_json.messages).toEqual([{ role: 'assistant', content: 'Order A17 ships tomorrow.' }]);
  });

  it('reports full coverage for these generations', async () => {
    const q = await api(t, 'GET', `${P}/agent-observations/quality`, { key: t.keys.admin });
    for (const d of ['generation_inputs', 'system_prompts', 'completed_outputs', 'model_provider', 'token_usage', 'cost', 'trace_linkage']) {
      expect(q.body.coverage[d], d).toMatchObject({ captured: 2, eligible: 2, percent: 100 });
    }
  });
});
