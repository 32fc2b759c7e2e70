import type { Db } from './db.js';
import type { TelemetryWriter } from './telemetry-store.js';
import { LOG_COUNT_TABLES } from './migrations/004-log-counts.js';
import { rollupInsertDims } from './log-dims.js';

/**
 * Wraps a telemetry writer so every log batch also updates the log count rollups (migration 004) in
 * the same transaction (better-sqlite3 nests the writer's own transaction as a savepoint). Counts
 * are aggregated from the rows just written (ids above the previous maximum), so they use exactly
 * the columns the writer stored.
 */
export function withLogRollups(db: Db, writer: TelemetryWriter): TelemetryWriter {
  const maxId = db.prepare('SELECT max(id) FROM logs').pluck();
  const upserts = LOG_COUNT_TABLES.map((t) => db.prepare(`${rollupInsertDims(t, 'l.id > ?')} ON CONFLICT DO UPDATE SET n = n + excluded.n`));
  const insertLogs = db.transaction((...args: Parameters<TelemetryWriter['insertLogs']>) => {
    const before = (maxId.get() as number | null) ?? 0;
    const n = writer.insertLogs(...args);
    if (n > 0) for (const u of upserts) u.run(before);
    return n;
  });
  return {
    insertSpans: (...a) => writer.insertSpans(...a),
    insertMetricPoints: (...a) => writer.insertMetricPoints(...a),
    // IMMEDIATE: the write lock is taken before max(id) is read, so no other connection can add rows in between.
    insertLogs: (...a) => insertLogs.immediate(...a),
  };
}
