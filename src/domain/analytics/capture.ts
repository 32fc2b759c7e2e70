/**
 * PostHog-compatible capture payloads (what unmodified posthog-js and posthog-node send), decoded
 * into plain capture events. Bodies: a JSON array of events, `{ api_key, batch: [...] }`, or one
 * event; gzip (`compression=gzip-js` or the gzip magic bytes), base64 and form-encoded `data=`.
 */
import { gunzipSync } from 'node:zlib';

export class CaptureDecodeError extends Error {}

export interface CaptureEvent {
  uuid: string | null;
  event: string;
  distinct_id: string;
  ts: number;
  session_id: string | null;
  url: string | null;
  pathname: string | null;
  referrer: string | null;
  utm_source: string | null;
  utm_medium: string | null;
  utm_campaign: string | null;
  /** `$identify`: the anonymous id merged into distinct_id; `$create_alias`: the alias. */
  merge_from: string | null;
  replay_id: string | null;
  properties: Record<string, unknown>;
}

export interface CaptureBatch {
  token: string | null;
  events: CaptureEvent[];
  /** Events skipped because they had no event name or distinct id. */
  invalid: number;
}

const GZIP_MAGIC = (b: Buffer) => b.length > 2 && b[0] === 0x1f && b[1] === 0x8b;

/** Raw body (already decoded from Content-Encoding) → JSON value. */
export function decodeCaptureBody(body: Buffer, opts: { compression?: string | null; contentType?: string | null; maxBytes: number }): unknown {
  let buf = body;
  const gunzip = (b: Buffer) => {
    try {
      const out = gunzipSync(b, { maxOutputLength: opts.maxBytes });
      return out;
    } catch (err) {
      throw new CaptureDecodeError(`gzip body could not be decompressed (${(err as Error).message})`);
    }
  };
  if (opts.compression === 'gzip-js' || opts.compression === 'gzip' || GZIP_MAGIC(buf)) buf = GZIP_MAGIC(buf) ? gunzip(buf) : buf;
  let text = buf.toString('utf8');
  const type = (opts.contentType ?? '').toLowerCase();
  if (type.startsWith('application/x-www-form-urlencoded') || /^data=/.test(text)) {
    const data = new URLSearchParams(text).get('data');
    if (data === null) throw new CaptureDecodeError('form body without a `data` field');
    text = data;
  }
  const trimmed = text.trimStart();
  if (opts.compression === 'base64' || (trimmed && trimmed[0] !== '{' && trimmed[0] !== '[')) {
    const raw = Buffer.from(trimmed.replace(/\s+/g, ''), 'base64');
    text = (GZIP_MAGIC(raw) ? gunzip(raw) : raw).toString('utf8');
  }
  try {
    return JSON.parse(text);
  } catch {
    throw new CaptureDecodeError('the body is not JSON (nor base64, form or gzip-encoded JSON)');
  }
}

/* eslint-disable @typescript-eslint/no-explicit-any */
const s = (v: unknown, max = 512): string | null => (typeof v === 'string' && v.trim() ? v.slice(0, max) : typeof v === 'number' ? String(v) : null);

function pathOf(url: string | null): string | null {
  if (!url) return null;
  try {
    return new URL(url).pathname;
  } catch {
    return url.startsWith('/') ? url.split(/[?#]/)[0]! : null;
  }
}

function hostOf(url: string | null): string | null {
  if (!url) return null;
  try {
    return new URL(url).hostname.replace(/^www\./, '');
  } catch {
    return null;
  }
}

/** UTM parameters from the event properties, else from the current URL's query. */
function utm(props: Record<string, any>, url: string | null, key: string): string | null {
  const direct = s(props[key], 256);
  if (direct) return direct;
  if (!url) return null;
  try {
    return s(new URL(url).searchParams.get(key), 256);
  } catch {
    return null;
  }
}

function timestampOf(e: any, sentAt: number | null, now: number): number {
  const ts = typeof e.timestamp === 'string' ? Date.parse(e.timestamp) : typeof e.timestamp === 'number' ? e.timestamp : NaN;
  if (Number.isFinite(ts)) {
    // Clock skew: the client's sent_at against our receive time (PostHog's rule).
    const skew = sentAt !== null && Number.isFinite(sentAt) ? now - sentAt : 0;
    const t = ts + (Math.abs(skew) > 1000 ? skew : 0);
    return t > now + 23 * 3600_000 ? now : t;
  }
  if (typeof e.offset === 'number' && e.offset >= 0) return now - e.offset;
  return now;
}

export function normalizeCaptureEvent(e: any, sentAt: number | null, now: number): CaptureEvent | null {
  if (!e || typeof e !== 'object') return null;
  const props: Record<string, any> = e.properties && typeof e.properties === 'object' && !Array.isArray(e.properties) ? e.properties : {};
  const event = s(e.event, 200);
  const distinct = s(e.distinct_id ?? props.distinct_id ?? e.$distinct_id, 200);
  if (!event || !distinct) return null;
  const url = s(props.$current_url, 2048);
  const rawRef = s(props.$referrer, 2048);
  const referrer = rawRef && rawRef !== '$direct' ? rawRef : null;
  let mergeFrom: string | null = null;
  if (event === '$identify') mergeFrom = s(props.$anon_distinct_id, 200);
  else if (event === '$create_alias') mergeFrom = s(props.alias, 200);
  return {
    uuid: s(e.uuid, 64),
    event,
    distinct_id: distinct,
    ts: timestampOf(e, typeof e.sent_at === 'string' ? Date.parse(e.sent_at) : sentAt, now),
    session_id: s(props.$session_id, 128),
    url,
    pathname: s(props.$pathname, 1024) ?? pathOf(url),
    referrer,
    utm_source: utm(props, url, 'utm_source'),
    utm_medium: utm(props, url, 'utm_medium'),
    utm_campaign: utm(props, url, 'utm_campaign'),
    merge_from: mergeFrom && mergeFrom !== distinct ? mergeFrom : null,
    replay_id: s(props.$sentry_replay_id ?? props.sentry_replay_id, 64)?.replace(/-/g, '').toLowerCase() ?? null,
    properties: props,
  };
}

/** A decoded body → token and normalized events. */
export function parseCapturePayload(v: unknown, now: number): CaptureBatch {
  let list: unknown[];
  let token: string | null = null;
  let sentAt: number | null = null;
  if (Array.isArray(v)) list = v;
  else if (v && typeof v === 'object') {
    const o = v as any;
    token = s(o.api_key ?? o.token, 256);
    if (typeof o.sent_at === 'string') sentAt = Date.parse(o.sent_at);
    if (Array.isArray(o.batch)) list = o.batch;
    else if (Array.isArray(o.data)) list = o.data;
    else list = [o];
  } else throw new CaptureDecodeError('expected an event, an array of events or { api_key, batch }');
  const events: CaptureEvent[] = [];
  let invalid = 0;
  for (const e of list) {
    const ev = normalizeCaptureEvent(e, sentAt, now);
    if (ev) events.push(ev);
    else invalid++;
    if (!token && e && typeof e === 'object') token = s((e as any).api_key ?? (e as any).properties?.token ?? (e as any).token, 256);
  }
  return { token, events, invalid };
}

/** A marketing touch of a pageview: UTM source/medium/campaign, else the referring site. */
export function touchOf(e: CaptureEvent): { source: string | null; medium: string | null; campaign: string | null } | null {
  if (e.event !== '$pageview') return null;
  const refHost = hostOf(e.referrer);
  const ownHost = hostOf(e.url);
  const external = refHost && refHost !== ownHost ? refHost : null;
  const source = e.utm_source ?? external;
  const medium = e.utm_medium ?? (e.utm_source ? null : external ? 'referral' : null);
  const campaign = e.utm_campaign;
  if (!source && !medium && !campaign) return null;
  return { source, medium, campaign };
}
