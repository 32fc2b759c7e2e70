/**
 * The agent against a fake OpenAI-compatible server over real HTTP: the test scripts the model's
 * replies (tool calls to `search` and `execute`, text, streaming) and checks that the agent's calls
 * go through `invoke` with its limited principal (writes refused in `notify_only` or when settings
 * forbid them, hidden operations unreachable), that memory and skills reach its instructions, that
 * streamed chunks and the stored message agree, and that a client disconnecting mid-stream still
 * gets the full message stored.
 */
import { afterAll, beforeAll, beforeEach, describe, expect, it, vi } from 'vitest';
import { api, startTestServer, type TestServer } from '../helpers/server.js';
import { sendEvent, groupOfEvent } from '../operations/errors-fixtures.js';
import { fakeAgentState, startFakeLlm, type FakeLlm, type FakeState } from './fake-llm.js';

let t: TestServer;
let llm: FakeLlm;
let state: FakeState;
let groupId: string;
const P = () => `/v1/projects/${t.projectId}`;

beforeAll(async () => {
  llm = await startFakeLlm();
  t = await startTestServer({ config: { llm: { baseUrl: llm.url, apiKey: 'sk-test-123', model: 'gpt-test', maxTurns: 5, maxToolCalls: 6, timeLimitMs: 60_000 } } });
  groupId = groupOfEvent(t, await sendEvent(t, { type: 'PaymentDeclinedError', fn: 'charge', at: Date.now() - 60_000, service: 'checkout' }));
});
afterAll(async () => {
  await t?.close();
  await llm?.close();
});
beforeEach(() => {
  llm.script.length = 0;
  llm.seen.length = 0;
  state = fakeAgentState();
  t.s.services.agentState = state;
});

/** The JSON a tool returned to the model, from the request that followed it. */
function toolResult(requestIndex: number): any {
  const msgs = llm.seen[requestIndex]!.body.messages;
  return JSON.parse(msgs.filter((m) => m.role === 'tool').at(-1)!.content!);
}

const resolveCode = (id: string) => `return await api.errors.update({ error_group_id: ${JSON.stringify(id)}, status: 'resolved' });`;
const groupStatus = async () => (await api(t, 'GET', `${P()}/errors/${groupId}`, { key: t.keys.admin })).body.status;

describe('agent with an OpenAI-compatible model', () => {
  it('searches, executes through invoke and answers; memory and skills are in its instructions', async () => {
    state.memory = [{ id: 'm1', kind: 'rule', content: 'Always mention the on-call channel #payments-oncall.', scope: 'project' }];
    state.skills = [{ name: 'triage-payments', description: 'When payment errors appear', content: 'Check the card processor status first.', source: 'project' }];
    llm.script.push(
      { toolCalls: [{ name: 'search', args: { query: 'list unresolved error groups' } }] },
      { toolCalls: [{ name: 'execute', args: { code: 'const r = await api.errors.list({ limit: 5 }); return r.data.map((g) => g.title);' } }] },
      { text: 'One unresolved group: PaymentDeclinedError. See #payments-oncall.' },
    );
    const r = await api(t, 'POST', `${P()}/ask`, { key: t.keys.admin, body: { question: 'Which errors are open?' } });
    expect(r.status).toBe(200);
    expect(r.body.answered_by).toBe('gpt-test');
    expect(r.body.answer.text).toBe('One unresolved group: PaymentDeclinedError. See #payments-oncall.');
    expect(r.body.tool_calls).toEqual([
      { tool: 'search', ok: true, operations: [] },
      { tool: 'execute', ok: true, operations: ['errors.list'] },
    ]);

    expect(llm.seen).toHaveLength(3);
    const first = llm.seen[0]!;
    expect(first.headers.authorization).toBe('Bearer sk-test-123');
    expect(first.body.model).toBe('gpt-test');
    expect(first.body.tools.map((x) => x.function.name)).toEqual(['search', 'execute']);
    const system = first.body.messages[0]!;
    expect(system.role).toBe('system');
    expect(system.content).toContain('#payments-oncall');
    expect(system.content).toContain('Check the card processor status first.');
    expect(first.body.messages.at(-1)).toMatchObject({ role: 'user', content: 'Which errors are open?' });
    // The search tool answered with the MCP search answer; execute with the real data.
    expect(toolResult(1).results.map((x: { operationId: string }) => x.operationId)).toContain('errors.list');
    expect(toolResult(2)).toMatchObject({ error: null, result: [expect.stringContaining('PaymentDeclinedError')] });
    // Each model turn is a wake.
    expect(state.wakes).toBe(3);
    expect(state.conversations.at(-1)).toMatchObject({ kind: 'chat', status: 'answered', answered_by: 'gpt-test' });
  });

  it('a continued thread sends the earlier messages to the model', async () => {
    llm.script.push({ text: 'First answer.' });
    const a = await api(t, 'POST', `${P()}/ask`, { key: t.keys.admin, body: { question: 'First question?' } });
    llm.script.push({ text: 'Second answer.' });
    await api(t, 'POST', `${P()}/ask`, { key: t.keys.admin, body: { question: 'Second question?', thread_id: a.body.thread.id } });
    const msgs = llm.seen[1]!.body.messages.slice(1).map((m) => [m.role, m.content]);
    expect(msgs).toEqual([
      ['user', 'First question?'],
      ['assistant', 'First answer.'],
      ['user', 'Second question?'],
    ]);
  });

  it('a write is refused in stage notify_only even when settings allow fixes; allowed in normal', async () => {
    state.stage = 'notify_only';
    state.autoFix = true;
    llm.script.push({ toolCalls: [{ name: 'execute', args: { code: resolveCode(groupId) } }] }, { text: 'I could not resolve it.' });
    const r = await api(t, 'POST', `${P()}/ask`, { key: t.keys.admin, body: { question: 'Resolve the payment error group.' } });
    expect(r.status).toBe(200); // a direct question is always answered
    expect(toolResult(1).error).toMatchObject({ status: 403, code: 'insufficient_scope' });
    expect(r.body.tool_calls).toEqual([{ tool: 'execute', ok: false, operations: ['errors.update'] }]);
    expect(await groupStatus()).toBe('unresolved');
    expect(llm.seen[0]!.body.messages[0]!.content).toContain('You may only read');

    state.stage = 'normal';
    llm.script.push({ toolCalls: [{ name: 'execute', args: { code: resolveCode(groupId) } }] }, { text: 'Resolved.' });
    const ok = await api(t, 'POST', `${P()}/ask`, { key: t.keys.admin, body: { question: 'Resolve the payment error group.' } });
    expect(ok.body.tool_calls).toEqual([{ tool: 'execute', ok: true, operations: ['errors.update'] }]);
    expect(await groupStatus()).toBe('resolved');
    await api(t, 'PATCH', `${P()}/errors/${groupId}`, { key: t.keys.admin, body: { status: 'unresolved' } });
  });

  it('a write is refused when settings forbid automatic fixes, in stage conserve, and when exhausted (the question is still answered)', async () => {
    for (const [stage, autoFix] of [['normal', false], ['conserve', true], ['exhausted', true]] as const) {
      state.stage = stage;
      state.autoFix = autoFix;
      llm.seen.length = 0;
      llm.script.push({ toolCalls: [{ name: 'execute', args: { code: resolveCode(groupId) } }] }, { text: 'Not allowed.' });
      const r = await api(t, 'POST', `${P()}/ask`, { key: t.keys.admin, body: { question: 'Resolve it.' } });
      expect(r.body.answer.text).toBe('Not allowed.');
      expect(toolResult(1).error).toMatchObject({ status: 403, code: 'insufficient_scope' });
      expect(await groupStatus()).toBe('unresolved');
    }
  });

  it('never holds more than the person asking: a key without errors:write cannot make the agent write', async () => {
    state.autoFix = true;
    const key = t.mintKey(['read', 'deployments:write']);
    // threads.ask needs `write`; a key holding only narrower write scopes is refused outright.
    expect((await api(t, 'POST', `${P()}/ask`, { key, body: { question: 'hi' } })).status).toBe(403);
    const narrow = t.mintKey(['errors:read', 'write']);
    llm.script.push({ toolCalls: [{ name: 'execute', args: { code: 'return await api.deployments.list({ limit: 1 });' } }] }, { text: 'ok' });
    await api(t, 'POST', `${P()}/ask`, { key: narrow, body: { question: 'deployments?' } });
    // `read` was not held by the asker, so the agent did not get it either.
    expect(toolResult(1).error).toMatchObject({ status: 403, code: 'insufficient_scope' });
  });

  it('hidden operations are not reachable from the agent', async () => {
    state.autoFix = true;
    llm.script.push(
      { toolCalls: [{ name: 'search', args: { query: 'create an api key' } }] },
      { toolCalls: [{ name: 'execute', args: { code: 'return await api.apiKeys.list({});' } }] },
      { toolCalls: [{ name: 'execute', args: { code: 'return await api.call("apiKeys.create", { label: "x", scopes: ["*"] });' } }] },
      { text: 'I cannot manage keys.' },
    );
    const r = await api(t, 'POST', `${P()}/ask`, { key: t.keys.admin, body: { question: 'Make me an admin key.' } });
    expect(r.body.answer.text).toBe('I cannot manage keys.');
    const search = toolResult(1);
    expect(search.results).toEqual([]);
    expect(search.unavailable.map((u: { operationId: string }) => u.operationId)).toContain('apiKeys.create');
    expect(toolResult(2).error).toMatchObject({ status: 404, code: 'unknown_operation' });
    expect(toolResult(3).error).toMatchObject({ status: 404, code: 'unknown_operation' });
    const keys = await api(t, 'GET', `${P()}/api-keys`, { key: t.keys.admin });
    expect(keys.body.data.some((k: { label: string }) => k.label === 'x')).toBe(false);
  });

  it('stops at the tool-call cap and the turn cap', async () => {
    for (let i = 0; i < 5; i++) llm.script.push({ toolCalls: [{ name: 'execute', args: { code: 'return 1;' } }, { name: 'execute', args: { code: 'return 2;' } }] });
    const r = await api(t, 'POST', `${P()}/ask`, { key: t.keys.admin, body: { question: 'loop forever' } });
    expect(r.status).toBe(200);
    expect(llm.seen).toHaveLength(5); // maxTurns
    expect(r.body.tool_calls).toHaveLength(6); // maxToolCalls
    expect(toolResult(4).error).toMatch(/Tool call limit reached/);
    expect(r.body.answer.text).toMatch(/stopped after 5 model turns/);
  });

  it('streams the model\'s text as it comes, including tool turns, and stores the same text', async () => {
    llm.script.push(
      { stream: ['Let me ', 'check.'], toolCalls: [{ name: 'execute', args: { code: 'return (await api.errors.list({ limit: 1 })).total;' } }] },
      { stream: ['There ', 'is ', '1 open group.'] },
    );
    const res = await fetch(`${t.url}${P()}/ask/stream`, {
      method: 'POST',
      headers: { 'x-service-key': t.keys.admin, 'content-type': 'application/json' },
      body: JSON.stringify({ question: 'How many open groups?' }),
    });
    expect(res.headers.get('content-type')).toMatch(/^text\/plain/);
    const decoder = new TextDecoder();
    let streamed = '';
    let pieces = 0;
    for await (const c of res.body!) {
      streamed += decoder.decode(c, { stream: true });
      pieces++;
    }
    expect(pieces).toBeGreaterThan(0);
    expect(streamed).toBe('Let me check.\n\nThere is 1 open group.');
    expect(llm.seen.every((s) => s.body.stream === true)).toBe(true);
    // The streamed tool call (sent in fragments) was assembled and run.
    expect(toolResult(1)).toMatchObject({ error: null, result: 1 });
    const msgs = await api(t, 'GET', `${P()}/threads/${res.headers.get('x-thread-id')}/messages`, { key: t.keys.admin });
    expect(msgs.body.data.at(-1)).toMatchObject({ role: 'assistant', text: streamed, answered_by: 'gpt-test' });
  });

  it('a client that disconnects mid-stream still gets the full message stored', async () => {
    let release!: () => void;
    const hold = new Promise<void>((r) => (release = r));
    llm.script.push({ stream: ['Partial ', 'answer, ', 'then the rest.'], hold, holdAfter: 1 });
    const abort = new AbortController();
    const res = await fetch(`${t.url}${P()}/ask/stream`, {
      method: 'POST',
      headers: { 'x-service-key': t.keys.admin, 'content-type': 'application/json' },
      body: JSON.stringify({ question: 'Tell me everything.' }),
      signal: abort.signal,
    });
    const threadId = res.headers.get('x-thread-id')!;
    const reader = res.body!.getReader();
    const first = await reader.read();
    expect(new TextDecoder().decode(first.value)).toBe('Partial ');
    abort.abort();
    await reader.cancel().catch(() => {});
    release();
    await vi.waitFor(
      async () => {
        const msgs = await api(t, 'GET', `${P()}/threads/${threadId}/messages`, { key: t.keys.admin });
        expect(msgs.body.data.at(-1)).toMatchObject({ role: 'assistant', text: 'Partial answer, then the rest.' });
      },
      { timeout: 10_000, interval: 50 },
    );
    expect(state.conversations.at(-1)).toMatchObject({ status: 'answered' });
  });

  it('falls back to the built-in analyst when the model endpoint fails, so the question is answered', async () => {
    // No scripted reply: the fake answers 500.
    const r = await api(t, 'POST', `${P()}/ask`, { key: t.keys.admin, body: { question: 'top errors' } });
    expect(r.status).toBe(200);
    expect(r.body.answered_by).toBe('deterministic');
    expect(r.body.answer.text).toContain('built-in analyst answered instead');
    expect(r.body.answer.text).toContain('PaymentDeclinedError');
  });
});

describe('agent time limit', () => {
  it('stops a run that outlives SIGHTLINE_AGENT_TIME_LIMIT and stores what it had, saying so', async () => {
    const slow = await startFakeLlm();
    const t2 = await startTestServer({ config: { llm: { baseUrl: slow.url, apiKey: null, model: 'gpt-slow', maxTurns: 3, maxToolCalls: 3, timeLimitMs: 300 } } });
    try {
      // The model sends one chunk and then never finishes.
      slow.script.push({ stream: ['Looking', ' into it'], hold: new Promise<void>(() => {}), holdAfter: 1 });
      const res = await fetch(`${t2.url}/v1/projects/${t2.projectId}/ask/stream`, {
        method: 'POST',
        headers: { 'x-service-key': t2.keys.admin, 'content-type': 'application/json' },
        body: JSON.stringify({ question: 'Anything wrong?' }),
      });
      const streamed = await res.text();
      expect(streamed).toMatch(/^Looking\n\n\(I stopped: the answer took longer than the 0\.3-second limit/);
      const msgs = await api(t2, 'GET', `/v1/projects/${t2.projectId}/threads/${res.headers.get('x-thread-id')}/messages`, { key: t2.keys.admin });
      expect(msgs.body.data.at(-1)).toMatchObject({ role: 'assistant', text: streamed, answered_by: 'gpt-slow' });
    } finally {
      await t2.close();
      await slow.close();
    }
  });
});
