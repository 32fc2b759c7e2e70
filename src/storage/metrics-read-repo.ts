import type { Statement } from 'better-sqlite3';
import type { Db } from './db.js';
import type { ExpBuckets, MetricType, Temporality } from '../domain/telemetry-types.js';
import type { MetricPointInput } from '../domain/metrics/normalize.js';

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

  return {
    /**
     * Metrics seen in the window, one row per (name, type, service), by name. `sample_count`: points
     * for gauges and sums; for histograms Σ count of delta points plus, per cumulative series and
     * start time, the growth of its count inside the window (its whole count when it started there).
     */
    listSeries(projectId: string, f: MetricSeriesFilter, page: { limit: number; offset: number }): { rows: MetricSeriesRow[]; total: number } {
      const w = where(f);
      const args: unknown[] = [Number(projectId), f.fromMs, f.toMs, ...w.args];
      let qsql = '';
      if (f.q !== undefined && f.q !== '') {
        qsql = " AND (lower(metric_name) LIKE ? ESCAPE '\\' OR lower(unit) LIKE ? ESCAPE '\\' OR lower(service_name) LIKE ? ESCAPE '\\')";
        const l = likeArg(f.q);
        args.push(l, l, l);
      }
      const base = `FROM metric_points WHERE project_id = ? AND time_ms >= ? AND time_ms < ?${w.sql}${qsql}`;
      const sql = `
        WITH pts AS (SELECT metric_name, type, unit, description, service_name, temporality, series_key, scope_name, start_ms, time_ms, count ${base}),
        runs AS (
          SELECT metric_name, type, service_name,
            CASE WHEN min(start_ms) >= ? AND min(start_ms) < min(time_ms) THEN max(count) ELSE max(count) - min(count) END AS growth
          FROM pts WHERE temporality = 'cumulative' AND type IN ('hist', 'exponential_histogram')
          GROUP BY metric_name, type, service_name, series_key, scope_name, start_ms
        ),
        cum AS (SELECT metric_name, type, service_name, sum(max(growth, 0)) AS samples FROM runs GROUP BY 1, 2, 3),
        agg AS (
          SELECT metric_name, type, service_name, max(unit) AS unit, max(description) AS description,
            min(time_ms) AS first_seen, max(time_ms) AS last_seen, count(*) AS point_count,
            sum(CASE WHEN type IN ('gauge', 'sum') THEN 1 WHEN temporality = 'cumulative' THEN 0 ELSE coalesce(count, 0) END) AS samples
          FROM pts GROUP BY metric_name, type, service_name
        )
        SELECT agg.metric_name, agg.type, agg.unit, agg.description, agg.service_name, agg.first_seen, agg.last_seen, agg.point_count,
          agg.samples + coalesce(cum.samples, 0) AS sample_count, count(*) OVER () AS total
        FROM agg LEFT JOIN cum USING (metric_name, type, service_name)
        ORDER BY agg.metric_name, agg.type, agg.service_name LIMIT ? OFFSET ?`;
      const rows = stmt(sql).all(...args, f.fromMs, page.limit, page.offset) as (MetricSeriesRow & { total: number })[];
      let total = rows[0]?.total;
      if (total === undefined) total = page.offset > 0 ? (stmt(`SELECT count(*) FROM (SELECT 1 ${base} GROUP BY metric_name, type, service_name)`).pluck().get(...args) as number) : 0;
      return { rows: rows.map(({ total: _t, ...r }) => r), total };
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
    points(projectId: string, m: MetricSelector, fromMs: number, toMs: number, baselineMs: number): MetricPointInput[] {
      const w = where({ service: m.service, environment: m.environment });
      const histo = m.type === 'hist' || m.type === 'exponential_histogram';
      const cols = histo ? 'count, sum, min, max, buckets' : 'value';
      // Each non-NULL value read costs about as much as any other, a NULL almost nothing: start time
      // and monotonicity, like series identity, only matter for cumulative points and are read as
      // NULL for the others, and so is the commonest temporality, delta (tp NULL).
      const rows = stmt(
        `SELECT CASE temporality WHEN 'cumulative' THEN 2 WHEN 'delta' THEN NULL ELSE 0 END AS tp,
           CASE WHEN temporality = 'cumulative' THEN monotonic END AS mo, CASE WHEN temporality = 'cumulative' THEN start_ms END AS st, time_ms,
           CASE WHEN temporality = 'cumulative' THEN series_key END AS sk, CASE WHEN temporality = 'cumulative' THEN scope_name END AS sc, ${cols}
         FROM metric_points WHERE project_id = ? AND metric_name = ? AND time_ms >= ? AND time_ms < ? AND type = ?${w.sql}
           AND (time_ms >= ? OR temporality = 'cumulative')`,
      )
        .raw()
        .all(Number(projectId), m.metricName, fromMs - baselineMs, toMs, m.type, ...w.args, fromMs) as any[][];
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
        out[i] = p;
      }
      return out;
    },

    /**
     * Metrics of the window by number of points (busiest first); with `nameQuery`, only names holding
     * it (case-insensitive).
     */
    busiest(projectId: string, f: { fromMs: number; toMs: number; service?: string; environment?: string; nameQuery?: string }, limit: number): BusyMetric[] {
      const w = where(f);
      const args: unknown[] = [Number(projectId), f.fromMs, f.toMs, ...w.args];
      let qsql = '';
      if (f.nameQuery) {
        qsql = " AND lower(metric_name) LIKE ? ESCAPE '\\'";
        args.push(likeArg(f.nameQuery));
      }
      const rows = stmt(
        `SELECT metric_name, type, max(unit) AS unit, count(*) AS point_count, json_group_array(DISTINCT service_name) AS services
         FROM metric_points WHERE project_id = ? AND time_ms >= ? AND time_ms < ?${w.sql}${qsql}
         GROUP BY metric_name, type ORDER BY point_count DESC, metric_name LIMIT ?`,
      ).all(...args, limit) as (Omit<BusyMetric, 'services'> & { services: string | null })[];
      return rows.map((r) => ({ ...r, services: (JSON.parse(r.services ?? '[]') as string[]).filter(Boolean) }));
    },
  };
}

export type MetricsReadRepo = ReturnType<typeof createMetricsReadRepo>;
