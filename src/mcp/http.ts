/**
 * Streamable HTTP at `{mcp_url}` (default /mcp): POST (JSON-RPC), GET (server stream), DELETE
 * (end the session). MCP transports spec, 2025-11-25:
 * - "Servers MUST validate the Origin header on all incoming connections to prevent DNS rebinding
 *   attacks" → an Origin outside the allowlist (`mcpAllowedOrigins` + our own base/MCP URL origins)
 *   is refused with 403; requests without Origin (non-browser clients) pass.
 * - Every request carries a credential (API key, or an OAuth access token through
 *   `services.tokenResolvers`); without a valid one → 401 with
 *   `WWW-Authenticate: Bearer resource_metadata="…/.well-known/oauth-protected-resource/mcp"` (RFC 9728 §5.1).
 * - Session ids are random (crypto) and bound to the principal that created the session: another
 *   principal presenting it gets 404, exactly like an unknown session ("the server MAY respond with
 *   404 Not Found" — and it learns nothing about the session's existence).
 * The principal authenticated on *each* request is the one tool calls run as, so a revoked key stops
 * working at once even inside a live session.
 */
import { randomUUID } from 'node:crypto';
import type { IncomingMessage } from 'node:http';
import type Koa from 'koa';
import type Router from '@koa/router';
import { StreamableHTTPServerTransport } from '@modelcontextprotocol/sdk/server/streamableHttp.js';
import { isInitializeRequest } from '@modelcontextprotocol/sdk/types.js';
import type { AuthInfo } from '@modelcontextprotocol/sdk/server/auth/types.js';
import type { McpServer } from '@modelcontextprotocol/sdk/server/mcp.js';
import type { Mount, Sightline } from '../server.js';
import type { Executor, SandboxLimits } from '../../sandbox/executor.js';
import { createQuickJsExecutor } from '../../sandbox/quickjs-executor.js';
import { authenticate, credentialFromHeaders } from '../core/authenticate.js';
import { AppError, AuthenticationError, ForbiddenError } from '../core/errors.js';
import { holdsScope } from '../core/scopes.js';
import type { Principal } from '../core/principal.js';
import { readRawBody } from '../http/body.js';
import { wwwAuthenticate } from '../oauth/www-authenticate.js';
import { localCaller } from './execute.js';
import { createSearchIndex, type SearchIndex } from './search.js';
import { createMcpServer, type ToolExtra } from './server.js';

export interface McpHttpOptions {
  /** Sandbox limits for every execute (defaults: sandbox/limits.ts). */
  limits?: Partial<SandboxLimits>;
  /** Use this executor instead of starting a QuickJS pool (tests). */
  executor?: Executor;
  /** A session unused this long is closed. Default 30 minutes. */
  idleMs?: number;
  /** Sessions one principal may hold; the least recently used is closed beyond it. Default 50. */
  maxSessionsPerPrincipal?: number;
}


interface Session {
  id: string;
  owner: string;
  transport: StreamableHTTPServerTransport;
  server: McpServer;
  lastSeen: number;
}

/** Who owns a session: the API key, or the user through one OAuth client (refreshed tokens keep it). */
export function sessionOwner(p: Principal): string {
  return p.kind === 'api_key' ? `key:${p.keyId}` : `user:${p.userId}:${p.clientId ?? ''}`;
}

function originOf(u: string): string | null {
  try {
    return new URL(u).origin.toLowerCase();
  } catch {
    return null;
  }
}

const CORS_ALLOW_HEADERS = 'content-type, authorization, x-service-key, mcp-session-id, mcp-protocol-version, last-event-id';
const CORS_EXPOSE_HEADERS = 'mcp-session-id, mcp-protocol-version, www-authenticate';

function jsonRpcError(ctx: Koa.Context, status: number, code: number, message: string): void {
  ctx.status = status;
  ctx.body = { jsonrpc: '2.0', error: { code, message }, id: null };
}

/** Sandbox options from configuration (SIGHTLINE_SANDBOX_POOL_SIZE, SIGHTLINE_SANDBOX_PER_CREDENTIAL). */
function configLimits(config: { sandboxPoolSize: number }): Partial<SandboxLimits> {
  const out: Partial<SandboxLimits> = config.sandboxPoolSize ? { poolSize: config.sandboxPoolSize } : {};
  const perCredential = Number(process.env.SIGHTLINE_SANDBOX_PER_CREDENTIAL);
  if (Number.isInteger(perCredential) && perCredential > 0) out.perCredential = perCredential;
  return out;
}

export function createMcpMount(opts: McpHttpOptions = {}): Mount {
  return (s: Sightline, router: Router) => mountMcp(s, router, opts);
}

/** The default mount (src/server.ts MOUNTS). */
export const mcpMount: Mount = createMcpMount();

export function mountMcp(s: Sightline, router: Router, opts: McpHttpOptions = {}): void {
  const { config, core, log } = s;
  const path = new URL(config.mcpUrl).pathname.replace(/\/+$/, '') || '/';
  const idleMs = opts.idleMs ?? 30 * 60_000;
  const maxPerOwner = opts.maxSessionsPerPrincipal ?? 50;
  const limits = { ...configLimits(s.config), ...opts.limits };

  const allowedOrigins = new Set(
    [config.baseUrl, config.mcpUrl, ...config.mcpAllowedOrigins].map((o) => originOf(o) ?? o.toLowerCase()),
  );

  // The pool starts with the first execute, so a server nobody calls MCP on runs no workers.
  let executor: Executor | null = opts.executor ?? null;
  const getExecutor = () => (executor ??= createQuickJsExecutor(limits));
  // Built with the first session: a server nobody calls MCP on pays nothing for it.
  let searchIndex: SearchIndex | null = null;
  const sessions = new Map<string, Session>();

  const closeSession = async (sess: Session) => {
    sessions.delete(sess.id);
    await sess.transport.close().catch(() => {});
    await sess.server.close().catch(() => {});
  };

  const sweep = setInterval(() => {
    const cutoff = Date.now() - idleMs;
    for (const sess of [...sessions.values()]) if (sess.lastSeen < cutoff) void closeSession(sess);
  }, Math.min(60_000, idleMs));
  sweep.unref();

  s.onClose.push(async () => {
    clearInterval(sweep);
    await Promise.all([...sessions.values()].map(closeSession));
    if (executor && !opts.executor) await executor.close();
    executor = null;
  });

  const callerFor = (extra: ToolExtra) => {
    const auth = extra.authInfo?.extra as { principal?: Principal; rateIdentity?: string; rateBudget?: { remaining: number; resetSeconds: number } } | undefined;
    if (!auth?.principal) return null;
    // Every operation an execute runs counts against the same per-credential budget as a REST request.
    const rateLimit = auth.rateIdentity ? { limiter: s.limiter, identity: auth.rateIdentity, initial: auth.rateBudget ?? null } : undefined;
    return localCaller(core, auth.principal, { log, rateLimit });
  };

  function newSession(owner: string): Session {
    // Too many sessions for one principal: close the least recently used (clients that never DELETE).
    const own = [...sessions.values()].filter((x) => x.owner === owner).sort((a, b) => a.lastSeen - b.lastSeen);
    for (const old of own.slice(0, Math.max(0, own.length - maxPerOwner + 1))) void closeSession(old);

    searchIndex ??= createSearchIndex(core.operations.values());
    const server = createMcpServer({ operations: core.operations.values(), executor: getExecutor, limits, caller: callerFor, searchIndex, log });
    const sess: Session = { id: '', owner, server, lastSeen: Date.now(), transport: undefined as unknown as StreamableHTTPServerTransport };
    sess.transport = new StreamableHTTPServerTransport({
      // Behind a proxy over several processes, the id names this one (deploy/nginx.conf routes by it).
      sessionIdGenerator: () => (config.instance ? `${config.instance}.${randomUUID()}` : randomUUID()),
      // Plain JSON answers to POST: our tools send no progress or log notifications mid-call, and
      // one JSON body per request measured about twice the executes/s of a one-event SSE stream
      // (bench/mcp.ts). GET still opens the server-to-client SSE stream.
      enableJsonResponse: true,
      onsessioninitialized: (id) => {
        sess.id = id;
        sessions.set(id, sess);
      },
      onsessionclosed: (id) => {
        sessions.delete(id);
      },
    });
    sess.transport.onclose = () => {
      if (sess.id) sessions.delete(sess.id);
    };
    return sess;
  }

  const handler: Koa.Middleware = async (ctx) => {
    // DNS-rebinding protection first: a browser page of another origin gets nothing, not even a 401.
    const origin = ctx.get('origin');
    if (origin) {
      if (!allowedOrigins.has(origin.toLowerCase())) {
        throw new ForbiddenError('origin_not_allowed', `Origin ${origin} may not call the MCP endpoint. Allowed: ${[...allowedOrigins].join(', ')} (SIGHTLINE_MCP_ALLOWED_ORIGINS).`);
      }
      ctx.set({ 'Access-Control-Allow-Origin': origin, 'Access-Control-Expose-Headers': CORS_EXPOSE_HEADERS, Vary: 'Origin' });
    }
    if (ctx.method === 'OPTIONS') {
      ctx.set({ 'Access-Control-Allow-Methods': 'GET, POST, DELETE, OPTIONS', 'Access-Control-Allow-Headers': CORS_ALLOW_HEADERS, 'Access-Control-Max-Age': '600' });
      ctx.status = 204;
      return;
    }
    if (!['GET', 'POST', 'DELETE'].includes(ctx.method)) {
      ctx.set('Allow', 'GET, POST, DELETE, OPTIONS');
      jsonRpcError(ctx, 405, -32000, 'Method not allowed.');
      return;
    }

    const secret = credentialFromHeaders(ctx.headers);
    // The same identity REST counts requests under (src/http/router.ts).
    const rateIdentity = secret ?? `ip:${ctx.ip}`;
    const counted = s.limiter.hit(rateIdentity);
    const rateBudget = counted instanceof Promise ? await counted : counted;
    const principal = authenticate(core.services, secret, core.now());
    if (!principal) {
      throw new AuthenticationError(
        secret ? 'The credential is not valid (unknown, revoked or expired).' : undefined,
        { 'WWW-Authenticate': wwwAuthenticate(config, secret ? { error: 'invalid_token' } : {}) },
      );
    }
    // RFC 6750 §3.1: an OAuth token that cannot read anything is refused here with insufficient_scope,
    // so the client can ask the user to grant `read`. (API keys are project keys: their scopes are checked per call.)
    if (principal.kind === 'user' && !holdsScope(principal.scopes, 'read')) {
      throw new AppError(403, 'permission_error', 'insufficient_scope', 'This token lacks the `read` scope the MCP tools need: sign in again and grant it.', {
        headers: { 'WWW-Authenticate': wwwAuthenticate(config, { error: 'insufficient_scope', scope: 'read write' }) },
      });
    }
    const owner = sessionOwner(principal);

    let body: unknown;
    if (ctx.method === 'POST') {
      const raw = await readRawBody(ctx, config.bodyLimitBytes);
      try {
        body = JSON.parse(raw.toString('utf8'));
      } catch {
        jsonRpcError(ctx, 400, -32700, 'Parse error: the body is not valid JSON.');
        return;
      }
    }

    const sid = ctx.get('mcp-session-id');
    let sess: Session | undefined;
    if (sid) {
      const found = sessions.get(sid);
      // Another principal's session answers exactly like a missing one.
      if (!found || found.owner !== owner) {
        jsonRpcError(ctx, 404, -32001, 'Session not found: start a new session with initialize.');
        return;
      }
      sess = found;
    } else if (ctx.method === 'POST' && (isInitializeRequest(body) || (Array.isArray(body) && body.some((m) => isInitializeRequest(m))))) {
      sess = newSession(owner);
      await sess.server.connect(sess.transport);
    } else {
      jsonRpcError(ctx, 400, -32000, 'Bad Request: send Mcp-Session-Id (from the initialize response), or initialize a session first.');
      return;
    }

    sess.lastSeen = Date.now();
    const req = ctx.req as IncomingMessage & { auth?: AuthInfo };
    req.auth = {
      token: 'redacted',
      clientId: principal.kind === 'api_key' ? principal.keyId : principal.clientId ?? principal.userId,
      scopes: [...principal.scopes],
      extra: { principal, rateIdentity, rateBudget },
    };
    ctx.respond = false;
    try {
      await sess.transport.handleRequest(req, ctx.res, body);
    } catch (err) {
      log.error({ err, requestId: ctx.state.requestId }, 'mcp transport failed');
      if (!ctx.res.headersSent) {
        ctx.res.writeHead(500, { 'content-type': 'application/json' });
        ctx.res.end(JSON.stringify({ jsonrpc: '2.0', error: { code: -32603, message: 'Internal error' }, id: null }));
      } else if (!ctx.res.writableEnded) ctx.res.end();
    }
    // An initialize that did not produce a session (bad request): nothing to keep.
    if (!sess.id) await closeSession(sess);
  };

  router.all(path, handler);
}
