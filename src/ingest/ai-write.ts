import type { Services } from '../core/services.js';
import { finalizeObservation, PRIVACY_MARKER, type Content, type ObservationDraft, type ScoreDraft } from '../domain/ai/observation.js';
import type { StoredObservation } from '../storage/ai-repo.js';

/** Store drafts as observations (project privacy applied). Call inside services.writeBatch. */
export function writeDrafts(services: Services, projectId: string, drafts: ObservationDraft[], scores: ScoreDraft[], receivedMs: number): void {
  if (drafts.length) {
    const projectPrivacy = services.ai.privacyMode(projectId);
    services.ai.writeObservations(projectId, drafts.map((d) => finalizeObservation(d, { receivedMs, projectPrivacy })));
  }
  if (scores.length) services.ai.writeScores(projectId, scores, receivedMs);
}

const parse = (s: string): unknown => {
  try {
    return JSON.parse(s);
  } catch {
    return {};
  }
};

/** A stored row back into a draft, for updates (Langfuse `*-update`, trace identifiers arriving later). */
export function draftFromStored(r: StoredObservation): ObservationDraft {
  const content = (json: string, had: number): Content | null => {
    const v = parse(json) as Content & { redacted?: boolean };
    // Withheld content stays withheld: a placeholder keeps "it was captured" and privacy withholds it again.
    if (v && (v as { redacted?: unknown }).redacted === PRIVACY_MARKER.redacted) return had ? { value: '[withheld]' } : null;
    return v && Object.keys(v).length ? v : null;
  };
  const input = content(r.input_json, r.had_input || r.had_system);
  return {
    observation_id: r.observation_id,
    parent_observation_id: r.parent_observation_id,
    trace_id: r.trace_id,
    span_id: r.span_id,
    session_id: r.session_id,
    user_id: r.user_id,
    distinct_id: r.distinct_id,
    visitor_id: r.visitor_id,
    agent_id: r.agent_id,
    workflow_id: r.workflow_id,
    step_id: r.step_id,
    observation_type: r.observation_type,
    observation_name: r.observation_name,
    operation: r.operation,
    status_message: r.status === 'error' ? r.message : '',
    level: r.level,
    status: r.status === 'error' ? 'error' : 'ok',
    source: r.source,
    model: r.model,
    provider: r.provider,
    tool_name: r.tool_name,
    started_ms: r.started_ms,
    ended_ms: r.started_ms + r.duration_ms,
    prompt_tokens: r.prompt_tokens,
    completion_tokens: r.completion_tokens,
    total_tokens: r.total_tokens,
    cost_usd: r.cost_source === 'sent' ? r.cost_usd : null,
    environment: r.environment,
    release: r.release,
    input,
    output: content(r.output_json, r.had_output),
    tags: (() => {
      const t = parse(r.tags);
      return Array.isArray(t) ? t.map(String) : [];
    })(),
    attributes: parse(r.attributes) as Record<string, unknown>,
    privacy_mode: r.f_privacy === 1,
  };
}
