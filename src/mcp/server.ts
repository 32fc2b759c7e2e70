/**
 * The MCP server: Code Mode with two tools, `search` then `execute` (docs/architecture "MCP Code
 * Mode"). Transport-agnostic: `http.ts` serves it over Streamable HTTP at /mcp, `stdio.ts` over
 * stdio; tests drive it over an in-memory transport. Everything is derived from the catalogue.
 */
import { McpServer } from '@modelcontextprotocol/sdk/server/mcp.js';
import type { RequestHandlerExtra } from '@modelcontextprotocol/sdk/shared/protocol.js';
import type { ServerNotification, ServerRequest } from '@modelcontextprotocol/sdk/types.js';
import type { Logger } from 'pino';
import { z } from 'zod';
import type { AnyOperation } from '../../operations/define.js';
import type { Executor, SandboxLimits } from '../../sandbox/executor.js';
import { formatBytes, formatSeconds, resolveLimits } from '../../sandbox/limits.js';
import { runExecute, type ExecuteOutput, type McpCaller } from './execute.js';
import { createSearchIndex, type SearchIndex } from './search.js';
import { briefInput, briefOutput, compactSignature, exampleCall, fullSignature } from './signatures.js';

export const SERVER_NAME = 'sightline';
export const SERVER_VERSION = '1.0.0';

export type ToolExtra = RequestHandlerExtra<ServerRequest, ServerNotification>;

export interface McpServerDeps {
  /** The catalogue (sensitive operations are filtered out here). */
  operations: Iterable<AnyOperation>;
  /** The sandbox (or a function giving it, so a pool starts only when first needed). */
  executor: Executor | (() => Executor);
  /** Per-execute limits (defaults: sandbox/limits.ts); also what the tool description states. */
  limits?: Partial<SandboxLimits>;
  /** The caller of one tool call, from the request (HTTP: its authenticated principal), or null. */
  caller(extra: ToolExtra): McpCaller | null;
  /** Shared across sessions: building it once per process keeps session creation cheap. */
  searchIndex?: SearchIndex;
  log?: Pick<Logger, 'error'>;
}

export const SEARCH_DEFAULT_LIMIT = 3;
export const SEARCH_MAX_LIMIT = 10;

function describeLimits(l: SandboxLimits): string {
  return `${formatSeconds(l.wallClockMs)} wall clock (time waiting for a sandbox worker included), ${formatBytes(l.memoryBytes)} memory, ${l.maxCalls} operation calls, ${formatBytes(l.maxResultBytes)} of result and ${formatBytes(l.maxLogBytes)} of logs; ${l.perCredential} executes at once per credential`;
}

/** How an agent uses the tools; shown in tools/list (and the gist in the initialize instructions). */
export function toolDescriptions(limits: SandboxLimits): { search: string; execute: string; instructions: string } {
  const search = [
    'Find the Sightline API operations for a task. Sightline is an observability and error-tracking backend: errors and events, logs, metrics, traces, deployments and releases, user feedback, projects.',
    '',
    'Code Mode, two steps: (1) `search` for operations, (2) `execute` JavaScript that calls them.',
    `Query in plain words or keywords, e.g. "unresolved errors in production", "record a deployment", "slow traces". Returns the best ${SEARCH_DEFAULT_LIMIT} hits (\`limit\` up to ${SEARCH_MAX_LIMIT}); each gives:`,
    '- `operationId` (`<tag>.<verb>`), `summary`, `risk` (read or write);',
    '- `input` and `output`: compact TypeScript signatures of the one flat input object (path, query and body fields side by side; `project_id` left out, your credential fills it) and of the result;',
    '- `call`: a ready line for `execute`, e.g. `await api.feedback.list({ status: "new", limit: 20 })`;',
    '- `missing_scopes`, only when your credential lacks scopes the operation needs (the call would answer 403).',
    'For one operation in full (every field described, the whole output, the complete description), call `search` with `operationId` instead of `query`. Search again with other words if nothing fits.',
  ].join('\n');

  const execute = [
    'Run JavaScript that calls Sightline operations found with `search` (step 2 of search → execute).',
    '`code` is the body of an async function: use `await`, and `return` the JSON value you want back. Inside it:',
    '- `await api.<tag>.<verb>(input)` calls an operation, e.g. `await api.errors.list({ status: "unresolved", limit: 10 })`; `await api.call("<operationId>", input)` does the same by name. `input` is one flat object; `project_id` defaults to your credential\'s project.',
    '- A failed call throws an error with `status`, `code` and `message` (400 invalid_parameter, 403 insufficient_scope, 404 not_found, 429 ...); use try/catch to carry on.',
    '- `console.log(...)` lines come back in `logs`. There is no network, filesystem, timers, `require` or `import`: only `api` and standard JavaScript.',
    '- Do the work in one script: several calls, loops, filtering and aggregation, then return only what you need.',
    '',
    'Pagination, two styles (the output signature shows which):',
    '- Offset (results carry `total`, `limit`, `offset`): send `limit` and `offset`; the next page uses offset + limit, while offset + limit < total.',
    '    for (let offset = 0, total = 1; offset < total; offset += 100) { const p = await api.deployments.list({ limit: 100, offset }); total = p.total; /* use p.data */ }',
    '- Cursor (results carry `next_cursor`): send `limit`, then `cursor` set to the previous `next_cursor` unchanged (same filters), until `next_cursor` is null:',
    '    const rows = []; let cursor;',
    '    do { const page = await api.feedback.list({ status: "new", limit: 100, cursor }); rows.push(...page.data); cursor = page.next_cursor; } while (cursor);',
    '    return rows.length;',
    '',
    `Limits per run: ${describeLimits(limits)}. A larger result is cut short: filter, aggregate or page inside the script and return less.`,
    '',
    'Every operation an execute runs counts against your credential\'s request rate limit, as a REST request would; more executes at once than allowed answer 429 with `retry_after` (seconds).',
    '',
    'Returns JSON `{ result, logs, calls: [{ operationId, status, ms }], error, hint, time: { queued_ms, total_ms }, rate_limit: { limit, remaining, reset_seconds } }`: `error` is null on success, else `{ name, message, status?, code?, retry_after? }`; `hint` flags a likely mistake (e.g. nothing returned).',
  ].join('\n');

  const instructions = [
    'Sightline MCP (Code Mode). Use `search` to find operations (it returns TypeScript signatures and a ready `api` call), then `execute` a JavaScript async-function body that calls them as `await api.<tag>.<verb>(input)` and returns the result.',
    `Pagination: offset lists continue while offset + limit < total; cursor lists pass next_cursor until it is null. Limits per execute: ${describeLimits(limits)}.`,
  ].join(' ');
  return { search, execute, instructions };
}

export interface SearchResultItem {
  operationId: string;
  summary: string;
  risk: 'read' | 'write';
  input: string;
  output: string;
  call: string;
  /** Only when the caller lacks some: the scopes the operation needs that the credential does not hold. */
  missing_scopes?: string[];
}

export interface OperationDetail {
  operationId: string;
  summary: string;
  description: string;
  risk: 'read' | 'write';
  scopes: string[];
  scopes_held: boolean | null;
  pagination: 'offset' | 'cursor' | null;
  input: string;
  output: string;
  call: string;
}

function pagination(op: AnyOperation): 'offset' | 'cursor' | null {
  const inKeys = Object.keys(op.input.shape);
  if (inKeys.includes('cursor')) return 'cursor';
  if (inKeys.includes('offset')) return 'offset';
  return null;
}

export function searchResults(index: SearchIndex, caller: McpCaller | null, query: string, limit: number): SearchResultItem[] {
  return index.search(query, limit).map(({ op }, rank) => {
    const sig = compactSignature(op);
    // The best hit shows typed signatures (output two levels deep); the others field names and the
    // output's top level. Search with operationId for one operation in full.
    const first = rank === 0;
    const item: SearchResultItem = {
      operationId: op.operationId,
      summary: op.summary,
      risk: op.risk,
      input: first ? sig.input : briefInput(op),
      output: first ? sig.output : briefOutput(op),
      call: exampleCall(op),
    };
    if (caller && caller.holds(op) === false) item.missing_scopes = [...op.scopes];
    return item;
  });
}

/** One operation in full (search with `operationId`): never cut. */
export function operationDetail(op: AnyOperation, caller: McpCaller | null): OperationDetail {
  const sig = fullSignature(op);
  return {
    operationId: op.operationId,
    summary: op.summary,
    description: op.description,
    risk: op.risk,
    scopes: [...op.scopes],
    scopes_held: caller ? caller.holds(op) : null,
    pagination: pagination(op),
    input: sig.input,
    output: sig.output,
    call: exampleCall(op),
  };
}

const HIDDEN_REASON = 'exists but is not available over MCP (it handles credentials or secrets): use the REST API, the CLI or the TypeScript client with a suitable key';

export interface SearchAnswer {
  results: SearchResultItem[];
  operation?: OperationDetail;
  unavailable?: Array<{ operationId: string; summary: string; note: string }>;
  hint: string;
}

/** The `search` tool's answer (shared with the search eval, which measures its size). */
export function searchAnswerer(index: SearchIndex, operations: readonly AnyOperation[]) {
  const byId = new Map(index.operations.map((op) => [op.operationId.toLowerCase(), op]));
  const hiddenById = new Map(operations.filter((op) => op.sensitive).map((op) => [op.operationId.toLowerCase(), op]));
  const tags = [...new Set(index.operations.map((op) => op.tag))];
  return (
    caller: McpCaller | null,
    args: { query?: string; limit?: number; operationId?: string },
  ): { out: SearchAnswer; isError: boolean } => {
    const { query, limit, operationId } = args;
    if (operationId !== undefined) {
      const wanted = operationId.trim().replace(/^api\./, '').toLowerCase();
      const op = byId.get(wanted);
      if (op) return { out: { results: [], operation: operationDetail(op, caller), hint: 'Use its `call` line in `execute`.' }, isError: false };
      const hidden = hiddenById.get(wanted);
      if (hidden) {
        return {
          out: { results: [], unavailable: [{ operationId: hidden.operationId, summary: hidden.summary, note: HIDDEN_REASON }], hint: `${hidden.operationId} ${HIDDEN_REASON}.` },
          isError: false,
        };
      }
      const tag = wanted.split('.')[0];
      const sameTag = index.operations.filter((o) => o.operationId.toLowerCase().startsWith(`${tag}.`)).map((o) => o.operationId);
      const near = sameTag.length ? sameTag : index.search(operationId, SEARCH_DEFAULT_LIMIT).map((h) => h.op.operationId);
      return {
        out: { results: [], hint: `There is no operation ${operationId.slice(0, 200)}.${near.length ? ` Closest: ${near.join(', ')}.` : ''} Search with a query to find one.` },
        isError: true,
      };
    }
    if (query === undefined) return { out: { results: [], hint: 'Send `query` (what you want to do) or `operationId` (one operation in full).' }, isError: true };
    const n = limit ?? SEARCH_DEFAULT_LIMIT;
    const hidden = index.hiddenMatches(query, n);
    if (hidden.length) {
      return {
        out: {
          results: [],
          unavailable: hidden.map((op) => ({ operationId: op.operationId, summary: op.summary, note: HIDDEN_REASON })),
          hint: `That is done by ${hidden.map((o) => o.operationId).join(', ')}, which ${HIDDEN_REASON}. If you meant something else, search with other words.`,
        },
        isError: false,
      };
    }
    const results = searchResults(index, caller, query, n);
    const hint = results.length
      ? 'Use a `call` line in `execute`. For one operation in full, search with `operationId`.'
      : `No operation matched. Try other words; the operation groups are: ${tags.join(', ')}.`;
    return { out: { results, hint }, isError: false };
  };
}

const executeOutputSchema = {
  result: z.unknown().describe('What the script returned (null when it failed; a preview with size and shape when too large).'),
  logs: z.array(z.string()),
  calls: z.array(z.object({ operationId: z.string(), status: z.number(), ms: z.number() })),
  error: z
    .object({ name: z.string(), message: z.string(), status: z.number().optional(), code: z.string().optional(), retry_after: z.number().optional() })
    .nullable(),
  hint: z.string().nullable(),
  time: z.object({ queued_ms: z.number(), total_ms: z.number() }),
  rate_limit: z.object({ limit: z.number(), remaining: z.number(), reset_seconds: z.number() }).nullable(),
};

const searchOutputSchema = {
  results: z.array(
    z.object({
      operationId: z.string(),
      summary: z.string(),
      risk: z.enum(['read', 'write']),
      input: z.string(),
      output: z.string(),
      call: z.string(),
      missing_scopes: z.array(z.string()).optional(),
    }),
  ),
  operation: z
    .object({
      operationId: z.string(),
      summary: z.string(),
      description: z.string(),
      risk: z.enum(['read', 'write']),
      scopes: z.array(z.string()),
      scopes_held: z.boolean().nullable(),
      pagination: z.enum(['offset', 'cursor']).nullable(),
      input: z.string(),
      output: z.string(),
      call: z.string(),
    })
    .optional(),
  unavailable: z.array(z.object({ operationId: z.string(), summary: z.string(), note: z.string() })).optional(),
  hint: z.string(),
};

const UNAUTHENTICATED = 'A valid credential is required: send an API key in x-service-key or a token in Authorization: Bearer.';

/** One MCP server (one per session: the SDK binds a server to one transport). */
export function createMcpServer(deps: McpServerDeps): McpServer {
  const limits = resolveLimits(deps.limits);
  // Read once: `operations` may be a one-shot iterator (Map.values()).
  const allOps = [...deps.operations];
  const index = deps.searchIndex ?? createSearchIndex(allOps);
  const operationIds = index.operations.map((op) => op.operationId);
  const text = toolDescriptions(limits);
  const executor = () => (typeof deps.executor === 'function' ? deps.executor() : deps.executor);

  const server = new McpServer(
    { name: SERVER_NAME, version: SERVER_VERSION },
    { capabilities: { tools: { listChanged: false } }, instructions: text.instructions },
  );

  const hiddenIds = allOps.filter((op) => op.sensitive).map((op) => op.operationId);
  const answerSearch = searchAnswerer(index, allOps);

  server.registerTool(
    'search',
    {
      title: 'Search Sightline operations',
      description: text.search,
      inputSchema: {
        query: z.string().min(1).max(500).optional().describe('What you want to do, in plain words or keywords.'),
        limit: z.number().int().min(1).max(SEARCH_MAX_LIMIT).optional().describe(`Hits to return, 1 to ${SEARCH_MAX_LIMIT} (default ${SEARCH_DEFAULT_LIMIT}).`),
        operationId: z.string().min(1).max(200).optional().describe('Instead of a query: one operationId (e.g. "errors.list") to get in full, never cut.'),
      },
      outputSchema: searchOutputSchema,
      annotations: { readOnlyHint: true, destructiveHint: false, idempotentHint: true, openWorldHint: false },
    },
    async (args, extra) => {
      const { out, isError } = answerSearch(deps.caller(extra), args);
      return {
        content: [{ type: 'text' as const, text: JSON.stringify(out) }],
        structuredContent: out as unknown as Record<string, unknown>,
        ...(isError ? { isError: true } : {}),
      };
    },
  );

  server.registerTool(
    'execute',
    {
      title: 'Execute JavaScript against the Sightline API',
      description: text.execute,
      inputSchema: {
        code: z.string().min(1).max(100_000).describe('Body of an async function: call `await api.<tag>.<verb>(input)` and `return` the result.'),
      },
      outputSchema: executeOutputSchema,
      annotations: { readOnlyHint: false, destructiveHint: true, idempotentHint: false, openWorldHint: false },
    },
    async ({ code }, extra) => {
      const caller = deps.caller(extra);
      let out: ExecuteOutput;
      if (!caller) {
        out = {
          result: null,
          logs: [],
          calls: [],
          error: { name: 'ApiError', message: UNAUTHENTICATED, status: 401, code: 'unauthenticated' },
          hint: null,
          time: { queued_ms: 0, total_ms: 0 },
          rate_limit: null,
        };
      } else {
        out = await runExecute(executor(), code, operationIds, caller.call, {
          limits: deps.limits,
          log: deps.log,
          credential: caller.credential ?? null,
          budget: caller.budget ? () => caller.budget!() : undefined,
          hidden: hiddenIds,
          // The client cancelled the request or went away: stop the script and its calls.
          ...(extra.signal ? { signal: extra.signal } : {}),
        });
      }
      return {
        content: [{ type: 'text' as const, text: JSON.stringify(out) }],
        structuredContent: out as unknown as Record<string, unknown>,
        isError: out.error !== null,
      };
    },
  );

  return server;
}
