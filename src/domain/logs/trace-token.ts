/**
 * The full-text token a log's trace id is indexed under (migration 037): the first 12 hex digits of
 * an OTLP trace id (48 bits: a collision among the traces of one search is negligible, and trace
 * reads also compare the stored id), not all 32 — the index holds one distinct token per trace, and
 * the shorter one costs about 20 bytes less per log record. Other ids are indexed whole. Searches
 * look for both forms (rows written before the migration have the whole id).
 *
 * Here, not in src/storage, because the query syntax (query.ts) turns a trace id typed as free text
 * into this match too.
 */
export const TRACE_TOKEN_HEX = 12;
export const traceToken = (traceId: string) => (/^[0-9a-f]{32}$/.test(traceId) ? traceId.slice(0, TRACE_TOKEN_HEX) : traceId);

/** FTS5 expression matching a trace id indexed either way (a 32-hex id, any case). */
export const traceIdFts = (traceId: string) => {
  const id = traceId.toLowerCase();
  return `("${id}" OR "${id.slice(0, TRACE_TOKEN_HEX)}")`;
};

/** Whether a word is a trace id (32 hex digits, any case). */
export const isTraceIdWord = (w: string) => /^[0-9a-f]{32}$/i.test(w);
