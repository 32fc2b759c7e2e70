import { z } from 'zod';
import { defineOperation } from './define.js';
import { keyValueList, projectId, queryInt, toIso } from './shared.js';
import { attributeKeys, exemplarsByBucket, groupPoints, MAX_GROUP_BY } from '../src/domain/metrics/attributes.js';
import { UnprocessableError, ValidationError } from '../src/core/errors.js';
import {
  GRANULARITIES,
  HOUR_MS,
  WindowError,
  checkBucketCount,
  defaultGranularity,
  granularityMs,
  resolveWindow,
  type ResolvedWindow,
  type WindowOptions,
} from '../src/domain/metrics/window.js';
import {
  AGGREGATIONS,
  INSPECT_AGGREGATIONS,
  UnsupportedTemporalityError,
  checkAggregationSupported,
  inspect as inspectMetric,
  inspectFromTimelines,
  isPercentileAggregation,
  timeline as metricTimeline,
} from '../src/domain/metrics/aggregate.js';
import { timelineFromStates } from '../src/domain/metrics/rollup-state.js';
import { bucketCount, bucketStart } from '../src/domain/metrics/window.js';
import type { MetricType } from '../src/domain/telemetry-types.js';

export const METRIC_TYPES = ['gauge', 'sum', 'hist', 'exponential_histogram'] as const satisfies readonly MetricType[];

// ---------------------------------------------------------------------------------------------
// Shared by the telemetry read operations (logs, metrics, observability summary)

/** `from`/`to` as text: the domain parser gives the precise message (and accepts a `+` decoded to a space). */
export const windowFields = {
  from: z.string().max(64).optional().describe('Window start, ISO 8601 with a timezone or relative (-1h, -15m, now-7d); default 24 hours before `to`.'),
  to: z.string().max(64).optional().describe('Window end, ISO 8601 with a timezone or relative (now, -5m); default now.'),
};

/** No C0 control characters or DEL (tab included: filters are one line). */
export const NO_CONTROL_CHARS = /^[^\x00-\x1f\x7f]*$/;

/** Optional text filter; empty counts as absent. */
export const textFilter = (max: number, describe: string) =>
  z
    .string()
    .max(max)
    // Control characters match nothing a filter could mean and NUL breaks full-text queries.
    .regex(NO_CONTROL_CHARS, 'must not contain control characters')
    .optional()
    .transform((v) => (v === undefined || v.trim() === '' ? undefined : v))
    .describe(describe);

/**
 * Runs domain code and turns its errors into API errors: a rejected window or granularity → 400
 * (`invalid_parameter`, naming the parameter; `rename` maps domain names such as `granularity` to
 * this operation's), a percentile of a cumulative exponential histogram → 422
 * `UNSUPPORTED_METRIC_TEMPORALITY`.
 */
export function domainCall<T>(fn: () => T, rename: Record<string, string> = {}): T {
  try {
    return fn();
  } catch (err) {
    if (err instanceof WindowError) throw new ValidationError(err.message, rename[err.param] ?? err.param);
    if (err instanceof UnsupportedTemporalityError) throw new UnprocessableError(err.code, err.message, 'aggregation');
    throw err;
  }
}

/** Resolves `from`/`to` (400 before any query for an invalid, reversed or oversized window). */
export function windowOf(input: { from?: string; to?: string }, now: number, opts: Partial<WindowOptions> = {}): ResolvedWindow {
  return domainCall(() => resolveWindow({ from: input.from, to: input.to }, { now, ...opts }));
}

export const windowOut = (w: ResolvedWindow) => ({ from: toIso(w.fromMs)!, to: toIso(w.toMs)! });

// ---------------------------------------------------------------------------------------------

const metricTypeParam = z.enum(METRIC_TYPES).describe('gauge, sum, hist (explicit-bucket histogram) or exponential_histogram');
const metricSelector = {
  metric_name: z.string().min(1).max(512).describe('Metric name as sent (e.g. http.server.request.duration).'),
  metric_type: metricTypeParam,
  service_name: textFilter(256, 'Only points from this service (resource service.name).'),
  environment: textFilter(128, 'Only points from this deployment environment.'),
  attributes: keyValueList(
    'Attribute conditions `key:value` (comma-separated, at most 5): a point attribute, or else a resource attribute (host.name, k8s.pod.name, …), equal to the value.',
  ),
};

const exemplarSchema = z.object({
  time: z.string().describe('When the measurement was taken (ISO 8601).'),
  value: z.number(),
  trace_id: z.string().nullable().describe('Trace it was recorded in: open it with traces.get.'),
  span_id: z.string().nullable(),
  attributes: z.record(z.string(), z.unknown()).describe('Filtered attributes of the measurement.'),
});

const bucketSchema = z.object({
  time: z.string().describe('Bucket start, ISO 8601 UTC (buckets are aligned to the granularity since the epoch).'),
  value: z.number().nullable().describe('Aggregated value; null when the bucket has no points.'),
  point_count: z.number().int().describe('Stored points in the bucket.'),
  sample_count: z.number().describe('Measurements represented: 1 per gauge/sum point, the (delta) count for histograms.'),
  exemplars: z.array(exemplarSchema).optional().describe('Exemplars sent with the points of the bucket (at most 5, highest value first), each leading to a trace.'),
});

const seriesSchema = z.object({
  metric_name: z.string(),
  type: z.enum(METRIC_TYPES),
  unit: z.string(),
  description: z.string(),
  service_name: z.string(),
  first_seen: z.string().describe('ISO 8601 time of the first point in the window.'),
  last_seen: z.string().describe('ISO 8601 time of the last point in the window.'),
  point_count: z.number().int(),
  sample_count: z.number().describe('Gauge and sum: points. Histograms: measurements (Σ count, reset-aware for cumulative series).'),
});

const WINDOW_ERRORS = [
  { status: 400, code: 'invalid_parameter', when: 'timestamp without a timezone or unparseable, from not before to, window above 30 days, or an unknown value' },
] as const;

export const list = defineOperation({
  operationId: 'metrics.list',
  tag: 'metrics',
  summary: 'List metrics seen in a window',
  description:
    'One row per metric name, type and service that sent points in the window (default the last 24 hours; at most 30 days): unit, description, first and last seen, point count and sample count (gauge/sum: points; histograms: measurements). Filter by `metric_type`, `service_name`, `environment`, and `q` (case-insensitive substring of name, unit or service). Sorted by name; offset pagination.',
  method: 'GET',
  path: '/v1/projects/{project_id}/metrics',
  scopes: ['read'],
  risk: 'read',
  sensitive: false,
  projectScoped: true,
  input: z.strictObject({
    project_id: projectId,
    ...windowFields,
    metric_type: metricTypeParam.optional(),
    service_name: textFilter(256, 'Only metrics from this service.'),
    environment: textFilter(128, 'Only metrics from this deployment environment.'),
    q: textFilter(256, 'Case-insensitive substring of the metric name, unit or service.'),
    limit: queryInt({ min: 1, max: 1000, default: 100, describe: 'Page size, 1 to 1000 (default 100).' }),
    offset: queryInt({ min: 0, max: 100_000, default: 0, describe: 'Rows to skip; the next page uses offset + limit.' }),
  }),
  output: z.object({
    data: z.array(seriesSchema),
    total: z.number().int().describe('Rows matching the filters.'),
    limit: z.number().int(),
    offset: z.number().int(),
    from: z.string().describe('Effective window start (ISO 8601).'),
    to: z.string().describe('Effective window end (ISO 8601).'),
  }),
  errors: [...WINDOW_ERRORS],
  example: { q: 'http', limit: 20 },
  async handler(input, ctx) {
    const w = windowOf(input, ctx.now());
    const { rows, total } = await ctx.services.metricsRead.listSeries(
      ctx.project!.id,
      { ...w, type: input.metric_type, service: input.service_name, environment: input.environment, q: input.q },
      { limit: input.limit, offset: input.offset },
    );
    return {
      data: rows.map((r) => ({ ...r, first_seen: toIso(r.first_seen)!, last_seen: toIso(r.last_seen)! })),
      total,
      limit: input.limit,
      offset: input.offset,
      ...windowOut(w),
    };
  },
});

export const timeline = defineOperation({
  operationId: 'metrics.timeline',
  tag: 'metrics',
  summary: 'Timeline of one metric',
  description:
    'Buckets of one metric over the window (default the last 24 hours; at most 30 days and 2,000 buckets — choose a coarser `granularity` otherwise; `from`/`to` ISO 8601 or relative: -1h, -15m, now). `aggregation`: avg (default), count, sum, min, max, rate (per second: gauge values, sum increase, histogram measurements), p50, p90, p95, p99 (histogram percentiles from merged buckets). `attributes` filters by point or resource attributes (`key:value`); `group_by` (up to 3 attribute keys) splits the metric into one timeline per value combination in `series`, the busiest first, at most `series_limit` (`truncated` and `series_total` say when more exist). Buckets carry the exemplars sent with their points (trace and span ids: a spike leads to a trace). Delta points count as received; cumulative points are differenced per series and scope (a new start time is a reset, a same-start decrease a new baseline), with the latest point of the hour before the window as baseline. Histogram percentiles come from merged bucket distributions. A percentile of a cumulative exponential histogram is refused with 422 UNSUPPORTED_METRIC_TEMPORALITY (use avg, count or sum, or export delta). Empty buckets have value null.',
  method: 'GET',
  path: '/v1/projects/{project_id}/metrics/timeline',
  scopes: ['read'],
  risk: 'read',
  sensitive: false,
  display: { chart: { kind: 'line', points: 'buckets', x: 'time', y: 'value', merge: 'mean', unitField: 'unit', title: ['metric_name', 'aggregation', 'granularity'] } },
  projectScoped: true,
  input: z.strictObject({
    project_id: projectId,
    ...metricSelector,
    ...windowFields,
    granularity: z.enum(GRANULARITIES).optional().describe('Bucket size: 1m, 5m, 15m, 1h, 6h or 1d (default: about 300 buckets or fewer for the window).'),
    aggregation: z.enum(AGGREGATIONS).default('avg').describe('avg (default), count, sum, min, max, rate (per second), p50, p90, p95 or p99.'),
    group_by: z
      .preprocess((v) => (typeof v === 'string' ? v.split(',').map((x) => x.trim()).filter(Boolean) : v), z.array(z.string().min(1).max(128)).min(1).max(MAX_GROUP_BY))
      .optional()
      .describe(`Up to ${MAX_GROUP_BY} attribute keys, comma-separated (point attributes, else resource attributes, e.g. http.route,host.name).`),
    series_limit: queryInt({ min: 1, max: 50, default: 10, describe: 'With group_by: most series returned, 1 to 50 (default 10), busiest first.' }),
  }),
  output: z.object({
    metric_name: z.string(),
    metric_type: z.enum(METRIC_TYPES),
    unit: z.string().nullable().describe('Unit of the metric; null when it has no points.'),
    aggregation: z.enum(AGGREGATIONS),
    granularity: z.enum(GRANULARITIES),
    from: z.string(),
    to: z.string(),
    buckets: z.array(bucketSchema).describe('All matching points together.'),
    group_by: z.array(z.string()).nullable(),
    series: z
      .array(z.object({ group: z.record(z.string(), z.string().nullable()).describe('Value of each group_by key (null: absent).'), sample_count: z.number(), buckets: z.array(bucketSchema) }))
      .optional()
      .describe('With group_by: one timeline per value combination, most samples first.'),
    series_total: z.number().int().optional().describe('With group_by: value combinations found.'),
    truncated: z.boolean().optional().describe('With group_by: more series exist than series_limit.'),
  }),
  errors: [
    ...WINDOW_ERRORS,
    { status: 400, code: 'invalid_parameter', when: 'more than 2,000 buckets at this granularity' },
    { status: 422, code: 'UNSUPPORTED_METRIC_TEMPORALITY', when: 'a percentile aggregation of a cumulative exponential histogram' },
  ],
  example: { metric_name: 'http.server.request.duration', metric_type: 'hist', aggregation: 'p95', granularity: '5m' },
  async handler(input, ctx) {
    const w = windowOf(input, ctx.now());
    const granularity = input.granularity ?? defaultGranularity(w.fromMs, w.toMs);
    const gMs = domainCall(() => granularityMs(granularity));
    domainCall(() => checkBucketCount(w.fromMs, w.toMs, gMs));
    const sel = { metricName: input.metric_name, type: input.metric_type, service: input.service_name, environment: input.environment, attributes: input.attributes };
    const repo = ctx.services.metricsRead;
    const meta = await repo.meta(ctx.project!.id, sel, w.toMs);
    domainCall(() => checkAggregationSupported(input.metric_type, meta?.temporality, input.aggregation));
    const groupBy = input.group_by ? [...new Set(input.group_by)] : undefined;
    if (!groupBy) {
      // Whole minutes from the per-minute rollups, unaligned edges from the points (migration 040).
      const first = bucketStart(w.fromMs, gMs);
      const states = await repo.rollupStates(ctx.project!.id, sel, w.fromMs, w.toMs, { first, size: gMs, n: bucketCount(w.fromMs, w.toMs, gMs) }, isPercentileAggregation(input.aggregation));
      if (states) {
        const buckets = timelineFromStates(states, first, gMs, input.metric_type, input.aggregation);
        const ex = exemplarsByBucket(await repo.exemplarPoints(ctx.project!.id, sel, w.fromMs, w.toMs), { ...w, granularityMs: gMs });
        return {
          metric_name: input.metric_name,
          metric_type: input.metric_type,
          unit: meta?.unit ?? null,
          aggregation: input.aggregation,
          granularity,
          ...windowOut(w),
          buckets: buckets.map((b, i) => (ex[i] ? { ...b, exemplars: ex[i] } : b)),
          group_by: null,
        };
      }
    }
    const points = await repo.points(ctx.project!.id, sel, w.fromMs, w.toMs, HOUR_MS, { groupBy });
    const opts = { ...w, granularityMs: gMs, type: input.metric_type, temporality: meta?.temporality, aggregation: input.aggregation };
    const withExemplars = (pts: typeof points, buckets: ReturnType<typeof metricTimeline>['buckets']) => {
      const ex = exemplarsByBucket(pts, { ...w, granularityMs: gMs });
      return buckets.map((b, i) => (ex[i] ? { ...b, exemplars: ex[i] } : b));
    };
    const t = domainCall(() => metricTimeline(points, opts));
    const out = {
      metric_name: input.metric_name,
      metric_type: input.metric_type,
      unit: meta?.unit ?? null,
      aggregation: input.aggregation,
      granularity,
      ...windowOut(w),
      buckets: withExemplars(points, t.buckets),
      group_by: groupBy ?? null,
    };
    if (!groupBy) return out;
    const groups = groupPoints(points, groupBy);
    const series = groups.slice(0, input.series_limit).map((g) => {
      const tl = domainCall(() => metricTimeline(g.points, opts));
      return { group: g.group, sample_count: tl.buckets.reduce((s, b) => s + b.sample_count, 0), buckets: withExemplars(g.points, tl.buckets) };
    });
    return { ...out, series, series_total: groups.length, truncated: groups.length > input.series_limit };
  },
});

/** Points metrics.inspect reads for attribute keys and values, and values listed per key. */
const INSPECT_ATTR_SAMPLE = 5_000;
const INSPECT_TOP_VALUES = 10;

const snapshotSchema = z.object({
  aggregation: z.enum(['avg', 'p50', 'p90', 'p99']),
  latest_value: z.number().nullable().describe('Value of the last non-empty bucket.'),
  previous_value: z.number().nullable().describe('Value of the non-empty bucket before it.'),
  change_percent: z.number().nullable().describe('(latest − previous) / |previous| × 100, one decimal.'),
  recent_points: z.array(bucketSchema).describe('The last few non-empty buckets, oldest first.'),
  top_points: z.array(bucketSchema).describe('The highest-valued buckets of the window, highest first.'),
});

export const inspect = defineOperation({
  operationId: 'metrics.inspect',
  tag: 'metrics',
  summary: 'Compact takeaways about one metric',
  description:
    'Highlights (short sentences: points and buckets seen, latest change of avg and p99, peak), one snapshot per aggregation avg, p50, p90, p99 with latest and previous bucket values, change percent, recent points and top points, and the attribute keys (point and resource) with their top values, over the window (default the last 24 hours; at most 30 days; ISO 8601 or relative from/to) at an automatic granularity. Temporality rules as in metrics.timeline; for cumulative exponential histograms only the avg snapshot is given (percentiles are not available for them).',
  method: 'GET',
  path: '/v1/projects/{project_id}/metrics/inspect',
  scopes: ['read'],
  risk: 'read',
  sensitive: false,
  projectScoped: true,
  input: z.strictObject({ project_id: projectId, ...metricSelector, ...windowFields }),
  output: z.object({
    metric_name: z.string(),
    metric_type: z.enum(METRIC_TYPES),
    unit: z.string().nullable(),
    granularity: z.enum(GRANULARITIES).describe('Bucket size used for the snapshots.'),
    from: z.string(),
    to: z.string(),
    highlights: z.array(z.string()),
    snapshots: z.array(snapshotSchema),
    attributes: z
      .array(
        z.object({
          key: z.string(),
          source: z.enum(['point', 'resource']).describe('A point attribute or a resource attribute.'),
          distinct_values: z.number().int().describe('Distinct values among the sampled points.'),
          top_values: z.array(z.object({ value: z.string(), count: z.number().int() })).describe(`Most frequent values, at most ${INSPECT_TOP_VALUES}.`),
        }),
      )
      .describe(`Attribute keys of the newest ${INSPECT_ATTR_SAMPLE.toLocaleString('en')} points of the window, with their top values: what attributes and group_by of metrics.timeline can name.`),
  }),
  errors: [...WINDOW_ERRORS],
  example: { metric_name: 'http.server.request.duration', metric_type: 'hist' },
  async handler(input, ctx) {
    const w = windowOf(input, ctx.now());
    const granularity = defaultGranularity(w.fromMs, w.toMs);
    const gMs = granularityMs(granularity);
    const sel = { metricName: input.metric_name, type: input.metric_type, service: input.service_name, environment: input.environment, attributes: input.attributes };
    const repo = ctx.services.metricsRead;
    const meta = await repo.meta(ctx.project!.id, sel, w.toMs);
    const sample = await repo.attributeValues(ctx.project!.id, sel, w.fromMs, w.toMs, INSPECT_ATTR_SAMPLE);
    const iopts = { ...w, granularityMs: gMs, type: input.metric_type, temporality: meta?.temporality, metricName: input.metric_name, unit: meta?.unit };
    const first = bucketStart(w.fromMs, gMs);
    const states = await repo.rollupStates(ctx.project!.id, sel, w.fromMs, w.toMs, { first, size: gMs, n: bucketCount(w.fromMs, w.toMs, gMs) }, true);
    const r = states
      ? inspectFromTimelines(
          INSPECT_AGGREGATIONS.map((aggregation) => ({ aggregation, buckets: timelineFromStates(states, first, gMs, input.metric_type, aggregation) })),
          iopts,
        )
      : await (async () => {
          const pts = await repo.points(ctx.project!.id, sel, w.fromMs, w.toMs, HOUR_MS);
          return domainCall(() => inspectMetric(pts, iopts));
        })();
    return {
      metric_name: input.metric_name,
      metric_type: input.metric_type,
      unit: meta?.unit ?? null,
      granularity,
      ...windowOut(w),
      highlights: r.highlights,
      snapshots: r.snapshots,
      attributes: attributeKeys(sample.points, INSPECT_TOP_VALUES),
    };
  },
});
