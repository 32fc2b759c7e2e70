/**
 * MCP `execute`: run agent-written JavaScript in the sandbox, with every `api.*` call made here,
 * outside it, through `core.invoke` with the caller's principal. Credentials never enter the
 * sandbox; only JSON crosses the boundary. Never throws: failures come back in `error`.
 */
import type { RequestLimiter } from '../http/middleware/rate-limit.js';
import { randomUUID } from 'node:crypto';
import type { Logger } from 'pino';
import type { AnyOperation } from '../../operations/define.js';
import type { CallRecord, ExecuteResult, Executor, HostCall, HostCallResult, SandboxLimits } from '../../sandbox/executor.js';
import { AppError } from '../core/errors.js';
import type { Core } from '../core/invoke.js';
import { principalHolds, type Principal } from '../core/principal.js';

/** The per-credential request budget shared with REST, as the execute result shows it. */
export interface RateBudget {
  limit: number;
  remaining: number;
  reset_seconds: number;
}

/** What counts one operation against the credential's budget (src/http/middleware/rate-limit.ts). */
export type RateCounter = Pick<RequestLimiter, 'limit' | 'hit'>;

/** What a session can do on behalf of its caller. */
export interface McpCaller {
  /** Runs one operation for the caller, outside the sandbox. Never throws. */
  call: HostCall;
  /** Fair-share key of the credential in the sandbox (executes at once, round-robin), or null. */
  credential?: string | null;
  /** The credential's request budget after the operations run so far, or null when not counted here. */
  budget?(): RateBudget | null;
  /**
   * Whether the caller holds every scope the operation needs (in its default project), or null
   * when this face cannot tell (a stdio proxy to a remote server).
   */
  holds(op: AnyOperation): boolean | null;
  /** The project `project_id` defaults to, when there is exactly one. */
  defaultProjectId: string | null;
}

export const INTERNAL_ERROR = {
  status: 500,
  code: 'internal_error',
  message: 'The server failed to handle this call. It has been logged; try again later.',
} as const;

/** AppError → the sandbox's error shape; anything else → a generic 500 (no internal text reaches the agent). */
export function hostError(err: unknown, log?: Pick<Logger, 'error'>, operationId?: string): HostCallResult {
  if (err instanceof AppError) {
    const error: { status: number; code: string; message: string; param?: string } = { status: err.status, code: err.code, message: err.message };
    if (err.param !== undefined) error.param = err.param;
    return { ok: false, error };
  }
  log?.error({ err, operationId }, 'mcp execute: operation failed');
  return { ok: false, error: { ...INTERNAL_ERROR } };
}

/** A call that was not run because its execute's wall clock had run out (or the execute ended). */
export function DEADLINE_PASSED(operationId: string): HostCallResult {
  return { ok: false, error: { status: 408, code: 'deadline_exceeded', message: `${operationId} was not run: the execute's wall clock had run out.` } };
}

/** The projects a principal can reach: one for an API key, those of the user's organizations otherwise. */
function reachableProjects(core: Core, principal: Principal): Array<{ id: string; orgId: string }> {
  if (principal.kind === 'api_key') return [{ id: principal.projectId, orgId: principal.orgId }];
  return core.services.identity.projectsOfOrgs(Object.keys(principal.roles)).map((p) => ({ id: p.id, orgId: p.org_id }));
}

/** One key per credential: the API key, or the user (through any client). */
export function credentialKey(p: Principal): string {
  return p.kind === 'api_key' ? `key:${p.keyId}` : `user:${p.userId}`;
}

export interface LocalCallerOptions {
  log?: Pick<Logger, 'error'>;
  /**
   * Count every operation against this limiter, under `identity` (the same identity REST counts the
   * credential's requests under), so an execute spends the same budget as REST calls would.
   * `initial`: the budget left after the request that carried the execute was counted.
   */
  rateLimit?: { limiter: RateCounter; identity: string; initial?: { remaining: number; resetSeconds: number } | null };
}

/** A caller that runs operations in this process, through `core.invoke` (the one way in). */
export function localCaller(core: Core, principal: Principal, opts: LocalCallerOptions = {}): McpCaller {
  const projects = reachableProjects(core, principal);
  const rate = opts.rateLimit;
  let last = rate?.initial ?? null;
  // API keys: invoke fills project_id itself. OAuth users with exactly one project: we do.
  const defaultProject = projects.length === 1 ? projects[0]! : null;
  const orgForScopes = principal.kind === 'api_key' ? principal.orgId : defaultProject?.orgId ?? null;

  return {
    defaultProjectId: defaultProject?.id ?? null,
    credential: credentialKey(principal),
    budget() {
      if (!rate) return null;
      return last
        ? { limit: rate.limiter.limit, remaining: Math.max(0, last.remaining), reset_seconds: last.resetSeconds }
        : { limit: rate.limiter.limit, remaining: rate.limiter.limit, reset_seconds: 0 };
    },
    holds(op) {
      if (orgForScopes !== null) return op.scopes.every((s) => principalHolds(principal, orgForScopes, s));
      // A user with several organizations: held if some organization of theirs grants it.
      const orgs = principal.kind === 'user' ? Object.keys(principal.roles) : [];
      return orgs.some((org) => op.scopes.every((s) => principalHolds(principal, org, s)));
    },
    async call(operationId, input, callCtx) {
      // The execute's wall clock ran out (or it ended) before this call started: do not run it, nor count it.
      if (callCtx?.signal.aborted) return DEADLINE_PASSED(operationId);
      try {
        if (rate) {
          try {
            const r = rate.limiter.hit(rate.identity);
            last = r instanceof Promise ? await r : r;
          } catch (err) {
            if (err instanceof AppError && err.status === 429) last = { remaining: 0, resetSeconds: err.retryAfter ?? last?.resetSeconds ?? 60 };
            throw err;
          }
        }
        const op = core.operations.get(operationId);
        let effective = input;
        if (
          op &&
          principal.kind === 'user' &&
          defaultProject &&
          'project_id' in op.input.shape &&
          (input === undefined || input === null || (typeof input === 'object' && !Array.isArray(input) && (input as Record<string, unknown>).project_id === undefined))
        ) {
          effective = { ...((input as Record<string, unknown> | null) ?? {}), project_id: defaultProject.id };
        }
        const r = await core.invoke(operationId, effective, principal, { allowSensitive: false, requestId: randomUUID(), ...(callCtx ? { signal: callCtx.signal } : {}) });
        return { ok: true, value: r.value ?? null };
      } catch (err) {
        return hostError(err, opts.log, operationId);
      }
    },
  };
}

export interface ExecuteOutput {
  result: unknown;
  logs: string[];
  calls: CallRecord[];
  error: { name: string; message: string; status?: number; code?: string; retry_after?: number } | null;
  /** Advice on a result that is probably not what the script meant (e.g. nothing returned). */
  hint: string | null;
  /** Time waited for a sandbox worker (part of the wall clock) and in all, in milliseconds. */
  time: { queued_ms: number; total_ms: number };
  /** The credential's request budget (shared with REST) after this execute's operations. */
  rate_limit: RateBudget | null;
}

/** Bytes of the result kept as a preview when it is over the limit. */
export const PREVIEW_BYTES = 4 * 1024;

export interface ExecuteContext {
  limits?: Partial<SandboxLimits>;
  log?: Pick<Logger, 'error'>;
  /** Fair-share key of the credential (see McpCaller.credential). */
  credential?: string | null;
  budget?: () => RateBudget | null;
  /** Operations that exist but are not offered over MCP (named in errors instead of "undefined"). */
  hidden?: readonly string[];
  /** Cancels the script (its worker is stopped; see ExecuteOptions.signal). */
  signal?: AbortSignal;
}

function cutUtf8(text: string, maxBytes: number): string {
  const buf = Buffer.from(text, 'utf8');
  if (buf.length <= maxBytes) return text;
  let end = maxBytes;
  while (end > 0 && (buf[end]! & 0xc0) === 0x80) end--;
  return buf.subarray(0, end).toString('utf8');
}

/** The closest operationIds to a wrong one: same tag first, then same verb. */
function nearest(id: string, operations: readonly string[]): string[] {
  const [tag, verb] = id.split('.');
  const sameTag = operations.filter((o) => o.startsWith(`${tag}.`));
  if (sameTag.length) return sameTag.slice(0, 6);
  return operations.filter((o) => o.endsWith(`.${verb}`)).slice(0, 4);
}

/**
 * A TypeError from `api.<tag>.<verb>` on an operation that is not there ("cannot read property
 * 'create' of undefined", "not a function"): name the operation, say whether it exists but is
 * hidden from MCP, and suggest the nearest ones.
 */
function explainMissingOperation(
  code: string,
  error: NonNullable<ExecuteOutput['error']>,
  operations: readonly string[],
  hidden: readonly string[],
): ExecuteOutput['error'] | null {
  if (error.name !== 'TypeError' || !/cannot read property|not a function|undefined/i.test(error.message)) return null;
  const known = new Set(operations);
  const tags = new Set(operations.map((o) => o.split('.')[0]));
  for (const m of code.matchAll(/\bapi\s*\.\s*([A-Za-z_$][\w$]*)\s*\.\s*([A-Za-z_$][\w$]*)/g)) {
    const id = `${m[1]}.${m[2]}`;
    if (known.has(id) || (m[1] === 'call' && !tags.has('call'))) continue;
    return unknownOperationError(id, operations, hidden);
  }
  return null;
}

function unknownOperationError(id: string, operations: readonly string[], hidden: readonly string[]): NonNullable<ExecuteOutput['error']> {
  if (hidden.includes(id)) {
    return {
      name: 'ApiError',
      status: 404,
      code: 'unknown_operation',
      message: `${id} exists but is not available over MCP (it handles credentials or secrets): use the REST API, the CLI or the client with a suitable key.`,
    };
  }
  const near = nearest(id, operations);
  return {
    name: 'ApiError',
    status: 404,
    code: 'unknown_operation',
    message: `There is no operation ${id}, so api.${id} is undefined.${near.length ? ` Operations nearby: ${near.join(', ')}.` : ''} Use the search tool to find the right operationId.`,
  };
}

/**
 * Run `code` in the sandbox. `operations` are the operationIds the script's `api` offers (never the
 * sensitive ones; invoke refuses them too). Never throws.
 */
export async function runExecute(
  executor: Executor,
  code: string,
  operations: string[],
  call: HostCall,
  opts: ExecuteContext = {},
): Promise<ExecuteOutput> {
  const started = performance.now();
  const budget = () => {
    try {
      return opts.budget?.() ?? null;
    } catch {
      return null;
    }
  };
  try {
    const r: ExecuteResult = await executor.execute(
      { code, operations, limits: opts.limits, ...(opts.credential ? { credential: opts.credential } : {}), ...(opts.signal ? { signal: opts.signal } : {}) },
      call,
    );
    const out: ExecuteOutput = {
      result: r.result === undefined ? null : r.result,
      logs: r.logs,
      calls: r.calls,
      error: r.error,
      hint: null,
      time: { queued_ms: Math.round(r.queuedMs ?? 0), total_ms: Math.round(r.elapsedMs ?? performance.now() - started) },
      rate_limit: budget(),
    };
    const hidden = opts.hidden ?? [];
    if (out.error) {
      const named = out.error.code === 'unknown_operation' ? /"([^"]+)"/.exec(out.error.message)?.[1] : undefined;
      const better = named ? unknownOperationError(named, operations, hidden) : explainMissingOperation(code, out.error, operations, hidden);
      if (better) out.error = better;
    }
    // The sandbox cuts an oversized result. Return a preview of a few KB with the size and the
    // outline of the value instead of the cut text, and say so in `error` too, so a client that
    // only looks at isError still learns the result is partial.
    const cut = !out.error ? r.resultTruncated : null;
    if (cut) {
      const text = typeof r.result === 'string' ? r.result.replace(/…\[truncated:[^\]]*\]$/, '') : '';
      out.result = { preview: `${cutUtf8(text, PREVIEW_BYTES)}…`, size: cut.size, limit_bytes: cut.limit, shape: cut.shape ?? null };
      out.error = {
        name: 'ResultTooLargeError',
        message:
          `The result was ${cut.size}, over the ${cut.limit}-byte limit: \`result\` holds its first ${PREVIEW_BYTES / 1024} KB and its shape. ` +
          'Return less: filter or aggregate inside the script, page with a smaller limit, or return only the fields you need.',
      };
    }
    if (!out.error && r.resultUndefined && out.calls.length > 0) {
      out.hint = `The script made ${out.calls.length} call${out.calls.length === 1 ? '' : 's'} but returned nothing (undefined): end it with \`return <value>\` to get the data back.`;
    }
    if (r.unsentCalls && r.unsentCalls.length > 0) {
      const names = [...new Set(r.unsentCalls)].slice(0, 5).join(', ');
      out.logs = [
        ...out.logs,
        `[warn] ${r.unsentCalls.length} api call${r.unsentCalls.length === 1 ? ' was' : 's were'} never awaited and did not run (${names}): await every api call.`,
      ];
    }
    return out;
  } catch (err) {
    opts.log?.error({ err }, 'mcp execute: sandbox failed');
    return {
      result: null,
      logs: [],
      calls: [],
      error: { name: 'InternalError', message: 'The sandbox failed to run this script. Try again.' },
      hint: null,
      time: { queued_ms: 0, total_ms: Math.round(performance.now() - started) },
      rate_limit: budget(),
    };
  }
}
