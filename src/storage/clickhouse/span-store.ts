import type { SpanRecord } from '../../domain/telemetry-types.js';
import type { ChEngine } from './client.js';
import { createBatchBuffer, NO_PACING, type BufferPacing } from './batch-buffer.js';
import { CHUNK_COLUMNS, ENTRY_COLUMNS, encodeRowObjects, encodeSpans, OP_COLUMNS, opKey, SPAN_COLUMNS, takeEncoded, tsv, type ChSpanRow, type EncodedSpans } from './span-rows.js';

export { entryRow, spanRow, utcDay, type ChEntryRow, type ChSpanRow } from './span-rows.js';

/** Text waiting for its insert: TabSeparated pieces per table, and entry operations not yet written by this process. */
interface Rows {
  /** Spans encoded in `spans` (the size that paces inserts). */
  n: number;
  spans: Uint8Array[];
  entries: Uint8Array[];
  chunks: Uint8Array[];
  ops: [number, string, string, number][];
}
const empty = (): Rows => ({ n: 0, spans: [], entries: [], chunks: [], ops: [] });
const append = (into: Rows, from: Rows) => {
  into.n += from.n;
  for (const r of from.spans) into.spans.push(r);
  for (const r of from.entries) into.entries.push(r);
  for (const r of from.chunks) into.chunks.push(r);
  for (const r of from.ops) into.ops.push(r);
};
const isEmpty = (r: Rows) => !r.spans.length && !r.entries.length && !r.chunks.length && !r.ops.length;
/** `entry_operations` lines (OP_COLUMNS; the names are well-formed: span-rows.ts `derived`). */
const opsText = (ops: Rows['ops']): Uint8Array[] =>
  ops.length ? [Buffer.from(ops.map(([pid, service, operation, day]) => `${pid}\t${tsv(service)}\t${tsv(operation)}\t${day}\n`).join(''), 'utf8')] : [];

/**
 * Spans bound for ClickHouse, acknowledged once inserted, inserts coalesced under load
 * (batch-buffer.ts). Rows travel as TabSeparated text (span-rows.ts), made on the decode worker for
 * OTLP spans, else here.
 */
export function createChSpanStore(engine: ChEngine, pacing: BufferPacing = NO_PACING) {
  const seenOps = new Set<string>();
  const forgetOps = (ops: Rows['ops']) => {
    for (const [pid, svc, op, day] of ops) seenOps.delete(opKey(pid, svc, op, day));
  };
  const buffer = createBatchBuffer<Rows>({
    empty,
    append,
    isEmpty,
    size: (r) => r.n,
    async insert(rows) {
      // Spans first: an entry, chunk or operation row never names spans that are not stored.
      if (rows.spans.length) await engine.insertLines('spans', SPAN_COLUMNS, rows.spans);
      if (rows.entries.length) await engine.insertLines('entry_spans', ENTRY_COLUMNS, rows.entries);
      if (rows.chunks.length) await engine.insertLines('trace_chunks', CHUNK_COLUMNS, rows.chunks);
      if (rows.ops.length) await engine.insertLines('entry_operations', OP_COLUMNS, opsText(rows.ops));
    },
    // Entry operations not inserted are written again by the next span that names them.
    forget: (rows) => forgetOps(rows.ops),
  }, pacing);

  /** Spans of one project; encoded here unless the decode worker did (span-rows.ts, attachEncoded). */
  function add(projectId: string, spans: SpanRecord[], source: string, receivedMs: number): number {
    const pid = Number(projectId);
    return addEncoded(takeEncoded(spans, pid, source, receivedMs) ?? encodeSpans(pid, spans, source, receivedMs));
  }

  /** Rows already mapped (a copy from SQLite); their chunks and entry operations are derived here. */
  function addRows(spanRows: ChSpanRow[]): number {
    return addEncoded(encodeRowObjects(spanRows));
  }

  function addEncoded(enc: EncodedSpans): number {
    const rows = empty();
    rows.n = enc.count;
    if (enc.spans.byteLength) rows.spans.push(enc.spans);
    if (enc.entries.byteLength) rows.entries.push(enc.entries);
    if (enc.chunks.byteLength) rows.chunks.push(enc.chunks);
    for (const o of enc.ops) {
      const k = opKey(o[0], o[1], o[2], o[3]);
      if (seenOps.has(k)) continue;
      if (seenOps.size > 200_000) seenOps.clear(); // a re-insert is a harmless duplicate
      seenOps.add(k);
      rows.ops.push(o);
    }
    buffer.add(rows);
    return enc.count;
  }

  return { add, addRows, participant: buffer.participant, flush: buffer.flush };
}

export type ChSpanStore = ReturnType<typeof createChSpanStore>;
