/**
 * Langfuse compatibility with the real SDKs pointed at Sightline: `@langfuse/otel` (v5, OTLP to
 * /api/public/otel/v1/traces) and the legacy `langfuse` client (batch to /api/public/ingestion),
 * both with Basic auth from the key pair derived from an ingest key.
 */
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { LangfuseSpanProcessor } from '@langfuse/otel';
import { Langfuse } from 'langfuse';
import { BasicTracerProvider } from '@opentelemetry/sdk-trace-base';
import { SpanStatusCode } from '@opentelemetry/api';
import { api, startTestServer, type TestServer } from '../helpers/server.js';
import { langfuseKeyPair } from '../../src/ingest/langfuse.js';

let t: TestServer;
let P: string;
let keys: { publicKey: string; secretKey: string };
const get = async (path: string) => {
  const r = await api(t, 'GET', `${P}${path}`, { key: t.keys.admin });
  expect(r.status, `${path}: ${JSON.stringify(r.body)}`).toBe(200);
  return r.body;
};
const basic = (pub: string, sec: string) => `Basic ${Buffer.from(`${pub}:${sec}`).toString('base64')}`;

beforeAll(async () => {
  t = await startTestServer();
  P = `/v1/projects/${t.projectId}`;
  keys = langfuseKeyPair(t.projectId, t.keys.ingest);
});
afterAll(() => t.close());

describe('@langfuse/otel span processor', () => {
  it('stores Langfuse-typed spans as observations with usage, cost, session and user', async () => {
    const processor = new LangfuseSpanProcessor({ ...keys, baseUrl: `${t.url}/ingest`, exportMode: 'immediate', mediaUploadEnabled: false });
    const provider = new BasicTracerProvider({ spanProcessors: [processor] });
    const tracer = provider.getTracer('langfuse-sdk');
    const root = tracer.startSpan('answer-question', { attributes: { 'langfuse.observation.type': 'agent', 'session.id': 'lf-sess', 'user.id': 'lf-user', 'langfuse.release': 'v9' } });
    const { context, trace } = await import('@opentelemetry/api');
    const ctx = trace.setSpan(context.active(), root);
    const gen = tracer.startSpan('llm-call', {
      attributes: {
        'langfuse.observation.type': 'generation',
        'langfuse.observation.model.name': 'claude-sonnet-4-20250514',
        'langfuse.observation.input': JSON.stringify([{ role: 'system', content: 'Be brief.' }, { role: 'user', content: 'What is OTLP?' }]),
        'langfuse.observation.output': JSON.stringify({ role: 'assistant', content: 'The OpenTelemetry protocol.' }),
        'langfuse.observation.usage_details': JSON.stringify({ input: 1000, output: 200 }),
        'gen_ai.provider.name': 'anthropic',
        'session.id': 'lf-sess',
        'user.id': 'lf-user',
      },
    }, ctx);
    gen.end();
    const failed = tracer.startSpan('tool-search', { attributes: { 'langfuse.observation.type': 'tool', 'langfuse.observation.level': 'ERROR', 'session.id': 'lf-sess' } }, ctx);
    failed.setStatus({ code: SpanStatusCode.ERROR, message: 'search backend down' });
    failed.end();
    root.end();
    await provider.forceFlush();
    await provider.shutdown();

    const list = await get('/agent-observations?session_id=lf-sess');
    expect(list.total).toBe(3);
    const g = list.data.find((o: any) => o.observation_name === 'llm-call');
    expect(g).toMatchObject({ observation_type: 'generation', source: 'langfuse', model: 'claude-sonnet-4-20250514', provider: 'anthropic', prompt_tokens: 1000, completion_tokens: 200, user_id: 'lf-user' });
    // claude-sonnet-4 at $3 / $15 per million tokens.
    expect(g.cost_usd).toBeCloseTo((1000 * 3 + 200 * 15) / 1e6, 12);
    const tool = list.data.find((o: any) => o.observation_name === 'tool-search');
    expect(tool).toMatchObject({ observation_type: 'tool_call', status: 'error', level: 'error', message: 'search backend down' });
    const detail = await get(`/agent-observations/${g.observation_id}`);
    expect(detail.input_json).toEqual({ system: 'Be brief.', messages: [{ role: 'user', content: 'What is OTLP?' }] });
    const session = await get('/ai/sessions/lf-sess');
    expect(session.nodes[0]).toMatchObject({ observation_name: 'answer-question', depth: 0 });
    // The two children may start within the same millisecond: compare them as a set.
    expect(session.nodes.slice(1).map((n: any) => [n.observation_name, n.depth]).sort()).toEqual([['llm-call', 1], ['tool-search', 1]]);
  });

  it('refuses a public key that does not name the ingest key\'s project', async () => {
    const r = await fetch(`${t.url}/ingest/api/public/otel/v1/traces`, {
      method: 'POST',
      headers: { authorization: basic('pk-lf-999', keys.secretKey), 'content-type': 'application/json' },
      body: JSON.stringify({ resourceSpans: [] }),
    });
    expect(r.status).toBe(401);
    const bad = await fetch(`${t.url}/ingest/api/public/otel/v1/traces`, {
      method: 'POST',
      headers: { authorization: basic(keys.publicKey, 'sk-lf-not-a-key'), 'content-type': 'application/json' },
      body: JSON.stringify({ resourceSpans: [] }),
    });
    expect(bad.status).toBe(401);
  });
});

describe('legacy langfuse client (batch ingestion)', () => {
  it('stores traces, generations with their updates, spans and scores sent by the SDK', async () => {
    const lf = new Langfuse({ ...keys, baseUrl: `${t.url}/ingest`, flushAt: 1, enabled: true });
    const errors: unknown[] = [];
    lf.on('error', (e: unknown) => errors.push(e));
    const trace = lf.trace({ name: 'checkout-assistant', userId: 'legacy-user', sessionId: 'legacy-sess', tags: ['beta'], release: 'r-1' });
    const span = trace.span({ name: 'retrieve-docs', input: { query: 'refund policy' } });
    span.end({ output: { docs: 3 } });
    const gen = trace.generation({ name: 'draft-answer', model: 'gpt-4o', input: [{ role: 'user', content: 'Can I get a refund?' }], metadata: { provider: 'openai' } });
    gen.end({ output: { role: 'assistant', content: 'Yes, within 30 days.' }, usage: { input: 400, output: 40 } });
    lf.score({ traceId: trace.id, observationId: gen.id, name: 'correct', value: 1, dataType: 'BOOLEAN' });
    lf.score({ traceId: trace.id, observationId: gen.id, name: 'tone', value: 'friendly', dataType: 'CATEGORICAL' });
    await lf.flushAsync();
    await lf.shutdownAsync();
    expect(errors).toEqual([]);

    const g = await get(`/agent-observations/${gen.id}`);
    expect(g).toMatchObject({
      observation_type: 'generation',
      model: 'gpt-4o',
      provider: 'openai',
      prompt_tokens: 400,
      completion_tokens: 40,
      session_id: 'legacy-sess',
      user_id: 'legacy-user',
      workflow_id: 'checkout-assistant',
      message: 'Yes, within 30 days.',
      tags: { beta: 'true' },
    });
    expect(g.output_json).toEqual({ messages: [{ role: 'assistant', content: 'Yes, within 30 days.' }] });
    // gpt-4o at $2.50 / $10 per million tokens.
    expect(g.cost_usd).toBeCloseTo((400 * 2.5 + 40 * 10) / 1e6, 12);
    const sp = await get(`/agent-observations/${span.id}`);
    expect(sp).toMatchObject({ observation_type: 'agent_step', session_id: 'legacy-sess', output_json: { value: { docs: 3 } } });
    const summary = await get('/agent-scores/summary');
    expect(summary.data).toEqual([
      { name: 'correct', data_type: 'boolean', string_value: '', count: 1, avg_value: 1, min_value: 1, max_value: 1 },
      { name: 'tone', data_type: 'categorical', string_value: 'friendly', count: 1, avg_value: null, min_value: null, max_value: null },
    ]);
  });

  it('answers 207 with one status per item, storing the good items only', async () => {
    const now = new Date().toISOString();
    const r = await fetch(`${t.url}/ingest/api/public/ingestion`, {
      method: 'POST',
      headers: { authorization: basic(keys.publicKey, keys.secretKey), 'content-type': 'application/json' },
      body: JSON.stringify({
        batch: [
          { id: 'e1', type: 'generation-create', timestamp: now, body: { id: 'gen-207', traceId: 'tr-207', name: 'ok', model: 'gpt-4o-mini', startTime: now } },
          { id: 'e2', type: 'generation-create', timestamp: now, body: { name: 'no id' } },
          { id: 'e3', type: 'score-create', timestamp: now, body: { id: 'sc-207', traceId: 'tr-207', name: 'quality', value: 'not a number', dataType: 'NUMERIC' } },
          { id: 'e4', type: 'made-up', timestamp: now, body: {} },
        ],
      }),
    });
    expect(r.status).toBe(207);
    const body: any = await r.json();
    expect(body.successes).toEqual([{ id: 'e1', status: 201 }]);
    expect(body.errors.map((e: any) => [e.id, e.status])).toEqual([['e2', 400], ['e3', 400], ['e4', 400]]);
    expect((await get('/agent-observations/gen-207')).model).toBe('gpt-4o-mini');
    expect((await get('/agent-scores?trace_id=tr-207')).total).toBe(0);
  });
});
