import type { Attributes, SpanRecord } from '../../domain/telemetry-types.js';
import { environmentOf, operationOf, serviceVersionOf } from '../sqlite-telemetry-store.js';

/**
 * Spans as the TabSeparated text of their ClickHouse rows (schema.ts: `spans`, `entry_spans`,
 * `trace_chunks`), as UTF-8 bytes: on an OTLP decode worker (src/ingest/process.ts) the text is made
 * where the spans are decoded, so the main thread only passes the bytes on to the insert (issue 20:
 * the ClickHouse client's JSON.stringify per row object, and the garbage of those objects, were a
 * third of the main thread). TabSeparated rather than JSONEachRow: no column names on every row, and a
 * string needs escaping only where it holds a backslash, tab, line break or NUL (the attributes' JSON
 * text, full of quotes, goes as it is instead of JSON in JSON): about a third less of the decode
 * worker's time per span than JSON.stringify of the row object (README, bench/scale.ts). Lone
 * surrogates are replaced before (`wellFormed`).
 */
export interface EncodedSpans {
  projectId: number;
  source: string;
  receivedMs: number;
  /** Spans encoded. */
  count: number;
  /** TabSeparated lines (UTF-8) for `spans`, `entry_spans` and `trace_chunks`, columns in the order of the `*_COLUMNS` below. */
  spans: Uint8Array;
  entries: Uint8Array;
  chunks: Uint8Array;
  /** Distinct (project, service, operation, UTC day) of the entry spans: `entry_operations` rows once per process (span-store.ts). */
  ops: [number, string, string, number][];
}

/** The columns of each table's TabSeparated lines, in their order (the INSERT names them: span-store.ts). */
export const SPAN_COLUMNS = [
  'project_id', 'start_ms', 'trace_id', 'span_id', 'parent_span_id', 'trace_state', 'name', 'operation', 'kind', 'is_entry', 'service_name',
  'environment', 'service_version', 'end_ms', 'duration_ms', 'status_code', 'status_message', 'attributes', 'events', 'links', 'scope_name',
  'scope_version', 'source', 'received_ms',
] as const;
export const ENTRY_COLUMNS = ['project_id', 'service_name', 'operation', 'start_ms', 'trace_id', 'span_id', 'environment', 'duration_ms', 'status_code'] as const;
export const CHUNK_COLUMNS = ['project_id', 'trace_id', 'min_start_ms', 'max_start_ms', 'max_end_ms', 'span_count', 'error_count'] as const;
export const OP_COLUMNS = ['project_id', 'service_name', 'operation', 'day'] as const;

/** The UTC day of an epoch-ms time as YYYYMMDD (ClickHouse's toYYYYMMDD of the partition key). */
export function utcDay(ms: number): number {
  const d = new Date(Math.max(0, Math.floor(ms)));
  return d.getUTCFullYear() * 10000 + (d.getUTCMonth() + 1) * 100 + d.getUTCDate();
}

/** The key of an `entry_operations` row (project, service, operation, day). */
export const opKey = (pid: number, service: string, operation: string, day: number) => `${pid}\u0000${service}\u0000${operation}\u0000${day}`;

/**
 * A number as a TabSeparated field: as JavaScript writes it (ClickHouse reads the exponent form
 * too); a non-finite one as 0, the column's default (JSONEachRow's `null` before). The times come from
 * the decoders finite and not subnormal.
 */
const num = (x: number): string => (Number.isFinite(x) ? '' + x : '0');
/**
 * A string without lone surrogates (OTLP/JSON can carry them, as `\ud800` escapes): ClickHouse 18.16
 * refused a JSONEachRow escape of a lone surrogate ("missing second part of surrogate pair"), and the
 * whole insert with it, and UTF-8 has no encoding for one. Each becomes three U+FFFD: SQLite stores a
 * lone surrogate as its three WTF-8 bytes and reads them back as three U+FFFD, so both stores give the
 * same text back. (The JSON columns — attributes, events, links — hold the escape itself as text,
 * `\\ud800`, as SQLite's do.)
 */
type WellFormed = { isWellFormed(): boolean }; // ES2024, in Node 20
const LONE_SURROGATE = /[\ud800-\udbff](?![\udc00-\udfff])|(?<![\ud800-\udbff])[\udc00-\udfff]/g;
export const wellFormed = (s: string): string => ((s as unknown as WellFormed).isWellFormed() ? s : s.replace(LONE_SURROGATE, '\ufffd\ufffd\ufffd'));
/**
 * A string as a TabSeparated field (well-formed): backslash, tab, line feed, carriage return and NUL
 * as ClickHouse's escapes (every other character as it is: its reader copies bytes up to a tab, line
 * break or backslash); a missing one as "" (the column's default either way).
 */
const TSV_SPECIAL = /[\\\t\n\r\0]/;
const TSV_SPECIALS = /[\\\t\n\r\0]/g;
const TSV_ESCAPE: Record<string, string> = { '\\': '\\\\', '\t': '\\t', '\n': '\\n', '\r': '\\r', '\0': '\\0' };
export const tsv = (s: string): string => (TSV_SPECIAL.test(s) ? s.replace(TSV_SPECIALS, (c) => TSV_ESCAPE[c]!) : s);
const str = (s: string | null | undefined): string => (typeof s === 'string' ? tsv(wellFormed(s)) : '');

interface Chunk {
  pid: number;
  trace: string;
  min: number;
  max: number;
  maxEnd: number;
  n: number;
  errors: number;
}

/** Accumulates the derived rows (chunks per trace, distinct entry operations) of one encoding. */
function derived() {
  const chunks = new Map<string, Chunk>();
  const ops = new Map<string, [number, string, string, number]>();
  return {
    span(pid: number, traceId: string, start: number, end: number, status: number) {
      const k = `${pid}/${traceId}`;
      let c = chunks.get(k);
      if (!c) chunks.set(k, (c = { pid, trace: traceId, min: start, max: start, maxEnd: end, n: 0, errors: 0 }));
      c.n++;
      if (status === 2) c.errors++;
      if (start < c.min) c.min = start;
      if (start > c.max) c.max = start;
      if (end > c.maxEnd) c.maxEnd = end;
    },
    entry(pid: number, service: string, operation: string, start: number) {
      const day = utcDay(start);
      const k = opKey(pid, service, operation, day);
      if (!ops.has(k)) ops.set(k, [pid, wellFormed(service), wellFormed(operation), day]);
    },
    chunkBytes(): Uint8Array {
      const out = chunkLines.start();
      for (const c of chunks.values())
        out.line(c.pid + '\t' + str(c.trace) + '\t' + num(c.min) + '\t' + num(c.max) + '\t' + num(c.maxEnd) + '\t' + c.n + '\t' + c.errors);
      return out.take();
    },
    ops: () => [...ops.values()],
  };
}

/**
 * TabSeparated lines written as UTF-8 into a scratch buffer, one flat string per row, then copied once
 * into a buffer of their exact size (which the decode worker transfers to the main thread). Appending
 * the rows to one string and converting that was 3–4× the cost of the whole encoding (the rope of
 * hundreds of rows is flattened, then converted: ~7.5 µs of ~10.5 per span in `bench` terms, against
 * ~2 µs for stringify and write): `scratch/`-style measurement in the commit that made this.
 * The scratch buffers are reused across calls (a decode worker encodes one slice at a time) and
 * dropped when a very large slice made them grow past `KEEP_BYTES`.
 */
const KEEP_BYTES = 8 << 20;
class Lines {
  private buf: Buffer = Buffer.allocUnsafe(64 << 10);
  private off = 0;
  start(): this {
    this.off = 0;
    return this;
  }
  line(s: string): void {
    // A UTF-16 code unit is at most 3 bytes of UTF-8 (a surrogate pair: 4 bytes for 2 units).
    const need = this.off + s.length * 3 + 1;
    if (need > this.buf.length) {
      const next = Buffer.allocUnsafe(Math.max(need, this.buf.length * 2));
      this.buf.copy(next, 0, 0, this.off);
      this.buf = next;
    }
    this.off += this.buf.write(s, this.off);
    this.buf[this.off++] = 10;
  }
  /** The lines as a buffer of their own (exact size), and the scratch ready for the next encoding. */
  take(): Uint8Array {
    // Not zero-filled, not from the pool: a buffer owning its memory, so the worker can transfer it.
    const out = Buffer.allocUnsafeSlow(this.off);
    this.buf.copy(out, 0, 0, this.off);
    this.off = 0;
    if (this.buf.length > KEEP_BYTES) this.buf = Buffer.allocUnsafe(64 << 10);
    return out;
  }
}
const spanLines = new Lines();
const entryLines = new Lines();
const chunkLines = new Lines();

/** A span as its ClickHouse row (schema.ts, table `spans`). */
export interface ChSpanRow {
  project_id: number;
  start_ms: number;
  trace_id: string;
  span_id: string;
  parent_span_id: string;
  trace_state: string;
  name: string;
  operation: string;
  kind: number;
  is_entry: number;
  service_name: string;
  environment: string;
  service_version: string;
  end_ms: number;
  duration_ms: number;
  status_code: number;
  status_message: string;
  attributes: string;
  events: string;
  links: string;
  scope_name: string;
  scope_version: string;
  source: string;
  received_ms: number;
}

/** An entry span's row in `entry_spans` (schema.ts, migration 2): what operation stats and lists read. */
export interface ChEntryRow {
  project_id: number;
  service_name: string;
  operation: string;
  start_ms: number;
  trace_id: string;
  span_id: string;
  environment: string;
  duration_ms: number;
  status_code: number;
}

/** The `entry_spans` row of an entry span's `spans` row (the backfill in schema.ts selects the same columns). */
export const entryRow = (r: ChSpanRow): ChEntryRow => ({
  project_id: r.project_id,
  service_name: r.service_name,
  operation: r.operation,
  start_ms: r.start_ms,
  trace_id: r.trace_id,
  span_id: r.span_id,
  environment: r.environment,
  duration_ms: r.duration_ms,
  status_code: r.status_code,
});

/** Span → row; the same derivations as the SQLite writer (operation, environment, service version). */
export function spanRow(projectId: number, sp: SpanRecord, source: string, receivedMs: number): ChSpanRow {
  const operation = operationOf(sp);
  const duration = Math.max(0, sp.end_ms - sp.start_ms);
  const w = wellFormed; // lone surrogates: see span-rows.ts
  return {
    project_id: projectId,
    start_ms: sp.start_ms,
    trace_id: w(sp.trace_id),
    span_id: w(sp.span_id),
    parent_span_id: w(sp.parent_span_id ?? ''),
    trace_state: w(sp.trace_state),
    name: w(sp.name),
    operation: w(operation),
    kind: sp.kind,
    is_entry: sp.kind === 2 || sp.kind === 5 || !sp.parent_span_id ? 1 : 0,
    service_name: w(sp.service_name),
    environment: w(environmentOf(sp.resource)),
    service_version: w(serviceVersionOf(sp.resource)),
    end_ms: sp.end_ms,
    duration_ms: duration,
    status_code: sp.status_code,
    status_message: w(sp.status_message),
    attributes: JSON.stringify(sp.attributes),
    events: sp.events.length ? JSON.stringify(sp.events) : '',
    links: sp.links.length ? JSON.stringify(sp.links) : '',
    scope_name: w(sp.scope.name),
    scope_version: w(sp.scope.version ?? ''),
    source: w(source),
    received_ms: receivedMs,
  };
}

/** A `spans` row as its TabSeparated line (SPAN_COLUMNS); its strings are well-formed already (spanRow, or read from SQLite). */
export const spanLine = (r: ChSpanRow): string =>
  r.project_id + '\t' + num(r.start_ms) + '\t' + tsv(r.trace_id) + '\t' + tsv(r.span_id) + '\t' + tsv(r.parent_span_id) + '\t' + tsv(r.trace_state) + '\t' +
  tsv(r.name) + '\t' + tsv(r.operation) + '\t' + r.kind + '\t' + r.is_entry + '\t' + tsv(r.service_name) + '\t' + tsv(r.environment) + '\t' +
  tsv(r.service_version) + '\t' + num(r.end_ms) + '\t' + num(r.duration_ms) + '\t' + r.status_code + '\t' + tsv(r.status_message) + '\t' +
  tsv(r.attributes) + '\t' + tsv(r.events) + '\t' + tsv(r.links) + '\t' + tsv(r.scope_name) + '\t' + tsv(r.scope_version) + '\t' + tsv(r.source) + '\t' +
  num(r.received_ms);

/** An entry span's `spans` row as its `entry_spans` line (ENTRY_COLUMNS: entryRow's columns). */
export const entryLine = (r: ChSpanRow): string =>
  r.project_id + '\t' + tsv(r.service_name) + '\t' + tsv(r.operation) + '\t' + num(r.start_ms) + '\t' + tsv(r.trace_id) + '\t' + tsv(r.span_id) + '\t' +
  tsv(r.environment) + '\t' + num(r.duration_ms) + '\t' + r.status_code;

/** Row objects → the lines of `spans` and `entry_spans` and the derived rows. */
function encodeRows(count: number, rowAt: (i: number) => ChSpanRow, projectId: number, source: string, receivedMs: number): EncodedSpans {
  const d = derived();
  const rows = spanLines.start();
  const entries = entryLines.start();
  for (let i = 0; i < count; i++) {
    const r = rowAt(i);
    rows.line(spanLine(r));
    d.span(r.project_id, r.trace_id, r.start_ms, r.end_ms, r.status_code);
    if (r.is_entry) {
      entries.line(entryLine(r));
      d.entry(r.project_id, r.service_name, r.operation, r.start_ms);
    }
  }
  return { projectId, source, receivedMs, count, spans: rows.take(), entries: entries.take(), chunks: d.chunkBytes(), ops: d.ops() };
}

/** Spans of one project → their rows' TabSeparated text and derived rows. */
export function encodeSpans(projectId: number, spans: readonly SpanRecord[], source: string, receivedMs: number): EncodedSpans {
  return encodeRows(spans.length, (i) => spanRow(projectId, spans[i]!, source, receivedMs), projectId, source, receivedMs);
}

/** Row objects (a copy from SQLite, of any projects) → the same text and derived rows. */
export function encodeRowObjects(rowObjs: readonly ChSpanRow[]): EncodedSpans {
  return encodeRows(rowObjs.length, (i) => rowObjs[i]!, -1, '', 0);
}

const NO_ATTRIBUTES: Attributes = Object.freeze({}) as Attributes;
const NONE: never[] = Object.freeze([]) as unknown as never[];
const NO_SCOPE = Object.freeze({ name: '', attributes: NO_ATTRIBUTES }) as SpanRecord['scope'];

/**
 * A span reduced to what the main thread's writers still read once its ClickHouse rows are encoded
 * and it is no AI work (the release rollups: service, resource, kind, parent, times, status; no ids): a
 * decode worker posts these instead of whole spans, so the main thread does not receive (structured
 * clone) and collect every attribute, event and link it never reads. The emptied fields share one
 * frozen object, cloned once per message.
 */
export function slimSpan(sp: SpanRecord): SpanRecord {
  return {
    trace_id: '',
    span_id: '',
    parent_span_id: sp.parent_span_id,
    trace_state: '',
    name: '',
    kind: sp.kind,
    start_ms: sp.start_ms,
    end_ms: sp.end_ms,
    status_code: sp.status_code,
    status_message: '',
    attributes: NO_ATTRIBUTES,
    events: NONE,
    links: NONE,
    resource: sp.resource,
    scope: NO_SCOPE,
    service_name: sp.service_name,
  };
}

/**
 * Encoded rows handed over with the very span array they were made from (a weak map, as
 * src/domain/ai/prepared.ts does): the writer uses them only for that array, so a writer layer that
 * replaces spans (privacy mode withholds AI content: src/storage/ai-spans.ts) makes a new array and
 * its spans are encoded again, from what it changed.
 */
const attached = new WeakMap<readonly SpanRecord[], EncodedSpans>();
export function attachEncoded(spans: readonly SpanRecord[], enc: EncodedSpans): void {
  attached.set(spans, enc);
}
/** The rows encoded for exactly this array, project, route and receive time; null when there are none. */
export function takeEncoded(spans: readonly SpanRecord[], projectId: number, source: string, receivedMs: number): EncodedSpans | null {
  const e = attached.get(spans);
  if (!e) return null;
  attached.delete(spans);
  return e.projectId === projectId && e.source === source && e.receivedMs === receivedMs && e.count === spans.length ? e : null;
}
