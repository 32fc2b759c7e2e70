/**
 * OTLP/HTTP request decoding: ExportTraceServiceRequest / ExportLogsServiceRequest /
 * ExportMetricsServiceRequest bodies (binary protobuf or OTLP/JSON) → normalized records
 * (`SpanRecord`, `LogRecordOut`, `MetricPointRecord` from `src/domain/telemetry-types.ts`), plus
 * the matching ExportXServiceResponse bodies (with `partial_success` when something was rejected).
 *
 * - Protobuf goes through an embedded opentelemetry-proto v1 schema (`./schema.ts`, protobufjs,
 *   parsed once at load): `Type.decode`, then a direct conversion (no `toObject`).
 * - OTLP/JSON: lowerCamelCase field names (snake_case also accepted), trace/span ids as hex,
 *   int64 as string or number, enums as integers or names, unknown fields ignored.
 * - Times are nanoseconds since the epoch on the wire; records carry epoch milliseconds
 *   (`nanos / 1e6`, fractions keep microseconds).
 * - Invalid items (span with a bad trace/span/parent id, metric point without time, summary metric
 *   points, non-object JSON items) are dropped and counted in `rejected`, with a human-readable
 *   `rejectionMessage`; everything valid is kept. Log records are never rejected (bad ids → null).
 *   Span links with invalid ids are dropped from the span without counting. A body that cannot be
 *   decoded at all throws `OtlpDecodeError` (HTTP 400).
 * - Records from the same resource / scope share the same `resource` and `scope` objects; treat
 *   them as read-only.
 * - gzip and size limits are handled by the HTTP layer, not here.
 */
import type {
  AttrValue,
  Attributes,
  ExpBuckets,
  InstrumentationScope,
  LogRecordOut,
  MetricExemplar,
  MetricPointRecord,
  MetricType,
  ResourceContext,
  SpanEventRecord,
  SpanLinkRecord,
  SpanRecord,
  Temporality,
} from '../../domain/telemetry-types.js';
import {
  AggregationTemporalityValues,
  ExportLogsServiceRequest,
  ExportLogsServiceResponse,
  ExportMetricsServiceRequest,
  ExportMetricsServiceResponse,
  ExportTraceServiceRequest,
  ExportTraceServiceResponse,
  SeverityNumberValues,
  SpanKindValues,
  StatusCodeValues,
} from './schema.js';
import type protobuf from 'protobufjs';

export type OtlpSignal = 'traces' | 'logs' | 'metrics';
export type OtlpEncoding = 'protobuf' | 'json';

export interface DecodeResult<T> {
  records: T[];
  /** Items dropped as invalid (spans, log records or metric data points). */
  rejected: number;
  /** Why items were rejected; '' when `rejected` is 0. */
  rejectionMessage: string;
}

/** The request body cannot be decoded at all (the HTTP layer answers 400). */
export class OtlpDecodeError extends Error {
  constructor(message: string, options?: { cause?: unknown }) {
    super(message, options);
    this.name = 'OtlpDecodeError';
  }
}

// ---------------------------------------------------------------------------------------------
// Public API
// ---------------------------------------------------------------------------------------------

export function decodeTraces(body: Buffer, enc: OtlpEncoding): DecodeResult<SpanRecord> {
  if (enc === 'json') return guardJson('traces', () => jsonTraces(parseJsonRoot(body, 'traces')));
  const req = decodeProto(ExportTraceServiceRequest, body, 'traces') as unknown as PbTraceRequest;
  return pbTraces(req);
}

export function decodeLogs(body: Buffer, enc: OtlpEncoding): DecodeResult<LogRecordOut> {
  if (enc === 'json') return guardJson('logs', () => jsonLogs(parseJsonRoot(body, 'logs')));
  const req = decodeProto(ExportLogsServiceRequest, body, 'logs') as unknown as PbLogsRequest;
  return pbLogs(req);
}

export function decodeMetrics(body: Buffer, enc: OtlpEncoding): DecodeResult<MetricPointRecord> {
  if (enc === 'json') return guardJson('metrics', () => jsonMetrics(parseJsonRoot(body, 'metrics')));
  const req = decodeProto(ExportMetricsServiceRequest, body, 'metrics') as unknown as PbMetricsRequest;
  return pbMetrics(req);
}

const RESPONSE_INFO: Record<OtlpSignal, { type: protobuf.Type; field: string }> = {
  traces: { type: ExportTraceServiceResponse, field: 'rejectedSpans' },
  logs: { type: ExportLogsServiceResponse, field: 'rejectedLogRecords' },
  metrics: { type: ExportMetricsServiceResponse, field: 'rejectedDataPoints' },
};

/** Build the ExportXServiceResponse body in the request's encoding, with partial_success when rejected > 0. */
export function encodeExportResponse(signal: OtlpSignal, enc: OtlpEncoding, rejected: number, message: string): Buffer {
  const info = RESPONSE_INFO[signal];
  const n = Number.isFinite(rejected) && rejected > 0 ? Math.floor(rejected) : 0;
  if (enc === 'json') {
    if (n === 0) return Buffer.from('{}');
    return Buffer.from(JSON.stringify({ partialSuccess: { [info.field]: String(n), errorMessage: message } }));
  }
  const payload = n === 0 ? {} : { partialSuccess: { [info.field]: n, errorMessage: message } };
  const bytes = info.type.encode(info.type.create(payload)).finish();
  return Buffer.isBuffer(bytes) ? bytes : Buffer.from(bytes.buffer, bytes.byteOffset, bytes.byteLength);
}

// ---------------------------------------------------------------------------------------------
// Shared helpers
// ---------------------------------------------------------------------------------------------

const hasOwn = Object.prototype.hasOwnProperty;

/** Assign without letting a `__proto__` key swap the object's prototype. */
function setAttr(out: Attributes, key: string, value: AttrValue): void {
  if (key === '__proto__') {
    Object.defineProperty(out, key, { value, enumerable: true, writable: true, configurable: true });
  } else {
    out[key] = value;
  }
}

/* Hex encoding of ids: each byte maps to its two ASCII hex digits packed in one uint16, written into a
 * scratch buffer and read back with one latin1 slice (cheaper than per-byte string concatenation). */
const HEX_DIGITS = '0123456789abcdef';
const LITTLE_ENDIAN = new Uint8Array(new Uint16Array([1]).buffer)[0] === 1;
const HEX_PAIRS = new Uint16Array(256);
for (let i = 0; i < 256; i++) {
  const hi = HEX_DIGITS.charCodeAt(i >> 4);
  const lo = HEX_DIGITS.charCodeAt(i & 15);
  HEX_PAIRS[i] = LITTLE_ENDIAN ? hi | (lo << 8) : (hi << 8) | lo;
}
const HEX_SCRATCH = Buffer.alloc(32);
const HEX_SCRATCH16 = new Uint16Array(HEX_SCRATCH.buffer, HEX_SCRATCH.byteOffset, 16);

/** Lowercase hex of an id, or null when it is not exactly `len` (8 or 16) bytes or is all zero. */
function idHex(b: Uint8Array | null | undefined, len: number): string | null {
  if (!b || b.length !== len) return null;
  let nonZero = 0;
  for (let i = 0; i < len; i++) {
    const x = b[i];
    nonZero |= x;
    HEX_SCRATCH16[i] = HEX_PAIRS[x];
  }
  return nonZero === 0 ? null : HEX_SCRATCH.toString('latin1', 0, len * 2);
}

function bytesToBase64(b: Uint8Array): string {
  return (Buffer.isBuffer(b) ? b : Buffer.from(b.buffer, b.byteOffset, b.byteLength)).toString('base64');
}

const TWO_32 = 4294967296;

interface LongLike {
  low: number;
  high: number;
  unsigned?: boolean;
  toNumber(): number;
  toString(radix?: number): string;
}
type PbLong = LongLike | number;

/**
 * fixed64 nanoseconds (Long or number) → epoch ms. `high * 2^32 + low` does not fit a double exactly
 * (epoch nanos are ~2^60), so split 2^32 = 4294 * 1e6 + 967296 and keep the integer milliseconds exact:
 * nanos = high * 4294 * 1e6 + q, with q = high * 967296 + low < 2^53.
 */
function pbNanosToMs(v: PbLong | null | undefined): number {
  if (v == null) return 0;
  if (typeof v === 'number') return v / 1e6;
  const high = v.high >>> 0;
  const q = high * 967296 + (v.low >>> 0);
  const qms = Math.floor(q / 1e6);
  return high * 4294 + qms + (q - qms * 1e6) / 1e6;
}

/** uint64 / fixed64 counts → number. */
function pbU64(v: PbLong | null | undefined): number {
  if (v == null) return 0;
  if (typeof v === 'number') return v;
  return (v.high >>> 0) * TWO_32 + (v.low >>> 0);
}

/** Signed int64 (Long or number) → number. */
function pbI64(v: PbLong | null | undefined): number {
  if (v == null) return 0;
  return typeof v === 'number' ? v : v.toNumber();
}

/** int64 AnyValue → number, or decimal string beyond the safe integer range. */
function pbIntAttr(v: PbLong): AttrValue {
  if (typeof v === 'number') return v;
  const n = v.toNumber();
  return Number.isSafeInteger(n) ? n : v.toString();
}

class Rejections {
  count = 0;
  private readonly reasons = new Map<string, number>();
  add(reason: string, n = 1): void {
    if (n <= 0) return;
    this.count += n;
    this.reasons.set(reason, (this.reasons.get(reason) ?? 0) + n);
  }
  message(unit: string): string {
    if (this.count === 0) return '';
    const parts: string[] = [];
    for (const [reason, n] of this.reasons) parts.push(`${reason} (${n})`);
    return `rejected ${this.count} ${unit}: ${parts.join('; ')}`;
  }
}

const R_TRACE_ID = 'invalid trace_id: must be 16 bytes (32 hex chars), not all zero';
const R_SPAN_ID = 'invalid span_id: must be 8 bytes (16 hex chars), not all zero';
const R_PARENT_ID = 'invalid parent_span_id: must be empty or 8 bytes (16 hex chars)';
const R_NOT_OBJECT = 'item is not a JSON object';
const R_NO_TIME = 'data point without time_unix_nano';
const R_SUMMARY = 'summary metrics are not supported';

function temporalityOf(n: number): Temporality {
  return n === 1 ? 'delta' : n === 2 ? 'cumulative' : 'unspecified';
}

function serviceNameOf(resource: Attributes): string {
  const s = resource['service.name'];
  return typeof s === 'string' ? s : '';
}

/** A metric point with every optional field in a fixed order (one hidden class). */
function basePoint(
  ctx: ResourceContext,
  name: string,
  description: string,
  unit: string,
  type: MetricType,
  temporality: Temporality,
  monotonic: boolean,
  startMs: number,
  timeMs: number,
  attributes: Attributes,
  flags: number,
): MetricPointRecord {
  return {
    resource: ctx.resource,
    scope: ctx.scope,
    service_name: ctx.service_name,
    metric_name: name,
    description,
    unit,
    type,
    temporality,
    monotonic,
    start_ms: startMs === 0 ? null : startMs,
    time_ms: timeMs,
    attributes,
    flags,
  };
}

// ---------------------------------------------------------------------------------------------
// Protobuf
// ---------------------------------------------------------------------------------------------

/* Shapes of protobufjs-decoded messages (camelCase; absent scalars read prototype defaults). */
interface PbAnyValue {
  stringValue?: string;
  boolValue?: boolean;
  intValue?: PbLong;
  doubleValue?: number;
  arrayValue?: { values?: PbAnyValue[] } | null;
  kvlistValue?: { values?: PbKeyValue[] } | null;
  bytesValue?: Uint8Array;
}
interface PbKeyValue {
  key: string;
  value?: PbAnyValue | null;
}
interface PbResource {
  attributes?: PbKeyValue[];
}
interface PbScope {
  name?: string;
  version?: string;
  attributes?: PbKeyValue[];
}
interface PbEvent {
  timeUnixNano?: PbLong;
  name?: string;
  attributes?: PbKeyValue[];
}
interface PbLink {
  traceId?: Uint8Array;
  spanId?: Uint8Array;
  traceState?: string;
  attributes?: PbKeyValue[];
}
interface PbSpan {
  traceId?: Uint8Array;
  spanId?: Uint8Array;
  traceState?: string;
  parentSpanId?: Uint8Array;
  name?: string;
  kind?: number;
  startTimeUnixNano?: PbLong;
  endTimeUnixNano?: PbLong;
  attributes?: PbKeyValue[];
  events?: PbEvent[];
  links?: PbLink[];
  status?: { message?: string; code?: number } | null;
}
interface PbTraceRequest {
  resourceSpans?: { resource?: PbResource | null; scopeSpans?: { scope?: PbScope | null; spans?: PbSpan[] }[] }[];
}
interface PbLogRecord {
  timeUnixNano?: PbLong;
  observedTimeUnixNano?: PbLong;
  severityNumber?: number;
  severityText?: string;
  body?: PbAnyValue | null;
  attributes?: PbKeyValue[];
  flags?: number;
  traceId?: Uint8Array;
  spanId?: Uint8Array;
  eventName?: string;
}
interface PbLogsRequest {
  resourceLogs?: { resource?: PbResource | null; scopeLogs?: { scope?: PbScope | null; logRecords?: PbLogRecord[] }[] }[];
}
interface PbExemplar {
  filteredAttributes?: PbKeyValue[];
  timeUnixNano?: PbLong;
  asDouble?: number;
  asInt?: PbLong;
  spanId?: Uint8Array;
  traceId?: Uint8Array;
}
/** A point's exemplars (undefined when it has none, the usual case: nothing more is stored). */
function pbExemplars(list: PbExemplar[] | undefined): MetricExemplar[] | undefined {
  if (!list || list.length === 0) return undefined;
  return list.map((e) => ({
    time_ms: pbNanosToMs(e.timeUnixNano),
    value: hasOwn.call(e, 'asDouble') ? (e.asDouble as number) : hasOwn.call(e, 'asInt') ? pbI64(e.asInt) : 0,
    trace_id: idHex(e.traceId, 16),
    span_id: idHex(e.spanId, 8),
    attributes: pbAttrs(e.filteredAttributes),
  }));
}
interface PbNumberPoint {
  exemplars?: PbExemplar[];
  attributes?: PbKeyValue[];
  startTimeUnixNano?: PbLong;
  timeUnixNano?: PbLong;
  asDouble?: number;
  asInt?: PbLong;
  flags?: number;
}
interface PbHistPoint {
  exemplars?: PbExemplar[];
  attributes?: PbKeyValue[];
  startTimeUnixNano?: PbLong;
  timeUnixNano?: PbLong;
  count?: PbLong;
  sum?: number | null;
  bucketCounts?: PbLong[];
  explicitBounds?: number[];
  flags?: number;
  min?: number | null;
  max?: number | null;
}
interface PbBuckets {
  offset?: number;
  bucketCounts?: PbLong[];
}
interface PbExpPoint {
  exemplars?: PbExemplar[];
  attributes?: PbKeyValue[];
  startTimeUnixNano?: PbLong;
  timeUnixNano?: PbLong;
  count?: PbLong;
  sum?: number | null;
  scale?: number;
  zeroCount?: PbLong;
  positive?: PbBuckets | null;
  negative?: PbBuckets | null;
  flags?: number;
  min?: number | null;
  max?: number | null;
  zeroThreshold?: number;
}
interface PbMetric {
  name?: string;
  description?: string;
  unit?: string;
  gauge?: { dataPoints?: PbNumberPoint[] } | null;
  sum?: { dataPoints?: PbNumberPoint[]; aggregationTemporality?: number; isMonotonic?: boolean } | null;
  histogram?: { dataPoints?: PbHistPoint[]; aggregationTemporality?: number } | null;
  exponentialHistogram?: { dataPoints?: PbExpPoint[]; aggregationTemporality?: number } | null;
  summary?: { dataPoints?: unknown[] } | null;
}
interface PbMetricsRequest {
  resourceMetrics?: { resource?: PbResource | null; scopeMetrics?: { scope?: PbScope | null; metrics?: PbMetric[] }[] }[];
}

function decodeProto(type: protobuf.Type, body: Buffer, signal: OtlpSignal): protobuf.Message<object> {
  try {
    // A plain Uint8Array view (not a Buffer) makes protobufjs use its JS reader: short strings decode
    // in JS instead of a native utf8Slice call each, and bytes fields become cheap subarrays.
    return type.decode(new Uint8Array(body.buffer, body.byteOffset, body.byteLength));
  } catch (err) {
    const msg = err instanceof Error ? err.message : String(err);
    throw new OtlpDecodeError(`cannot decode OTLP protobuf ${signal} request: ${msg}`, { cause: err });
  }
}

function pbAny(v: PbAnyValue | null | undefined): AttrValue {
  if (v == null) return null;
  if (hasOwn.call(v, 'stringValue')) return v.stringValue as string;
  if (hasOwn.call(v, 'intValue')) return pbIntAttr(v.intValue as PbLong);
  if (hasOwn.call(v, 'doubleValue')) return v.doubleValue as number;
  if (hasOwn.call(v, 'boolValue')) return v.boolValue as boolean;
  if (hasOwn.call(v, 'arrayValue')) {
    const vals = v.arrayValue?.values;
    const out: AttrValue[] = [];
    if (vals) for (let i = 0; i < vals.length; i++) out.push(pbAny(vals[i]));
    return out;
  }
  if (hasOwn.call(v, 'kvlistValue')) return pbAttrs(v.kvlistValue?.values);
  if (hasOwn.call(v, 'bytesValue')) return bytesToBase64(v.bytesValue as Uint8Array);
  return null;
}

function pbAttrs(kvs: PbKeyValue[] | null | undefined): Attributes {
  const out: Attributes = {};
  if (kvs) {
    for (let i = 0; i < kvs.length; i++) {
      const kv = kvs[i];
      setAttr(out, kv.key, pbAny(kv.value));
    }
  }
  return out;
}

function pbScope(s: PbScope | null | undefined): InstrumentationScope {
  if (!s) return { name: '', version: '', attributes: {} };
  return { name: s.name ?? '', version: s.version ?? '', attributes: pbAttrs(s.attributes) };
}

function pbTraces(req: PbTraceRequest): DecodeResult<SpanRecord> {
  const records: SpanRecord[] = [];
  const rej = new Rejections();
  const rss = req.resourceSpans ?? [];
  for (let r = 0; r < rss.length; r++) {
    const rs = rss[r];
    const resource = pbAttrs(rs.resource?.attributes);
    const serviceName = serviceNameOf(resource);
    const sss = rs.scopeSpans ?? [];
    for (let s = 0; s < sss.length; s++) {
      const ss = sss[s];
      const scope = pbScope(ss.scope);
      const spans = ss.spans ?? [];
      for (let i = 0; i < spans.length; i++) {
        const sp = spans[i];
        const traceId = idHex(sp.traceId, 16);
        if (traceId === null) {
          rej.add(R_TRACE_ID);
          continue;
        }
        const spanId = idHex(sp.spanId, 8);
        if (spanId === null) {
          rej.add(R_SPAN_ID);
          continue;
        }
        let parent: string | null = null;
        const p = sp.parentSpanId;
        if (p && p.length !== 0) {
          if (p.length !== 8) {
            rej.add(R_PARENT_ID);
            continue;
          }
          parent = idHex(p, 8); // all-zero parent → root
        }
        const evs = sp.events;
        const events: SpanEventRecord[] = [];
        if (evs) {
          for (let k = 0; k < evs.length; k++) {
            const ev = evs[k];
            events.push({ time_ms: pbNanosToMs(ev.timeUnixNano), name: ev.name ?? '', attributes: pbAttrs(ev.attributes) });
          }
        }
        const lks = sp.links;
        const links: SpanLinkRecord[] = [];
        if (lks) {
          for (let k = 0; k < lks.length; k++) {
            const lk = lks[k];
            const lt = idHex(lk.traceId, 16);
            const ls = idHex(lk.spanId, 8);
            if (lt === null || ls === null) continue; // a link to nothing carries no information
            links.push({ trace_id: lt, span_id: ls, trace_state: lk.traceState ?? '', attributes: pbAttrs(lk.attributes) });
          }
        }
        const st = sp.status;
        records.push({
          resource,
          scope,
          service_name: serviceName,
          trace_id: traceId,
          span_id: spanId,
          parent_span_id: parent,
          trace_state: sp.traceState ?? '',
          name: sp.name ?? '',
          kind: sp.kind ?? 0,
          start_ms: pbNanosToMs(sp.startTimeUnixNano),
          end_ms: pbNanosToMs(sp.endTimeUnixNano),
          status_code: st ? (st.code ?? 0) : 0,
          status_message: st ? (st.message ?? '') : '',
          attributes: pbAttrs(sp.attributes),
          events,
          links,
        });
      }
    }
  }
  return { records, rejected: rej.count, rejectionMessage: rej.message('spans') };
}

function pbLogs(req: PbLogsRequest): DecodeResult<LogRecordOut> {
  const records: LogRecordOut[] = [];
  const now = Date.now();
  const rls = req.resourceLogs ?? [];
  for (let r = 0; r < rls.length; r++) {
    const rl = rls[r];
    const resource = pbAttrs(rl.resource?.attributes);
    const serviceName = serviceNameOf(resource);
    const sls = rl.scopeLogs ?? [];
    for (let s = 0; s < sls.length; s++) {
      const sl = sls[s];
      const scope = pbScope(sl.scope);
      const lrs = sl.logRecords ?? [];
      for (let i = 0; i < lrs.length; i++) {
        const lr = lrs[i];
        const t = pbNanosToMs(lr.timeUnixNano);
        const o = pbNanosToMs(lr.observedTimeUnixNano);
        records.push({
          resource,
          scope,
          service_name: serviceName,
          time_ms: t !== 0 ? t : o !== 0 ? o : now,
          observed_time_ms: o !== 0 ? o : now,
          severity_number: lr.severityNumber ?? 0,
          severity_text: lr.severityText ?? '',
          body: pbAny(lr.body),
          attributes: pbAttrs(lr.attributes),
          trace_id: idHex(lr.traceId, 16),
          span_id: idHex(lr.spanId, 8),
          flags: lr.flags ?? 0,
          event_name: lr.eventName ?? '',
        });
      }
    }
  }
  return { records, rejected: 0, rejectionMessage: '' };
}

function pbBuckets(b: PbBuckets | null | undefined): ExpBuckets {
  if (!b) return { offset: 0, bucket_counts: [] };
  const src = b.bucketCounts ?? [];
  const counts = new Array<number>(src.length);
  for (let i = 0; i < src.length; i++) counts[i] = pbU64(src[i]);
  return { offset: b.offset ?? 0, bucket_counts: counts };
}

/** proto `optional double`: null when absent (the prototype default 0 is not a value). */
function pbOptDouble(m: object, field: 'sum' | 'min' | 'max'): number | null {
  return hasOwn.call(m, field) ? ((m as Record<string, number>)[field] ?? null) : null;
}

function pbMetrics(req: PbMetricsRequest): DecodeResult<MetricPointRecord> {
  const records: MetricPointRecord[] = [];
  const rej = new Rejections();
  const rms = req.resourceMetrics ?? [];
  for (let r = 0; r < rms.length; r++) {
    const rm = rms[r];
    const resource = pbAttrs(rm.resource?.attributes);
    const serviceName = serviceNameOf(resource);
    const sms = rm.scopeMetrics ?? [];
    for (let s = 0; s < sms.length; s++) {
      const sm = sms[s];
      const sctx: ResourceContext = { resource, scope: pbScope(sm.scope), service_name: serviceName };
      const metrics = sm.metrics ?? [];
      for (let i = 0; i < metrics.length; i++) {
        const m = metrics[i];
        const name = m.name ?? '';
        const desc = m.description ?? '';
        const unit = m.unit ?? '';
        if (m.gauge || m.sum) {
          const isSum = !m.gauge;
          const data = (m.gauge ?? m.sum)!;
          const temporality = isSum ? temporalityOf(m.sum!.aggregationTemporality ?? 0) : 'unspecified';
          const monotonic = isSum ? !!m.sum!.isMonotonic : false;
          const dps = data.dataPoints ?? [];
          for (let k = 0; k < dps.length; k++) {
            const dp = dps[k];
            const time = pbNanosToMs(dp.timeUnixNano);
            if (time === 0) {
              rej.add(R_NO_TIME);
              continue;
            }
            const rec = basePoint(sctx, name, desc, unit, isSum ? 'sum' : 'gauge', temporality, monotonic,
              pbNanosToMs(dp.startTimeUnixNano), time, pbAttrs(dp.attributes), dp.flags ?? 0);
            const ex = pbExemplars(dp.exemplars);
            if (ex) rec.exemplars = ex;
            rec.value = hasOwn.call(dp, 'asDouble') ? (dp.asDouble as number) : hasOwn.call(dp, 'asInt') ? pbI64(dp.asInt) : 0;
            records.push(rec);
          }
        } else if (m.histogram) {
          const temporality = temporalityOf(m.histogram.aggregationTemporality ?? 0);
          const dps = m.histogram.dataPoints ?? [];
          for (let k = 0; k < dps.length; k++) {
            const dp = dps[k];
            const time = pbNanosToMs(dp.timeUnixNano);
            if (time === 0) {
              rej.add(R_NO_TIME);
              continue;
            }
            const rec = basePoint(sctx, name, desc, unit, 'hist', temporality, false,
              pbNanosToMs(dp.startTimeUnixNano), time, pbAttrs(dp.attributes), dp.flags ?? 0);
            const ex = pbExemplars(dp.exemplars);
            if (ex) rec.exemplars = ex;
            rec.count = pbU64(dp.count);
            rec.sum = pbOptDouble(dp, 'sum');
            rec.min = pbOptDouble(dp, 'min');
            rec.max = pbOptDouble(dp, 'max');
            const bc = dp.bucketCounts ?? [];
            const counts = new Array<number>(bc.length);
            for (let j = 0; j < bc.length; j++) counts[j] = pbU64(bc[j]);
            rec.bucket_counts = counts;
            rec.explicit_bounds = (dp.explicitBounds ?? []).slice();
            records.push(rec);
          }
        } else if (m.exponentialHistogram) {
          const temporality = temporalityOf(m.exponentialHistogram.aggregationTemporality ?? 0);
          const dps = m.exponentialHistogram.dataPoints ?? [];
          for (let k = 0; k < dps.length; k++) {
            const dp = dps[k];
            const time = pbNanosToMs(dp.timeUnixNano);
            if (time === 0) {
              rej.add(R_NO_TIME);
              continue;
            }
            const rec = basePoint(sctx, name, desc, unit, 'exponential_histogram', temporality, false,
              pbNanosToMs(dp.startTimeUnixNano), time, pbAttrs(dp.attributes), dp.flags ?? 0);
            const ex = pbExemplars(dp.exemplars);
            if (ex) rec.exemplars = ex;
            rec.count = pbU64(dp.count);
            rec.sum = pbOptDouble(dp, 'sum');
            rec.min = pbOptDouble(dp, 'min');
            rec.max = pbOptDouble(dp, 'max');
            rec.scale = dp.scale ?? 0;
            rec.zero_count = pbU64(dp.zeroCount);
            rec.zero_threshold = dp.zeroThreshold ?? 0;
            rec.positive = pbBuckets(dp.positive);
            rec.negative = pbBuckets(dp.negative);
            records.push(rec);
          }
        } else if (m.summary) {
          rej.add(R_SUMMARY, (m.summary.dataPoints ?? []).length);
        }
        // A metric with no data carries zero points: nothing kept, nothing rejected.
      }
    }
  }
  return { records, rejected: rej.count, rejectionMessage: rej.message('data points') };
}

// ---------------------------------------------------------------------------------------------
// OTLP/JSON
// ---------------------------------------------------------------------------------------------

type Json = Record<string, unknown>;

function parseJsonRoot(body: Buffer, signal: OtlpSignal): Json {
  let root: unknown;
  try {
    root = JSON.parse(body.toString('utf8'));
  } catch (err) {
    const msg = err instanceof Error ? err.message : String(err);
    throw new OtlpDecodeError(`cannot parse OTLP/JSON ${signal} request: ${msg}`, { cause: err });
  }
  if (!isObj(root)) throw new OtlpDecodeError(`OTLP/JSON ${signal} request must be a JSON object`);
  return root;
}

/** Conversion bugs on hostile JSON shapes become 400s, not 500s. */
function guardJson<T>(signal: OtlpSignal, fn: () => T): T {
  try {
    return fn();
  } catch (err) {
    if (err instanceof OtlpDecodeError) throw err;
    const msg = err instanceof Error ? err.message : String(err);
    throw new OtlpDecodeError(`invalid OTLP/JSON ${signal} request: ${msg}`, { cause: err });
  }
}

function isObj(v: unknown): v is Json {
  return typeof v === 'object' && v !== null && !Array.isArray(v);
}

/** Field by lowerCamelCase name, falling back to the proto (snake_case) name. */
function pick(o: Json, camel: string, snake?: string): unknown {
  const v = o[camel];
  return v !== undefined || snake === undefined ? v : o[snake];
}

function arr(v: unknown): unknown[] {
  return Array.isArray(v) ? v : [];
}

function str(v: unknown): string {
  return typeof v === 'string' ? v : '';
}

/** JSON double: number, or a string ("NaN", "Infinity", "1.5"). */
function jNum(v: unknown): number {
  if (typeof v === 'number') return v;
  if (typeof v === 'string' && v !== '') {
    const n = Number(v);
    return Number.isNaN(n) && v !== 'NaN' ? 0 : n;
  }
  return 0;
}

function jOptNum(v: unknown): number | null {
  return v === undefined || v === null ? null : jNum(v);
}

/** JSON int64/uint64 (string or number) → number. */
function jInt(v: unknown): number {
  if (typeof v === 'number') return Number.isFinite(v) ? Math.trunc(v) : 0;
  if (typeof v === 'string' && v !== '') {
    const n = Number(v);
    return Number.isFinite(n) ? Math.trunc(n) : 0;
  }
  return 0;
}

const DIGITS = /^\d+$/;

/** JSON nanoseconds (string or number) → epoch ms, keeping sub-ms precision of long strings. */
function jNanosToMs(v: unknown): number {
  if (typeof v === 'number') return Number.isFinite(v) && v > 0 ? v / 1e6 : 0;
  if (typeof v === 'string' && v !== '') {
    if (v.length > 9 && DIGITS.test(v)) return Number(v.slice(0, -6)) + Number(v.slice(-6)) / 1e6;
    const n = Number(v);
    return Number.isFinite(n) && n > 0 ? n / 1e6 : 0;
  }
  return 0;
}

function jEnum(v: unknown, names: Readonly<Record<string, number>>): number {
  if (typeof v === 'number') return Number.isInteger(v) ? v : 0;
  if (typeof v === 'string') {
    const n = names[v];
    if (n !== undefined) return n;
    const x = Number(v);
    return Number.isInteger(x) ? x : 0;
  }
  return 0;
}

const HEX_RE = /^[0-9a-fA-F]+$/;

/** Hex id string → lowercase hex, or null when not `len` bytes of hex or all zero. */
function jId(v: unknown, len: number): string | null {
  if (typeof v !== 'string' || v.length !== len * 2 || !HEX_RE.test(v)) return null;
  const s = v.toLowerCase();
  for (let i = 0; i < s.length; i++) if (s.charCodeAt(i) !== 48) return s;
  return null;
}

function jIntAttr(v: unknown): AttrValue {
  if (typeof v === 'number') return Number.isSafeInteger(v) ? v : Number.isInteger(v) ? BigInt(v).toString() : v;
  if (typeof v === 'string') {
    const n = Number(v);
    if (Number.isSafeInteger(n)) return n;
    return /^-?\d+$/.test(v.trim()) ? v.trim() : Number.isFinite(n) ? n : v;
  }
  return null;
}

function jAny(v: unknown): AttrValue {
  if (!isObj(v)) return null;
  let x = pick(v, 'stringValue', 'string_value');
  if (x !== undefined) return typeof x === 'string' ? x : x === null ? null : String(x);
  x = pick(v, 'intValue', 'int_value');
  if (x !== undefined) return jIntAttr(x);
  x = pick(v, 'doubleValue', 'double_value');
  if (x !== undefined) return jNum(x);
  x = pick(v, 'boolValue', 'bool_value');
  if (x !== undefined) return x === true || x === 'true';
  x = pick(v, 'arrayValue', 'array_value');
  if (x !== undefined) return isObj(x) ? arr(x.values).map(jAny) : [];
  x = pick(v, 'kvlistValue', 'kvlist_value');
  if (x !== undefined) return isObj(x) ? jAttrs(x.values) : {};
  x = pick(v, 'bytesValue', 'bytes_value');
  if (x !== undefined) return typeof x === 'string' ? x : '';
  return null;
}

function jAttrs(v: unknown): Attributes {
  const out: Attributes = {};
  if (!Array.isArray(v)) return out;
  for (let i = 0; i < v.length; i++) {
    const kv = v[i];
    if (!isObj(kv) || typeof kv.key !== 'string') continue;
    setAttr(out, kv.key, jAny(kv.value));
  }
  return out;
}

function jResource(container: Json): Attributes {
  const res = container.resource;
  return isObj(res) ? jAttrs(res.attributes) : {};
}

function jScope(v: unknown): InstrumentationScope {
  if (!isObj(v)) return { name: '', version: '', attributes: {} };
  return { name: str(v.name), version: str(v.version), attributes: jAttrs(v.attributes) };
}

/** Iterate resource → scope → items, counting non-object items as rejected. */
function jWalk(
  root: Json,
  keys: { resource: [string, string]; scope: [string, string]; items: [string, string] },
  rej: Rejections,
  each: (item: Json, resource: Attributes, serviceName: string, scope: InstrumentationScope) => void,
): void {
  for (const rs of arr(pick(root, ...keys.resource))) {
    if (!isObj(rs)) continue;
    const resource = jResource(rs);
    const serviceName = serviceNameOf(resource);
    for (const ss of arr(pick(rs, ...keys.scope))) {
      if (!isObj(ss)) continue;
      const scope = jScope(ss.scope);
      for (const item of arr(pick(ss, ...keys.items))) {
        if (!isObj(item)) {
          rej.add(R_NOT_OBJECT);
          continue;
        }
        each(item, resource, serviceName, scope);
      }
    }
  }
}

function jsonTraces(root: Json): DecodeResult<SpanRecord> {
  const records: SpanRecord[] = [];
  const rej = new Rejections();
  const keys = {
    resource: ['resourceSpans', 'resource_spans'] as [string, string],
    scope: ['scopeSpans', 'scope_spans'] as [string, string],
    items: ['spans', 'spans'] as [string, string],
  };
  jWalk(root, keys, rej, (sp, resource, serviceName, scope) => {
    const traceId = jId(pick(sp, 'traceId', 'trace_id'), 16);
    if (traceId === null) return rej.add(R_TRACE_ID);
    const spanId = jId(pick(sp, 'spanId', 'span_id'), 8);
    if (spanId === null) return rej.add(R_SPAN_ID);
    let parent: string | null = null;
    const p = pick(sp, 'parentSpanId', 'parent_span_id');
    if (p !== undefined && p !== null && p !== '') {
      if (typeof p !== 'string' || p.length !== 16 || !HEX_RE.test(p)) return rej.add(R_PARENT_ID);
      parent = jId(p, 8);
    }
    const events: SpanEventRecord[] = [];
    for (const ev of arr(sp.events)) {
      if (!isObj(ev)) continue;
      events.push({ time_ms: jNanosToMs(pick(ev, 'timeUnixNano', 'time_unix_nano')), name: str(ev.name), attributes: jAttrs(ev.attributes) });
    }
    const links: SpanLinkRecord[] = [];
    for (const lk of arr(sp.links)) {
      if (!isObj(lk)) continue;
      const lt = jId(pick(lk, 'traceId', 'trace_id'), 16);
      const ls = jId(pick(lk, 'spanId', 'span_id'), 8);
      if (lt === null || ls === null) continue;
      links.push({ trace_id: lt, span_id: ls, trace_state: str(pick(lk, 'traceState', 'trace_state')), attributes: jAttrs(lk.attributes) });
    }
    const st = isObj(sp.status) ? sp.status : null;
    records.push({
      resource,
      scope,
      service_name: serviceName,
      trace_id: traceId,
      span_id: spanId,
      parent_span_id: parent,
      trace_state: str(pick(sp, 'traceState', 'trace_state')),
      name: str(sp.name),
      kind: jEnum(sp.kind, SpanKindValues),
      start_ms: jNanosToMs(pick(sp, 'startTimeUnixNano', 'start_time_unix_nano')),
      end_ms: jNanosToMs(pick(sp, 'endTimeUnixNano', 'end_time_unix_nano')),
      status_code: st ? jEnum(st.code, StatusCodeValues) : 0,
      status_message: st ? str(st.message) : '',
      attributes: jAttrs(sp.attributes),
      events,
      links,
    });
  });
  return { records, rejected: rej.count, rejectionMessage: rej.message('spans') };
}

function jsonLogs(root: Json): DecodeResult<LogRecordOut> {
  const records: LogRecordOut[] = [];
  const rej = new Rejections();
  const now = Date.now();
  const keys = {
    resource: ['resourceLogs', 'resource_logs'] as [string, string],
    scope: ['scopeLogs', 'scope_logs'] as [string, string],
    items: ['logRecords', 'log_records'] as [string, string],
  };
  jWalk(root, keys, rej, (lr, resource, serviceName, scope) => {
    const t = jNanosToMs(pick(lr, 'timeUnixNano', 'time_unix_nano'));
    const o = jNanosToMs(pick(lr, 'observedTimeUnixNano', 'observed_time_unix_nano'));
    records.push({
      resource,
      scope,
      service_name: serviceName,
      time_ms: t !== 0 ? t : o !== 0 ? o : now,
      observed_time_ms: o !== 0 ? o : now,
      severity_number: jEnum(pick(lr, 'severityNumber', 'severity_number'), SeverityNumberValues),
      severity_text: str(pick(lr, 'severityText', 'severity_text')),
      body: jAny(lr.body),
      attributes: jAttrs(lr.attributes),
      trace_id: jId(pick(lr, 'traceId', 'trace_id'), 16),
      span_id: jId(pick(lr, 'spanId', 'span_id'), 8),
      flags: jInt(lr.flags),
      event_name: str(pick(lr, 'eventName', 'event_name')),
    });
  });
  return { records, rejected: rej.count, rejectionMessage: rej.message('log records') };
}

function jBuckets(v: unknown): ExpBuckets {
  if (!isObj(v)) return { offset: 0, bucket_counts: [] };
  return { offset: jInt(v.offset), bucket_counts: arr(pick(v, 'bucketCounts', 'bucket_counts')).map(jInt) };
}

function jsonMetrics(root: Json): DecodeResult<MetricPointRecord> {
  const records: MetricPointRecord[] = [];
  const rej = new Rejections();
  const keys = {
    resource: ['resourceMetrics', 'resource_metrics'] as [string, string],
    scope: ['scopeMetrics', 'scope_metrics'] as [string, string],
    items: ['metrics', 'metrics'] as [string, string],
  };
  jWalk(root, keys, rej, (m, resource, serviceName, scope) => {
    const ctx: ResourceContext = { resource, scope, service_name: serviceName };
    const name = str(m.name);
    const desc = str(m.description);
    const unit = str(m.unit);
    const gauge = m.gauge;
    const sum = m.sum;
    const hist = m.histogram;
    const exp = pick(m, 'exponentialHistogram', 'exponential_histogram');
    const summary = m.summary;

    /** Common point header; null (and counted) when the point must be rejected. */
    const head = (dp: unknown, type: MetricType, temporality: Temporality, monotonic: boolean): [MetricPointRecord, Json] | null => {
      if (!isObj(dp)) {
        rej.add(R_NOT_OBJECT);
        return null;
      }
      const time = jNanosToMs(pick(dp, 'timeUnixNano', 'time_unix_nano'));
      if (time === 0) {
        rej.add(R_NO_TIME);
        return null;
      }
      const rec = basePoint(ctx, name, desc, unit, type, temporality, monotonic,
        jNanosToMs(pick(dp, 'startTimeUnixNano', 'start_time_unix_nano')), time, jAttrs(dp.attributes), jInt(dp.flags));
      const ex = arr(dp.exemplars);
      if (ex.length) {
        rec.exemplars = ex.filter(isObj).map((e) => {
          const d = pick(e, 'asDouble', 'as_double');
          const n = pick(e, 'asInt', 'as_int');
          return {
            time_ms: jNanosToMs(pick(e, 'timeUnixNano', 'time_unix_nano')),
            value: d !== undefined ? jNum(d) : n !== undefined ? jInt(n) : 0,
            trace_id: jId(pick(e, 'traceId', 'trace_id'), 16),
            span_id: jId(pick(e, 'spanId', 'span_id'), 8),
            attributes: jAttrs(pick(e, 'filteredAttributes', 'filtered_attributes')),
          };
        });
      }
      return [rec, dp];
    };
    const points = (data: Json): unknown[] => arr(pick(data, 'dataPoints', 'data_points'));
    const temporalityOfJson = (data: Json): Temporality =>
      temporalityOf(jEnum(pick(data, 'aggregationTemporality', 'aggregation_temporality'), AggregationTemporalityValues));

    if (isObj(gauge) || isObj(sum)) {
      const isSum = !isObj(gauge);
      const data = (isSum ? sum : gauge) as Json;
      const temporality = isSum ? temporalityOfJson(data) : 'unspecified';
      const mono = isSum ? pick(data, 'isMonotonic', 'is_monotonic') === true : false;
      for (const p of points(data)) {
        const h = head(p, isSum ? 'sum' : 'gauge', temporality, mono);
        if (!h) continue;
        const [rec, dp] = h;
        const d = pick(dp, 'asDouble', 'as_double');
        const n = pick(dp, 'asInt', 'as_int');
        rec.value = d !== undefined ? jNum(d) : n !== undefined ? jInt(n) : 0;
        records.push(rec);
      }
    } else if (isObj(hist)) {
      const temporality = temporalityOfJson(hist);
      for (const p of points(hist)) {
        const h = head(p, 'hist', temporality, false);
        if (!h) continue;
        const [rec, dp] = h;
        rec.count = jInt(dp.count);
        rec.sum = jOptNum(dp.sum);
        rec.min = jOptNum(dp.min);
        rec.max = jOptNum(dp.max);
        rec.bucket_counts = arr(pick(dp, 'bucketCounts', 'bucket_counts')).map(jInt);
        rec.explicit_bounds = arr(pick(dp, 'explicitBounds', 'explicit_bounds')).map(jNum);
        records.push(rec);
      }
    } else if (isObj(exp)) {
      const temporality = temporalityOfJson(exp);
      for (const p of points(exp)) {
        const h = head(p, 'exponential_histogram', temporality, false);
        if (!h) continue;
        const [rec, dp] = h;
        rec.count = jInt(dp.count);
        rec.sum = jOptNum(dp.sum);
        rec.min = jOptNum(dp.min);
        rec.max = jOptNum(dp.max);
        rec.scale = jInt(dp.scale);
        rec.zero_count = jInt(pick(dp, 'zeroCount', 'zero_count'));
        rec.zero_threshold = jNum(pick(dp, 'zeroThreshold', 'zero_threshold'));
        rec.positive = jBuckets(dp.positive);
        rec.negative = jBuckets(dp.negative);
        records.push(rec);
      }
    } else if (isObj(summary)) {
      rej.add(R_SUMMARY, points(summary).length);
    }
  });
  return { records, rejected: rej.count, rejectionMessage: rej.message('data points') };
}
