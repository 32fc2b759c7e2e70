/**
 * The legacy Langfuse batch (`POST /api/public/ingestion`, what the `langfuse` v2/v3 SDKs send):
 * `trace-create`, `span-create`/`-update`, `generation-create`/`-update`, `event-create`,
 * `observation-create`/`-update`, `score-create`, `sdk-log`. Pure mapping; the ingest route
 * applies it item by item and answers 207 with one status per item.
 */
import { normalizeContent } from './content.js';
import { emptyDraft, type ObservationDraft, type ScoreDraft } from './observation.js';

type Body = Record<string, unknown>;
const s = (v: unknown): string => (typeof v === 'string' ? v : typeof v === 'number' ? String(v) : '');
const num = (v: unknown): number | null => (typeof v === 'number' && Number.isFinite(v) ? v : typeof v === 'string' && v.trim() !== '' && Number.isFinite(Number(v)) ? Number(v) : null);
const time = (v: unknown): number | null => {
  if (typeof v !== 'string' && typeof v !== 'number') return null;
  const t = typeof v === 'number' ? v : Date.parse(v);
  return Number.isFinite(t) ? t : null;
};

export class LangfuseItemError extends Error {
  constructor(
    readonly status: number,
    message: string,
  ) {
    super(message);
  }
}

export interface TraceInfo {
  trace_id: string;
  name: string;
  session_id: string;
  user_id: string;
  tags: string[];
  release: string;
  environment: string;
  metadata: Record<string, unknown>;
}

export type LangfuseItem =
  | { kind: 'trace'; trace: TraceInfo }
  | { kind: 'observation'; id: string; update: boolean; obsType: string; body: Body }
  | { kind: 'score'; score: ScoreDraft }
  | { kind: 'ignored' };

const OBS_EVENTS: Record<string, [string, boolean]> = {
  'span-create': ['SPAN', false],
  'span-update': ['SPAN', true],
  'generation-create': ['GENERATION', false],
  'generation-update': ['GENERATION', true],
  'event-create': ['EVENT', false],
  'observation-create': ['', false],
  'observation-update': ['', true],
};

/** One batch item → what it means; throws LangfuseItemError (400) for an item that cannot be used. */
export function parseLangfuseItem(item: unknown, receivedMs: number): LangfuseItem {
  if (!item || typeof item !== 'object') throw new LangfuseItemError(400, 'A batch item must be an object with id, type, timestamp and body.');
  const it = item as Body;
  const type = s(it.type);
  const body = (it.body && typeof it.body === 'object' ? it.body : null) as Body | null;
  if (!body) throw new LangfuseItemError(400, `Item ${s(it.id)}: body is missing.`);
  const at = time(it.timestamp) ?? receivedMs;
  if (type === 'trace-create') {
    const id = s(body.id);
    if (!id) throw new LangfuseItemError(400, 'trace-create needs body.id.');
    return {
      kind: 'trace',
      trace: {
        trace_id: id,
        name: s(body.name),
        session_id: s(body.sessionId),
        user_id: s(body.userId),
        tags: Array.isArray(body.tags) ? body.tags.map(String) : [],
        release: s(body.release),
        environment: s(body.environment),
        metadata: body.metadata && typeof body.metadata === 'object' ? (body.metadata as Record<string, unknown>) : {},
      },
    };
  }
  if (type in OBS_EVENTS) {
    const [t, update] = OBS_EVENTS[type]!;
    const id = s(body.id);
    if (!id) throw new LangfuseItemError(400, `${type} needs body.id.`);
    if (!update && !s(body.traceId)) throw new LangfuseItemError(400, `${type} needs body.traceId.`);
    return { kind: 'observation', id, update, obsType: t || s(body.type).toUpperCase() || 'SPAN', body: { ...body, __at: at } };
  }
  if (type === 'score-create') {
    const name = s(body.name);
    if (!name) throw new LangfuseItemError(400, 'score-create needs body.name.');
    const dt = s(body.dataType).toUpperCase();
    const isText = typeof body.value === 'string';
    const dataType = dt === 'CATEGORICAL' || (isText && !dt) ? 'categorical' : dt === 'BOOLEAN' ? 'boolean' : 'numeric';
    let value = num(body.value);
    if (dataType === 'boolean' && value === null) value = body.value === true || body.value === 'true' || body.value === 'True' ? 1 : 0;
    if (dataType === 'numeric' && value === null) throw new LangfuseItemError(400, 'A numeric score needs a number value.');
    const src = s(body.source).toLowerCase();
    const meta = body.metadata && typeof body.metadata === 'object' ? (body.metadata as Record<string, unknown>) : {};
    return {
      kind: 'score',
      score: {
        score_id: s(body.id) || s(it.id),
        trace_id: s(body.traceId),
        observation_id: s(body.observationId),
        span_id: s(body.observationId),
        session_id: s(body.sessionId),
        user_id: '',
        name,
        value: dataType === 'categorical' ? 0 : (value ?? 0),
        string_value: dataType === 'categorical' ? s(body.value) || s(body.stringValue) : '',
        data_type: dataType,
        source: src === 'eval' || src === 'annotation' ? src : 'api',
        comment: s(body.comment),
        author: s(body.authorUserId),
        model: '',
        environment: s(body.environment),
        release: '',
        started_ms: time(body.timestamp) ?? at,
        deleted: false,
        metadata: meta,
      },
    };
  }
  if (type === 'sdk-log') return { kind: 'ignored' };
  throw new LangfuseItemError(400, `Unknown item type ${JSON.stringify(type)}.`);
}

const LEVELS: Record<string, string> = { DEBUG: 'debug', DEFAULT: 'info', WARNING: 'warning', ERROR: 'error' };

/** Apply a span/generation/event body (create, or update over `base`) to a draft. */
export function applyLangfuseObservation(base: ObservationDraft | null, obsType: string, body: Body, trace: TraceInfo | null): ObservationDraft {
  const at = num(body.__at) ?? Date.now();
  const start = time(body.startTime);
  const d: ObservationDraft = base ? { ...base } : emptyDraft({ observation_id: s(body.id), started_ms: start ?? at, source: 'langfuse' });
  if (start !== null) d.started_ms = start;
  const end = time(body.endTime);
  if (end !== null) d.ended_ms = end;
  else if (!base) d.ended_ms = d.started_ms;
  if (!base) d.observation_type = obsType === 'GENERATION' ? 'generation' : obsType === 'EVENT' ? 'agent_step' : obsType === 'TOOL' ? 'tool_call' : obsType === 'RETRIEVER' ? 'retrieval' : obsType === 'AGENT' ? 'agent_step' : 'agent_step';
  if (s(body.traceId)) d.trace_id = s(body.traceId);
  if (s(body.parentObservationId)) d.parent_observation_id = s(body.parentObservationId);
  if (s(body.name)) d.observation_name = s(body.name);
  if (s(body.model)) d.model = s(body.model);
  if (body.input !== undefined) d.input = normalizeContent(body.input);
  if (body.output !== undefined) d.output = normalizeContent(body.output);
  if (s(body.level)) d.level = LEVELS[s(body.level).toUpperCase()] ?? 'info';
  if (d.level === 'error') d.status = 'error';
  if (s(body.statusMessage)) d.status_message = s(body.statusMessage);
  if (s(body.version)) d.release = s(body.version);
  if (s(body.environment)) d.environment = s(body.environment);
  const usage = (body.usageDetails ?? body.usage) as Body | undefined;
  if (usage && typeof usage === 'object') {
    const i = num(usage.input ?? usage.promptTokens ?? usage.input_tokens);
    const o = num(usage.output ?? usage.completionTokens ?? usage.output_tokens);
    const t = num(usage.total ?? usage.totalTokens ?? usage.total_tokens);
    if (i !== null) d.prompt_tokens = i;
    if (o !== null) d.completion_tokens = o;
    if (t !== null) d.total_tokens = t;
    const c = num(usage.totalCost);
    if (c !== null) d.cost_usd = c;
  }
  const cost = body.costDetails as Body | undefined;
  if (cost && typeof cost === 'object' && num(cost.total) !== null) d.cost_usd = num(cost.total);
  const meta = body.metadata && typeof body.metadata === 'object' ? (body.metadata as Record<string, unknown>) : null;
  if (meta) {
    d.attributes = { ...d.attributes, ...Object.fromEntries(Object.entries(meta).map(([k, v]) => [`metadata.${k}`, v])) };
    if (meta.privacy_mode === true) d.privacy_mode = true;
    if (typeof meta.provider === 'string' && !d.provider) d.provider = meta.provider;
    if (typeof meta.agent_id === 'string') d.agent_id = meta.agent_id;
    if (typeof meta.workflow_id === 'string') d.workflow_id = meta.workflow_id;
  }
  const params = body.modelParameters as Body | undefined;
  if (params && typeof params === 'object') d.attributes = { ...d.attributes, model_parameters: params };
  if (trace) applyTrace(d, trace);
  return d;
}

/** Trace-level identifiers (session, user, tags, release, environment) flow down to its observations. */
export function applyTrace(d: ObservationDraft, t: TraceInfo): void {
  if (!d.session_id) d.session_id = t.session_id;
  if (!d.user_id) d.user_id = t.user_id;
  if (!d.workflow_id && t.name) d.workflow_id = t.name;
  if (!d.release) d.release = t.release;
  if (!d.environment) d.environment = t.environment;
  if (t.tags.length) d.tags = [...new Set([...d.tags, ...t.tags])];
}
