/**
 * Hand-built OTLP/JSON payloads (logs, metrics) posted to the real ingest endpoint, and a GET helper
 * for the read operations. Times are epoch milliseconds; they travel as nanosecond strings.
 */
import { expect } from 'vitest';
import { api, type TestServer } from '../helpers/server.js';

export type Attr = string | number | boolean | Attr[] | { [k: string]: Attr };

export function anyValue(v: Attr): Record<string, unknown> {
  if (typeof v === 'string') return { stringValue: v };
  if (typeof v === 'boolean') return { boolValue: v };
  if (typeof v === 'number') return Number.isInteger(v) ? { intValue: String(v) } : { doubleValue: v };
  if (Array.isArray(v)) return { arrayValue: { values: v.map(anyValue) } };
  return { kvlistValue: { values: Object.entries(v).map(([key, x]) => ({ key, value: anyValue(x) })) } };
}

export const attrs = (a: Record<string, Attr> = {}) => Object.entries(a).map(([key, v]) => ({ key, value: anyValue(v) }));

/** Nanoseconds since the epoch as a decimal string (exact for whole milliseconds). */
export const nanos = (ms: number) => (BigInt(Math.round(ms * 1000)) * 1000n).toString();

export interface Resource {
  service: string;
  environment?: string;
  release?: string;
  extra?: Record<string, Attr>;
}

function resource(r: Resource) {
  const a: Record<string, Attr> = { 'service.name': r.service, ...r.extra };
  if (r.environment !== undefined) a['deployment.environment.name'] = r.environment;
  if (r.release !== undefined) a['service.version'] = r.release;
  return { attributes: attrs(a) };
}

export interface LogSpec {
  at: number;
  body: string;
  severity?: number;
  severityText?: string;
  attributes?: Record<string, Attr>;
  traceId?: string;
  spanId?: string;
}

/** SeverityNumber of each level (the first number of its OTLP range). */
export const SEV = { trace: 1, debug: 5, info: 9, warn: 13, error: 17, fatal: 21 } as const;

export function logsPayload(groups: { resource: Resource; logs: LogSpec[] }[]) {
  return {
    resourceLogs: groups.map((g) => ({
      resource: resource(g.resource),
      scopeLogs: [
        {
          scope: { name: 'test-logger', version: '1.0.0' },
          logRecords: g.logs.map((l) => ({
            timeUnixNano: nanos(l.at),
            observedTimeUnixNano: nanos(l.at + 1),
            severityNumber: l.severity ?? SEV.info,
            severityText: l.severityText ?? '',
            body: { stringValue: l.body },
            attributes: attrs(l.attributes),
            ...(l.traceId ? { traceId: l.traceId } : {}),
            ...(l.spanId ? { spanId: l.spanId } : {}),
          })),
        },
      ],
    })),
  };
}

async function postJson(t: TestServer, signal: 'logs' | 'metrics', body: unknown, key = t.keys.ingest) {
  const r = await fetch(`${t.url}/ingest/v1/${signal}`, {
    method: 'POST',
    headers: { 'content-type': 'application/json', 'x-service-key': key },
    body: JSON.stringify(body),
  });
  const text = await r.text();
  expect(r.status, text).toBe(200);
  expect(text).not.toContain('rejected');
}

export const sendLogs = (t: TestServer, groups: { resource: Resource; logs: LogSpec[] }[], key?: string) => postJson(t, 'logs', logsPayload(groups), key);

// ---- metrics -------------------------------------------------------------------------------------

export interface NumberPoint {
  at: number;
  value: number;
  /** Start time in ms; null sends 0 (unknown start). Omitted: gauges send none. */
  start?: number | null;
  attributes?: Record<string, Attr>;
}

export interface HistPoint {
  at: number;
  start?: number | null;
  count: number;
  sum?: number;
  min?: number;
  max?: number;
  bounds: number[];
  counts: number[];
  attributes?: Record<string, Attr>;
}

export interface ExpPoint {
  at: number;
  start?: number | null;
  count: number;
  sum?: number;
  scale: number;
  zeroCount?: number;
  positive?: { offset: number; counts: number[] };
  min?: number;
  max?: number;
  attributes?: Record<string, Attr>;
}

export type MetricSpec =
  | { name: string; unit?: string; description?: string; gauge: NumberPoint[] }
  | { name: string; unit?: string; description?: string; sum: NumberPoint[]; temporality: 'delta' | 'cumulative'; monotonic?: boolean }
  | { name: string; unit?: string; description?: string; hist: HistPoint[]; temporality: 'delta' | 'cumulative' }
  | { name: string; unit?: string; description?: string; exp: ExpPoint[]; temporality: 'delta' | 'cumulative' };

const TEMPORALITY = { delta: 1, cumulative: 2 } as const;
const start = (s: number | null | undefined) => (s === undefined ? {} : { startTimeUnixNano: s === null ? '0' : nanos(s) });

function metric(m: MetricSpec) {
  const head = { name: m.name, unit: m.unit ?? '', description: m.description ?? '' };
  if ('gauge' in m) {
    return { ...head, gauge: { dataPoints: m.gauge.map((p) => ({ ...start(p.start), timeUnixNano: nanos(p.at), asDouble: p.value, attributes: attrs(p.attributes) })) } };
  }
  if ('sum' in m) {
    return {
      ...head,
      sum: {
        aggregationTemporality: TEMPORALITY[m.temporality],
        isMonotonic: m.monotonic ?? true,
        dataPoints: m.sum.map((p) => ({ ...start(p.start), timeUnixNano: nanos(p.at), asDouble: p.value, attributes: attrs(p.attributes) })),
      },
    };
  }
  if ('hist' in m) {
    return {
      ...head,
      histogram: {
        aggregationTemporality: TEMPORALITY[m.temporality],
        dataPoints: m.hist.map((p) => ({
          ...start(p.start),
          timeUnixNano: nanos(p.at),
          count: String(p.count),
          ...(p.sum !== undefined ? { sum: p.sum } : {}),
          ...(p.min !== undefined ? { min: p.min } : {}),
          ...(p.max !== undefined ? { max: p.max } : {}),
          bucketCounts: p.counts.map(String),
          explicitBounds: p.bounds,
          attributes: attrs(p.attributes),
        })),
      },
    };
  }
  return {
    ...head,
    exponentialHistogram: {
      aggregationTemporality: TEMPORALITY[m.temporality],
      dataPoints: m.exp.map((p) => ({
        ...start(p.start),
        timeUnixNano: nanos(p.at),
        count: String(p.count),
        ...(p.sum !== undefined ? { sum: p.sum } : {}),
        ...(p.min !== undefined ? { min: p.min } : {}),
        ...(p.max !== undefined ? { max: p.max } : {}),
        scale: p.scale,
        zeroCount: String(p.zeroCount ?? 0),
        ...(p.positive ? { positive: { offset: p.positive.offset, bucketCounts: p.positive.counts.map(String) } } : {}),
        attributes: attrs(p.attributes),
      })),
    },
  };
}

export function metricsPayload(groups: { resource: Resource; scope?: string; metrics: MetricSpec[] }[]) {
  return {
    resourceMetrics: groups.map((g) => ({
      resource: resource(g.resource),
      scopeMetrics: [{ scope: { name: g.scope ?? 'test-meter', version: '1.0.0' }, metrics: g.metrics.map(metric) }],
    })),
  };
}

export const sendMetrics = (t: TestServer, groups: { resource: Resource; scope?: string; metrics: MetricSpec[] }[]) => postJson(t, 'metrics', metricsPayload(groups));

// ---- reads ---------------------------------------------------------------------------------------

/** GET a project path with query parameters (undefined dropped); returns status and body. */
export async function read(t: TestServer, path: string, query: Record<string, string | number | undefined> = {}, key = t.keys.admin) {
  const qs = new URLSearchParams();
  for (const [k, v] of Object.entries(query)) if (v !== undefined) qs.set(k, String(v));
  const s = qs.toString();
  return api(t, 'GET', `/v1/projects/${t.projectId}${path}${s ? `?${s}` : ''}`, { key });
}

/** GET that must answer 200; returns the body. */
export async function ok(t: TestServer, path: string, query: Record<string, string | number | undefined> = {}) {
  const r = await read(t, path, query);
  expect(r.status, JSON.stringify(r.body)).toBe(200);
  return r.body;
}

export const iso = (ms: number) => new Date(ms).toISOString();
export const MIN = 60_000;
export const HOUR = 3_600_000;
export const DAY = 86_400_000;
