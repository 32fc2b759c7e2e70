/**
 * Sentry envelope framing, body decompression and auth parsing. Pure functions, no I/O.
 *
 * Envelope format (as produced by `serializeEnvelope` in @sentry/core and accepted by Relay):
 *
 *   <envelope header JSON>\n
 *   <item header JSON>\n            e.g. {"type":"event"} or {"type":"attachment","length":7,...}
 *   <payload>\n                     `length` bytes when the item header has `length`, otherwise up to the next \n
 *   <item header JSON>\n
 *   <payload>                       the final newline is optional
 *
 * Binary payloads (attachments, replay_recording, profile chunks) always carry `length` and may contain
 * newlines and arbitrary bytes. JSON payloads written by the JS SDK carry no `length`.
 */
import * as zlib from 'node:zlib';

export class SentryParseError extends Error {
  constructor(message: string, options?: { cause?: unknown }) {
    super(message, options);
    this.name = 'SentryParseError';
  }
}

/** The decompressed (or identity) body would exceed the configured limit: answer 413. */
export class BodyTooLargeError extends Error {
  readonly maxBytes: number;
  constructor(maxBytes: number, message = `request body exceeds ${maxBytes} bytes after decompression`) {
    super(message);
    this.name = 'BodyTooLargeError';
    this.maxBytes = maxBytes;
  }
}

/** A Content-Encoding we do not understand: answer 415. Subclass of SentryParseError. */
export class UnsupportedEncodingError extends SentryParseError {
  readonly encoding: string;
  constructor(encoding: string) {
    super(`unsupported content-encoding: ${encoding}`);
    this.name = 'UnsupportedEncodingError';
    this.encoding = encoding;
  }
}

export interface EnvelopeHeader {
  event_id?: string;
  dsn?: string;
  sent_at?: string;
  sdk?: { name?: string; version?: string };
  [k: string]: unknown;
}

export interface EnvelopeItem {
  type: string;
  headers: Record<string, unknown>;
  payload: Buffer;
}

export interface Envelope {
  header: EnvelopeHeader;
  items: EnvelopeItem[];
}

const NL = 0x0a;

function isPlainObject(v: unknown): v is Record<string, unknown> {
  return typeof v === 'object' && v !== null && !Array.isArray(v);
}

function parseJsonLine(line: Buffer, what: string): Record<string, unknown> {
  // Tolerate CRLF line endings and surrounding whitespace on header lines.
  const text = line.toString('utf8').trim();
  if (text === '') throw new SentryParseError(`empty ${what}`);
  let value: unknown;
  try {
    value = JSON.parse(text);
  } catch (err) {
    throw new SentryParseError(`invalid JSON in ${what}`, { cause: err });
  }
  if (!isPlainObject(value)) throw new SentryParseError(`${what} is not a JSON object`);
  return value;
}

function isBlank(buf: Buffer, from: number): boolean {
  for (let i = from; i < buf.length; i++) {
    const c = buf[i];
    if (c !== 0x0a && c !== 0x0d && c !== 0x20 && c !== 0x09) return false;
  }
  return true;
}

/**
 * Parses a (decompressed) envelope body. Throws SentryParseError on malformed input: missing or invalid
 * header lines, an item without a string `type`, a bad `length`, or a length running past the end.
 */
export function parseEnvelope(body: Buffer): Envelope {
  if (!Buffer.isBuffer(body)) body = Buffer.from(body as Uint8Array);
  if (body.length === 0 || isBlank(body, 0)) throw new SentryParseError('empty envelope');

  let pos = 0;
  const readLine = (): Buffer => {
    let end = body.indexOf(NL, pos);
    if (end < 0) end = body.length;
    const line = body.subarray(pos, end);
    pos = Math.min(end + 1, body.length);
    return line;
  };

  const header = parseJsonLine(readLine(), 'envelope header') as EnvelopeHeader;
  const items: EnvelopeItem[] = [];

  while (pos < body.length) {
    // A trailing newline (or trailing whitespace) after the last item is fine.
    if (isBlank(body, pos)) break;
    const headers = parseJsonLine(readLine(), `item header #${items.length}`);
    const type = headers.type;
    if (typeof type !== 'string' || type === '') {
      throw new SentryParseError(`item header #${items.length} has no type`);
    }

    let payload: Buffer;
    const length = headers.length;
    if (length !== undefined && length !== null) {
      if (typeof length !== 'number' || !Number.isSafeInteger(length) || length < 0) {
        throw new SentryParseError(`item #${items.length} (${type}) has an invalid length`);
      }
      if (pos + length > body.length) {
        throw new SentryParseError(
          `item #${items.length} (${type}) declares ${length} bytes but only ${body.length - pos} remain`,
        );
      }
      payload = body.subarray(pos, pos + length);
      pos += length;
      // The payload is followed by a newline unless it is the last thing in the body.
      if (pos < body.length) {
        if (body[pos] === NL) pos += 1;
        else if (body[pos] === 0x0d && body[pos + 1] === NL) pos += 2;
        else throw new SentryParseError(`item #${items.length} (${type}) is not followed by a newline`);
      }
    } else if (pos >= body.length) {
      // Header line was the last line: empty payload.
      payload = Buffer.alloc(0);
    } else {
      let end = body.indexOf(NL, pos);
      if (end < 0) end = body.length;
      let stop = end;
      if (stop > pos && body[stop - 1] === 0x0d) stop -= 1;
      payload = body.subarray(pos, stop);
      pos = Math.min(end + 1, body.length);
    }
    items.push({ type, headers, payload });
  }

  return { header, items };
}

/** Parses an item payload as JSON (for event, transaction, session, log, span, feedback ... items). */
export function itemJson(item: EnvelopeItem): any {
  try {
    return JSON.parse(item.payload.toString('utf8'));
  } catch (err) {
    throw new SentryParseError(`item ${item.type} payload is not valid JSON`, { cause: err });
  }
}

/**
 * The JSON header line of a `replay_recording` payload (`{"segment_id":0}`), read without touching the
 * (usually zlib-compressed) rrweb data after it, which is stored as sent.
 */
export function replayRecordingHeader(payload: Buffer | Uint8Array): Record<string, unknown> {
  const buf = Buffer.isBuffer(payload) ? payload : Buffer.from(payload.buffer, payload.byteOffset, payload.byteLength);
  const nl = buf.subarray(0, 64 * 1024).indexOf(NL);
  if (nl < 0) throw new SentryParseError('replay_recording has no header line');
  return parseJsonLine(buf.subarray(0, nl), 'replay_recording header');
}

/**
 * A `replay_recording` payload is a small JSON header line (`{"segment_id":0}`) followed by the rrweb
 * events, either zlib-compressed or as raw JSON bytes. Returns the header and the (decompressed) data.
 */
export function splitReplayRecording(
  payload: Buffer,
  maxBytes = 50 * 1024 * 1024,
): { header: Record<string, unknown>; data: Buffer; compressed: boolean } {
  const nl = payload.indexOf(NL);
  if (nl < 0) throw new SentryParseError('replay_recording has no header line');
  const header = parseJsonLine(payload.subarray(0, nl), 'replay_recording header');
  const rest = payload.subarray(nl + 1);
  // zlib streams start with 0x78 (CMF for deflate with a 32K window); raw rrweb JSON starts with '['.
  if (rest.length >= 2 && isZlibHeader(rest)) {
    return { header, data: decompressBody(rest, 'deflate', maxBytes), compressed: true };
  }
  return { header, data: rest, compressed: false };
}

function isZlibHeader(buf: Buffer): boolean {
  if (buf.length < 2) return false;
  const cmf = buf[0];
  const flg = buf[1];
  return (cmf & 0x0f) === 8 && (cmf >> 4) <= 7 && ((cmf << 8) | flg) % 31 === 0;
}

function isTooLarge(err: unknown): boolean {
  return (err as { code?: string } | null)?.code === 'ERR_BUFFER_TOO_LARGE';
}

function inflateOne(body: Buffer, encoding: string, maxBytes: number): Buffer {
  const opts = { maxOutputLength: Math.max(1, maxBytes) };
  try {
    switch (encoding) {
      case 'gzip':
      case 'x-gzip':
        return zlib.gunzipSync(body, opts);
      case 'deflate':
        // HTTP "deflate" is zlib-wrapped per RFC 9110, but many clients send raw deflate.
        return isZlibHeader(body) ? zlib.inflateSync(body, opts) : zlib.inflateRawSync(body, opts);
      case 'br':
        return zlib.brotliDecompressSync(body, opts);
      default:
        throw new UnsupportedEncodingError(encoding);
    }
  } catch (err) {
    if (err instanceof SentryParseError) throw err;
    if (isTooLarge(err)) throw new BodyTooLargeError(maxBytes);
    throw new SentryParseError(`could not decode ${encoding} body: ${(err as Error)?.message ?? err}`, { cause: err });
  }
}

/**
 * Undoes Content-Encoding (gzip / x-gzip, deflate as zlib or raw, br, identity; a comma-separated list is
 * undone last-applied first). Throws BodyTooLargeError when the output exceeds maxBytes (checked with
 * zlib's maxOutputLength, so a decompression bomb never materializes), SentryParseError on corrupt data
 * and UnsupportedEncodingError for unknown encodings.
 */
export function decompressBody(body: Buffer, contentEncoding: string | undefined, maxBytes: number): Buffer {
  const encodings = (contentEncoding ?? '')
    .split(',')
    .map((e) => e.trim().toLowerCase())
    .filter((e) => e !== '' && e !== 'identity');
  let out = body;
  for (let i = encodings.length - 1; i >= 0; i--) {
    out = inflateOne(out, encodings[i], maxBytes);
  }
  if (out.length > maxBytes) throw new BodyTooLargeError(maxBytes);
  return out;
}

export interface SentryAuth {
  sentry_key?: string;
  sentry_version?: string;
  sentry_client?: string;
  sentry_secret?: string;
}

/**
 * Parses an `X-Sentry-Auth` (or `Authorization`) header value:
 * `Sentry sentry_key=abc, sentry_version=7, sentry_client=sentry.python/2.0`.
 * The `Sentry ` prefix is optional; `DSN <dsn>` values yield the DSN's key.
 */
export function parseSentryAuth(headerValue: string | undefined): SentryAuth {
  const out: SentryAuth = {};
  if (!headerValue) return out;
  let v = headerValue.trim();
  const dsnMatch = /^dsn\s+(\S+)/i.exec(v);
  if (dsnMatch) {
    const key = keyFromDsn(dsnMatch[1]);
    if (key) out.sentry_key = key;
    return out;
  }
  v = v.replace(/^sentry\s+/i, '');
  for (const part of v.split(',')) {
    const eq = part.indexOf('=');
    if (eq < 0) continue;
    const k = part.slice(0, eq).trim().toLowerCase();
    let val = part.slice(eq + 1).trim();
    if (val.length >= 2 && val.startsWith('"') && val.endsWith('"')) val = val.slice(1, -1);
    if (val === '') continue;
    if (k === 'sentry_key' || k === 'sentry_version' || k === 'sentry_client' || k === 'sentry_secret') {
      out[k] = val;
    }
  }
  return out;
}

/** Auth from the query string the JS SDKs use: `?sentry_version=7&sentry_key=abc&sentry_client=...`. */
export function parseSentryAuthQuery(query: string | URLSearchParams | Record<string, unknown> | undefined): SentryAuth {
  const out: SentryAuth = {};
  if (!query) return out;
  let params: URLSearchParams;
  if (typeof query === 'string') params = new URLSearchParams(query.startsWith('?') ? query.slice(1) : query);
  else if (query instanceof URLSearchParams) params = query;
  else {
    params = new URLSearchParams();
    for (const [k, v] of Object.entries(query)) {
      const first = Array.isArray(v) ? v[0] : v;
      if (typeof first === 'string') params.set(k, first);
    }
  }
  for (const k of ['sentry_key', 'sentry_version', 'sentry_client', 'sentry_secret'] as const) {
    const val = params.get(k);
    if (val) out[k] = val;
  }
  return out;
}

/** Public key from a DSN: `http://KEY@host/ingest/42` or `http://KEY:secret@host/42`. */
export function keyFromDsn(dsn: string | undefined): string | undefined {
  if (!dsn || typeof dsn !== 'string') return undefined;
  try {
    const url = new URL(dsn.trim());
    const key = decodeURIComponent(url.username);
    return key || undefined;
  } catch {
    const m = /^[a-z][a-z0-9+.-]*:\/\/([^:@/]+)(?::[^@/]*)?@/i.exec(dsn.trim());
    return m ? m[1] : undefined;
  }
}

/**
 * The public key of a Sentry request, checked in the order Relay uses: X-Sentry-Auth header, then
 * Authorization header, then query string, then the envelope header's `dsn` (set when the SDK uses a tunnel).
 */
export function resolveSentryKey(sources: {
  authHeader?: string;
  authorization?: string;
  query?: string | URLSearchParams | Record<string, unknown>;
  envelopeDsn?: string;
}): string | undefined {
  return (
    parseSentryAuth(sources.authHeader).sentry_key ??
    (sources.authorization && /^(sentry|dsn)\s/i.test(sources.authorization.trim())
      ? parseSentryAuth(sources.authorization).sentry_key
      : undefined) ??
    parseSentryAuthQuery(sources.query).sentry_key ??
    keyFromDsn(sources.envelopeDsn)
  );
}
