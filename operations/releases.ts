import { z } from 'zod';
import { defineOperation, type HandlerContext } from './define.js';
import { isoDateTime, isoOut, parseIso, projectId, queryInt, toIso } from './shared.js';
import { NotFoundError, UnprocessableError } from '../src/core/errors.js';
import { buildReleases, servedIn, type ReleaseRecord } from '../src/domain/releases/build.js';
import { RELEASE_ID_RE, releaseId } from '../src/domain/releases/ids.js';
import {
  deltas,
  figures,
  healthWindows,
  seriesBucketMs,
  verdict,
  type Comparison,
  type DecidedBy,
  type Figures,
  type Span,
} from '../src/domain/releases/health.js';
import { quantiles } from '../src/domain/releases/sketch.js';

const DAY = 86_400_000;
const MAX_WINDOW_DAYS = 90;
/** `releases.get` answers for releases that served in about the last 120 days (spec, Errors 404). */
const GET_HORIZON_MS = 120 * DAY;
/** Telemetry activity read before the window, so that the release serving at its start is known. */
const LOOKBACK_MS = 30 * DAY;
/** `comparison` is computed for the first 25 list items only (spec, Limits). */
const COMPARED_ITEMS = 25;

const COMPARISONS = ['improved', 'regressed', 'unchanged', 'insufficient_data'] as const;
const DECIDED_BY = [
  'error_rate',
  'p95_latency',
  'error_rate_and_p95_latency',
  'no_threshold_crossed',
  'no_previous_release',
  'window_under_5_minutes',
  'too_few_requests',
] as const;

const releaseItem = z.object({
  id: z.string().describe('`rel_…`, opaque, stable for the same environment, service and version.'),
  service_name: z.string(),
  environment: z.string().describe('Empty string when the release has no environment.'),
  version: z.string(),
  confidence: z.enum(['confirmed', 'inferred']).describe('`confirmed` when a deployment record names the version, `inferred` when only telemetry does.'),
  started_at: isoOut,
  start_approximate: z.boolean().describe('True when only the hour of first telemetry is known.'),
  ended_at: isoOut.nullable().describe('Null while serving.'),
  is_current: z.boolean(),
  first_seen: isoOut.nullable().describe('First telemetry naming the version; null when none does.'),
  last_seen: isoOut.nullable(),
  commit_sha: z.string().nullable().describe('Latest commit of the matching deployment records.'),
  comparison: z.enum(COMPARISONS).nullable().describe('Health verdict against the previous release; set on the first 25 list items, null after.'),
  deployment_count: z.number().int(),
  previous_release_id: z.string().nullable(),
});

const windowOut = z.object({ from: isoOut, to: isoOut });
const figuresOut = z.object({
  request_count: z.number().int(),
  error_count: z.number().int(),
  error_rate: z.number().describe('0 to 1.'),
  p50_ms: z.number().nullable(),
  p95_ms: z.number().nullable(),
  p99_ms: z.number().nullable(),
  throughput_per_min: z.number(),
});

const healthOut = z.object({
  comparison: z.enum(COMPARISONS),
  decided_by: z
    .enum(DECIDED_BY)
    .describe(
      'Which signal decided the verdict: `error_rate`, `p95_latency` or both for regressed/improved; `no_threshold_crossed` for unchanged; why the data was insufficient otherwise.',
    ),
  window: windowOut,
  previous_window: windowOut.nullable(),
  current: figuresOut,
  previous: figuresOut.nullable(),
  deltas: z
    .object({
      error_rate_points: z.number().describe('Percentage points.'),
      p95_percent: z.number().nullable(),
      throughput_percent: z.number().nullable(),
    })
    .nullable(),
  new_issues: z.object({
    count: z.number().int().describe('Issues of the service in the environment first seen in the compared window, counted up to 100.'),
    items: z.array(z.object({ id: z.string(), short_id: z.string(), title: z.string(), first_seen: isoOut })).describe('The 10 newest.'),
    truncated: z.boolean().describe('More than 100 exist.'),
  }),
  series: z
    .array(
      z.object({
        time: isoOut.describe('Bucket start in the current window.'),
        request_count: z.number().int(),
        error_count: z.number().int(),
        error_rate: z.number(),
        p95_ms: z.number().nullable(),
        previous_request_count: z.number().int().nullable().describe('The same offset in the previous window.'),
        previous_error_count: z.number().int().nullable(),
        previous_error_rate: z.number().nullable(),
        previous_p95_ms: z.number().nullable(),
      }),
    )
    .describe('One point per bucket of the compared window (whole minutes, at most 60 points).'),
});

const round = (v: number, digits: number) => Math.round(v * 10 ** digits) / 10 ** digits;
const roundOrNull = (v: number | null, digits: number) => (v === null ? null : round(v, digits));
const figuresJson = (f: Figures) => ({
  request_count: f.request_count,
  error_count: f.error_count,
  error_rate: round(f.error_rate, 6),
  p50_ms: roundOrNull(f.p50_ms, 3),
  p95_ms: roundOrNull(f.p95_ms, 3),
  p99_ms: roundOrNull(f.p99_ms, 3),
  throughput_per_min: round(f.throughput_per_min, 3),
});
const windowJson = (w: Span) => ({ from: toIso(w.start)!, to: toIso(w.end)! });

function itemOut(r: ReleaseRecord, comparison: Comparison | null): z.input<typeof releaseItem> {
  return {
    id: r.id,
    service_name: r.service_name,
    environment: r.environment,
    version: r.version,
    confidence: r.confidence,
    started_at: toIso(r.started_at)!,
    start_approximate: r.start_approximate,
    ended_at: toIso(r.ended_at),
    is_current: r.is_current,
    first_seen: toIso(r.first_seen),
    last_seen: toIso(r.last_seen),
    commit_sha: r.commit_sha,
    comparison,
    deployment_count: r.deployment_count,
    previous_release_id: r.previous_release_id,
  };
}

interface HealthCore {
  comparison: Comparison;
  decided_by: DecidedBy;
  window: Span;
  previous_window: Span | null;
  current: Figures;
  previous: Figures | null;
}

/** Health rules 1–4 for one release, from the rollups (never raw spans). */
async function compare(ctx: HandlerContext, r: ReleaseRecord, prev: ReleaseRecord | null): Promise<HealthCore> {
  const pid = ctx.project!.id;
  const now = ctx.now();
  const first = r.serving[0]!;
  const prevInterval = prev ? ([...prev.serving].reverse().find((i) => i.start < first.start) ?? null) : null;
  const w = healthWindows(first, prevInterval, now);
  const repo = ctx.services.releases;
  const current = figures(await repo.totals(pid, r.service_name, r.environment, w.window.start, w.window.end), w.window);
  if (w.insufficient || !w.previous_window) {
    return { comparison: 'insufficient_data', decided_by: w.insufficient ?? 'no_previous_release', window: w.window, previous_window: null, current, previous: null };
  }
  const previous = figures(await repo.totals(pid, r.service_name, r.environment, w.previous_window.start, w.previous_window.end), w.previous_window);
  return { ...verdict(current, previous), window: w.window, previous_window: w.previous_window, current, previous };
}

type StreamKey = { service: string; environment: string };

/** Derive the releases of these streams (all deployments at once when there are many streams). */
async function streamReleases(ctx: HandlerContext, sinceMs: number, streams: StreamKey[]): Promise<ReleaseRecord[]> {
  const pid = ctx.project!.id;
  const repo = ctx.services.releases;
  if (streams.length > 3) {
    const wanted = new Set(streams.map((s) => `${s.service}\u0000${s.environment}`));
    const deps = (await repo.deployments(pid)).filter((d) => wanted.has(`${d.service}\u0000${d.environment}`));
    const activity = (await Promise.all(streams.map((s) => repo.activity(pid, sinceMs, s)))).flat();
    return buildReleases(pid, deps, activity, ctx.now());
  }
  const out: ReleaseRecord[] = [];
  for (const s of streams) out.push(...buildReleases(pid, await repo.deployments(pid, s), await repo.activity(pid, sinceMs, s), ctx.now()));
  return out;
}

/** Release ids → (service, environment, version), per project, refreshed on a miss. */
const idIndex = new Map<string, Map<string, { service: string; environment: string; version: string }>>();
async function keyOfId(ctx: HandlerContext, id: string) {
  const pid = ctx.project!.id;
  let idx = idIndex.get(pid);
  let hit = idx?.get(id);
  if (hit) return hit;
  if (!idx || idx.size > 100_000) idIndex.set(pid, (idx = new Map()));
  for (const k of await ctx.services.releases.versionKeys(pid)) idx.set(releaseId(pid, k.service, k.environment, k.version), k);
  hit = idx.get(id);
  return hit ?? null;
}

const newestFirst = (a: ReleaseRecord, b: ReleaseRecord) => b.started_at - a.started_at || (a.id < b.id ? -1 : 1);

export const list = defineOperation({
  operationId: 'releases.list',
  tag: 'releases',
  summary: 'List releases derived from deployments and telemetry',
  description:
    'Releases per service and environment, derived from deployment records (`confirmed`) and from the `service.version` telemetry sends (`inferred`). A release is listed if it served at any time in the window (`from` default 30 days before `to`, `to` default now, at most 90 days); newest first. `environment` with an empty value selects releases without an environment. `comparison` (health against the previous release) is set on the first 25 items, null after. `environments` and `services` list what served in the window before the filters; `truncated` is true when more releases matched than `limit`. Needs both `deployments:read` and `errors:read`.',
  method: 'GET',
  path: '/v1/projects/{project_id}/releases',
  scopes: ['deployments:read', 'errors:read'],
  risk: 'read',
  sensitive: false,
  projectScoped: true,
  input: z.strictObject({
    project_id: projectId,
    from: isoDateTime.optional().describe('Window start (default 30 days before `to`).'),
    to: isoDateTime.optional().describe('Window end (default now).'),
    environment: z.string().max(256).optional().describe('Exact environment; an empty value selects releases without an environment.'),
    service_name: z.string().max(256).optional(),
    confidence: z.enum(['confirmed', 'inferred']).optional(),
    limit: queryInt({ min: 1, max: 100, default: 50, describe: 'Releases to return, 1 to 100 (default 50).' }),
  }),
  output: z.object({
    data: z.array(releaseItem),
    environments: z.array(z.string()),
    services: z.array(z.string()),
    from: isoOut,
    to: isoOut,
    truncated: z.boolean(),
  }),
  errors: [
    { status: 400, code: 'invalid_parameter', when: 'unknown `confidence`, `limit` outside 1 to 100, a malformed time or an unknown field' },
    { status: 403, code: 'insufficient_scope', when: 'the key lacks `deployments:read` or `errors:read`' },
    { status: 422, code: 'invalid_window', when: '`from` after `to`, or a window above 90 days' },
  ],
  example: { environment: 'production', service_name: 'web', limit: 10 },
  async handler(input, ctx) {
    const now = ctx.now();
    const to = parseIso(input.to) ?? now;
    const from = parseIso(input.from) ?? to - 30 * DAY;
    if (from > to) throw new UnprocessableError('invalid_window', '`from` is after `to`.', 'from');
    if (to - from > MAX_WINDOW_DAYS * DAY) throw new UnprocessableError('invalid_window', `The window is longer than ${MAX_WINDOW_DAYS} days; narrow \`from\`/\`to\`.`, 'from');

    const since = Math.min(from, now) - LOOKBACK_MS;
    const streams = await ctx.services.releases.streams(ctx.project!.id, since, to);
    const environments = [...new Set(streams.map((r) => r.environment))].sort();
    const services = [...new Set(streams.map((r) => r.service))].sort();
    const wanted = streams.filter(
      (s) => (input.environment === undefined || s.environment === input.environment) && (input.service_name === undefined || s.service === input.service_name),
    );
    const derived = await streamReleases(ctx, since, wanted);
    const byId = new Map(derived.map((r) => [r.id, r]));
    const served = derived.filter((r) => servedIn(r, from, to, now));
    const matched = served.filter((r) => input.confidence === undefined || r.confidence === input.confidence).sort(newestFirst);
    const page = matched.slice(0, input.limit);
    const streamsDerived = new Map<string, Map<string, ReleaseRecord>>();
    const previousOf = async (r: ReleaseRecord): Promise<ReleaseRecord | null> => {
      if (!r.previous_release_id) return null;
      const hit = byId.get(r.previous_release_id);
      if (hit) return hit;
      // The previous release may have stopped serving before the window: derive its stream in full.
      const k = `${r.service_name}\u0000${r.environment}`;
      let all = streamsDerived.get(k);
      if (!all) streamsDerived.set(k, (all = new Map((await streamReleases(ctx, -Infinity, [{ service: r.service_name, environment: r.environment }])).map((x) => [x.id, x]))));
      return all.get(r.previous_release_id) ?? null;
    };
    const data: z.input<typeof releaseItem>[] = [];
    for (const [i, r] of page.entries()) data.push(itemOut(r, i < COMPARED_ITEMS ? (await compare(ctx, r, await previousOf(r))).comparison : null));
    return {
      data,
      environments,
      services,
      from: toIso(from)!,
      to: toIso(to)!,
      truncated: matched.length > page.length,
    };
  },
});

const deploymentOut = z.object({
  id: z.string(),
  provider: z.string(),
  deployment_id: z.string(),
  status: z.string(),
  url: z.string().nullable(),
  started_at: isoOut.nullable(),
  finished_at: isoOut.nullable(),
});

export const get = defineOperation({
  operationId: 'releases.get',
  tag: 'releases',
  summary: 'Get a release with its serving history and health comparison',
  description:
    'One release: its list fields plus `commits`, `serving` (oldest first; a rollback adds an item) and `deployments`; the `previous_release`; and `health`, the comparison with the previous release of the same service and environment over two windows of equal length (the shorter serving time, at most 24 hours). `insufficient_data` under 5 minutes, without a previous release or with fewer than 50 requests a side; `regressed` when the error rate is up 1 point or more or p95 is up 20% and 5 ms or more (it wins over an improvement), `improved` symmetrically. `decided_by` says which signal decided. Figures cover the service and environment (every version). 404 for an unknown id or a release that did not serve in about the last 120 days. Needs both `deployments:read` and `errors:read`.',
  method: 'GET',
  path: '/v1/projects/{project_id}/releases/{release_id}',
  scopes: ['deployments:read', 'errors:read'],
  risk: 'read',
  sensitive: false,
  display: { chart: { kind: 'line', points: 'health.series', x: 'time', y: 'request_count', merge: 'sum', unit: 'requests', title: ['version', 'health.comparison', 'health.decided_by'] } },
  projectScoped: true,
  input: z.strictObject({
    project_id: projectId,
    release_id: z.string().max(64).describe('`rel_…` id from releases.list.'),
  }),
  output: z.object({
    release: releaseItem.extend({
      commits: z.array(z.object({ sha: z.string(), branch: z.string().nullable() })),
      serving: z.array(z.object({ started_at: isoOut, ended_at: isoOut.nullable() })).describe('Oldest first.'),
      deployments: z.array(deploymentOut),
    }),
    previous_release: releaseItem.nullable(),
    health: healthOut,
  }),
  errors: [
    { status: 403, code: 'insufficient_scope', when: 'the key lacks `deployments:read` or `errors:read`' },
    { status: 404, code: 'not_found', when: 'unknown id, or the release did not serve in about the last 120 days' },
  ],
  example: { release_id: 'rel_Q2hlY2tvdXQgd2ViIDEuMi' },
  async handler(input, ctx) {
    const pid = ctx.project!.id;
    const now = ctx.now();
    if (!RELEASE_ID_RE.test(input.release_id)) throw new NotFoundError('Release', 'release_id');
    const key = await keyOfId(ctx, input.release_id);
    if (!key) throw new NotFoundError('Release', 'release_id');
    const releases = await streamReleases(ctx, now - GET_HORIZON_MS - LOOKBACK_MS, [{ service: key.service, environment: key.environment }]);
    const r = releases.find((x) => x.id === input.release_id);
    if (!r || (r.ended_at !== null && r.ended_at < now - GET_HORIZON_MS)) throw new NotFoundError('Release', 'release_id');
    const prev = r.previous_release_id ? (releases.find((x) => x.id === r.previous_release_id) ?? null) : null;

    const h = await compare(ctx, r, prev);
    const repo = ctx.services.releases;
    const issues = await repo.newIssues(pid, r.service_name, r.environment, h.window.start, h.window.end);
    const bucketMs = seriesBucketMs(h.window);
    const cur = await repo.series(pid, r.service_name, r.environment, h.window.start, h.window.end, bucketMs);
    const old = h.previous_window ? await repo.series(pid, r.service_name, r.environment, h.previous_window.start, h.previous_window.end, bucketMs) : null;
    const p95 = (sk: Parameters<typeof quantiles>[0]) => roundOrNull(quantiles(sk, [0.95])[0] ?? null, 3);
    const rate = (e: number, n: number) => (n ? round(e / n, 6) : 0);

    return {
      release: {
        ...itemOut(r, h.comparison),
        commits: r.commits,
        serving: r.serving.map((i) => ({ started_at: toIso(i.start)!, ended_at: toIso(i.end) })),
        deployments: r.deployments.map((d) => ({
          id: d.id,
          provider: d.provider,
          deployment_id: d.deployment_id,
          status: d.status,
          url: d.url,
          started_at: toIso(d.started_at),
          finished_at: toIso(d.finished_at),
        })),
      },
      previous_release: prev ? itemOut(prev, null) : null,
      health: {
        comparison: h.comparison,
        decided_by: h.decided_by,
        window: windowJson(h.window),
        previous_window: h.previous_window ? windowJson(h.previous_window) : null,
        current: figuresJson(h.current),
        previous: h.previous ? figuresJson(h.previous) : null,
        deltas: h.previous
          ? (() => {
              const d = deltas(h.current, h.previous);
              return { error_rate_points: round(d.error_rate_points, 4), p95_percent: roundOrNull(d.p95_percent, 2), throughput_percent: roundOrNull(d.throughput_percent, 2) };
            })()
          : null,
        new_issues: { count: issues.count, items: issues.items.map((x) => ({ ...x, first_seen: toIso(x.first_seen)! })), truncated: issues.truncated },
        series: cur.map((p, i) => {
          const o = old?.[i];
          return {
            time: toIso(p.t)!,
            request_count: p.requests,
            error_count: p.errors,
            error_rate: rate(p.errors, p.requests),
            p95_ms: p95(p.sketch),
            previous_request_count: o ? o.requests : null,
            previous_error_count: o ? o.errors : null,
            previous_error_rate: o ? rate(o.errors, o.requests) : null,
            previous_p95_ms: o ? p95(o.sketch) : null,
          };
        }),
      },
    };
  },
});
