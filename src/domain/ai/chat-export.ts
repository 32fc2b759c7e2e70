/**
 * `export --format openai-chat`: one exported generation → one line of OpenAI chat fine-tuning
 * JSONL (`{"messages":[…]}`, assistant tool calls as `tool_calls`), or null when the generation has
 * no usable conversation (content withheld by privacy mode, or no assistant output).
 */
import type { ChatMessage, Content } from './observation.js';

interface OpenAiMessage {
  role: string;
  content: string | null;
  tool_calls?: { id: string; type: 'function'; function: { name: string; arguments: string } }[];
  tool_call_id?: string;
}

function toOpenAi(m: ChatMessage): OpenAiMessage {
  const out: OpenAiMessage = { role: m.role === 'model' ? 'assistant' : m.role, content: m.content };
  if (m.tool_calls?.length) out.tool_calls = m.tool_calls.map((t, i) => ({ id: t.id || `call_${i}`, type: 'function', function: { name: t.name, arguments: t.arguments } }));
  if (m.tool_call_id) out.tool_call_id = m.tool_call_id;
  return out;
}

const asContent = (v: unknown): Content | null => (v && typeof v === 'object' && !Array.isArray(v) ? (v as Content) : null);

export function openAiChatLine(row: { input_json: unknown; output_json: unknown }): { messages: OpenAiMessage[] } | null {
  const input = asContent(row.input_json);
  const output = asContent(row.output_json);
  if (!input || !output || 'redacted' in input || 'redacted' in output) return null;
  const messages: OpenAiMessage[] = [];
  if (input.system) messages.push({ role: 'system', content: input.system });
  if (input.messages) messages.push(...input.messages.map(toOpenAi));
  else if (typeof input.value === 'string') messages.push({ role: 'user', content: input.value });
  else return null;
  const replies = output.messages?.filter((m) => m.role === 'assistant' || m.role === 'model') ?? [];
  if (!replies.length && typeof output.value === 'string') replies.push({ role: 'assistant', content: output.value });
  if (!replies.length) return null;
  messages.push(...replies.map(toOpenAi));
  return { messages };
}
