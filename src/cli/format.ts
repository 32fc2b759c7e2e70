/**
 * Human output of the CLI: a table for `data` lists (scalar columns, fitted to the terminal width)
 * and key/value lines for single objects; CSV and JSON lines for scripts. `--output json` bypasses
 * all of this. Which columns a table shows by default comes from the operation's display hints, so
 * a new operation gets a good table without CLI code.
 */

type Row = Record<string, unknown>;

const MAX_COLUMN = 48;
/** Free text (titles, messages) may take this much of a wide terminal. */
const MAX_TEXT = 120;
const MIN_COLUMN = 16;
const GAP = '  ';
/** Width of an identifier cut short to fit: 8 characters and an ellipsis. */
const SHORT_ID = 9;

function isPlainObject(v: unknown): v is Row {
  return !!v && typeof v === 'object' && !Array.isArray(v);
}

/** Values a table cell can show: scalars, and lists of scalars (joined, or a sparkline for numbers). */
function isCellValue(v: unknown): boolean {
  if (v === null || v === undefined) return true;
  if (Array.isArray(v)) return v.every((x) => x === null || typeof x !== 'object');
  return typeof v !== 'object';
}

const SPARK = '▁▂▃▄▅▆▇█';

/** A list of numbers as one line of block characters, scaled from 0 (or the minimum) to the maximum. */
export function sparkline(values: readonly number[]): string {
  if (!values.length) return '';
  const min = Math.min(0, ...values);
  const max = Math.max(...values);
  const span = max - min;
  return values.map((v) => (span === 0 ? SPARK[0] : SPARK[Math.round(((v - min) / span) * (SPARK.length - 1))])).join('');
}

const ISO_TIME = /^\d{4}-\d{2}-\d{2}T\d{2}:\d{2}(:\d{2}(\.\d+)?)?(Z|[+-]\d{2}:?\d{2})$/;

/** "3m ago", "in 2h", "5d ago"; a date for anything further than 30 days. */
export function relativeTime(iso: string, now: number): string {
  const t = Date.parse(iso);
  if (!Number.isFinite(t)) return iso;
  const d = now - t;
  const abs = Math.abs(d);
  const fmt = (n: number, unit: string) => (d >= 0 ? `${n}${unit} ago` : `in ${n}${unit}`);
  if (abs < 45_000) return d >= 0 ? 'just now' : 'in a moment';
  if (abs < 3_600_000) return fmt(Math.max(1, Math.round(abs / 60_000)), 'm');
  if (abs < 86_400_000) return fmt(Math.round(abs / 3_600_000), 'h');
  if (abs < 30 * 86_400_000) return fmt(Math.round(abs / 86_400_000), 'd');
  return iso.slice(0, 10);
}

export interface CellOptions {
  /** Show ISO timestamps relative to this time ("3m ago"); absent: as sent. */
  now?: number;
}

function cellText(v: unknown, opts: CellOptions = {}): string {
  if (v === null || v === undefined) return '';
  if (Array.isArray(v)) {
    if (v.length > 1 && v.every((x) => typeof x === 'number')) return sparkline(v as number[]);
    return v.map((x) => cellText(x)).join(',');
  }
  if (typeof v === 'string' && opts.now !== undefined && ISO_TIME.test(v)) return relativeTime(v, opts.now);
  if (typeof v === 'object') return JSON.stringify(v);
  return String(v).replace(/\s*[\r\n]+\s*/g, ' ');
}

function fit(text: string, width: number): string {
  if (text.length <= width) return text.padEnd(width);
  return width <= 1 ? text.slice(0, width) : text.slice(0, width - 1) + '…';
}

// ---- colour ------------------------------------------------------------------------------------

const ANSI = { bold: '\x1b[1m', dim: '\x1b[2m', red: '\x1b[31m', yellow: '\x1b[33m', green: '\x1b[32m', cyan: '\x1b[36m', reset: '\x1b[0m' };
const VALUE_COLOURS: Record<string, string> = {
  fatal: ANSI.red,
  error: ANSI.red,
  critical: ANSI.red,
  down: ANSI.red,
  regressed: ANSI.red,
  unresolved: ANSI.yellow,
  warn: ANSI.yellow,
  warning: ANSI.yellow,
  degraded: ANSI.yellow,
  high: ANSI.yellow,
  ok: ANSI.green,
  up: ANSI.green,
  resolved: ANSI.green,
  improved: ANSI.green,
  debug: ANSI.dim,
  trace: ANSI.dim,
};
/** Columns whose values carry a state worth a colour. */
const COLOURED_COLUMNS = new Set(['level', 'status', 'state', 'priority', 'verdict']);

export function paint(text: string, colour: string | undefined, on: boolean): string {
  return on && colour ? `${colour}${text}${ANSI.reset}` : text;
}

export function levelColour(value: string): string | undefined {
  return VALUE_COLOURS[value.trim().toLowerCase()];
}

// ---- tables ------------------------------------------------------------------------------------

export interface TableOptions extends CellOptions {
  /** Exactly these columns, in this order (`--columns`). */
  columns?: readonly string[];
  /** The operation's default columns: shown when present; the others are named below the table. */
  preferred?: readonly string[];
  /** ANSI colours (a terminal without NO_COLOR). */
  color?: boolean;
}

export interface TableResult {
  text: string;
  /** Columns left out to fit the width (or not among the default columns). */
  dropped: string[];
}

const looksLikeId = (k: string, values: string[]) =>
  (k === 'id' || k.endsWith('_id')) && values.some((c) => c.length > SHORT_ID) && values.every((c) => c === '' || /^[\w.:-]+$/.test(c));

/** Every key of the rows, in first-seen order. */
export function rowKeys(rows: readonly unknown[]): string[] {
  const keys: string[] = [];
  for (const r of rows) if (isPlainObject(r)) for (const k of Object.keys(r)) if (!keys.includes(k)) keys.push(k);
  return keys;
}

/** Rows as a table of their scalar fields, at most `width` characters wide. */
export function renderTable(rows: readonly unknown[], width: number, opts: TableOptions = {}): TableResult {
  const objects = rows.filter(isPlainObject);
  if (!objects.length) return { text: rows.map((r) => cellText(typeof r === 'object' ? JSON.stringify(r) : r)).join('\n'), dropped: [] };
  const keys = rowKeys(objects);
  const cells = (k: string) => objects.map((r) => cellText(r[k], opts));
  const scalar = (k: string) => objects.every((r) => isCellValue(r[k]));
  const nested = keys.filter((k) => !scalar(k));
  let candidates: string[];
  let hidden: string[] = [];
  if (opts.columns?.length) {
    candidates = opts.columns.filter((k) => keys.includes(k));
  } else {
    // Scalar columns only; columns empty in every row are noise in a table (they stay in JSON), and
    // so is `project_id` when every row is of the same project (the one that was asked for).
    const constantId = (k: string) => k === 'project_id' && k !== keys[0] && new Set(cells(k)).size === 1;
    const shown = keys.filter((k) => scalar(k) && objects.some((r) => cellText(r[k]) !== '') && !constantId(k));
    const preferred = (opts.preferred ?? []).filter((k) => shown.includes(k));
    candidates = preferred.length ? preferred : shown;
    hidden = preferred.length ? shown.filter((k) => !preferred.includes(k)) : [];
  }
  const natural = new Map(candidates.map((k) => [k, Math.min(MAX_TEXT, Math.max(k.length, ...cells(k).map((c) => c.length)))]));
  // Identifiers, timestamps, enums and URLs are useless cut short: only free text (a value with a
  // space) shrinks, and then identifiers are shortened to their first characters if the table still
  // does not fit. Columns are taken left to right while they fit; one that does not fit is left out
  // and narrower ones after it still get their chance. Free text then grows into what is left.
  const freeText = new Set(candidates.filter((k) => cells(k).some((c) => /\s/.test(c))));
  const ids = new Set(candidates.filter((k) => !freeText.has(k) && looksLikeId(k, cells(k))));
  const minimumOf = (k: string, shortIds: boolean) =>
    freeText.has(k) ? Math.min(natural.get(k)!, Math.max(MIN_COLUMN, k.length)) : shortIds && ids.has(k) ? Math.max(SHORT_ID, k.length) : natural.get(k)!;
  const total = (shortIds: boolean) => candidates.reduce((s, k, i) => s + minimumOf(k, shortIds) + (i ? GAP.length : 0), 0);
  const shortIds = ids.size > 0 && total(false) > width;
  const minimum = (k: string) => minimumOf(k, shortIds);
  const columns: string[] = [];
  const widths = new Map<string, number>();
  const dropped: string[] = [];
  let used = 0;
  for (const k of candidates) {
    const need = minimum(k) + (columns.length ? GAP.length : 0);
    if (used + need <= width || !columns.length) {
      columns.push(k);
      widths.set(k, Math.min(minimum(k), columns.length === 1 ? Math.max(1, width) : minimum(k)));
      used += need;
    } else dropped.push(k);
  }
  let spare = Math.max(0, width - used);
  for (const k of columns) {
    if (!freeText.has(k) || !spare) continue;
    const grow = Math.min(spare, natural.get(k)! - widths.get(k)!);
    widths.set(k, widths.get(k)! + grow);
    spare -= grow;
  }
  const color = !!opts.color;
  const last = columns.length - 1;
  const line = (values: string[], header: boolean) =>
    columns
      .map((k, i) => {
        const text = fit(values[i]!, widths.get(k)!);
        const shown = i === last ? text.trimEnd() : text;
        if (header) return paint(shown, ANSI.bold, color);
        return COLOURED_COLUMNS.has(k) ? paint(shown, levelColour(values[i]!), color) : shown;
      })
      .join(GAP)
      .trimEnd();
  const lines = [line(columns, true), ...objects.map((r) => line(columns.map((k) => cellText(r[k], opts)), false))];
  return { text: lines.join('\n'), dropped: [...dropped, ...hidden, ...nested.filter((k) => !opts.columns?.includes(k))] };
}

function flatten(value: unknown, prefix: string, out: Array<[string, string]>, opts: CellOptions): void {
  if (isPlainObject(value)) {
    const entries = Object.entries(value);
    if (!entries.length) out.push([prefix, '{}']);
    for (const [k, v] of entries) flatten(v, prefix ? `${prefix}.${k}` : k, out, opts);
    return;
  }
  if (Array.isArray(value)) {
    if (value.every((x) => x === null || typeof x !== 'object')) out.push([prefix, value.map((x) => String(x)).join(', ')]);
    else value.forEach((v, i) => flatten(v, `${prefix}[${i}]`, out, opts));
    return;
  }
  if (typeof value === 'string' && opts.now !== undefined && ISO_TIME.test(value)) {
    out.push([prefix, `${value} (${relativeTime(value, opts.now)})`]);
    return;
  }
  out.push([prefix, value === null || value === undefined ? '-' : String(value)]);
}

/** An object as `key  value` lines; nested objects use dotted keys. */
export function renderObject(obj: Row, opts: CellOptions = {}): string {
  const pairs: Array<[string, string]> = [];
  flatten(obj, '', pairs, opts);
  const keyWidth = Math.min(40, Math.max(0, ...pairs.map(([k]) => k.length)));
  return pairs
    .map(([k, v]) => {
      const [first, ...more] = v.split('\n');
      const pad = ' '.repeat(keyWidth + GAP.length);
      return [`${k.padEnd(keyWidth)}${GAP}${first}`, ...more.map((l) => pad + l)].join('\n');
    })
    .join('\n');
}

export interface RenderOptions extends TableOptions {
  width: number;
}

/**
 * A result for people: `{ data: [...], ...rest }` → a table of `data` and the other fields below it;
 * any other object → key/value lines; an array → a table; a scalar → itself.
 */
export function renderHuman(value: unknown, opts: RenderOptions): string {
  if (Array.isArray(value)) return tableWithNotes(value, opts);
  if (isPlainObject(value)) {
    if (Array.isArray(value.data)) {
      const { data, ...rest } = value;
      const parts = [tableWithNotes(data, opts)];
      // The list's other scalar fields (total, limit, offset, next_cursor…) on one line; nulls say nothing.
      const restKeys = Object.keys(rest).filter((k) => rest[k] !== undefined && rest[k] !== null);
      const scalarRest = restKeys.filter((k) => isCellValue(rest[k]));
      const nestedRest = restKeys.filter((k) => !isCellValue(rest[k]));
      if (scalarRest.length) parts.push(scalarRest.map((k) => `${k}: ${cellText(rest[k])}`).join('  '));
      if (nestedRest.length) parts.push(`(also in the answer: ${nestedRest.join(', ')}; use --output json)`);
      return parts.join('\n');
    }
    return renderObject(value, opts);
  }
  return value === null || value === undefined ? '' : String(value);
}

function tableWithNotes(rows: readonly unknown[], opts: RenderOptions): string {
  if (!rows.length) return '(no rows)';
  const t = renderTable(rows, opts.width, opts);
  return t.dropped.length ? `${t.text}\n(not shown: ${t.dropped.join(', ')}; choose with --columns, or --output json for every field)` : t.text;
}

// ---- for scripts ---------------------------------------------------------------------------------

/** The rows of an answer: `data` of a list, the array itself, or the object as one row. */
export function answerRows(value: unknown): unknown[] {
  if (Array.isArray(value)) return value;
  if (isPlainObject(value) && Array.isArray(value.data)) return value.data;
  return value === undefined ? [] : [value];
}

/** One JSON document a line: each row of a list, or the whole answer. */
export function renderJsonl(value: unknown): string {
  return answerRows(value)
    .map((r) => JSON.stringify(r))
    .join('\n');
}

function csvField(v: unknown): string {
  const text = v === null || v === undefined ? '' : typeof v === 'object' ? JSON.stringify(v) : String(v);
  return /[",\r\n]/.test(text) ? `"${text.replace(/"/g, '""')}"` : text;
}

/** RFC 4180 CSV of the rows: the chosen columns, else every field (nested ones as JSON); ISO times kept. */
export function renderCsv(value: unknown, columns?: readonly string[]): string {
  const rows = answerRows(value).filter(isPlainObject);
  const keys = columns?.length ? [...columns] : rowKeys(rows);
  return [keys.map(csvField).join(','), ...rows.map((r) => keys.map((k) => csvField(r[k])).join(','))].join('\r\n');
}
