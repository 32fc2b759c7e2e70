/**
 * Access checks generated from the catalogue, independent of the face that runs them.
 *
 * `accessCases(env)` walks every operation and returns cases of four kinds:
 *  - `no_credential`   no credential at all                                   → 401
 *  - `other_project`   a credential of another organization's project           → 404
 *                      (projects.list: 200 and the other project is not listed)
 *  - `missing_scope`   a key of the same project lacking the operation's scope  → 403
 *  - `unknown_field`   an unknown body field on a strict POST/PUT/PATCH input     → 400 `unknown_field`
 *
 * Each case carries a flat `input` (what `core.invoke`, the MCP sandbox's `api.<tag>.<verb>(input)`,
 * the CLI and the client take) and the credential secret to call with. `httpRequestFor()` turns a
 * case into an HTTP request for the REST face; another face only needs its own runner.
 */
import { randomUUID } from 'node:crypto';
import { z } from 'zod';
import type { AnyOperation } from '../../operations/define.js';
import { fieldLocations, pathParams } from '../../operations/define.js';
import { catalogue } from '../../operations/index.js';
import { holdsAll } from '../../src/core/scopes.js';
import { toJsonSchema, type JsonSchema } from '../../src/core/json-schema.js';

export type AccessCheck = 'no_credential' | 'other_project' | 'missing_scope' | 'unknown_field';

export interface AccessCase {
  /** Sentence for the test name. */
  title: string;
  check: AccessCheck;
  operationId: string;
  op: AnyOperation;
  /** Flat input (path, query and body fields side by side). */
  input: Record<string, unknown>;
  /** Credential secret, or null for none. */
  credential: string | null;
  expect: {
    status: number;
    code?: string;
    param?: string;
    /** projects.list with another project's key: this project id must not be listed. */
    notListedProjectId?: string;
  };
}

export interface AccessEnv {
  projectId: string;
  keys: { admin: string };
  otherProject: { projectId: string; adminKey: string };
  mintKey(scopes: string[], projectId?: string): string;
}

/** Scope sets tried, in order, for a key that lacks an operation's scopes. */
const LACKING_CANDIDATES: string[][] = [['events:ingest'], ['errors:read'], ['deployments:read']];

/** A scope set that does not cover `required` (null when the op needs no scope). */
export function lackingScopes(required: readonly string[]): string[] | null {
  if (!required.length) return null;
  return LACKING_CANDIDATES.find((c) => !holdsAll(c, required)) ?? null;
}

/** A strict input object (z.strictObject): unknown fields are rejected, not stripped. */
export function isStrictObject(schema: z.ZodType): boolean {
  const def = (schema as unknown as { def: { type: string; catchall?: { def?: { type?: string } } } }).def;
  return def.type === 'object' && def.catchall?.def?.type === 'never';
}

export const UNKNOWN_FIELD = 'zz_not_a_field';

/** A value that satisfies a (simple) JSON schema, for required fields the example does not give. */
function sample(js: JsonSchema): unknown {
  if ('const' in js) return js.const;
  if (Array.isArray(js.enum)) return js.enum[0];
  if (Array.isArray(js.anyOf)) return sample(js.anyOf[0] as JsonSchema);
  if (Array.isArray(js.oneOf)) return sample(js.oneOf[0] as JsonSchema);
  const type = Array.isArray(js.type) ? js.type[0] : js.type;
  switch (type) {
    case 'string':
      if (js.format === 'uuid') return randomUUID();
      if (js.format === 'date-time') return new Date().toISOString();
      if (js.format === 'email') return 'someone@example.com';
      if (js.format === 'uri' || js.format === 'url') return 'https://example.com/';
      return 'x'.repeat(Math.max(1, Number(js.minLength ?? 1)));
    case 'integer':
    case 'number':
      return typeof js.minimum === 'number' ? js.minimum : typeof js.exclusiveMinimum === 'number' ? js.exclusiveMinimum + 1 : 1;
    case 'boolean':
      return true;
    case 'array':
      return Array.from({ length: Number(js.minItems ?? 0) }, () => sample((js.items ?? {}) as JsonSchema));
    case 'object': {
      const out: Record<string, unknown> = {};
      const props = (js.properties ?? {}) as Record<string, JsonSchema>;
      for (const k of (js.required ?? []) as string[]) out[k] = sample(props[k] ?? {});
      return out;
    }
    case 'null':
      return null;
    default:
      return 'x';
  }
}

/**
 * A valid-looking flat input: required fields sampled from the schema, overlaid by the descriptor's
 * `example`, then path parameters (`project_id` given, other ids random UUIDs).
 */
export function inputFor(op: AnyOperation, projectId: string): Record<string, unknown> {
  const js = toJsonSchema(op.input, 'input');
  const props = (js.properties ?? {}) as Record<string, JsonSchema>;
  const input: Record<string, unknown> = {};
  for (const k of (js.required ?? []) as string[]) if (k !== 'project_id') input[k] = sample(props[k] ?? {});
  Object.assign(input, op.example ?? {});
  for (const p of pathParams(op.path)) input[p] = p === 'project_id' ? projectId : randomUUID();
  if (!('project_id' in op.input.shape)) delete input.project_id;
  return input;
}

export async function accessCases(env: AccessEnv, operations: readonly AnyOperation[] = catalogue): Promise<AccessCase[]> {
  const keyCache = new Map<string, string>();
  const keyWith = (scopes: string[]) => {
    const k = scopes.join(' ');
    if (!keyCache.has(k)) keyCache.set(k, env.mintKey(scopes));
    return keyCache.get(k)!;
  };
  const cases: AccessCase[] = [];
  for (const op of operations) {
    const input = inputFor(op, env.projectId);
    const base = { operationId: op.operationId, op };
    cases.push({ ...base, check: 'no_credential', title: `${op.operationId} answers 401 without a credential`, input, credential: null, expect: { status: 401, code: 'unauthenticated' } });

    if (!('project_id' in op.input.shape)) {
      // Not bound to a project (projects.list, users.me): answered for the key's own project only.
      cases.push({
        ...base,
        check: 'other_project',
        title: `${op.operationId} with another project\'s key does not list this project`,
        input,
        credential: env.otherProject.adminKey,
        expect: { status: 200, notListedProjectId: env.projectId },
      });
    } else {
      cases.push({
        ...base,
        check: 'other_project',
        title: `${op.operationId} answers 404 to a credential of another project`,
        input,
        credential: env.otherProject.adminKey,
        expect: { status: 404 },
      });
    }

    const lacking = lackingScopes(op.scopes);
    if (lacking) {
      cases.push({
        ...base,
        check: 'missing_scope',
        title: `${op.operationId} answers 403 to a key holding only ${lacking.join(', ')}`,
        input,
        credential: keyWith(lacking),
        expect: { status: 403 },
      });
    }

    if (fieldLocations(op).body.length && isStrictObject(op.input)) {
      cases.push({
        ...base,
        check: 'unknown_field',
        title: `${op.operationId} answers 400 to an unknown body field`,
        input: { ...input, [UNKNOWN_FIELD]: 1 },
        credential: env.keys.admin,
        expect: { status: 400, code: 'unknown_field', param: UNKNOWN_FIELD },
      });
    }
  }
  return cases;
}

/** The HTTP request (REST face) for an operation and a flat input. */
export function httpRequestFor(
  op: AnyOperation,
  input: Record<string, unknown>,
  credential: string | null,
): { method: string; path: string; headers: Record<string, string>; body?: string } {
  const where = fieldLocations(op);
  let path = op.path;
  for (const p of where.path) path = path.replace(`{${p}}`, encodeURIComponent(String(input[p])));
  const query = new URLSearchParams();
  const body: Record<string, unknown> = {};
  const headers: Record<string, string> = {};
  const headerOf = Object.fromEntries(Object.entries(op.headerInputs ?? {}).map(([h, f]) => [f, h]));
  const hasBody = op.method === 'POST' || op.method === 'PUT' || op.method === 'PATCH';
  for (const [k, v] of Object.entries(input)) {
    if (where.path.includes(k)) continue;
    if (headerOf[k]) headers[headerOf[k]] = String(v);
    else if (hasBody) body[k] = v;
    else query.set(k, Array.isArray(v) ? v.join(',') : String(v));
  }
  if (credential) headers['x-service-key'] = credential;
  if (hasBody) headers['content-type'] = 'application/json';
  // JSON answers only (a streaming operation such as threads.askStream answers JSON then).
  headers.accept = 'application/json';
  const qs = query.toString();
  return { method: op.method, path: path + (qs ? `?${qs}` : ''), headers, body: hasBody ? JSON.stringify(body) : undefined };
}

// ---------------------------------------------------------------------------------------------
// The access matrix (issue 10, "Deliver as well"): every operation × every kind of wrong
// credential, run through every face by test/access.test.ts. Generated: a new operation is covered
// without new test code.

export type MatrixCheck =
  | 'no_credential'
  | 'expired_key'
  | 'revoked_key'
  | 'expired_token'
  | 'revoked_token'
  | 'other_project'
  | 'other_org_user'
  | 'member_role'
  | 'missing_scope'
  | 'ingest_only'
  | 'token_on_key_only';

export interface MatrixCredential {
  kind: 'none' | 'key' | 'token';
  secret: string | null;
}

export interface MatrixCase {
  title: string;
  check: MatrixCheck;
  operationId: string;
  op: AnyOperation;
  input: Record<string, unknown>;
  credential: MatrixCredential;
  /** `status` expected; `listsOnly` for projects.list: 200 and these project ids are not listed. */
  expect: { status: number; code?: string; notListedProjectId?: string };
}

export interface MatrixEnv extends AccessEnv {
  organizationId: string;
  otherProject: AccessEnv['otherProject'] & { organizationId: string };
  mintKey(scopes: string[], projectId?: string, opts?: { expiresAt?: number | null }): string;
  revokeKey(secret: string): void;
  mintUserToken(opts: { role?: 'owner' | 'admin' | 'member'; orgId?: string; scopes?: string[]; expiresAt?: number }): { token: string; revoke(): void };
  now(): number;
}

/** Scopes a member's role does not allow (src/core/principal.ts roleAllows), whatever the token holds. */
const MEMBER_DENIED = ['project:write', 'providers:write', 'revenue:read', 'revenue:write', 'remote_access:manage'];

/** A key lacking exactly `scope` of `required`: the other required scopes plus a filler that does not cover it. */
function keyLacking(required: readonly string[], scope: string): string[] {
  const others = required.filter((s) => s !== scope && !holdsAll([s], [scope]));
  const filler = (['events:ingest', 'errors:read', 'deployments:read'] as const).find((f) => !holdsAll([f], [scope]))!;
  return [...new Set([...others, filler])].filter((s) => !holdsAll([s], [scope]));
}

export function matrixCases(env: MatrixEnv, operations: readonly AnyOperation[] = catalogue): MatrixCase[] {
  const memo = new Map<string, MatrixCredential>();
  const once = (name: string, make: () => MatrixCredential) => {
    if (!memo.has(name)) memo.set(name, make());
    return memo.get(name)!;
  };
  const key = (scopes: string[]) => once(`key ${scopes.join(' ')}`, () => ({ kind: 'key', secret: env.mintKey(scopes) }));
  const creds = {
    none: { kind: 'none', secret: null } as MatrixCredential,
    expiredKey: once('expired key', () => ({ kind: 'key', secret: env.mintKey(['*'], env.projectId, { expiresAt: env.now() - 1000 }) })),
    revokedKey: once('revoked key', () => {
      const secret = env.mintKey(['*']);
      env.revokeKey(secret);
      return { kind: 'key', secret };
    }),
    expiredToken: once('expired token', () => ({ kind: 'token', secret: env.mintUserToken({ role: 'owner', scopes: ['*'], expiresAt: env.now() - 1000 }).token })),
    revokedToken: once('revoked token', () => {
      const u = env.mintUserToken({ role: 'owner', scopes: ['*'] });
      u.revoke();
      return { kind: 'token', secret: u.token };
    }),
    otherProject: { kind: 'key', secret: env.otherProject.adminKey } as MatrixCredential,
    otherOrgUser: once('other org user', () => ({ kind: 'token', secret: env.mintUserToken({ role: 'owner', orgId: env.otherProject.organizationId, scopes: ['*'] }).token })),
    member: once('member', () => ({ kind: 'token', secret: env.mintUserToken({ role: 'member', scopes: ['*'] }).token })),
    owner: once('owner', () => ({ kind: 'token', secret: env.mintUserToken({ role: 'owner', scopes: ['*'] }).token })),
    ingest: once('ingest', () => key(['events:ingest'])),
  };

  const cases: MatrixCase[] = [];
  for (const op of operations) {
    const input = inputFor(op, env.projectId);
    const add = (check: MatrixCheck, credential: MatrixCredential, expect: MatrixCase['expect'], what: string) =>
      cases.push({ title: `${op.operationId}: ${what} → ${expect.status}${expect.code ? ` ${expect.code}` : ''}`, check, operationId: op.operationId, op, input, credential, expect });
    const projectBound = 'project_id' in op.input.shape;

    add('no_credential', creds.none, { status: 401, code: 'unauthenticated' }, 'no credential');
    add('expired_key', creds.expiredKey, { status: 401, code: 'unauthenticated' }, 'an expired key');
    add('revoked_key', creds.revokedKey, { status: 401, code: 'unauthenticated' }, 'a revoked key');
    add('expired_token', creds.expiredToken, { status: 401, code: 'unauthenticated' }, 'an expired OAuth token');
    add('revoked_token', creds.revokedToken, { status: 401, code: 'unauthenticated' }, 'a revoked OAuth token');
    if (projectBound) {
      add('other_project', creds.otherProject, { status: 404, code: 'not_found' }, "another project's key");
      add('other_org_user', creds.otherOrgUser, { status: 403, code: 'project_access_denied' }, "another organization's owner");
    } else {
      add('other_project', creds.otherProject, { status: 200, notListedProjectId: env.projectId }, "another project's key");
      add('other_org_user', creds.otherOrgUser, { status: 200, notListedProjectId: env.projectId }, "another organization's owner");
    }
    if (op.scopes.some((s) => MEMBER_DENIED.includes(s))) add('member_role', creds.member, { status: 403, code: 'insufficient_scope' }, 'a member whose role lacks access');
    for (const s of op.scopes) add('missing_scope', key(keyLacking(op.scopes, s)), { status: 403, code: 'insufficient_scope' }, `a key missing ${s}`);
    if (op.scopes.length && !holdsAll(['events:ingest'], op.scopes)) add('ingest_only', creds.ingest, { status: 403, code: 'insufficient_scope' }, 'an ingest-only key');
    if (op.requiresApiKey) add('token_on_key_only', creds.owner, { status: 403, code: 'api_key_required' }, "an owner's OAuth token");
  }
  return cases;
}

/** Authentication headers for a matrix credential: keys in x-service-key, tokens as Bearer. */
export function credentialHeaders(c: MatrixCredential): Record<string, string> {
  if (!c.secret) return {};
  return c.kind === 'token' ? { authorization: `Bearer ${c.secret}` } : { 'x-service-key': c.secret };
}
