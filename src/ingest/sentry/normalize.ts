/**
 * Sentry JSON (event / transaction / span / log / feedback / session item payloads) → normalized records.
 *
 * Service name — one rule for every item type (see `sentryServiceName`):
 *   1. tag `service.name`                         (events and static transactions carry scope tags)
 *   2. `contexts.trace.data['service.name']`      (a span attribute on the root span)
 *   3. `contexts.otel.resource['service.name']`   (SDKs that bridge an OpenTelemetry resource)
 *   4. attribute `service.name`                   (logs and streamed spans carry scope *attributes*, not tags)
 *   5. otherwise ''.
 * `server_name` is deliberately NOT used as a fallback: it is a host name (os.hostname() by default), it is
 * kept in ErrorEventRecord.server_name / resource `host.name`, and streamed spans do not carry it at all, so
 * falling back to it would split one app's errors, logs and spans across different "services".
 * To name a service with the real SDK set both: `Sentry.setTags({'service.name': X})` and
 * `Sentry.getGlobalScope().setAttributes({'service.name': X})`.
 *
 * Resource attributes derived for spans and logs: service.name (when known), service.version ← release,
 * deployment.environment ← environment, host.name ← server_name / `server.address`, telemetry.sdk.name /
 * telemetry.sdk.version ← the SDK. The instrumentation scope is the SDK (name/version).
 */
import { userField } from '../../domain/errors/users.js';
import { randomUUID } from 'node:crypto';
import type {
  AttrValue,
  Attributes,
  ErrorEventRecord,
  ExceptionValue,
  InstrumentationScope,
  LogRecordOut,
  SpanLinkRecord,
  SpanRecord,
  StackFrame,
} from '../../domain/telemetry-types.js';

// ---------------------------------------------------------------------------------------------------------
// small helpers

function isObj(v: unknown): v is Record<string, any> {
  return typeof v === 'object' && v !== null && !Array.isArray(v);
}

function str(v: unknown): string {
  if (v === undefined || v === null) return '';
  if (typeof v === 'string') return v;
  if (typeof v === 'number' || typeof v === 'boolean' || typeof v === 'bigint') return String(v);
  try {
    return JSON.stringify(v) ?? '';
  } catch {
    return String(v);
  }
}

function optStr(v: unknown): string | undefined {
  return typeof v === 'string' && v !== '' ? v : undefined;
}

const HEX32 = /^[0-9a-f]{32}$/;
const HEX16 = /^[0-9a-f]{16}$/;

function hexId(v: unknown, re: RegExp): string | null {
  if (typeof v !== 'string') return null;
  const s = v.toLowerCase().replace(/-/g, '');
  return re.test(s) ? s : null;
}

/** Sentry timestamps are seconds (float) or RFC 3339 strings. Values that are clearly ms are accepted too. */
export function sentryTimeToMs(v: unknown): number | undefined {
  if (typeof v === 'number') {
    if (!Number.isFinite(v) || v < 0) return undefined;
    return v > 1e11 ? v : v * 1000; // > 1e11 s would be year 5138: treat as ms
  }
  if (typeof v === 'string' && v.trim() !== '') {
    const t = v.trim();
    if (/^\d+(\.\d+)?$/.test(t)) return sentryTimeToMs(Number(t));
    // RFC 3339 without an offset is UTC in Sentry's protocol.
    const iso = /[zZ]$|[+-]\d\d:?\d\d$/.test(t) || !/T/.test(t) ? t : `${t}Z`;
    const ms = Date.parse(iso);
    return Number.isFinite(ms) ? ms : undefined;
  }
  return undefined;
}

/** Arbitrary JSON → AttrValue (undefined / functions are dropped; non-finite numbers become strings). */
export function toAttrValue(v: unknown, depth = 0): AttrValue | undefined {
  if (v === undefined || typeof v === 'function' || typeof v === 'symbol') return undefined;
  if (v === null || typeof v === 'string' || typeof v === 'boolean') return v;
  if (typeof v === 'number') return Number.isFinite(v) ? v : String(v);
  if (typeof v === 'bigint') return v.toString();
  if (depth > 16) return str(v);
  if (Array.isArray(v)) {
    return v.map((x) => toAttrValue(x, depth + 1)).map((x) => (x === undefined ? null : x));
  }
  if (isObj(v)) {
    const out: { [k: string]: AttrValue } = {};
    for (const [k, x] of Object.entries(v)) {
      const a = toAttrValue(x, depth + 1);
      if (a !== undefined) out[k] = a;
    }
    return out;
  }
  return str(v);
}

function toAttributes(obj: unknown): Attributes {
  const out: Attributes = {};
  if (!isObj(obj)) return out;
  for (const [k, v] of Object.entries(obj)) {
    const a = toAttrValue(v);
    if (a !== undefined) out[k] = a;
  }
  return out;
}

/**
 * Sentry's typed attributes (`{ key: { value, type: 'string'|'integer'|'double'|'boolean'|'array', unit? } }`,
 * used by log and span-v2 items) → plain Attributes. Untyped values are accepted as-is.
 */
export function fromTypedAttributes(obj: unknown): Attributes {
  const out: Attributes = {};
  if (!isObj(obj)) return out;
  for (const [k, raw] of Object.entries(obj)) {
    const v = isObj(raw) && 'value' in raw ? raw.value : raw;
    const a = toAttrValue(v);
    if (a !== undefined) out[k] = a;
  }
  return out;
}

/** Tags arrive as an object or as `[[key, value], ...]` pairs; values are stringified. */
export function normalizeTags(tags: unknown): Record<string, string> {
  const out: Record<string, string> = {};
  if (Array.isArray(tags)) {
    for (const pair of tags) {
      if (Array.isArray(pair) && pair.length >= 2 && pair[0] !== null && pair[0] !== undefined) {
        if (pair[1] === null || pair[1] === undefined) continue;
        out[str(pair[0])] = str(pair[1]);
      }
    }
  } else if (isObj(tags)) {
    for (const [k, v] of Object.entries(tags)) {
      if (v === null || v === undefined) continue;
      out[k] = str(v);
    }
  }
  return out;
}

/** The one service-name rule shared by events, transactions, streamed spans and logs (see file header). */
export function sentryServiceName(src: { tags?: unknown; contexts?: unknown; attributes?: Attributes }): string {
  const tags = normalizeTags(src.tags);
  if (tags['service.name']) return tags['service.name'];
  const contexts = isObj(src.contexts) ? src.contexts : {};
  const fromTrace = isObj(contexts.trace) && isObj(contexts.trace.data) ? contexts.trace.data['service.name'] : undefined;
  if (typeof fromTrace === 'string' && fromTrace) return fromTrace;
  const fromOtel = isObj(contexts.otel) && isObj(contexts.otel.resource) ? contexts.otel.resource['service.name'] : undefined;
  if (typeof fromOtel === 'string' && fromOtel) return fromOtel;
  const fromAttr = src.attributes?.['service.name'];
  if (typeof fromAttr === 'string' && fromAttr) return fromAttr;
  return '';
}

function buildResource(p: {
  service_name: string;
  release?: string;
  environment?: string;
  host?: string;
  sdkName?: string;
  sdkVersion?: string;
}): Attributes {
  const r: Attributes = {};
  if (p.service_name) r['service.name'] = p.service_name;
  if (p.release) r['service.version'] = p.release;
  if (p.environment) r['deployment.environment'] = p.environment;
  if (p.host) r['host.name'] = p.host;
  if (p.sdkName) r['telemetry.sdk.name'] = p.sdkName;
  if (p.sdkVersion) r['telemetry.sdk.version'] = p.sdkVersion;
  return r;
}

function sdkScope(name?: string, version?: string): InstrumentationScope {
  return { name: name || 'sentry', version: version || '', attributes: {} };
}

// ---------------------------------------------------------------------------------------------------------
// error events

const LEVELS = new Set(['fatal', 'error', 'warning', 'info', 'debug']);
const LEVEL_ALIASES: Record<string, string> = { warn: 'warning', critical: 'fatal', log: 'info', trace: 'debug' };

function normalizeLevel(v: unknown): string {
  const l = typeof v === 'string' ? v.trim().toLowerCase() : '';
  if (LEVELS.has(l)) return l;
  return LEVEL_ALIASES[l] ?? 'error';
}

function frameFromSentry(f: any): StackFrame {
  const out: StackFrame = {};
  if (!isObj(f)) return out;
  const filename = optStr(f.filename);
  const absPath = optStr(f.abs_path);
  const mod = optStr(f.module);
  const fn = optStr(f.function);
  if (filename !== undefined) out.filename = filename;
  if (absPath !== undefined) out.abs_path = absPath;
  if (mod !== undefined) out.module = mod;
  if (fn !== undefined) out.function = fn;
  if (typeof f.lineno === 'number' && Number.isFinite(f.lineno)) out.lineno = f.lineno;
  if (typeof f.colno === 'number' && Number.isFinite(f.colno)) out.colno = f.colno;
  if (typeof f.in_app === 'boolean') out.in_app = f.in_app;
  return out;
}

function exceptionValues(event: any): any[] {
  const ex = event.exception ?? event['sentry.interfaces.Exception'];
  if (Array.isArray(ex)) return ex; // legacy: `exception: [...]`
  if (isObj(ex) && Array.isArray(ex.values)) return ex.values;
  if (isObj(ex) && (ex.type !== undefined || ex.value !== undefined)) return [ex]; // legacy single value
  return [];
}

function exceptionFromSentry(v: any): ExceptionValue {
  const frames = isObj(v?.stacktrace) && Array.isArray(v.stacktrace.frames) ? v.stacktrace.frames : [];
  const out: ExceptionValue = {
    type: str(v?.type),
    value: str(v?.value),
    frames: frames.map(frameFromSentry),
  };
  const mod = optStr(v?.module);
  if (mod !== undefined) out.module = mod;
  return out;
}

function messageOf(event: any): string {
  const m = event.message;
  if (typeof m === 'string' && m !== '') return m;
  if (isObj(m)) {
    // legacy message interface object
    if (typeof m.formatted === 'string' && m.formatted) return m.formatted;
    if (typeof m.message === 'string' && m.message) return m.message;
  }
  for (const le of [event.logentry, event['sentry.interfaces.Message']]) {
    if (isObj(le)) {
      if (typeof le.formatted === 'string' && le.formatted) return le.formatted;
      if (typeof le.message === 'string' && le.message) return le.message;
    }
  }
  return '';
}

function fingerprintOf(event: any): string[] | null {
  const fp = event.fingerprint;
  if (typeof fp === 'string' && fp) return [fp];
  if (!Array.isArray(fp)) return null;
  const out = fp.filter((x: unknown) => x !== null && x !== undefined).map((x: unknown) => str(x));
  return out.length ? out : null;
}

function eventIdOf(v: unknown): string {
  return hexId(v, HEX32) ?? randomUUID().replace(/-/g, '');
}

/** An `event` item payload (or a /store/ body) → ErrorEventRecord. `payload` is the event object itself. */
export function errorEventFromSentry(event: any, receivedMs: number): ErrorEventRecord {
  const e = isObj(event) ? event : {};
  const contexts = isObj(e.contexts) ? e.contexts : {};
  const trace = isObj(contexts.trace) ? contexts.trace : {};
  const tags = normalizeTags(e.tags);
  return {
    event_id: eventIdOf(e.event_id),
    timestamp_ms: sentryTimeToMs(e.timestamp) ?? receivedMs,
    received_ms: receivedMs,
    source: 'sentry',
    platform: optStr(e.platform) ?? 'other',
    level: normalizeLevel(e.level),
    message: messageOf(e),
    exceptions: exceptionValues(e).filter(isObj).map(exceptionFromSentry),
    fingerprint: fingerprintOf(e),
    environment: optStr(e.environment) ?? 'production',
    release: str(e.release),
    service_name: sentryServiceName({ tags, contexts }),
    server_name: str(e.server_name),
    transaction: str(e.transaction),
    tags,
    user: isObj(e.user) ? e.user : null,
    trace_id: hexId(trace.trace_id, HEX32),
    span_id: hexId(trace.span_id, HEX16),
    payload: event,
  };
}

// ---------------------------------------------------------------------------------------------------------
// spans

/** Sentry span status → OTLP status code: 'ok' → 1, absent/'unknown'/'unset' → 0, anything else → 2. */
export function spanStatusCode(status: unknown): number {
  if (typeof status !== 'string' || status === '') return 0;
  const s = status.toLowerCase();
  if (s === 'ok') return 1;
  if (s === 'unknown' || s === 'unset') return 0;
  return 2;
}

const OTEL_KINDS: Record<string, number> = { internal: 1, server: 2, client: 3, producer: 4, consumer: 5 };

/** OTLP SpanKind from an explicit `otel.kind` / `sentry.kind` attribute, else guessed from the Sentry op. */
export function spanKindFor(op: string | undefined, attrs: Attributes): number {
  for (const key of ['otel.kind', 'sentry.kind', 'span.kind']) {
    const k = attrs[key];
    if (typeof k === 'string' && OTEL_KINDS[k.toLowerCase()] !== undefined) return OTEL_KINDS[k.toLowerCase()];
  }
  const o = (op ?? '').toLowerCase();
  if (!o) return 1;
  if (o === 'http.server' || o.endsWith('.server') || o === 'rpc.server' || o === 'function.nextjs' || o === 'navigation' || o === 'pageload')
    return 2;
  if (o === 'http.client' || o.endsWith('.client') || o === 'db' || o.startsWith('db.') || o.startsWith('cache.') || o === 'http')
    return 3;
  if (o === 'queue.publish' || o === 'queue.submit' || o.endsWith('.publish') || o.endsWith('.send')) return 4;
  if (o === 'queue.process' || o === 'queue.receive' || o.endsWith('.process') || o.endsWith('.receive')) return 5;
  return 1;
}

function linksFrom(v: unknown): SpanLinkRecord[] {
  if (!Array.isArray(v)) return [];
  const out: SpanLinkRecord[] = [];
  for (const l of v) {
    if (!isObj(l)) continue;
    const trace_id = hexId(l.trace_id, HEX32);
    const span_id = hexId(l.span_id, HEX16);
    if (!trace_id || !span_id) continue;
    const attributes = isObj(l.attributes) && Object.values(l.attributes).some((x) => isObj(x) && 'type' in x)
      ? fromTypedAttributes(l.attributes)
      : toAttributes(l.attributes);
    if (typeof l.sampled === 'boolean' && attributes['sentry.sampled'] === undefined) attributes['sentry.sampled'] = l.sampled;
    out.push({ trace_id, span_id, trace_state: '', attributes });
  }
  return out;
}

/**
 * A `transaction` item (the static trace lifecycle, `traceLifecycle: 'static'`, and older / browser SDKs)
 * → its root span (from `contexts.trace`, named after `transaction`) followed by its child spans
 * (`spans[]`, named by `description`). Sentry seconds → ms. Tags and measurements go on the root span
 * (`measurements.<name>` attributes). See the file header for the service name and resource.
 */
export function spansFromTransaction(tx: any): SpanRecord[] {
  if (!isObj(tx)) return [];
  const contexts = isObj(tx.contexts) ? tx.contexts : {};
  const trace = isObj(contexts.trace) ? contexts.trace : {};
  const tags = normalizeTags(tx.tags);
  const service_name = sentryServiceName({ tags, contexts });
  const sdk = isObj(tx.sdk) ? tx.sdk : {};
  const resource = buildResource({
    service_name,
    release: optStr(tx.release),
    environment: optStr(tx.environment) ?? 'production',
    host: optStr(tx.server_name),
    sdkName: optStr(sdk.name),
    sdkVersion: optStr(sdk.version),
  });
  const scope = sdkScope(optStr(sdk.name), optStr(sdk.version));
  const traceId = hexId(trace.trace_id, HEX32);
  const rootSpanId = hexId(trace.span_id, HEX16);
  const rootStart = sentryTimeToMs(tx.start_timestamp);
  const rootEnd = sentryTimeToMs(tx.timestamp) ?? rootStart;
  const out: SpanRecord[] = [];

  if (traceId && rootSpanId) {
    const attributes = toAttributes(trace.data);
    const op = optStr(trace.op) ?? optStr(attributes['sentry.op']);
    if (op && attributes['sentry.op'] === undefined) attributes['sentry.op'] = op;
    if (optStr(trace.origin) && attributes['sentry.origin'] === undefined) attributes['sentry.origin'] = trace.origin;
    const source = isObj(tx.transaction_info) ? optStr(tx.transaction_info.source) : undefined;
    if (source && attributes['sentry.source'] === undefined) attributes['sentry.source'] = source;
    for (const [k, v] of Object.entries(tags)) if (attributes[k] === undefined) attributes[k] = v;
    if (isObj(tx.measurements)) {
      for (const [name, m] of Object.entries(tx.measurements)) {
        const value = isObj(m) ? m.value : m;
        if (typeof value === 'number' && Number.isFinite(value)) attributes[`measurements.${name}`] = value;
      }
    }
    const status = optStr(trace.status);
    const code = spanStatusCode(status);
    out.push({
      resource,
      scope,
      service_name,
      trace_id: traceId,
      span_id: rootSpanId,
      parent_span_id: hexId(trace.parent_span_id, HEX16),
      trace_state: '',
      name: str(tx.transaction) || op || '',
      kind: spanKindFor(op, attributes),
      start_ms: rootStart ?? rootEnd ?? 0,
      end_ms: rootEnd ?? rootStart ?? 0,
      status_code: code,
      status_message: code === 2 ? status ?? '' : '',
      attributes,
      events: [],
      links: linksFrom(trace.links),
    });
  }

  for (const s of Array.isArray(tx.spans) ? tx.spans : []) {
    if (!isObj(s)) continue;
    const spanId = hexId(s.span_id, HEX16);
    const tId = hexId(s.trace_id, HEX32) ?? traceId;
    if (!spanId || !tId) continue;
    const attributes = toAttributes(s.data);
    const op = optStr(s.op) ?? optStr(attributes['sentry.op']);
    if (op && attributes['sentry.op'] === undefined) attributes['sentry.op'] = op;
    if (optStr(s.origin) && attributes['sentry.origin'] === undefined) attributes['sentry.origin'] = s.origin;
    for (const [k, v] of Object.entries(normalizeTags(s.tags))) if (attributes[k] === undefined) attributes[k] = v;
    const start = sentryTimeToMs(s.start_timestamp);
    const end = sentryTimeToMs(s.timestamp) ?? start;
    const status = optStr(s.status);
    const code = spanStatusCode(status);
    out.push({
      resource,
      scope,
      service_name,
      trace_id: tId,
      span_id: spanId,
      parent_span_id: hexId(s.parent_span_id, HEX16) ?? (spanId !== rootSpanId ? rootSpanId : null),
      trace_state: '',
      name: str(s.description) || op || '',
      kind: spanKindFor(op, attributes),
      start_ms: start ?? end ?? rootStart ?? 0,
      end_ms: end ?? start ?? rootEnd ?? 0,
      status_code: code,
      status_message: code === 2 ? status ?? '' : '',
      attributes,
      events: [],
      links: linksFrom(s.links),
    });
  }
  return out;
}

/**
 * A `span` item (content_type `application/vnd.sentry.items.span.v2+json`) — the DEFAULT in @sentry/node v11
 * (`traceLifecycle: 'stream'`): `{ version: 2, items: [{ trace_id, span_id, parent_span_id?, name,
 * start_timestamp, end_timestamp, is_segment, status: 'ok'|'error', attributes: typed, links? }] }`.
 * Segment (root) spans have `is_segment: true` and no parent. Release / environment / SDK come from the
 * `sentry.release` / `sentry.environment` / `sentry.sdk.*` attributes.
 */
export function spansFromSpanItem(payload: any): SpanRecord[] {
  const items: unknown[] = Array.isArray(payload) ? payload : isObj(payload) && Array.isArray(payload.items) ? payload.items : isObj(payload) && payload.span_id ? [payload] : [];
  const out: SpanRecord[] = [];
  for (const s of items) {
    if (!isObj(s)) continue;
    const trace_id = hexId(s.trace_id, HEX32);
    const span_id = hexId(s.span_id, HEX16);
    if (!trace_id || !span_id) continue;
    // v2 uses typed attributes; the legacy single-span item used `data`.
    const attributes = { ...toAttributes(s.data), ...fromTypedAttributes(s.attributes) };
    const service_name = sentryServiceName({ tags: s.tags, attributes });
    const sdkName = optStr(attributes['sentry.sdk.name']);
    const sdkVersion = optStr(attributes['sentry.sdk.version']);
    const resource = buildResource({
      service_name,
      release: optStr(attributes['sentry.release']),
      environment: optStr(attributes['sentry.environment']),
      host: optStr(attributes['server.address']),
      sdkName,
      sdkVersion,
    });
    const op = optStr(attributes['sentry.op']) ?? optStr(s.op);
    const start = sentryTimeToMs(s.start_timestamp);
    const end = sentryTimeToMs(s.end_timestamp ?? s.timestamp) ?? start;
    const status = optStr(s.status);
    const code = spanStatusCode(status);
    const statusMessage = code === 2 ? optStr(attributes['sentry.status.message']) ?? (status === 'error' ? '' : status ?? '') : '';
    out.push({
      resource,
      scope: sdkScope(sdkName, sdkVersion),
      service_name,
      trace_id,
      span_id,
      parent_span_id: hexId(s.parent_span_id, HEX16),
      trace_state: '',
      name: str(s.name ?? s.description) || op || '',
      kind: spanKindFor(op, attributes),
      start_ms: start ?? end ?? 0,
      end_ms: end ?? start ?? 0,
      status_code: code,
      status_message: statusMessage,
      attributes,
      events: [],
      links: linksFrom(s.links),
    });
  }
  return out;
}

// ---------------------------------------------------------------------------------------------------------
// logs

const SEVERITY: Record<string, number> = { trace: 1, debug: 5, info: 9, warn: 13, warning: 13, error: 17, fatal: 21 };

/**
 * A `log` item (content_type `application/vnd.sentry.items.log+json`):
 * `{ version: 2, items: [{ timestamp, level, body, trace_id, severity_number, attributes: typed }] }`.
 * The active span id travels as the `sentry.trace.parent_span_id` attribute (→ span_id); release /
 * environment / SDK as `sentry.*` attributes; the host as `server.address`. Attributes are kept as sent
 * (unwrapped from `{value, type}`). observed_time_ms is the receive time.
 */
export function logsFromSentryLogItem(payload: any, receivedMs: number = Date.now()): LogRecordOut[] {
  const items: unknown[] = Array.isArray(payload) ? payload : isObj(payload) && Array.isArray(payload.items) ? payload.items : [];
  const out: LogRecordOut[] = [];
  for (const it of items) {
    if (!isObj(it)) continue;
    const attributes = fromTypedAttributes(it.attributes);
    const service_name = sentryServiceName({ attributes });
    const sdkName = optStr(attributes['sentry.sdk.name']);
    const sdkVersion = optStr(attributes['sentry.sdk.version']);
    const level = typeof it.level === 'string' ? it.level.toLowerCase() : '';
    const sevNum =
      typeof it.severity_number === 'number' && Number.isInteger(it.severity_number) && it.severity_number >= 0 && it.severity_number <= 24
        ? it.severity_number
        : SEVERITY[level] ?? 0;
    const spanId = hexId(it.span_id, HEX16) ?? hexId(attributes['sentry.trace.parent_span_id'], HEX16);
    const body = toAttrValue(it.body);
    out.push({
      resource: buildResource({
        service_name,
        release: optStr(attributes['sentry.release']),
        environment: optStr(attributes['sentry.environment']),
        host: optStr(attributes['server.address']),
        sdkName,
        sdkVersion,
      }),
      scope: sdkScope(sdkName, sdkVersion),
      service_name,
      time_ms: sentryTimeToMs(it.timestamp) ?? receivedMs,
      observed_time_ms: receivedMs,
      severity_number: sevNum,
      severity_text: level,
      body: body === undefined ? '' : body,
      attributes,
      trace_id: hexId(it.trace_id, HEX32),
      span_id: spanId,
      flags: 0,
      event_name: '',
    });
  }
  return out;
}

// ---------------------------------------------------------------------------------------------------------
// feedback and sessions (telemetry-types has no records for these yet; shapes defined here)

export interface FeedbackRecord {
  event_id: string;
  timestamp_ms: number;
  received_ms: number;
  message: string;
  name: string;
  email: string;
  url: string;
  source: string;
  /** The error event this feedback is about, when the SDK linked one. */
  associated_event_id: string | null;
  environment: string;
  release: string;
  service_name: string;
  tags: Record<string, string>;
  trace_id: string | null;
  /** The scope's user (Sentry `user`: id, email, username), as sent; null when the SDK sent none. */
  user: Record<string, unknown> | null;
  payload: unknown;
}

/**
 * A `feedback` item (`Sentry.captureFeedback`: an event of `type: 'feedback'` with `contexts.feedback =
 * { message, name, contact_email, url, source, associated_event_id }`) or a legacy `user_report` item
 * (`{ event_id, name, email, comments }`) → FeedbackRecord.
 */
export function feedbackFromSentry(payload: any, receivedMs: number): FeedbackRecord {
  const p = isObj(payload) ? payload : {};
  const contexts = isObj(p.contexts) ? p.contexts : {};
  const fb = isObj(contexts.feedback) ? contexts.feedback : null;
  const tags = normalizeTags(p.tags);
  const trace = isObj(contexts.trace) ? contexts.trace : {};
  if (fb) {
    return {
      event_id: eventIdOf(p.event_id),
      timestamp_ms: sentryTimeToMs(p.timestamp) ?? receivedMs,
      received_ms: receivedMs,
      message: str(fb.message),
      name: str(fb.name),
      email: str(fb.contact_email ?? fb.email),
      url: str(fb.url),
      source: str(fb.source),
      associated_event_id: hexId(fb.associated_event_id, HEX32),
      environment: optStr(p.environment) ?? 'production',
      release: str(p.release),
      service_name: sentryServiceName({ tags, contexts }),
      tags,
      trace_id: hexId(trace.trace_id, HEX32),
      user: isObj(p.user) ? p.user : null,
      payload,
    };
  }
  // legacy user_report: the event_id IS the associated error event
  return {
    event_id: randomUUID().replace(/-/g, ''),
    timestamp_ms: receivedMs,
    received_ms: receivedMs,
    message: str(p.comments ?? p.message),
    name: str(p.name),
    email: str(p.email),
    url: '',
    source: 'user_report',
    associated_event_id: hexId(p.event_id, HEX32),
    environment: 'production',
    release: '',
    service_name: '',
    tags,
    trace_id: null,
    user: null,
    payload,
  };
}

/**
 * feedback.create fields for the scope's user of a Sentry feedback: `user_id` from user.id, and the
 * user's email and username in metadata (`user.email`, `user.username`) beside the feedback source.
 * (Name and contact email fall back to the user's username and email in the caller.)
 */
export function feedbackUserFields(fb: FeedbackRecord): { user_id?: string; metadata?: Record<string, string> } {
  const id = userField(fb.user, 'id');
  const email = userField(fb.user, 'email');
  const username = userField(fb.user, 'username');
  const metadata: Record<string, string> = {};
  if (fb.source) metadata.source = fb.source.slice(0, 2048);
  if (email) metadata['user.email'] = email.slice(0, 2048);
  if (username) metadata['user.username'] = username.slice(0, 2048);
  return { ...(id ? { user_id: id.slice(0, 256) } : {}), ...(Object.keys(metadata).length ? { metadata } : {}) };
}

export type { SessionRecord } from '../../domain/telemetry-types.js';
import type { SessionRecord } from '../../domain/telemetry-types.js';

/**
 * A `session` item (`{ sid, did?, init, started, timestamp, status, errors, duration, attrs: { release,
 * environment, user_agent? } }`) or a `sessions` item (`{ aggregates: [{ started, exited?, errored?,
 * abnormal?, crashed? }], attrs }`) → SessionRecord[] (one per session update / per non-zero bucket).
 */
export function sessionsFromSentry(itemType: string, payload: any, receivedMs: number): SessionRecord[] {
  const p = isObj(payload) ? payload : {};
  const attrs = isObj(p.attrs) ? p.attrs : {};
  const release = str(attrs.release);
  const environment = optStr(attrs.environment) ?? 'production';
  const user_agent = str(attrs.user_agent);
  if (itemType === 'sessions' || Array.isArray(p.aggregates)) {
    const out: SessionRecord[] = [];
    for (const a of Array.isArray(p.aggregates) ? p.aggregates : []) {
      if (!isObj(a)) continue;
      const started = sentryTimeToMs(a.started) ?? receivedMs;
      for (const status of ['exited', 'errored', 'abnormal', 'crashed'] as const) {
        const n = a[status];
        if (typeof n !== 'number' || !(n > 0)) continue;
        out.push({
          sid: null,
          distinct_id: optStr(a.did) ?? null,
          init: true,
          status,
          started_ms: started,
          timestamp_ms: started,
          duration_ms: null,
          errors: status === 'exited' ? 0 : 1,
          release,
          environment,
          user_agent,
          quantity: n,
        });
      }
    }
    return out;
  }
  const started = sentryTimeToMs(p.started) ?? receivedMs;
  return [
    {
      sid: optStr(p.sid) ?? null,
      distinct_id: p.did === undefined || p.did === null ? null : str(p.did),
      init: p.init === true,
      status: optStr(p.status) ?? 'ok',
      started_ms: started,
      timestamp_ms: sentryTimeToMs(p.timestamp) ?? receivedMs,
      duration_ms: typeof p.duration === 'number' && Number.isFinite(p.duration) ? p.duration * 1000 : null,
      errors: typeof p.errors === 'number' && Number.isFinite(p.errors) ? p.errors : 0,
      release,
      environment,
      user_agent,
      quantity: 1,
    },
  ];
}
