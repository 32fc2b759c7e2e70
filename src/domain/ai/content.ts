/**
 * Message and content normalization: every source's prompt and output shape → Content
 * (`{ system?, messages?: ChatMessage[], value? }`). Shapes understood: OpenAI chat messages (string
 * or part-array content, tool_calls), OpenTelemetry GenAI messages (`parts` of type text, tool_call,
 * tool_call_response, reasoning), Langfuse input/output objects, and plain values.
 */
import type { ChatMessage, Content } from './observation.js';

type Json = unknown;
const isObj = (v: Json): v is Record<string, Json> => !!v && typeof v === 'object' && !Array.isArray(v);
const str = (v: Json): string => (typeof v === 'string' ? v : v === undefined || v === null ? '' : JSON.stringify(v));

/** A JSON string attribute → its value; other strings and values unchanged. */
export function maybeJson(v: Json): Json {
  if (typeof v !== 'string') return v;
  const t = v.trim();
  if (!(t.startsWith('{') || t.startsWith('['))) return v;
  try {
    return JSON.parse(t);
  } catch {
    return v;
  }
}

function textOfParts(parts: Json[]): { text: string | null; reasoning: string; toolCalls: ChatMessage['tool_calls']; toolResponse?: { id: string; text: string } } {
  const texts: string[] = [];
  const reasoning: string[] = [];
  const toolCalls: NonNullable<ChatMessage['tool_calls']> = [];
  let toolResponse: { id: string; text: string } | undefined;
  for (const p of parts) {
    if (typeof p === 'string') {
      texts.push(p);
      continue;
    }
    if (!isObj(p)) continue;
    const type = str(p.type);
    if (type === 'text' || type === 'input_text' || type === 'output_text') texts.push(str(p.content ?? p.text));
    else if (type === 'reasoning' || type === 'thinking') reasoning.push(str(p.content ?? p.text ?? p.thinking));
    else if (type === 'tool_call' || type === 'function_call') toolCalls.push({ id: str(p.id), name: str(p.name), arguments: typeof p.arguments === 'string' ? p.arguments : JSON.stringify(p.arguments ?? {}) });
    else if (type === 'tool_call_response' || type === 'function_call_output') toolResponse = { id: str(p.id), text: str(p.response ?? p.result ?? p.output) };
    else if ('text' in p) texts.push(str(p.text));
    else if ('content' in p && typeof p.content === 'string') texts.push(p.content);
  }
  return { text: texts.length ? texts.join('') : null, reasoning: reasoning.join(''), toolCalls, toolResponse };
}

/** One message in any known shape → ChatMessage (null when it is not a message). */
export function normalizeMessage(m: Json): ChatMessage | null {
  if (!isObj(m)) return null;
  const role = str(m.role ?? m.type);
  if (!role) return null;
  const out: ChatMessage = { role, content: null };
  const reasoning: string[] = [];
  if (Array.isArray(m.parts)) {
    const p = textOfParts(m.parts);
    out.content = p.text;
    if (p.reasoning) reasoning.push(p.reasoning);
    if (p.toolCalls?.length) out.tool_calls = p.toolCalls;
    if (p.toolResponse) {
      out.tool_call_id = p.toolResponse.id;
      out.content = p.toolResponse.text;
    }
  } else if (Array.isArray(m.content)) {
    const p = textOfParts(m.content);
    out.content = p.text;
    if (p.reasoning) reasoning.push(p.reasoning);
    if (p.toolCalls?.length) out.tool_calls = p.toolCalls;
  } else if (m.content !== undefined && m.content !== null) {
    out.content = str(m.content);
  }
  if (Array.isArray(m.tool_calls)) {
    const calls = m.tool_calls.filter(isObj).map((c) => {
      const fn = isObj(c.function) ? c.function : c;
      return { id: str(c.id), name: str(fn.name), arguments: typeof fn.arguments === 'string' ? fn.arguments : JSON.stringify(fn.arguments ?? {}) };
    });
    if (calls.length) out.tool_calls = [...(out.tool_calls ?? []), ...calls];
  }
  if (typeof m.tool_call_id === 'string') out.tool_call_id = m.tool_call_id;
  for (const k of ['reasoning', 'reasoning_content', 'thinking']) if (typeof m[k] === 'string' && m[k]) reasoning.push(m[k] as string);
  if (reasoning.length) out.reasoning = reasoning.join('');
  return out;
}

/** Messages → Content, the system messages moved to `system`. */
export function contentFromMessages(messages: ChatMessage[], system?: string): Content {
  const sys: string[] = system ? [system] : [];
  const rest: ChatMessage[] = [];
  for (const m of messages) {
    if (m.role === 'system' || m.role === 'developer') {
      if (m.content) sys.push(m.content);
    } else rest.push(m);
  }
  const c: Content = { messages: rest };
  if (sys.length) c.system = sys.join('\n');
  return c;
}

/** Any value (a JSON string, a message array, `{ messages }`, an OpenAI response, other) → Content. */
export function normalizeContent(v: Json): Content | null {
  v = maybeJson(v);
  if (v === undefined || v === null || v === '') return null;
  if (Array.isArray(v)) {
    const msgs = v.map(normalizeMessage);
    if (msgs.length && msgs.every((m) => m !== null)) return contentFromMessages(msgs as ChatMessage[]);
    return { value: v };
  }
  if (isObj(v)) {
    if (Array.isArray(v.messages)) {
      const msgs = v.messages.map(normalizeMessage).filter((m): m is ChatMessage => m !== null);
      return contentFromMessages(msgs, typeof v.system === 'string' ? v.system : undefined);
    }
    if (Array.isArray(v.choices)) {
      // An OpenAI chat completion response.
      const msgs = v.choices.map((c) => (isObj(c) ? normalizeMessage(c.message) : null)).filter((m): m is ChatMessage => m !== null);
      if (msgs.length) return { messages: msgs };
    }
    if (typeof v.role === 'string') {
      const m = normalizeMessage(v);
      if (m) return contentFromMessages([m]);
    }
  }
  return { value: v };
}

/** System instructions (GenAI `gen_ai.system_instructions`: parts, or a string) → text. */
export function systemText(v: Json): string {
  v = maybeJson(v);
  if (typeof v === 'string') return v;
  if (Array.isArray(v)) return textOfParts(v).text ?? '';
  if (isObj(v)) return str(v.content ?? v.text);
  return '';
}

/** Merge two contents (e.g. messages from attributes and from events). */
export function mergeContent(a: Content | null, b: Content | null): Content | null {
  if (!a) return b;
  if (!b) return a;
  const out: Content = { ...a };
  if (b.system && !a.system) out.system = b.system;
  if (b.messages?.length) out.messages = [...(a.messages ?? []), ...b.messages];
  if (b.value !== undefined && a.value === undefined) out.value = b.value;
  return out;
}
