/**
 * The CPU-bound half of ingestion: decoding (OTLP protobuf/JSON, Sentry envelopes and store bodies),
 * Sentry normalization, attribute limits, clock clamping and grouping keys. Pure: no I/O, no storage.
 * It runs in the decode worker pool (src/ingest/worker/), so the main thread only authenticates and
 * writes. A job's result is a `head` (counts, known before anything is written, so quotas are checked
 * first) and `slices` of bounded size (each written in its own step, so one request never holds the
 * event loop for long).
 */
import type { ErrorEventRecord, LogRecordOut, MetricPointRecord, SessionRecord, SpanRecord } from '../domain/telemetry-types.js';
import { groupKeyFor, type GroupKey } from '../domain/grouping/fingerprint.js';
import type { EventJson, KeyedErrorEvent } from '../storage/errors-repo.js';
import { decodeLogs, decodeMetrics, decodeTraces, OtlpDecodeError, type OtlpEncoding, type OtlpSignal } from './otlp/decode.js';
import { itemJson, parseEnvelope, replayRecordingHeader, SentryParseError, type EnvelopeHeader } from './sentry/envelope.js';
import { errorEventFromSentry, feedbackFromSentry, logsFromSentryLogItem, sessionsFromSentry, spansFromSpanItem, spansFromTransaction, type FeedbackRecord } from './sentry/normalize.js';
import { errorEventsFromSpans } from './pipeline.js';
import { prepareObservation, type PackedObservation, type PreparedSlice } from '../domain/ai/prepared.js';
import { encodeSpans, slimSpan, type EncodedSpans } from '../storage/clickhouse/span-rows.js';
import { observationFromSpan } from '../domain/ai/otel-mapping.js';
import { clampEventTime, limitLog, limitPoint, limitSpan, newLimitCounts, type IngestLimits, type LimitCounts } from './limits.js';

export type IngestJob =
  | {
      kind: 'otlp';
      signal: OtlpSignal;
      enc: OtlpEncoding;
      body: Uint8Array;
      receivedMs: number;
      limits: IngestLimits;
      /** Spans go to ClickHouse: each slice also carries its rows' TabSeparated text for this project (span-rows.ts). */
      clickhouse?: { projectId: number };
    }
  | { kind: 'envelope'; body: Uint8Array; receivedMs: number; limits: IngestLimits }
  | { kind: 'store'; body: Uint8Array; receivedMs: number; limits: IngestLimits };

export interface Outcome {
  category: string;
  reason: string;
  quantity: number;
}

export interface CheckInRecord {
  check_in_id: string;
  monitor_slug: string;
  status: string;
  duration_s: number | null;
  environment: string;
  release: string;
  payload: unknown;
}

/**
 * An error event with its grouping key and its JSON columns already serialized (`json`, see
 * `keyed`): the event's `payload`, `tags` and `exceptions` are emptied, their content is in `json`.
 */
export type KeyedEvent = KeyedErrorEvent & { json: EventJson };

/** One bounded step of writes. Arrays are absent when empty. */
export interface IngestSlice {
  /** With `ch` and no AI work among them, slimmed (span-rows.ts `slimSpan`): only what the main thread's writers read. */
  spans?: SpanRecord[];
  /** The AI observations of `spans`, mapped here (src/domain/ai/prepared.ts). */
  ai?: PreparedSlice;
  /** The ClickHouse rows of `spans`, encoded here (src/storage/clickhouse/span-rows.ts). */
  ch?: EncodedSpans;
  logs?: LogRecordOut[];
  points?: MetricPointRecord[];
  errors?: KeyedEvent[];
  sessions?: SessionRecord[];
  replayEvents?: unknown[];
  recordings?: { replayId: string; segmentId: number; payload: Uint8Array }[];
  checkIns?: CheckInRecord[];
  feedback?: { record: FeedbackRecord; payload: unknown }[];
}

export interface IngestHead {
  /** Records that count against the ingest quota (spans, log records, metric points). */
  quotaRecords: number;
  /** OTLP partial success. */
  rejected: number;
  rejectionMessage: string;
  /** Sentry: the envelope header, and how many items it had. */
  envelopeHeader?: EnvelopeHeader;
  itemCount: number;
  /** Sentry store: the event id. */
  eventId?: string;
  /** Invalid items, items over the envelope limits, client reports, and what the limits cut. */
  outcomes: Outcome[];
}

export interface IngestResult {
  head: IngestHead;
  slices: IngestSlice[];
}

/** A body that cannot be decoded: answered 400 with this code. */
export class IngestDecodeError extends Error {
  constructor(
    readonly code: string,
    message: string,
  ) {
    super(message);
    this.name = 'IngestDecodeError';
  }
}

/** Records per slice: small enough that writing one (and cloning it across threads) takes a few ms (errors: grouping costs more per record; 50 keeps a slice under ~10 ms, issue 10). */
export const SLICE_RECORDS = 1000;
export const SLICE_ERRORS = 50;

function chunk<T>(arr: T[], n: number): T[][] {
  const out: T[][] = [];
  for (let i = 0; i < arr.length; i += n) out.push(arr.slice(i, i + n));
  return out;
}

function limitOutcomes(category: string, c: LimitCounts): Outcome[] {
  const out: Outcome[] = [];
  for (const [reason, quantity] of Object.entries(c)) if (quantity > 0) out.push({ category, reason, quantity });
  return out;
}

/** A slice of spans with their AI observations mapped (`source`: the route the writer is called with, src/ingest/mount.ts). */
function spanSlice(spans: SpanRecord[], source: string, receivedMs: number): IngestSlice {
  let rows: (PackedObservation | null)[] | undefined;
  for (let i = 0; i < spans.length; i++) {
    const p = prepareObservation(spans[i]!, source, receivedMs);
    // Only AI spans carry one, and only slices with some AI work the list (the writer's own scan of a
    // plain span stops at once; a span asking for privacy is mapped by the writer).
    if (p) (rows ??= new Array<PackedObservation | null>(spans.length).fill(null))[i] = p;
  }
  return rows ? { spans, ai: { source, rows } } : { spans };
}

const asBuffer = (u: Uint8Array): Buffer => (Buffer.isBuffer(u) ? u : Buffer.from(u.buffer, u.byteOffset, u.byteLength));

export function processJob(job: IngestJob): IngestResult {
  if (job.kind === 'otlp') return processOtlp(job);
  if (job.kind === 'store') return processStore(job);
  return processEnvelope(job);
}

function processOtlp(job: Extract<IngestJob, { kind: 'otlp' }>): IngestResult {
  const body = asBuffer(job.body);
  const l = job.limits;
  const t = job.receivedMs;
  try {
    if (job.signal === 'traces') {
      const r = decodeTraces(body, job.enc);
      const c = newLimitCounts();
      // Exception events are read before the limits cut a long `exception.stacktrace`.
      const ec = newLimitCounts();
      const errors = errorEventsFromSpans(r.records, t).map((e) => keyed(clampEventTime(e, l, ec)));
      const spans = r.records.map((sp) => limitSpan(sp, l, c, t));
      const slices: IngestSlice[] = chunk(spans, SLICE_RECORDS).map((s) => spanSlice(s, 'otlp', t));
      const ch = job.clickhouse;
      if (ch)
        for (const s of slices) {
          s.ch = encodeSpans(ch.projectId, s.spans!, 'otlp', t);
          // No AI work in the slice (none prepared, none asking for privacy): the writers on the main
          // thread read only what slimSpan keeps; the rest travels as the encoded rows.
          if (!s.ai && !s.spans!.some((sp) => observationFromSpan(sp, 'otlp'))) s.spans = s.spans!.map(slimSpan);
        }
      for (const e of chunk(errors, SLICE_ERRORS)) slices.push({ errors: e });
      return {
        head: { quotaRecords: spans.length, rejected: r.rejected, rejectionMessage: r.rejectionMessage, itemCount: spans.length, outcomes: [...limitOutcomes('span', c), ...limitOutcomes('error', ec)] },
        slices,
      };
    }
    if (job.signal === 'logs') {
      const r = decodeLogs(body, job.enc);
      const c = newLimitCounts();
      const logs = r.records.map((x) => limitLog(x, l, c, t));
      return {
        head: { quotaRecords: logs.length, rejected: r.rejected, rejectionMessage: r.rejectionMessage, itemCount: logs.length, outcomes: limitOutcomes('log', c) },
        slices: chunk(logs, SLICE_RECORDS).map((s) => ({ logs: s })),
      };
    }
    const r = decodeMetrics(body, job.enc);
    const c = newLimitCounts();
    const points = r.records.map((x) => limitPoint(x, l, c));
    return {
      head: { quotaRecords: points.length, rejected: r.rejected, rejectionMessage: r.rejectionMessage, itemCount: points.length, outcomes: limitOutcomes('metric', c) },
      slices: chunk(points, SLICE_RECORDS).map((s) => ({ points: s })),
    };
  } catch (err) {
    if (err instanceof OtlpDecodeError) throw new IngestDecodeError('invalid_otlp', `The OTLP ${job.signal} body could not be decoded: ${err.message}`);
    throw err;
  }
}

/**
 * Group key and JSON columns computed where the event is decoded (a decode worker): the strings
 * cross `postMessage` as one copy each, where the nested payload, tags and parsed stack frames were
 * structured-cloned object by object (half of a decode worker's busy time), and the writer does not
 * stringify them again.
 */
function keyed(event: ErrorEventRecord): KeyedEvent {
  const key = groupKeyFor(event);
  const json: EventJson = {
    type: event.exceptions.length ? event.exceptions[event.exceptions.length - 1]!.type : key.type,
    tags: JSON.stringify(event.tags),
    user: event.user ? JSON.stringify(event.user) : null,
    payload: JSON.stringify(event.payload),
  };
  return { event: { ...event, payload: null, tags: {}, exceptions: [] }, key, json };
}

function processStore(job: Extract<IngestJob, { kind: 'store' }>): IngestResult {
  let event: unknown;
  try {
    event = JSON.parse(asBuffer(job.body).toString('utf8'));
  } catch {
    throw new IngestDecodeError('invalid_event', 'The store body is not a JSON event.');
  }
  const c = newLimitCounts();
  const rec = clampEventTime(errorEventFromSentry(event, job.receivedMs), job.limits, c);
  return { head: { quotaRecords: 0, rejected: 0, rejectionMessage: '', itemCount: 1, eventId: rec.event_id, outcomes: limitOutcomes('error', c) }, slices: [{ errors: [keyed(rec)] }] };
}

/** Item types of which an envelope carries at most one (Relay accepts one event item per envelope). */
const ONE_PER_ENVELOPE: Record<string, string> = { event: 'event', transaction: 'event', feedback: 'feedback', user_report: 'user_report' };
/** Binary items that may be larger than the JSON item cap. */
const BINARY_ITEMS = new Set(['attachment', 'replay_recording', 'replay_video', 'profile_chunk', 'profile']);
/** Relay's max_event_size: JSON items above it are dropped. */
export const ENVELOPE_ITEM_MAX_BYTES = 1024 * 1024;
/** Relay's max_replay_compressed_size. */
export const REPLAY_RECORDING_MAX_BYTES = 10 * 1024 * 1024;

function processEnvelope(job: Extract<IngestJob, { kind: 'envelope' }>): IngestResult {
  const l = job.limits;
  const t = job.receivedMs;
  let env;
  try {
    env = parseEnvelope(asBuffer(job.body));
  } catch (err) {
    if (err instanceof SentryParseError) throw new IngestDecodeError('invalid_envelope', `The envelope could not be parsed: ${err.message}`);
    throw err;
  }
  const outcomes = new Map<string, Outcome>();
  const count = (category: string, reason: string, quantity = 1) => {
    if (quantity <= 0) return;
    const k = `${category}\u0000${reason}`;
    const o = outcomes.get(k);
    if (o) o.quantity += quantity;
    else outcomes.set(k, { category, reason, quantity });
  };
  const errorCounts = newLimitCounts();
  const spanCounts = newLimitCounts();
  const logCounts = newLimitCounts();
  const errors: KeyedEvent[] = [];
  const spans: SpanRecord[] = [];
  const logs: LogRecordOut[] = [];
  const sessions: SessionRecord[] = [];
  const replayEvents: unknown[] = [];
  const recordings: NonNullable<IngestSlice['recordings']> = [];
  const checkIns: CheckInRecord[] = [];
  const feedback: NonNullable<IngestSlice['feedback']> = [];
  const seenOnce = new Set<string>();
  let sessionItems = 0;
  const replayId = String(env.header.event_id ?? '').replace(/-/g, '').toLowerCase();

  env.items.forEach((item, index) => {
    if (index >= l.envelopeMaxItems) return count(item.type, 'too_many_items');
    const once = ONE_PER_ENVELOPE[item.type];
    if (once) {
      if (seenOnce.has(once)) return count(item.type, 'duplicate_item');
      seenOnce.add(once);
    }
    const max = item.type === 'replay_recording' ? REPLAY_RECORDING_MAX_BYTES : BINARY_ITEMS.has(item.type) ? Infinity : ENVELOPE_ITEM_MAX_BYTES;
    if (item.payload.length > max) return count(item.type, 'too_large');
    try {
      switch (item.type) {
        case 'event':
          errors.push(keyed(clampEventTime(errorEventFromSentry(itemJson(item), t), l, errorCounts)));
          break;
        case 'transaction':
        case 'span': {
          const got = item.type === 'transaction' ? spansFromTransaction(itemJson(item)) : spansFromSpanItem(itemJson(item));
          const room = Math.max(0, l.envelopeMaxSpans - spans.length);
          if (got.length > room) count('span', 'too_many_items', got.length - room);
          for (const sp of got.slice(0, room)) spans.push(limitSpan(sp, l, spanCounts, t));
          break;
        }
        case 'log': {
          const got = logsFromSentryLogItem(itemJson(item), t);
          const room = Math.max(0, l.envelopeMaxLogs - logs.length);
          if (got.length > room) count('log', 'too_many_items', got.length - room);
          for (const x of got.slice(0, room)) logs.push(limitLog(x, l, logCounts, t));
          break;
        }
        case 'feedback':
        case 'user_report': {
          const payload = itemJson(item);
          feedback.push({ record: feedbackFromSentry(payload, t), payload });
          break;
        }
        case 'session':
        case 'sessions': {
          if (sessionItems >= l.envelopeMaxSessions) return count(item.type, 'too_many_items');
          sessionItems++;
          sessions.push(...sessionsFromSentry(item.type, itemJson(item), t));
          break;
        }
        case 'replay_event':
          replayEvents.push(itemJson(item));
          break;
        case 'replay_recording': {
          // Only the small JSON header line is read: the recording stays compressed as sent.
          const header = replayRecordingHeader(item.payload);
          // A copy of just this item: a view into the body would carry the whole body across threads.
          if (replayId) recordings.push({ replayId, segmentId: Number(header.segment_id ?? 0) || 0, payload: Uint8Array.prototype.slice.call(item.payload) });
          break;
        }
        case 'check_in': {
          const c = itemJson(item);
          checkIns.push({
            check_in_id: String(c.check_in_id ?? ''),
            monitor_slug: String(c.monitor_slug ?? ''),
            status: String(c.status ?? 'unknown'),
            duration_s: typeof c.duration === 'number' ? c.duration : null,
            environment: String(c.environment ?? 'production'),
            release: String(c.release ?? ''),
            payload: c,
          });
          break;
        }
        case 'client_report': {
          const r = itemJson(item);
          for (const d of Array.isArray(r.discarded_events) ? r.discarded_events : []) {
            if (typeof d?.quantity === 'number') count(`client:${d.category}`, String(d.reason), d.quantity);
          }
          break;
        }
        default:
          // attachment, profile, statsd… are accepted and not stored; unknown items are skipped.
          break;
      }
    } catch (err) {
      if (err instanceof SentryParseError) return count(item.type, 'invalid');
      throw err;
    }
  });
  for (const o of [...limitOutcomes('error', errorCounts), ...limitOutcomes('span', spanCounts), ...limitOutcomes('log', logCounts)]) count(o.category, o.reason, o.quantity);

  const slices: IngestSlice[] = [];
  const misc: IngestSlice = {};
  if (sessions.length) misc.sessions = sessions;
  if (replayEvents.length) misc.replayEvents = replayEvents;
  if (recordings.length) misc.recordings = recordings;
  if (checkIns.length) misc.checkIns = checkIns;
  if (Object.keys(misc).length) slices.push(misc);
  for (const s of chunk(spans, SLICE_RECORDS)) slices.push(spanSlice(s, 'sentry', t));
  for (const s of chunk(logs, SLICE_RECORDS)) slices.push({ logs: s });
  for (const s of chunk(errors, SLICE_ERRORS)) slices.push({ errors: s });
  // Feedback last: it links to the error group of an event of the same envelope.
  if (feedback.length) slices.push({ feedback });
  return {
    head: {
      quotaRecords: spans.length,
      rejected: 0,
      rejectionMessage: '',
      envelopeHeader: env.header,
      itemCount: env.items.length,
      outcomes: [...outcomes.values()],
    },
    slices,
  };
}

