/**
 * Time-window and granularity rules shared by the metrics (and other) timeline endpoints.
 *
 * Conventions:
 * - A window is half-open: `[fromMs, toMs)`.
 * - Timeline buckets are aligned to multiples of the granularity since the Unix epoch (UTC), so a
 *   `1d` bucket starts at UTC midnight. The first bucket is the one containing `fromMs`; the last is
 *   the one containing `toMs - 1`.
 * - Validation throws {@link WindowError}; the HTTP layer turns it into a 400 before any query runs.
 */

export const HOUR_MS = 3_600_000;
export const DAY_MS = 24 * HOUR_MS;
/** Window used when `from` is omitted: 24 hours before `to`. */
export const DEFAULT_WINDOW_MS = DAY_MS;
/** Largest accepted window: 30 days. */
export const MAX_WINDOW_MS = 30 * DAY_MS;
/** Largest number of possible buckets in one timeline. */
export const MAX_BUCKETS = 2000;

export const GRANULARITIES = ['1m', '5m', '15m', '1h', '6h', '1d'] as const;
export type Granularity = (typeof GRANULARITIES)[number];

const GRANULARITY_MS: Record<Granularity, number> = {
  '1m': 60_000,
  '5m': 5 * 60_000,
  '15m': 15 * 60_000,
  '1h': HOUR_MS,
  '6h': 6 * HOUR_MS,
  '1d': DAY_MS,
};

export type WindowParam = 'from' | 'to' | 'granularity';

/** A rejected window or granularity. `message` is written for a person; `param` names the culprit. */
export class WindowError extends Error {
  readonly status = 400 as const;
  constructor(
    readonly param: WindowParam,
    message: string,
  ) {
    super(message);
    this.name = 'WindowError';
  }
}

export interface WindowInput {
  from?: string | null;
  to?: string | null;
}

export interface WindowOptions {
  /** Window length used when `from` is omitted (default 24 h). */
  defaultMs?: number;
  /** Largest accepted window (default 30 days). */
  maxMs?: number;
  /** Current time in epoch ms; used when `to` is omitted. */
  now: number;
}

export interface ResolvedWindow {
  fromMs: number;
  toMs: number;
}

// date, 'T' (or 't' / space), hh:mm[:ss[.fraction]], then a mandatory zone: Z, ±hh:mm, ±hhmm or ±hh.
// A zone written " hh:mm" is accepted as "+hh:mm": an unencoded '+' in a query string decodes to a space.
const ISO_RE =
  /^(\d{4})-(\d{2})-(\d{2})[Tt ](\d{2}):(\d{2})(?::(\d{2})(?:[.,](\d{1,9}))?)?(?:([Zz])|([+\- ])(\d{2})(?::?(\d{2}))?)$/;

function daysInMonth(year: number, month: number): number {
  return new Date(Date.UTC(year, month, 0)).getUTCDate();
}

/**
 * Parses an ISO 8601 / RFC 3339 timestamp that carries a timezone into epoch ms.
 * Returns `null` for anything else (no timezone, impossible dates such as Feb 30, garbage).
 */
export function parseTimestamp(text: string): number | null {
  const m = ISO_RE.exec(text.trim());
  if (!m) return null;
  const year = Number(m[1]);
  const month = Number(m[2]);
  const day = Number(m[3]);
  const hour = Number(m[4]);
  const minute = Number(m[5]);
  const second = m[6] === undefined ? 0 : Number(m[6]);
  if (month < 1 || month > 12) return null;
  if (day < 1 || day > daysInMonth(year, month)) return null;
  if (hour > 23 || minute > 59 || second > 59) return null;
  let offsetMin = 0;
  if (!m[8]) {
    const sign = m[9] === '-' ? -1 : 1;
    const oh = Number(m[10]);
    const om = m[11] === undefined ? 0 : Number(m[11]);
    if (oh > 23 || om > 59) return null;
    offsetMin = sign * (oh * 60 + om);
  }
  const fraction = m[7] === undefined ? 0 : Number(`0.${m[7]}`) * 1000;
  const utc = Date.UTC(year, month - 1, day, hour, minute, second);
  // Date.UTC maps years 0..99 to 1900..1999; setUTCFullYear undoes that.
  const d = new Date(utc);
  d.setUTCFullYear(year);
  return d.getTime() + fraction - offsetMin * 60_000;
}

const UNIT_MS: Record<string, number> = { s: 1000, m: 60_000, h: HOUR_MS, d: 24 * HOUR_MS, w: 7 * 24 * HOUR_MS };
// `now`, `now-1h`, `-15m`, `-1h30m`, `now+5m`: an optional `now`, then an optional signed sum of
// whole amounts of s, m, h, d, w (a bare `-1h` means one hour before now).
const RELATIVE_RE = /^(?:now)?(?:([+-])((?:\d{1,9}[smhdw])+))?$/i;

/** Whether the text is a relative time (`now`, `-1h`, `now-15m`…) rather than a timestamp. */
export function isRelativeTime(text: string): boolean {
  const t = text.trim();
  return t !== '' && RELATIVE_RE.test(t) && (/^now/i.test(t) || /^[+-]/.test(t));
}

/**
 * The one time parser of every `from`/`to`: an ISO 8601 timestamp with a timezone, or a relative
 * form resolved against `nowMs` — `now`, `-15m`, `-1h`, `-7d`, `-2w`, `now-1h30m`, `now+5m`
 * (units s, m, h, d, w). Returns epoch ms, or null when the text is neither.
 */
export function parseTimeExpression(text: string, nowMs: number): number | null {
  const t = text.trim();
  if (isRelativeTime(t)) {
    const m = RELATIVE_RE.exec(t)!;
    if (!m[1]) return nowMs;
    let ms = 0;
    for (const part of m[2]!.matchAll(/(\d+)([smhdw])/gi)) ms += Number(part[1]) * UNIT_MS[part[2]!.toLowerCase()]!;
    return m[1] === '-' ? nowMs - ms : nowMs + ms;
  }
  return parseTimestamp(t);
}

/** The message for a time that is neither an ISO 8601 timestamp with a timezone nor a relative form. */
export function timeFormatMessage(param: string, value: string): string {
  return `\`${param}\` must be an ISO 8601 timestamp with a timezone (2024-05-01T12:00:00Z, 2024-05-01T14:00:00+02:00) or a relative time (now, -15m, -1h, -7d, now-30m) (got "${value.slice(0, 64)}").`;
}

function parseParam(param: 'from' | 'to', value: string, nowMs: number): number {
  const ms = parseTimeExpression(value, nowMs);
  if (ms === null) throw new WindowError(param, timeFormatMessage(param, value));
  return ms;
}

function isPresent(v: string | null | undefined): v is string {
  return typeof v === 'string' && v.trim() !== '';
}

function describeDuration(ms: number): string {
  if (ms % DAY_MS === 0) return `${ms / DAY_MS} day${ms === DAY_MS ? '' : 's'}`;
  if (ms % HOUR_MS === 0) return `${ms / HOUR_MS} hour${ms === HOUR_MS ? '' : 's'}`;
  return `${ms} ms`;
}

/**
 * Resolves `from` / `to` query parameters into an epoch-ms window.
 * - `to` omitted → `now`; `from` omitted → `defaultMs` (24 h) before `to`. Empty strings count as omitted.
 * - Throws {@link WindowError} for an unparseable or timezone-less timestamp, `from` not before `to`,
 *   or a window longer than `maxMs` (30 days).
 */
export function resolveWindow(input: WindowInput, options: WindowOptions): ResolvedWindow {
  const defaultMs = options.defaultMs ?? DEFAULT_WINDOW_MS;
  const maxMs = options.maxMs ?? MAX_WINDOW_MS;
  const toMs = isPresent(input.to) ? parseParam('to', input.to, options.now) : options.now;
  const fromMs = isPresent(input.from) ? parseParam('from', input.from, options.now) : toMs - defaultMs;
  if (!Number.isFinite(fromMs) || !Number.isFinite(toMs)) {
    throw new WindowError(isPresent(input.from) ? 'from' : 'to', 'The time window is out of range.');
  }
  if (fromMs >= toMs) {
    throw new WindowError('from', '`from` must be earlier than `to`.');
  }
  if (toMs - fromMs > maxMs) {
    throw new WindowError(
      'from',
      `The time window is longer than the maximum of ${describeDuration(maxMs)}; narrow \`from\`/\`to\`.`,
    );
  }
  return { fromMs, toMs };
}

export function isGranularity(value: unknown): value is Granularity {
  return typeof value === 'string' && (GRANULARITIES as readonly string[]).includes(value);
}

/** Milliseconds in a granularity (`'5m'` → 300000). Throws {@link WindowError} for an unknown value. */
export function granularityMs(granularity: string): number {
  if (!isGranularity(granularity)) {
    throw new WindowError(
      'granularity',
      `\`granularity\` must be one of ${GRANULARITIES.join(', ')} (got "${String(granularity).slice(0, 32)}").`,
    );
  }
  return GRANULARITY_MS[granularity];
}

/** Start of the epoch-aligned bucket containing `ms`. */
export function bucketStart(ms: number, granMs: number): number {
  return Math.floor(ms / granMs) * granMs;
}

/** Number of epoch-aligned buckets that intersect the half-open window `[fromMs, toMs)`. */
export function bucketCount(fromMs: number, toMs: number, granMs: number): number {
  if (!(toMs > fromMs) || !(granMs > 0)) return 0;
  const first = bucketStart(fromMs, granMs);
  return Math.ceil((toMs - first) / granMs);
}

/**
 * Throws {@link WindowError} (param `granularity`) when the window holds more than `max` possible
 * buckets at this granularity. Returns the bucket count otherwise.
 */
export function checkBucketCount(fromMs: number, toMs: number, granMs: number, max: number = MAX_BUCKETS): number {
  const n = bucketCount(fromMs, toMs, granMs);
  if (n > max) {
    throw new WindowError(
      'granularity',
      `This window would need ${n} buckets at this granularity; at most ${max} are allowed. Choose a coarser granularity or a shorter window.`,
    );
  }
  return n;
}

/**
 * The finest granularity giving at most `target` buckets (default 300) for the window; if none does,
 * the finest giving at most {@link MAX_BUCKETS}; failing that, `1d`.
 * E.g. 1 h → 1m (60), 24 h → 5m (288), 7 d → 1h (168), 30 d → 6h (120).
 */
export function defaultGranularity(fromMs: number, toMs: number, target = 300): Granularity {
  for (const g of GRANULARITIES) {
    if (bucketCount(fromMs, toMs, GRANULARITY_MS[g]) <= target) return g;
  }
  for (const g of GRANULARITIES) {
    if (bucketCount(fromMs, toMs, GRANULARITY_MS[g]) <= MAX_BUCKETS) return g;
  }
  return '1d';
}
