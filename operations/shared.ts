import { z } from 'zod';
import { isRelativeTime, parseTimeExpression } from '../src/domain/metrics/window.js';

/** Common parameters: ids, windows, pagination. Query strings arrive as text, JSON callers send numbers. */

/** Input field `project_id` (path parameter). invoke() turns a number into its string form. */
export const projectId = z.string().regex(/^\d{1,15}$/, 'must be a project id (digits)').describe('Project id. May be left out when the credential is bound to one project.');

export const uuid = (what: string) => z.string().uuid(`must be a UUID (${what})`);

/** Integer in a query string (or a number from JSON callers), with a default. */
export function queryInt(opts: { min: number; max: number; default: number; describe: string }) {
  return z.coerce.number().int().min(opts.min).max(opts.max).default(opts.default).describe(opts.describe);
}

/** Optional integer in a query string. */
export function queryIntOpt(opts: { min: number; max: number; describe: string }) {
  return z.coerce.number().int().min(opts.min).max(opts.max).optional().describe(opts.describe);
}

/** Boolean in a query string: true/false/1/0. */
export const queryBool = z.preprocess(
  (v) => (v === 'true' || v === '1' ? true : v === 'false' || v === '0' ? false : v),
  z.boolean(),
);

/** ISO 8601 date-time with a timezone (spec: "from and to are ISO 8601 with timezone"). */
export const isoDateTime = z.iso.datetime({ offset: true, message: 'must be an ISO 8601 date-time with a timezone, e.g. 2026-01-31T12:00:00Z, or a relative time such as -1h, -15m, now' });

export const windowParams = {
  from: isoDateTime.optional().describe('Window start: ISO 8601 with timezone, or relative (`-1h`, `-15m`, `-7d`, `now-30m`).'),
  to: isoDateTime.optional().describe('Window end: ISO 8601 with timezone or relative (`now`, `-5m`); default now.'),
};

/** Input fields that hold a window edge, in every operation. */
const WINDOW_KEYS = ['from', 'to'] as const;

/**
 * Issue 11 item 6: every `from`/`to` accepts the relative forms of {@link parseTimeExpression}
 * (`now`, `-15m`, `-1h`, `now-7d`…) as well as ISO 8601. invoke() calls this before the input is
 * validated, with the request's clock, so each operation sees an ISO 8601 timestamp whichever form
 * was sent (and its own schema and window rules apply unchanged).
 */
export function resolveRelativeTimes(input: Record<string, unknown>, nowMs: number): void {
  for (const k of WINDOW_KEYS) {
    const v = input[k];
    if (typeof v === 'string' && isRelativeTime(v)) input[k] = new Date(parseTimeExpression(v, nowMs)!).toISOString();
  }
}

export const offsetPagination = (dflt: number, max: number) => ({
  limit: queryInt({ min: 1, max, default: dflt, describe: `Page size, 1 to ${max} (default ${dflt}).` }),
  offset: queryInt({ min: 0, max: 1_000_000, default: 0, describe: 'Rows to skip; the next page uses offset + limit.' }),
});

/** Comma-separated list in a query string, or an array from JSON callers. */
export function csvList<T extends z.ZodType<string>>(item: T) {
  return z.preprocess(
    (v) => (typeof v === 'string' ? v.split(',').map((s) => s.trim()).filter(Boolean) : v),
    z.array(item).min(1),
  );
}

export const isoOut = z.string().describe('ISO 8601 date-time');
export const toIso = (ms: number | null | undefined): string | null => (ms === null || ms === undefined ? null : new Date(ms).toISOString());
export const parseIso = (s: string | undefined): number | undefined => (s === undefined ? undefined : Date.parse(s));

/**
 * `key:value` attribute conditions: comma-separated in a query string (`http.route:/api/orders,db.system:postgresql`)
 * or an array from JSON callers; the key runs to the first `:`.
 */
export function keyValueList(describe: string, max = 5) {
  return z
    .preprocess(
      (v) => (typeof v === 'string' ? v.split(',').map((x) => x.trim()).filter(Boolean) : v),
      z
        .array(z.string().max(512).regex(/^[^:\s][^:]{0,127}:.+$/, 'must be key:value, e.g. http.route:/api/orders/{id}'))
        .min(1)
        .max(max),
    )
    .optional()
    .transform((a) => a?.map((x) => ({ key: x.slice(0, x.indexOf(':')).trim(), value: x.slice(x.indexOf(':') + 1).trim() })))
    .describe(describe);
}
