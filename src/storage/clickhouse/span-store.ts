import type { SpanRecord } from '../../domain/telemetry-types.js';
import type { BatchParticipant } from '../write-batcher.js';
import { environmentOf, operationOf, serviceVersionOf } from '../sqlite-telemetry-store.js';
import type { ChEngine } from './client.js';

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

interface ChunkRow {
  project_id: number;
  trace_id: string;
  min_start_ms: number;
  max_start_ms: number;
  max_end_ms: number;
  span_count: number;
  error_count: number;
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

interface Rows {
  spans: ChSpanRow[];
  entries: ChEntryRow[];
  chunks: ChunkRow[];
  ops: { project_id: number; service_name: string; operation: string; day: number }[];
}
const empty = (): Rows => ({ spans: [], entries: [], chunks: [], ops: [] });
const append = (into: Rows, from: Rows) => {
  for (const r of from.spans) into.spans.push(r);
  for (const r of from.entries) into.entries.push(r);
  for (const r of from.chunks) into.chunks.push(r);
  for (const r of from.ops) into.ops.push(r);
};
const isEmpty = (r: Rows) => !r.spans.length && !r.entries.length && !r.chunks.length && !r.ops.length;

/** Span → row; the same derivations as the SQLite writer (operation, environment, service version). */
export function spanRow(projectId: number, sp: SpanRecord, source: string, receivedMs: number): ChSpanRow {
  const operation = operationOf(sp);
  const duration = Math.max(0, sp.end_ms - sp.start_ms);
  return {
    project_id: projectId,
    start_ms: sp.start_ms,
    trace_id: sp.trace_id,
    span_id: sp.span_id,
    parent_span_id: sp.parent_span_id ?? '',
    trace_state: sp.trace_state,
    name: sp.name,
    operation,
    kind: sp.kind,
    is_entry: sp.kind === 2 || sp.kind === 5 || !sp.parent_span_id ? 1 : 0,
    service_name: sp.service_name,
    environment: environmentOf(sp.resource),
    service_version: serviceVersionOf(sp.resource),
    end_ms: sp.end_ms,
    duration_ms: duration,
    status_code: sp.status_code,
    status_message: sp.status_message,
    attributes: JSON.stringify(sp.attributes),
    events: sp.events.length ? JSON.stringify(sp.events) : '',
    links: sp.links.length ? JSON.stringify(sp.links) : '',
    scope_name: sp.scope.name,
    scope_version: sp.scope.version ?? '',
    source,
    received_ms: receivedMs,
  };
}

/** The UTC day of an epoch-ms time as YYYYMMDD (ClickHouse's toYYYYMMDD of the partition key). */
export function utcDay(ms: number): number {
  const d = new Date(Math.max(0, Math.floor(ms)));
  return d.getUTCFullYear() * 10000 + (d.getUTCMonth() + 1) * 100 + d.getUTCDate();
}
const opKey = (pid: number, service: string, operation: string, day: number) => `${pid}\u0000${service}\u0000${operation}\u0000${day}`;

/**
 * Spans bound for ClickHouse. Inside a write batch (src/storage/write-batcher.ts) a job's rows are
 * kept only when its savepoint is released, and the batch's rows are inserted after the SQLite
 * commit (`commit()`), before any job of the batch is acknowledged: an acknowledged span is in
 * ClickHouse. Inserts are coalesced: while one insert is in flight, the rows of later batches wait
 * and go in the next one, so under load inserts grow large, as ClickHouse wants.
 */
export function createChSpanStore(engine: ChEngine) {
  let inBatch = false;
  let job = empty();
  let batch = empty();
  let sealed = empty();
  let pending = empty();
  let waiters: { resolve: () => void; reject: (e: unknown) => void }[] = [];
  let inFlight: Promise<void> | null = null;
  const seenOps = new Set<string>();

  const pump = (): Promise<void> => {
    if (inFlight) return inFlight;
    inFlight = (async () => {
      while (!isEmpty(pending)) {
        const rows = pending;
        const w = waiters;
        pending = empty();
        waiters = [];
        try {
          // Spans first: an entry, chunk or operation row never names spans that are not stored.
          await engine.insert('spans', rows.spans);
          await engine.insert('entry_spans', rows.entries);
          await engine.insert('trace_chunks', rows.chunks);
          await engine.insert('entry_operations', rows.ops);
          for (const x of w) x.resolve();
        } catch (e) {
          for (const r of rows.ops) seenOps.delete(opKey(r.project_id, r.service_name, r.operation, r.day));
          for (const x of w) x.reject(e);
        }
      }
      inFlight = null;
    })();
    return inFlight;
  };

  /** Queues rows for insertion; resolves once the insert holding them succeeded. */
  const enqueue = (rows: Rows): Promise<void> => {
    if (isEmpty(rows)) return Promise.resolve();
    append(pending, rows);
    const p = new Promise<void>((resolve, reject) => waiters.push({ resolve, reject }));
    if (!inFlight) void pump();
    return p;
  };

  function add(projectId: string, spans: SpanRecord[], source: string, receivedMs: number): number {
    const pid = Number(projectId);
    return addRows(spans.map((sp) => spanRow(pid, sp, source, receivedMs)));
  }

  /** Rows already mapped (a copy from SQLite); their chunks and entry operations are derived here. */
  function addRows(spanRows: ChSpanRow[]): number {
    const rows = inBatch ? job : empty();
    const traces = new Map<string, ChunkRow>();
    for (const r of spanRows) {
      const pid = r.project_id;
      rows.spans.push(r);
      const tk = `${pid}/${r.trace_id}`;
      let c = traces.get(tk);
      if (!c) {
        c = { project_id: pid, trace_id: r.trace_id, min_start_ms: r.start_ms, max_start_ms: r.start_ms, max_end_ms: r.end_ms, span_count: 0, error_count: 0 };
        traces.set(tk, c);
      }
      c.span_count++;
      if (r.status_code === 2) c.error_count++;
      if (r.start_ms < c.min_start_ms) c.min_start_ms = r.start_ms;
      if (r.start_ms > c.max_start_ms) c.max_start_ms = r.start_ms;
      if (r.end_ms > c.max_end_ms) c.max_end_ms = r.end_ms;
      if (r.is_entry) {
        rows.entries.push(entryRow(r));
        const day = utcDay(r.start_ms);
        const k = opKey(pid, r.service_name, r.operation, day);
        if (!seenOps.has(k)) {
          if (seenOps.size > 200_000) seenOps.clear(); // a re-insert is a harmless duplicate
          seenOps.add(k);
          rows.ops.push({ project_id: pid, service_name: r.service_name, operation: r.operation, day });
        }
      }
    }
    for (const c of traces.values()) rows.chunks.push(c);
    if (!inBatch) void enqueue(rows).catch(() => {});
    return spanRows.length;
  }

  const participant: BatchParticipant = {
    begin() {
      inBatch = true;
      job = empty();
      batch = empty();
    },
    jobEnd(ok) {
      if (ok) append(batch, job);
      else for (const r of job.ops) seenOps.delete(opKey(r.project_id, r.service_name, r.operation, r.day));
      job = empty();
    },
    end() {
      inBatch = false;
      append(sealed, batch);
      batch = empty();
    },
    abort() {
      for (const r of sealed.ops) seenOps.delete(opKey(r.project_id, r.service_name, r.operation, r.day));
      sealed = empty();
    },
    commit() {
      const rows = sealed;
      sealed = empty();
      return enqueue(rows);
    },
  };

  return {
    add,
    addRows,
    participant,
    /** Resolves when every row added so far (also outside a batch) is in ClickHouse. */
    async flush(): Promise<void> {
      const rows = sealed;
      sealed = empty();
      await enqueue(rows);
      while (inFlight) await inFlight;
    },
  };
}

export type ChSpanStore = ReturnType<typeof createChSpanStore>;
