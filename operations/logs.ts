import { z } from 'zod';
import { defineOperation } from './define.js';
import { projectId, queryInt, toIso } from './shared.js';
import { domainCall, textFilter, windowFields, windowOf, windowOut } from './metrics.js';
import { ValidationError } from '../src/core/errors.js';
import { GRANULARITIES, bucketStart, checkBucketCount, defaultGranularity, granularityMs, type ResolvedWindow } from '../src/domain/metrics/window.js';
import { distribution, minePatterns, truncateValue } from '../src/domain/logs/patterns.js';
import { parseLogQuery, splitLogQuery } from '../src/domain/logs/query.js';
import { LOG_LEVELS, type LogDim, type LogFilter, type LogRow, type LogSample } from '../src/storage/logs-read-repo.js';

// ---------------------------------------------------------------------------------------------
// Filters

/** Accepted spellings of each severity (spec: `level` is comma-separated severities). */
const LEVEL_ALIASES: Record<string, (typeof LOG_LEVELS)[number]> = {
  trace: 'trace',
  debug: 'debug',
  info: 'info',
  information: 'info',
  warn: 'warn',
  warning: 'warn',
  error: 'error',
  err: 'error',
  fatal: 'fatal',
  critical: 'fatal',
};

const levelParam = z
  .preprocess(
    (v) => (typeof v === 'string' ? v.split(',') : v),
    z
      .array(z.string().max(32))
      .max(16)
      .transform((a) => a.map((s) => s.trim().toLowerCase()).filter(Boolean))
      .superRefine((a, c) => {
        const bad = a.find((s) => !Object.hasOwn(LEVEL_ALIASES, s));
        if (bad !== undefined) {
          c.addIssue({ code: 'custom', message: `unknown level "${bad.slice(0, 32)}": use ${LOG_LEVELS.join(', ')} (aliases warning, err, critical)` });
        }
      })
      .transform((a) => [...new Set(a.map((s) => LEVEL_ALIASES[s]!))]),
  )
  .optional()
  .describe('Comma-separated severities: trace, debug, info, warn, error, fatal (warning, err and critical are accepted too).');

export const logFilterFields = {
  ...windowFields,
  q: textFilter(
    512,
    'Log query: free text over the body and attribute values (every word must occur, whole words; `word*` prefix; "quoted words" a phrase); `key:value` (or `key:"a value"`, `key:val*`) matches a log attribute or a resource attribute such as host.name, k8s.pod.name, service.instance.id (also level, service, environment, release, trace_id, span_id); terms side by side must all match, `OR` between terms, parentheses group: `(timeout OR refused) host.name:web-1`.',
  ),
  trace_id: z
    .string()
    .regex(/^[0-9a-fA-F]{32}$/, 'must be a trace id: 32 hexadecimal characters')
    .transform((v) => v.toLowerCase())
    .optional()
    .describe('Only logs of this trace (32 hex characters).'),
  span_id: z
    .string()
    .regex(/^[0-9a-fA-F]{16}$/, 'must be a span id: 16 hexadecimal characters')
    .transform((v) => v.toLowerCase())
    .optional()
    .describe('Only logs of this span (16 hex characters).'),
  connector_key: textFilter(256, 'Only logs received through this connector.'),
  environment: textFilter(128, 'Only logs of this deployment environment (resource deployment.environment[.name]).'),
  level: levelParam,
  release: textFilter(256, 'Only logs of this release (resource service.version).'),
  service: textFilter(256, 'Only logs of this service (resource service.name).'),
  source: textFilter(128, 'Only logs from this source (otlp, sentry, or the log.source attribute).'),
};

type FilterInput = {
  q?: string;
  trace_id?: string;
  span_id?: string;
  connector_key?: string;
  environment?: string;
  level?: string[];
  release?: string;
  service?: string;
  source?: string;
};

/** The repository filter for a window and the common inputs (400 for text with nothing searchable). */
export function logFilter(w: ResolvedWindow, input: FilterInput): LogFilter {
  let match: string | undefined;
  let where: LogFilter['where'];
  if (input.q !== undefined) {
    const parsed = parseLogQuery(input.q);
    if (parsed === null) throw new ValidationError('`q` holds no word to search for (letters or digits) and no `key:value`.', 'q');
    ({ match, rest: where } = splitLogQuery(parsed));
  }
  return {
    ...w,
    match,
    where,
    traceId: input.trace_id,
    spanId: input.span_id,
    connectorKey: input.connector_key,
    environment: input.environment,
    levels: input.level?.length ? input.level : undefined,
    release: input.release,
    service: input.service,
    source: input.source,
  };
}

const blankToNull = (s: string | null) => (s === null || s === '' ? null : s);

function parseAttributes(json: string): Record<string, unknown> {
  try {
    const v = JSON.parse(json);
    return v && typeof v === 'object' && !Array.isArray(v) ? v : {};
  } catch {
    return {};
  }
}

export const logRowSchema = z.object({
  id: z.string().describe('Log record id in this service.'),
  timestamp: z.string().describe('When the event happened (ISO 8601).'),
  observed_timestamp: z.string().describe('When the collector or SDK observed it (ISO 8601).'),
  level: z.enum(LOG_LEVELS),
  severity_number: z.number().int().describe('OpenTelemetry severity number (1–24; 0 unspecified).'),
  severity_text: z.string(),
  body: z.string().describe('Message; structured bodies are given as JSON text.'),
  attributes: z.record(z.string(), z.unknown()).describe('Log record attributes.'),
  resource: z.record(z.string(), z.unknown()).describe('Resource attributes of the sender (service.name, host.name, k8s.pod.name, service.instance.id, …).'),
  trace_id: z.string().nullable(),
  span_id: z.string().nullable(),
  service: z.string().nullable(),
  environment: z.string().nullable(),
  release: z.string().nullable(),
  source: z.string(),
  connector_key: z.string().nullable(),
  scope: z.string().nullable().describe('Instrumentation scope name.'),
});

export function logRowOut(r: LogRow): z.input<typeof logRowSchema> {
  return {
    id: String(r.id),
    timestamp: toIso(r.time_ms)!,
    observed_timestamp: toIso(r.observed_ms)!,
    level: r.level as (typeof LOG_LEVELS)[number],
    severity_number: r.severity_number,
    severity_text: r.severity_text,
    body: r.body,
    attributes: parseAttributes(r.attributes),
    resource: parseAttributes(r.resource ?? '{}'),
    trace_id: r.trace_id,
    span_id: r.span_id,
    service: blankToNull(r.service_name),
    environment: blankToNull(r.environment),
    release: blankToNull(r.release),
    source: r.source,
    connector_key: blankToNull(r.connector_key),
    scope: blankToNull(r.scope_name),
  };
}

const WINDOW_ERROR = { status: 400, code: 'invalid_parameter', when: 'timestamp without a timezone or unparseable, from not before to, unknown level, q without words' } as const;

/** Log search and histogram windows have no length limit of their own (the histogram's bucket cap bounds it). */
const UNBOUNDED = { maxMs: Number.MAX_SAFE_INTEGER };

// ---------------------------------------------------------------------------------------------

export const search = defineOperation({
  operationId: 'logs.search',
  tag: 'logs',
  summary: 'Search logs, newest first',
  description:
    'Log records of the window (default the 24 hours before `to`; `to` defaults to now; no length limit; `from`/`to` take ISO 8601 or relative forms such as -1h, -15m, now), newest first, each with its attributes and its resource attributes. Filters: `q` (free text over body and attribute values: all words must match, "quoted" for a phrase, `word*` for a prefix; `key:value` for a log or resource attribute such as host.name:web-1 or k8s.pod.name:api-7f; `OR` and parentheses), `trace_id`, `span_id`, `level` (comma-separated), `service`, `environment`, `release`, `source`, `connector_key`. Offset pagination: `has_more` says whether another page exists; `total` is the exact number of matches when it is cheap to know, else null. The response repeats the effective `from` and `to`: send them unchanged with the next offset so pages do not drift.',
  method: 'GET',
  path: '/v1/projects/{project_id}/logs',
  scopes: ['read'],
  risk: 'read',
  sensitive: false,
  display: { columns: ['timestamp', 'level', 'service', 'body'] },
  projectScoped: true,
  input: z.strictObject({
    project_id: projectId,
    ...logFilterFields,
    limit: queryInt({ min: 1, max: 1000, default: 100, describe: 'Page size, 1 to 1000 (default 100).' }),
    offset: queryInt({ min: 0, max: 10_000, default: 0, describe: 'Rows to skip, at most 10,000 (narrow the window to go further back).' }),
  }),
  output: z.object({
    data: z.array(logRowSchema),
    total: z.number().int().nullable().describe('Exact number of matching logs when cheap to know; null otherwise.'),
    has_more: z.boolean().describe('Whether rows exist after this page.'),
    limit: z.number().int(),
    offset: z.number().int(),
    from: z.string().describe('Effective window start (ISO 8601).'),
    to: z.string().describe('Effective window end (ISO 8601).'),
  }),
  errors: [WINDOW_ERROR],
  example: { q: 'timeout', level: 'error,fatal', service: 'checkout', limit: 50 },
  async handler(input, ctx) {
    const w = windowOf(input, ctx.now(), UNBOUNDED);
    const r = await ctx.services.logsRead.search(ctx.project!.id, logFilter(w, input), { limit: input.limit, offset: input.offset });
    return { data: r.rows.map(logRowOut), total: r.total, has_more: r.hasMore, limit: input.limit, offset: input.offset, ...windowOut(w) };
  },
});

// ---------------------------------------------------------------------------------------------

const GROUP_BY = ['service', 'http_method', 'service_version', 'environment', 'level', 'source'] as const;
const GROUP_COLUMN: Record<(typeof GROUP_BY)[number], LogDim> = {
  service: 'service_name',
  http_method: 'http_method',
  service_version: 'release',
  environment: 'environment',
  level: 'level',
  source: 'source',
};
/** Group key for logs without a value (no HTTP method, no environment...). */
const NONE = '(none)';
const levelCounts = () => Object.fromEntries(LOG_LEVELS.map((l) => [l, 0])) as Record<(typeof LOG_LEVELS)[number], number>;
const levelsSchema = z.object(Object.fromEntries(LOG_LEVELS.map((l) => [l, z.number().int()])) as Record<(typeof LOG_LEVELS)[number], z.ZodNumber>);

export const histogram = defineOperation({
  operationId: 'logs.histogram',
  tag: 'logs',
  summary: 'Log counts over time by severity',
  description:
    'Counts of the logs matching the same filters as logs.search (`q` with `key:value`, OR, parentheses; `trace_id`, `span_id`), per time bucket and severity (no window length limit of its own), with every bucket of the window present (buckets are aligned to the step since the epoch, UTC). `step`: 1m, 5m, 15m, 1h, 6h or 1d (default: about 300 buckets or fewer); at most 2,000 buckets. `group_by` adds per-bucket counts by service, http_method (attribute http.request.method or http.method), service_version, environment, level or source; logs without a value count under "(none)".',
  method: 'GET',
  path: '/v1/projects/{project_id}/logs/histogram',
  scopes: ['read'],
  risk: 'read',
  sensitive: false,
  display: { chart: { kind: 'line', points: 'buckets', x: 'time', y: 'total', merge: 'sum', unit: 'logs', groups: 'groups', title: ['total', 'step', 'group_by'] } },
  projectScoped: true,
  input: z.strictObject({
    project_id: projectId,
    ...logFilterFields,
    group_by: z.enum(GROUP_BY).optional().describe('service, http_method, service_version, environment, level or source.'),
    step: z.enum(GRANULARITIES).optional().describe('Bucket size: 1m, 5m, 15m, 1h, 6h or 1d (default chosen for the window).'),
  }),
  output: z.object({
    step: z.enum(GRANULARITIES),
    group_by: z.enum(GROUP_BY).nullable(),
    from: z.string(),
    to: z.string(),
    total: z.number().int().describe('Matching logs in the window.'),
    buckets: z.array(
      z.object({
        time: z.string().describe('Bucket start (ISO 8601 UTC).'),
        total: z.number().int(),
        levels: levelsSchema.describe('Count per severity.'),
        groups: z.record(z.string(), z.number().int()).optional().describe('With group_by: count per value.'),
      }),
    ),
  }),
  errors: [WINDOW_ERROR, { status: 400, code: 'invalid_parameter', when: 'more than 2,000 buckets at this step' }],
  example: { step: '1h', group_by: 'service', level: 'error' },
  async handler(input, ctx) {
    const w = windowOf(input, ctx.now(), UNBOUNDED);
    const step = input.step ?? defaultGranularity(w.fromMs, w.toMs);
    const stepMs = granularityMs(step);
    const n = domainCall(() => checkBucketCount(w.fromMs, w.toMs, stepMs), { granularity: 'step' });
    const first = bucketStart(w.fromMs, stepMs);
    const f = logFilter(w, input);
    const repo = ctx.services.logsRead;
    const step_ = { firstMs: first, stepMs };
    const buckets = Array.from({ length: n }, (_, i) => ({
      time: toIso(first + i * stepMs)!,
      total: 0,
      levels: levelCounts(),
      ...(input.group_by ? { groups: {} as Record<string, number> } : {}),
    }));
    let total = 0;
    // Levels and groups are read as two marginals: the joint counts would be several times more rows.
    for (const c of await repo.counts(ctx.project!.id, f, ['level'], step_)) {
      const b = buckets[c.bucket];
      if (!b) continue;
      b.total += c.n;
      total += c.n;
      const level = c.keys[0] as (typeof LOG_LEVELS)[number];
      if (level in b.levels) b.levels[level] += c.n;
    }
    if (input.group_by) {
      for (const c of await repo.counts(ctx.project!.id, f, [GROUP_COLUMN[input.group_by]], step_)) {
        const g = buckets[c.bucket]?.groups;
        if (!g) continue;
        const key = c.keys[0] || NONE;
        g[key] = (g[key] ?? 0) + c.n;
      }
    }
    return { step, group_by: input.group_by ?? null, ...windowOut(w), total, buckets };
  },
});

// ---------------------------------------------------------------------------------------------

/** Spec limits (Limits, "Logs insights"). */
export const INSIGHTS = { sample: 10_000, patterns: 50, dimensions: 5, valueLength: 256, values: 12 } as const;

const ATTRIBUTE_PATH = /^[A-Za-z0-9_@$][A-Za-z0-9_.@$:/-]{0,127}$/;

const dimensionsParam = z
  .preprocess(
    (v) => (typeof v === 'string' ? v.split(',').map((s) => s.trim()).filter(Boolean) : v),
    z
      .array(z.string().max(128).regex(ATTRIBUTE_PATH, 'must be an attribute path such as http.route or user.id'))
      .max(INSIGHTS.dimensions, `at most ${INSIGHTS.dimensions} dimensions`),
  )
  .optional()
  .describe('Up to five comma-separated log attribute paths (e.g. http.route,user.id) whose value distributions are sampled.');

/**
 * Value of an attribute path: the flat OpenTelemetry key first (`http.route`), else a walk into
 * nested maps (`user.id` → attributes.user.id, or a key `user` holding `{ "id": … }`).
 */
export function attributeAt(attrs: Record<string, unknown>, path: string): unknown {
  if (Object.prototype.hasOwnProperty.call(attrs, path)) return attrs[path];
  const parts = path.split('.');
  for (let i = parts.length - 1; i >= 1; i--) {
    const head = parts.slice(0, i).join('.');
    const v = Object.prototype.hasOwnProperty.call(attrs, head) ? attrs[head] : undefined;
    if (v && typeof v === 'object' && !Array.isArray(v)) {
      const found = attributeAt(v as Record<string, unknown>, parts.slice(i).join('.'));
      if (found !== undefined) return found;
    }
  }
  return undefined;
}

const distRowSchema = z.object({
  value: z.string().describe('Value, at most 256 characters.'),
  count: z.number().int(),
  share: z.number().describe('count / rows considered (0–1).'),
  sampled: z.boolean().describe('true when counted on the sample, false when exact.'),
});
const distSideSchema = z.object({
  values: z.array(distRowSchema).describe('At most 12 values, most frequent first.'),
  other_count: z.number().int().describe('Rows whose value is not listed.'),
  missing_count: z.number().int().describe('Rows without a value.'),
  total: z.number().int().describe('Rows considered (the window, or the sample for attribute distributions).'),
});
const distPairSchema = z.object({ current: distSideSchema, previous: distSideSchema });
type DistSide = z.input<typeof distSideSchema>;

/** Exact side from value counts ('' = no value): truncated values merged, top 12. */
function exactSide(counts: Map<string, number>): DistSide {
  const merged = new Map<string, number>();
  let missing = 0;
  for (const [value, n] of counts) {
    if (value === '') {
      missing += n;
      continue;
    }
    const v = truncateValue(value, INSIGHTS.valueLength);
    merged.set(v, (merged.get(v) ?? 0) + n);
  }
  const sorted = [...merged].sort((a, b) => b[1] - a[1] || (a[0] < b[0] ? -1 : a[0] > b[0] ? 1 : 0));
  const counted = sorted.reduce((s, [, n]) => s + n, 0);
  const all = counted + missing;
  const top = sorted.slice(0, INSIGHTS.values);
  return {
    values: top.map(([value, count]) => ({ value, count, share: all ? count / all : 0, sampled: false })),
    other_count: counted - top.reduce((s, [, n]) => s + n, 0),
    missing_count: missing,
    total: all,
  };
}

function sampledSide(values: unknown[]): DistSide {
  const d = distribution(values, { maxValues: INSIGHTS.values, maxLength: INSIGHTS.valueLength });
  const all = d.total + d.missing;
  return {
    values: d.values.map((e) => ({ value: e.value, count: e.count, share: all ? e.count / all : 0, sampled: true })),
    other_count: d.other,
    missing_count: d.missing,
    total: all,
  };
}

const EXACT_DIMS = ['service_name', 'level', 'environment', 'source'] as const satisfies readonly LogDim[];
const EXACT_NAMES = { service_name: 'service', level: 'level', environment: 'environment', source: 'source' } as const;

export const insights = defineOperation({
  operationId: 'logs.insights',
  tag: 'logs',
  summary: 'Recurring log patterns and value distributions',
  description:
    'For the logs matching the same filters as logs.search (including `q` with `key:value`, OR and parentheses, `trace_id`, `span_id`) in a window (default the 24 hours before `to`; ordered and at most 30 days): recurring message patterns (at most 50, mined from the newest 10,000 logs), exact service, level, environment and source distributions for the window and for the equal-length window just before it, exact total counts, and — for up to five attribute paths in `dimensions` — value distributions counted on the newest 10,000 logs of each window (rows marked `sampled: true`; `custom_distribution_sample_limit` gives the bound). Values are cut to 256 characters; at most 12 values per distribution.',
  method: 'GET',
  path: '/v1/projects/{project_id}/logs/insights',
  scopes: ['read'],
  risk: 'read',
  sensitive: false,
  projectScoped: true,
  input: z.strictObject({ project_id: projectId, ...logFilterFields, dimensions: dimensionsParam }),
  output: z.object({
    from: z.string(),
    to: z.string(),
    previous_from: z.string().describe('Start of the preceding window (same length, ending at `from`).'),
    previous_to: z.string(),
    total_count: z.number().int().describe('Exact number of matching logs in the window.'),
    previous_total_count: z.number().int().describe('Exact number in the preceding window.'),
    sample_count: z.number().int().describe('Logs of the window the patterns (and attribute distributions) were computed on.'),
    previous_sample_count: z.number().int().describe('Logs of the preceding window sampled for attribute distributions (0 without dimensions).'),
    custom_distribution_sample_limit: z.number().int().describe('Most logs sampled per window for attribute distributions (10,000).'),
    patterns: z.array(
      z.object({
        pattern: z.string().describe('Message template; <*> marks varying tokens, <NUM>, <UUID>, <IP>, <HEX> masked values.'),
        count: z.number().int().describe('Sampled logs matching it.'),
        sample: z.string().describe('One message of the pattern.'),
        levels: z.record(z.string(), z.number().int()).describe('Count per severity.'),
        share: z.number().describe('count / sample_count.'),
      }),
    ),
    distributions: z
      .object({ service: distPairSchema, level: distPairSchema, environment: distPairSchema, source: distPairSchema })
      .describe('Exact distributions for the window (current) and the preceding window (previous).'),
    custom_distributions: z.record(z.string(), distPairSchema).describe('Per requested attribute path: sampled distributions for both windows.'),
  }),
  errors: [
    { status: 400, code: 'invalid_parameter', when: 'window invalid, reversed or above 30 days; more than 5 dimensions or an invalid path; unknown level' },
  ],
  example: { service: 'checkout', dimensions: 'http.route,user.id' },
  async handler(input, ctx) {
    const w = windowOf(input, ctx.now());
    const len = w.toMs - w.fromMs;
    const prev = { fromMs: w.fromMs - len, toMs: w.fromMs };
    const f = logFilter(w, input);
    const pf: LogFilter = { ...f, ...prev };
    const repo = ctx.services.logsRead;
    const pid = ctx.project!.id;

    const exact = async (filter: LogFilter) => {
      const per = Object.fromEntries(EXACT_DIMS.map((d) => [d, new Map<string, number>()])) as Record<(typeof EXACT_DIMS)[number], Map<string, number>>;
      let total = 0;
      for (const c of await repo.counts(pid, filter, EXACT_DIMS)) {
        total += c.n;
        EXACT_DIMS.forEach((d, i) => per[d].set(c.keys[i]!, (per[d].get(c.keys[i]!) ?? 0) + c.n));
      }
      return { per, total };
    };
    const cur = await exact(f);
    const before = await exact(pf);

    const dims = input.dimensions ?? [];
    const sample = await repo.newest(pid, f, INSIGHTS.sample, { attributes: dims.length > 0 });
    const patterns = minePatterns(
      sample.map((r) => ({ message: r.body, level: r.level })),
      { maxPatterns: INSIGHTS.patterns },
    ).map((p) => ({ pattern: p.pattern, count: p.count, sample: p.sample, levels: p.levels, share: sample.length ? p.count / sample.length : 0 }));

    const prevSample = dims.length ? await repo.newest(pid, pf, INSIGHTS.sample, { attributes: true }) : [];
    const custom: Record<string, { current: DistSide; previous: DistSide }> = {};
    if (dims.length) {
      const attrsOf = (rows: LogSample[]) => rows.map((r) => parseAttributes(r.attributes ?? '{}'));
      const a = attrsOf(sample);
      const b = attrsOf(prevSample);
      for (const path of dims) {
        custom[path] = { current: sampledSide(a.map((x) => attributeAt(x, path))), previous: sampledSide(b.map((x) => attributeAt(x, path))) };
      }
    }

    const distributions = Object.fromEntries(
      EXACT_DIMS.map((d) => [EXACT_NAMES[d], { current: exactSide(cur.per[d]), previous: exactSide(before.per[d]) }]),
    ) as Record<(typeof EXACT_NAMES)[keyof typeof EXACT_NAMES], { current: DistSide; previous: DistSide }>;

    return {
      ...windowOut(w),
      previous_from: toIso(prev.fromMs)!,
      previous_to: toIso(prev.toMs)!,
      total_count: cur.total,
      previous_total_count: before.total,
      sample_count: sample.length,
      previous_sample_count: prevSample.length,
      custom_distribution_sample_limit: INSIGHTS.sample,
      patterns,
      distributions,
      custom_distributions: custom,
    };
  },
});
