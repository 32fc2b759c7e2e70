import { z } from 'zod';
import { defineOperation } from './define.js';
import { isoDateTime, offsetPagination, parseIso, projectId, toIso } from './shared.js';
import { ValidationError } from '../src/core/errors.js';
import { EventQueryError, parseEventQuery } from '../src/domain/errors/event-query.js';
import { userField } from '../src/domain/errors/users.js';

/** The stored fields of an error event that every event row shows (events.search rows, errors.get's latest event). */
export interface EventSummaryFields {
  event_id: string;
  timestamp_ms: number;
  received_ms: number;
  source: string;
  level: string;
  type: string;
  title: string;
  message: string;
  service_name: string;
  environment: string;
  release: string;
  trace_id: string | null;
}

export function eventSummaryOut(e: EventSummaryFields) {
  return {
    event_id: e.event_id,
    timestamp: toIso(e.timestamp_ms)!,
    received_at: toIso(e.received_ms)!,
    source: e.source,
    level: e.level,
    type: e.type,
    title: e.title,
    message: e.message,
    service_name: e.service_name,
    environment: e.environment,
    release: e.release,
    trace_id: e.trace_id,
  };
}

/** The identity fields of an event's user (Sentry `user`, or OTel `enduser.id` / `user.id`), as sent. */
export const eventUserSchema = z.object({
  id: z.string().nullable(),
  email: z.string().nullable(),
  username: z.string().nullable(),
  ip_address: z.string().nullable(),
});

export function eventUserOut(user: unknown): z.input<typeof eventUserSchema> | null {
  const f = (k: 'id' | 'email' | 'username' | 'ip_address') => userField(user, k) || null;
  const out = { id: f('id'), email: f('email'), username: f('username'), ip_address: f('ip_address') };
  return out.id || out.email || out.username || out.ip_address ? out : null;
}

const DAY = 86_400_000;
/** Without `from` and without a timestamp term, events.search looks back this far from `to` (or now). */
const SEARCH_DEFAULT_WINDOW = 30 * DAY;
const LATENCY_DEFAULT_WINDOW = DAY;
const LATENCY_MAX_WINDOW = 31 * DAY;
/** Sources always reported by events.latency, with zero counts when idle. */
const SOURCES = ['sentry', 'otlp'] as const;

const eventRowSchema = z.object({
  event_id: z.string(),
  group_id: z.string().describe('The error group the event counted on.'),
  timestamp: z.string(),
  received_at: z.string(),
  level: z.string(),
  type: z.string(),
  title: z.string(),
  message: z.string(),
  service_name: z.string(),
  environment: z.string(),
  release: z.string(),
  trace_id: z.string().nullable(),
  source: z.string().describe('sentry or otlp'),
  user: eventUserSchema.nullable().describe('Who the event happened to, as the SDK sent it; null when it named nobody.'),
});

export const search = defineOperation({
  operationId: 'events.search',
  tag: 'events',
  summary: 'Search error events with a field-query syntax',
  description: [
    'Error events of the project, newest first, matching every term of `query` (or its alias `q`). Syntax:',
    '`word` and `"quoted phrase"`: case-insensitive substring of message, title or type;',
    '`key:value` and `key:"quoted value"`: field equals value (case-insensitive; `*` is a wildcard; `key:[a,b]` for any of several);',
    '`-term`: negation;',
    '`timestamp:>2026-01-01T00:00:00Z` with `>`, `<`, `>=`, `<=` on times (ISO 8601, a date for a whole UTC day, epoch ms, or `-24h` for the last 24 hours) and on numeric tags.',
    'Keys: level, type, service, environment, release, transaction, server, trace, group, source (sentry, otlp), platform, message and title (substring), event_id, timestamp, received_at, tags.<key>,',
    'user.id, user.email, user.username (the user the SDK sent with the event: Sentry `user`, or the OTel `enduser.id`/`user.id` attribute).',
    'Example: `level:error service:checkout -environment:staging "connection reset" tags.http.status_code:>=500`; the events of one customer: `user.email:ana@example.com`.',
    '`from`/`to` bound event time; without `from` and without a timestamp term the search covers the 30 days before `to` (or now); with them, no window limit (pages bound the work). Offset pagination.',
    '`total` counts matches up to 1,000 (or to the end of the requested page): `total_capped` true means more match.',
  ].join(' '),
  method: 'GET',
  path: '/v1/projects/{project_id}/events/search',
  scopes: ['errors:read'],
  risk: 'read',
  sensitive: false,
  display: { columns: ['timestamp', 'level', 'service_name', 'title', 'environment', 'group_id'] },
  projectScoped: true,
  input: z.strictObject({
    project_id: projectId,
    query: z.string().max(2048).optional().describe('Field query, e.g. `level:error -environment:staging "connection reset"`.'),
    q: z.string().max(2048).optional().describe('Alias of query.'),
    from: isoDateTime.optional().describe('Events at or after this time.'),
    to: isoDateTime.optional().describe('Events at or before this time.'),
    ...offsetPagination(50, 100),
  }),
  output: z.object({
    data: z.array(eventRowSchema),
    total: z.number().int().describe('Matching events, counted up to 1,000 (or to the end of the requested page, when further); see `total_capped`.'),
    total_capped: z.boolean().describe('True when more events match than `total`: counting stopped there (a next page exists).'),
    limit: z.number().int(),
    offset: z.number().int(),
  }),
  errors: [
    { status: 400, code: 'invalid_query', when: 'the query does not parse: unterminated quote, unknown field, comparison on a text field, bad time' },
    { status: 400, code: 'invalid_parameter', when: 'bad or reversed window; limit out of 1–100' },
  ],
  example: { query: 'level:error -environment:staging "connection reset"', limit: 20 },
  async handler(input, ctx) {
    const now = ctx.now();
    const param = input.query !== undefined ? 'query' : 'q';
    const text = input.query ?? input.q ?? '';
    let parsed;
    try {
      parsed = parseEventQuery(text, now);
    } catch (err) {
      if (err instanceof EventQueryError) throw new ValidationError(`Invalid \`${param}\`: ${err.message}`, param, 'invalid_query');
      throw err;
    }
    const toMs = parseIso(input.to);
    let fromMs = parseIso(input.from);
    if (fromMs !== undefined && toMs !== undefined && fromMs > toMs) throw new ValidationError('`from` is after `to`: send a window that starts before it ends.', 'from');
    if (fromMs === undefined && !parsed.hasTimestamp) fromMs = (toMs ?? now) - SEARCH_DEFAULT_WINDOW;
    const r = await ctx.services.errorGroups.searchEvents(ctx.project!.id, { terms: parsed.terms, fromMs, toMs, limit: input.limit, offset: input.offset });
    return {
      data: r.rows.map((e) => ({ ...eventSummaryOut(e), group_id: e.group_id, user: eventUserOut(e.user) })),
      total: r.total,
      total_capped: r.capped,
      limit: input.limit,
      offset: input.offset,
    };
  },
});

const latencyRowSchema = z.object({
  source: z.string(),
  count: z.number().int(),
  p50_ms: z.number().nullable(),
  p95_ms: z.number().nullable(),
  p99_ms: z.number().nullable(),
  max_ms: z.number().nullable(),
  avg_ms: z.number().nullable(),
});

export const latency = defineOperation({
  operationId: 'events.latency',
  tag: 'events',
  summary: 'Ingestion latency of error events, by source',
  description:
    'How long error events took to arrive: received time minus event time (clock skew that puts an event in the future counts as 0), for events received in `from`/`to` (default the last 24 hours; at most 31 days), grouped by source (`sentry`, `otlp`; both always listed). Per source: count, p50, p95, p99 (nearest rank), max and average, in milliseconds; null when there were no events. Optional exact `service` and `environment` filters. Events received more than an hour after they happened (an offline cache flushed late, an imported backlog) are left out: they measure the sender, not the pipeline.',
  method: 'GET',
  path: '/v1/projects/{project_id}/events/latency',
  scopes: ['errors:read'],
  risk: 'read',
  sensitive: false,
  display: { chart: { kind: 'bar', rows: 'data', label: 'source', values: ['p50_ms', 'p95_ms', 'p99_ms'], unit: 'ms' } },
  projectScoped: true,
  input: z.strictObject({
    project_id: projectId,
    from: isoDateTime.optional().describe('Received at or after (default: 24 hours before `to`).'),
    to: isoDateTime.optional().describe('Received at or before (default now).'),
    service: z.string().max(256).optional(),
    environment: z.string().max(128).optional(),
  }),
  output: z.object({ from: z.string(), to: z.string(), data: z.array(latencyRowSchema) }),
  errors: [{ status: 400, code: 'invalid_parameter', when: 'bad or reversed window, or longer than 31 days' }],
  example: { service: 'checkout' },
  async handler(input, ctx) {
    const toMs = parseIso(input.to) ?? ctx.now();
    const fromMs = parseIso(input.from) ?? toMs - LATENCY_DEFAULT_WINDOW;
    if (fromMs > toMs) throw new ValidationError('`from` is after `to`: send a window that starts before it ends.', 'from');
    if (toMs - fromMs > LATENCY_MAX_WINDOW) throw new ValidationError('The window may span at most 31 days: narrow `from`/`to`.', 'from');
    const rows = await ctx.services.errorGroups.latency(ctx.project!.id, { fromMs, toMs, service: input.service, environment: input.environment });
    const bySource = new Map(rows.map((r) => [r.source, r]));
    const data = [
      ...SOURCES.map((source) => bySource.get(source) ?? { source, count: 0, p50_ms: null, p95_ms: null, p99_ms: null, max_ms: null, avg_ms: null }),
      ...rows.filter((r) => !(SOURCES as readonly string[]).includes(r.source)),
    ];
    return { from: toIso(fromMs)!, to: toIso(toMs)!, data };
  },
});
