/**
 * MCP test helpers: a real SDK `Client` over an in-memory transport (server built with
 * createMcpServer, calls authenticated with a given key on every call) or over Streamable HTTP
 * against the test server's /mcp.
 */
import { Client } from '@modelcontextprotocol/sdk/client/index.js';
import { StreamableHTTPClientTransport } from '@modelcontextprotocol/sdk/client/streamableHttp.js';
import { InMemoryTransport } from '@modelcontextprotocol/sdk/inMemory.js';
import type { Executor, SandboxLimits } from '../../sandbox/executor.js';
import { createQuickJsExecutor } from '../../sandbox/quickjs-executor.js';
import { authenticate } from '../../src/core/authenticate.js';
import type { Principal } from '../../src/core/principal.js';
import { localCaller } from '../../src/mcp/execute.js';
import { createMcpServer } from '../../src/mcp/server.js';
import type { TestServer } from '../helpers/server.js';

export interface ExecuteOut {
  result: any;
  logs: string[];
  calls: Array<{ operationId: string; status: number; ms: number }>;
  error: { name: string; message: string; status?: number; code?: string; retry_after?: number } | null;
  hint: string | null;
  time: { queued_ms: number; total_ms: number };
  rate_limit: { limit: number; remaining: number; reset_seconds: number } | null;
}

/** An executor closed with the test server. */
export function executorFor(t: TestServer, limits?: Partial<SandboxLimits>): Executor {
  const ex = createQuickJsExecutor(limits);
  t.s.onClose.push(() => ex.close());
  return ex;
}

/** A connected in-memory client whose calls run as `who` (an API key secret, or a principal). */
export async function inMemoryClient(
  t: TestServer,
  who: string | Principal,
  opts: { executor?: Executor; limits?: Partial<SandboxLimits>; countRate?: boolean } = {},
): Promise<Client> {
  const executor = opts.executor ?? executorFor(t, opts.limits);
  const server = createMcpServer({
    operations: t.s.core.operations.values(),
    executor,
    limits: opts.limits,
    caller: () => {
      const p = typeof who === 'string' ? authenticate(t.s.services, who, t.s.core.now()) : who;
      if (!p) return null;
      // As the HTTP face does: operations count against the key's REST rate-limit budget.
      return localCaller(t.s.core, p, opts.countRate && typeof who === 'string' ? { rateLimit: { limiter: t.s.limiter, identity: who } } : {});
    },
  });
  const [clientSide, serverSide] = InMemoryTransport.createLinkedPair();
  await server.connect(serverSide);
  const client = new Client({ name: 'sightline-test', version: '1.0.0' });
  await client.connect(clientSide);
  t.s.onClose.push(() => client.close());
  return client;
}

/** A connected Streamable HTTP client sending `key` in x-service-key (or Authorization: Bearer). */
export async function httpClient(
  t: TestServer,
  key: string,
  opts: { bearer?: boolean; headers?: Record<string, string> } = {},
): Promise<{ client: Client; transport: StreamableHTTPClientTransport }> {
  const headers: Record<string, string> = { ...(opts.bearer ? { authorization: `Bearer ${key}` } : { 'x-service-key': key }), ...opts.headers };
  const transport = new StreamableHTTPClientTransport(new URL(`${t.url}/mcp`), { requestInit: { headers } });
  const client = new Client({ name: 'sightline-test-http', version: '1.0.0' });
  await client.connect(transport);
  t.s.onClose.push(() => client.close());
  return { client, transport };
}

export async function execute(client: Client, code: string): Promise<ExecuteOut & { isError: boolean }> {
  const r = await client.callTool({ name: 'execute', arguments: { code } });
  const text = (r.content as Array<{ type: string; text: string }>)[0]!.text;
  const out = JSON.parse(text) as ExecuteOut;
  // The text content and structuredContent carry the same object.
  if (r.structuredContent) expectSame(r.structuredContent, out);
  return { ...out, isError: r.isError === true };
}

function expectSame(a: unknown, b: unknown) {
  if (JSON.stringify(a) !== JSON.stringify(b)) throw new Error('structuredContent differs from the text content');
}

export async function searchRaw(client: Client, args: Record<string, unknown>): Promise<{ body: any; isError: boolean }> {
  const r = await client.callTool({ name: 'search', arguments: args });
  return { body: JSON.parse((r.content as Array<{ text: string }>)[0]!.text), isError: r.isError === true };
}

export async function search(client: Client, query: string, limit?: number): Promise<any> {
  const r = await client.callTool({ name: 'search', arguments: limit === undefined ? { query } : { query, limit } });
  if (r.isError) throw new Error(`search failed: ${JSON.stringify(r.content)}`);
  return JSON.parse((r.content as Array<{ text: string }>)[0]!.text);
}
