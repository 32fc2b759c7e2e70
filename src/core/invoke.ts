import { randomUUID } from 'node:crypto';
import { z } from 'zod';
import type { AnyOperation, HandlerContext, ProjectRef } from '../../operations/define.js';
import { catalogue } from '../../operations/index.js';
import { resolveRelativeTimes } from '../../operations/shared.js';
import { AppError, AuthenticationError, ForbiddenError, InsufficientScopeError, InternalError, NotFoundError, storageFailure, ValidationError } from './errors.js';
import { principalHolds, type Principal } from './principal.js';
import type { Services } from './services.js';

export interface InvokeOptions {
  requestId?: string;
  /** Faces that cannot reach hidden operations (the MCP sandbox) say so here. */
  allowSensitive?: boolean;
  /** The face can send a streamed answer (REST): operations with `streams` may return one. */
  acceptStream?: boolean;
  /** Aborted when nobody will read the answer (an MCP execute past its wall clock): handlers that wait or work in slices stop. */
  signal?: AbortSignal;
}

export interface InvokeResult {
  value: unknown;
  status: number;
  headers: Record<string, string>;
  /** A streamed answer (only when the face passed `acceptStream`); `value` is null then. */
  stream?: AsyncIterable<string>;
}

export interface Core {
  services: Services;
  operations: ReadonlyMap<string, AnyOperation>;
  now: () => number;
  onInternalError?: (err: unknown, operationId: string) => void;
  invoke(operationId: string, input: unknown, principal: Principal | null, opts?: InvokeOptions): Promise<InvokeResult>;
}

/** Turn the first zod issue into a message a person can act on, naming the field. */
export function validationErrorFrom(err: z.ZodError, accepted?: readonly string[]): ValidationError {
  const issue = err.issues[0]!;
  if (issue.code === 'unrecognized_keys') {
    const key = issue.keys[0]!;
    const path = [...issue.path, key].join('.');
    const list = accepted && issue.path.length === 0 ? ` Accepted fields: ${accepted.join(', ')}.` : '';
    return new ValidationError(`Unknown field \`${safeName(path)}\`: this operation does not accept it.${list}`, safeName(path), 'unknown_field');
  }
  const path = issue.path.map(String).join('.');
  const where = path ? `\`${path}\`: ` : '';
  return new ValidationError(`${where}${issue.message}`, path || undefined);
}

/**
 * `checked`: every answer is parsed with the operation's output schema, and must come out unchanged.
 * `trusted`: the parse is skipped (issue 19 item 4: ~15% of a REST read). Tests run checked (the
 * equivalence proof for every operation they call); the server runs trusted unless
 * SIGHTLINE_OUTPUT_VALIDATION=checked.
 */
export type OutputValidation = 'checked' | 'trusted';

export function defaultOutputValidation(env: NodeJS.ProcessEnv = process.env): OutputValidation {
  const v = env.SIGHTLINE_OUTPUT_VALIDATION;
  if (v === 'checked' || v === 'trusted') return v;
  return env.VITEST ? 'checked' : 'trusted';
}

/** Deep equality of two JSON-like values, ignoring key order and keys holding undefined. */
export function sameJson(a: unknown, b: unknown): boolean {
  if (a === b) return true;
  if (typeof a !== 'object' || typeof b !== 'object' || a === null || b === null) return Number.isNaN(a) && Number.isNaN(b);
  if (Array.isArray(a) || Array.isArray(b)) {
    if (!Array.isArray(a) || !Array.isArray(b) || a.length !== b.length) return false;
    for (let i = 0; i < a.length; i++) if (!sameJson(a[i], b[i])) return false;
    return true;
  }
  const ra = a as Record<string, unknown>;
  const rb = b as Record<string, unknown>;
  const ka = Object.keys(ra).filter((k) => ra[k] !== undefined);
  const kb = Object.keys(rb).filter((k) => rb[k] !== undefined);
  if (ka.length !== kb.length) return false;
  for (const k of ka) if (!Object.hasOwn(rb, k) || !sameJson(ra[k], rb[k])) return false;
  return true;
}

/** A field name echoed in a message: printable and short (it comes from the caller). */
function safeName(name: string): string {
  const clean = name.replace(/[^\x20-\x7e]/g, '?');
  return clean.length > 64 ? clean.slice(0, 64) + '…' : clean;
}

/**
 * The one way in for every face (REST, MCP execute, CLI, client):
 * authenticate → project access → scopes → parse input → handler → parse output.
 */
export function createCore(
  services: Services,
  opts: { now?: () => number; operations?: readonly AnyOperation[]; outputValidation?: OutputValidation } = {},
): Core {
  const operations = new Map((opts.operations ?? catalogue).map((op) => [op.operationId, op] as const));
  const now = opts.now ?? Date.now;
  const checkOutput = (opts.outputValidation ?? defaultOutputValidation()) === 'checked';

  const core: Core = {
    services,
    operations,
    now,
    async invoke(operationId, rawInput, principal, invokeOpts = {}) {
      const op = operations.get(operationId);
      if (!op || (op.sensitive && invokeOpts.allowSensitive === false)) {
        throw new AppError(404, 'not_found_error', 'unknown_operation', `There is no operation \`${operationId}\`.`);
      }
      if (!principal) throw new AuthenticationError();

      const input: Record<string, unknown> =
        rawInput && typeof rawInput === 'object' && !Array.isArray(rawInput) ? { ...(rawInput as Record<string, unknown>) } : {};
      if (rawInput !== undefined && rawInput !== null && (typeof rawInput !== 'object' || Array.isArray(rawInput))) {
        throw new ValidationError('The input must be a JSON object.');
      }

      // Project access: a project another credential cannot see answers exactly like a missing one.
      let project: ProjectRef | null = null;
      if ('project_id' in op.input.shape) {
        if (input.project_id === undefined && principal.kind === 'api_key') input.project_id = principal.projectId;
        if (typeof input.project_id === 'number') input.project_id = String(input.project_id);
        const pid = input.project_id;
        if (typeof pid !== 'string') throw new ValidationError('`project_id` is required.', 'project_id');
        const row = services.identity.projectById(pid);
        // A key of another project: the project does not exist for it (404). A user who is not (or
        // no longer) a member of the project's organization lacks project access: 403 (spec, Errors).
        if (!row || (principal.kind === 'api_key' && principal.projectId !== row.id)) throw new NotFoundError('Project', 'project_id');
        if (principal.kind === 'user' && principal.roles[row.org_id] === undefined) {
          throw new ForbiddenError('project_access_denied', 'This account is not a member of the organization that owns this project.');
        }
        project = { id: row.id, orgId: row.org_id, name: row.name };
      }

      if (op.requiresApiKey && principal.kind !== 'api_key') {
        throw new ForbiddenError('api_key_required', `\`${op.operationId}\` needs an API key of the project holding ${op.scopes.join(' and ')}; OAuth tokens cannot call it.`);
      }

      const orgId = project?.orgId ?? (principal.kind === 'api_key' ? principal.orgId : '');
      const missing = op.scopes.filter((s) => !principalHolds(principal, orgId, s));
      if (missing.length) throw new InsufficientScopeError(op.scopes);

      // `from`/`to` in relative form (`-1h`, `now`) become ISO 8601 with this request's clock.
      resolveRelativeTimes(input, now());
      const parsed = op.input.safeParse(input);
      if (!parsed.success) throw validationErrorFrom(parsed.error, Object.keys(op.input.shape));

      const ctx: HandlerContext = {
        principal,
        project,
        services,
        now,
        requestId: invokeOpts.requestId ?? randomUUID(),
        response: { headers: {} },
        canStream: !!(invokeOpts.acceptStream && op.streams),
        ...(invokeOpts.signal ? { signal: invokeOpts.signal } : {}),
      };
      let value: unknown;
      try {
        value = await op.handler(parsed.data, ctx);
      } catch (err) {
        if (err instanceof AppError) throw err;
        const unavailable = storageFailure(err);
        if (unavailable) throw unavailable;
        core.onInternalError?.(err, operationId);
        throw new InternalError();
      }
      const status = ctx.response.status ?? op.successStatus ?? 200;
      if (ctx.canStream && ctx.response.stream) return { value: null, status, headers: ctx.response.headers, stream: ctx.response.stream };
      if (!checkOutput) return { value, status, headers: ctx.response.headers };
      const out = op.output.safeParse(value);
      if (!out.success) {
        core.onInternalError?.(out.error, operationId);
        throw new InternalError();
      }
      // Checked mode also proves that skipping the parse changes nothing: the parsed answer must be
      // the handler's answer (no stripped field, default or transform). Every test run checks this
      // for every operation it calls, which is what lets production skip the parse.
      if (!sameJson(out.data, value)) {
        core.onInternalError?.(new Error(`output validation of ${operationId} changed the answer; make the handler return exactly its output schema`), operationId);
        throw new InternalError();
      }
      return { value: out.data, status, headers: ctx.response.headers };
    },
  };
  return core;
}
