/**
 * Why this file: the in-project agent is three parts built side by side: its state (settings,
 * memory, skills, signals, usage and budget, channels, conversations: `services.agentState`), its
 * runner (the model loop over Code Mode `search`/`execute`: `services.agentRunner`) and the
 * automations that use both. This file is the contract between them; each part implements its
 * interface and the others code against it, never against each other's internals.
 */

/** The spec's four values (In-project agent, Settings object); `important` is sev1 and sev2. */
export type ProactiveAlerts = 'off' | 'sev1_only' | 'important' | 'all';
export type ReplyStyle = 'concise' | 'detailed';
export type BudgetStage = 'normal' | 'conserve' | 'notify_only' | 'exhausted';

export interface AgentSettings {
  proactive_alerts: ProactiveAlerts;
  pr_review: boolean;
  auto_fix: boolean;
  reply_style: ReplyStyle;
  daily_alert_cap: number;
  alert_channel_id: string | null;
}

/** What the agent's instructions are built from: active memory and skills only, never retired ones. */
export interface AgentContext {
  settings: AgentSettings;
  memory: { id: string; kind: string; content: string; scope: 'project' | 'organization' }[];
  /** Effective skills: project over organization over platform, by name. */
  skills: { name: string; description: string; content: string; source: 'project' | 'organization' | 'platform' }[];
  usage: { stage: BudgetStage; used_percent: number; wakes: number; alerts_posted: number };
}

export type ConversationKind = 'chat' | 'investigation' | 'channel_thread' | 'pr_review' | 'automation';

export interface ConversationRecord {
  kind: ConversationKind;
  title: string;
  thread_id?: string | null;
  signal_id?: string | null;
  status: 'running' | 'answered' | 'failed' | 'refused';
  /** Which model answered: `deterministic` or the configured model name. */
  answered_by: string;
  started_at: number;
  ended_at?: number | null;
}

/** A message for a channel (Slack-compatible incoming webhook or signed JSON webhook). */
export interface ChannelMessage {
  title: string;
  text: string;
  url?: string;
  /** Structured fields sent as JSON to generic webhooks. */
  data?: Record<string, unknown>;
}

/** Implemented by the agent state module (settings, memory, skills, usage, conversations, channels). */
export interface AgentState {
  context(projectId: string, now: number): AgentContext;
  /** Counts one wake (a model turn or a deterministic answer) and its cost against today's budget. */
  recordWake(projectId: string, now: number, cost: { units: number }): void;
  recordConversation(projectId: string, c: ConversationRecord): string;
  finishConversation(projectId: string, id: string, patch: Pick<ConversationRecord, 'status'> & { ended_at: number }): void;
  /** Queues delivery (retries, delivery log); resolves with the delivery id. Unknown channel: throws NotFoundError. */
  sendToChannel(projectId: string, channelId: string, message: ChannelMessage, now: number): string;
}

export interface AgentToolCall {
  tool: 'search' | 'execute';
  input: string;
  ok: boolean;
  /** operationIds invoked by an `execute`, in order. */
  operations: string[];
  output_bytes: number;
}

export interface AgentRunResult {
  text: string;
  answered_by: string;
  tool_calls: AgentToolCall[];
}

/** Implemented by the agent runner (model provider + Code Mode loop). */
export interface AgentRunner {
  run(opts: {
    projectId: string;
    prompt: string;
    kind: ConversationKind;
    /** Scopes the run's principal holds (already narrowed by settings and budget stage). */
    scopes: string[];
    /** Extra instructions (a skill's content, an automation step's brief). */
    instructions?: string;
    threadId?: string | null;
    onChunk?: (text: string) => void;
    signal?: AbortSignal;
    now: number;
  }): Promise<AgentRunResult>;
}
