import type { Db } from './db.js';
import type { TelemetryWriter } from './telemetry-store.js';
import type { AiRepo } from './ai-repo.js';
import type { Attributes, SpanRecord } from '../domain/telemetry-types.js';
import { isContentEvent, isContentKey, observationFromSpan } from '../domain/ai/otel-mapping.js';
import { finalizeObservation, type ObservationRow, type ScoreDraft } from '../domain/ai/observation.js';

export const WITHHELD = '[withheld: privacy_mode]';

/** A copy of an AI span with its prompt/output content replaced by the marker (privacy mode). */
function withholdContent(sp: SpanRecord): SpanRecord {
  const attributes: Attributes = {};
  for (const k in sp.attributes) attributes[k] = isContentKey(k) ? WITHHELD : sp.attributes[k]!;
  const events = sp.events.map((e) => (isContentEvent(e.name) ? { ...e, attributes: { withheld: 'privacy_mode' } } : e));
  return { ...sp, attributes, events };
}

/**
 * Wraps a telemetry writer so spans that describe AI work (OpenTelemetry GenAI, OpenInference or
 * Langfuse attributes: src/domain/ai/otel-mapping.ts) also become agent observations, and
 * `gen_ai.evaluation.result` events become scores, in the same transaction as the spans.
 * In privacy mode (project setting, or `sightline.privacy_mode` on the span) the content is withheld
 * before anything is stored, in the spans table too: only a redaction marker is kept.
 * An observation's parent is its nearest AI ancestor within the batch, so an HTTP span between an
 * agent step and its generation does not break the tree.
 */
export function withAgentObservations(db: Db, ai: AiRepo, writer: TelemetryWriter): TelemetryWriter {
  const insertSpans = db.transaction((projectId: string, spans: SpanRecord[], source: string, receivedMs: number) => {
    let out = spans;
    const rows: ObservationRow[] = [];
    const scores: ScoreDraft[] = [];
    let projectPrivacy: boolean | undefined;
    let byId: Map<string, SpanRecord> | undefined;
    const aiIds = new Set<string>();
    const drafts: ReturnType<typeof observationFromSpan>[] = [];
    for (let i = 0; i < spans.length; i++) {
      const m = observationFromSpan(spans[i]!, source);
      drafts.push(m);
      if (m) aiIds.add(spans[i]!.span_id);
    }
    for (let i = 0; i < spans.length; i++) {
      const m = drafts[i];
      if (!m) continue;
      projectPrivacy ??= ai.privacyMode(projectId);
      const d = m.draft;
      if (d.parent_observation_id && !aiIds.has(d.parent_observation_id)) {
        byId ??= new Map(spans.map((s) => [s.span_id, s]));
        let p = d.parent_observation_id;
        const seen = new Set<string>();
        while (byId.has(p) && !aiIds.has(p) && !seen.has(p)) {
          seen.add(p);
          p = byId.get(p)!.parent_span_id ?? '';
        }
        d.parent_observation_id = p;
      }
      if (projectPrivacy || d.privacy_mode) {
        if (out === spans) out = spans.slice();
        out[i] = withholdContent(spans[i]!);
      }
      rows.push(finalizeObservation(d, { receivedMs, projectPrivacy }));
      scores.push(...m.scores);
    }
    const n = writer.insertSpans(projectId, out, source, receivedMs);
    if (rows.length) ai.writeObservations(projectId, rows);
    if (scores.length) ai.writeScores(projectId, scores, receivedMs);
    return n;
  });
  return {
    insertSpans: (...a) => insertSpans(...a),
    insertLogs: (...a) => writer.insertLogs(...a),
    insertMetricPoints: (...a) => writer.insertMetricPoints(...a),
  };
}
