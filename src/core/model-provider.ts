/**
 * The model behind the in-project agent: any OpenAI-compatible chat-completions endpoint with tool
 * calling (`POST {baseUrl}/chat/completions`), configured by SIGHTLINE_LLM_* (src/core/config.ts).
 * One job: send the conversation and tool definitions, return the assistant's text and tool calls.
 * With `onText` the request streams (`stream: true`, server-sent events) and text deltas are passed
 * on as they arrive; tool-call fragments are assembled by index, as the OpenAI stream sends them.
 */

export interface ChatToolCall {
  id: string;
  name: string;
  /** The JSON arguments as the model wrote them (may be invalid JSON). */
  arguments: string;
}

export type ChatMessage =
  | { role: 'system' | 'user'; content: string }
  | { role: 'assistant'; content: string | null; tool_calls?: { id: string; type: 'function'; function: { name: string; arguments: string } }[] }
  | { role: 'tool'; tool_call_id: string; content: string };

export interface ChatTool {
  type: 'function';
  function: { name: string; description: string; parameters: Record<string, unknown> };
}

export interface ChatTurn {
  text: string;
  toolCalls: ChatToolCall[];
}

export interface ModelProvider {
  /** `deterministic` for the built-in analyst, else the configured model name. */
  readonly name: string;
  chat(req: { messages: ChatMessage[]; tools: ChatTool[]; onText?: (delta: string) => void; signal?: AbortSignal }): Promise<ChatTurn>;
}

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
