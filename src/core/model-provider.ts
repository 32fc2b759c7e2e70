/**
 * The model behind the in-project agent: any OpenAI-compatible chat-completions endpoint with tool
 * calling (`POST {baseUrl}/chat/completions`), configured by SIGHTLINE_LLM_* (src/core/config.ts).
 * One job: send the conversation and tool definitions, return the assistant's text and tool calls.
 * With `onText` the request streams (`stream: true`, server-sent events) and text deltas are passed
 * on as they arrive; tool-call fragments are assembled by index, as the OpenAI stream sends them.
 */

import type { ChatTurn, ModelProvider } from '../domain/agent/model.js';

export type { ChatMessage, ChatTool, ChatToolCall, ChatTurn, ModelProvider } from '../domain/agent/model.js';

export class ModelProviderError extends Error {}

export function createOpenAiCompatibleProvider(cfg: { baseUrl: string; apiKey: string | null; model: string }, fetchImpl: typeof fetch = fetch): ModelProvider {
  return {
    name: cfg.model,
    async chat({ messages, tools, onText, signal }) {
      const res = await fetchImpl(`${cfg.baseUrl}/chat/completions`, {
        method: 'POST',
        headers: { 'content-type': 'application/json', accept: onText ? 'text/event-stream' : 'application/json', ...(cfg.apiKey ? { authorization: `Bearer ${cfg.apiKey}` } : {}) },
        body: JSON.stringify({ model: cfg.model, messages, tools, tool_choice: 'auto', ...(onText ? { stream: true } : {}) }),
        signal,
      });
      if (!res.ok) {
        await res.body?.cancel().catch(() => {});
        throw new ModelProviderError(`The model endpoint answered ${res.status}.`);
      }
      const type = res.headers.get('content-type') ?? '';
      if (onText && type.includes('text/event-stream') && res.body) return readStream(res.body, onText);
      const json = (await res.json()) as { choices?: { message?: { content?: string | null; tool_calls?: RawToolCall[] } }[] };
      const msg = json.choices?.[0]?.message;
      if (!msg) throw new ModelProviderError('The model endpoint answered without a message.');
      const text = msg.content ?? '';
      if (onText && text) onText(text);
      return { text, toolCalls: (msg.tool_calls ?? []).map((c, i) => ({ id: c.id ?? `call_${i}`, name: c.function?.name ?? '', arguments: c.function?.arguments ?? '' })) };
    },
  };
}

interface RawToolCall {
  index?: number;
  id?: string;
  function?: { name?: string; arguments?: string };
}

/** Server-sent events: `data: {chunk}` lines until `data: [DONE]`. */
async function readStream(body: ReadableStream<Uint8Array>, onText: (delta: string) => void): Promise<ChatTurn> {
  const decoder = new TextDecoder();
  let buffer = '';
  let text = '';
  const calls: { id: string; name: string; arguments: string }[] = [];
  const handle = (data: string): boolean => {
    if (data === '[DONE]') return true;
    let chunk: { choices?: { delta?: { content?: string | null; tool_calls?: RawToolCall[] } }[] };
    try {
      chunk = JSON.parse(data);
    } catch {
      return false;
    }
    const delta = chunk.choices?.[0]?.delta;
    if (delta?.content) {
      text += delta.content;
      onText(delta.content);
    }
    for (const tc of delta?.tool_calls ?? []) {
      const i = tc.index ?? calls.length;
      const c = (calls[i] ??= { id: '', name: '', arguments: '' });
      if (tc.id) c.id = tc.id;
      if (tc.function?.name) c.name += tc.function.name;
      if (tc.function?.arguments) c.arguments += tc.function.arguments;
    }
    return false;
  };
  const reader = body.getReader();
  let done = false;
  while (!done) {
    const r = await reader.read();
    if (r.done) break;
    buffer += decoder.decode(r.value, { stream: true });
    let nl: number;
    while ((nl = buffer.indexOf('\n')) >= 0) {
      const line = buffer.slice(0, nl).replace(/\r$/, '');
      buffer = buffer.slice(nl + 1);
      if (line.startsWith('data:') && handle(line.slice(5).trim())) {
        done = true;
        break;
      }
    }
  }
  if (done) await reader.cancel().catch(() => {});
  return { text, toolCalls: calls.filter(Boolean).map((c, i) => ({ id: c.id || `call_${i}`, name: c.name, arguments: c.arguments })) };
}
