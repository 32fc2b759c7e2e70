/**
 * The TypeScript client: `client.<tag>.<verb>(input)` for every operation of the catalogue, derived
 * from the descriptors (nothing here names an operation). Input is the same flat object the other
 * faces take; the descriptor says which fields travel in the path, the query, the body or a header.
 *
 *   import { createClient } from 'sightline/client';
 *   const client = createClient({ apiKey: process.env.SIGHTLINE_API_KEY });
 *   const { data } = await client.feedback.list({ status: ['new'] });
 *   for await (const d of client.deployments.list.iterate({ environment: 'production' })) console.log(d.version);
 */
import type { z } from 'zod';
import { fieldLocations, type AnyOperation, type Operation } from '../../operations/define.js';
import { catalogue, type TagModules } from '../../operations/index.js';
import { SightlineConnectionError, SightlineError, SightlineInputError } from './errors.js';
import { iteratePages, paginationOf, type PaginationKind } from './pagination.js';

export { SightlineError, SightlineInputError, SightlineConnectionError } from './errors.js';
export { paginationOf, nextPageInput, type PaginationKind } from './pagination.js';

export const DEFAULT_BASE_URL = 'http://localhost:8080';

export interface ClientOptions {
  /** REST base URL (default http://localhost:8080). */
  baseUrl?: string;
  /** A project API key, sent as `x-service-key`. */
  apiKey?: string;
  /** An OAuth access token (or an API key), sent as `Authorization: Bearer`. */
  accessToken?: string;
  /** Used when an input leaves `project_id` out; else the client asks `projects.list` once and uses the only project. */
  projectId?: string;
  /** The operations to derive methods from (default: the catalogue). */
  operations?: readonly AnyOperation[];
  /** Retries of a 429 answer, waiting `Retry-After` each time (default 3). */
  maxRetries?: number;
  /** Most time spent waiting on 429 answers for one call, in ms (default 60 000); a longer wait is not attempted. */
  maxRetryWaitMs?: number;
  /** Injectable for tests. */
  fetch?: typeof fetch;
  /** Injectable for tests (default: a timer). */
  sleep?: (ms: number) => Promise<void>;
  /** Extra headers on every request. */
  headers?: Record<string, string>;
}

export interface CallOptions {
  signal?: AbortSignal;
  headers?: Record<string, string>;
}

// ---- types derived from the catalogue -------------------------------------------------------------

/* eslint-disable @typescript-eslint/no-explicit-any */
type AnyDescriptor = Operation<any, any>;
/**
 * The export name of a descriptor in its tag file is its verb; `delete` is a reserved word, so that
 * one is exported as `del` (test/client/client.test.ts checks every descriptor against this rule).
 */
type VerbName<K> = K extends 'del' ? 'delete' : K;

type InputOf<Op> = Op extends Operation<infer I, any> ? z.input<I> : never;
type OutputOf<Op> = Op extends Operation<any, infer O> ? z.output<O> : never;

/** `project_id` may be left out: the client uses the credential's project. */
export type ClientInput<T> = T extends { project_id: any } ? Omit<T, 'project_id'> & { project_id?: string | number } : T;
type ArgsOf<Op> = {} extends ClientInput<InputOf<Op>>
  ? [input?: ClientInput<InputOf<Op>>, options?: CallOptions]
  : [input: ClientInput<InputOf<Op>>, options?: CallOptions];

type ItemOf<Op> = OutputOf<Op> extends { data: Array<infer T> } ? T : never;
type IsPaginated<Op> = [ItemOf<Op>] extends [never] ? false : 'offset' extends keyof InputOf<Op> ? true : 'cursor' extends keyof InputOf<Op> ? true : false;

export interface PagedMethod<Op> {
  /** Every item of every page (`data` rows), following offset or cursor pagination. */
  iterate(...args: ArgsOf<Op>): AsyncGenerator<ItemOf<Op>, void, undefined>;
  /** Every page, as the server answered it. */
  pages(...args: ArgsOf<Op>): AsyncGenerator<OutputOf<Op>, void, undefined>;
}

export type ClientMethod<Op> = ((...args: ArgsOf<Op>) => Promise<OutputOf<Op>>) & {
  readonly operationId: string;
  readonly operation: AnyOperation;
} & (IsPaginated<Op> extends true ? PagedMethod<Op> : {});

type TagClient<M> = {
  [K in keyof M as M[K] extends AnyDescriptor ? VerbName<K> : never]: ClientMethod<M[K]>;
};

/** The typed face of the catalogue: `client.<tag>.<verb>`. */
export type CatalogueClient = { [T in keyof TagModules]: TagClient<TagModules[T]> };

export interface ClientCore {
  readonly baseUrl: string;
  readonly operations: ReadonlyMap<string, AnyOperation>;
  /** Call any operation by id (untyped; the typed methods are `client.<tag>.<verb>`). */
  request(operationId: string, input?: Record<string, unknown>, options?: CallOptions): Promise<unknown>;
  /** Every page of a paginated list operation. */
  pages(operationId: string, input?: Record<string, unknown>, options?: CallOptions): AsyncGenerator<unknown, void, undefined>;
  /** Every `data` row of a paginated list operation. */
  iterate(operationId: string, input?: Record<string, unknown>, options?: CallOptions): AsyncGenerator<unknown, void, undefined>;
  /** The project used when an input leaves `project_id` out. */
  resolveProjectId(): Promise<string>;
}

export type SightlineClient = CatalogueClient & ClientCore;
/* eslint-enable @typescript-eslint/no-explicit-any */

// ---- runtime -----------------------------------------------------------------------------------

const defaultSleep = (ms: number) => new Promise<void>((r) => setTimeout(r, ms));

/** Retry-After is delta-seconds or an HTTP date (RFC 9110 §10.2.3). */
function retryAfterSeconds(header: string | null, now = Date.now()): number | undefined {
  if (!header) return undefined;
  const trimmed = header.trim();
  if (/^\d+$/.test(trimmed)) return Number(trimmed);
  const at = Date.parse(trimmed);
  return Number.isNaN(at) ? undefined : Math.max(0, Math.ceil((at - now) / 1000));
}

function queryValue(v: unknown): string | undefined {
  if (v === undefined || v === null) return undefined;
  if (Array.isArray(v)) return v.map((x) => (typeof x === 'object' && x !== null ? JSON.stringify(x) : String(x))).join(',');
  if (v instanceof Date) return v.toISOString();
  if (typeof v === 'object') return JSON.stringify(v);
  return String(v);
}

export function createClient(options: ClientOptions = {}): SightlineClient {
  const baseUrl = (options.baseUrl ?? DEFAULT_BASE_URL).replace(/\/+$/, '');
  const ops = new Map((options.operations ?? catalogue).map((op) => [op.operationId, op] as const));
  const doFetch = options.fetch ?? globalThis.fetch;
  const sleep = options.sleep ?? defaultSleep;
  const maxRetries = options.maxRetries ?? 3;
  const maxRetryWaitMs = options.maxRetryWaitMs ?? 60_000;

  const authHeaders: Record<string, string> = {};
  if (options.apiKey) authHeaders['x-service-key'] = options.apiKey;
  else if (options.accessToken) authHeaders.authorization = `Bearer ${options.accessToken}`;

  let projectPromise: Promise<string> | null = options.projectId ? Promise.resolve(String(options.projectId)) : null;

  function operation(operationId: string): AnyOperation {
    const op = ops.get(operationId);
    if (!op) throw new SightlineInputError('unknown_operation', `There is no operation \`${operationId}\` in this client.`);
    return op;
  }

  async function send(url: string, init: RequestInit): Promise<Response> {
    let waitedMs = 0;
    for (let attempt = 0; ; attempt++) {
      let res: Response;
      try {
        res = await doFetch(url, init);
      } catch (err) {
        if ((err as Error)?.name === 'AbortError') throw err;
        throw new SightlineConnectionError(url, err);
      }
      if (res.status !== 429 || attempt >= maxRetries) return res;
      // Spec (Limits): a limited answer has status 429 and Retry-After in seconds; honour it, bounded.
      const waitMs = (retryAfterSeconds(res.headers.get('retry-after')) ?? 1) * 1000;
      if (waitedMs + waitMs > maxRetryWaitMs) return res;
      await res.body?.cancel().catch(() => {});
      await sleep(waitMs);
      waitedMs += waitMs;
    }
  }

  async function resolveProjectId(): Promise<string> {
    projectPromise ??= (async () => {
      const list = ops.get('projects.list');
      if (!list) throw new SightlineInputError('project_id_required', 'Name the project with project_id.', 'project_id');
      const answer = (await call(list, {})) as { data?: Array<{ id: string }> };
      const projects = answer?.data ?? [];
      if (projects.length !== 1) {
        throw new SightlineInputError(
          'project_id_required',
          `This credential reaches ${projects.length} projects (${projects.map((p) => p.id).join(', ') || 'none'}); name one with project_id.`,
          'project_id',
        );
      }
      return String(projects[0]!.id);
    })().catch((err) => {
      projectPromise = null;
      throw err;
    });
    return projectPromise;
  }

  async function call(op: AnyOperation, input: Record<string, unknown> = {}, callOpts: CallOptions = {}): Promise<unknown> {
    if (input === null || typeof input !== 'object' || Array.isArray(input)) {
      throw new SightlineInputError('invalid_input', 'The input must be an object of fields.');
    }
    const where = fieldLocations(op);
    const values: Record<string, unknown> = { ...input };
    if (where.path.includes('project_id') && (values.project_id === undefined || values.project_id === null || values.project_id === '')) {
      values.project_id = await resolveProjectId();
    }
    const path = op.path.replace(/\{([a-z_]+)\}/g, (_m, name: string) => {
      const v = values[name];
      if (v === undefined || v === null || v === '') throw new SightlineInputError('missing_parameter', `\`${name}\` is required.`, name);
      return encodeURIComponent(String(v));
    });
    const url = new URL(baseUrl + path);
    const headers: Record<string, string> = { accept: 'application/json', ...options.headers, ...authHeaders, ...callOpts.headers };
    for (const [header, field] of Object.entries(op.headerInputs ?? {})) {
      if (values[field] !== undefined && values[field] !== null) headers[header] = String(values[field]);
    }
    const known = new Set([...where.path, ...where.header, ...where.query, ...where.body]);
    const hasBody = op.method === 'POST' || op.method === 'PUT' || op.method === 'PATCH';
    // Fields the descriptor does not know travel with the rest (a newer server may accept them).
    const extra = Object.keys(values).filter((k) => !known.has(k));
    let body: string | undefined;
    if (hasBody) {
      const b: Record<string, unknown> = {};
      for (const f of [...where.body, ...extra]) if (values[f] !== undefined) b[f] = values[f];
      body = JSON.stringify(b);
      headers['content-type'] = 'application/json';
    } else {
      for (const q of [...where.query, ...extra]) {
        const v = queryValue(values[q]);
        if (v !== undefined) url.searchParams.set(q, v);
      }
    }

    const res = await send(url.toString(), { method: op.method, headers, body, signal: callOpts.signal });
    const requestId = res.headers.get('x-request-id') ?? undefined;
    const text = await res.text();
    let parsed: unknown;
    let isJson = true;
    try {
      parsed = text === '' ? null : JSON.parse(text);
    } catch {
      isJson = false;
      parsed = text;
    }
    if (!res.ok) throw SightlineError.fromResponse(res.status, parsed, requestId, retryAfterSeconds(res.headers.get('retry-after')));
    if (!isJson) {
      throw new SightlineError({ status: res.status, code: 'invalid_response', message: 'The server answered with a body that is not JSON.', requestId });
    }
    return parsed;
  }

  function pagesOf(op: AnyOperation, input: Record<string, unknown> = {}, callOpts: CallOptions = {}) {
    const kind: PaginationKind | null = paginationOf(op);
    if (!kind) throw new SightlineInputError('not_paginated', `\`${op.operationId}\` is not a paginated list.`);
    return iteratePages(kind, input, (i) => call(op, i, callOpts));
  }

  async function* itemsOf(op: AnyOperation, input: Record<string, unknown> = {}, callOpts: CallOptions = {}) {
    for await (const page of pagesOf(op, input, callOpts)) {
      const data = (page as { data?: unknown[] })?.data;
      if (Array.isArray(data)) yield* data;
    }
  }

  const client: Record<string, unknown> = {};
  for (const op of ops.values()) {
    const [tag, ...rest] = op.operationId.split('.');
    const verb = rest.join('.');
    const method = Object.assign((input?: Record<string, unknown>, o?: CallOptions) => call(op, input, o), {
      operationId: op.operationId,
      operation: op,
    }) as unknown as Record<string, unknown>;
    if (paginationOf(op)) {
      method.iterate = (input?: Record<string, unknown>, o?: CallOptions) => itemsOf(op, input, o);
      method.pages = (input?: Record<string, unknown>, o?: CallOptions) => pagesOf(op, input, o);
    }
    ((client[tag!] ??= {}) as Record<string, unknown>)[verb] = method;
  }

  const core: ClientCore = {
    baseUrl,
    operations: ops,
    request: (operationId, input, o) => call(operation(operationId), input, o),
    pages: (operationId, input, o) => pagesOf(operation(operationId), input, o),
    iterate: (operationId, input, o) => itemsOf(operation(operationId), input, o),
    resolveProjectId,
  };
  return Object.assign(client, core) as unknown as SightlineClient;
}
