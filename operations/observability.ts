import { z } from 'zod';
import { defineOperation } from './define.js';
import { projectId, queryInt } from './shared.js';
import { logRowOut, logRowSchema } from './logs.js';
import { METRIC_TYPES, textFilter, windowFields, windowOf, windowOut } from './metrics.js';
import { HOUR_MS, type ResolvedWindow } from '../src/domain/metrics/window.js';
import { normalizePoints, type MetricPointInput } from '../src/domain/metrics/normalize.js';
import { stateCounts, stateValue, type BucketState } from '../src/domain/metrics/rollup-state.js';
import { formatNumber, timelineFromContributions, UnsupportedTemporalityError, type Aggregation } from '../src/domain/metrics/aggregate.js';
import { truncateValue } from '../src/domain/logs/patterns.js';
import type { MetricType, Temporality } from '../src/domain/telemetry-types.js';
import { LOG_LEVELS } from '../src/storage/logs-read-repo.js';
import { roundMs } from '../src/domain/traces/operation-stats.js';
import type { EntryFilter, EntryGroupKey, TracesReader } from '../src/storage/traces-read-repo.js';
import { RollupMismatch, type OperationRollupReader } from '../src/storage/operation-rollups.js';

/** Error groups, operations and deployments listed per summary section. */
const SECTION = 5;
/** Entry-span groups (service, operation) read at most for the slowest operations. */
const MAX_OPERATION_GROUPS = 200;
/** Recently active groups examined for regressions. */
const REGRESSION_CANDIDATES = 50;
const iso = (ms: number | null) => (ms === null ? null : new Date(ms).toISOString());

const NOTABLE_LEVELS = ['warn', 'error', 'fatal'];
const CANDIDATES = 10;
const TOP = 5;
const SUMMARY_AGGREGATIONS = ['avg', 'p50', 'p90', 'p99'] as const satisfies readonly Aggregation[];

/**
 * avg, p50, p90 and p99 of a metric over the whole window, with the temporality rules of
 * metrics.timeline: the points are normalized once over the window, then aggregated as one bucket
 * (times shifted so the window starts at 0 and one bucket spans it). Percentiles of a cumulative
 * exponential histogram are null (not available for it).
 */
function summarize(points: MetricPointInput[], w: ResolvedWindow, type: MetricType, temporality: Temporality | undefined) {
  const len = w.toMs - w.fromMs;
  const shifted = normalizePoints(points, w).map((c) => ({ ...c, time_ms: c.time_ms - w.fromMs }));
  const opts = { fromMs: 0, toMs: len, granularityMs: len, type, temporality };
  const out = { avg: null, p50: null, p90: null, p99: null, point_count: 0, sample_count: 0 } as Record<
    'avg' | 'p50' | 'p90' | 'p99' | 'point_count' | 'sample_count',
    number | null
  >;
  for (const aggregation of SUMMARY_AGGREGATIONS) {
    try {
      const b = timelineFromContributions(shifted, { ...opts, aggregation }).buckets[0];
      if (b) Object.assign(out, { [aggregation]: b.value, point_count: b.point_count, sample_count: b.sample_count });
    } catch (err) {
      if (!(err instanceof UnsupportedTemporalityError)) throw err;
    }
  }
  return out as { avg: number | null; p50: number | null; p90: number | null; p99: number | null; point_count: number; sample_count: number };
}

/** {@link summarize} from the window's bucket state (per-minute rollups). */
function summarizeState(st: BucketState, type: MetricType, len: number) {
  const v = (a: Aggregation) => stateValue(st, type, a, len);
  return { avg: v('avg'), p50: v('p50'), p90: v('p90'), p99: v('p99'), ...stateCounts(st, type) };
}

type SlowRow = { service_name: string; operation: string; trace_count: number; error_count: number; p50_ms: number | null; p95_ms: number | null };
const slowRow = (r: { service_name: string; operation: string; count: number; errors: number; p50: number | null; p95: number | null }): SlowRow => ({
  service_name: r.service_name,
  operation: r.operation,
  trace_count: r.count,
  error_count: r.errors,
  p50_ms: r.p50 === null ? null : roundMs(r.p50),
  p95_ms: r.p95 === null ? null : roundMs(r.p95),
});

/** The slowest operations from every entry span of the window (ClickHouse, and the reference for the tallies). */
export async function slowestFromSpans(traces: TracesReader, pid: string, groups: EntryGroupKey[], f: EntryFilter): Promise<SlowRow[]> {
  const details = await traces.groupsDetail(pid, groups, f, false);
  return groups
    .map((g, i) => ({ g, d: details[i]! }))
    .filter((x) => x.d.count > 0)
    .map(({ g, d }) => ({ service_name: g.service_name, operation: g.operation, count: d.count, errors: d.errors, p50: d.p50, p95: d.p95 }))
    .sort((a, b) => (b.p95 ?? -1) - (a.p95 ?? -1) || (a.operation < b.operation ? -1 : 1))
    .slice(0, SECTION)
    .map(slowRow);
}

/** The same from the hourly tallies (migration 054); null when they disagree with the spans (then read those). */
export function slowestFromTallies(tallies: OperationRollupReader, pid: string, groups: EntryGroupKey[], f: EntryFilter): SlowRow[] | null {
  try {
    return tallies.slowest(pid, groups, f, SECTION).map(slowRow);
  } catch (err) {
    if (err instanceof RollupMismatch) return null;
    throw err;
  }
}

const countRow = z.object({ value: z.string(), count: z.number().int() });
const groupRow = z.object({
  id: z.string().describe('Error group id (errors.get).'),
  short_id: z.string(),
  title: z.string(),
  level: z.string(),
  status: z.string(),
  service_name: z.string(),
  environment: z.string(),
  event_count: z.number().int().describe('Events of the group, all time.'),
  first_seen: z.string(),
  last_seen: z.string(),
});
type GroupLike = { id: string; short_id: string; title: string; level: string; status: string; service_name: string; environment: string; event_count: number; first_seen: number; last_seen: number };
const groupOut = (g: GroupLike): z.input<typeof groupRow> => ({
  id: g.id,
  short_id: g.short_id,
  title: g.title,
  level: g.level,
  status: g.status,
  service_name: g.service_name,
  environment: g.environment,
  event_count: g.event_count,
  first_seen: iso(g.first_seen)!,
  last_seen: iso(g.last_seen)!,
});
const nullableNum = z.number().nullable();

export const summary = defineOperation({
  operationId: 'observability.summary',
  tag: 'observability',
  summary: 'How is the project right now: logs, metrics, errors, slow operations, deployments',
  description:
    'A compact overview of a window (default the 24 hours before `to`; at most 30 days; `from`/`to` ISO 8601 or relative: -1h, -15m, now), optionally for one `service_name` and `environment`: highlight sentences; log counts by severity, top sources and releases, and the newest warn/error/fatal logs (`log_limit`, default 8, max 20); candidate metrics (names containing `metric_query`, else the busiest) and up to `metric_limit` (default 3, max 5) of them summarized with avg, p50, p90 and p99 over the window; ' +
    `errors: the newest error groups (first seen in the window) and the regressed ones (seen before the preceding window of equal length, silent during it, back in this one), ${SECTION} each; ` +
    `the ${SECTION} slowest operations (entry spans by p95 duration, as traces.operations) and the ${SECTION} latest deployments up to \`to\`.`,
  method: 'GET',
  path: '/v1/projects/{project_id}/observability-summary',
  scopes: ['read'],
  risk: 'read',
  sensitive: false,
  projectScoped: true,
  input: z.strictObject({
    project_id: projectId,
    service_name: textFilter(256, 'Only this service (logs and metrics).'),
    environment: textFilter(128, 'Only this deployment environment (logs and metrics).'),
    metric_query: textFilter(256, 'Case-insensitive substring of metric names to pick candidates from (default: the busiest metrics).'),
    ...windowFields,
    metric_limit: queryInt({ min: 1, max: 5, default: 3, describe: 'Metrics to summarize, 1 to 5 (default 3).' }),
    log_limit: queryInt({ min: 1, max: 20, default: 8, describe: 'Recent notable logs to include, 1 to 20 (default 8).' }),
  }),
  output: z.object({
    from: z.string(),
    to: z.string(),
    highlights: z.array(z.string()).describe('Short sentences worth reading first.'),
    logs: z.object({
      total: z.number().int().describe('Logs in the window.'),
      levels: z.object(Object.fromEntries(LOG_LEVELS.map((l) => [l, z.number().int()]))).describe('Count per severity.'),
      top_sources: z.array(countRow).describe('Most frequent log sources (at most 5).'),
      top_releases: z.array(countRow).describe('Most frequent releases (service.version, at most 5).'),
      recent_notable: z.array(logRowSchema).describe('Newest warn, error and fatal logs (at most log_limit).'),
    }),
    metrics: z.object({
      candidate_metrics: z
        .array(
          z.object({
            metric_name: z.string(),
            type: z.enum(METRIC_TYPES),
            unit: z.string(),
            point_count: z.number().int(),
            services: z.array(z.string()),
          }),
        )
        .describe('Metrics matching metric_query, or the busiest (at most 10), by points in the window.'),
      selected_metrics: z
        .array(
          z.object({
            metric_name: z.string(),
            type: z.enum(METRIC_TYPES),
            unit: z.string(),
            point_count: z.number().int(),
            sample_count: z.number(),
            avg: nullableNum,
            p50: nullableNum,
            p90: nullableNum,
            p99: nullableNum.describe('null when not available (cumulative exponential histograms) or no data.'),
          }),
        )
        .describe('The first metric_limit candidates, summarized over the window.'),
    }),
    errors: z.object({
      newest_groups: z.array(groupRow).describe('Error groups first seen in the window, newest first.'),
      regressed_groups: z.array(groupRow).describe('Unresolved groups seen before the preceding window, without events during it, and back in this window; latest first.'),
    }),
    slowest_operations: z
      .array(
        z.object({
          service_name: z.string(),
          operation: z.string(),
          trace_count: z.number().int(),
          error_count: z.number().int(),
          p50_ms: z.number().nullable(),
          p95_ms: z.number().nullable(),
        }),
      )
      .describe('Entry-span operations with the highest p95 duration in the window (drill down with traces.list service_name + operation).'),
    latest_deployments: z
      .array(
        z.object({
          id: z.string(),
          provider: z.string(),
          service: z.string().nullable(),
          version: z.string().nullable(),
          environment: z.string().nullable(),
          status: z.string(),
          commit_sha: z.string().nullable(),
          started_at: z.string().nullable(),
          finished_at: z.string().nullable(),
        }),
      )
      .describe('The newest deployments that started by `to`.'),
  }),
  errors: [{ status: 400, code: 'invalid_parameter', when: 'window invalid, reversed or above 30 days; metric_limit above 5; log_limit above 20' }],
  example: { service_name: 'checkout', metric_query: 'duration' },
  async handler(input, ctx) {
    const w = windowOf(input, ctx.now());
    const pid = ctx.project!.id;
    const logs = ctx.services.logsRead;
    const metrics = ctx.services.metricsRead;
    const f = { ...w, service: input.service_name, environment: input.environment };

    const levels = Object.fromEntries(LOG_LEVELS.map((l) => [l, 0])) as Record<string, number>;
    const sources = new Map<string, number>();
    const releases = new Map<string, number>();
    let total = 0;
    for (const c of await logs.counts(pid, f, ['level', 'source', 'release'])) {
      total += c.n;
      const [level, source, release] = c.keys as [string, string, string];
      if (level in levels) levels[level] += c.n;
      if (source) sources.set(source, (sources.get(source) ?? 0) + c.n);
      if (release) releases.set(release, (releases.get(release) ?? 0) + c.n);
    }
    const top = (m: Map<string, number>) =>
      [...m]
        .sort((a, b) => b[1] - a[1] || (a[0] < b[0] ? -1 : 1))
        .slice(0, TOP)
        .map(([value, count]) => ({ value: truncateValue(value, 256), count }));
    const notable = (await logs.search(pid, { ...f, levels: NOTABLE_LEVELS }, { limit: input.log_limit, offset: 0, withTotal: false })).rows;

    const candidates = await metrics.busiest(pid, { ...f, nameQuery: input.metric_query }, CANDIDATES);
    const selected = [];
    for (const m of candidates.slice(0, input.metric_limit)) {
      const sel = { metricName: m.metric_name, type: m.type, service: input.service_name, environment: input.environment };
      const meta = await metrics.meta(pid, sel, w.toMs);
      // One bucket spanning the window: whole minutes from the rollups (migration 040), else the points.
      const states = await metrics.rollupStates(pid, sel, w.fromMs, w.toMs, { first: w.fromMs, size: w.toMs - w.fromMs, n: 1 }, true);
      const s = states ? summarizeState(states[0]!, m.type, w.toMs - w.fromMs) : summarize(await metrics.points(pid, sel, w.fromMs, w.toMs, HOUR_MS), w, m.type, meta?.temporality);
      selected.push({ metric_name: m.metric_name, type: m.type, unit: m.unit, ...s });
    }

    // Errors: new in the window, and regressed (back after a silent preceding window).
    const errorGroups = ctx.services.errorGroups;
    const base = { service: input.service_name, environment: input.environment, offset: 0, userId: null };
    const newest = errorGroups
      .listRows(pid, { ...base, fromMs: w.fromMs, toMs: w.toMs, sort: 'first_seen', limit: SECTION })
      .filter((g) => g.first_seen >= w.fromMs && g.first_seen < w.toMs);
    const prevFrom = w.fromMs - (w.toMs - w.fromMs);
    const returning = errorGroups
      .listRows(pid, { ...base, fromMs: w.fromMs, toMs: w.toMs, statuses: ['unresolved'], sort: 'last_seen', limit: REGRESSION_CANDIDATES })
      .filter((g) => g.first_seen < prevFrom);
    // Back after a silent preceding window: no event in it.
    const silent = await Promise.all(returning.map(async (g) => (await errorGroups.firstEventIn(pid, g.id, prevFrom, w.fromMs - 0.001)) === null));
    const regressed = returning.filter((_, i) => silent[i]).slice(0, SECTION);

    // Slowest operations: entry-span p95 per (service, operation), as traces.operations computes it;
    // with spans in SQLite from the hourly tallies (migration 054), else from every entry span.
    const traces = ctx.services.tracesRead;
    const entryFilter = { fromMs: w.fromMs, toMs: w.toMs, environment: input.environment };
    const { groups } = await traces.entryGroups(pid, { service: input.service_name, max: MAX_OPERATION_GROUPS });
    const slowest = (ctx.services.clickhouse ? null : slowestFromTallies(ctx.services.operationRollups, pid, groups, entryFilter)) ?? (await slowestFromSpans(traces, pid, groups, entryFilter));

    const deployments = ctx.services.deployments.before(pid, input.service_name ?? null, input.environment ?? null, w.toMs, SECTION).map((d) => ({
      id: d.id,
      provider: d.provider,
      service: d.service,
      version: d.version,
      environment: d.environment,
      status: d.status,
      commit_sha: d.commit_sha,
      started_at: iso(d.started_at),
      finished_at: iso(d.finished_at),
    }));

    const highlights: string[] = [];
    const scope = [input.service_name && `service ${input.service_name}`, input.environment && `environment ${input.environment}`].filter(Boolean).join(', ');
    if (total === 0) highlights.push(`No logs in the window${scope ? ` for ${scope}` : ''}.`);
    else {
      const parts = ['fatal', 'error', 'warn'].filter((l) => levels[l]! > 0).map((l) => `${formatNumber(levels[l]!)} ${l}`);
      highlights.push(`${formatNumber(total)} log${total === 1 ? '' : 's'}${scope ? ` for ${scope}` : ''}${parts.length ? `: ${parts.join(', ')}` : ', none warn or worse'}.`);
      const src = top(sources)[0];
      if (src) highlights.push(`Top log source: ${src.value} (${Math.round((src.count / total) * 100)}%).`);
      const rel = top(releases);
      if (rel.length) highlights.push(`Releases seen: ${rel.map((r) => `${r.value} (${formatNumber(r.count)})`).join(', ')}.`);
      const worst = notable.find((r) => r.level === 'fatal' || r.level === 'error') ?? notable[0];
      if (worst) {
        highlights.push(
          `Latest ${worst.level}: "${truncateValue(worst.body.replace(/\s+/g, ' '), 120)}"${worst.service_name ? ` (${worst.service_name})` : ''} at ${new Date(worst.time_ms).toISOString()}.`,
        );
      }
    }
    if (candidates.length === 0) {
      highlights.push(input.metric_query ? `No metric name contains "${truncateValue(input.metric_query, 64)}" in the window.` : 'No metrics in the window.');
    }
    for (const m of selected) {
      const unit = m.unit && m.unit !== '1' ? ` ${m.unit.replace(/^\{(.*)\}$/, '$1')}` : '';
      const stats = (['avg', 'p50', 'p90', 'p99'] as const).filter((k) => m[k] !== null).map((k) => `${k} ${formatNumber(m[k]!)}`);
      highlights.push(
        stats.length ? `${m.metric_name} (${m.type}${unit ? `,${unit}` : ''}): ${stats.join(', ')}.` : `${m.metric_name} (${m.type}): no values in the window.`,
      );
    }

    if (newest.length) highlights.push(`New error group${newest.length === 1 ? '' : 's'}: ${newest.map((g) => `${g.short_id} "${truncateValue(g.title, 80)}"`).join(', ')}.`);
    if (regressed.length) highlights.push(`Regressed: ${regressed.map((g) => `${g.short_id} "${truncateValue(g.title, 80)}"`).join(', ')}.`);
    const slow = slowest[0];
    if (slow && slow.p95_ms !== null) highlights.push(`Slowest operation: ${slow.operation} (${slow.service_name}), p95 ${formatNumber(slow.p95_ms)} ms over ${formatNumber(slow.trace_count)} requests.`);
    const dep = deployments[0];
    if (dep) highlights.push(`Latest deployment: ${[dep.service, dep.version].filter(Boolean).join(' ') || dep.id} (${dep.status}${dep.environment ? `, ${dep.environment}` : ''}) at ${dep.started_at ?? 'an unknown time'}.`);

    return {
      ...windowOut(w),
      highlights,
      errors: { newest_groups: newest.map(groupOut), regressed_groups: regressed.map(groupOut) },
      slowest_operations: slowest,
      latest_deployments: deployments,
      logs: { total, levels, top_sources: top(sources), top_releases: top(releases), recent_notable: notable.map(logRowOut) },
      metrics: {
        candidate_metrics: candidates.map((c) => ({ metric_name: c.metric_name, type: c.type, unit: c.unit, point_count: c.point_count, services: c.services })),
        selected_metrics: selected,
      },
    };
  },
});
