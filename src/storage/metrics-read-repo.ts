import type { Statement } from 'better-sqlite3';
import type { Db } from './db.js';
import type { ExpBuckets, MetricType, Temporality } from '../domain/telemetry-types.js';
import type { MetricPointInput } from '../domain/metrics/normalize.js';
import { CUMULATIVE_HIST_SQL, METRIC_SAMPLES_SQL } from './migrations/008-metric-catalog.js';

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
interface CatalogRow {
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
interface RunRow {
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
function bucketsOf(type: MetricType, json: string): Partial<MetricPointInput> {
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

/* eslint-disable @typescript-eslint/no-explicit-any */
export function createMetricsReadRepo(db: Db) {
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

  return {
    /**
     * Metrics seen in the window, one row per (name, type, service), by name. `sample_count`: points
     * for gauges and sums; for histograms Σ count of delta points plus, per cumulative series and
     * start time, the growth of its count inside the window (its whole count when it started there).
     * Read from the hourly catalogue (migration 008); see {@link catalogue}.
     */
    listSeries(projectId: string, f: MetricSeriesFilter, page: { limit: number; offset: number }): { rows: MetricSeriesRow[]; total: number } {
      const { rows, runs } = catalogue(projectId, f, f.q, true);
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
    },
  };
}

export type MetricsReadRepo = ReturnType<typeof createMetricsReadRepo>;
