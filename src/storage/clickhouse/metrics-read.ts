import type { MetricType } from '../../domain/telemetry-types.js';
import { normalizePoints, type MetricPointInput } from '../../domain/metrics/normalize.js';
import { addHistPoint, EXACT_PERCENTILE_VALUES, LN_GAMMA, newState, type BucketState } from '../../domain/metrics/rollup-state.js';
import { addReceived, MINUTE_MS } from '../metric-rollups.js';
import {
  bucketsOf,
  busiestFromCatalogue,
  seriesFromCatalogue,
  type CatalogRow,
  type MetricMeta,
  type MetricSelector,
  type MetricsReader,
  type RunRow,
} from '../metrics-read-repo.js';
import { lit, type ChEngine } from './client.js';
import { sqliteValueText } from './log-store.js';

/**
 * The metric reads (metrics-read-repo.ts) from the ClickHouse `metric_points` table (schema.ts,
 * migration 5), giving the SQLite repository's answers. There are no rollups: the catalogue
 * (metrics.list, the summary's busiest metrics) is aggregated from the window's points, and the
 * bucket states SQLite reads from its per-minute rollups are aggregated from the window's points
 * with the same rules: points taken as received (gauges, delta sums, delta histograms) per bucket in
 * ClickHouse — count, Σ, min, max and the value sketch's counts per (bucket, sign, ⌈ln|v| / ln γ⌉),
 * rollup-state.ts's keys — and cumulative sums read per series in time order and differenced as
 * normalize.ts does (the latest point of the hour before as baseline); explicit-histogram bucket
 * counts (percentiles) from the points. `rollupStates` answers null in
 * exactly the cases SQLite's does, so each operation takes the same path (rollup states or raw
 * points) on both backends. Attribute conditions compare the 'key\0value' texts the writer stored
 * (metric-store.ts), a point attribute taking precedence over the resource's, as SQLite's COALESCE.
 */

const HOUR = 3_600_000;

/** `col` starts with `prefix` (bytes), on 18.16 as on current releases. */
const startsWith = (col: string, prefix: string) => `substring(${col}, 1, ${Buffer.byteLength(prefix)}) = ${lit(prefix)}`;

/** The attribute key SQLite's json path names (`$."key"`, quotes removed). */
const pathKey = (key: string) => key.replace(/"/g, '');

function where(f: { service?: string; environment?: string; type?: MetricType }): string {
  let out = '';
  if (f.type !== undefined) out += ` AND type = ${lit(f.type)}`;
  if (f.service !== undefined) out += ` AND service_name = ${lit(f.service)}`;
  if (f.environment !== undefined) out += ` AND environment = ${lit(f.environment)}`;
  return out;
}

/** A selector's attribute conditions: the point's value when it has one, else the resource's. */
function attrWhere(m: MetricSelector): string {
  let out = '';
  for (const a of m.attributes ?? []) {
    const k = pathKey(a.key);
    const pair = lit(`${k}\u0000${a.value}`);
    out += ` AND (has(attr_kv, ${pair}) OR (NOT arrayExists(x -> ${startsWith('x', `${k}\u0000`)}, attr_kv) AND has(res_kv, ${pair})))`;
  }
  return out;
}

const parseObject = (json: string): Record<string, unknown> => {
  try {
    const v = JSON.parse(json);
    return v && typeof v === 'object' && !Array.isArray(v) ? v : {};
  } catch {
    return {};
  }
};

/** SQLite's `lower(x) LIKE '%q%'` (ASCII lower-casing, the pattern lower-cased as given) on 18.16 and current releases. */
const contains = (col: string, q: string) => `position(lower(${col}), ${lit(q.toLowerCase())}) > 0`;

const SAMPLES = "multiIf(type IN ('gauge', 'sum'), 1., temporality = 'cumulative', 0., ifNull(count, 0.))";
const KEY = 'metric_name, type, service_name, environment, unit';

interface PointRow {
  temporality: string;
  monotonic: number;
  start_ms: number | null;
  time_ms: number;
  sk: string;
  sc: string;
  value?: number | null;
  count?: number | null;
  sum?: number | null;
  min?: number | null;
  max?: number | null;
  buckets?: string;
  exemplars: string;
  attributes?: string;
  resource?: string;
}

export function createChMetricsReader(engine: ChEngine): MetricsReader {
  const settings = { rollupReads: true, coarseLevels: true };

  /** The window's catalogue rows (and with `withRuns` cumulative histogram runs), from the points. */
  async function catalogue(
    projectId: string,
    f: { fromMs: number; toMs: number; type?: MetricType; service?: string; environment?: string },
    text: string | undefined,
    withRuns: boolean,
  ): Promise<{ rows: CatalogRow[]; runs: RunRow[] }> {
    let cond = `project_id = ${lit(Number(projectId))} AND time_ms >= ${lit(f.fromMs)} AND time_ms < ${lit(f.toMs)}${where(f)}`;
    if (text !== undefined && text !== '') {
      cond += withRuns ? ` AND (${contains('metric_name', text)} OR ${contains('unit', text)} OR ${contains('service_name', text)})` : ` AND ${contains('metric_name', text)}`;
    }
    const rows = (
      await engine.query<CatalogRow>(
        `SELECT ${KEY}, max(description) AS description, min(time_ms) AS first_ms, max(time_ms) AS last_ms, count() AS point_count, sum(${SAMPLES}) AS samples
         FROM metric_points WHERE ${cond} GROUP BY ${KEY}`,
      )
    ).map((r) => ({ ...r, point_count: Number(r.point_count), samples: Number(r.samples) }));
    const runs = withRuns
      ? (
          await engine.query<RunRow>(
            `SELECT metric_name, type, service_name, series_key, scope_name, ifNull(start_ms, -1.) AS start, min(time_ms) AS first_ms, min(count) AS min_count,
               max(count) AS max_count
             FROM metric_points WHERE ${cond} AND temporality = 'cumulative' AND type IN ('hist', 'exponential_histogram')
             GROUP BY metric_name, type, service_name, series_key, scope_name, start`,
          )
        ).map((r) => ({ ...r, start_ms: Number((r as unknown as { start: number }).start) }))
      : [];
    return { rows, runs };
  }

  async function points(
    projectId: string,
    m: MetricSelector,
    fromMs: number,
    toMs: number,
    baselineMs: number,
    opts: { groupBy?: readonly string[]; cumulativeOnly?: boolean } = {},
  ): Promise<MetricPointInput[]> {
    const groupBy = opts.groupBy ?? [];
    const histo = m.type === 'hist' || m.type === 'exponential_histogram';
    const cols = histo ? 'count, sum, min, max, buckets' : 'value';
    const rows = await engine.query<PointRow>(
      // Series identity only for cumulative points (the only ones differenced), as SQLite's reader.
      `SELECT temporality, monotonic, start_ms, time_ms, if(temporality = 'cumulative', series_key, '') AS sk,
         if(temporality = 'cumulative', scope_name, '') AS sc, ${cols}, exemplars${groupBy.length ? ', attributes, resource' : ''}
       FROM metric_points WHERE project_id = ${lit(Number(projectId))} AND metric_name = ${lit(m.metricName)} AND time_ms >= ${lit(fromMs - baselineMs)}
         AND time_ms < ${lit(toMs)} AND type = ${lit(m.type)}${where({ service: m.service, environment: m.environment })}${attrWhere(m)}
         AND (time_ms >= ${lit(fromMs)} OR temporality = 'cumulative')${opts.cumulativeOnly ? " AND temporality = 'cumulative'" : ''}
       ORDER BY time_ms, id`,
    );
    const type = m.type;
    const out: MetricPointInput[] = new Array(rows.length);
    for (let i = 0; i < rows.length; i++) {
      const r = rows[i]!;
      const cum = r.temporality === 'cumulative';
      // As SQLite's reader: series identity, start and monotonicity only for cumulative points.
      const p: MetricPointInput = {
        type,
        temporality: cum ? 'cumulative' : r.temporality === 'delta' ? 'delta' : 'unspecified',
        monotonic: cum && Number(r.monotonic) === 1,
        start_ms: cum ? r.start_ms : null,
        time_ms: r.time_ms,
        series_key: cum ? r.sk : '',
        scope_name: cum ? r.sc : '',
      };
      if (!histo) {
        if (r.value !== null && r.value !== undefined) p.value = r.value;
      } else {
        if (r.count !== null && r.count !== undefined) p.count = r.count;
        p.sum = r.sum ?? null;
        p.min = r.min ?? null;
        p.max = r.max ?? null;
        if (r.buckets) Object.assign(p, bucketsOf(type, r.buckets));
      }
      if (r.exemplars) p.exemplars = r.exemplars;
      if (groupBy.length) {
        const a = parseObject(r.attributes ?? '{}');
        const res = parseObject(r.resource ?? '{}');
        p.group = JSON.stringify(groupBy.map((k) => sqliteValueText(a[pathKey(k)]) ?? sqliteValueText(res[pathKey(k)]) ?? null));
      }
      out[i] = p;
    }
    return out;
  }

  const reader: MetricsReader = {
    settings,

    async listSeries(projectId, f, page) {
      const { rows, runs } = await catalogue(projectId, f, f.q, true);
      return seriesFromCatalogue(rows, runs, f, page);
    },

    async busiest(projectId, f, limit) {
      const { rows } = await catalogue(projectId, f, f.nameQuery || undefined, false);
      return busiestFromCatalogue(rows, limit);
    },

    async meta(projectId, m, beforeMs) {
      const base = `SELECT unit, description, temporality FROM metric_points WHERE project_id = ${lit(Number(projectId))} AND metric_name = ${lit(m.metricName)}
        AND type = ${lit(m.type)}${where({ service: m.service, environment: m.environment })}`;
      const [r] = await engine.query<MetricMeta>(`${base} AND time_ms < ${lit(beforeMs)} ORDER BY time_ms DESC, id DESC LIMIT 1`);
      if (r) return r;
      const [any] = await engine.query<MetricMeta>(`${base} ORDER BY time_ms, id LIMIT 1`);
      return any ?? null;
    },

    points,

    async attributeValues(projectId, m, fromMs, toMs, sample) {
      const rows = await engine.query<{ attributes: string; resource: string }>(
        `SELECT attributes, resource FROM metric_points WHERE project_id = ${lit(Number(projectId))} AND metric_name = ${lit(m.metricName)}
           AND time_ms >= ${lit(fromMs)} AND time_ms < ${lit(toMs)} AND type = ${lit(m.type)}${where({ service: m.service, environment: m.environment })}${attrWhere(m)}
         ORDER BY time_ms DESC, id DESC LIMIT ${Math.trunc(sample)}`,
      );
      return { points: rows.map((r) => ({ attributes: r.attributes, resource: r.resource || '{}' })) };
    },

    async exemplarPoints(projectId, m, fromMs, toMs) {
      const rows = await engine.query<{ time_ms: number; exemplars: string }>(
        `SELECT time_ms, exemplars FROM metric_points WHERE project_id = ${lit(Number(projectId))} AND metric_name = ${lit(m.metricName)}
           AND time_ms >= ${lit(fromMs)} AND time_ms < ${lit(toMs)} AND exemplars != '' AND type = ${lit(m.type)}${where({ service: m.service, environment: m.environment })}
         ORDER BY time_ms, id`,
      );
      return rows.map((r) => ({ type: m.type, temporality: 'delta', start_ms: null, time_ms: r.time_ms, series_key: '', scope_name: '', exemplars: r.exemplars }));
    },

    /**
     * SQLite's rollup states (metrics-read-repo.ts rollupStates), from the points: null where SQLite
     * answers null (rollup reads off, attribute conditions, exponential histograms, a window without
     * a whole minute, cumulative histogram points in the window, a gauge or sum percentile over at
     * most EXACT_PERCENTILE_VALUES values); else each bucket's state of the window's contributions.
     */
    async rollupStates(projectId, m, fromMs, toMs, b, withDist) {
      if (!settings.rollupReads || m.attributes?.length || m.type === 'exponential_histogram') return null;
      const A = Math.ceil(fromMs / MINUTE_MS) * MINUTE_MS;
      const B = Math.floor(toMs / MINUTE_MS) * MINUTE_MS;
      if (A >= B) return null;
      const valueType = m.type === 'gauge' || m.type === 'sum';
      const states: BucketState[] = Array.from({ length: b.n }, () => newState(withDist && valueType));
      const at = (ms: number) => states[Math.floor((ms - b.first) / b.size)];
      const pid = Number(projectId);
      const range = `project_id = ${lit(pid)} AND metric_name = ${lit(m.metricName)} AND type = ${lit(m.type)} AND time_ms >= ${lit(fromMs)} AND time_ms < ${lit(toMs)}${where({ service: m.service, environment: m.environment })}`;
      const bucket = `toInt64(floor((time_ms - ${lit(b.first)}) / ${lit(b.size)}))`;
      const inRange = (i: number) => i >= 0 && i < b.n;

      if (m.type === 'hist') {
        // SQLite takes the raw path for a window holding cumulative histogram points.
        const [c] = await engine.query<{ n: number }>(`SELECT count() AS n FROM metric_points WHERE ${range} AND temporality = 'cumulative'`);
        if (Number(c?.n ?? 0) > 0) return null;
        if (withDist) {
          // Bucket counts per bounds: from the points (normalize.ts), as SQLite's raw edges.
          for (const p of normalizePoints(await points(projectId, m, fromMs, toMs, 0), { fromMs, toMs })) {
            const s = at(p.time_ms);
            if (s) addHistPoint(s, { ...p, count: p.count as number }, true);
          }
          return states;
        }
        // Points taken as received, aggregated per bucket (rollup-state.ts addHistPoint's fields).
        const rows = await engine.query<Record<string, number>>(
          `SELECT ${bucket} AS b, count() AS n, sum(ifNull(count, 0.)) AS hcount, sum(ifNull(sum, 0.)) AS hsum, countIf(isNotNull(sum)) AS hsum_n,
             sum(if(isNull(sum), 0., ifNull(count, 0.))) AS hsum_count, countIf(ifNull(count, 0.) > 0) AS live,
             minIf(ifNull(min, 0.), ifNull(count, 0.) > 0 AND isNotNull(min)) AS lmin, countIf(ifNull(count, 0.) > 0 AND isNotNull(min)) AS lmin_n,
             maxIf(ifNull(max, 0.), ifNull(count, 0.) > 0 AND isNotNull(max)) AS lmax, countIf(ifNull(count, 0.) > 0 AND isNotNull(max)) AS lmax_n
           FROM metric_points WHERE ${range} AND isNotNull(count) GROUP BY b`,
        );
        for (const r of rows) {
          const i = Number(r.b);
          if (!inRange(i)) continue;
          const s = states[i]!;
          s.n += Number(r.n);
          s.hcount += Number(r.hcount);
          s.hsum += Number(r.hsum);
          s.hsumN += Number(r.hsum_n);
          s.hsumCount += Number(r.hsum_count);
          s.live += Number(r.live);
          if (Number(r.lmin_n) > 0) s.lmin = Math.min(s.lmin, Number(r.lmin));
          s.lminN += Number(r.lmin_n);
          if (Number(r.lmax_n) > 0) s.lmax = Math.max(s.lmax, Number(r.lmax));
          s.lmaxN += Number(r.lmax_n);
        }
        return states;
      }

      // Gauge values and delta (or unspecified) sums, taken as received: count, Σ, min and max per
      // bucket and, for percentiles, the sketch's counts per (bucket, sign, log key) — the key as
      // rollup-state.ts sketchAdd computes it (⌈ln|v| / ln γ⌉).
      const received = `${range} AND isNotNull(value)${m.type === 'sum' ? " AND temporality != 'cumulative'" : ''}`;
      const agg = await engine.query<{ b: number; n: number; vsum: number; vmin: number; vmax: number }>(
        `SELECT ${bucket} AS b, count() AS n, sum(ifNull(value, 0.)) AS vsum, min(ifNull(value, 0.)) AS vmin, max(ifNull(value, 0.)) AS vmax
         FROM metric_points WHERE ${received} GROUP BY b`,
      );
      for (const r of agg) {
        const i = Number(r.b);
        if (!inRange(i)) continue;
        const s = states[i]!;
        s.n += Number(r.n);
        s.vsum += Number(r.vsum);
        if (Number(r.vmin) < s.vmin) s.vmin = Number(r.vmin);
        if (Number(r.vmax) > s.vmax) s.vmax = Number(r.vmax);
      }
      if (withDist) {
        const keyed = await engine.query<{ b: number; sg: number; k: number; cnt: number }>(
          `SELECT ${bucket} AS b, multiIf(ifNull(value, 0.) > 0, 1, ifNull(value, 0.) < 0, -1, 0) AS sg,
             if(ifNull(value, 0.) = 0, toInt64(0), toInt64(ceil(log(abs(ifNull(value, 0.))) / ${lit(LN_GAMMA)}))) AS k, count() AS cnt
           FROM metric_points WHERE ${received} GROUP BY b, sg, k`,
        );
        for (const r of keyed) {
          const i = Number(r.b);
          const sk = inRange(i) ? states[i]!.sketch : null;
          if (!sk) continue;
          const cnt = Number(r.cnt);
          if (Number(r.sg) === 0) sk.z += cnt;
          else {
            const mp = Number(r.sg) > 0 ? sk.p : sk.n;
            mp.set(Number(r.k), (mp.get(Number(r.k)) ?? 0) + cnt);
          }
        }
      }
      if (m.type === 'sum') {
        // Cumulative sums: each series' points in time order, differenced as normalize.ts does, with
        // the latest point of the hour before the window as baseline.
        const cum = await points(projectId, m, fromMs, toMs, HOUR, { cumulativeOnly: true });
        for (const c of normalizePoints(cum, { fromMs, toMs, baselineMs: HOUR })) {
          const s = at(c.time_ms);
          if (s) addReceived(s, c);
        }
      }
      if (withDist && states.reduce((t, x) => t + x.n, 0) <= EXACT_PERCENTILE_VALUES) return null;
      return states;
    },
  };
  return reader;
}
