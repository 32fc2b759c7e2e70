import type { Attributes, SpanRecord } from '../../domain/telemetry-types.js';
import { environmentOf, operationOf, serviceVersionOf } from '../sqlite-telemetry-store.js';

/**
 * Spans as the JSONEachRow text of their ClickHouse rows (schema.ts: `spans`, `entry_spans`,
 * `trace_chunks`), built straight from the decoded spans, without a row object per span: on an
 * OTLP decode worker (src/ingest/process.ts) the text is made where the spans are decoded, so the
 * main thread only passes the bytes on to the insert (issue 20: JSON.stringify of a row object per
 * span by the ClickHouse client, and the garbage of those objects, were a third of the main thread).
 *
 * Each line is byte for byte `JSON.stringify` of the row object `spanRow` (span-store.ts) makes,
 * keys in the same order: strings go through JSON.stringify, so control characters, quotes and
 * backslashes are escaped as ClickHouse's JSONEachRow reader expects; lone surrogates are replaced
 * first (`wellFormed`).
 */
export interface EncodedSpans {
  projectId: number;
  source: string;
  receivedMs: number;
  /** Spans encoded. */
  count: number;
  /** JSONEachRow lines (UTF-8) for `spans`, `entry_spans` and `trace_chunks`. */
  spans: Uint8Array;
  entries: Uint8Array;
  chunks: Uint8Array;
  /** Distinct (project, service, operation, UTC day) of the entry spans: `entry_operations` rows once per process (span-store.ts). */
  ops: [number, string, string, number][];
}

/** The UTC day of an epoch-ms time as YYYYMMDD (ClickHouse's toYYYYMMDD of the partition key). */
export function utcDay(ms: number): number {
  const d = new Date(Math.max(0, Math.floor(ms)));
  return d.getUTCFullYear() * 10000 + (d.getUTCMonth() + 1) * 100 + d.getUTCDate();
}

/** The key of an `entry_operations` row (project, service, operation, day). */
export const opKey = (pid: number, service: string, operation: string, day: number) => `${pid}\u0000${service}\u0000${operation}\u0000${day}`;

/** A number as JSON.stringify writes it (non-finite: null). */
const num = (x: number): string => (Number.isFinite(x) ? '' + x : 'null');
/**
 * A string without lone surrogates (OTLP/JSON can carry them, as `\ud800` escapes): ClickHouse 18.16
 * refuses a JSONEachRow escape of a lone surrogate ("missing second part of surrogate pair"), and the
 * whole insert with it — one such span name would fail every request coalesced into that insert.
 * Each becomes three U+FFFD: SQLite stores a lone surrogate as its three WTF-8 bytes and reads them
 * back as three U+FFFD, so both stores give the same text back. (The JSON columns — attributes,
 * events, links — hold the escape itself as text, `\\ud800`, as SQLite's do.)
 */
type WellFormed = { isWellFormed(): boolean }; // ES2024, in Node 20
const LONE_SURROGATE = /[\ud800-\udbff](?![\udc00-\udfff])|(?<![\ud800-\udbff])[\udc00-\udfff]/g;
export const wellFormed = (s: string): string => ((s as unknown as WellFormed).isWellFormed() ? s : s.replace(LONE_SURROGATE, '\ufffd\ufffd\ufffd'));
/** A string as JSON.stringify writes it (well-formed); a missing one as "" (ClickHouse's default for the column either way). */
const str = (s: string | null | undefined): string => (typeof s === 'string' ? JSON.stringify(wellFormed(s)) : '""');

/** Per-resource derivations (spans of a batch share resource objects, also across a structured clone). */
function resourceCache() {
  const m = new Map<Attributes, { env: string; ver: string }>();
  return (r: Attributes) => {
    let v = m.get(r);
    if (!v) m.set(r, (v = { env: str(environmentOf(r)), ver: str(serviceVersionOf(r)) }));
    return v;
  };
}

const isEntry = (sp: Pick<SpanRecord, 'kind' | 'parent_span_id'>) => sp.kind === 2 || sp.kind === 5 || !sp.parent_span_id;

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
    chunkText(): string {
      let out = '';
      for (const c of chunks.values())
        out += `{"project_id":${c.pid},"trace_id":${str(c.trace)},"min_start_ms":${num(c.min)},"max_start_ms":${num(c.max)},"max_end_ms":${num(c.maxEnd)},"span_count":${c.n},"error_count":${c.errors}}\n`;
      return out;
    },
    ops: () => [...ops.values()],
  };
}

const utf8 = (s: string): Uint8Array => Buffer.from(s, 'utf8');

/** Spans → their rows' JSONEachRow text; the same derivations as `spanRow` (operation, environment, service version). */
export function encodeSpans(projectId: number, spans: readonly SpanRecord[], source: string, receivedMs: number): EncodedSpans {
  const res = resourceCache();
  const d = derived();
  const tail = `,"source":${str(source)},"received_ms":${num(receivedMs)}}\n`;
  const pid = `{"project_id":${projectId},`;
  let rows = '';
  let entries = '';
  for (const sp of spans) {
    const operation = operationOf(sp);
    const r = res(sp.resource);
    const entry = isEntry(sp);
    const duration = num(Math.max(0, sp.end_ms - sp.start_ms));
    const start = num(sp.start_ms);
    const trace = str(sp.trace_id);
    const spanId = str(sp.span_id);
    const op = str(operation);
    const service = str(sp.service_name);
    rows +=
      `${pid}"start_ms":${start},"trace_id":${trace},"span_id":${spanId},"parent_span_id":${str(sp.parent_span_id ?? '')},` +
      `"trace_state":${str(sp.trace_state)},"name":${str(sp.name)},"operation":${op},"kind":${num(sp.kind)},"is_entry":${entry ? 1 : 0},` +
      `"service_name":${service},"environment":${r.env},"service_version":${r.ver},"end_ms":${num(sp.end_ms)},"duration_ms":${duration},` +
      `"status_code":${num(sp.status_code)},"status_message":${str(sp.status_message)},"attributes":${str(JSON.stringify(sp.attributes))},` +
      `"events":${sp.events.length ? str(JSON.stringify(sp.events)) : '""'},"links":${sp.links.length ? str(JSON.stringify(sp.links)) : '""'},` +
      `"scope_name":${str(sp.scope.name)},"scope_version":${str(sp.scope.version ?? '')}${tail}`;
    d.span(projectId, sp.trace_id, sp.start_ms, sp.end_ms, sp.status_code);
    if (entry) {
      entries += `${pid}"service_name":${service},"operation":${op},"start_ms":${start},"trace_id":${trace},"span_id":${spanId},"environment":${r.env},"duration_ms":${duration},"status_code":${num(sp.status_code)}}\n`;
      d.entry(projectId, sp.service_name, operation, sp.start_ms);
    }
  }
  return { projectId, source, receivedMs, count: spans.length, spans: utf8(rows), entries: utf8(entries), chunks: utf8(d.chunkText()), ops: d.ops() };
}

/** A span row as `spans` stores it (schema.ts); the fields of a copied row (migrate.ts). */
export interface ChSpanRowLike {
  project_id: number;
  start_ms: number;
  trace_id: string;
  span_id: string;
  service_name: string;
  operation: string;
  environment: string;
  end_ms: number;
  duration_ms: number;
  status_code: number;
  is_entry: number;
}

/** Row objects (a copy from SQLite, of any projects) → the same text and derived rows. */
export function encodeRowObjects(rowObjs: readonly ChSpanRowLike[]): EncodedSpans {
  const d = derived();
  let rows = '';
  let entries = '';
  for (const r of rowObjs) {
    rows += JSON.stringify(r) + '\n';
    d.span(r.project_id, r.trace_id, r.start_ms, r.end_ms, r.status_code);
    if (r.is_entry) {
      entries +=
        JSON.stringify({
          project_id: r.project_id,
          service_name: r.service_name,
          operation: r.operation,
          start_ms: r.start_ms,
          trace_id: r.trace_id,
          span_id: r.span_id,
          environment: r.environment,
          duration_ms: r.duration_ms,
          status_code: r.status_code,
        }) + '\n';
      d.entry(r.project_id, r.service_name, r.operation, r.start_ms);
    }
  }
  return { projectId: -1, source: '', receivedMs: 0, count: rowObjs.length, spans: utf8(rows), entries: utf8(entries), chunks: utf8(d.chunkText()), ops: d.ops() };
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
