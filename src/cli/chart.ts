/**
 * Charts in the terminal for series answers (logs histogram, metrics timeline, events latency…),
 * driven by the operation's `display.chart` hint so a new series operation gets a chart without CLI
 * code. Line charts are drawn by asciichart; this file only fits the series to the terminal (merging
 * buckets), labels the axes with units and times, and adds a legend. Bars are plain block characters.
 */
import asciichart from 'asciichart';
import type { ChartHint } from '../../operations/define.js';
import { paint } from './format.js';

type Obj = Record<string, unknown>;
type LineHint = Extract<ChartHint, { kind: 'line' }>;
type BarHint = Extract<ChartHint, { kind: 'bar' }>;

export interface ChartOptions {
  width: number;
  /** Rows of the plot area (default 10). */
  height?: number;
  color?: boolean;
}

/** Units short enough to write on every axis label (UCUM, as OTel sends them). */
const SHORT_UNITS = new Set(['ms', 's', 'us', 'µs', 'ns', '%', 'By', 'KiBy', 'MiBy']);

const SERIES_COLOURS = [asciichart.cyan, asciichart.yellow, asciichart.magenta, asciichart.green, asciichart.red];
/** Series drawn at most when the answer is grouped; the rest are named in the legend as "others". */
const MAX_SERIES = 5;

const isObj = (v: unknown): v is Obj => !!v && typeof v === 'object' && !Array.isArray(v);

/** A field of the answer by dotted path (`health.series`). */
function at(answer: Obj, path: string): unknown {
  let v: unknown = answer;
  for (const k of path.split('.')) v = isObj(v) ? v[k] : undefined;
  return v;
}

/** 1234 → "1.2k", 0.5 → "0.5", with the unit appended ("12ms", "1.2k logs"). */
export function compactNumber(n: number, unit = ''): string {
  const abs = Math.abs(n);
  let text: string;
  if (abs >= 1e9) text = `${trim(n / 1e9)}G`;
  else if (abs >= 1e6) text = `${trim(n / 1e6)}M`;
  else if (abs >= 1e4) text = `${trim(n / 1e3)}k`;
  else if (abs >= 100 || Number.isInteger(n)) text = String(Math.round(n));
  else text = trim(n, abs >= 1 ? 1 : 3);
  return unit ? `${text}${/^[a-zA-Zµ%]{1,3}$/.test(unit) ? '' : ' '}${unit}` : text;
}

function trim(n: number, digits = 1): string {
  return n.toFixed(digits).replace(/\.?0+$/, '') || '0';
}

/** Merge consecutive points so at most `columns` remain: sums for counts, means (of non-null values) for levels. */
export function fitSeries(values: ReadonlyArray<number | null>, columns: number, merge: 'sum' | 'mean'): Array<number | null> {
  const per = Math.max(1, Math.ceil(values.length / Math.max(1, columns)));
  if (per === 1) return [...values];
  const out: Array<number | null> = [];
  for (let i = 0; i < values.length; i += per) {
    const chunk = values.slice(i, i + per).filter((v): v is number => v !== null);
    if (!chunk.length) out.push(merge === 'sum' ? 0 : null);
    else out.push(merge === 'sum' ? chunk.reduce((a, b) => a + b, 0) : chunk.reduce((a, b) => a + b, 0) / chunk.length);
  }
  return out;
}

function timeLabel(iso: string, spanMs: number): string {
  const d = new Date(iso);
  if (!Number.isFinite(d.getTime())) return iso;
  const hm = d.toISOString().slice(11, 16);
  return spanMs <= 86_400_000 ? hm : `${d.toISOString().slice(5, 10)} ${hm}`;
}

function unitOf(answer: Obj, hint: LineHint | BarHint): string {
  if ('unitField' in hint && hint.unitField) {
    const u = answer[hint.unitField];
    if (typeof u === 'string' && u && u !== '1') return u;
  }
  return hint.unit ?? '';
}

const visibleLength = (s: string) => s.replace(/\x1b\[[0-9;]*m/g, '').length;

/** Parts joined by `sep`, as many a line as fit the width. */
function wrap(parts: string[], sep: string, width: number): string[] {
  const lines: string[] = [];
  let row = '';
  for (const part of parts) {
    if (row && visibleLength(row) + sep.length + visibleLength(part) > width) {
      lines.push(row);
      row = part;
    } else row = row ? `${row}${sep}${part}` : part;
  }
  if (row) lines.push(row);
  return lines;
}

function lineChart(answer: Obj, hint: LineHint, opts: ChartOptions): string | null {
  const raw = at(answer, hint.points);
  const points = Array.isArray(raw) ? raw.filter(isObj) : [];
  if (!points.length) return null;
  const unit = unitOf(answer, hint);
  const num = (v: unknown) => (typeof v === 'number' && Number.isFinite(v) ? v : null);

  // One series, or one per group value (the largest few by total).
  let series: Array<{ name: string; values: Array<number | null> }>;
  let others = 0;
  const groupRecords = hint.groups ? points.map((p) => (isObj(p[hint.groups!]) ? (p[hint.groups!] as Obj) : null)) : [];
  if (hint.groups && groupRecords.some((g) => g && Object.keys(g).length)) {
    const totals = new Map<string, number>();
    for (const g of groupRecords) for (const [k, v] of Object.entries(g ?? {})) totals.set(k, (totals.get(k) ?? 0) + (num(v) ?? 0));
    const ranked = [...totals.entries()].sort((a, b) => b[1] - a[1]);
    others = Math.max(0, ranked.length - MAX_SERIES);
    series = ranked.slice(0, MAX_SERIES).map(([name]) => ({ name, values: groupRecords.map((g) => num(g?.[name]) ?? 0) }));
  } else {
    series = [{ name: hint.y, values: points.map((p) => num(p[hint.y])) }];
  }
  const all = series.flatMap((s) => s.values).filter((v): v is number => v !== null);
  if (!all.length) return '(no data points in the window)';

  const max = Math.max(...all);
  const min = hint.merge === 'sum' ? Math.min(0, ...all) : Math.min(...all);
  const height = Math.max(3, opts.height ?? 10);
  // Short units (ms, s, %, By) go on every label; longer ones ("logs", "{request}") in the title.
  const shortUnit = SHORT_UNITS.has(unit) ? unit : '';
  const step = (max - min) / height;
  const digits = step === 0 || step >= 1 ? 0 : step >= 0.1 ? 1 : step >= 0.01 ? 2 : 3;
  const label = (x: number) => (Math.abs(x) >= 1e4 ? compactNumber(x) : x.toFixed(digits)) + shortUnit;
  const ticks = Array.from({ length: height + 1 }, (_, i) => min + (i * (max - min)) / height);
  const labelWidth = Math.max(...ticks.map((x) => label(x).length)) + 1;
  const columns = Math.max(8, opts.width - labelWidth - 3);
  const fitted = series.map((s) => {
    const merged = fitSeries(s.values, columns, hint.merge);
    // Gaps (buckets without points) are drawn at the previous level: asciichart has no gaps.
    let last = merged.find((v) => v !== null) ?? 0;
    return merged.map((v) => (v === null ? last : (last = v)));
  });
  const plot = asciichart.plot(fitted, {
    height: max === min ? 1 : height,
    min,
    max: max === min ? min + 1 : max,
    offset: 2,
    padding: ' '.repeat(labelWidth),
    colors: opts.color ? SERIES_COLOURS : undefined,
    format: (x: number) => `${label(x)} `.padStart(labelWidth),
  });

  const firstX = String(points[0]![hint.x] ?? '');
  const lastX = String(points[points.length - 1]![hint.x] ?? '');
  const spanMs = Date.parse(lastX) - Date.parse(firstX);
  const plotWidth = fitted[0]!.length;
  const left = timeLabel(firstX, spanMs);
  const right = timeLabel(lastX, spanMs);
  const axisPad = ' '.repeat(labelWidth);
  const gap = Math.max(1, plotWidth - left.length - right.length);
  const xAxis = `${axisPad}${left}${' '.repeat(gap)}${right}`;

  const titleParts = (hint.title ?? []).filter((k) => at(answer, k) !== undefined && at(answer, k) !== null).map((k) => `${k.split('.').pop()} ${String(at(answer, k))}`);
  const title = [...titleParts, unit ? `unit ${unit}` : '', `${points.length} buckets${fitted[0]!.length < points.length ? `, ${Math.ceil(points.length / fitted[0]!.length)} per column` : ''}`, 'times UTC']
    .filter(Boolean);
  const lines = [...wrap(title, ' · ', opts.width), plot, xAxis];
  if (series.length > 1 || hint.groups) {
    const legend = series.map((s, i) => {
      const total = s.values.reduce<number>((a, v) => a + (v ?? 0), 0);
      return `${paint('──', opts.color ? SERIES_COLOURS[i % SERIES_COLOURS.length] : undefined, !!opts.color)} ${s.name} (${compactNumber(total, unit)})`;
    });
    if (others) legend.push(`+${others} more (--output json)`);
    lines.push(...wrap(legend, '   ', opts.width));
  }
  return lines.join('\n');
}

function barChart(answer: Obj, hint: BarHint, opts: ChartOptions): string | null {
  const rows = Array.isArray(answer[hint.rows]) ? (answer[hint.rows] as unknown[]).filter(isObj) : [];
  if (!rows.length) return null;
  const unit = hint.unit ?? '';
  const values = rows.flatMap((r) => hint.values.map((k) => (typeof r[k] === 'number' ? (r[k] as number) : 0)));
  const max = Math.max(0, ...values);
  const labelWidth = Math.max(...rows.map((r) => String(r[hint.label] ?? '').length));
  const keyWidth = Math.max(...hint.values.map((k) => k.length));
  const valueWidth = Math.max(...values.map((v) => compactNumber(v, unit).length));
  const barWidth = Math.max(4, opts.width - labelWidth - keyWidth - valueWidth - 6);
  const lines: string[] = [];
  for (const r of rows) {
    hint.values.forEach((k, i) => {
      const v = typeof r[k] === 'number' ? (r[k] as number) : null;
      const len = v === null || max === 0 ? 0 : Math.max(v > 0 ? 1 : 0, Math.round((v / max) * barWidth));
      const bar = paint('█'.repeat(len), SERIES_COLOURS[i % SERIES_COLOURS.length], !!opts.color);
      const label = i === 0 ? String(r[hint.label] ?? '') : '';
      lines.push(`${label.padEnd(labelWidth)}  ${k.padEnd(keyWidth)}  ${bar}${' '.repeat(barWidth - len)}  ${v === null ? '-' : compactNumber(v, unit)}`.trimEnd());
    });
  }
  return lines.join('\n');
}

/** The chart of an answer per its hint, or null when the answer holds no series to draw. */
export function renderChart(answer: unknown, hint: ChartHint, opts: ChartOptions): string | null {
  if (!isObj(answer)) return null;
  return hint.kind === 'line' ? lineChart(answer, hint, opts) : barChart(answer, hint, opts);
}
