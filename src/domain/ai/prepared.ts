/**
 * AI observations mapped where OTLP spans are decoded (a decode worker, src/ingest/process.ts), so the
 * main thread only writes them (issue 13). A span's prepared observation is its row exactly as
 * `finalizeObservation` makes it without the project's privacy mode, and its scores; the writer
 * (src/storage/ai-spans.ts) takes it instead of mapping the span again when:
 *
 * - it was prepared for the same ingest route (`source`: the mapping depends on it);
 * - the project is not in privacy mode and the span does not ask for privacy (a span asking for it is
 *   not prepared: the writer withholds its content from the span row too, from the draft);
 * - it is handed to the writer with the very span object it was prepared from (`attachPrepared`, a
 *   weak map: a copied or rebuilt span is mapped again).
 *
 * The writer still walks to the nearest AI ancestor (that needs the whole write's spans) and sets the
 * received time of the write. Anything else maps on the main thread as before: same rows either way.
 */
import type { SpanRecord } from '../telemetry-types.js';
import { finalizeObservation, type ObservationRow, type ScoreDraft } from './observation.js';
import { observationFromSpan } from './otel-mapping.js';

export interface PreparedObservation {
  source: string;
  row: ObservationRow;
  scores: ScoreDraft[];
}

/** The prepared observation of a span; null when it is not AI work or asks for privacy (the writer maps those). */
export function prepareObservation(sp: SpanRecord, source: string, receivedMs: number): PreparedObservation | null {
  const m = observationFromSpan(sp, source);
  if (!m || m.draft.privacy_mode) return null;
  return { source, row: finalizeObservation(m.draft, { receivedMs, projectPrivacy: false }), scores: m.scores };
}

const prepared = new WeakMap<SpanRecord, PreparedObservation>();

/** Hands the writer the prepared observations of these spans (`list[i]` for `spans[i]`; undefined: none). */
export function attachPrepared(spans: readonly SpanRecord[], list: readonly (PreparedObservation | undefined | null)[]): void {
  for (let i = 0; i < spans.length; i++) {
    const p = list[i];
    if (p) prepared.set(spans[i]!, p);
  }
}

/** The prepared observation of this span object for this route, taken once (undefined: map it). */
export function takePrepared(sp: SpanRecord, source: string): PreparedObservation | undefined {
  const p = prepared.get(sp);
  if (!p) return undefined;
  prepared.delete(sp);
  return p.source === source ? p : undefined;
}
