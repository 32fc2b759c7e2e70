import type { Migration } from './index.js';

/**
 * Storage per record (issue 22, item 6; figures in bench/retention-bytes.ts), second step after
 * migration 037. No table changes: new rows store less, rows already stored keep their form and
 * read as before, so a large database upgrades instantly (old rows keep their size until expiry).
 *
 * - `spans.trace_id` and `trace_chunks.trace_id` of new rows are the id's 16 bytes when it is
 *   lowercase hex of the OTLP length (src/storage/compact-ids.ts idBlob), as log ids since 037.
 *   A trace's chunks and spans are written together, so a chunk and the spans of its rowid range
 *   always hold the same form; lookups by trace id ask for both forms (`trace_id IN (text, bytes)`).
 * - Values derivable from the row are not repeated: the columns then hold an empty blob
 *   (compact-ids.ts DERIVED, 0 bytes; no such column held a blob before). `spans.name` when equal
 *   to `operation`; `spans.end_ms` when equal to `start_ms + duration_ms` (exact in floating point,
 *   checked at write); `spans.service_version` always (it is the resource's `service.version`);
 *   `logs.severity_text` when it is the usual text of the severity number (INFO for 9, …);
 *   `logs.observed_ms` when equal to `time_ms` (a record sent without its own time).
 *   Readers derive them (traces-read-repo.ts SPAN_*_SQL, compact-ids.ts severityTextSql, logs-read-repo.ts).
 *
 * The version is recorded so that an older Sightline, which would read those blobs as values,
 * refuses the database instead (LATEST_SCHEMA_VERSION).
 */
export const m044CompactSpanRows: Migration = {
  version: 44,
  name: 'span trace ids as bytes; derivable span and log values not repeated',
  sql: `-- new rows only: see the comment of src/storage/migrations/044-compact-span-rows.ts`,
};
