/**
 * Embedded OTLP v1 protobuf schema (the parts of open-telemetry/opentelemetry-proto needed to decode
 * ExportTrace/Logs/MetricsServiceRequest and encode the matching responses). Parsed once at module
 * load with protobufjs; field names become lowerCamelCase (protobufjs default, keepCase: false).
 *
 * Message names, field names, numbers and types follow the public opentelemetry-proto v1 `.proto`
 * files (proto3). It is written here in proto2 syntax on purpose — the wire format is identical, but:
 * - singular fields get explicit presence and `oneof`s are flattened to optional fields, so
 *   protobufjs's decoder assigns `m.x = value` without the per-field oneof bookkeeping (it deletes
 *   every sibling member on each assignment, a measurable cost on AnyValue-heavy payloads), and
 *   presence is `Object.hasOwn(m, 'x')` (the prototype carries defaults);
 * - strings are not UTF-8 verified (proto3 strings are), so invalid UTF-8 degrades to U+FFFD
 *   instead of failing the whole request.
 * Packed and unpacked repeated scalars are both accepted when decoding, as in proto3.
 */
import protobuf from 'protobufjs';

export const OTLP_PROTO = `
syntax = "proto2";
package opentelemetry.proto;

// ---- common/v1 ----
message AnyValue {
  optional string string_value = 1;
  optional bool bool_value = 2;
  optional int64 int_value = 3;
  optional double double_value = 4;
  optional ArrayValue array_value = 5;
  optional KeyValueList kvlist_value = 6;
  optional bytes bytes_value = 7;
}
message ArrayValue {
  repeated AnyValue values = 1;
}
message KeyValueList {
  repeated KeyValue values = 1;
}
message KeyValue {
  optional string key = 1;
  optional AnyValue value = 2;
}
message InstrumentationScope {
  optional string name = 1;
  optional string version = 2;
  repeated KeyValue attributes = 3;
  optional uint32 dropped_attributes_count = 4;
}
message EntityRef {
  optional string schema_url = 1;
  optional string type = 2;
  repeated string id_keys = 3;
  repeated string description_keys = 4;
}

// ---- resource/v1 ----
message Resource {
  repeated KeyValue attributes = 1;
  optional uint32 dropped_attributes_count = 2;
  repeated EntityRef entity_refs = 3;
}

// ---- trace/v1 ----
message ResourceSpans {
  optional Resource resource = 1;
  repeated ScopeSpans scope_spans = 2;
  optional string schema_url = 3;
}
message ScopeSpans {
  optional InstrumentationScope scope = 1;
  repeated Span spans = 2;
  optional string schema_url = 3;
}
message Span {
  optional bytes trace_id = 1;
  optional bytes span_id = 2;
  optional string trace_state = 3;
  optional bytes parent_span_id = 4;
  optional fixed32 flags = 16;
  optional string name = 5;
  enum SpanKind {
    SPAN_KIND_UNSPECIFIED = 0;
    SPAN_KIND_INTERNAL = 1;
    SPAN_KIND_SERVER = 2;
    SPAN_KIND_CLIENT = 3;
    SPAN_KIND_PRODUCER = 4;
    SPAN_KIND_CONSUMER = 5;
  }
  optional SpanKind kind = 6;
  optional fixed64 start_time_unix_nano = 7;
  optional fixed64 end_time_unix_nano = 8;
  repeated KeyValue attributes = 9;
  optional uint32 dropped_attributes_count = 10;
  message Event {
    optional fixed64 time_unix_nano = 1;
    optional string name = 2;
    repeated KeyValue attributes = 3;
    optional uint32 dropped_attributes_count = 4;
  }
  repeated Event events = 11;
  optional uint32 dropped_events_count = 12;
  message Link {
    optional bytes trace_id = 1;
    optional bytes span_id = 2;
    optional string trace_state = 3;
    repeated KeyValue attributes = 4;
    optional uint32 dropped_attributes_count = 5;
    optional fixed32 flags = 6;
  }
  repeated Link links = 13;
  optional uint32 dropped_links_count = 14;
  optional Status status = 15;
}
message Status {
  optional string message = 2;
  enum StatusCode {
    STATUS_CODE_UNSET = 0;
    STATUS_CODE_OK = 1;
    STATUS_CODE_ERROR = 2;
  }
  optional StatusCode code = 3;
}

// ---- logs/v1 ----
enum SeverityNumber {
  SEVERITY_NUMBER_UNSPECIFIED = 0;
  SEVERITY_NUMBER_TRACE = 1;
  SEVERITY_NUMBER_TRACE2 = 2;
  SEVERITY_NUMBER_TRACE3 = 3;
  SEVERITY_NUMBER_TRACE4 = 4;
  SEVERITY_NUMBER_DEBUG = 5;
  SEVERITY_NUMBER_DEBUG2 = 6;
  SEVERITY_NUMBER_DEBUG3 = 7;
  SEVERITY_NUMBER_DEBUG4 = 8;
  SEVERITY_NUMBER_INFO = 9;
  SEVERITY_NUMBER_INFO2 = 10;
  SEVERITY_NUMBER_INFO3 = 11;
  SEVERITY_NUMBER_INFO4 = 12;
  SEVERITY_NUMBER_WARN = 13;
  SEVERITY_NUMBER_WARN2 = 14;
  SEVERITY_NUMBER_WARN3 = 15;
  SEVERITY_NUMBER_WARN4 = 16;
  SEVERITY_NUMBER_ERROR = 17;
  SEVERITY_NUMBER_ERROR2 = 18;
  SEVERITY_NUMBER_ERROR3 = 19;
  SEVERITY_NUMBER_ERROR4 = 20;
  SEVERITY_NUMBER_FATAL = 21;
  SEVERITY_NUMBER_FATAL2 = 22;
  SEVERITY_NUMBER_FATAL3 = 23;
  SEVERITY_NUMBER_FATAL4 = 24;
}
message ResourceLogs {
  optional Resource resource = 1;
  repeated ScopeLogs scope_logs = 2;
  optional string schema_url = 3;
}
message ScopeLogs {
  optional InstrumentationScope scope = 1;
  repeated LogRecord log_records = 2;
  optional string schema_url = 3;
}
message LogRecord {
  optional fixed64 time_unix_nano = 1;
  optional fixed64 observed_time_unix_nano = 11;
  optional SeverityNumber severity_number = 2;
  optional string severity_text = 3;
  optional AnyValue body = 5;
  repeated KeyValue attributes = 6;
  optional uint32 dropped_attributes_count = 7;
  optional fixed32 flags = 8;
  optional bytes trace_id = 9;
  optional bytes span_id = 10;
  optional string event_name = 12;
}

// ---- metrics/v1 ----
enum AggregationTemporality {
  AGGREGATION_TEMPORALITY_UNSPECIFIED = 0;
  AGGREGATION_TEMPORALITY_DELTA = 1;
  AGGREGATION_TEMPORALITY_CUMULATIVE = 2;
}
message ResourceMetrics {
  optional Resource resource = 1;
  repeated ScopeMetrics scope_metrics = 2;
  optional string schema_url = 3;
}
message ScopeMetrics {
  optional InstrumentationScope scope = 1;
  repeated Metric metrics = 2;
  optional string schema_url = 3;
}
message Metric {
  optional string name = 1;
  optional string description = 2;
  optional string unit = 3;
  optional Gauge gauge = 5;
  optional Sum sum = 7;
  optional Histogram histogram = 9;
  optional ExponentialHistogram exponential_histogram = 10;
  optional Summary summary = 11;
  repeated KeyValue metadata = 12;
}
message Gauge {
  repeated NumberDataPoint data_points = 1;
}
message Sum {
  repeated NumberDataPoint data_points = 1;
  optional AggregationTemporality aggregation_temporality = 2;
  optional bool is_monotonic = 3;
}
message Histogram {
  repeated HistogramDataPoint data_points = 1;
  optional AggregationTemporality aggregation_temporality = 2;
}
message ExponentialHistogram {
  repeated ExponentialHistogramDataPoint data_points = 1;
  optional AggregationTemporality aggregation_temporality = 2;
}
message Summary {
  repeated SummaryDataPoint data_points = 1;
}
message NumberDataPoint {
  repeated KeyValue attributes = 7;
  optional fixed64 start_time_unix_nano = 2;
  optional fixed64 time_unix_nano = 3;
  optional double as_double = 4;
  optional sfixed64 as_int = 6;
  repeated Exemplar exemplars = 5;
  optional uint32 flags = 8;
}
message HistogramDataPoint {
  repeated KeyValue attributes = 9;
  optional fixed64 start_time_unix_nano = 2;
  optional fixed64 time_unix_nano = 3;
  optional fixed64 count = 4;
  optional double sum = 5;
  repeated fixed64 bucket_counts = 6;
  repeated double explicit_bounds = 7;
  repeated Exemplar exemplars = 8;
  optional uint32 flags = 10;
  optional double min = 11;
  optional double max = 12;
}
message ExponentialHistogramDataPoint {
  repeated KeyValue attributes = 1;
  optional fixed64 start_time_unix_nano = 2;
  optional fixed64 time_unix_nano = 3;
  optional fixed64 count = 4;
  optional double sum = 5;
  optional sint32 scale = 6;
  optional fixed64 zero_count = 7;
  optional Buckets positive = 8;
  optional Buckets negative = 9;
  message Buckets {
    optional sint32 offset = 1;
    repeated uint64 bucket_counts = 2;
  }
  optional uint32 flags = 10;
  repeated Exemplar exemplars = 11;
  optional double min = 12;
  optional double max = 13;
  optional double zero_threshold = 14;
}
message SummaryDataPoint {
  repeated KeyValue attributes = 7;
  optional fixed64 start_time_unix_nano = 2;
  optional fixed64 time_unix_nano = 3;
  optional fixed64 count = 4;
  optional double sum = 5;
  message ValueAtQuantile {
    optional double quantile = 1;
    optional double value = 2;
  }
  repeated ValueAtQuantile quantile_values = 6;
  optional uint32 flags = 8;
}
message Exemplar {
  repeated KeyValue filtered_attributes = 7;
  optional fixed64 time_unix_nano = 2;
  optional double as_double = 3;
  optional sfixed64 as_int = 6;
  optional bytes span_id = 4;
  optional bytes trace_id = 5;
}

// ---- collector/*/v1 ----
message ExportTraceServiceRequest {
  repeated ResourceSpans resource_spans = 1;
}
message ExportTraceServiceResponse {
  optional ExportTracePartialSuccess partial_success = 1;
}
message ExportTracePartialSuccess {
  optional int64 rejected_spans = 1;
  optional string error_message = 2;
}

message ExportLogsServiceRequest {
  repeated ResourceLogs resource_logs = 1;
}
message ExportLogsServiceResponse {
  optional ExportLogsPartialSuccess partial_success = 1;
}
message ExportLogsPartialSuccess {
  optional int64 rejected_log_records = 1;
  optional string error_message = 2;
}

message ExportMetricsServiceRequest {
  repeated ResourceMetrics resource_metrics = 1;
}
message ExportMetricsServiceResponse {
  optional ExportMetricsPartialSuccess partial_success = 1;
}
message ExportMetricsPartialSuccess {
  optional int64 rejected_data_points = 1;
  optional string error_message = 2;
}
`;

const root = protobuf.parse(OTLP_PROTO, { keepCase: false }).root;
root.resolveAll();

const t = (name: string): protobuf.Type => root.lookupType(`opentelemetry.proto.${name}`);
const e = (name: string): protobuf.Enum => root.lookupEnum(`opentelemetry.proto.${name}`);

export const otlpRoot = root;
export const ExportTraceServiceRequest = t('ExportTraceServiceRequest');
export const ExportTraceServiceResponse = t('ExportTraceServiceResponse');
export const ExportLogsServiceRequest = t('ExportLogsServiceRequest');
export const ExportLogsServiceResponse = t('ExportLogsServiceResponse');
export const ExportMetricsServiceRequest = t('ExportMetricsServiceRequest');
export const ExportMetricsServiceResponse = t('ExportMetricsServiceResponse');

/** Enum name → number maps, for OTLP/JSON payloads that send enum names instead of integers. */
export const SpanKindValues: Readonly<Record<string, number>> = e('Span.SpanKind').values;
export const StatusCodeValues: Readonly<Record<string, number>> = e('Status.StatusCode').values;
export const SeverityNumberValues: Readonly<Record<string, number>> = e('SeverityNumber').values;
export const AggregationTemporalityValues: Readonly<Record<string, number>> = e('AggregationTemporality').values;
