import { z } from 'zod';
import type { Scope } from '../src/core/scopes.js';
import type { Principal } from '../src/core/principal.js';
import type { Services } from '../src/core/services.js';

export type Risk = 'read' | 'write';
export type HttpMethod = 'GET' | 'POST' | 'PUT' | 'PATCH' | 'DELETE';

export interface DeclaredError {
  status: number;
  code: string;
  when: string;
}

/** What a handler may read besides its input. Handlers never see the database handle. */
export interface HandlerContext {
  principal: Principal;
  /** The project the request is scoped to (resolved and access-checked by invoke). */
  project: ProjectRef | null;
  services: Services;
  now: () => number;
  requestId: string;
  /** A face that speaks HTTP honours these; others ignore them. */
  response: {
    status?: number;
    headers: Record<string, string>;
    /**
     * A streamed answer (operations with `streams`, when `canStream`): the REST face sends these
     * chunks as they come, with `streams.contentType`, instead of the JSON value.
     */
    stream?: AsyncIterable<string>;
  };
  /** The face can send a streamed answer (REST, for operations with `streams`); others get the JSON output. */
  canStream: boolean;
  /**
   * Aborted when the caller will not read the answer (an MCP execute whose wall clock ran out).
   * Handlers that wait (a model, a remote call) or work in slices check it and stop early.
   */
  signal?: AbortSignal;
}

export interface ProjectRef {
  id: string;
  orgId: string;
  name: string;
}

/**
 * Display hints for people (the CLI's human output). They never change the answer, only how a
 * table or chart shows it; `--output json` always prints the whole answer.
 */
export interface DisplayHints {
  /** Default table columns of the answer's rows, in order; the rest stay one `--columns` away. */
  columns?: readonly string[];
  /** The answer is a series: draw it as a chart in the terminal. */
  chart?: ChartHint;
}

export type ChartHint =
  | {
      /** A line chart of `points[].y` over `points[].x` (an ISO time). */
      kind: 'line';
      points: string;
      x: string;
      y: string;
      /** How buckets merge when there are more than the terminal has columns. */
      merge: 'sum' | 'mean';
      /** A fixed unit, or `unitField` naming the answer's field that holds it. */
      unit?: string;
      unitField?: string;
      /** A per-point record of value → count (`group_by`): one line per value (the largest few). */
      groups?: string;
      /** Fields of the answer named in the chart's title line. */
      title?: readonly string[];
    }
  | {
      /** Horizontal bars: one group per row of `rows`, one bar per field of `values`. */
      kind: 'bar';
      rows: string;
      label: string;
      values: readonly string[];
      unit?: string;
    };

// `any` here keeps `defineOperation` an identity helper for inference; zod gives the real types.
/* eslint-disable @typescript-eslint/no-explicit-any */
export interface Operation<I extends z.ZodType = z.ZodType, O extends z.ZodType = z.ZodType> {
  operationId: string;
  tag: string;
  summary: string;
  description: string;
  method: HttpMethod;
  /** OpenAPI form: /v1/projects/{project_id}/errors/{error_group_id} */
  path: string;
  /** All are required. Empty: any valid credential (projects.list / projects.get). */
  scopes: readonly Scope[];
  risk: Risk;
  /**
   * Only an API key of the project may call it (spec, Authentication item 7: feedback capture needs
   * `events:ingest` on a key of the same project); OAuth tokens get 403 `api_key_required`.
   */
  requiresApiKey?: boolean;
  /** Hidden from the tool server (spec: sensitive or bulk operations). */
  sensitive: boolean;
  /** False only for projects.list and projects.get. */
  projectScoped: boolean;
  /** One flat object: path, query and body fields side by side. Must be a z.object. */
  input: I;
  output: O;
  errors: readonly DeclaredError[];
  /** Success status over HTTP (default 200; a handler may override through ctx.response.status). */
  successStatus?: number;
  /** Request headers copied into input fields (e.g. Idempotency-Key → idempotency_key). */
  headerInputs?: Readonly<Record<string, string>>;
  /** Body size cap in bytes for this operation (default: the server-wide cap). */
  maxBodyBytes?: number;
  /** Answer CORS preflight and allow cross-origin calls without cookies (browser feedback widgets). */
  cors?: boolean;
  /**
   * Over REST the answer streams as this content type while the handler works (the handler sets
   * `ctx.response.stream` when `ctx.canStream`); faces that cannot stream (MCP, CLI, client) get
   * the JSON `output` once the work is done.
   */
  streams?: { contentType: string };
  /** A one-line example input for docs and MCP search (project_id omitted). */
  example?: Record<string, unknown>;
  /** How people see the answer (CLI tables and charts); data-only, so every face stays derived. */
  display?: DisplayHints;
  handler: (input: z.output<I>, ctx: HandlerContext) => Promise<z.input<O>> | z.input<O>;
}

export type AnyOperation = Operation<z.ZodObject<any>, z.ZodType>;

export function defineOperation<I extends z.ZodObject<any>, O extends z.ZodType>(op: Operation<I, O>): Operation<I, O> {
  // Every from/to takes the same forms (resolved once in invoke: operations/shared.ts); say so in
  // every such operation's description, where REST, OpenAPI, MCP search and the CLI read it.
  const shape = op.input.shape as Record<string, unknown>;
  if (('from' in shape || 'to' in shape) && !op.description.includes('-1h')) {
    return { ...op, description: `${op.description} ${RELATIVE_TIMES_NOTE}` };
  }
  return op;
}

/** Appended to the description of every operation with a `from`/`to` window that does not say it already. */
export const RELATIVE_TIMES_NOTE = 'Times: `from`/`to` take ISO 8601 or relative forms (`-15m`, `-1h`, `-7d`, `now`).';

/** Path parameter names of an OpenAPI-form path. */
export function pathParams(path: string): string[] {
  return [...path.matchAll(/\{([a-z_]+)\}/g)].map((m) => m[1]!);
}

/** Where each input field travels over HTTP. */
export function fieldLocations(op: AnyOperation): { path: string[]; query: string[]; body: string[]; header: string[] } {
  const path = pathParams(op.path);
  const header = Object.values(op.headerInputs ?? {});
  const rest = Object.keys(op.input.shape).filter((k) => !path.includes(k) && !header.includes(k));
  const hasBody = op.method === 'POST' || op.method === 'PUT' || op.method === 'PATCH';
  return { path, header, query: hasBody ? [] : rest, body: hasBody ? rest : [] };
}
