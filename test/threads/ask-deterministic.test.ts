/**
 * `ask` and `ask/stream` without a model configured: the built-in deterministic analyst answers
 * from the project's seeded data through real `invoke` calls made with the agent's limited
 * principal; the question and the answer are stored in the thread; a stream and the stored message
 * agree; the conversation is recorded through the agent state.
 */
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { api, startTestServer, type TestServer } from '../helpers/server.js';
import { sendEvent, sendSpans, hex } from '../operations/errors-fixtures.js';
import type { Principal } from '../../src/core/principal.js';
import { fakeAgentState, type FakeState } from './fake-llm.js';

let t: TestServer;
let state: FakeState;
const P = () => `/v1/projects/${t.projectId}`;
const calls: { operationId: string; principal: Principal | null }[] = [];

beforeAll(async () => {
  t = await startTestServer({ config: { llm: { baseUrl: null, apiKey: null, model: null, maxTurns: 4, maxToolCalls: 4, timeLimitMs: 60_000 } } });
  state = fakeAgentState();
  t.s.services.agentState = state;
  // Every operation the agent runs goes through core.invoke: record who called what.
  const invoke = t.s.core.invoke.bind(t.s.core);
  t.s.core.invoke = (operationId, input, principal, opts) => {
    calls.push({ operationId, principal });
    return invoke(operationId, input, principal, opts);
  };
  const now = Date.now();
  for (let i = 0; i < 3; i++) await sendEvent(t, { type: 'PaymentDeclinedError', fn: 'charge', at: now - 60_000 * (i + 1), service: 'checkout' });
  await sendEvent(t, { type: 'InventoryTimeout', fn: 'reserve', at: now - 30_000, service: 'inventory' });
  await sendSpans(t, [
    { trace_id: hex(1), span_id: hex(1, 16), name: 'POST /checkout', service: 'checkout', start: now - 120_000, end: now - 120_000 + 2_400 },
    { trace_id: hex(2), span_id: hex(2, 16), name: 'GET /health', service: 'checkout', start: now - 100_000, end: now - 100_000 + 3 },
  ]);
  const dep = await api(t, 'POST', `${P()}/deployments`, { key: t.keys.admin, body: { deployment_id: 'ci-77', service: 'checkout', version: 'v2.4.1', environment: 'production', status: 'ready' } });
  expect(dep.status).toBeLessThan(300);
});
afterAll(async () => {
  await t?.close();
});

describe('threads.ask with the deterministic analyst', () => {
  it('answers from the project data through invoke with a project-bound read-only agent principal', async () => {
    calls.length = 0;
    const r = await api(t, 'POST', `${P()}/ask`, { key: t.keys.admin, body: { question: 'What is going on? Errors, slow endpoints and deploys please.' } });
    expect(r.status).toBe(200);
    expect(r.body.answered_by).toBe('deterministic');
    const text: string = r.body.answer.text;
    expect(text).toContain('PaymentDeclinedError');
    expect(text).toContain('InventoryTimeout');
    expect(text).toMatch(/PaymentDeclinedError[^\n]*3 events/);
    expect(text).toContain('POST /checkout');
    expect(text).toContain('v2.4.1');
    expect(r.body.tool_calls).toEqual([{ tool: 'execute', ok: true, operations: expect.arrayContaining(['errors.list', 'traces.operations', 'deployments.list']) }]);

    // The analyst's reads were real invoke calls as the agent: an API-key-shaped principal bound to
    // this project, keyed by the thread, holding only `read` (settings do not allow fixes).
    const agentCalls = calls.filter((c) => c.principal?.kind === 'api_key' && c.principal.keyId.startsWith('agent:'));
    expect(agentCalls.map((c) => c.operationId)).toEqual(expect.arrayContaining(['errors.list', 'traces.operations', 'deployments.list']));
    for (const c of agentCalls) expect(c.principal).toMatchObject({ kind: 'api_key', keyId: `agent:${r.body.thread.id}`, projectId: t.projectId, scopes: ['read'] });

    // Question and answer are stored, in order; the answer is attributed to the service.
    const msgs = await api(t, 'GET', `${P()}/threads/${r.body.thread.id}/messages`, { key: t.keys.admin });
    expect(msgs.body.data.map((m: { role: string }) => m.role)).toEqual(['user', 'assistant']);
    expect(msgs.body.data[1]).toMatchObject({ text, answered_by: 'deterministic', author_name: 'Sightline', author_user_id: null, author_key_id: null });
    expect(msgs.body.data[0].author_key_id).toEqual(expect.any(String));
    expect(r.body.thread.model_id).toBe('deterministic');

    // A chat conversation was recorded and finished, and the wake counted.
    const conv = state.conversations.at(-1)!;
    expect(conv).toMatchObject({ kind: 'chat', thread_id: r.body.thread.id, status: 'answered', answered_by: 'deterministic' });
    expect(conv.ended_at).toEqual(expect.any(Number));
    expect(state.wakes).toBeGreaterThan(0);
  });

  it('continues a thread given thread_id, and 404s for a thread of another project', async () => {
    const first = await api(t, 'POST', `${P()}/ask`, { key: t.keys.admin, body: { question: 'latest deployments?' } });
    const again = await api(t, 'POST', `${P()}/ask`, { key: t.keys.admin, body: { question: 'and the errors?', thread_id: first.body.thread.id } });
    expect(again.status).toBe(200);
    expect(again.body.thread.id).toBe(first.body.thread.id);
    expect(again.body.question.sequence).toBe(3);
    expect(again.body.answer.sequence).toBe(4);
    expect(again.body.thread.message_count).toBe(4);
    const cross = await api(t, 'POST', `/v1/projects/${t.otherProject.projectId}/ask`, { key: t.otherProject.adminKey, body: { question: 'hi', thread_id: first.body.thread.id } });
    expect(cross.status).toBe(404);
  });

  it('streams the answer as text/plain and stores exactly the streamed text', async () => {
    const res = await fetch(`${t.url}${P()}/ask/stream`, {
      method: 'POST',
      headers: { 'x-service-key': t.keys.admin, 'content-type': 'application/json' },
      body: JSON.stringify({ question: 'top errors and new errors' }),
    });
    expect(res.status).toBe(200);
    expect(res.headers.get('content-type')).toMatch(/^text\/plain/);
    const threadId = res.headers.get('x-thread-id')!;
    const chunks: string[] = [];
    const decoder = new TextDecoder();
    for await (const c of res.body!) chunks.push(decoder.decode(c, { stream: true }));
    const streamed = chunks.join('');
    expect(streamed).toContain('PaymentDeclinedError');
    const msgs = await api(t, 'GET', `${P()}/threads/${threadId}/messages`, { key: t.keys.admin });
    expect(msgs.body.data.map((m: { role: string }) => m.role)).toEqual(['user', 'assistant']);
    expect(msgs.body.data[1].text).toBe(streamed);
    expect(msgs.body.data[0].id).toBe(res.headers.get('x-message-id'));
  });

  it('a client asking for JSON gets the final answer from ask/stream, as the MCP and CLI faces do', async () => {
    const r = await api(t, 'POST', `${P()}/ask/stream`, { key: t.keys.admin, body: { question: 'deployments' }, headers: { accept: 'application/json' } });
    expect(r.status).toBe(200);
    expect(r.body.answer.text).toContain('v2.4.1');
    expect(r.body.answered_by).toBe('deterministic');
  });

  it('ask needs write; another project gets 404', async () => {
    expect((await api(t, 'POST', `${P()}/ask`, { key: t.mintKey(['read']), body: { question: 'hi' } })).status).toBe(403);
    expect((await api(t, 'POST', `${P()}/ask`, { key: t.otherProject.adminKey, body: { question: 'hi' } })).status).toBe(404);
  });
});
