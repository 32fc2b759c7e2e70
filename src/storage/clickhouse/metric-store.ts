import { createHash } from 'node:crypto';
import type { Attributes, MetricPointRecord } from '../../domain/telemetry-types.js';
import { environmentOf } from '../sqlite-telemetry-store.js';
import type { ChEngine } from './client.js';
import { createBatchBuffer, NO_PACING, rowArrays, type BufferPacing } from './batch-buffer.js';
import { kv, nextLogId } from './log-store.js';

/** A metric point as its ClickHouse row (schema.ts, migration 5, table `metric_points`). */
export interface ChMetricRow {
  project_id: number;
  metric_name: string;
  time_ms: number;
  id: number;
  type: string;
  unit: string;
  description: string;
  temporality: string;
  monotonic: number;
  service_name: string;
  environment: string;
  series_key: string;
  scope_name: string;
  start_ms: number | null;
  value: number | null;
  count: number | null;
  sum: number | null;
  min: number | null;
  max: number | null;
  buckets: string;
  attributes: string;
  resource: string;
  attr_kv: string[];
  res_kv: string[];
  flags: number;
  exemplars: string;
  received_ms: number;
}

/**
 * A series' identity: metric name, type, resource, scope and point attributes — as the SQLite
 * writer's (sqlite-telemetry-store.ts), whose resource part is the resource row found by the same
 * JSON text. The same in every process: cumulative points sent to different processes are
 * differenced as one series.
 */
export function chSeriesKey(name: string, type: string, resourceJson: string, scope: string, attrsJson: string): string {
  return createHash('sha1').update(`${name}\u0000${type}\u0000${resourceJson}\u0000${scope}\u0000${attrsJson}`).digest('base64url');
}

const num = (v: number | null | undefined): number | null => (typeof v === 'number' && Number.isFinite(v) ? v : null);

const parseObject = (json: string): Attributes => {
  try {
    const v = JSON.parse(json);
    return v && typeof v === 'object' && !Array.isArray(v) ? v : {};
  } catch {
    return {};
  }
};

/** A point → row, with the SQLite writer's derivations (bucket JSON, environment, series key). */
export function metricRow(projectId: number, p: MetricPointRecord, receivedMs: number, id: number): ChMetricRow {
  const attrs = JSON.stringify(p.attributes);
  const resource = JSON.stringify(p.resource);
  const buckets =
    p.type === 'hist'
      ? JSON.stringify({ bucket_counts: p.bucket_counts ?? [], explicit_bounds: p.explicit_bounds ?? [] })
      : p.type === 'exponential_histogram'
        ? JSON.stringify({ scale: p.scale ?? 0, zero_count: p.zero_count ?? 0, zero_threshold: p.zero_threshold ?? 0, positive: p.positive ?? null, negative: p.negative ?? null })
        : '';
  return {
    project_id: projectId,
    metric_name: p.metric_name,
    time_ms: p.time_ms,
    id,
    type: p.type,
    unit: p.unit,
    description: p.description,
    temporality: p.temporality,
    monotonic: p.monotonic ? 1 : 0,
    service_name: p.service_name,
    environment: environmentOf(p.resource),
    series_key: chSeriesKey(p.metric_name, p.type, resource, p.scope.name, attrs),
    scope_name: p.scope.name,
    start_ms: num(p.start_ms),
    value: num(p.value),
    count: num(p.count),
    sum: num(p.sum),
    min: num(p.min),
    max: num(p.max),
    buckets,
    attributes: attrs,
    resource,
    attr_kv: kv(p.attributes),
    res_kv: kv(p.resource),
    flags: p.flags,
    exemplars: p.exemplars?.length ? JSON.stringify(p.exemplars) : '',
    received_ms: receivedMs,
  };
}

/** A point row read from SQLite (with its resource's JSON) → row: `sightline migrate --to-clickhouse`. */
export type StoredMetricPoint = Omit<ChMetricRow, 'id' | 'series_key' | 'attr_kv' | 'res_kv' | 'buckets' | 'exemplars'> & {
  buckets: string | null;
  exemplars: string | null;
};

export function storedMetricRow(r: StoredMetricPoint, id: number): ChMetricRow {
  return {
    project_id: r.project_id,
    metric_name: r.metric_name,
    time_ms: r.time_ms,
    id,
    type: r.type,
    unit: r.unit,
    description: r.description,
    temporality: r.temporality,
    monotonic: r.monotonic ? 1 : 0,
    service_name: r.service_name,
    environment: r.environment,
    // The new writer's key (the SQLite key names a SQLite resource row): later points continue the series.
    series_key: chSeriesKey(r.metric_name, r.type, r.resource, r.scope_name, r.attributes),
    scope_name: r.scope_name,
    start_ms: num(r.start_ms),
    value: num(r.value),
    count: num(r.count),
    sum: num(r.sum),
    min: num(r.min),
    max: num(r.max),
    buckets: r.buckets ?? '',
    attributes: r.attributes,
    resource: r.resource,
    attr_kv: kv(parseObject(r.attributes)),
    res_kv: kv(parseObject(r.resource)),
    flags: r.flags,
    exemplars: r.exemplars ?? '',
    received_ms: r.received_ms,
  };
}

/** Metric points bound for ClickHouse: acknowledged once inserted (batch-buffer.ts). */
export function createChMetricStore(engine: ChEngine, pacing: BufferPacing = NO_PACING) {
  const buffer = createBatchBuffer(rowArrays<ChMetricRow>((rows) => engine.insert('metric_points', rows)), pacing);

  function addRows(rows: ChMetricRow[]): number {
    buffer.add(rows);
    return rows.length;
  }

  function add(projectId: string, points: MetricPointRecord[], receivedMs: number): number {
    const pid = Number(projectId);
    return addRows(points.map((p) => metricRow(pid, p, receivedMs, nextLogId())));
  }

  return { add, addRows, participant: buffer.participant, flush: buffer.flush };
}

export type ChMetricStore = ReturnType<typeof createChMetricStore>;
