import type { Migration } from './index.js';

/** Lets expiry find old trace chunks by time (their primary key starts with the trace id). */
export const m029ExpiryIndexes: Migration = {
  version: 29,
  name: 'expiry index for trace chunks',
  sql: `CREATE INDEX trace_chunks_time ON trace_chunks(project_id, max_start_ms);`,
};
