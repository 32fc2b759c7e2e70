import type { CaptureEvent } from '../../domain/analytics/capture.js';
import type { CaptureEventStore } from '../analytics-repo.js';
import { createBatchBuffer, NO_PACING, rowArrays, type BufferPacing } from './batch-buffer.js';
import { lit, type ChEngine } from './client.js';
import { nextLogId } from './log-store.js';
import { insertByPartition } from './monitor-results.js';

/** A capture event as its ClickHouse row (schema.ts, migration 9, table `capture_events`). */
export interface ChCaptureRow {
  project_id: number;
  ts: number;
  seq: number;
  event: string;
  distinct_id: string;
  session_id: string | null;
  pathname: string | null;
  uuid: string | null;
  properties: string;
  received_at: number;
}

/** The event → row, with the columns SQLite's insert writes (analytics-repo.ts). */
export function captureRow(projectId: number, e: CaptureEvent, receivedAt: number, seq: number): ChCaptureRow {
  return {
    project_id: projectId,
    ts: e.ts,
    seq,
    event: e.event,
    distinct_id: e.distinct_id,
    session_id: e.session_id,
    pathname: e.pathname,
    uuid: e.uuid,
    properties: JSON.stringify(e.properties),
    received_at: receivedAt,
  };
}

/**
 * Rows by day (the table's partitions, a time before 1970 in the first day's): a batch of events
 * with old client timestamps may span more days than one insert may touch.
 */
export const insertCaptureRows = (engine: ChEngine, rows: readonly ChCaptureRow[]) =>
  insertByPartition(engine, 'capture_events', rows, (r) => Math.floor(Math.max(r.ts, 0) / 86_400_000));

/**
 * Product-analytics capture events in ClickHouse (issue 20): the capture endpoint's events,
 * acknowledged once inserted (batch-buffer.ts: held per write-batch job, inserted after the SQLite
 * commit of the batch's persons, sessions and touches, before the reply), and the reads of them
 * (analytics.status's count and latest time), so every process answers from the same events.
 */
export function createChCaptureStore(engine: ChEngine, pacing: BufferPacing = NO_PACING): CaptureEventStore & { participant: ReturnType<typeof createBatchBuffer>['participant']; flush(): Promise<void> } {
  const buffer = createBatchBuffer(rowArrays<ChCaptureRow>((rows) => insertCaptureRows(engine, rows)), pacing);
  return {
    add(projectId, events, receivedAt) {
      if (events.length) buffer.add(events.map((e) => captureRow(projectId, e, receivedAt, nextLogId())));
    },
    async stats(projectId, since) {
      const [r] = await engine.query<{ events: number; n: number; last: number }>(
        `SELECT countIf(ts >= ${lit(since)}) AS events, count() AS n, max(ts) AS last FROM capture_events WHERE project_id = ${lit(projectId)}`,
      );
      // max() of no rows is 0 on ClickHouse, NULL in SQLite: the count says which.
      return { events: Number(r?.events ?? 0), last_event_at: Number(r?.n ?? 0) > 0 ? Number(r!.last) : null };
    },
    participant: buffer.participant,
    flush: buffer.flush,
  };
}

export type ChCaptureStore = ReturnType<typeof createChCaptureStore>;
