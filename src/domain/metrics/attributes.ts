/**
 * Metrics by attribute (issue 11 item 4): splitting a metric's points into `group_by` series, the
 * attribute keys and top values metrics.inspect lists, and the exemplars of each timeline bucket.
 */
import type { MetricExemplar } from '../telemetry-types.js';
import type { MetricPointInput } from './normalize.js';
import { bucketStart, checkBucketCount } from './window.js';

/** Most attribute keys one timeline can be grouped by. */
export const MAX_GROUP_BY = 3;
/** Exemplars returned per bucket at most (highest values first: the spike is what one follows). */
export const EXEMPLARS_PER_BUCKET = 5;

export interface PointGroup {
  /** Value of each group_by key (null when the point and its resource lack it). */
  group: Record<string, string | null>;
  points: MetricPointInput[];
  /** Measurements of the group in the window (points; Σ count for histograms): the busiest come first. */
  weight: number;
}

/**
 * Points split by their `group` (set by the repository for the group_by keys), busiest group
 * first (ties by values). Cumulative differencing stays correct: a series has one value per key.
 */
export function groupPoints(points: readonly MetricPointInput[], keys: readonly string[]): PointGroup[] {
  const by = new Map<string, PointGroup>();
  for (const p of points) {
    const k = p.group ?? '[]';
    let g = by.get(k);
    if (!g) {
      const values = JSON.parse(k) as (string | null)[];
      g = { group: Object.fromEntries(keys.map((key, i) => [key, values[i] ?? null])), points: [], weight: 0 };
      by.set(k, g);
    }
    g.points.push(p);
    g.weight += p.type === 'gauge' || p.type === 'sum' ? 1 : (p.count ?? 0);
  }
  return [...by.entries()].sort((a, b) => b[1].weight - a[1].weight || (a[0] < b[0] ? -1 : a[0] > b[0] ? 1 : 0)).map(([, g]) => g);
}

export interface BucketExemplar {
  time: string;
  value: number;
  trace_id: string | null;
  span_id: string | null;
  attributes: Record<string, unknown>;
}

/**
 * Exemplars of the points inside `[fromMs, toMs)`, per epoch-aligned bucket (by the exemplar's own
 * time, else its point's), highest value first, at most {@link EXEMPLARS_PER_BUCKET} each. Index =
 * bucket; undefined where a bucket has none.
 */
export function exemplarsByBucket(points: readonly MetricPointInput[], w: { fromMs: number; toMs: number; granularityMs: number }): (BucketExemplar[] | undefined)[] {
  const n = checkBucketCount(w.fromMs, w.toMs, w.granularityMs);
  const first = bucketStart(w.fromMs, w.granularityMs);
  const out: (BucketExemplar[] | undefined)[] = new Array(n);
  for (const p of points) {
    if (!p.exemplars || p.time_ms < w.fromMs || p.time_ms >= w.toMs) continue;
    let list: MetricExemplar[];
    try {
      list = JSON.parse(p.exemplars);
    } catch {
      continue;
    }
    for (const e of list) {
      const t = e.time_ms > 0 && e.time_ms >= w.fromMs && e.time_ms < w.toMs ? e.time_ms : p.time_ms;
      const i = Math.floor((t - first) / w.granularityMs);
      if (i < 0 || i >= n) continue;
      (out[i] ??= []).push({ time: new Date(t).toISOString(), value: e.value, trace_id: e.trace_id, span_id: e.span_id, attributes: e.attributes ?? {} });
    }
  }
  for (let i = 0; i < n; i++) {
    const l = out[i];
    if (l) out[i] = l.sort((a, b) => b.value - a.value || (a.time < b.time ? -1 : 1)).slice(0, EXEMPLARS_PER_BUCKET);
  }
  return out;
}

export interface AttributeKeyInfo {
  key: string;
  source: 'point' | 'resource';
  distinct_values: number;
  top_values: { value: string; count: number }[];
}

const valueText = (v: unknown): string => (typeof v === 'string' ? v : JSON.stringify(v));

/**
 * Keys of the sampled points' attributes (and of their resources) with how many distinct values
 * each has and the most frequent ones; point keys first, then by key.
 */
export function attributeKeys(points: readonly { attributes: string; resource: string }[], top: number): AttributeKeyInfo[] {
  const counts = new Map<string, { source: 'point' | 'resource'; key: string; values: Map<string, number> }>();
  const parsed = new Map<string, Record<string, unknown>>();
  const parse = (json: string) => {
    let v = parsed.get(json);
    if (!v) {
      try {
        v = JSON.parse(json) as Record<string, unknown>;
      } catch {
        v = {};
      }
      if (parsed.size < 10_000) parsed.set(json, v);
    }
    return v;
  };
  const add = (source: 'point' | 'resource', attrs: Record<string, unknown>) => {
    for (const [key, v] of Object.entries(attrs)) {
      if (v === null || v === undefined) continue;
      const id = `${source}\u0000${key}`;
      let c = counts.get(id);
      if (!c) counts.set(id, (c = { source, key, values: new Map() }));
      const t = valueText(v).slice(0, 256);
      c.values.set(t, (c.values.get(t) ?? 0) + 1);
    }
  };
  for (const p of points) {
    add('point', parse(p.attributes));
    add('resource', parse(p.resource));
  }
  return [...counts.values()]
    .sort((a, b) => (a.source === b.source ? (a.key < b.key ? -1 : a.key > b.key ? 1 : 0) : a.source === 'point' ? -1 : 1))
    .map((c) => ({
      key: c.key,
      source: c.source,
      distinct_values: c.values.size,
      top_values: [...c.values]
        .sort((a, b) => b[1] - a[1] || (a[0] < b[0] ? -1 : 1))
        .slice(0, top)
        .map(([value, count]) => ({ value, count })),
    }));
}
