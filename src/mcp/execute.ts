/**
 * MCP `execute`: run agent-written JavaScript in the sandbox, with every `api.*` call made here,
 * outside it, through `core.invoke` with the caller's principal. Credentials never enter the
 * sandbox; only JSON crosses the boundary. Never throws: failures come back in `error`.
 */
import { randomUUID } from 'node:crypto';
import type { Logger } from 'pino';
import type { AnyOperation } from '../../operations/define.js';
import type { CallRecord, ExecuteResult, Executor, HostCall, HostCallResult, SandboxLimits } from '../../sandbox/executor.js';
import { AppError } from '../core/errors.js';
import type { Core } from '../core/invoke.js';
import { principalHolds, type Principal } from '../core/principal.js';

/** What a session can do on behalf of its caller. */
export interface McpCaller {
  /** Runs one operation for the caller, outside the sandbox. Never throws. */
  call: HostCall;
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

/** The projects a principal can reach: one for an API key, those of the user's organizations otherwise. */
function reachableProjects(core: Core, principal: Principal): Array<{ id: string; orgId: string }> {
  if (principal.kind === 'api_key') return [{ id: principal.projectId, orgId: principal.orgId }];
  return core.services.identity.projectsOfOrgs(Object.keys(principal.roles)).map((p) => ({ id: p.id, orgId: p.org_id }));
}

/** A caller that runs operations in this process, through `core.invoke` (the one way in). */
export function localCaller(core: Core, principal: Principal, opts: { log?: Pick<Logger, 'error'> } = {}): McpCaller {
  const projects = reachableProjects(core, principal);
  // API keys: invoke fills project_id itself. OAuth users with exactly one project: we do.
  const defaultProject = projects.length === 1 ? projects[0]! : null;
  const orgForScopes = principal.kind === 'api_key' ? principal.orgId : defaultProject?.orgId ?? null;

  return {
    defaultProjectId: defaultProject?.id ?? null,
    holds(op) {
      if (orgForScopes !== null) return op.scopes.every((s) => principalHolds(principal, orgForScopes, s));
      // A user with several organizations: held if some organization of theirs grants it.
      const orgs = principal.kind === 'user' ? Object.keys(principal.roles) : [];
      return orgs.some((org) => op.scopes.every((s) => principalHolds(principal, org, s)));
    },
    async call(operationId, input) {
      try {
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
        const r = await core.invoke(operationId, effective, principal, { allowSensitive: false, requestId: randomUUID() });
        return { ok: true, value: r.value ?? null };
      } catch (err) {
        return hostError(err, opts.log, operationId);
      }
    },
  };
}

/** The marker sandbox/worker.mjs appends to a result it had to cut. */

export interface ExecuteOutput {
  result: unknown;
  logs: string[];
  calls: CallRecord[];
  error: { name: string; message: string; status?: number; code?: string } | null;
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
  opts: { limits?: Partial<SandboxLimits>; log?: Pick<Logger, 'error'> } = {},
): Promise<ExecuteOutput> {
  try {
    const r: ExecuteResult = await executor.execute({ code, operations, limits: opts.limits }, call);
    const out: ExecuteOutput = { result: r.result === undefined ? null : r.result, logs: r.logs, calls: r.calls, error: r.error };
    // The sandbox cuts an oversized result to its budget and appends a hint. Keep the part that fits,
    // and say so in `error` too, so a client that only looks at isError still learns the result is partial.
    const cut = !out.error ? r.resultTruncated : null;
    if (cut) {
      out.error = {
        name: 'ResultTooLargeError',
        message: `The result was ${cut.size}, over the ${cut.limit}-byte limit, and was truncated. Narrow the query with filters or a smaller limit, or return only the fields you need.`,
      };
    }
    return out;
  } catch (err) {
    opts.log?.error({ err }, 'mcp execute: sandbox failed');
    return { result: null, logs: [], calls: [], error: { name: 'InternalError', message: 'The sandbox failed to run this script. Try again.' } };
  }
}
