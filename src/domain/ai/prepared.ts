/**
 * AI observations mapped where OTLP and Sentry spans are decoded (a decode worker,
 * src/ingest/process.ts), so the main thread only writes them (issue 13). A span's prepared
 * observation is its row exactly as `finalizeObservation` makes it without the project's privacy mode,
 * and its scores; the writer (src/storage/ai-spans.ts) takes it instead of mapping the span again when:
 *
 * - it was prepared for the same ingest route (`source`: the mapping depends on it);
 * - the project is not in privacy mode (a span that asks for privacy itself is not prepared: the
 *   writer withholds its content from the span row too, from the draft);
 * - it is handed to the writer with the very span object it was prepared from (`attachPrepared`, a
 *   weak map: a copied or rebuilt span is mapped again).
 *
 * The writer still walks to the nearest AI ancestor (that needs the whole write's spans) and sets the
 * received time of the write. Anything else maps on the main thread as before: same rows either way
 * (test/perf-equivalence/ai-prepared.test.ts).
 *
 * A row crosses the thread boundary as an array of its values in a fixed order, its flags as one
 * bit mask: a structured clone writes every key of every object, and the keys were half the bytes
 * and most of the main thread's time to receive them.
 */
import type { SpanRecord } from '../telemetry-types.js';
import { FLAG_COLUMNS, finalizeObservation, type FlagColumn, type ObservationRow, type ScoreDraft } from './observation.js';
import { observationFromSpan } from './otel-mapping.js';

/** A row as an array (`packRow`), then its scores when it has any. */
export type PackedObservation = unknown[];

/** The prepared observations of a slice's spans (`rows[i]` for `spans[i]`; null: the writer maps it). */
export interface PreparedSlice {
  source: string;
  rows: (PackedObservation | null)[];
}

function flagBits(f: Record<FlagColumn, 0 | 1>): number {
  let bits = 0;
  for (let i = 0; i < FLAG_COLUMNS.length; i++) if (f[FLAG_COLUMNS[i]!]) bits |= 1 << i;
  return bits;
}

export function packRow(r: ObservationRow): unknown[] {
  return [
    r.observation_id,
    r.parent_observation_id,
    r.trace_id,
    r.span_id,
    r.session_id,
    r.user_id,
    r.distinct_id,
    r.visitor_id,
    r.agent_id,
    r.workflow_id,
    r.step_id,
    r.observation_type,
    r.observation_name,
    r.operation,
    r.message,
    r.level,
    r.status,
    r.source,
    r.model,
    r.provider,
    r.tool_name,
    r.duration_ms,
    r.prompt_tokens,
    r.completion_tokens,
    r.total_tokens,
    r.cost_usd,
    r.cost_source,
    r.started_ms,
    r.received_ms,
    r.environment,
    r.release,
    r.input_json,
    r.output_json,
    r.tags,
    r.attributes,
    r.had_input,
    r.had_output,
    r.had_system,
    flagBits(r.flags),
  ];
}

const ROW_VALUES = 38;

export function unpackRow(a: readonly unknown[]): ObservationRow {
  const bits = a[ROW_VALUES] as number;
  return {
    observation_id: a[0] as ObservationRow['observation_id'],
    parent_observation_id: a[1] as ObservationRow['parent_observation_id'],
    trace_id: a[2] as ObservationRow['trace_id'],
    span_id: a[3] as ObservationRow['span_id'],
    session_id: a[4] as ObservationRow['session_id'],
    user_id: a[5] as ObservationRow['user_id'],
    distinct_id: a[6] as ObservationRow['distinct_id'],
    visitor_id: a[7] as ObservationRow['visitor_id'],
    agent_id: a[8] as ObservationRow['agent_id'],
    workflow_id: a[9] as ObservationRow['workflow_id'],
    step_id: a[10] as ObservationRow['step_id'],
    observation_type: a[11] as ObservationRow['observation_type'],
    observation_name: a[12] as ObservationRow['observation_name'],
    operation: a[13] as ObservationRow['operation'],
    message: a[14] as ObservationRow['message'],
    level: a[15] as ObservationRow['level'],
    status: a[16] as ObservationRow['status'],
    source: a[17] as ObservationRow['source'],
    model: a[18] as ObservationRow['model'],
    provider: a[19] as ObservationRow['provider'],
    tool_name: a[20] as ObservationRow['tool_name'],
    duration_ms: a[21] as ObservationRow['duration_ms'],
    prompt_tokens: a[22] as ObservationRow['prompt_tokens'],
    completion_tokens: a[23] as ObservationRow['completion_tokens'],
    total_tokens: a[24] as ObservationRow['total_tokens'],
    cost_usd: a[25] as ObservationRow['cost_usd'],
    cost_source: a[26] as ObservationRow['cost_source'],
    started_ms: a[27] as ObservationRow['started_ms'],
    received_ms: a[28] as ObservationRow['received_ms'],
    environment: a[29] as ObservationRow['environment'],
    release: a[30] as ObservationRow['release'],
    input_json: a[31] as ObservationRow['input_json'],
    output_json: a[32] as ObservationRow['output_json'],
    tags: a[33] as ObservationRow['tags'],
    attributes: a[34] as ObservationRow['attributes'],
    had_input: a[35] as ObservationRow['had_input'],
    had_output: a[36] as ObservationRow['had_output'],
    had_system: a[37] as ObservationRow['had_system'],
    flags: {
      f_gen: ((bits >> 0) & 1) as 0 | 1,
      f_gen_ok: ((bits >> 1) & 1) as 0 | 1,
      f_chat: ((bits >> 2) & 1) as 0 | 1,
      f_trace: ((bits >> 3) & 1) as 0 | 1,
      f_input: ((bits >> 4) & 1) as 0 | 1,
      f_system: ((bits >> 5) & 1) as 0 | 1,
      f_output: ((bits >> 6) & 1) as 0 | 1,
      f_model: ((bits >> 7) & 1) as 0 | 1,
      f_tokens: ((bits >> 8) & 1) as 0 | 1,
      f_cost: ((bits >> 9) & 1) as 0 | 1,
      f_invalid_tokens: ((bits >> 10) & 1) as 0 | 1,
      f_privacy: ((bits >> 11) & 1) as 0 | 1,
      f_content: ((bits >> 12) & 1) as 0 | 1,
      f_reasoning: ((bits >> 13) & 1) as 0 | 1,
      f_tool_payload: ((bits >> 14) & 1) as 0 | 1,
      f_error: ((bits >> 15) & 1) as 0 | 1,
    },
  };
}

/** The prepared observation of a span; null when it is not AI work or asks for privacy (the writer maps those). */
export function prepareObservation(sp: SpanRecord, source: string, receivedMs: number): PackedObservation | null {
  const m = observationFromSpan(sp, source);
  if (!m || m.draft.privacy_mode) return null;
  const packed = packRow(finalizeObservation(m.draft, { receivedMs, projectPrivacy: false }));
  if (m.scores.length) packed.push(m.scores);
  return packed;
}

const prepared = new WeakMap<SpanRecord, { source: string; packed: PackedObservation }>();

/** Hands the writer the prepared observations of these spans. */
export function attachPrepared(spans: readonly SpanRecord[], slice: PreparedSlice): void {
  const { source, rows } = slice;
  for (let i = 0; i < spans.length; i++) {
    const packed = rows[i];
    if (packed) prepared.set(spans[i]!, { source, packed });
  }
}

const NO_SCORES: ScoreDraft[] = [];

/** The prepared observation of this span object for this route, taken once (undefined: map the span). */
export function takePrepared(sp: SpanRecord, source: string): { row: ObservationRow; scores: ScoreDraft[] } | undefined {
  const p = prepared.get(sp);
  if (!p) return undefined;
  prepared.delete(sp);
  if (p.source !== source) return undefined;
  return { row: unpackRow(p.packed), scores: (p.packed[ROW_VALUES + 1] as ScoreDraft[] | undefined) ?? NO_SCORES };
}
