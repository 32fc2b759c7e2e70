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
