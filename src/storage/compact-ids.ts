/**
 * Trace and span ids stored as blobs (migration 037): a lowercase-hex OTLP id of the expected
 * length is stored as its bytes (16 bytes for a trace id instead of 32 characters, 8 for a span id
 * instead of 16); any other value (rows from before the migration, ids of other formats) stays text.
 * Reads turn blobs back into the same lowercase hex ({@link idTextSql}); conditions match both
 * forms ({@link idEqSql}).
 */
export function idBlob(id: string | null, hexChars: 16 | 32): Buffer | string | null {
  if (id === null || id.length !== hexChars || !/^[0-9a-f]+$/.test(id)) return id;
  return Buffer.from(id, 'hex');
}

/** SQL of a stored id column as text (lowercase hex for blobs). */
export const idTextSql = (col: string) => `CASE WHEN typeof(${col}) = 'blob' THEN lower(hex(${col})) ELSE ${col} END`;

/** SQL condition: the stored id equals the text of the one `?` parameter, given twice in the arguments. */
export const idEqSql = (col: string) => `${col} IN (?, unhex(?))`;

/** The trace id's full-text token and match (migration 037): defined with the query syntax that also uses them. */
export { TRACE_TOKEN_HEX, traceToken, traceIdFts } from '../domain/logs/trace-token.js';

/**
 * Marker of a value not repeated on its row (migration 044): an empty blob, 0 bytes of payload.
 * No text or number column of a telemetry row holds a blob otherwise, so readers tell it apart
 * with `typeof(col) = 'blob'` and derive the value (see the `*Sql` helpers of the reading module).
 */
export const DERIVED = Buffer.alloc(0);

/** SQL of a column that may hold {@link DERIVED}: `derived` when it does, else the column. */
export const derivedSql = (col: string, derived: string) => `CASE WHEN typeof(${col}) = 'blob' THEN ${derived} ELSE ${col} END`;

/**
 * The usual severity text of an OTLP severity number (the data model's short names of the first
 * number of each range). A log row whose text is exactly this stores {@link DERIVED} (migration 044).
 */
export const SEVERITY_TEXTS: Record<number, string> = { 1: 'TRACE', 5: 'DEBUG', 9: 'INFO', 13: 'WARN', 17: 'ERROR', 21: 'FATAL' };

/** SQL of the severity text of log rows `t`, either form. */
export const severityTextSql = (t: string) =>
  derivedSql(`${t}.severity_text`, `CASE ${t}.severity_number ${Object.entries(SEVERITY_TEXTS).map(([n, x]) => `WHEN ${n} THEN '${x}'`).join(' ')} END`);
