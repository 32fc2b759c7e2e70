/**
 * The field-query syntax of `events.search`. Pure: text in, a list of terms out (all terms must
 * hold: AND). The storage layer compiles the terms to parameterised SQL.
 *
 *   connection reset              free text: each word is a case-insensitive substring of the
 *                                 message, title or type
 *   "connection reset"            a quoted phrase (one substring; `\"` and `\\` escape)
 *   level:error                   field equals value (case-insensitive); `*` is a wildcard
 *   level:[error,fatal]           any of several values
 *   service:"checkout api"        a quoted value
 *   -environment:staging          negation (also `-word`, `-"phrase"`)
 *   message:timeout               message/title fields match a substring
 *   timestamp:>2026-01-01T00:00:00Z   comparisons >, <, >=, <= on times (ISO 8601, a date
 *                                 `2026-01-01`, epoch milliseconds, or `-24h` = within the last 24 h)
 *   timestamp:2026-01-01          a date alone means that whole UTC day
 *   tags.http.status_code:>=500   tags: equality (with `*`) or numeric comparison
 *
 * Keys: level, type, service (service_name), environment (env), release, transaction, server
 * (server_name), trace (trace_id), group (group_id), source, platform, message, title, event_id,
 * timestamp, received_at, tags.<key>, user.id, user.email, user.username (the event's user as the SDK
 * sent it, or the OTel enduser.id / user.id attribute).
 */

export const EXACT_FIELDS = [
  'level', 'type', 'service', 'environment', 'release', 'transaction', 'server', 'trace', 'group', 'source', 'platform', 'event_id',
  'user.id', 'user.email', 'user.username',
] as const;
export const TEXT_FIELDS = ['message', 'title'] as const;
export const TIME_FIELDS = ['timestamp', 'received_at'] as const;

export type ExactField = (typeof EXACT_FIELDS)[number];
export type TextField = (typeof TEXT_FIELDS)[number];
export type TimeField = (typeof TIME_FIELDS)[number];
export type Comparator = '>' | '<' | '>=' | '<=';

const ALIASES: Record<string, string> = {
  service_name: 'service',
  env: 'environment',
  transaction_name: 'transaction',
  server_name: 'server',
  trace_id: 'trace',
  group_id: 'group',
  error_group_id: 'group',
  id: 'event_id',
  time: 'timestamp',
  received: 'received_at',
  'user.name': 'user.username',
  'enduser.id': 'user.id',
};

export const KNOWN_KEYS: readonly string[] = [...EXACT_FIELDS, ...TEXT_FIELDS, ...TIME_FIELDS, 'tags.<key>'];

export interface Bound {
  ms: number;
  inclusive: boolean;
}

export type EventQueryTerm =
  /** Substring (case-insensitive) of message, title or type. */
  | { kind: 'text'; negated: boolean; text: string }
  /** Field equals one of values (case-insensitive; `*` wildcard). */
  | { kind: 'exact'; negated: boolean; field: ExactField; values: string[] }
  /** Field contains one of values (case-insensitive; `*` wildcard anchors nothing). */
  | { kind: 'contains'; negated: boolean; field: TextField; values: string[] }
  | { kind: 'time'; negated: boolean; field: TimeField; min?: Bound; max?: Bound }
  | { kind: 'tag'; negated: boolean; key: string; values: string[] }
  | { kind: 'tag_compare'; negated: boolean; key: string; op: Comparator; value: number };

export interface EventQuery {
  terms: EventQueryTerm[];
  /** True when a `timestamp` term bounds the search (the caller then applies no default window). */
  hasTimestamp: boolean;
}

export class EventQueryError extends Error {
  constructor(
    message: string,
    readonly position: number,
  ) {
    super(message);
    this.name = 'EventQueryError';
  }
}

export const MAX_QUERY_TERMS = 32;

const KEY_RE = /^(-?)([A-Za-z_][A-Za-z0-9_]*(?:\.[A-Za-z0-9_\-]+)*):/;
const DURATION_RE = /^-(\d+)(m|h|d|w)$/;
const DATE_RE = /^\d{4}-\d{2}-\d{2}$/;
const DATETIME_RE = /^\d{4}-\d{2}-\d{2}T\d{2}:\d{2}(?::\d{2}(?:\.\d{1,9})?)?(?:Z|[+-]\d{2}:?\d{2})$/i;
const UNIT_MS: Record<string, number> = { m: 60_000, h: 3_600_000, d: 86_400_000, w: 604_800_000 };
const DAY = 86_400_000;

interface Cursor {
  s: string;
  i: number;
}

/** A quoted string starting at c.i (which holds `"`); returns its unescaped content. */
function readQuoted(c: Cursor): string {
  const start = c.i;
  c.i++;
  let out = '';
  while (c.i < c.s.length) {
    const ch = c.s[c.i]!;
    if (ch === '\\' && c.i + 1 < c.s.length) {
      out += c.s[c.i + 1];
      c.i += 2;
      continue;
    }
    if (ch === '"') {
      c.i++;
      return out;
    }
    out += ch;
    c.i++;
  }
  throw new EventQueryError(`Unterminated quote starting at position ${start + 1}: close it with \`"\`.`, start);
}

function readBare(c: Cursor): string {
  const start = c.i;
  while (c.i < c.s.length && !/\s/.test(c.s[c.i]!)) c.i++;
  return c.s.slice(start, c.i);
}

/** `[a, "b c", d]` at c.i (which holds `[`). */
function readList(c: Cursor, key: string): string[] {
  const start = c.i;
  c.i++;
  const out: string[] = [];
  let cur = '';
  let quotedItem = false;
  const push = () => {
    const v = quotedItem ? cur : cur.trim();
    if (v === '' && !quotedItem) throw new EventQueryError(`Empty value in the list for \`${key}\` at position ${start + 1}.`, start);
    out.push(v);
    cur = '';
    quotedItem = false;
  };
  while (c.i < c.s.length) {
    const ch = c.s[c.i]!;
    if (ch === ']') {
      c.i++;
      push();
      return out;
    }
    if (ch === ',') {
      c.i++;
      push();
      continue;
    }
    if (ch === '"' && cur.trim() === '') {
      cur = readQuoted(c);
      quotedItem = true;
      continue;
    }
    cur += ch;
    c.i++;
  }
  throw new EventQueryError(`Unterminated list for \`${key}\` starting at position ${start + 1}: close it with \`]\`.`, start);
}

function canonicalKey(raw: string): string | null {
  const k = raw.toLowerCase();
  if (k.startsWith('tags.') || k.startsWith('tag.')) return raw.slice(raw.indexOf('.') + 1) ? `tags.${raw.slice(raw.indexOf('.') + 1)}` : null;
  const a = ALIASES[k] ?? k;
  return (EXACT_FIELDS as readonly string[]).includes(a) || (TEXT_FIELDS as readonly string[]).includes(a) || (TIME_FIELDS as readonly string[]).includes(a)
    ? a
    : null;
}

/** A time value: ISO date-time with zone, a date (UTC day), epoch milliseconds, or `-24h` (relative to now). */
function parseTime(v: string, now: number, key: string, pos: number): { ms: number; day: boolean; relative: boolean } {
  const rel = DURATION_RE.exec(v);
  if (rel) return { ms: now - Number(rel[1]) * UNIT_MS[rel[2]!]!, day: false, relative: true };
  if (DATE_RE.test(v)) {
    const ms = Date.parse(`${v}T00:00:00Z`);
    if (Number.isFinite(ms)) return { ms, day: true, relative: false };
  }
  if (DATETIME_RE.test(v)) {
    const ms = Date.parse(v);
    if (Number.isFinite(ms)) return { ms, day: false, relative: false };
  }
  if (/^\d{10,16}$/.test(v)) return { ms: Number(v), day: false, relative: false };
  throw new EventQueryError(
    `\`${key}\` needs a time: an ISO 8601 date-time with a timezone (2026-01-31T12:00:00Z), a date (2026-01-31), epoch milliseconds, or a relative time like -24h (got \`${v}\`).`,
    pos,
  );
}

function normalizeExact(field: ExactField, v: string): string {
  if (field === 'event_id' || field === 'trace') return v.replace(/-/g, '').toLowerCase();
  if (field === 'level' || field === 'source') return v.toLowerCase();
  return v;
}

/**
 * Parses a query. `now` resolves relative times. Throws EventQueryError with a message for the
 * person who wrote the query.
 */
export function parseEventQuery(query: string, now: number): EventQuery {
  const c: Cursor = { s: query, i: 0 };
  const terms: EventQueryTerm[] = [];
  let hasTimestamp = false;
  while (c.i < c.s.length) {
    if (/\s/.test(c.s[c.i]!)) {
      c.i++;
      continue;
    }
    const pos = c.i;
    if (terms.length >= MAX_QUERY_TERMS) throw new EventQueryError(`A query may hold at most ${MAX_QUERY_TERMS} terms.`, pos);
    const rest = c.s.slice(c.i);
    const key = KEY_RE.exec(rest);
    if (key) {
      const negated = key[1] === '-';
      const rawKey = key[2]!;
      const canon = canonicalKey(rawKey);
      if (!canon) {
        throw new EventQueryError(
          `Unknown field \`${rawKey}\` at position ${pos + 1}. Known fields: ${KNOWN_KEYS.join(', ')}. To search for text containing a colon, quote it: "${rawKey}:…".`,
          pos,
        );
      }
      c.i += key[0].length;
      let op: Comparator | null = null;
      const opm = /^(>=|<=|>|<)/.exec(c.s.slice(c.i));
      if (opm) {
        op = opm[1] as Comparator;
        c.i += op.length;
      }
      const vpos = c.i;
      let values: string[];
      if (c.s[c.i] === '"') values = [readQuoted(c)];
      else if (c.s[c.i] === '[' && !op) values = readList(c, rawKey);
      else {
        const v = readBare(c);
        if (v === '') throw new EventQueryError(`\`${rawKey}:\` at position ${pos + 1} has no value. Write ${rawKey}:value or ${rawKey}:"quoted value".`, pos);
        values = [v];
      }

      if ((TIME_FIELDS as readonly string[]).includes(canon)) {
        const field = canon as TimeField;
        if (values.length !== 1) throw new EventQueryError(`\`${rawKey}\` takes one time, not a list.`, vpos);
        const t = parseTime(values[0]!, now, rawKey, vpos);
        let term: EventQueryTerm;
        if (op === '>') term = { kind: 'time', negated, field, min: { ms: t.day ? t.ms + DAY : t.ms, inclusive: t.day } };
        else if (op === '>=') term = { kind: 'time', negated, field, min: { ms: t.ms, inclusive: true } };
        else if (op === '<') term = { kind: 'time', negated, field, max: { ms: t.ms, inclusive: false } };
        else if (op === '<=') term = { kind: 'time', negated, field, max: { ms: t.day ? t.ms + DAY : t.ms, inclusive: !t.day } };
        else if (t.relative) term = { kind: 'time', negated, field, min: { ms: t.ms, inclusive: true } };
        else if (t.day) term = { kind: 'time', negated, field, min: { ms: t.ms, inclusive: true }, max: { ms: t.ms + DAY, inclusive: false } };
        else term = { kind: 'time', negated, field, min: { ms: t.ms, inclusive: true }, max: { ms: t.ms, inclusive: true } };
        if (field === 'timestamp') hasTimestamp = true;
        terms.push(term);
        continue;
      }

      if (canon.startsWith('tags.')) {
        const tagKey = canon.slice(5);
        if (op) {
          const n = Number(values[0]);
          if (values[0]!.trim() === '' || !Number.isFinite(n)) {
            throw new EventQueryError(`\`${rawKey}:${op}\` compares numbers; \`${values[0]}\` is not a number.`, vpos);
          }
          terms.push({ kind: 'tag_compare', negated, key: tagKey, op, value: n });
        } else {
          terms.push({ kind: 'tag', negated, key: tagKey, values });
        }
        continue;
      }

      if (op) {
        throw new EventQueryError(
          `\`${rawKey}\` does not support \`${op}\`: comparisons work on timestamp, received_at and numeric tags (tags.<key>).`,
          pos,
        );
      }
      if ((TEXT_FIELDS as readonly string[]).includes(canon)) {
        terms.push({ kind: 'contains', negated, field: canon as TextField, values });
      } else {
        const field = canon as ExactField;
        terms.push({ kind: 'exact', negated, field, values: values.map((v) => normalizeExact(field, v)) });
      }
      continue;
    }

    // free text: word, "phrase", -word, -"phrase"
    let negated = false;
    if (c.s[c.i] === '-' && c.i + 1 < c.s.length && !/\s/.test(c.s[c.i + 1]!)) {
      negated = true;
      c.i++;
    }
    const text = c.s[c.i] === '"' ? readQuoted(c) : readBare(c);
    if (text === '' || (!negated && text === '-')) {
      if (negated || text === '-') throw new EventQueryError(`\`-\` at position ${pos + 1} negates nothing: write -word, -"phrase" or -key:value.`, pos);
      continue;
    }
    terms.push({ kind: 'text', negated, text });
  }
  return { terms, hasTimestamp };
}
