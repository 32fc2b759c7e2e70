import type { ErrorEventRecord, LogRecordOut, MetricPointRecord, SpanRecord } from '../domain/telemetry-types.js';

/**
 * Where telemetry rows are written. The SQLite implementation is the embedded default; a
 * ClickHouse implementation can replace it (architecture.md, "Scale-out"). Each call is one
 * transaction: when it returns, the rows are committed.
 */
export interface TelemetryWriter {
  insertSpans(projectId: string, spans: SpanRecord[], source: string, receivedMs: number): number;
  insertLogs(projectId: string, logs: LogRecordOut[], source: string, receivedMs: number, connectorKey?: string | null): number;
  insertMetricPoints(projectId: string, points: MetricPointRecord[], receivedMs: number): number;
}

export type { ErrorEventRecord };
