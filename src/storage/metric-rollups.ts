/**
 * Per-minute metric rollups (issue 19, item 6; migration 040): what metrics.timeline,
 * metrics.inspect and observability.summary read instead of every point of the window.
 *
 * - `metric_rollups`: per project, metric name, minute, type, service and environment, the
 *   {@link BucketState} of the minute's points that are taken as received (gauges, delta and
 *   unspecified sums and histograms): count, Σ / min / max of values, last value, a 1% value sketch
 *   (gauge/sum percentiles), Σ count / Σ sum / min / max of histograms and their bucket counts per
 *   bounds; plus `other_points`, the cumulative histogram points of the minute (not rolled up: reads
 *   of a window holding any take the raw path).
 * - `metric_cum_rollups`: per project, metric name, minute and series (series key, which fixes
 *   service and environment), the minute's cumulative sum points: the first and last point (time,
 *   value, start, monotonicity) and the state of the contributions of the points after the first,
 *   each differenced against the point before it in the same minute (normalize.ts rules). A read
 *   computes the first point's contribution against the series' previous point (the previous row's
 *   last point, in SQL with LAG), so contributions equal the raw computation's.
 *
 * Both are written in the ingest transaction from the rows just inserted ({@link createMetricRollupWriter}):
 * a non-cumulative row merges states; a series-minute row is extended when the new points come after
 * its last one, else recomputed from the stored points of that series and minute.
 */
import type { Statement } from 'better-sqlite3';
import type { Db } from './db.js';
import type { MetricType } from '../domain/telemetry-types.js';
import { cumulativeContribution, type MetricPointInput } from '../domain/metrics/normalize.js';
import {
  addHistPoint,
  addValue,
  mergeState,
  newState,
  sketchFromJson,
  sketchMergeJson,
  sketchToJson,
  type BucketState,
} from '../domain/metrics/rollup-state.js';

export const MINUTE_MS = 60_000;
export const HOUR_MS = 3_600_000;

/**
 * The rollup levels (migration 047 adds the coarse ones): the same two tables per period, their
 * `minute` column holding the period's first minute (epoch ms). Reads take the coarsest level whose
 * periods fit their buckets and finer ones at the edges (metrics-read-repo.ts rollupStates).
 */
export const ROLLUP_LEVELS = [
  { period: MINUTE_MS, nc: 'metric_rollups', cum: 'metric_cum_rollups' },
  { period: 5 * MINUTE_MS, nc: 'metric_rollups_5m', cum: 'metric_cum_rollups_5m' },
  { period: HOUR_MS, nc: 'metric_rollups_1h', cum: 'metric_cum_rollups_1h' },
] as const;
export type RollupLevel = (typeof ROLLUP_LEVELS)[number];

export const METRIC_ROLLUPS_SQL = `
CREATE TABLE metric_rollups (
  project_id INTEGER NOT NULL,
  metric_name TEXT NOT NULL,
  minute INTEGER NOT NULL,
  type TEXT NOT NULL,
  service_name TEXT NOT NULL,
  environment TEXT NOT NULL,
  points INTEGER NOT NULL,
  other_points INTEGER NOT NULL,
  vsum REAL NOT NULL,
  vmin REAL,
  vmax REAL,
  last_ms REAL,
  last_value REAL,
  sketch TEXT,
  hcount REAL NOT NULL,
  hsum REAL NOT NULL,
  hsum_n INTEGER NOT NULL,
  hsum_count REAL NOT NULL,
  live INTEGER NOT NULL,
  lmin REAL,
  lmin_n INTEGER NOT NULL,
  lmax REAL,
  lmax_n INTEGER NOT NULL,
  hist TEXT,
  PRIMARY KEY (project_id, metric_name, minute, type, service_name, environment)
) WITHOUT ROWID;
CREATE TABLE metric_cum_rollups (
  project_id INTEGER NOT NULL,
  metric_name TEXT NOT NULL,
  minute INTEGER NOT NULL,
  series_key TEXT NOT NULL,
  scope_name TEXT NOT NULL,
  service_name TEXT NOT NULL,
  environment TEXT NOT NULL,
  points INTEGER NOT NULL,
  first_ms REAL NOT NULL,
  first_value REAL NOT NULL,
  first_start REAL,
  first_monotonic INTEGER NOT NULL,
  last_ms REAL NOT NULL,
  last_value REAL NOT NULL,
  last_start REAL,
  last_monotonic INTEGER NOT NULL,
  n INTEGER NOT NULL,
  isum REAL NOT NULL,
  imin REAL,
  imax REAL,
  sketch TEXT,
  PRIMARY KEY (project_id, metric_name, minute, series_key)
) WITHOUT ROWID;
CREATE INDEX metric_rollups_minute ON metric_rollups(project_id, minute);
CREATE INDEX metric_cum_rollups_minute ON metric_cum_rollups(project_id, minute);
CREATE INDEX metric_points_exemplars ON metric_points(project_id, metric_name, time_ms) WHERE exemplars IS NOT NULL;
`;

/** Migration 047: the tables of the 5-minute and hourly levels (as migration 040's), and the first period they cover. */
export function coarseRollupsSql(): string {
  const tables = METRIC_ROLLUPS_SQL.slice(0, METRIC_ROLLUPS_SQL.indexOf('CREATE INDEX'));
  let out = '';
  for (const l of ROLLUP_LEVELS.slice(1)) {
    out += tables.replace('CREATE TABLE metric_rollups (', `CREATE TABLE ${l.nc} (`).replace('CREATE TABLE metric_cum_rollups (', `CREATE TABLE ${l.cum} (`);
    out += `CREATE INDEX ${l.nc}_minute ON ${l.nc}(project_id, minute);\nCREATE INDEX ${l.cum}_minute ON ${l.cum}(project_id, minute);\n`;
  }
  // Coarse periods are read only from \`since\` on: the first hour after every point rolled up per
  // minute when the migration ran (earlier periods lack the points from before it: read per minute).
  out += 'CREATE TABLE metric_rollup_levels (since INTEGER NOT NULL);\n';
  out += `INSERT INTO metric_rollup_levels (since) SELECT coalesce((CAST(max(m) / ${HOUR_MS} AS INTEGER) + 1) * ${HOUR_MS}, 0) FROM
    (SELECT max(minute) AS m FROM metric_rollups UNION ALL SELECT max(minute) FROM metric_cum_rollups);\n`;
  return out;
}

/** A stored point as the rollups read it (metric_points columns). */
export interface StoredPoint {
  rowid: number;
  project_id: number;
  metric_name: string;
  type: MetricType;
  temporality: string;
  monotonic: number;
  service_name: string;
  environment: string;
  series_key: string;
  scope_name: string;
  start_ms: number | null;
  time_ms: number;
  value: number | null;
  count: number | null;
  sum: number | null;
  min: number | null;
  max: number | null;
  buckets: string | null;
}

export const STORED_POINT_COLS =
  'rowid, project_id, metric_name, type, temporality, monotonic, service_name, environment, series_key, scope_name, start_ms, time_ms, value, count, sum, min, max, buckets';

const isNum = (v: unknown): v is number => typeof v === 'number' && Number.isFinite(v);

const NC_COLS =
  'project_id, metric_name, minute, type, service_name, environment, points, other_points, vsum, vmin, vmax, last_ms, last_value, sketch, hcount, hsum, hsum_n, hsum_count, live, lmin, lmin_n, lmax, lmax_n, hist';
const CUM_COLS =
  'project_id, metric_name, minute, series_key, scope_name, service_name, environment, points, first_ms, first_value, first_start, first_monotonic, last_ms, last_value, last_start, last_monotonic, n, isum, imin, imax, sketch';

interface NcRow {
  points: number;
  other_points: number;
  vsum: number;
  vmin: number | null;
  vmax: number | null;
  last_ms: number | null;
  last_value: number | null;
  sketch: string | null;
  hcount: number;
  hsum: number;
  hsum_n: number;
  hsum_count: number;
  live: number;
  lmin: number | null;
  lmin_n: number;
  lmax: number | null;
  lmax_n: number;
  hist: string | null;
}

/** A rollup row's state (sketch and histogram counts included when the row has them). */
export function ncRowState(r: Omit<NcRow, 'other_points' | 'last_ms' | 'last_value'>, withDist: boolean): BucketState {
  const s = newState(false);
  s.n = r.points;
  s.vsum = r.vsum;
  s.vmin = r.vmin ?? Infinity;
  s.vmax = r.vmax ?? -Infinity;
  if (withDist && r.sketch) s.sketch = sketchFromJson(r.sketch);
  s.hcount = r.hcount;
  s.hsum = r.hsum;
  s.hsumN = r.hsum_n;
  s.hsumCount = r.hsum_count;
  s.live = r.live;
  s.lmin = r.lmin ?? Infinity;
  s.lminN = r.lmin_n;
  s.lmax = r.lmax ?? -Infinity;
  s.lmaxN = r.lmax_n;
  if (withDist && r.hist) s.hists = JSON.parse(r.hist);
  return s;
}

const fin = (v: number) => (Number.isFinite(v) ? v : null);

/** A stored cumulative sum point as normalize.ts takes it. */
export const cumInput = (p: { monotonic: number; start_ms: number | null; time_ms: number; value: number | null; series_key: string; scope_name: string }): MetricPointInput => ({
  type: 'sum',
  temporality: 'cumulative',
  monotonic: p.monotonic === 1,
  start_ms: p.start_ms,
  time_ms: p.time_ms,
  value: p.value as number,
  series_key: p.series_key,
  scope_name: p.scope_name,
});

/** Whether a stored point is a cumulative sum point normalize.ts uses. */
const isCumSum = (p: StoredPoint) => p.type === 'sum' && p.temporality === 'cumulative';
const isCumHist = (p: StoredPoint) => p.temporality === 'cumulative' && (p.type === 'hist' || p.type === 'exponential_histogram');

/** Adds a point taken as received to a state (normalize.ts fullContribution); false when unusable. */
export function addReceived(s: BucketState, p: { type: MetricType; value?: number | null; count?: number | null; sum?: number | null; min?: number | null; max?: number | null; explicit_bounds?: number[]; bucket_counts?: number[] }): void {
  if (p.type === 'gauge' || p.type === 'sum') {
    if (isNum(p.value)) addValue(s, p.value);
    return;
  }
  if (!isNum(p.count)) return;
  addHistPoint(s, { ...p, count: p.count }, p.type === 'hist');
}

function parseBuckets(p: StoredPoint): { explicit_bounds?: number[]; bucket_counts?: number[] } {
  if (p.type !== 'hist' || !p.buckets) return {};
  const b = JSON.parse(p.buckets) as { bucket_counts?: number[]; explicit_bounds?: number[] | null };
  return { bucket_counts: b.bucket_counts ?? [], explicit_bounds: b.explicit_bounds ?? [] };
}

function createLevelWriter(db: Db, level: RollupLevel) {
  const periodOf = (ms: number) => Math.floor(ms / level.period) * level.period;
  const s = {
    ncGet: db.prepare(
      `SELECT points, other_points, vsum, vmin, vmax, last_ms, last_value, sketch, hcount, hsum, hsum_n, hsum_count, live, lmin, lmin_n, lmax, lmax_n, hist
       FROM ${level.nc} WHERE project_id = ? AND metric_name = ? AND minute = ? AND type = ? AND service_name = ? AND environment = ?`,
    ),
    ncPut: db.prepare(`INSERT OR REPLACE INTO ${level.nc} (${NC_COLS}) VALUES (${NC_COLS.split(',').map(() => '?').join(', ')})`),
    cumGet: db.prepare(
      `SELECT points, first_ms, first_value, first_start, first_monotonic, last_ms, last_value, last_start, last_monotonic, n, isum, imin, imax, sketch
       FROM ${level.cum} WHERE project_id = ? AND metric_name = ? AND minute = ? AND series_key = ?`,
    ),
    cumPut: db.prepare(`INSERT OR REPLACE INTO ${level.cum} (${CUM_COLS}) VALUES (${CUM_COLS.split(',').map(() => '?').join(', ')})`),
    cumPoints: db.prepare(
      `SELECT monotonic, start_ms, time_ms, value, series_key, scope_name FROM metric_points
       WHERE project_id = ? AND metric_name = ? AND time_ms >= ? AND time_ms < ? AND series_key = ? AND type = 'sum' AND temporality = 'cumulative'
       ORDER BY time_ms, rowid`,
    ),
  };

  type CumRow = {
    points: number;
    first_ms: number;
    first_value: number;
    first_start: number | null;
    first_monotonic: number;
    last_ms: number;
    last_value: number;
    last_start: number | null;
    last_monotonic: number;
    n: number;
    isum: number;
    imin: number | null;
    imax: number | null;
    sketch: string | null;
  };

  function cumFrom(points: MetricPointInput[], start: { prev: MetricPointInput; row: CumRow } | null): CumRow {
    const st = newState(true);
    let first: MetricPointInput;
    let prev: MetricPointInput;
    let count: number;
    if (start) {
      st.n = start.row.n;
      st.vsum = start.row.isum;
      st.vmin = start.row.imin ?? Infinity;
      st.vmax = start.row.imax ?? -Infinity;
      if (start.row.sketch) st.sketch = sketchFromJson(start.row.sketch);
      first = { ...start.prev, time_ms: start.row.first_ms, value: start.row.first_value, start_ms: start.row.first_start, monotonic: start.row.first_monotonic === 1 };
      prev = start.prev;
      count = start.row.points;
    } else {
      first = points[0]!;
      prev = first;
      count = 1;
      points = points.slice(1);
    }
    for (const p of points) {
      addValue(st, cumulativeContribution(prev, p, 0).value as number);
      prev = p;
      count++;
    }
    return {
      points: count,
      first_ms: first.time_ms,
      first_value: first.value as number,
      first_start: first.start_ms ?? null,
      first_monotonic: first.monotonic ? 1 : 0,
      last_ms: prev.time_ms,
      last_value: prev.value as number,
      last_start: prev.start_ms ?? null,
      last_monotonic: prev.monotonic ? 1 : 0,
      n: st.n,
      isum: st.vsum,
      imin: fin(st.vmin),
      imax: fin(st.vmax),
      sketch: st.n ? sketchToJson(st.sketch!) : null,
    };
  }

  /** Adds stored points (in rowid order) to the rollups. */
  function apply(rows: readonly StoredPoint[]): void {
    const nc = new Map<string, { p: StoredPoint; st: BucketState; other: number; lastMs: number | null; lastValue: number | null }>();
    const cum = new Map<string, StoredPoint[]>();
    for (const p of rows) {
      if (isCumSum(p)) {
        if (!isNum(p.value)) continue;
        const k = `${p.project_id}\u0000${p.metric_name}\u0000${periodOf(p.time_ms)}\u0000${p.series_key}`;
        let l = cum.get(k);
        if (!l) cum.set(k, (l = []));
        l.push(p);
        continue;
      }
      const k = `${p.project_id}\u0000${p.metric_name}\u0000${periodOf(p.time_ms)}\u0000${p.type}\u0000${p.service_name}\u0000${p.environment}`;
      let g = nc.get(k);
      if (!g) nc.set(k, (g = { p, st: newState(p.type === 'gauge' || p.type === 'sum'), other: 0, lastMs: null, lastValue: null }));
      if (isCumHist(p)) {
        g.other++;
        continue;
      }
      const before = g.st.n;
      addReceived(g.st, { type: p.type, value: p.value, count: p.count, sum: p.sum, min: p.min, max: p.max, ...parseBuckets(p) });
      if (g.st.n > before && (g.lastMs === null || p.time_ms >= g.lastMs) && (p.type === 'gauge' || p.type === 'sum')) {
        g.lastMs = p.time_ms;
        g.lastValue = p.value;
      }
    }
    for (const g of nc.values()) {
      const { p } = g;
      const key = [p.project_id, p.metric_name, periodOf(p.time_ms), p.type, p.service_name, p.environment];
      const old = s.ncGet.get(...key) as NcRow | undefined;
      let st = g.st;
      let other = g.other;
      let lastMs = g.lastMs;
      let lastValue = g.lastValue;
      if (old) {
        const o = ncRowState(old, true);
        if (!o.sketch && (p.type === 'gauge' || p.type === 'sum')) o.sketch = newState(true).sketch;
        mergeState(o, st);
        st = o;
        other += old.other_points;
        if (old.last_ms !== null && (lastMs === null || old.last_ms > lastMs)) {
          lastMs = old.last_ms;
          lastValue = old.last_value;
        }
      }
      s.ncPut.run(
        ...key,
        st.n,
        other,
        st.vsum,
        fin(st.vmin),
        fin(st.vmax),
        lastMs,
        lastValue,
        st.sketch && st.n ? sketchToJson(st.sketch) : null,
        st.hcount,
        st.hsum,
        st.hsumN,
        st.hsumCount,
        st.live,
        fin(st.lmin),
        st.lminN,
        fin(st.lmax),
        st.lmaxN,
        st.hists.length ? JSON.stringify(st.hists) : null,
      );
    }
    for (const list of cum.values()) {
      const p0 = list[0]!;
      const minute = periodOf(p0.time_ms);
      const key = [p0.project_id, p0.metric_name, minute, p0.series_key];
      const pts = list.map(cumInput).sort((a, b) => a.time_ms - b.time_ms); // stable: rowid order on ties
      const old = s.cumGet.get(...key) as CumRow | undefined;
      let row: CumRow;
      if (!old) row = cumFrom(pts, null);
      else if (pts[0]!.time_ms > old.last_ms) {
        const prev = cumInput({ monotonic: old.last_monotonic, start_ms: old.last_start, time_ms: old.last_ms, value: old.last_value, series_key: p0.series_key, scope_name: p0.scope_name });
        row = cumFrom(pts, { prev, row: old });
      } else {
        const all = (s.cumPoints.all(p0.project_id, p0.metric_name, minute, minute + level.period, p0.series_key) as Parameters<typeof cumInput>[0][])
          .filter((r) => isNum(r.value))
          .map(cumInput);
        row = cumFrom(all, null);
      }
      s.cumPut.run(
        ...key,
        p0.scope_name,
        p0.service_name,
        p0.environment,
        row.points,
        row.first_ms,
        row.first_value,
        row.first_start,
        row.first_monotonic,
        row.last_ms,
        row.last_value,
        row.last_start,
        row.last_monotonic,
        row.n,
        row.isum,
        row.imin,
        row.imax,
        row.sketch,
      );
    }
  }

  return apply;
}

export function createMetricRollupWriter(db: Db) {
  const levels = ROLLUP_LEVELS.map((l) => createLevelWriter(db, l));
  /** Adds stored points (in rowid order) to the rollups of every level. */
  const apply = (rows: readonly StoredPoint[]) => {
    for (const a of levels) a(rows);
  };
  const sinceRowid = db.prepare(`SELECT ${STORED_POINT_COLS} FROM metric_points WHERE rowid >= ? ORDER BY rowid`);
  return {
    apply,
    /** Adds the points with rowid >= `first` (the batch just inserted). */
    applySince(first: number): void {
      apply(sinceRowid.all(first) as StoredPoint[]);
    },
  };
}

/** Migration 040's backfill: every stored point, in rowid pages (the per-minute level only). */
export function backfillMetricRollups(db: Db): void {
  const apply = createLevelWriter(db, ROLLUP_LEVELS[0]);
  const w = { apply };
  const page = db.prepare(`SELECT ${STORED_POINT_COLS} FROM metric_points WHERE rowid > ? ORDER BY rowid LIMIT 5000`);
  let after = 0;
  for (;;) {
    const rows = page.all(after) as StoredPoint[];
    if (!rows.length) break;
    w.apply(rows);
    after = rows[rows.length - 1]!.rowid;
  }
}

export type StatementCache = (sql: string) => Statement;
