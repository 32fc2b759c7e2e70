/**
 * `sightline mcp`: the same two tools over stdio, for local assistants.
 *
 *   SIGHTLINE_API_KEY=<key> [SIGHTLINE_DB=./data/sightline.db] sightline mcp     in-process, on the local database
 *   SIGHTLINE_API_KEY=<key> SIGHTLINE_URL=https://sightline.example.com sightline mcp   proxies each call over REST
 *
 * In-process mode runs `core.invoke` against the SQLite file with the principal of the key
 * (re-authenticated on every call, so revoking the key takes effect at once). With SIGHTLINE_URL
 * set, operations travel as REST requests to that server with the key; nothing else changes for the
 * agent. stdout carries the protocol only: every log line goes to stderr.
 */
import { StdioServerTransport } from '@modelcontextprotocol/sdk/server/stdio.js';
import { pino, type Logger } from 'pino';
import type { AnyOperation } from '../../operations/define.js';
import { fieldLocations } from '../../operations/define.js';
import type { Executor, HostCallResult } from '../../sandbox/executor.js';
import { createQuickJsExecutor } from '../../sandbox/quickjs-executor.js';
import { authenticate } from '../core/authenticate.js';
import { DEADLINE_PASSED, localCaller, type McpCaller } from './execute.js';
import { createMcpServer } from './server.js';

export interface StdioOptions {
  env?: NodeJS.ProcessEnv;
  stdin?: NodeJS.ReadableStream;
  stdout?: NodeJS.WritableStream;
}

function fail(message: string): number {
  process.stderr.write(`sightline mcp: ${message}\n`);
  return 1;
}

/** A caller that sends each operation as a REST request to a remote Sightline. */
export function remoteCaller(
  baseUrl: string,
  key: string,
  operations: Iterable<AnyOperation>,
  defaultProjectId: string | null,
  log?: Pick<Logger, 'error'>,
): McpCaller {
  const ops = new Map([...operations].filter((op) => !op.sensitive).map((op) => [op.operationId, op] as const));
  const base = baseUrl.replace(/\/+$/, '');
  return {
    defaultProjectId,
    holds: () => null,
    async call(operationId, rawInput, callCtx): Promise<HostCallResult> {
      if (callCtx?.signal.aborted) return DEADLINE_PASSED(operationId);
      const op = ops.get(operationId);
      if (!op) return { ok: false, error: { status: 404, code: 'unknown_operation', message: `There is no operation \`${operationId}\`.` } };
      if (rawInput !== undefined && rawInput !== null && (typeof rawInput !== 'object' || Array.isArray(rawInput))) {
        return { ok: false, error: { status: 400, code: 'invalid_parameter', message: 'The input must be a JSON object.' } };
      }
      const input: Record<string, unknown> = { ...((rawInput as Record<string, unknown> | null) ?? {}) };
      if ('project_id' in op.input.shape && input.project_id === undefined && defaultProjectId) input.project_id = defaultProjectId;
      const where = fieldLocations(op);
      let path = op.path;
      for (const p of where.path) {
        if (input[p] === undefined || input[p] === null) {
          return { ok: false, error: { status: 400, code: 'invalid_parameter', message: `\`${p}\` is required.`, param: p } };
        }
        path = path.replace(`{${p}}`, encodeURIComponent(String(input[p])));
      }
      const headerOf = Object.fromEntries(Object.entries(op.headerInputs ?? {}).map(([h, f]) => [f, h]));
      const headers: Record<string, string> = { 'x-service-key': key, accept: 'application/json' };
      const hasBody = op.method === 'POST' || op.method === 'PUT' || op.method === 'PATCH';
      const query = new URLSearchParams();
      const body: Record<string, unknown> = {};
      for (const [k, v] of Object.entries(input)) {
        if (where.path.includes(k) || v === undefined) continue;
        if (headerOf[k]) headers[headerOf[k]] = String(v);
        else if (hasBody) body[k] = v;
        else query.set(k, Array.isArray(v) ? v.join(',') : typeof v === 'object' && v !== null ? JSON.stringify(v) : String(v));
      }
      if (hasBody) headers['content-type'] = 'application/json';
      const qs = query.toString();
      try {
        const res = await fetch(`${base}${path}${qs ? `?${qs}` : ''}`, { method: op.method, headers, body: hasBody ? JSON.stringify(body) : undefined, ...(callCtx ? { signal: callCtx.signal } : {}) });
        const text = await res.text();
        let parsed: unknown = null;
        try {
          parsed = text ? JSON.parse(text) : null;
        } catch {
          parsed = null;
        }
        if (res.ok) return { ok: true, value: parsed };
        const e = (parsed ?? {}) as { code?: unknown; message?: unknown; param?: unknown };
        const error: { status: number; code: string; message: string; param?: string } = {
          status: res.status,
          code: typeof e.code === 'string' ? e.code : 'http_error',
          message: typeof e.message === 'string' ? e.message : `The server answered HTTP ${res.status}.`,
        };
        if (typeof e.param === 'string') error.param = e.param;
        return { ok: false, error };
      } catch (err) {
        log?.error({ err, operationId }, 'sightline mcp: REST call failed');
        return { ok: false, error: { status: 502, code: 'upstream_unreachable', message: `Could not reach Sightline at ${base}.` } };
      }
    },
  };
}

/** Serve MCP over stdio until stdin closes. Resolves with the exit code. */
export async function runStdio(opts: StdioOptions = {}): Promise<number> {
  const env = opts.env ?? process.env;
  const key = env.SIGHTLINE_API_KEY?.trim();
  if (!key) return fail('set SIGHTLINE_API_KEY to an API key of the project to use (see `sightline init`).');
  // stdout is the protocol: logs go to stderr (fd 2), warnings and above unless LOG_LEVEL says otherwise.
  const log = pino({ level: env.LOG_LEVEL ?? 'warn' }, pino.destination(2));

  let caller: () => McpCaller | null;
  let operations: Iterable<AnyOperation>;
  const cleanup: Array<() => Promise<void> | void> = [];

  if (env.SIGHTLINE_URL) {
    const base = env.SIGHTLINE_URL.replace(/\/+$/, '');
    const { catalogue } = await import('../../operations/index.js');
    let projects: Array<{ id: string }>;
    try {
      const res = await fetch(`${base}/v1/projects`, { headers: { 'x-service-key': key, accept: 'application/json' } });
      if (res.status === 401) return fail(`the key was refused by ${base} (unknown, revoked or expired).`);
      if (!res.ok) return fail(`${base}/v1/projects answered HTTP ${res.status}.`);
      projects = ((await res.json()) as { data: Array<{ id: string }> }).data;
    } catch {
      return fail(`could not reach Sightline at ${base}.`);
    }
    const remote = remoteCaller(base, key, catalogue, projects.length === 1 ? projects[0]!.id : null, log);
    caller = () => remote;
    operations = catalogue;
  } else {
    const { createSightline } = await import('../server.js');
    const s = createSightline({}, { logger: log });
    cleanup.push(() => s.close());
    if (!authenticate(s.services, key, s.core.now())) {
      await s.close();
      return fail(`SIGHTLINE_API_KEY is not a valid key of the database ${s.config.dbFile} (unknown, revoked or expired).`);
    }
    // Authenticate on every call: a key revoked while the assistant runs stops working at once.
    caller = () => {
      const p = authenticate(s.services, key, s.core.now());
      return p ? localCaller(s.core, p, { log, rateLimit: { limiter: s.limiter, identity: key } }) : null;
    };
    operations = s.core.operations.values();
  }

  let executor: Executor | null = null;
  const getExecutor = () => (executor ??= createQuickJsExecutor());
  const server = createMcpServer({ operations, executor: getExecutor, caller: () => caller(), log });
  const stdin = (opts.stdin ?? process.stdin) as NodeJS.ReadStream;
  const transport = new StdioServerTransport(stdin, (opts.stdout ?? process.stdout) as NodeJS.WriteStream);

  return new Promise<number>((resolve) => {
    let done = false;
    const shutdown = async () => {
      if (done) return;
      done = true;
      await server.close().catch(() => {});
      if (executor) await executor.close().catch(() => {});
      for (const fn of cleanup) await fn();
      resolve(0);
    };
    transport.onclose = () => void shutdown();
    stdin.once('end', () => void shutdown());
    stdin.once('close', () => void shutdown());
    process.once('SIGINT', () => void shutdown());
    process.once('SIGTERM', () => void shutdown());
    server.connect(transport).catch((err) => {
      log.error({ err }, 'sightline mcp: could not start');
      void shutdown();
    });
  });
}
