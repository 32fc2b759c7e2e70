/**
 * Normalized telemetry records: what the ingest decoders (OTLP, Sentry) produce and what the
 * TelemetryStore persists. Times are Unix epoch milliseconds as numbers (fractions keep
 * microsecond precision); ids are lowercase hex.
 */
export type AttrValue = string | number | boolean | null | AttrValue[] | { [key: string]: AttrValue };
export type Attributes = Record<string, AttrValue>;

export interface InstrumentationScope {
  name: string;
  version: string;
  attributes: Attributes;
}

/** Shared by every OTLP-derived record. `service_name` is resource `service.name` ('' when absent). */
export interface ResourceContext {
  resource: Attributes;
  scope: InstrumentationScope;
  service_name: string;
}

export interface SpanEventRecord {
  time_ms: number;
  name: string;
  attributes: Attributes;
}

export interface SpanLinkRecord {
  trace_id: string;
  span_id: string;
  trace_state: string;
  attributes: Attributes;
}

export interface SpanRecord extends ResourceContext {
  trace_id: string; // 32 hex
  span_id: string; // 16 hex
  parent_span_id: string | null;
  trace_state: string;
  name: string;
  /** OTLP SpanKind: 0 unspecified, 1 internal, 2 server, 3 client, 4 producer, 5 consumer. */
  kind: number;
  start_ms: number;
  end_ms: number;
  /** OTLP status code: 0 unset, 1 ok, 2 error. */
  status_code: number;
  status_message: string;
  attributes: Attributes;
  events: SpanEventRecord[];
  links: SpanLinkRecord[];
}

export interface LogRecordOut extends ResourceContext {
  time_ms: number; // time_unix_nano, or observed time when absent
  observed_time_ms: number;
  severity_number: number;
  severity_text: string;
  body: AttrValue;
  attributes: Attributes;
  trace_id: string | null;
  span_id: string | null;
  flags: number;
  event_name: string;
}

export type MetricType = 'gauge' | 'sum' | 'hist' | 'exponential_histogram';
export type Temporality = 'delta' | 'cumulative' | 'unspecified';

export interface ExpBuckets {
  offset: number;
  bucket_counts: number[];
}

/** An OTLP exemplar: one measurement of a point with the trace it was recorded in (issue 11 item 4). */
export interface MetricExemplar {
  time_ms: number;
  value: number;
  trace_id: string | null;
  span_id: string | null;
  /** filtered_attributes: the measurement's attributes the point's own attributes left out. */
  attributes: Attributes;
}

export interface MetricPointRecord extends ResourceContext {
  metric_name: string;
  description: string;
  unit: string;
  type: MetricType;
  temporality: Temporality; // 'unspecified' for gauges
  monotonic: boolean; // sums only
  /** start_time_unix_nano in ms; null when the exporter sent 0 (unknown start). */
  start_ms: number | null;
  time_ms: number;
  attributes: Attributes;
  flags: number;
  /** gauge and sum */
  value?: number;
  /** histogram and exponential histogram */
  count?: number;
  sum?: number | null;
  min?: number | null;
  max?: number | null;
  /** explicit histogram: bucket_counts has explicit_bounds.length + 1 entries */
  bucket_counts?: number[];
  explicit_bounds?: number[];
  /** exponential histogram */
  scale?: number;
  zero_count?: number;
  zero_threshold?: number;
  positive?: ExpBuckets;
  negative?: ExpBuckets;
  /** Exemplars sent with the point (absent when none). */
  exemplars?: MetricExemplar[];
}

export interface StackFrame {
  filename?: string;
  abs_path?: string;
  module?: string;
  function?: string;
  lineno?: number;
  colno?: number;
  in_app?: boolean;
}

export interface ExceptionValue {
  type: string;
  value: string;
  module?: string;
  /** Oldest call first, as Sentry sends them (the crashing frame is last). */
  frames: StackFrame[];
}

/** An error event from any source, ready for grouping. */
export interface ErrorEventRecord {
  event_id: string; // 32 hex
  timestamp_ms: number;
  received_ms: number;
  source: 'sentry' | 'otlp';
  platform: string;
  level: string; // fatal, error, warning, info, debug
  message: string;
  /** Innermost (the one raised) last, as Sentry orders `exception.values`. */
  exceptions: ExceptionValue[];
  /** SDK-sent fingerprint ('{{ default }}' entries kept as sent). */
  fingerprint: string[] | null;
  environment: string;
  release: string;
  service_name: string;
  server_name: string;
  transaction: string;
  tags: Record<string, string>;
  user: Record<string, unknown> | null;
  trace_id: string | null;
  span_id: string | null;
  /** The full payload as received (Sentry event JSON, or the span + exception event for OTLP). */
  payload: unknown;
}

/** A release-health session update (Sentry `session`) or one bucket of pre-aggregated `sessions`. */
export interface SessionRecord {
  /** null for pre-aggregated `sessions` items */
  sid: string | null;
  distinct_id: string | null;
  init: boolean;
  /** ok | exited | errored | crashed | abnormal */
  status: string;
  started_ms: number;
  timestamp_ms: number;
  duration_ms: number | null;
  errors: number;
  release: string;
  environment: string;
  user_agent: string;
  /** 1 for a single session update; the bucket count for aggregates */
  quantity: number;
}
