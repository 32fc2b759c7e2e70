import { finalizeObservation, type ObservationDraft, type ScoreDraft } from '../../src/domain/ai/observation.js';

/** A generation draft in trace `tr-1`, session `sess-1`, user `user-1` (10 + 5 tokens, $0.50), as the ClickHouse AI store tests write them. */
export const draft = (id: string, startedMs: number, extra: Partial<ObservationDraft> = {}): ObservationDraft => ({
  observation_id: id, parent_observation_id: '', trace_id: 'tr-1', span_id: '', session_id: 'sess-1', user_id: 'user-1', distinct_id: '', visitor_id: '',
  agent_id: '', workflow_id: '', step_id: '', observation_type: 'generation', observation_name: id, operation: 'chat', status_message: '', level: 'info',
  status: 'ok', source: 'sightline', model: 'm', provider: 'p', tool_name: '', started_ms: startedMs, ended_ms: startedMs + 100, prompt_tokens: 10,
  completion_tokens: 5, total_tokens: 15, cost_usd: 0.5, environment: '', release: '', input: null, output: { value: 'out' }, tags: [], attributes: {},
  privacy_mode: false, ...extra,
});

/** {@link draft} as the row the store writes (received at its start, no privacy mode). */
export const row = (id: string, startedMs: number, extra: Partial<ObservationDraft> = {}) => finalizeObservation(draft(id, startedMs, extra), { receivedMs: startedMs, projectPrivacy: false });

/** A numeric score `q` in trace `tr-1` on observation `obs`. */
export const score = (id: string, obs: string, startedMs: number, value = 1, deleted = false): ScoreDraft => ({
  score_id: id, trace_id: 'tr-1', observation_id: obs, span_id: '', session_id: '', user_id: '', name: 'q', value, string_value: '', data_type: 'numeric',
  source: 'api', comment: '', author: '', model: '', environment: '', release: '', started_ms: startedMs, deleted, metadata: {},
});
