/**
 * Human output of the CLI: a table for `data` lists (scalar columns, fitted to the terminal width)
 * and key/value lines for single objects. `--json` bypasses all of this.
 */

type Row = Record<string, unknown>;

const MAX_COLUMN = 48;
const MIN_COLUMN = 16;
const GAP = '  ';

function isPlainObject(v: unknown): v is Row {
  return !!v && typeof v === 'object' && !Array.isArray(v);
}

/** Values a table cell can show: scalars, and lists of scalars (joined). */
function isCellValue(v: unknown): boolean {
  if (v === null || v === undefined) return true;
  if (Array.isArray(v)) return v.every((x) => x === null || typeof x !== 'object');
  return typeof v !== 'object';
}

function cellText(v: unknown): string {
  if (v === null || v === undefined) return '';
  if (Array.isArray(v)) return v.map((x) => cellText(x)).join(',');
  return String(v).replace(/\s*[\r\n]+\s*/g, ' ');
}

function fit(text: string, width: number): string {
  if (text.length <= width) return text.padEnd(width);
  return width <= 1 ? text.slice(0, width) : text.slice(0, width - 1) + '…';
}

export interface TableResult {
  text: string;
  /** Columns left out to fit the width. */
  dropped: string[];
}

/** Rows as a table of their scalar fields, at most `width` characters wide. */
export function renderTable(rows: readonly unknown[], width: number): TableResult {
  const objects = rows.filter(isPlainObject);
  if (!objects.length) return { text: rows.map((r) => cellText(typeof r === 'object' ? JSON.stringify(r) : r)).join('\n'), dropped: [] };
  const keys: string[] = [];
  for (const r of objects) for (const k of Object.keys(r)) if (!keys.includes(k)) keys.push(k);
  const cells = (k: string) => objects.map((r) => cellText(r[k]));
  // Scalar columns only; columns empty in every row are noise in a table (they stay in --json), and
  // so is `project_id` when every row is of the same project (the one that was asked for).
  const constantId = (k: string) => k === 'project_id' && k !== keys[0] && new Set(cells(k)).size === 1;
  const candidates = keys.filter((k) => objects.every((r) => isCellValue(r[k])) && objects.some((r) => cellText(r[k]) !== '') && !constantId(k));
  const nested = keys.filter((k) => !objects.every((r) => isCellValue(r[k])));
  const natural = new Map(candidates.map((k) => [k, Math.min(MAX_COLUMN, Math.max(k.length, ...cells(k).map((c) => c.length)))]));
  // Identifiers, timestamps, enums and URLs are useless cut short: only free text (a value with a
  // space) shrinks. Columns are taken left to right while they fit; one that does not fit is left
  // out and narrower ones after it still get their chance. Free text then grows into what is left.
  const freeText = new Set(candidates.filter((k) => cells(k).some((c) => /\s/.test(c))));
  const minimum = (k: string) => (freeText.has(k) ? Math.min(natural.get(k)!, Math.max(MIN_COLUMN, k.length)) : natural.get(k)!);
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
  const line = (values: string[]) => columns.map((k, i) => fit(values[i]!, widths.get(k)!)).join(GAP).trimEnd();
  const lines = [line(columns), ...objects.map((r) => line(columns.map((k) => cellText(r[k]))))];
  return { text: lines.join('\n'), dropped: [...dropped, ...nested] };
}

function flatten(value: unknown, prefix: string, out: Array<[string, string]>): void {
  if (isPlainObject(value)) {
    const entries = Object.entries(value);
    if (!entries.length) out.push([prefix, '{}']);
    for (const [k, v] of entries) flatten(v, prefix ? `${prefix}.${k}` : k, out);
    return;
  }
  if (Array.isArray(value)) {
    if (value.every((x) => x === null || typeof x !== 'object')) out.push([prefix, value.map((x) => String(x)).join(', ')]);
    else value.forEach((v, i) => flatten(v, `${prefix}[${i}]`, out));
    return;
  }
  out.push([prefix, value === null || value === undefined ? '-' : String(value)]);
}

/** An object as `key  value` lines; nested objects use dotted keys. */
export function renderObject(obj: Row): string {
  const pairs: Array<[string, string]> = [];
  flatten(obj, '', pairs);
  const keyWidth = Math.min(40, Math.max(0, ...pairs.map(([k]) => k.length)));
  return pairs
    .map(([k, v]) => {
      const [first, ...more] = v.split('\n');
      const pad = ' '.repeat(keyWidth + GAP.length);
      return [`${k.padEnd(keyWidth)}${GAP}${first}`, ...more.map((l) => pad + l)].join('\n');
    })
    .join('\n');
}

export interface RenderOptions {
  width: number;
}

/**
 * A result for people: `{ data: [...], ...rest }` → a table of `data` and the other fields below it;
 * any other object → key/value lines; an array → a table; a scalar → itself.
 */
export function renderHuman(value: unknown, opts: RenderOptions): string {
  if (Array.isArray(value)) return tableWithNotes(value, opts.width);
  if (isPlainObject(value)) {
    if (Array.isArray(value.data)) {
      const { data, ...rest } = value;
      const parts = [tableWithNotes(data, opts.width)];
      // The list's other scalar fields (total, limit, offset, next_cursor…) on one line; nulls say nothing.
      const restKeys = Object.keys(rest).filter((k) => rest[k] !== undefined && rest[k] !== null);
      const scalarRest = restKeys.filter((k) => isCellValue(rest[k]));
      const nestedRest = restKeys.filter((k) => !isCellValue(rest[k]));
      if (scalarRest.length) parts.push(scalarRest.map((k) => `${k}: ${cellText(rest[k])}`).join('  '));
      if (nestedRest.length) parts.push(`(also in the answer: ${nestedRest.join(', ')}; use --json)`);
      return parts.join('\n');
    }
    return renderObject(value);
  }
  return value === null || value === undefined ? '' : String(value);
}

function tableWithNotes(rows: readonly unknown[], width: number): string {
  if (!rows.length) return '(no rows)';
  const t = renderTable(rows, width);
  return t.dropped.length ? `${t.text}\n(not shown: ${t.dropped.join(', ')}; use --json for every field)` : t.text;
}
