/**
 * What ingestion keeps of one record, after the OpenTelemetry SDK attribute limits a user expects
 * (attribute count per record, value length), plus a cap on the encoded size of a record's
 * attributes and body, and the clamping of client clocks (as Relay does for Sentry events).
 * Pure functions: they run in the decode workers. What they cut is counted in `LimitCounts` and
 * becomes ingest outcomes; a record that lost attributes carries `sightline.dropped_attributes_count`.
 */
import type { AttrValue, Attributes, ErrorEventRecord, LogRecordOut, MetricPointRecord, SpanRecord } from '../domain/telemetry-types.js';

export interface IngestLimits {
  /** Attributes kept per record (span, span event, span link, log record, metric point, resource). OTel default 128. */
  attributeCountLimit: number;
  /** Characters kept of a string attribute value (each string of an array or map value too). */
  attributeValueLengthLimit: number;
  /** Encoded (JSON, UTF-8) bytes of a record's attributes, and separately of a log body. */
  recordMaxBytes: number;
  /** Span events and links kept per span (OTel default 128 each). */
  spanEventCountLimit: number;
  spanLinkCountLimit: number;
  /** Items per Sentry envelope (all types), and per type below. */
  envelopeMaxItems: number;
  /** Sessions per envelope (Relay's max_session_count). */
  envelopeMaxSessions: number;
  /** Log records and standalone spans per envelope. */
  envelopeMaxLogs: number;
  envelopeMaxSpans: number;
  /** Event times more than this ahead of the receive time are clamped to it (Relay: 60 s). */
  maxFutureMs: number;
}

export const DEFAULT_INGEST_LIMITS: IngestLimits = {
  attributeCountLimit: 128,
  attributeValueLengthLimit: 8192,
  recordMaxBytes: 64 * 1024,
  spanEventCountLimit: 128,
  spanLinkCountLimit: 128,
  envelopeMaxItems: 1000,
  envelopeMaxSessions: 100,
  envelopeMaxLogs: 1000,
  envelopeMaxSpans: 1000,
  maxFutureMs: 60_000,
};

function int(v: string | undefined, dflt: number): number {
  if (v === undefined || v === '') return dflt;
  const n = Number(v);
  if (!Number.isInteger(n) || n < 1) throw new Error(`Expected a positive integer, got ${JSON.stringify(v)}`);
  return n;
}

/** Limits from the environment (README, "Ingest limits"). */
export function ingestLimitsFromEnv(env: NodeJS.ProcessEnv = process.env): IngestLimits {
  const d = DEFAULT_INGEST_LIMITS;
  return {
    ...d,
    attributeCountLimit: int(env.SIGHTLINE_INGEST_ATTRIBUTE_COUNT_LIMIT, d.attributeCountLimit),
    attributeValueLengthLimit: int(env.SIGHTLINE_INGEST_ATTRIBUTE_VALUE_LENGTH_LIMIT, d.attributeValueLengthLimit),
    recordMaxBytes: int(env.SIGHTLINE_INGEST_RECORD_MAX_BYTES, d.recordMaxBytes),
    envelopeMaxItems: int(env.SIGHTLINE_INGEST_ENVELOPE_MAX_ITEMS, d.envelopeMaxItems),
  };
}

/** What was cut, per kind; turned into ingest outcomes (category = record kind). */
export interface LimitCounts {
  /** Attributes dropped (count limit or record size). */
  attributes_dropped: number;
  /** String values truncated (value length limit, log bodies over the record size). */
  values_truncated: number;
  /** Span events and links dropped. */
  span_events_dropped: number;
  /** Event times clamped to the receive time. */
  future_timestamp: number;
}

export const newLimitCounts = (): LimitCounts => ({ attributes_dropped: 0, values_truncated: 0, span_events_dropped: 0, future_timestamp: 0 });

export function addCounts(into: LimitCounts, from: LimitCounts): void {
  for (const k of Object.keys(into) as (keyof LimitCounts)[]) into[k] += from[k];
}

/** The attribute a record that lost attributes carries (OTLP's dropped_attributes_count). */
export const DROPPED_ATTRIBUTES_KEY = 'sightline.dropped_attributes_count';
/** The time a client sent, kept when it was clamped (Relay's `sent_timestamp`). */
export const SENT_TIMESTAMP_KEY = 'sent_timestamp';

function truncValue(v: AttrValue, max: number, c: LimitCounts, depth = 0): AttrValue {
  if (typeof v === 'string') {
    if (v.length <= max) return v;
    c.values_truncated++;
    return v.slice(0, max);
  }
  if (v === null || typeof v !== 'object' || depth > 8) return v;
  if (Array.isArray(v)) {
    let out: AttrValue[] | null = null;
    for (let i = 0; i < v.length; i++) {
      const n = truncValue(v[i]!, max, c, depth + 1);
      if (n !== v[i]) (out ??= v.slice())[i] = n;
    }
    return out ?? v;
  }
  let out: Record<string, AttrValue> | null = null;
  for (const k in v) {
    const n = truncValue(v[k]!, max, c, depth + 1);
    if (n !== v[k]) (out ??= { ...v })[k] = n;
  }
  return out ?? v;
}

/**
 * Apply the count, value length and encoded size limits to one attribute map. Later attributes are
 * dropped first (as the OTel SDKs do). Returns the kept map (the same object when nothing changed)
 * and how many were dropped.
 */
export function limitAttributes(attrs: Attributes, l: IngestLimits, c: LimitCounts, countLimit = l.attributeCountLimit): { attributes: Attributes; dropped: number } {
  const keys = Object.keys(attrs);
  if (keys.length <= countLimit) {
    // Fast path: flat values whose worst-case UTF-8 size fits are kept as they are.
    let bound = 2;
    let flat = true;
    for (const k of keys) {
      const v = attrs[k];
      if (typeof v === 'string') {
        if (v.length > l.attributeValueLengthLimit) {
          flat = false;
          break;
        }
        bound += 6 * v.length + 2;
      } else if (v !== null && typeof v === 'object') {
        flat = false;
        break;
      } else bound += 24;
      bound += 6 * k.length + 4;
    }
    if (flat && bound <= l.recordMaxBytes) return { attributes: attrs, dropped: 0 };
  }
  let changed = false;
  let kept: string[] = keys;
  if (keys.length > countLimit) {
    kept = keys.slice(0, countLimit);
    changed = true;
  }
  const out: Attributes = {};
  let size = 2;
  let dropped = keys.length - kept.length;
  for (const k of kept) {
    const v0 = attrs[k]!;
    const v = truncValue(v0, l.attributeValueLengthLimit, c);
    if (v !== v0) changed = true;
    // JSON size of `"key":value,` — counted in UTF-16 units × up to 3 bytes would overestimate; use the real UTF-8 length.
    const entry = Buffer.byteLength(JSON.stringify(k)) + Buffer.byteLength(JSON.stringify(v) ?? 'null') + 2;
    if (size + entry > l.recordMaxBytes) {
      dropped++;
      changed = true;
      continue;
    }
    size += entry;
    out[k] = v;
  }
  c.attributes_dropped += dropped;
  return { attributes: changed ? out : attrs, dropped };
}

function withDropped(attrs: Attributes, dropped: number): Attributes {
  if (!dropped) return attrs;
  const prev = typeof attrs[DROPPED_ATTRIBUTES_KEY] === 'number' ? (attrs[DROPPED_ATTRIBUTES_KEY] as number) : 0;
  return { ...attrs, [DROPPED_ATTRIBUTES_KEY]: prev + dropped };
}

/** Limits on a log record: attributes, and its body (a string over the record size is cut; a structured one becomes its cut JSON). */
export function limitLog(r: LogRecordOut, l: IngestLimits, c: LimitCounts, receivedMs: number): LogRecordOut {
  const { attributes, dropped } = limitAttributes(r.attributes, l, c);
  let body = r.body;
  if (typeof body === 'string') {
    if (Buffer.byteLength(body) > l.recordMaxBytes) {
      body = cutUtf8(body, l.recordMaxBytes);
      c.values_truncated++;
    }
  } else if (body !== null && typeof body === 'object') {
    const json = JSON.stringify(body);
    if (Buffer.byteLength(json) > l.recordMaxBytes) {
      body = cutUtf8(json, l.recordMaxBytes);
      c.values_truncated++;
    }
  }
  let attrs = withDropped(attributes, dropped);
  let time = r.time_ms;
  if (time > receivedMs + l.maxFutureMs) {
    attrs = { ...attrs, [SENT_TIMESTAMP_KEY]: isoOrNumber(time) };
    time = receivedMs;
    c.future_timestamp++;
  }
  if (attrs === r.attributes && body === r.body && time === r.time_ms) return r;
  return { ...r, attributes: attrs, body, time_ms: time };
}

/** Limits on a span: its attributes, its events and links (count, and their attributes); a future start is moved to the receive time. */
export function limitSpan(r: SpanRecord, l: IngestLimits, c: LimitCounts, receivedMs: number): SpanRecord {
  const { attributes, dropped } = limitAttributes(r.attributes, l, c);
  let events = r.events;
  let links = r.links;
  if (events.length > l.spanEventCountLimit) {
    c.span_events_dropped += events.length - l.spanEventCountLimit;
    events = events.slice(0, l.spanEventCountLimit);
  }
  if (links.length > l.spanLinkCountLimit) {
    c.span_events_dropped += links.length - l.spanLinkCountLimit;
    links = links.slice(0, l.spanLinkCountLimit);
  }
  events = mapIfChanged(events, (e) => {
    const a = limitAttributes(e.attributes, l, c);
    return a.attributes === e.attributes ? e : { ...e, attributes: withDropped(a.attributes, a.dropped) };
  });
  links = mapIfChanged(links, (k) => {
    const a = limitAttributes(k.attributes, l, c);
    return a.attributes === k.attributes ? k : { ...k, attributes: withDropped(a.attributes, a.dropped) };
  });
  let attrs = withDropped(attributes, dropped);
  let start = r.start_ms;
  let end = r.end_ms;
  if (start > receivedMs + l.maxFutureMs) {
    const shift = start - receivedMs;
    attrs = { ...attrs, [SENT_TIMESTAMP_KEY]: isoOrNumber(start) };
    start -= shift;
    end -= shift;
    events = events.map((e) => ({ ...e, time_ms: e.time_ms - shift }));
    c.future_timestamp++;
  }
  const resource = limitResource(r.resource, l, c);
  if (attrs === r.attributes && events === r.events && links === r.links && start === r.start_ms && resource === r.resource) return r;
  return { ...r, resource, attributes: attrs, events, links, start_ms: start, end_ms: end };
}

/** Limits on a metric point's attributes. */
export function limitPoint(r: MetricPointRecord, l: IngestLimits, c: LimitCounts): MetricPointRecord {
  const { attributes, dropped } = limitAttributes(r.attributes, l, c);
  const resource = limitResource(r.resource, l, c);
  if (attributes === r.attributes && resource === r.resource) return r;
  return { ...r, resource, attributes: withDropped(attributes, dropped) };
}

// Resources are shared by every record of a batch: limit each distinct object once.
const resourceCache = new WeakMap<Attributes, Attributes>();
function limitResource(res: Attributes, l: IngestLimits, c: LimitCounts): Attributes {
  const hit = resourceCache.get(res);
  if (hit) return hit;
  const a = limitAttributes(res, l, c);
  const out = withDropped(a.attributes, a.dropped);
  resourceCache.set(res, out);
  return out;
}

/**
 * Client clocks are not trusted without limit (Relay's rule): an error event more than `maxFutureMs`
 * ahead of the receive time gets the receive time; the time it was sent is kept in the
 * `sent_timestamp` tag and in the payload's `errors` (as Relay's `future_timestamp`). So a client clock
 * cannot pin a group to the top of a list, nor make ingestion latency negative. Old events keep their
 * time (backfills and retries stay where they happened).
 */
export function clampEventTime(e: ErrorEventRecord, l: IngestLimits, c: LimitCounts): ErrorEventRecord {
  if (e.timestamp_ms <= e.received_ms + l.maxFutureMs) return e;
  c.future_timestamp++;
  const sent = isoOrNumber(e.timestamp_ms);
  const payload =
    e.payload && typeof e.payload === 'object' && !Array.isArray(e.payload)
      ? {
          ...(e.payload as Record<string, unknown>),
          errors: [
            ...(Array.isArray((e.payload as Record<string, unknown>).errors) ? ((e.payload as Record<string, unknown>).errors as unknown[]) : []),
            { type: 'future_timestamp', name: 'timestamp', sent_timestamp: sent },
          ],
        }
      : e.payload;
  return { ...e, timestamp_ms: e.received_ms, tags: { ...e.tags, [SENT_TIMESTAMP_KEY]: String(sent) }, payload };
}

function isoOrNumber(ms: number): string {
  const d = new Date(ms);
  return Number.isFinite(d.getTime()) ? d.toISOString() : String(ms);
}

function mapIfChanged<T>(arr: T[], fn: (x: T) => T): T[] {
  let out: T[] | null = null;
  for (let i = 0; i < arr.length; i++) {
    const n = fn(arr[i]!);
    if (n !== arr[i]) (out ??= arr.slice())[i] = n;
  }
  return out ?? arr;
}

/** Cut a string to at most `maxBytes` UTF-8 bytes without splitting a character. */
function cutUtf8(s: string, maxBytes: number): string {
  const b = Buffer.from(s, 'utf8');
  if (b.length <= maxBytes) return s;
  let end = maxBytes;
  while (end > 0 && (b[end]! & 0xc0) === 0x80) end--;
  return b.subarray(0, end).toString('utf8');
}
