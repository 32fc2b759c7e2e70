import { z } from 'zod';
import { defineOperation } from './define.js';
import { keyValueList, offsetPagination, projectId, queryInt, toIso } from './shared.js';
import { NotFoundError, ValidationError } from '../src/core/errors.js';
import { resolveWindow, WindowError, type ResolvedWindow } from '../src/domain/metrics/window.js';
import { normalizeOperation } from '../src/domain/traces/operations.js';
import {
  compareGroups,
  OPERATION_SORTS,
  operationRow,
  roundMs,
  SPARKLINE_BUCKETS,
  sortNeeds,
  type OperationGroup,
} from '../src/domain/traces/operation-stats.js';
import { isEntrySpan, orderSpans, spanKindName, SPAN_KIND_NAMES, spanStatusName, spanTree, summarizeTrace } from '../src/domain/traces/trace-summary.js';
import { TracePager } from '../src/domain/traces/trace-pager.js';
import { buildServiceMap, planSlices, type MapSpan } from '../src/domain/traces/service-map.js';
import type { EntryFilter, ListStream, SpanLiteRow, StreamRow } from '../src/storage/traces-read-repo.js';
import { logRowOut, logRowSchema } from './logs.js';

// ---- shared parameters ----------------------------------------------------------------------

/** Optional query text: an empty value counts as absent. */
const optText = (max: number, describe: string) =>
  z
    .string()
    .max(max, `must be at most ${max} characters`)
    .optional()
    .transform((v) => (v === undefined || v === '' ? undefined : v))
    .describe(describe);

const windowParams = {
  from: optText(64, 'Window start, ISO 8601 with a timezone (e.g. 2026-01-31T12:00:00Z) or relative (-1h, -15m, now-7d). Default: 24 hours before `to`.'),
  to: optText(64, 'Window end (exclusive), ISO 8601 with a timezone or relative (now, -5m). Default: now.'),
};

const spanAttributesParam = keyValueList(
  'Span attribute conditions `key:value` (comma-separated, at most 5; any key, e.g. http.route:/api/orders/{id}, db.system:postgresql): a trace is listed when one of its spans carries all of them.',
);
const serviceParam = optText(256, 'Service name (resource `service.name`).');
const minDurationParam = z.coerce
  .number()
  .finite()
  .min(0)
  .max(30 * 86_400_000)
  .optional()
  .describe('Minimum duration in milliseconds.');
const statusParam = z.enum(['ok', 'error']).optional();
const operationParam = optText(1024, 'Normalized operation (as traces.operations returns it, e.g. `GET /users/{n}`); a raw name is normalized the same way.');
const traceIdParam = z
  .string()
  .regex(/^[0-9a-fA-F]{32}$/, 'must be a trace id: 32 hexadecimal characters')
  .transform((s) => s.toLowerCase())
  .describe('Trace id, 32 hexadecimal characters.');

/** Resolves `from`/`to`: a bad timestamp, a missing timezone, a reversed or a longer-than-30-days window is a 400 naming the parameter. */
function windowOf(input: { from?: string; to?: string }, now: number): ResolvedWindow {
  try {
    return resolveWindow({ from: input.from, to: input.to }, { now });
  } catch (err) {
    if (err instanceof WindowError) throw new ValidationError(err.message, err.param === 'granularity' ? undefined : err.param);
    throw err;
  }
}

const windowOut = (w: ResolvedWindow) => ({ from: toIso(w.fromMs)!, to: toIso(w.toMs)! });
const windowSchema = {
  from: z.string().describe('Effective window start (ISO 8601).'),
  to: z.string().describe('Effective window end, exclusive (ISO 8601).'),
};
const iso = (ms: number) => new Date(ms).toISOString();
const windowError = { status: 400, code: 'invalid_parameter', when: 'bad timestamp or timezone, `from` not before `to`, window above 30 days, or another parameter out of range' };

// ---- traces.list ----------------------------------------------------------------------------

const traceRowSchema = z.object({
  trace_id: z.string(),
  root_span_id: z.string().describe('The span that stands for the trace (see `has_root`).'),
  root_name: z.string().describe('Name of the root span.'),
  operation: z.string().describe('Normalized operation of the root span.'),
  service_name: z.string().describe('Service of the root span.'),
  environment: z.string().describe('Environment of the root span (empty when not reported).'),
  has_root: z.boolean().describe('False when the root span was not received: the earliest span without a received parent stands in.'),
  started_at: z.string().describe('Start of the earliest span (ISO 8601).'),
  duration_ms: z.number().describe('From the earliest span start to the latest span end.'),
  span_count: z.number().int(),
  error_count: z.number().int().describe('Spans with error status.'),
  services: z.array(z.string()).describe('Distinct services with spans in the trace, sorted.'),
  status: z.enum(['ok', 'error']).describe('`error` when any span has error status.'),
  root_duration_ms: z.number().describe("Duration of the root span itself (the trace's `duration_ms` spans from the earliest start to the latest end)."),
  slowest_span: z
    .object({ span_id: z.string(), name: z.string(), service_name: z.string(), duration_ms: z.number() })
    .nullable()
    .describe('The longest span other than the root (null for a one-span trace).'),
});
type TraceRow = z.input<typeof traceRowSchema>;

function traceRow(traceId: string, spans: SpanLiteRow[]): { row: TraceRow; started_ms: number } | null {
  const t = summarizeTrace(spans);
  if (!t) return null;
  let slowest: SpanLiteRow | null = null;
  for (const sp of spans) if (sp !== t.root && (slowest === null || sp.duration_ms > slowest.duration_ms)) slowest = sp;
  return {
    started_ms: t.started_ms,
    row: {
      trace_id: traceId,
      root_span_id: t.root.span_id,
      root_name: t.root.name,
      operation: t.root.operation,
      service_name: t.root.service_name,
      environment: t.root.environment,
      has_root: t.has_root,
      started_at: iso(t.started_ms),
      duration_ms: roundMs(t.duration_ms),
      span_count: t.span_count,
      error_count: t.error_count,
      services: t.services,
      status: t.status,
      root_duration_ms: roundMs(t.root.duration_ms),
      slowest_span: slowest
        ? { span_id: slowest.span_id, name: slowest.name, service_name: slowest.service_name, duration_ms: roundMs(slowest.duration_ms) }
        : null,
    },
  };
}

/** Traces examined at most for `sort=duration` (the longest among the newest this many matching traces). */
const DURATION_SORT_SCAN = 5_000;

export const list = defineOperation({
  operationId: 'traces.list',
  tag: 'traces',
  summary: 'List traces, newest first',
  description:
    'One row per trace that starts in the window (`from`/`to`, default the last 24 hours), newest first: root span name, normalized operation and service, start, duration, span and error counts, services and status. ' +
    'The root is the span without a parent (when it was not received, the earliest span whose parent is missing; `has_root` is then false). ' +
    '`service_name`, `operation` and `min_duration` select traces through their entry spans (server, consumer and root spans): a trace is listed when one entry span matches all three — the same spans traces.operations counts, so an operation row drills down here with its `service_name` and `operation`. ' +
    '`status`: `error` = some span of the trace has error status, `ok` = none has. `environment`: a span of the trace is in this environment. `attributes`: `key:value` span attribute conditions (any key: http.route, db.system, …) that one span of the trace must all carry. ' +
    `\`sort\`: \`start\` (default, newest first) or \`duration\` (longest first, among the newest ${DURATION_SORT_SCAN.toLocaleString('en')} matching traces of the window; \`scan_truncated\` says when more matched). ` +
    'Each row gives the root span\'s own duration next to the trace\'s, and its slowest other span. Window at most 30 days (`from`/`to` ISO 8601 or relative: -1h, -15m, now). Offset pagination: the next page uses offset + limit while `has_more` is true.',
  method: 'GET',
  path: '/v1/projects/{project_id}/traces',
  scopes: ['read'],
  risk: 'read',
  sensitive: false,
  display: { columns: ['started_at', 'operation', 'duration_ms', 'span_count', 'error_count', 'service_name', 'trace_id'] },
  projectScoped: true,
  input: z.strictObject({
    project_id: projectId,
    ...windowParams,
    service_name: serviceParam,
    min_duration: minDurationParam,
    status: statusParam.describe('`error`: a span of the trace failed; `ok`: none did.'),
    operation: operationParam,
    environment: optText(256, 'Only traces with a span in this environment (resource `deployment.environment.name`).'),
    attributes: spanAttributesParam,
    sort: z.enum(['start', 'duration']).default('start').describe('`start` (newest first, default) or `duration` (longest first).'),
    ...offsetPagination(50, 100),
  }),
  output: z.object({
    data: z.array(traceRowSchema),
    limit: z.number().int(),
    offset: z.number().int(),
    has_more: z.boolean().describe('Another page exists (send offset + limit).'),
    sort: z.enum(['start', 'duration']),
    scan_truncated: z.boolean().describe(`sort=duration only: more than ${DURATION_SORT_SCAN.toLocaleString('en')} traces matched; the rows are the longest among the newest of them.`),
    ...windowSchema,
  }),
  errors: [windowError],
  example: { service_name: 'checkout', status: 'error', limit: 20 },
  async handler(input, ctx) {
    const w = windowOf(input, ctx.now());
    const pid = ctx.project!.id;
    const repo = ctx.services.tracesRead;
    const operation = input.operation !== undefined ? normalizeOperation(input.operation) : undefined;
    const service = input.service_name;
    const minDuration = input.min_duration;
    const entryFiltered = service !== undefined || operation !== undefined || minDuration !== undefined;
    // Span attribute conditions are checked in SQL on the spans the time index walks: only traces
    // holding such a span are loaded. Otherwise error spans are few: when errors are asked for, read
    // them and check the entry filters on each trace.
    const stream: ListStream = input.attributes
      ? { kind: 'all', where: { attributes: input.attributes, environment: input.environment } }
      : input.status === 'error'
        ? { kind: 'errors' }
        : entryFiltered
          ? { kind: 'entry', groups: (await repo.entryGroups(pid, { service, operation })).groups, minDurationMs: minDuration }
          : { kind: 'all', where: input.environment !== undefined ? { environment: input.environment } : undefined };
    const postEntryCheck = entryFiltered && stream.kind !== 'entry';
    const byDuration = input.sort === 'duration';
    const entryMatches = (spans: SpanLiteRow[]) =>
      spans.some(
        (sp) =>
          isEntrySpan(sp) &&
          (service === undefined || sp.service_name === service) &&
          (operation === undefined || sp.operation === operation) &&
          (minDuration === undefined || sp.duration_ms >= minDuration) &&
          sp.start_ms >= w.fromMs &&
          sp.start_ms < w.toMs,
      );

    const envMatches = (spans: SpanLiteRow[]) => input.environment === undefined || spans.some((sp) => sp.environment === input.environment);

    // sort=duration reads up to DURATION_SORT_SCAN matching traces (newest first), then orders them.
    const pager = new TracePager<{ trace_id: string; started_ms: number; row: TraceRow }>(byDuration ? DURATION_SORT_SCAN : input.offset + input.limit + 1);
    let accepted = 0;
    let scanTruncated = false;
    // New traces are loaded in batches (one round trip each on ClickHouse), then judged in stream
    // order. The page is final at the same trace as one at a time would find it: `complete` only
    // grows with what was accepted, and rows between first sightings do not change it.
    const need = byDuration ? DURATION_SORT_SCAN : input.offset + input.limit + 1;
    const it = repo.spanStream(pid, stream, w.fromMs, w.toMs)[Symbol.asyncIterator]();
    let exhausted = false;
    let stopped = false;
    while (!exhausted && !stopped) {
      const want = Math.max(8, Math.min(64, need - accepted));
      const fresh: StreamRow[] = [];
      while (fresh.length < want) {
        const n = await it.next();
        if (n.done) {
          exhausted = true;
          break;
        }
        if (pager.complete(n.value.start_ms)) {
          stopped = true;
          break;
        }
        if (pager.firstSight(n.value.trace_id)) fresh.push(n.value);
      }
      const loaded = await repo.tracesSpansLite(pid, fresh.map((f) => f.trace_id));
      for (const span of fresh) {
        if (pager.complete(span.start_ms)) {
          stopped = true;
          break;
        }
        const spans = loaded.get(span.trace_id) ?? [];
        const t = traceRow(span.trace_id, spans);
        if (!t || t.started_ms < w.fromMs || t.started_ms >= w.toMs) continue;
        if (input.status !== undefined && t.row.status !== input.status) continue;
        if (postEntryCheck && !entryMatches(spans)) continue;
        if (!envMatches(spans)) continue;
        pager.accept({ trace_id: span.trace_id, started_ms: t.started_ms, row: t.row });
        accepted++;
      }
    }
    if (!exhausted) await it.return?.();
    if (stopped) scanTruncated = byDuration;
    let page: { rows: { row: TraceRow }[]; hasMore: boolean };
    if (byDuration) {
      const all = pager.page(0, DURATION_SORT_SCAN).rows.slice(0, DURATION_SORT_SCAN);
      all.sort((a, b) => b.row.duration_ms - a.row.duration_ms || (a.trace_id < b.trace_id ? -1 : 1));
      page = { rows: all.slice(input.offset, input.offset + input.limit), hasMore: all.length > input.offset + input.limit };
      scanTruncated ||= accepted > DURATION_SORT_SCAN;
    } else page = pager.page(input.offset, input.limit);
    return {
      data: page.rows.map((r) => r.row),
      limit: input.limit,
      offset: input.offset,
      has_more: page.hasMore,
      sort: input.sort,
      scan_truncated: scanTruncated,
      ...windowOut(w),
    };
  },
});

// ---- traces.operations ----------------------------------------------------------------------

const operationRowSchema = z.object({
  service_name: z.string(),
  operation: z.string().describe('Normalized operation: numeric path segments → `{n}`, UUID segments → `{uuid}`, query strings dropped; the route when HTTP attributes give one.'),
  trace_count: z.number().int().describe('Entry spans of this service and operation in the window: one per trace that entered it (a trace entering twice counts twice).'),
  error_count: z.number().int().describe('Of those, entry spans with error status.'),
  error_rate: z.number().describe('error_count / trace_count, 0 to 1 (4 decimals).'),
  p50_ms: z.number().nullable().describe('Median entry-span duration.'),
  p95_ms: z.number().nullable().describe('95th percentile entry-span duration (linear interpolation between sorted durations).'),
  last_seen: z.string().describe('Start of the latest entry span in the window (ISO 8601).'),
  sparkline: z.array(z.number().int()).length(SPARKLINE_BUCKETS).describe('Entry spans per sixtieth of the window, oldest first.'),
});

export const operations = defineOperation({
  operationId: 'traces.operations',
  tag: 'traces',
  summary: 'Trace operations: one row per service and normalized operation',
  description:
    'Summaries of entry spans (server and consumer spans, and root spans) grouped by service and normalized operation, in the window (`from` default 24 hours before `to`, `to` default now; at most 30 days; ISO 8601 or relative such as -1h): count, errors, error rate, p50/p95 duration, last seen and a 60-bucket sparkline. ' +
    'Filters narrow the entry spans: `service_name`, `environment`, `min_duration` (ms), `status` (`ok`/`error` of the entry span) and `operation`. ' +
    'Sorted by `sort` (`last_seen` default, `count`, `p95`, `error_rate`; all descending), at most `limit` rows (1 to 100, default 50); `high_cardinality_truncated` is true when more operations matched. ' +
    'Drill down with traces.list using the row\'s `service_name` and `operation`.',
  method: 'GET',
  path: '/v1/projects/{project_id}/trace-operations',
  scopes: ['read'],
  risk: 'read',
  sensitive: false,
  display: { columns: ['service_name', 'operation', 'trace_count', 'error_rate', 'p95_ms', 'sparkline', 'last_seen'] },
  projectScoped: true,
  input: z.strictObject({
    project_id: projectId,
    ...windowParams,
    service_name: serviceParam,
    environment: optText(256, 'Environment (resource `deployment.environment.name`).'),
    min_duration: minDurationParam,
    status: statusParam.describe('Count only entry spans with (`error`) or without (`ok`) error status.'),
    operation: operationParam,
    sort: z.enum(OPERATION_SORTS).default('last_seen').describe('last_seen (default), count, p95 or error_rate; descending.'),
    limit: queryInt({ min: 1, max: 100, default: 50, describe: 'Rows, 1 to 100 (default 50).' }),
  }),
  output: z.object({
    data: z.array(operationRowSchema),
    high_cardinality_truncated: z.boolean().describe('More operations matched than `limit`.'),
    total_operations: z.number().int().describe('Operations that matched, before `limit`.'),
    sparkline_bucket_ms: z.number().describe('Width of one sparkline bucket in milliseconds.'),
    ...windowSchema,
  }),
  errors: [windowError],
  example: { sort: 'p95', limit: 10 },
  async handler(input, ctx) {
    const w = windowOf(input, ctx.now());
    const pid = ctx.project!.id;
    const repo = ctx.services.tracesRead;
    const operation = input.operation !== undefined ? normalizeOperation(input.operation) : undefined;
    const f: EntryFilter = { fromMs: w.fromMs, toMs: w.toMs, environment: input.environment, status: input.status, minDurationMs: input.min_duration };
    const { groups } = await repo.entryGroups(pid, { service: input.service_name, operation });
    const needs = sortNeeds(input.sort);
    // Read only what the sort needs for every group; the full detail only for the rows returned.
    // When every group fits in `limit`, every one is returned: read their detail once.
    const all = groups.length <= input.limit;
    const matched: OperationGroup[] = [];
    if (all) {
      const d = await repo.groupsDetail(pid, groups, f, true);
      groups.forEach((g, i) => {
        const x = d[i]!;
        if (x.count > 0) matched.push({ ...g, last_ms: x.last_ms!, count: x.count, errors: x.errors, durations: x.durations, p50: x.p50, p95: x.p95, buckets: x.buckets ?? undefined });
      });
    } else if (needs === 'last') {
      const last = await repo.groupsLastSeen(pid, groups, f);
      groups.forEach((g, i) => last[i] !== null && matched.push({ ...g, last_ms: last[i]! }));
    } else if (needs === 'counts') {
      const c = await repo.groupsCounts(pid, groups, f);
      groups.forEach((g, i) => c[i]!.count > 0 && matched.push({ ...g, last_ms: NaN, count: c[i]!.count, errors: c[i]!.errors })); // last_ms: read with the detail
    } else {
      // Every group's durations (for p95); sparklines only for the rows returned.
      const d = await repo.groupsDetail(pid, groups, f, false);
      groups.forEach((g, i) => d[i]!.count > 0 && matched.push({ ...g, last_ms: d[i]!.last_ms!, count: d[i]!.count, errors: d[i]!.errors, durations: d[i]!.durations, p50: d[i]!.p50, p95: d[i]!.p95 }));
    }
    const cmp = compareGroups(input.sort);
    // (By last seen, ties go by name, as when only the last-seen times are read.)
    matched.sort(all && needs === 'last' ? (a, b) => cmp({ ...a, count: undefined }, { ...b, count: undefined }) : cmp);
    const shown = matched.slice(0, input.limit);
    // Rows whose detail the sort already read need only their sparklines.
    const detailed = needs !== 'last' && needs !== 'counts';
    const top: OperationGroup[] = all
      ? shown
      : detailed
      ? (await repo.groupsSparklines(pid, shown, f)).map((buckets, i) => ({ ...shown[i]!, buckets }))
      : (await repo.groupsDetail(pid, shown, f, true)).map((d, i) => {
          const g = shown[i]!;
          return { ...g, last_ms: d.last_ms ?? g.last_ms, count: d.count, errors: d.errors, durations: d.durations, p50: d.p50, p95: d.p95, buckets: d.buckets ?? undefined };
        });
    return {
      data: top.map((g) => {
        const { last_ms, ...row } = operationRow(g);
        return { ...row, last_seen: iso(last_ms) };
      }),
      high_cardinality_truncated: matched.length > input.limit,
      total_operations: matched.length,
      sparkline_bucket_ms: (w.toMs - w.fromMs) / SPARKLINE_BUCKETS,
      ...windowOut(w),
    };
  },
});

// ---- traces.get -----------------------------------------------------------------------------

/** Spans returned by traces.get at most; the summary still counts every span. */
const MAX_SPANS = 10_000;
/** Log records of the trace returned by traces.get (the rest through logs.search trace_id=…). */
const TRACE_LOGS = 50;

const attrsSchema = z.record(z.string(), z.unknown()).describe('OTLP attributes as a JSON object.');
const spanSchema = z.object({
  span_id: z.string(),
  parent_span_id: z.string().nullable(),
  name: z.string(),
  operation: z.string().describe('Normalized operation.'),
  kind: z.enum(SPAN_KIND_NAMES),
  service_name: z.string(),
  service_version: z.string(),
  environment: z.string(),
  started_at: z.string(),
  ended_at: z.string(),
  start_offset_ms: z.number().describe('Milliseconds from the trace start to this span\'s start.'),
  duration_ms: z.number(),
  status: z.enum(['unset', 'ok', 'error']),
  status_message: z.string(),
  depth: z.number().int().describe('0 for a span without a parent in the trace, else parent depth + 1.'),
  children: z.number().int().describe('Direct child spans.'),
  parent_missing: z.boolean().describe('The parent span was not received.'),
  attributes: attrsSchema,
  events: z.array(z.object({ name: z.string(), time: z.string(), offset_ms: z.number().describe('From the span start.'), attributes: attrsSchema })),
  links: z.array(z.object({ trace_id: z.string(), span_id: z.string(), trace_state: z.string(), attributes: attrsSchema })),
  scope: z.object({ name: z.string(), version: z.string() }).describe('Instrumentation scope.'),
});

export const get = defineOperation({
  operationId: 'traces.get',
  tag: 'traces',
  summary: 'Get a trace with its spans',
  description:
    'The trace summary (root span, services, start, end, duration, span and error counts, status) and its spans ordered by start time, parents before children at equal start, each with its parent id, depth and child count, kind, status, attributes, events and links. ' +
    `At most ${MAX_SPANS.toLocaleString('en')} spans are returned (\`spans_truncated\`); the counts cover all of them. ` +
    `Also the root span's own duration, the slowest other span, and the trace's log records: their count and the first ${TRACE_LOGS} by time (more through logs.search with \`trace_id\`).`,
  method: 'GET',
  path: '/v1/projects/{project_id}/traces/{trace_id}',
  scopes: ['read'],
  risk: 'read',
  sensitive: false,
  projectScoped: true,
  input: z.strictObject({ project_id: projectId, trace_id: traceIdParam }),
  output: traceRowSchema.omit({ started_at: true, duration_ms: true }).extend({
    started_at: z.string(),
    ended_at: z.string(),
    duration_ms: z.number(),
    spans_truncated: z.boolean(),
    spans: z.array(spanSchema),
    logs: z
      .object({
        total: z.number().int().describe('Log records carrying this trace id.'),
        data: z.array(logRowSchema).describe(`The first ${TRACE_LOGS} by time, oldest first.`),
        has_more: z.boolean().describe('More records exist: page through them with logs.search trace_id=….'),
      })
      .describe("The trace's log records (any time)."),
  }),
  errors: [
    { status: 400, code: 'invalid_parameter', when: 'trace_id is not 32 hexadecimal characters' },
    { status: 404, code: 'not_found', when: 'no span of this trace in the project' },
  ],
  example: { trace_id: '4bf92f3577b34da6a3ce929d0e0e4736' },
  async handler(input, ctx) {
    const pid = ctx.project!.id;
    const repo = ctx.services.tracesRead;
    const agg = await repo.traceAggregate(pid, input.trace_id);
    if (!agg.span_count) throw new NotFoundError('Trace', 'trace_id');
    const spans = await repo.traceSpansFull(pid, input.trace_id, MAX_SPANS);
    const t = summarizeTrace(spans)!;
    const started = agg.started_ms ?? t.started_ms;
    const ended = agg.ended_ms ?? t.ended_ms;
    const tree = spanTree(spans);
    const lite = traceRow(input.trace_id, spans)!.row;
    // Newest first from the index, so the oldest TRACE_LOGS are the tail of the newest `total`.
    const logF = { fromMs: 0, toMs: Number.MAX_SAFE_INTEGER, traceId: input.trace_id };
    const logTotal = await ctx.services.logsRead.total(pid, logF);
    const firstLogs = logTotal
      ? (await ctx.services.logsRead.search(pid, logF, { limit: TRACE_LOGS, offset: Math.max(0, logTotal - TRACE_LOGS), withTotal: false })).rows.reverse()
      : [];
    return {
      root_duration_ms: lite.root_duration_ms,
      slowest_span: lite.slowest_span,
      logs: { total: logTotal, data: firstLogs.map(logRowOut), has_more: logTotal > TRACE_LOGS },
      trace_id: input.trace_id,
      root_span_id: t.root.span_id,
      root_name: t.root.name,
      operation: t.root.operation,
      service_name: t.root.service_name,
      environment: t.root.environment,
      has_root: t.has_root,
      services: t.services,
      started_at: iso(started),
      ended_at: iso(ended),
      duration_ms: roundMs(Math.max(0, ended - started)),
      span_count: agg.span_count,
      error_count: agg.error_count,
      status: (agg.error_count > 0 ? 'error' : 'ok') as 'error' | 'ok',
      spans_truncated: agg.span_count > spans.length,
      spans: orderSpans(spans, tree).map((sp) => {
        const info = tree.get(sp.span_id)!;
        return {
          span_id: sp.span_id,
          parent_span_id: sp.parent_span_id,
          name: sp.name,
          operation: sp.operation,
          kind: spanKindName(sp.kind),
          service_name: sp.service_name,
          service_version: sp.service_version,
          environment: sp.environment,
          started_at: iso(sp.start_ms),
          ended_at: iso(sp.end_ms),
          start_offset_ms: roundMs(sp.start_ms - started),
          duration_ms: roundMs(sp.duration_ms),
          status: spanStatusName(sp.status_code),
          status_message: sp.status_message,
          depth: info.depth,
          children: info.children,
          parent_missing: info.parent_missing,
          attributes: sp.attributes,
          events: sp.events.map((e) => ({ name: e.name, time: iso(e.time_ms), offset_ms: roundMs(e.time_ms - sp.start_ms), attributes: e.attributes ?? {} })),
          links: sp.links.map((l) => ({ trace_id: l.trace_id, span_id: l.span_id, trace_state: l.trace_state ?? '', attributes: l.attributes ?? {} })),
          scope: { name: sp.scope_name, version: sp.scope_version },
        };
      }),
    };
  },
});

// ---- traces.errors --------------------------------------------------------------------------

export const errors = defineOperation({
  operationId: 'traces.errors',
  tag: 'traces',
  summary: 'Error groups correlated to a trace',
  description:
    'The error groups whose events carry this trace id (span `exception` events and SDK error events with trace context), most events first: group id, short id, title, type, culprit, level, status, service, first and last seen (of the group), and the number of its events in this trace with the span ids they came from. Events counted on a merged duplicate count on the group it was merged into.',
  method: 'GET',
  path: '/v1/projects/{project_id}/traces/{trace_id}/errors',
  scopes: ['read'],
  risk: 'read',
  sensitive: false,
  projectScoped: true,
  input: z.strictObject({ project_id: projectId, trace_id: traceIdParam }),
  output: z.object({
    trace_id: z.string(),
    data: z.array(
      z.object({
        id: z.string().describe('Error group id (use with errors.get).'),
        short_id: z.string(),
        title: z.string(),
        type: z.string(),
        culprit: z.string(),
        level: z.string(),
        status: z.string().describe('unresolved, resolved, ignored or muted.'),
        service_name: z.string(),
        first_seen: z.string().describe('First event of the group (ISO 8601).'),
        last_seen: z.string().describe('Latest event of the group (ISO 8601).'),
        event_count: z.number().int().describe('Events of the group in this trace.'),
        trace_first_event_at: z.string(),
        trace_last_event_at: z.string(),
        span_ids: z.array(z.string()).describe('Spans of this trace the events came from.'),
      }),
    ),
  }),
  errors: [
    { status: 400, code: 'invalid_parameter', when: 'trace_id is not 32 hexadecimal characters' },
    { status: 404, code: 'not_found', when: 'the project has neither spans nor error events of this trace' },
  ],
  example: { trace_id: '4bf92f3577b34da6a3ce929d0e0e4736' },
  async handler(input, ctx) {
    const pid = ctx.project!.id;
    const repo = ctx.services.tracesRead;
    const groups = await repo.traceErrorGroups(pid, input.trace_id);
    if (!groups.length && !(await repo.traceAggregate(pid, input.trace_id)).span_count) throw new NotFoundError('Trace', 'trace_id');
    return {
      trace_id: input.trace_id,
      data: groups.map((g) => ({
        id: g.id,
        short_id: g.short_id,
        title: g.title,
        type: g.type,
        culprit: g.culprit,
        level: g.level,
        status: g.status,
        service_name: g.service_name,
        first_seen: iso(g.first_seen),
        last_seen: iso(g.last_seen),
        event_count: g.trace_event_count,
        trace_first_event_at: iso(g.first_event_ms),
        trace_last_event_at: iso(g.last_event_ms),
        span_ids: g.span_ids,
      })),
    };
  },
});

// ---- traces.serviceMap ----------------------------------------------------------------------

/** Spans the service map reads for its edges at most (about); beyond it the window is sampled. */
const MAP_ROW_BUDGET = 12_000;
/** Spans read to estimate how many the window holds. */
const MAP_PROBE = 100_000;
/** Around each slice, spans read only as parents and children of the counted ones. */
const MAP_MARGIN_MS = 5_000;
/** Slices read at once, each its own query (the ones past an early stop are read for nothing; one query over 8 slices' ranges took 1.7× the CPU of 8 single-range ones on 18.16). */
const MAP_SLICES_AHEAD = 8;

const nodeSchema = z.object({
  service_name: z.string().describe('Service, or the name of a callee seen only in client spans (database system, messaging system/destination, peer service or host).'),
  kinds: z.array(z.enum(['service', 'database', 'messaging', 'external'])),
  request_count: z.number().int().describe('Services: entry spans (server, consumer, root) in the window — exact. Other nodes: calls received.'),
  error_count: z.number().int(),
  error_rate: z.number().describe('0 to 1.'),
  p50_ms: z.number().nullable(),
  p95_ms: z.number().nullable(),
  throughput_per_min: z.number().describe('request_count per minute of the window.'),
});
const edgeSchema = z.object({
  source: z.string(),
  target: z.string(),
  call_count: z.number().int(),
  error_count: z.number().int(),
  error_rate: z.number().describe('0 to 1.'),
  p50_ms: z.number().nullable(),
  p95_ms: z.number().nullable(),
});

export const serviceMap = defineOperation({
  operationId: 'traces.serviceMap',
  tag: 'traces',
  summary: 'Service map: services, their callees and the calls between them',
  description:
    'Nodes: services with their entry spans (server, consumer and root spans: request and error counts, error rate, p50/p95 duration, throughput per minute), plus databases (kind `database`, named by `db.system` and the `peer.service` or `server.address` they run at, e.g. `postgresql@pg.internal`, or `postgresql` alone), message destinations (`messaging.system`/`messaging.destination.name`, e.g. `kafka/orders`) and external services (kind `external`: `peer.service`, else `server.address`, for calls that are not database calls) that client and producer spans call. Window at most 30 days (ISO 8601 or relative from/to). ' +
    'Edges: calls from parent spans to child spans of another service (counted and timed by the child span), and client/producer spans no child span of another service answers (counted and timed by the client span). ' +
    'Filters: `service_name` (the service and its direct neighbours), `min_duration` and `status` (which spans count). At most `service_limit` nodes (by requests) and `call_limit` edges (by calls); `nodes_truncated`/`edges_truncated` say when limits cut. ' +
    `Request and error counts of service nodes are exact. Edges, the other nodes and percentiles come from the window's spans when it holds about ${MAP_ROW_BUDGET.toLocaleString('en')} spans or fewer; in larger windows from spans in evenly spread time slices covering \`sample_fraction\` of it (\`sampled\`: true), with counts scaled up by the exact request counts of the services that judge them (ratio estimates) — estimates, and a very rare call may be missing.`,
  method: 'GET',
  path: '/v1/projects/{project_id}/services',
  scopes: ['read'],
  risk: 'read',
  sensitive: false,
  projectScoped: true,
  input: z.strictObject({
    project_id: projectId,
    ...windowParams,
    service_name: serviceParam,
    min_duration: minDurationParam,
    status: statusParam.describe('Count only spans with (`error`) or without (`ok`) error status.'),
    service_limit: queryInt({ min: 1, max: 200, default: 50, describe: 'Most nodes, 1 to 200 (default 50), busiest first.' }),
    call_limit: queryInt({ min: 1, max: 1000, default: 200, describe: 'Most edges, 1 to 1000 (default 200), busiest first.' }),
  }),
  output: z.object({
    nodes: z.array(nodeSchema),
    edges: z.array(edgeSchema),
    nodes_truncated: z.boolean(),
    edges_truncated: z.boolean(),
    sampled: z.boolean().describe('Edges and percentiles were computed from a sample of the window.'),
    sample_fraction: z.number().describe('Share of the window the edges were computed from (1 = all of it).'),
    ...windowSchema,
  }),
  errors: [windowError],
  example: { service_name: 'checkout' },
  async handler(input, ctx) {
    const w = windowOf(input, ctx.now());
    const pid = ctx.project!.id;
    const repo = ctx.services.tracesRead;
    const f: EntryFilter = { fromMs: w.fromMs, toMs: w.toMs, status: input.status, minDurationMs: input.min_duration };

    // Exact entry-span counts per service.
    // (Asked at once with the estimate below: on ClickHouse each is a query of its own.)
    const counts = new Map<string, { request_count: number; error_count: number }>();
    const countsRead = repo.entryGroups(pid).then(async ({ groups }) => ({ groups, groupCounts: await repo.groupsCounts(pid, groups, f) }));
    const [{ groups, groupCounts }, est] = await Promise.all([countsRead, repo.estimateSpans(pid, w.fromMs, w.toMs, MAP_PROBE)]);
    for (const [i, g] of groups.entries()) {
      const c = groupCounts[i]!;
      const cur = counts.get(g.service_name) ?? { request_count: 0, error_count: 0 };
      cur.request_count += c.count;
      cur.error_count += c.errors;
      counts.set(g.service_name, cur);
    }

    // Spans for the edges: the whole window, or evenly spread slices of it.
    const fraction = est.count <= MAP_ROW_BUDGET ? 1 : MAP_ROW_BUDGET / est.count;
    const slices = planSlices(w.fromMs, w.toMs, fraction);
    const spans: MapSpan[] = [];
    let covered = 0;
    // Slices are read MAP_SLICES_AHEAD at a time (each a round trip on ClickHouse) and taken in order.
    let stop = false;
    for (let i = 0; i < slices.length && !stop; i += MAP_SLICES_AHEAD) {
      const part = slices.slice(i, i + MAP_SLICES_AHEAD);
      const read = await Promise.all(part.map((sl) => repo.mapSpans(pid, sl.fromMs - MAP_MARGIN_MS, sl.toMs + MAP_MARGIN_MS, sl.fromMs, sl.toMs)));
      for (const [j, rows] of read.entries()) {
        for (const r of rows) spans.push(r);
        covered += part[j]!.toMs - part[j]!.fromMs;
        // Denser than estimated: stop early (the slices come in an order spread over the window).
        if (fraction < 1 && spans.length > 2 * MAP_ROW_BUDGET) {
          stop = true;
          break;
        }
      }
    }
    const sampleFraction = fraction >= 1 ? 1 : covered / (w.toMs - w.fromMs);

    const map = await buildServiceMap({
      windowMs: w.toMs - w.fromMs,
      services: [...counts].map(([service_name, c]) => ({ service_name, ...c })),
      spans,
      sampleFraction,
      filter: { serviceName: input.service_name, minDurationMs: input.min_duration, status: input.status },
      serviceLimit: input.service_limit,
      callLimit: input.call_limit,
      lookups: {
        parentServices: (sps) => repo.spanServices(pid, sps.map((sp) => ({ trace_id: sp.trace_id, span_id: sp.parent_span_id! }))),
        childServices: (sps) => repo.childServicesOf(pid, sps.map((sp) => ({ trace_id: sp.trace_id, span_id: sp.span_id }))),
      },
    });
    return { ...map, sampled: sampleFraction < 1, sample_fraction: Math.round(sampleFraction * 10_000) / 10_000, ...windowOut(w) };
  },
});
