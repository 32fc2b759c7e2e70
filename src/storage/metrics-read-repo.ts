import type { Statement } from 'better-sqlite3';
import type { Db } from './db.js';
import type { ExpBuckets, MetricType, Temporality } from '../domain/telemetry-types.js';
import type { MetricPointInput } from '../domain/metrics/normalize.js';
import { CUMULATIVE_HIST_SQL, METRIC_SAMPLES_SQL } from './migrations/008-metric-catalog.js';
import { addReceived, cumInput, MINUTE_MS, ROLLUP_LEVELS } from './metric-rollups.js';
import { addHist, addValue, EXACT_PERCENTILE_VALUES, LN_GAMMA, newState, sketchMergeJson, type BucketState } from '../domain/metrics/rollup-state.js';
import { cumulativeContribution } from '../domain/metrics/normalize.js';

export interface MetricSeriesFilter {
  fromMs: number;
  toMs: number;
  type?: MetricType;
  service?: string;
  environment?: string;
  /** Case-insensitive literal substring of name, unit or service. */
  q?: string;
}

/** One metric per (name, type, service) seen in the window. */
export interface MetricSeriesRow {
  metric_name: string;
  type: MetricType;
  unit: string;
  description: string;
  service_name: string;
  first_seen: number;
  last_seen: number;
  point_count: number;
  sample_count: number;
}

export interface MetricSelector {
  metricName: string;
  type: MetricType;
  service?: string;
  environment?: string;
  /** Point or resource attributes that must equal these values (compared as text). */
  attributes?: { key: string; value: string }[];
}

const jsonPath = (key: string) => `$."${key.replace(/"/g, '')}"`;

/**
 * A point attribute, else its resource's (resources are stored once per distinct resource, so the
 * resource side is one primary-key read).
 */
const ATTR_SQL = `COALESCE(CAST(json_extract(metric_points.attributes, ?) AS TEXT),
  (SELECT CAST(json_extract(r.attributes, ?) AS TEXT) FROM resources r WHERE r.id = metric_points.resource_id))`;

/** Attribute conditions of a selector on metric_points rows. */
function attrWhere(m: MetricSelector): { sql: string; args: unknown[] } {
  let sql = '';
  const args: unknown[] = [];
  for (const a of m.attributes ?? []) {
    sql += ` AND ${ATTR_SQL} = ?`;
    args.push(jsonPath(a.key), jsonPath(a.key), a.value);
  }
  return { sql, args };
}

export interface MetricMeta {
  unit: string;
  description: string;
  temporality: Temporality;
}

export interface BusyMetric {
  metric_name: string;
  type: MetricType;
  unit: string;
  point_count: number;
  services: string[];
}

/** A catalogue row (or the same aggregate over the points of a straddling hour). */
export interface CatalogRow {
  metric_name: string;
  type: MetricType;
  service_name: string;
  environment: string;
  unit: string;
  description: string;
  first_ms: number;
  last_ms: number;
  point_count: number;
  samples: number;
}

/** A cumulative histogram run's part (series, scope, start; start -1 when unknown). */
export interface RunRow {
  metric_name: string;
  type: MetricType;
  service_name: string;
  series_key: string;
  scope_name: string;
  start_ms: number;
  first_ms: number;
  min_count: number | null;
  max_count: number | null;
}

/** SQLite's BINARY order for the ASCII names metrics use (code unit order otherwise). */
const cmp = (a: string, b: string) => (a < b ? -1 : a > b ? 1 : 0);

const likeArg = (q: string) => `%${q.toLowerCase().replace(/[\\%_]/g, (c) => `\\${c}`)}%`;

function where(f: { service?: string; environment?: string; type?: MetricType }): { sql: string; args: unknown[] } {
  const parts: string[] = [];
  const args: unknown[] = [];
  if (f.type !== undefined) {
    parts.push('type = ?');
    args.push(f.type);
  }
  if (f.service !== undefined) {
    parts.push('service_name = ?');
    args.push(f.service);
  }
  if (f.environment !== undefined) {
    parts.push('environment = ?');
    args.push(f.environment);
  }
  return { sql: parts.map((p) => ` AND ${p}`).join(''), args };
}

const TEMPORALITIES: readonly Temporality[] = ['unspecified', 'delta', 'cumulative'];

/** The stored bucket JSON (see sqlite-telemetry-store.ts) as MetricPointInput fields. */
export function bucketsOf(type: MetricType, json: string): Partial<MetricPointInput> {
  const b = JSON.parse(json);
  if (type === 'hist') return { bucket_counts: b.bucket_counts ?? [], explicit_bounds: b.explicit_bounds ?? [] };
  const out: Partial<MetricPointInput> = { scale: b.scale ?? 0, zero_count: b.zero_count ?? 0, zero_threshold: b.zero_threshold ?? 0 };
  if (b.positive) out.positive = b.positive as ExpBuckets;
  if (b.negative) out.negative = b.negative as ExpBuckets;
  return out;
}

const COUNTS_HEAD = '{"bucket_counts":[';
const BOUNDS_KEY = '],"explicit_bounds":';

/**
 * Fast reading of an explicit histogram's stored bucket JSON in the exact layout the store writes
 * (`{"bucket_counts":[<non-negative integers>],"explicit_bounds":<array>}`): counts parsed by hand,
 * bounds through `cache`. Returns false (nothing set) for any other text; callers then use JSON.parse.
 */
function explicitBucketsInto(p: MetricPointInput, json: string, cache: Map<string, number[]>): boolean {
  if (!json.startsWith(COUNTS_HEAD) || json.charCodeAt(json.length - 1) !== 125 /* } */) return false;
  const mid = json.indexOf(BOUNDS_KEY, COUNTS_HEAD.length);
  if (mid < 0) return false;
  const counts: number[] = [];
  let v = 0;
  let digits = 0;
  for (let i = COUNTS_HEAD.length; i < mid; i++) {
    const c = json.charCodeAt(i);
    if (c >= 48 && c <= 57) {
      v = v * 10 + (c - 48);
      if (++digits > 15) return false; // beyond exact integers: leave it to JSON.parse
    } else if (c === 44 /* , */ && digits > 0) {
      counts.push(v);
      v = 0;
      digits = 0;
    } else return false;
  }
  if (digits > 0) counts.push(v);
  else if (mid > COUNTS_HEAD.length) return false; // trailing comma or similar
  const boundsText = json.slice(mid + BOUNDS_KEY.length, -1);
  let bounds = cache.get(boundsText);
  if (bounds === undefined) {
    let parsed: unknown;
    try {
      parsed = JSON.parse(boundsText);
    } catch {
      return false;
    }
    if (parsed !== null && !Array.isArray(parsed)) return false;
    bounds = (parsed as number[] | null) ?? [];
    cache.set(boundsText, bounds);
  }
  p.bucket_counts = counts;
  p.explicit_bounds = bounds;
  return true;
}

/** metrics.list's rows from catalogue rows and cumulative histogram runs of the window (both readers). */
export function seriesFromCatalogue(rows: readonly CatalogRow[], runs: readonly RunRow[], f: { fromMs: number }, page: { limit: number; offset: number }): { rows: MetricSeriesRow[]; total: number } {
  const groups = new Map<string, MetricSeriesRow>();
  for (const r of rows) {
    const k = `${r.metric_name}\u0000${r.type}\u0000${r.service_name}`;
    const g = groups.get(k);
    if (!g) {
      groups.set(k, {
        metric_name: r.metric_name,
        type: r.type,
        unit: r.unit,
        description: r.description,
        service_name: r.service_name,
        first_seen: r.first_ms,
        last_seen: r.last_ms,
        point_count: r.point_count,
        sample_count: r.samples,
      });
      continue;
    }
    if (r.unit > g.unit) g.unit = r.unit;
    if (r.description > g.description) g.description = r.description;
    if (r.first_ms < g.first_seen) g.first_seen = r.first_ms;
    if (r.last_ms > g.last_seen) g.last_seen = r.last_ms;
    g.point_count += r.point_count;
    g.sample_count += r.samples;
  }
  // Cumulative histogram runs (series, scope, start) across hours, environments and units.
  const merged = new Map<string, RunRow>();
  for (const r of runs) {
    const k = `${r.metric_name}\u0000${r.type}\u0000${r.service_name}\u0000${r.series_key}\u0000${r.scope_name}\u0000${r.start_ms}`;
    const m = merged.get(k);
    if (!m) merged.set(k, { ...r });
    else {
      if (r.first_ms < m.first_ms) m.first_ms = r.first_ms;
      if (r.min_count !== null && (m.min_count === null || r.min_count < m.min_count)) m.min_count = r.min_count;
      if (r.max_count !== null && (m.max_count === null || r.max_count > m.max_count)) m.max_count = r.max_count;
    }
  }
  for (const r of merged.values()) {
    if (r.max_count === null) continue;
    const growth = r.start_ms >= f.fromMs && r.start_ms < r.first_ms ? r.max_count : r.min_count === null ? null : r.max_count - r.min_count;
    if (growth === null) continue;
    const g = groups.get(`${r.metric_name}\u0000${r.type}\u0000${r.service_name}`);
    if (g) g.sample_count += Math.max(growth, 0);
  }
  const all = [...groups.values()].sort((x, y) => cmp(x.metric_name, y.metric_name) || cmp(x.type, y.type) || cmp(x.service_name, y.service_name));
  return { rows: all.slice(page.offset, page.offset + page.limit), total: all.length };
}

/** The summary's busiest metrics from catalogue rows of the window (both readers). */
export function busiestFromCatalogue(rows: readonly CatalogRow[], limit: number): BusyMetric[] {
  const groups = new Map<string, BusyMetric & { svc: Set<string> }>();
  for (const r of rows) {
    const k = `${r.metric_name}\u0000${r.type}`;
    const g = groups.get(k);
    if (!g) groups.set(k, { metric_name: r.metric_name, type: r.type, unit: r.unit, point_count: r.point_count, services: [], svc: new Set([r.service_name]) });
    else {
      if (r.unit > g.unit) g.unit = r.unit;
      g.point_count += r.point_count;
      g.svc.add(r.service_name);
    }
  }
  return [...groups.values()]
    .sort((x, y) => y.point_count - x.point_count || cmp(x.metric_name, y.metric_name) || cmp(x.type, y.type))
    .slice(0, limit)
    .map(({ svc, ...g }) => ({ ...g, services: [...svc].filter(Boolean).sort(cmp) }));
}

/* eslint-disable @typescript-eslint/no-explicit-any */
export function createMetricsReadRepo(db: Db) {
  /** Whether window reads may use the per-minute rollups (migration 040); false forces the raw path (benches, tests). */
  const settings = { rollupReads: true, /** false: the per-minute level only (benches compare). */ coarseLevels: true };
  const cache = new Map<string, Statement>();
  const stmt = (sql: string): Statement => {
    let s = cache.get(sql);
    if (!s) {
      s = db.prepare(sql);
      if (cache.size > 200) cache.clear();
      cache.set(sql, s);
    }
    return s;
  };

  const HOUR = 3_600_000;
  /** The first period the coarse rollup levels cover (migration 047's metric_rollup_levels). */
  let coarseSince: number | undefined;
  const since = () => (coarseSince ??= (db.prepare('SELECT since FROM metric_rollup_levels').pluck().get() as number | undefined) ?? Infinity);

  /**
   * [level, lo, hi) pieces covering the whole minutes [lo, hi): the coarsest level whose periods each
   * lie inside one bucket (bucket bounds on period bounds, or one bucket), finer levels at the edges.
   */
  function pieces(lo: number, hi: number, b: { first: number; size: number; n: number }): [number, number, number][] {
    const out: [number, number, number][] = [];
    const from = settings.coarseLevels ? since() : Infinity;
    const fits = (L: number) => b.n === 1 || (b.size % L === 0 && (((b.first % L) + L) % L) === 0);
    const cover = (li: number, a: number, z: number): void => {
      if (a >= z) return;
      const L = ROLLUP_LEVELS[li]!.period;
      const ca = Math.ceil(Math.max(a, from) / L) * L;
      const cz = Math.floor(z / L) * L;
      if (li === 0 || !fits(L) || ca >= cz) {
        if (li === 0) out.push([0, a, z]);
        else cover(li - 1, a, z);
        return;
      }
      cover(li - 1, a, ca);
      out.push([li, ca, cz]);
      cover(li - 1, cz, z);
    };
    cover(ROLLUP_LEVELS.length - 1, lo, hi);
    return out;
  }

  const KEY = 'metric_name, type, service_name, environment, unit';
  const RUN_KEY = `${KEY}, series_key, scope_name`;

  /**
   * The catalogue rows (and, with `withRuns`, cumulative histogram runs) of the window, per metric
   * name, type, service, environment and unit, restricted to the window: a row whose points all lie
   * inside it (first and last time) is used as it is; the points of rows straddling an edge are
   * aggregated again for the part of their hour inside the window (one indexed range read per
   * metric name and edge hour). `text` filters like metrics.list's `q` when `withRuns` (name, unit
   * or service), else the name only.
   */
  function catalogue(
    projectId: string,
    f: { fromMs: number; toMs: number; type?: MetricType; service?: string; environment?: string },
    text: string | undefined,
    withRuns: boolean,
  ): { rows: CatalogRow[]; runs: RunRow[] } {
    const pid = Number(projectId);
    const w = where(f);
    let tsql = '';
    const targs: unknown[] = [];
    if (text !== undefined && text !== '') {
      const l = likeArg(text);
      if (withRuns) {
        tsql = " AND (lower(metric_name) LIKE ? ESCAPE '\\' OR lower(unit) LIKE ? ESCAPE '\\' OR lower(service_name) LIKE ? ESCAPE '\\')";
        targs.push(l, l, l);
      } else {
        tsql = " AND lower(metric_name) LIKE ? ESCAPE '\\'";
        targs.push(l);
      }
    }
    const hourFrom = Math.floor(f.fromMs / HOUR) * HOUR;
    const inside = (r: { first_ms: number; last_ms: number }) => r.first_ms >= f.fromMs && r.last_ms < f.toMs;
    const outside = (r: { first_ms: number; last_ms: number }) => r.last_ms < f.fromMs || r.first_ms >= f.toMs;
    /** Straddling rows per (hour, metric name): the keys to aggregate again from points. */
    const edges = new Map<string, { hour: number; name: string; keys: Set<string> }>();
    const straddle = (hour: number, name: string, key: string) => {
      const ek = `${hour}\u0000${name}`;
      let e = edges.get(ek);
      if (!e) edges.set(ek, (e = { hour, name, keys: new Set() }));
      e.keys.add(key);
    };
    const keyOf = (r: CatalogRow) => `${r.type}\u0000${r.service_name}\u0000${r.environment}\u0000${r.unit}`;
    const runKeyOf = (r: RunRow & { environment: string; unit: string }) => `${keyOf(r as unknown as CatalogRow)}\u0000${r.series_key}\u0000${r.scope_name}\u0000${r.start_ms}`;

    const rows: CatalogRow[] = [];
    const cat = stmt(
      `SELECT hour, ${KEY}, description, first_ms, last_ms, point_count, samples FROM metric_catalog
       WHERE project_id = ? AND hour >= ? AND hour < ?${w.sql}${tsql}`,
    ).all(pid, hourFrom, f.toMs, ...w.args, ...targs) as (CatalogRow & { hour: number })[];
    for (const r of cat) {
      if (outside(r)) continue;
      if (inside(r)) rows.push(r);
      else straddle(r.hour, r.metric_name, keyOf(r));
    }
    const runs: RunRow[] = [];
    const runEdges = new Map<string, { hour: number; name: string; keys: Set<string> }>();
    if (withRuns) {
      const rr = stmt(
        `SELECT hour, ${RUN_KEY}, start_ms, first_ms, last_ms, min_count, max_count FROM metric_catalog_runs
         WHERE project_id = ? AND hour >= ? AND hour < ?${w.sql}${tsql}`,
      ).all(pid, hourFrom, f.toMs, ...w.args, ...targs) as (RunRow & { hour: number; environment: string; unit: string; last_ms: number })[];
      for (const r of rr) {
        if (outside(r)) continue;
        if (inside(r)) runs.push(r);
        else {
          const ek = `${r.hour}\u0000${r.metric_name}`;
          let e = runEdges.get(ek);
          if (!e) runEdges.set(ek, (e = { hour: r.hour, name: r.metric_name, keys: new Set() }));
          e.keys.add(runKeyOf(r));
        }
      }
    }
    for (const e of edges.values()) {
      const lo = Math.max(f.fromMs, e.hour);
      const hi = Math.min(f.toMs, e.hour + HOUR);
      const pts = stmt(
        `SELECT ${KEY}, max(description) AS description, min(time_ms) AS first_ms, max(time_ms) AS last_ms, count(*) AS point_count,
           total(${METRIC_SAMPLES_SQL}) AS samples
         FROM metric_points WHERE project_id = ? AND metric_name = ? AND time_ms >= ? AND time_ms < ?${w.sql} GROUP BY ${KEY}`,
      ).all(pid, e.name, lo, hi, ...w.args) as CatalogRow[];
      for (const r of pts) if (e.keys.has(keyOf(r))) rows.push(r);
    }
    for (const e of runEdges.values()) {
      const lo = Math.max(f.fromMs, e.hour);
      const hi = Math.min(f.toMs, e.hour + HOUR);
      const pts = stmt(
        `SELECT ${RUN_KEY}, coalesce(start_ms, -1) AS start_ms, min(time_ms) AS first_ms, min(count) AS min_count, max(count) AS max_count
         FROM metric_points WHERE project_id = ? AND metric_name = ? AND time_ms >= ? AND time_ms < ? AND ${CUMULATIVE_HIST_SQL}${w.sql}
         GROUP BY ${RUN_KEY}, 8`,
      ).all(pid, e.name, lo, hi, ...w.args) as (RunRow & { environment: string; unit: string })[];
      for (const r of pts) if (e.keys.has(runKeyOf(r))) runs.push(r);
    }
    return { rows, runs };
  }

  const api = {
    settings,
    /**
     * Metrics seen in the window, one row per (name, type, service), by name. `sample_count`: points
     * for gauges and sums; for histograms Σ count of delta points plus, per cumulative series and
     * start time, the growth of its count inside the window (its whole count when it started there).
     * Read from the hourly catalogue (migration 008); see {@link catalogue}.
     */
    listSeries(projectId: string, f: MetricSeriesFilter, page: { limit: number; offset: number }): { rows: MetricSeriesRow[]; total: number } {
      const { rows, runs } = catalogue(projectId, f, f.q, true);
      return seriesFromCatalogue(rows, runs, f, page);
    },

    /** Unit, description and temporality of the newest matching point (any time), or null. */
    meta(projectId: string, m: MetricSelector, beforeMs: number): MetricMeta | null {
      const w = where({ service: m.service, environment: m.environment });
      const r = stmt(
        `SELECT unit, description, temporality FROM metric_points WHERE project_id = ? AND metric_name = ? AND time_ms < ? AND type = ?${w.sql}
         ORDER BY time_ms DESC LIMIT 1`,
      ).get(Number(projectId), m.metricName, beforeMs, m.type, ...w.args) as MetricMeta | undefined;
      if (r) return r;
      const any = stmt(
        `SELECT unit, description, temporality FROM metric_points WHERE project_id = ? AND metric_name = ? AND type = ?${w.sql} ORDER BY time_ms LIMIT 1`,
      ).get(Number(projectId), m.metricName, m.type, ...w.args) as MetricMeta | undefined;
      return any ?? null;
    },

    /**
     * Points of one metric for a window, ready for normalizePoints: those with `fromMs <= time < toMs`
     * plus, for cumulative series, those of the `baselineMs` before (their baselines). Only the
     * columns the metric type needs are read, and series identity only for cumulative points (the
     * only ones differenced): reading values into JavaScript is most of the cost at 10⁴–10⁵ points.
     */
    points(projectId: string, m: MetricSelector, fromMs: number, toMs: number, baselineMs: number, opts: { groupBy?: readonly string[] } = {}): MetricPointInput[] {
      const w0 = where({ service: m.service, environment: m.environment });
      const aw = attrWhere(m);
      const w = { sql: w0.sql + aw.sql, args: [...w0.args, ...aw.args] };
      const groupBy = opts.groupBy ?? [];
      const groupCols = groupBy.map((_, i) => `, ${ATTR_SQL} AS g${i}`).join('');
      const groupArgs = groupBy.flatMap((k) => [jsonPath(k), jsonPath(k)]);
      const histo = m.type === 'hist' || m.type === 'exponential_histogram';
      const cols = histo ? 'count, sum, min, max, buckets' : 'value';
      // Each non-NULL value read costs about as much as any other, a NULL almost nothing: start time
      // and monotonicity, like series identity, only matter for cumulative points and are read as
      // NULL for the others, and so is the commonest temporality, delta (tp NULL).
      const rows = stmt(
        `SELECT CASE temporality WHEN 'cumulative' THEN 2 WHEN 'delta' THEN NULL ELSE 0 END AS tp,
           CASE WHEN temporality = 'cumulative' THEN monotonic END AS mo, CASE WHEN temporality = 'cumulative' THEN start_ms END AS st, time_ms,
           CASE WHEN temporality = 'cumulative' THEN series_key END AS sk, CASE WHEN temporality = 'cumulative' THEN scope_name END AS sc, ${cols},
           exemplars${groupCols}
         FROM metric_points WHERE project_id = ? AND metric_name = ? AND time_ms >= ? AND time_ms < ? AND type = ?${w.sql}
           AND (time_ms >= ? OR temporality = 'cumulative')`,
      )
        .raw()
        .all(...groupArgs, Number(projectId), m.metricName, fromMs - baselineMs, toMs, m.type, ...w.args, fromMs) as any[][];
      const extra = histo ? 11 : 7;
      const decorate = (p: MetricPointInput, r: any[]) => {
        if (r[extra] !== null) p.exemplars = r[extra];
        if (groupBy.length) p.group = JSON.stringify(groupBy.map((_, i) => r[extra + 1 + i] ?? null));
      };
      const out: MetricPointInput[] = new Array(rows.length);
      const type = m.type;
      // Explicit bounds repeat from point to point: parse each distinct bounds text once and share the
      // (never mutated) array, which also makes same-bounds checks downstream cheap.
      const boundsCache = new Map<string, number[]>();
      for (let i = 0; i < rows.length; i++) {
        const r = rows[i]!;
        if (!histo) {
          const p: MetricPointInput = {
            type,
            temporality: TEMPORALITIES[(r[0] ?? 1) as 0 | 1 | 2],
            monotonic: r[1] === 1,
            start_ms: r[2],
            time_ms: r[3],
            series_key: r[4] ?? '',
            scope_name: r[5] ?? '',
          };
          if (r[6] !== null) p.value = r[6];
          decorate(p, r);
          out[i] = p;
          continue;
        }
        const p: MetricPointInput = {
          type,
          temporality: TEMPORALITIES[(r[0] ?? 1) as 0 | 1 | 2],
          monotonic: r[1] === 1,
          start_ms: r[2],
          time_ms: r[3],
          series_key: r[4] ?? '',
          scope_name: r[5] ?? '',
        };
        if (r[6] !== null) p.count = r[6];
        p.sum = r[7];
        p.min = r[8];
        p.max = r[9];
        const json = r[10] as string | null;
        if (json) {
          if (type !== 'hist' || !explicitBucketsInto(p, json, boundsCache)) Object.assign(p, bucketsOf(type, json));
        }
        decorate(p, r);
        out[i] = p;
      }
      return out;
    },

    /**
     * Attribute keys of the metric's newest `sample` points in the window (point and resource
     * attributes) with their most frequent values: what `group_by` and attribute filters can name.
     */
    attributeValues(projectId: string, m: MetricSelector, fromMs: number, toMs: number, sample: number): { points: { attributes: string; resource: string }[] } {
      const w0 = where({ service: m.service, environment: m.environment });
      const aw = attrWhere(m);
      const rows = stmt(
        `SELECT attributes, resource_id FROM metric_points WHERE project_id = ? AND metric_name = ? AND time_ms >= ? AND time_ms < ? AND type = ?${w0.sql}${aw.sql}
         ORDER BY time_ms DESC LIMIT ?`,
      ).all(Number(projectId), m.metricName, fromMs, toMs, m.type, ...w0.args, ...aw.args, sample) as {
        attributes: string;
        resource_id: number;
      }[];
      const ids = [...new Set(rows.map((r) => r.resource_id))];
      const res = new Map(
        (stmt('SELECT id, attributes FROM resources WHERE id IN (SELECT value FROM json_each(?))').all(JSON.stringify(ids)) as { id: number; attributes: string }[]).map((r) => [r.id, r.attributes]),
      );
      return { points: rows.map((r) => ({ attributes: r.attributes, resource: res.get(r.resource_id) ?? '{}' })) };
    },

    /**
     * Metrics of the window by number of points (busiest first); with `nameQuery`, only names holding
     * it (case-insensitive). Read from the hourly catalogue (migration 008).
     */
    busiest(projectId: string, f: { fromMs: number; toMs: number; service?: string; environment?: string; nameQuery?: string }, limit: number): BusyMetric[] {
      const { rows } = catalogue(projectId, f, f.nameQuery || undefined, false);
      return busiestFromCatalogue(rows, limit);
    },

    /** Points of the window that carry exemplars (time and exemplars only), through a partial index. */
    exemplarPoints(projectId: string, m: MetricSelector, fromMs: number, toMs: number): MetricPointInput[] {
      const w = where({ service: m.service, environment: m.environment });
      const rows = stmt(
        `SELECT time_ms, exemplars FROM metric_points INDEXED BY metric_points_exemplars
         WHERE project_id = ? AND metric_name = ? AND time_ms >= ? AND time_ms < ? AND exemplars IS NOT NULL AND type = ?${w.sql}`,
      ).all(Number(projectId), m.metricName, fromMs, toMs, m.type, ...w.args) as { time_ms: number; exemplars: string }[];
      return rows.map((r) => ({ type: m.type, temporality: 'delta', start_ms: null, time_ms: r.time_ms, series_key: '', scope_name: '', exemplars: r.exemplars }));
    },

    /**
     * The contributions of the window in buckets (`first`, `size`, `n`: bucket i covers
     * [first + i·size, first + (i+1)·size), sizes whole minutes or one bucket spanning the window),
     * read from the per-minute rollups (src/storage/metric-rollups.ts) for the whole minutes inside
     * the window and from the points for its unaligned edges (and, for cumulative sums, the baseline
     * hour before it). `withDist` also merges sketches and histogram buckets (percentiles). Null when
     * the rollups cannot answer: rollup reads off, a gauge or sum percentile over at most
     * EXACT_PERCENTILE_VALUES values (exact from the points instead), attribute conditions, exponential histograms,
     * cumulative histogram points in the window, or a window without a whole minute.
     */
    rollupStates(
      projectId: string,
      m: MetricSelector,
      fromMs: number,
      toMs: number,
      b: { first: number; size: number; n: number },
      withDist: boolean,
    ): BucketState[] | null {
      if (!settings.rollupReads || m.attributes?.length || m.type === 'exponential_histogram') return null;
      const A = Math.ceil(fromMs / MINUTE_MS) * MINUTE_MS;
      const B = Math.floor(toMs / MINUTE_MS) * MINUTE_MS;
      if (A >= B) return null;
      const pid = Number(projectId);
      const valueType = m.type === 'gauge' || m.type === 'sum';
      const states = Array.from({ length: b.n }, () => newState(withDist && valueType));
      // Gauge and sum percentiles over few values are computed exactly from the points (raw path).
      const exactEnough = (st: BucketState[]) => (withDist && valueType && st.reduce((t, x) => t + x.n, 0) <= EXACT_PERCENTILE_VALUES ? null : st);
      const at = (ms: number): BucketState | undefined => states[Math.floor((ms - b.first) / b.size)];
      const w = where({ service: m.service, environment: m.environment });
      const bucketSql = 'CAST((minute - ?) / ? AS INTEGER)';
      const pcs = pieces(A, B, b);
      /** The rows of the pieces, one level's table each (the tables of a kind share their columns). */
      const union = (kind: 'nc' | 'cum', list: [number, number, number][], extra: string, extraArgs: unknown[]) => {
        const args: unknown[] = [];
        const sql = list
          .map(([li, lo, hi]) => {
            args.push(pid, m.metricName, lo, hi, ...extraArgs, ...w.args);
            return `SELECT * FROM ${ROLLUP_LEVELS[li]![kind]} WHERE project_id = ? AND metric_name = ? AND minute >= ? AND minute < ?${extra}${w.sql}`;
          })
          .join(' UNION ALL ');
        return { sql, args };
      };
      const nc = union('nc', pcs, ' AND type = ?', [m.type]);

      const agg = stmt(
        `SELECT ${bucketSql} AS b, total(other_points) AS other, total(points) AS n, total(vsum) AS vsum, min(vmin) AS vmin, max(vmax) AS vmax,
           total(hcount) AS hcount, total(hsum) AS hsum, total(hsum_n) AS hsum_n, total(hsum_count) AS hsum_count, total(live) AS live,
           min(lmin) AS lmin, total(lmin_n) AS lmin_n, max(lmax) AS lmax, total(lmax_n) AS lmax_n
         FROM (${nc.sql}) GROUP BY 1`,
      ).all(b.first, b.size, ...nc.args) as any[];
      for (const r of agg) {
        if (r.other > 0) return null;
        const s = states[r.b];
        if (!s) continue;
        s.n += r.n;
        s.vsum += r.vsum;
        if (r.vmin !== null && r.vmin < s.vmin) s.vmin = r.vmin;
        if (r.vmax !== null && r.vmax > s.vmax) s.vmax = r.vmax;
        s.hcount += r.hcount;
        s.hsum += r.hsum;
        s.hsumN += r.hsum_n;
        s.hsumCount += r.hsum_count;
        s.live += r.live;
        if (r.lmin !== null && r.lmin < s.lmin) s.lmin = r.lmin;
        s.lminN += r.lmin_n;
        if (r.lmax !== null && r.lmax > s.lmax) s.lmax = r.lmax;
        s.lmaxN += r.lmax_n;
      }
      if (withDist) {
        const col = valueType ? 'sketch' : 'hist';
        const rows = stmt(
          `SELECT minute, ${col} AS d FROM (${nc.sql}) WHERE ${col} IS NOT NULL`,
        )
          .raw()
          .all(...nc.args) as [number, string][];
        for (const [minute, d] of rows) {
          const s = at(minute);
          if (!s) continue;
          if (valueType) sketchMergeJson(s.sketch!, d);
          else for (const h of JSON.parse(d) as { bounds: number[]; counts: number[] }[]) addHistInto(s, h);
        }
      }

      // Raw edges: [fromMs, A) and [B, toMs); for cumulative sums also the points before fromMs that
      // can be baselines: [fromMs − 1 h, first whole minute) and [minute of fromMs, fromMs).
      const baseLo = Math.ceil((fromMs - HOUR) / MINUTE_MS) * MINUTE_MS;
      const cumSeries = new Map<string, { r1: MetricPointInput[]; pre: MetricPointInput[]; win: MetricPointInput[]; post: MetricPointInput[] }>();
      const series = (k: string) => {
        let e = cumSeries.get(k);
        if (!e) cumSeries.set(k, (e = { r1: [], pre: [], win: [], post: [] }));
        return e;
      };
      const edge = (pts: MetricPointInput[], phase: 'r1' | 'r2' | 'r3'): boolean => {
        for (const p of pts) {
          if (p.temporality === 'cumulative' && p.type !== 'gauge') {
            if (m.type !== 'sum') return false;
            if (typeof p.value !== 'number' || !Number.isFinite(p.value)) continue;
            const e = series(`${p.series_key}\u0000${p.scope_name}`);
            (phase === 'r1' ? e.r1 : phase === 'r3' ? e.post : p.time_ms < fromMs ? e.pre : e.win).push(p);
          } else if (p.time_ms >= fromMs && p.time_ms < toMs) {
            const s = at(p.time_ms);
            if (s) addReceived(s, p);
          }
        }
        return true;
      };
      const minuteFrom = Math.floor(fromMs / MINUTE_MS) * MINUTE_MS;
      if (m.type === 'sum' && baseLo > fromMs - HOUR && !edge(api.points(projectId, m, baseLo, baseLo, baseLo - (fromMs - HOUR)), 'r1')) return null;
      if (A > fromMs && !edge(api.points(projectId, m, fromMs, A, m.type === 'sum' ? fromMs - minuteFrom : 0), 'r2')) return null;
      if (toMs > B && !edge(api.points(projectId, m, B, toMs, 0), 'r3')) return null;
      if (m.type !== 'sum') return exactEnough(states);

      // The rows of the baseline before the window (per minute) and of the pieces; the minute holding
      // an unaligned fromMs is read from the points (edge R2), not from its row.
      const cum = union('cum', baseLo < minuteFrom ? [[0, baseLo, minuteFrom], ...pcs] : pcs, '', []);
      // Cumulative sums: every series-minute row whose previous row (LAG) lies inside the window is
      // aggregated in SQL, its first point differenced against that row's last point.
      const contrib = `CASE WHEN first_start IS NOT ps THEN (CASE WHEN first_start IS NULL OR first_start = first_ms THEN 0.0 ELSE first_value END)
        WHEN first_monotonic = 0 THEN first_value - pv WHEN first_value < pv THEN 0.0 ELSE first_value - pv END`;
      const lagged = `WITH r AS (
          SELECT minute, series_key, scope_name, points, first_ms, first_value, first_start, first_monotonic, last_ms, last_value, last_start, last_monotonic,
            n, isum, imin, imax, sketch, LAG(minute) OVER w AS pm, LAG(last_ms) OVER w AS pms, LAG(last_value) OVER w AS pv, LAG(last_start) OVER w AS ps,
            LAG(last_monotonic) OVER w AS pmo
          FROM (${cum.sql})
          WINDOW w AS (PARTITION BY series_key ORDER BY minute))`;
      const largs = cum.args;
      const bulk = stmt(
        `${lagged}, c AS (SELECT minute, n, isum, imin, imax, ${contrib} AS c FROM r WHERE minute >= ? AND pm >= ?)
         SELECT ${bucketSql} AS b, total(n + 1) AS n, total(isum + c) AS s, min(CASE WHEN n > 0 THEN min(imin, c) ELSE c END) AS mn,
           max(CASE WHEN n > 0 THEN max(imax, c) ELSE c END) AS mx FROM c GROUP BY 1`,
      ).all(...largs, A, A, b.first, b.size) as { b: number; n: number; s: number; mn: number; mx: number }[];
      for (const r of bulk) {
        const s = states[r.b];
        if (!s) continue;
        s.n += r.n;
        s.vsum += r.s;
        if (r.mn < s.vmin) s.vmin = r.mn;
        if (r.mx > s.vmax) s.vmax = r.mx;
      }
      if (withDist) {
        // First-point contributions go into the sketches from SQL, per bucket and log key (as sketchAdd).
        const keyed = stmt(
          `${lagged}, c AS (SELECT minute, ${contrib} AS c FROM r WHERE minute >= ? AND pm >= ?)
           SELECT ${bucketSql} AS b, sign(c) AS sg, CASE WHEN c <> 0 THEN CAST(ceil(ln(abs(c)) / ?) AS INTEGER) END AS k, count(*) AS cnt FROM c GROUP BY 1, 2, 3`,
        )
          .raw()
          .all(...largs, A, A, b.first, b.size, LN_GAMMA) as [number, number, number | null, number][];
        for (const [bi, sg, k, cnt] of keyed) {
          const sk = states[bi]?.sketch;
          if (!sk) continue;
          if (sg === 0 || k === null) sk.z += cnt;
          else {
            const mp = sg > 0 ? sk.p : sk.n;
            mp.set(k, (mp.get(k) ?? 0) + cnt);
          }
        }
        const rows = stmt(`${lagged} SELECT minute, sketch FROM r WHERE minute >= ? AND pm >= ? AND sketch IS NOT NULL`)
          .raw()
          .all(...largs, A, A) as [number, string][];
        for (const [minute, sk] of rows) {
          const s = at(minute);
          if (s) sketchMergeJson(s.sketch!, sk);
        }
      }
      // The first in-window row of each series: its baseline may be a point of the raw edges.
      const firsts = stmt(`${lagged} SELECT * FROM r WHERE minute >= ? AND (pm IS NULL OR pm < ?)`).all(...largs, A, A) as any[];
      const firstOf = new Map<string, any>();
      for (const r of firsts) {
        firstOf.set(`${r.series_key}\u0000${r.scope_name}`, r);
        series(`${r.series_key}\u0000${r.scope_name}`);
      }
      const needLast = [...cumSeries.values()].some((e) => e.post.length > 0);
      const lastOf = new Map<string, any>();
      if (needLast || cumSeries.size > firstOf.size) {
        const rows = stmt(
          `SELECT series_key, scope_name, max(minute) AS minute, last_ms, last_value, last_start, last_monotonic FROM (${cum.sql}) GROUP BY series_key`,
        ).all(...largs) as any[];
        for (const r of rows) lastOf.set(`${r.series_key}\u0000${r.scope_name}`, r);
      }
      const pointOf = (r: any, ms: number, value: number, start: number | null, mono: number) =>
        cumInput({ monotonic: mono, start_ms: start, time_ms: ms, value, series_key: r.series_key, scope_name: r.scope_name });
      for (const [k, e] of cumSeries) {
        const f = firstOf.get(k);
        const l = lastOf.get(k);
        let prev: MetricPointInput | undefined = e.pre.at(-1);
        if (!prev) {
          if (f && f.pm !== null) prev = pointOf(f, f.pms, f.pv, f.ps, f.pmo);
          else if (!f && l && l.minute < A) prev = pointOf(l, l.last_ms, l.last_value, l.last_start, l.last_monotonic);
          else prev = e.r1.at(-1);
        }
        const add = (p: MetricPointInput) => {
          const s = at(p.time_ms);
          if (s) addValue(s, cumulativeContribution(prev, p, fromMs).value as number);
          prev = p;
        };
        for (const p of e.win) add(p);
        if (f) {
          const s = at(f.minute);
          const first = pointOf(f, f.first_ms, f.first_value, f.first_start, f.first_monotonic);
          if (s) {
            addValue(s, cumulativeContribution(prev, first, fromMs).value as number);
            s.n += f.n;
            s.vsum += f.isum;
            if (f.n > 0 && f.imin < s.vmin) s.vmin = f.imin;
            if (f.n > 0 && f.imax > s.vmax) s.vmax = f.imax;
            if (s.sketch && f.sketch) sketchMergeJson(s.sketch, f.sketch);
          }
          prev = pointOf(f, f.last_ms, f.last_value, f.last_start, f.last_monotonic);
        }
        if (e.post.length) {
          if (l && l.minute >= A) prev = pointOf(l, l.last_ms, l.last_value, l.last_start, l.last_monotonic);
          for (const p of e.post) add(p);
        }
      }
      return exactEnough(states);
    },
  };
  return api;
}

function addHistInto(s: BucketState, h: { bounds: number[]; counts: number[] }): void {
  addHist(s, h.bounds, h.counts);
}


export type MetricsReadRepo = ReturnType<typeof createMetricsReadRepo>;

/**
 * The metric reads the operations use, asynchronous: answered by the SQLite repository
 * ({@link asyncMetricsReader}) or, with metric points in ClickHouse, by clickhouse/metrics-read.ts —
 * the same answers from either.
 */
export interface MetricsReader {
  /** Raw-path switches (benches and tests); the ClickHouse reader honours `rollupReads` only. */
  settings: { rollupReads: boolean; coarseLevels: boolean };
  listSeries(...a: Parameters<MetricsReadRepo['listSeries']>): Promise<ReturnType<MetricsReadRepo['listSeries']>>;
  meta(...a: Parameters<MetricsReadRepo['meta']>): Promise<ReturnType<MetricsReadRepo['meta']>>;
  points(...a: Parameters<MetricsReadRepo['points']>): Promise<ReturnType<MetricsReadRepo['points']>>;
  attributeValues(...a: Parameters<MetricsReadRepo['attributeValues']>): Promise<ReturnType<MetricsReadRepo['attributeValues']>>;
  busiest(...a: Parameters<MetricsReadRepo['busiest']>): Promise<ReturnType<MetricsReadRepo['busiest']>>;
  exemplarPoints(...a: Parameters<MetricsReadRepo['exemplarPoints']>): Promise<ReturnType<MetricsReadRepo['exemplarPoints']>>;
  rollupStates(...a: Parameters<MetricsReadRepo['rollupStates']>): Promise<ReturnType<MetricsReadRepo['rollupStates']>>;
}

/** The SQLite repository behind the asynchronous {@link MetricsReader}. */
export function asyncMetricsReader(repo: MetricsReadRepo): MetricsReader {
  return {
    settings: repo.settings,
    listSeries: async (...a) => repo.listSeries(...a),
    meta: async (...a) => repo.meta(...a),
    points: async (...a) => repo.points(...a),
    attributeValues: async (...a) => repo.attributeValues(...a),
    busiest: async (...a) => repo.busiest(...a),
    exemplarPoints: async (...a) => repo.exemplarPoints(...a),
    rollupStates: async (...a) => repo.rollupStates(...a),
  };
}
