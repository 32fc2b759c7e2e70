import type { Attributes, LogRecordOut } from '../../domain/telemetry-types.js';
import type { LogRow } from '../logs-read-repo.js';
import { environmentOf, levelOf, serviceVersionOf } from '../sqlite-telemetry-store.js';
import { idBlob } from '../compact-ids.js';
import { ftsAttrsText, ftsTokens } from '../log-fts.js';
import type { ChEngine } from './client.js';
import { createBatchBuffer, NO_PACING, rowArrays, type BufferPacing } from './batch-buffer.js';

/** A log record as its ClickHouse row (schema.ts, migration 4, table `logs`). */
export interface ChLogRow {
  project_id: number;
  time_ms: number;
  id: number;
  observed_ms: number;
  severity_number: number;
  severity_text: string;
  level: string;
  body: string;
  attributes: string;
  resource: string;
  trace_id: string;
  span_id: string;
  service_name: string;
  environment: string;
  release: string;
  source: string;
  connector_key: string;
  scope_name: string;
  http_method: string;
  attr_kv: string[];
  res_kv: string[];
  body_tokens: string;
  attr_tokens: string;
  received_ms: number;
}

/**
 * A number as SQLite writes a JSON number it read (`CAST(json_extract(…) AS TEXT)`): an integer in
 * the 64-bit range as its digits, anything else as a REAL — `%!.15g` when 15 significant digits give
 * the number back, else 17 (`.0` kept, exponents below -4 or from the precision up, as `e+NN`).
 */
function sqliteNumberText(n: number): string {
  if (Number.isInteger(n) && n >= -(2 ** 63) && n < 2 ** 63) return BigInt(n).toString();
  if (!Number.isFinite(n)) return n > 0 ? 'Inf' : n < 0 ? '-Inf' : '';
  const p = Number(n.toExponential(14)) === n ? 15 : 17;
  const [m, x] = n.toExponential(p - 1).split('e') as [string, string];
  const e = Number(x);
  const trim = (d: string) => (d.includes('.') ? d.replace(/0+$/, '').replace(/\.$/, '.0') : `${d}.0`);
  if (e < -4 || e >= p) return `${trim(m)}e${e < 0 ? '-' : '+'}${String(Math.abs(e)).padStart(2, '0')}`;
  return trim(n.toFixed(p - 1 - e));
}

/**
 * An attribute value as the SQLite reads compare it in `key:value` terms (logs-read-repo.ts
 * queryWhere: `CAST(json_extract(…) AS TEXT)`): strings as they are, numbers as SQLite writes them,
 * booleans 1/0, objects and arrays as JSON text; null (no value) for JSON null.
 */
export function sqliteValueText(v: unknown): string | null {
  if (v === null || v === undefined) return null;
  if (typeof v === 'string') return v;
  if (typeof v === 'number') return sqliteNumberText(v);
  if (typeof v === 'boolean') return v ? '1' : '0';
  return JSON.stringify(v) ?? null;
}

/** 'key\0value' of every top-level attribute with a value (schema.ts `attr_kv`, `res_kv`). */
export const kv = (attrs: Attributes): string[] => {
  const out: string[] = [];
  for (const [k, v] of Object.entries(attrs)) {
    const t = sqliteValueText(v);
    if (t !== null) out.push(`${k}\u0000${t}`);
  }
  return out;
};

/** Tokens as ' a b c ' (empty text: ' '): a phrase is a substring ' a b ' (a prefix: ' a b'). */
export const tokenText = (text: string): string => {
  // ASCII (most log text): FTS5's tokens are the runs of letters and digits, lower-cased — the same
  // as ftsTokens gives, at a fraction of its per-character Unicode tests.
  const t = /^[\x00-\x7f]*$/.test(text) ? text.toLowerCase().split(/[^a-z0-9]+/).filter(Boolean) : ftsTokens(text);
  return t.length ? ` ${t.join(' ')} ` : ' ';
};

/** The HTTP method of a log, as the SQLite counts group it (attr-keysets.ts LOG_HTTP_METHOD_SQL). */
const httpMethodOf = (attrs: Attributes) => sqliteValueText(attrs['http.request.method']) ?? sqliteValueText(attrs['http.method']) ?? '';

/**
 * Log ids in ClickHouse: increasing within a process (records of equal time read newest last, as
 * SQLite's rowid), about the time of arrival across processes, and below 2^53 (read back as JSON
 * numbers): 40 bits of milliseconds since 2025 (34 years), 7 of a sequence (128 ids per millisecond;
 * a larger batch runs ahead of the clock) and 6 of a random process number, so two processes writing
 * in the same millisecond do not make the same id.
 */
const ID_EPOCH = Date.UTC(2025, 0, 1);
const PROCESS_BITS = 64;
const processNo = Math.floor(Math.random() * PROCESS_BITS);
let lastTick = 0;
export function nextLogId(nowMs = Date.now()): number {
  lastTick = Math.max(lastTick + 1, Math.max(0, nowMs - ID_EPOCH) * 128);
  return lastTick * PROCESS_BITS + processNo;
}

/** What the reads compare, derived from a record's attributes, resource, body and trace id (as stored: hex text). */
function searchColumns(attrs: Attributes, resource: Attributes, body: string, traceId: string | null) {
  const values = `[${Object.values(attrs).map((v) => JSON.stringify(v) ?? 'null').join(',')}]`;
  return {
    http_method: httpMethodOf(attrs),
    attr_kv: kv(attrs),
    res_kv: kv(resource),
    body_tokens: tokenText(body),
    attr_tokens: tokenText(ftsAttrsText(values, traceId)),
  };
}

const parseObject = (json: string | undefined): Attributes => {
  try {
    const v = JSON.parse(json ?? '{}');
    return v && typeof v === 'object' && !Array.isArray(v) ? v : {};
  } catch {
    return {};
  }
};

/**
 * A log row read from SQLite (logs-read-repo.ts rowsAfter, with its resource) → row, keeping its id
 * (copied records of equal time keep their order): `sightline migrate --to-clickhouse`. The time of
 * receipt is not kept in SQLite (0).
 */
export function storedLogRow(r: LogRow & { project_id: number }): ChLogRow {
  const attrs = parseObject(r.attributes);
  const resource = parseObject(r.resource);
  return {
    project_id: r.project_id,
    time_ms: r.time_ms,
    id: r.id,
    observed_ms: r.observed_ms,
    severity_number: r.severity_number,
    severity_text: r.severity_text ?? '',
    level: r.level,
    body: r.body,
    attributes: r.attributes,
    resource: r.resource ?? '{}',
    trace_id: r.trace_id ?? '',
    span_id: r.span_id ?? '',
    service_name: r.service_name ?? '',
    environment: r.environment ?? '',
    release: r.release ?? '',
    source: r.source,
    connector_key: r.connector_key ?? '',
    scope_name: r.scope_name ?? '',
    ...searchColumns(attrs, resource, r.body, r.trace_id),
    received_ms: 0,
  };
}

/** Log record → row: the same derivations as the SQLite writer (sqlite-telemetry-store.ts insertLogs). */
export function logRow(projectId: number, l: LogRecordOut, source: string, receivedMs: number, connectorKey: string | null, id: number): ChLogRow {
  const body = typeof l.body === 'string' ? l.body : l.body === null ? '' : JSON.stringify(l.body);
  const text = (x: Buffer | string | null) => (x === null ? '' : Buffer.isBuffer(x) ? x.toString('hex') : x);
  const traceId = text(idBlob(l.trace_id, 32));
  return {
    project_id: projectId,
    time_ms: l.time_ms,
    id,
    observed_ms: l.observed_time_ms,
    severity_number: l.severity_number,
    severity_text: l.severity_text,
    level: levelOf(l.severity_number, l.severity_text),
    body,
    attributes: JSON.stringify(l.attributes),
    resource: JSON.stringify(l.resource),
    trace_id: traceId,
    span_id: text(idBlob(l.span_id, 16)),
    service_name: l.service_name,
    environment: environmentOf(l.resource),
    release: serviceVersionOf(l.resource),
    source: typeof l.attributes['log.source'] === 'string' ? (l.attributes['log.source'] as string) : source,
    connector_key: connectorKey ?? '',
    scope_name: l.scope.name,
    ...searchColumns(l.attributes, l.resource, body, traceId || null),
    received_ms: receivedMs,
  };
}

/** Log records bound for ClickHouse: acknowledged once inserted (batch-buffer.ts). */
export function createChLogStore(engine: ChEngine, pacing: BufferPacing = NO_PACING) {
  const buffer = createBatchBuffer(rowArrays<ChLogRow>((rows) => engine.insert('logs', rows)), pacing);

  /** Rows already mapped (a copy from SQLite, or {@link add}). */
  function addRows(rows: ChLogRow[]): number {
    buffer.add(rows);
    return rows.length;
  }

  function add(projectId: string, logs: LogRecordOut[], source: string, receivedMs: number, connectorKey: string | null = null): number {
    const pid = Number(projectId);
    return addRows(logs.map((l) => logRow(pid, l, source, receivedMs, connectorKey, nextLogId())));
  }

  return { add, addRows, participant: buffer.participant, flush: buffer.flush };
}

export type ChLogStore = ReturnType<typeof createChLogStore>;
