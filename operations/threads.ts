/**
 * Chat threads and messages (spec, "Chat thread and message" and "Chat threads"), and `ask`: a
 * question to the in-project agent stored as a user message, answered by the agent
 * (services.agentRunner) and stored as an assistant message attributed to the service.
 */
import { z } from 'zod';
import { defineOperation, type HandlerContext } from './define.js';
import { offsetPagination, projectId, queryInt, toIso, uuid } from './shared.js';
import { incidentIdParam, requireIncident } from './incidents.js';
import { AppError, ConflictError, NotFoundError } from '../src/core/errors.js';
import { principalHolds } from '../src/core/principal.js';
import { agentScopes, modelNameFor } from '../src/domain/agent/runner.js';
import type { AgentRunResult } from '../src/domain/agent/contract.js';
import { MESSAGE_ROLES, type MessageRow, type NewMessage, type ThreadRow } from '../src/storage/threads-repo.js';

const BASE = '/v1/projects/{project_id}';
const SERVICE_AUTHOR = 'Sightline';

const threadSchema = z.object({
  id: z.string().describe('UUID.'),
  project_id: z.string(),
  title: z.string(),
  source: z.string().describe('Where the thread lives: api (default), dashboard, slack, ...'),
  created_by: z.string().describe('Who created it: the user\'s email, or `api_key:<key id>`.'),
  external_thread_id: z.string().nullable().describe('The thread\'s id in its source (e.g. a Slack thread timestamp).'),
  incident_id: z.string().nullable().describe('Canonical incident UUID when the thread belongs to an incident.'),
  model_id: z.string().nullable().describe('The model that answered last: `deterministic` or the configured model.'),
  archived_at: z.string().nullable(),
  last_message_at: z.string().nullable(),
  message_count: z.number().int(),
  created_at: z.string(),
  updated_at: z.string(),
});

const messageSchema = z.object({
  id: z.string().describe('Stable message id (given by the sender or generated).'),
  thread_id: z.string(),
  sequence: z.number().int().describe('Position in the thread, 1, 2, 3 ... (append-only).'),
  role: z.enum(MESSAGE_ROLES),
  source: z.string(),
  text: z.string(),
  external_message_id: z.string().nullable(),
  author_name: z.string().nullable().describe('Display name; the service (Sightline) for assistant and system messages.'),
  author_image: z.string().nullable(),
  author_user_id: z.string().nullable().describe('Authenticated user who wrote it (humans through a user token).'),
  author_key_id: z.string().nullable().describe('API key that wrote it (humans through an API key or an integration).'),
  answered_by: z.string().nullable().describe('Assistant messages: `deterministic` or the model name.'),
  created_at: z.string(),
});

function threadOut(t: ThreadRow): z.input<typeof threadSchema> {
  return {
    id: t.id,
    project_id: t.project_id,
    title: t.title,
    source: t.source,
    created_by: t.created_by,
    external_thread_id: t.external_thread_id,
    incident_id: t.incident_id,
    model_id: t.model_id,
    archived_at: toIso(t.archived_at),
    last_message_at: toIso(t.last_message_at),
    message_count: t.message_count,
    created_at: toIso(t.created_at)!,
    updated_at: toIso(t.updated_at)!,
  };
}

function messageOut(m: MessageRow): z.input<typeof messageSchema> {
  return {
    id: m.id,
    thread_id: m.thread_id,
    sequence: m.sequence,
    role: m.role,
    source: m.source,
    text: m.text,
    external_message_id: m.external_message_id,
    author_name: m.author_name,
    author_image: m.author_image,
    author_user_id: m.author_user_id,
    author_key_id: m.author_key_id,
    answered_by: m.answered_by,
    created_at: toIso(m.created_at)!,
  };
}

const threadIdParam = uuid('thread id').describe('Thread UUID.');
const sourceParam = z.string().regex(/^[a-z][a-z0-9_-]{0,31}$/, 'must be a short lowercase name such as api, dashboard or slack');
const externalId = z.string().trim().min(1).max(200);
const messageIdParam = z.string().regex(/^[A-Za-z0-9][A-Za-z0-9_.:-]{0,99}$/, 'must be 1 to 100 letters, digits, _ . : -');
const archiveFilter = z.enum(['active', 'archived', 'all']);

function requireThread(ctx: HandlerContext, id: string): ThreadRow {
  const t = ctx.services.threads.get(ctx.project!.id, id.toLowerCase());
  if (!t) throw new NotFoundError('Thread', 'thread_id');
  return t;
}

/** Who a person is, from the credential (spec: author metadata for humans). */
function humanAuthor(ctx: HandlerContext, given: { author_name?: string; author_image?: string }) {
  const p = ctx.principal;
  return {
    author_name: given.author_name ?? (p.kind === 'user' ? p.email : `API key ${p.keyId}`),
    author_image: given.author_image ?? null,
    author_user_id: p.kind === 'user' ? p.userId : null,
    author_key_id: p.kind === 'api_key' ? p.keyId : null,
  };
}

const createdBy = (ctx: HandlerContext) => (ctx.principal.kind === 'user' ? ctx.principal.email : `api_key:${ctx.principal.keyId}`);

const threadOutput = threadSchema;
const notFound = { status: 404, code: 'not_found', when: 'no such thread in this project' } as const;
const badInput = { status: 400, code: 'invalid_parameter', when: 'a field is missing, too long or malformed' } as const;

export const list = defineOperation({
  operationId: 'threads.list',
  tag: 'threads',
  summary: 'List chat threads',
  description:
    'Chat threads of the project (dashboard chats, `ask` conversations with the in-project agent, threads mirrored from chat tools), most recently active first. `status`: `active` (default, not archived), `archived` or `all`. `incident_id` (incident UUID or display id such as INC-12) lists the threads of one incident. Offset pagination.',
  method: 'GET',
  path: `${BASE}/threads`,
  scopes: ['read'],
  risk: 'read',
  sensitive: false,
  projectScoped: true,
  input: z.strictObject({
    project_id: projectId,
    status: archiveFilter.default('active').describe('active (default), archived or all.'),
    incident_id: incidentIdParam.optional(),
    ...offsetPagination(50, 200),
  }),
  output: z.object({ data: z.array(threadSchema), total: z.number().int(), limit: z.number().int(), offset: z.number().int() }),
  errors: [badInput, { status: 404, code: 'not_found', when: 'incident_id names no incident of this project' }],
  example: { incident_id: 'INC-12' },
  display: { columns: ['id', 'title', 'source', 'message_count', 'last_message_at', 'incident_id'] },
  handler(input, ctx) {
    const incidentId = input.incident_id ? requireIncident(ctx, input.incident_id).id : null;
    const { rows, total } = ctx.services.threads.list(ctx.project!.id, { archived: input.status, incidentId, limit: input.limit, offset: input.offset });
    return { data: rows.map(threadOut), total, limit: input.limit, offset: input.offset };
  },
});

export const create = defineOperation({
  operationId: 'threads.create',
  tag: 'threads',
  summary: 'Create a chat thread',
  description:
    'Starts a chat thread, optionally for an incident (`incident_id`: UUID or INC-12; stored as the canonical UUID) and mirrored from a chat tool (`source` plus `external_thread_id`). Creating again with the same `source` and `external_thread_id` returns the existing thread (200) instead of a second one (201).',
  method: 'POST',
  path: `${BASE}/threads`,
  scopes: ['write'],
  risk: 'write',
  sensitive: false,
  projectScoped: true,
  successStatus: 201,
  input: z.strictObject({
    project_id: projectId,
    title: z.string().trim().min(1).max(200).default('New thread'),
    source: sourceParam.default('api'),
    external_thread_id: externalId.optional(),
    incident_id: incidentIdParam.optional(),
    model_id: z.string().trim().min(1).max(100).optional().describe('The model this thread should use, when a client picks one.'),
  }),
  output: threadOutput,
  errors: [badInput, { status: 404, code: 'not_found', when: 'incident_id names no incident of this project' }],
  example: { title: 'Checkout errors after deploy', incident_id: 'INC-12' },
  handler(input, ctx) {
    const pid = ctx.project!.id;
    const incidentId = input.incident_id ? requireIncident(ctx, input.incident_id).id : null;
    return ctx.services.atomic(() => {
      if (input.external_thread_id) {
        const existing = ctx.services.threads.byExternal(pid, input.source, input.external_thread_id);
        if (existing) {
          ctx.response.status = 200;
          return threadOut(existing);
        }
      }
      const row = ctx.services.threads.create(
        pid,
        { title: input.title, source: input.source, created_by: createdBy(ctx), external_thread_id: input.external_thread_id ?? null, incident_id: incidentId, model_id: input.model_id ?? null },
        ctx.now(),
      );
      return threadOut(row);
    });
  },
});

export const search = defineOperation({
  operationId: 'threads.search',
  tag: 'threads',
  summary: 'Search chat threads by text',
  description:
    'Threads whose title or any message contains `q` (case-insensitive), most recently active first, each with its first matching message (null when only the title matched). `status`: `all` (default), `active` or `archived`.',
  method: 'GET',
  path: `${BASE}/threads/search`,
  scopes: ['read'],
  risk: 'read',
  sensitive: false,
  projectScoped: true,
  input: z.strictObject({
    project_id: projectId,
    q: z.string().trim().min(1).max(200).describe('Text to find in thread titles and messages.'),
    status: archiveFilter.default('all').describe('all (default), active or archived.'),
    limit: queryInt({ min: 1, max: 100, default: 20, describe: 'Threads to return, 1 to 100 (default 20).' }),
  }),
  output: z.object({ data: z.array(z.object({ thread: threadSchema, match: messageSchema.nullable() })) }),
  errors: [badInput],
  example: { q: 'checkout timeout' },
  handler(input, ctx) {
    const hits = ctx.services.threads.search(ctx.project!.id, input.q, { archived: input.status, limit: input.limit });
    return { data: hits.map((h) => ({ thread: threadOut(h.thread), match: h.match ? messageOut(h.match) : null })) };
  },
});

export const get = defineOperation({
  operationId: 'threads.get',
  tag: 'threads',
  summary: 'Get a chat thread',
  description: 'One thread: source, creator, external thread id, incident, model, archive state and when it was last active. Its messages: threads.listMessages.',
  method: 'GET',
  path: `${BASE}/threads/{thread_id}`,
  scopes: ['read'],
  risk: 'read',
  sensitive: false,
  projectScoped: true,
  input: z.strictObject({ project_id: projectId, thread_id: threadIdParam }),
  output: threadOutput,
  errors: [notFound],
  example: { thread_id: '0f8fad5b-d9cb-469f-a165-70867728950e' },
  handler(input, ctx) {
    return threadOut(requireThread(ctx, input.thread_id));
  },
});

function archiveOp(operationId: 'threads.archive' | 'threads.unarchive') {
  const archive = operationId === 'threads.archive';
  return defineOperation({
    operationId,
    tag: 'threads',
    summary: archive ? 'Archive a chat thread' : 'Unarchive a chat thread',
    description: archive
      ? 'Hides the thread from the default thread list (`status=active`); it keeps its messages and can still be read, searched and continued. Archiving an archived thread changes nothing.'
      : 'Brings an archived thread back into the default thread list. Unarchiving an active thread changes nothing.',
    method: 'POST',
    path: `${BASE}/threads/{thread_id}/${archive ? 'archive' : 'unarchive'}`,
    scopes: ['write'],
    risk: 'write',
    sensitive: false,
    projectScoped: true,
    input: z.strictObject({ project_id: projectId, thread_id: threadIdParam }),
    output: threadOutput,
    errors: [notFound],
    example: { thread_id: '0f8fad5b-d9cb-469f-a165-70867728950e' },
    handler(input, ctx) {
      const t = requireThread(ctx, input.thread_id);
      if (archive !== (t.archived_at !== null)) ctx.services.threads.setArchived(t.project_id, t.id, archive ? ctx.now() : null, ctx.now());
      return threadOut(requireThread(ctx, t.id));
    },
  });
}

export const archive = archiveOp('threads.archive');
export const unarchive = archiveOp('threads.unarchive');

export const del = defineOperation({
  operationId: 'threads.delete',
  tag: 'threads',
  summary: 'Delete a chat thread and its messages',
  description: 'Deletes the thread and every message in it, for good. To only hide it, archive it.',
  method: 'DELETE',
  path: `${BASE}/threads/{thread_id}`,
  scopes: ['write'],
  risk: 'write',
  sensitive: false,
  projectScoped: true,
  input: z.strictObject({ project_id: projectId, thread_id: threadIdParam }),
  output: z.object({ id: z.string(), deleted: z.literal(true) }),
  errors: [notFound],
  example: { thread_id: '0f8fad5b-d9cb-469f-a165-70867728950e' },
  handler(input, ctx) {
    const t = requireThread(ctx, input.thread_id);
    ctx.services.threads.remove(t.project_id, t.id);
    return { id: t.id, deleted: true as const };
  },
});

export const listMessages = defineOperation({
  operationId: 'threads.listMessages',
  tag: 'threads',
  summary: 'List the messages of a chat thread',
  description:
    'Messages in `sequence` order (oldest first): role (user, assistant, system), text, source, external message id and author. Page with `after` set to the last `sequence` you have (`next_after`), until `next_after` is null.',
  method: 'GET',
  path: `${BASE}/threads/{thread_id}/messages`,
  scopes: ['read'],
  risk: 'read',
  sensitive: false,
  projectScoped: true,
  input: z.strictObject({
    project_id: projectId,
    thread_id: threadIdParam,
    after: queryInt({ min: 0, max: 1_000_000_000, default: 0, describe: 'Only messages with a higher sequence (default 0: from the start).' }),
    limit: queryInt({ min: 1, max: 500, default: 100, describe: 'Messages to return, 1 to 500 (default 100).' }),
  }),
  output: z.object({ data: z.array(messageSchema), next_after: z.number().int().nullable().describe('Send as `after` for the next page; null at the end.') }),
  errors: [badInput, notFound],
  example: { thread_id: '0f8fad5b-d9cb-469f-a165-70867728950e', limit: 50 },
  display: { columns: ['sequence', 'role', 'author_name', 'text'] },
  handler(input, ctx) {
    const t = requireThread(ctx, input.thread_id);
    const rows = ctx.services.threads.messages(t.id, input.after, input.limit + 1);
    const more = rows.length > input.limit;
    const page = rows.slice(0, input.limit);
    return { data: page.map(messageOut), next_after: more ? page[page.length - 1]!.sequence : null };
  },
});

export const appendMessage = defineOperation({
  operationId: 'threads.appendMessage',
  tag: 'threads',
  summary: 'Append a message to a chat thread',
  description:
    'Appends a person\'s message with the next `sequence` (messages are never edited). The author comes from the credential (the user, or the API key), with optional display `author_name` and `author_image` (e.g. from a chat tool). Idempotent: sending the same message `id`, or the same `source` plus `external_message_id`, again returns the stored message (200) instead of a second copy (201); the same id with different text is 409. Assistant and system messages are written by the service (threads.ask).',
  method: 'POST',
  path: `${BASE}/threads/{thread_id}/messages`,
  scopes: ['write'],
  risk: 'write',
  sensitive: false,
  projectScoped: true,
  successStatus: 201,
  input: z.strictObject({
    project_id: projectId,
    thread_id: threadIdParam,
    text: z.string().min(1).max(32_000),
    id: messageIdParam.optional().describe('Your stable id for this message, for safe retries.'),
    source: sourceParam.optional().describe('Where the message was written (default: the thread\'s source).'),
    external_message_id: externalId.optional().describe('The message\'s id in its source (e.g. a Slack message timestamp).'),
    author_name: z.string().trim().min(1).max(200).optional(),
    author_image: z.url().max(2000).optional(),
  }),
  output: messageSchema,
  errors: [badInput, notFound, { status: 409, code: 'message_id_reused', when: 'the message id (or source plus external id) is already stored with different text' }],
  example: { text: 'Is this related to the deploy at 14:05?', external_message_id: '1712345678.000100', source: 'slack' },
  handler(input, ctx) {
    const t = requireThread(ctx, input.thread_id);
    const m: NewMessage = {
      id: input.id,
      role: 'user',
      source: input.source ?? t.source,
      text: input.text,
      external_message_id: input.external_message_id ?? null,
      answered_by: null,
      ...humanAuthor(ctx, input),
    };
    const { message, replayed } = ctx.services.threads.append(t.id, m, ctx.now());
    if (replayed) {
      if (message.text !== input.text) throw new ConflictError('message_id_reused', 'A different message is already stored under this message id (or source and external message id); send a new id.', input.id ? 'id' : 'external_message_id');
      ctx.response.status = 200;
    }
    return messageOut(message);
  },
});

// ---- ask -------------------------------------------------------------------------------------

const askInput = z.strictObject({
  project_id: projectId,
  question: z.string().trim().min(1).max(8000).describe('What you want to know, in plain words.'),
  thread_id: threadIdParam.optional().describe('Continue this thread (default: a new thread titled after the question).'),
  source: sourceParam.default('api').describe('Where the question was asked (a new thread gets it too).'),
});

const askOutput = z.object({
  thread: threadSchema,
  question: messageSchema,
  answer: messageSchema,
  answered_by: z.string().describe('`deterministic` (the built-in analyst) or the configured model.'),
  tool_calls: z.array(z.object({ tool: z.enum(['search', 'execute']), ok: z.boolean(), operations: z.array(z.string()) })).describe('The agent\'s tool calls, in order, with the operations each execute ran.'),
});

const askErrors = [
  badInput,
  { status: 404, code: 'not_found', when: 'thread_id names no thread of this project' },
  { status: 503, code: 'agent_unavailable', when: 'the agent is not running in this server' },
] as const;

interface PreparedAsk {
  thread: ThreadRow;
  question: MessageRow;
  scopes: string[];
  conversationId: string | null;
}

/** Stores the question and decides the run's scopes; synchronous, so its errors are plain JSON errors. */
function prepareAsk(input: z.output<typeof askInput>, ctx: HandlerContext): PreparedAsk {
  if (!ctx.services.agentRunner) throw new AppError(503, 'api_error', 'agent_unavailable', 'The in-project agent is not running in this server.');
  const pid = ctx.project!.id;
  const now = ctx.now();
  const state = ctx.services.agentState;
  const context = state?.context(pid, now) ?? null;
  // A direct question is always answered; the budget stage and settings only narrow what the agent may change.
  const narrowed = agentScopes({ stage: context?.usage.stage ?? 'normal', autoFix: context?.settings.auto_fix ?? false, direct: true }) ?? ['read'];
  // Never more than the person asking holds.
  const scopes = narrowed.filter((s) => principalHolds(ctx.principal, ctx.project!.orgId, s));
  const { thread, question } = ctx.services.atomic(() => {
    const thread = input.thread_id
      ? requireThread(ctx, input.thread_id)
      : ctx.services.threads.create(pid, { title: input.question.slice(0, 120), source: input.source, created_by: createdBy(ctx), external_thread_id: null, incident_id: null, model_id: null }, now);
    const question = ctx.services.threads.append(thread.id, { role: 'user', source: input.source, text: input.question, external_message_id: null, answered_by: null, ...humanAuthor(ctx, {}) }, now).message;
    return { thread, question };
  });
  const conversationId =
    state?.recordConversation(pid, { kind: 'chat', title: input.question.slice(0, 120), thread_id: thread.id, status: 'running', answered_by: modelNameFor(ctx.services.config.llm), started_at: now }) ?? null;
  return { thread, question, scopes, conversationId };
}

/** Runs the agent and stores its answer as an assistant message, whatever happens to the caller meanwhile. */
async function answerAsk(p: PreparedAsk, ctx: HandlerContext, onChunk?: (s: string) => void): Promise<z.input<typeof askOutput>> {
  const pid = ctx.project!.id;
  let result: AgentRunResult;
  let status: 'answered' | 'failed' = 'answered';
  try {
    result = await ctx.services.agentRunner!.run({ projectId: pid, prompt: p.question.text, kind: 'chat', scopes: p.scopes, threadId: p.thread.id, onChunk, now: ctx.now(), ...(ctx.signal ? { signal: ctx.signal } : {}) });
  } catch {
    status = 'failed';
    const text = 'The agent failed to answer this question. Try again, or ask a narrower question.';
    onChunk?.(text);
    result = { text, answered_by: modelNameFor(ctx.services.config.llm), tool_calls: [] };
  }
  const answer = ctx.services.threads.append(
    p.thread.id,
    { role: 'assistant', source: 'sightline', text: result.text, external_message_id: null, answered_by: result.answered_by, author_name: SERVICE_AUTHOR, author_image: null, author_user_id: null, author_key_id: null },
    ctx.now(),
  ).message;
  if (p.conversationId) ctx.services.agentState?.finishConversation(pid, p.conversationId, { status, ended_at: ctx.now() });
  return {
    thread: threadOut(requireThread(ctx, p.thread.id)),
    question: messageOut(p.question),
    answer: messageOut(answer),
    answered_by: result.answered_by,
    tool_calls: result.tool_calls.map((c) => ({ tool: c.tool, ok: c.ok, operations: c.operations })),
  };
}

export const ask = defineOperation({
  operationId: 'threads.ask',
  tag: 'threads',
  summary: 'Ask the in-project agent a question',
  description:
    'Asks the project\'s agent (for example "what are the top errors since the last deploy?"). Creates a thread, or continues `thread_id`, stores the question as a user message, lets the agent investigate with read access (writes only where the agent settings and today\'s budget allow) and returns the stored assistant answer with `answered_by` (the configured model, or `deterministic` for the built-in analyst). For the answer as it is written, use threads.askStream.',
  method: 'POST',
  path: `${BASE}/ask`,
  scopes: ['write'],
  risk: 'write',
  sensitive: false,
  projectScoped: true,
  input: askInput,
  output: askOutput,
  errors: askErrors,
  example: { question: 'What are the top errors since the last deploy?' },
  async handler(input, ctx) {
    return answerAsk(prepareAsk(input, ctx), ctx);
  },
});

export const askStream = defineOperation({
  operationId: 'threads.askStream',
  tag: 'threads',
  summary: 'Ask the in-project agent, streaming the answer',
  description:
    'Same as threads.ask, but over HTTP the answer comes back as `text/plain` chunks while the agent works (headers `X-Thread-Id` and `X-Message-Id` name the thread and the stored question); the assistant message is stored in the thread when the answer is complete, even if the client disconnected. A client that asks only for JSON (Accept: application/json), and the MCP and CLI faces, get the same JSON answer as threads.ask.',
  method: 'POST',
  path: `${BASE}/ask/stream`,
  scopes: ['write'],
  risk: 'write',
  sensitive: false,
  projectScoped: true,
  streams: { contentType: 'text/plain; charset=utf-8' },
  input: askInput,
  output: askOutput,
  errors: askErrors,
  example: { question: 'Which operations got slower today?' },
  async handler(input, ctx) {
    const prepared = prepareAsk(input, ctx);
    if (!ctx.canStream) return answerAsk(prepared, ctx);
    const queue = chunkQueue();
    void answerAsk(prepared, ctx, queue.push)
      .catch(() => queue.push('\n\n(The answer could not be stored.)'))
      .finally(queue.end);
    ctx.response.headers['X-Thread-Id'] = prepared.thread.id;
    ctx.response.headers['X-Message-Id'] = prepared.question.id;
    ctx.response.stream = queue.chunks();
    // The answer streams; invoke returns the stream to the REST face, which sends it instead of a value.
    return undefined as never;
  },
});

/**
 * Chunks handed from the agent to the response as they come. The agent never waits for the
 * client: a consumer that stops (disconnect) only stops receiving; the answer is still stored.
 */
function chunkQueue() {
  const items: string[] = [];
  let done = false;
  let gone = false;
  let wake: (() => void) | null = null;
  const signal = () => {
    const w = wake;
    wake = null;
    w?.();
  };
  return {
    push: (s: string) => {
      if (gone || !s) return;
      items.push(s);
      signal();
    },
    end: () => {
      done = true;
      signal();
    },
    async *chunks(): AsyncGenerator<string> {
      try {
        for (;;) {
          if (items.length) yield items.shift()!;
          else if (done) return;
          else await new Promise<void>((r) => (wake = r));
        }
      } finally {
        gone = true;
        items.length = 0;
      }
    },
  };
}
