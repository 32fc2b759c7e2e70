import type { Db } from './db.js';
import type { TelemetryWriter } from './telemetry-store.js';
import type { AiRepo } from './ai-repo.js';
import type { Attributes, SpanRecord } from '../domain/telemetry-types.js';
import { isContentEvent, isContentKey, observationFromSpan } from '../domain/ai/otel-mapping.js';
import { takePrepared } from '../domain/ai/prepared.js';
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
 * Spans decoded by the ingest workers come with their observations already mapped
 * (src/domain/ai/prepared.ts): those rows are taken as they are, unless privacy mode applies.
 */
export function withAgentObservations(db: Db, ai: Pick<AiRepo, 'privacyMode' | 'writeObservations' | 'writeScores'>, writer: TelemetryWriter): TelemetryWriter {
  const insertSpans = db.transaction((projectId: string, spans: SpanRecord[], source: string, receivedMs: number) => {
    let out = spans;
    const rows: ObservationRow[] = [];
    const scores: ScoreDraft[] = [];
    let projectPrivacy: boolean | undefined;
    let byId: Map<string, SpanRecord> | undefined;
    const aiIds = new Set<string>();
    // Per span: its observation mapped on a decode worker (src/domain/ai/prepared.ts), else mapped here.
    const ready: ReturnType<typeof takePrepared>[] = new Array(spans.length);
    const drafts: ReturnType<typeof observationFromSpan>[] = new Array(spans.length);
    for (let i = 0; i < spans.length; i++) {
      const sp = spans[i]!;
      const p = takePrepared(sp, source);
      if (p) ready[i] = p;
      else drafts[i] = observationFromSpan(sp, source);
      if (p || drafts[i]) aiIds.add(sp.span_id);
    }
    /** The nearest AI ancestor within the batch (an HTTP span between a step and its generation is skipped). */
    const nearestAi = (parent: string): string => {
      if (!parent || aiIds.has(parent)) return parent;
      byId ??= new Map(spans.map((s) => [s.span_id, s]));
      let p = parent;
      const seen = new Set<string>();
      while (byId.has(p) && !aiIds.has(p) && !seen.has(p)) {
        seen.add(p);
        p = byId.get(p)!.parent_span_id ?? '';
      }
      return p;
    };
    for (let i = 0; i < spans.length; i++) {
      const p = ready[i];
      let m = drafts[i];
      if (!p && !m) continue;
      projectPrivacy ??= ai.privacyMode(projectId);
      if (p && !projectPrivacy) {
        const row = p.row;
        row.received_ms = receivedMs;
        row.parent_observation_id = nearestAi(row.parent_observation_id);
        rows.push(row);
        for (const sc of p.scores) scores.push(sc);
        continue;
      }
      // Privacy mode: from the draft, content withheld in the span row too.
      m ??= observationFromSpan(spans[i]!, source)!;
      const d = m.draft;
      d.parent_observation_id = nearestAi(d.parent_observation_id);
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
