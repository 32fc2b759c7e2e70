/**
 * A fake OpenAI-compatible chat-completions server over real HTTP, for the agent tests: each test
 * scripts the replies (text, tool calls to `search`/`execute`, streamed or not) and reads back the
 * requests the agent sent (messages, tools, headers). Also a fake `AgentState` (contract.ts) that
 * records wakes and conversations.
 */
import http from 'node:http';
import type { AddressInfo } from 'node:net';
import type { AgentContext, AgentState, BudgetStage, ConversationRecord } from '../../src/domain/agent/contract.js';

export type Reply =
  | { text?: string; toolCalls?: { name: 'search' | 'execute' | string; args: unknown }[] }
  | { stream: string[]; toolCalls?: { name: string; args: unknown }[]; hold?: Promise<void>; holdAfter?: number };

export interface SeenRequest {
  body: { model: string; stream?: boolean; messages: { role: string; content: string | null; tool_call_id?: string; tool_calls?: unknown[] }[]; tools: { function: { name: string } }[] };
  headers: http.IncomingHttpHeaders;
}

export interface FakeLlm {
  url: string;
  script: Reply[];
  seen: SeenRequest[];
  close(): Promise<void>;
}

let callSeq = 0;

export async function startFakeLlm(): Promise<FakeLlm> {
  const seen: SeenRequest[] = [];
  const script: Reply[] = [];
  const server = http.createServer((req, res) => {
    const chunks: Buffer[] = [];
    req.on('data', (c) => chunks.push(c));
    req.on('end', async () => {
      const body = JSON.parse(Buffer.concat(chunks).toString('utf8'));
      seen.push({ body, headers: req.headers });
      const reply = script.shift();
      if (!reply) {
        res.writeHead(500, { 'content-type': 'application/json' }).end('{"error":"no scripted reply"}');
        return;
      }
      const calls = (reply.toolCalls ?? []).map((c) => ({ id: `call_${++callSeq}`, name: c.name, arguments: typeof c.args === 'string' ? c.args : JSON.stringify(c.args) }));
      if (!('stream' in reply)) {
        res.writeHead(200, { 'content-type': 'application/json' });
        res.end(
          JSON.stringify({
            id: 'cmpl',
            object: 'chat.completion',
            choices: [
              {
                index: 0,
                finish_reason: calls.length ? 'tool_calls' : 'stop',
                message: { role: 'assistant', content: reply.text ?? null, ...(calls.length ? { tool_calls: calls.map((c) => ({ id: c.id, type: 'function', function: { name: c.name, arguments: c.arguments } })) } : {}) },
              },
            ],
          }),
        );
        return;
      }
      res.writeHead(200, { 'content-type': 'text/event-stream', 'cache-control': 'no-cache' });
      const send = (delta: unknown) => res.write(`data: ${JSON.stringify({ id: 'cmpl', object: 'chat.completion.chunk', choices: [{ index: 0, delta }] })}\n\n`);
      for (let i = 0; i < reply.stream.length; i++) {
        if (reply.hold && i === (reply.holdAfter ?? 1)) await reply.hold;
        send({ content: reply.stream[i] });
      }
      // Tool calls arrive in fragments: id and name first, then the arguments in two pieces.
      calls.forEach((c, index) => {
        send({ tool_calls: [{ index, id: c.id, type: 'function', function: { name: c.name, arguments: '' } }] });
        const half = Math.floor(c.arguments.length / 2);
        send({ tool_calls: [{ index, function: { arguments: c.arguments.slice(0, half) } }] });
        send({ tool_calls: [{ index, function: { arguments: c.arguments.slice(half) } }] });
      });
      res.write('data: [DONE]\n\n');
      res.end();
    });
  });
  await new Promise<void>((r) => server.listen(0, '127.0.0.1', r));
  return {
    url: `http://127.0.0.1:${(server.address() as AddressInfo).port}/v1`,
    script,
    seen,
    close: () =>
      new Promise<void>((r) => {
        server.close(() => r());
        server.closeAllConnections();
      }),
  };
}

export interface FakeState extends AgentState {
  stage: BudgetStage;
  autoFix: boolean;
  memory: AgentContext['memory'];
  skills: AgentContext['skills'];
  wakes: number;
  conversations: (ConversationRecord & { id: string })[];
}

export function fakeAgentState(init: Partial<Pick<FakeState, 'stage' | 'autoFix' | 'memory' | 'skills'>> = {}): FakeState {
  const state: FakeState = {
    stage: init.stage ?? 'normal',
    autoFix: init.autoFix ?? false,
    memory: init.memory ?? [],
    skills: init.skills ?? [],
    wakes: 0,
    conversations: [],
    context() {
      return {
        settings: { proactive_alerts: 'all', pr_review: false, auto_fix: state.autoFix, reply_style: 'concise', daily_alert_cap: 5, alert_channel_id: null },
        memory: state.memory,
        skills: state.skills,
        usage: { stage: state.stage, used_percent: 0, wakes: state.wakes, alerts_posted: 0 },
      };
    },
    recordWake() {
      state.wakes++;
    },
    recordConversation(_projectId, c) {
      const id = `conv_${state.conversations.length + 1}`;
      state.conversations.push({ ...c, id });
      return id;
    },
    finishConversation(_projectId, id, patch) {
      const c = state.conversations.find((x) => x.id === id);
      if (c) Object.assign(c, patch);
    },
    sendToChannel() {
      return 'delivery_1';
    },
  };
  return state;
}
