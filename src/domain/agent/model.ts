/**
 * What the agent's runner needs from a model, as plain types (src/core/model-provider.ts implements
 * it for OpenAI-compatible endpoints): send the conversation and the tool definitions, get back the
 * assistant's text and tool calls, with text deltas passed on while they stream.
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
  /** The configured model name (what `answered_by` says). */
  readonly name: string;
  chat(req: { messages: ChatMessage[]; tools: ChatTool[]; onText?: (delta: string) => void; signal?: AbortSignal }): Promise<ChatTurn>;
}
