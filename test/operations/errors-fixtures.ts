/**
 * Hand-built Sentry events and OTLP spans for the error-group tests, sent through the real ingest
 * HTTP path (`/ingest/api/<pid>/store/?sentry_key=…`, `/ingest/v1/traces`).
 *
 * Grouping (src/domain/grouping/fingerprint.ts): an exception with in-app frames groups by its type
 * plus its frames' `function (file)`, so events that differ only in message, line or time share a
 * group; a new type or function makes a new group.
 */
import { expect } from 'vitest';
import { api, type TestServer } from '../helpers/server.js';

let seq = 0;
/** A fresh 32-hex event id. */
export const eventId = () => (0x10000 + ++seq).toString(16).padStart(32, 'e');
export const hex = (n: number, len = 32) => n.toString(16).padStart(len, '0');

export interface EventSpec {
  /** Exception type; leave out with `message` for a message event. */
  type?: string;
  value?: string;
  /** Function of the raising in-app frame (part of the grouping). */
  fn?: string;
  file?: string;
  line?: number;
  message?: string;
  level?: string;
  /** Event time (ms). */
  at: number;
  service?: string;
  environment?: string;
  release?: string;
  transaction?: string;
  server?: string;
  trace_id?: string;
  tags?: Record<string, string>;
  fingerprint?: string[];
  event_id?: string;
  platform?: string;
}

export function sentryEvent(e: EventSpec): Record<string, unknown> {
  const body: Record<string, unknown> = {
    event_id: e.event_id ?? eventId(),
    timestamp: e.at / 1000,
    level: e.level ?? 'error',
    platform: e.platform ?? 'node',
    environment: e.environment ?? 'production',
    release: e.release ?? '',
    transaction: e.transaction ?? '',
    server_name: e.server ?? '',
    tags: { ...(e.service ? { 'service.name': e.service } : {}), ...e.tags },
  };
  if (e.type) {
    body.exception = {
      values: [
        {
          type: e.type,
          value: e.value ?? `${e.type} happened`,
          stacktrace: {
            frames: [
              { filename: 'node:internal/process/task_queues', function: 'processTicksAndRejections', lineno: 95, in_app: false },
              { filename: 'src/server.ts', abs_path: '/app/src/server.ts', function: 'route', lineno: 10, in_app: true },
              { filename: e.file ?? 'src/handlers.ts', abs_path: `/app/${e.file ?? 'src/handlers.ts'}`, function: e.fn ?? 'handle', lineno: e.line ?? 42, colno: 7, in_app: true },
            ],
          },
        },
      ],
    };
  }
  if (e.message) body.message = e.message;
  if (e.trace_id) body.contexts = { trace: { trace_id: e.trace_id, span_id: e.trace_id.slice(0, 16) } };
  if (e.fingerprint) body.fingerprint = e.fingerprint;
  return body;
}

/** POST one event to the Sentry store endpoint with the project's ingest key; returns its event id. */
export async function sendEvent(t: TestServer, e: EventSpec, projectId = t.projectId, ingestKey = t.keys.ingest): Promise<string> {
  const body = sentryEvent(e);
  const r = await fetch(`${t.url}/ingest/api/${projectId}/store/?sentry_key=${ingestKey}`, { method: 'POST', body: JSON.stringify(body) });
  expect(r.status, await r.clone().text()).toBe(200);
  return body.event_id as string;
}

export interface SpanSpec {
  trace_id: string;
  span_id: string;
  parent_span_id?: string;
  name: string;
  service: string;
  start: number;
  end: number;
  error?: boolean;
}

/** POST spans as OTLP/JSON to /ingest/v1/traces (one resource per service). */
export async function sendSpans(t: TestServer, spans: SpanSpec[]): Promise<void> {
  const byService = new Map<string, SpanSpec[]>();
  for (const s of spans) byService.set(s.service, [...(byService.get(s.service) ?? []), s]);
  const body = {
    resourceSpans: [...byService].map(([service, list]) => ({
      resource: { attributes: [{ key: 'service.name', value: { stringValue: service } }] },
      scopeSpans: [
        {
          scope: { name: 'test' },
          spans: list.map((s) => ({
            traceId: s.trace_id,
            spanId: s.span_id,
            ...(s.parent_span_id ? { parentSpanId: s.parent_span_id } : {}),
            name: s.name,
            kind: 2,
            startTimeUnixNano: String(BigInt(s.start) * 1_000_000n),
            endTimeUnixNano: String(BigInt(s.end) * 1_000_000n),
            status: { code: s.error ? 2 : 1 },
          })),
        },
      ],
    })),
  };
  const r = await fetch(`${t.url}/ingest/v1/traces`, {
    method: 'POST',
    body: JSON.stringify(body),
    headers: { 'x-service-key': t.keys.ingest, 'content-type': 'application/json' },
  });
  expect(r.status, await r.clone().text()).toBe(200);
}

/** REST call with the admin key (or `key`). */
export const rest = (t: TestServer, method: string, path: string, opts: { key?: string; body?: unknown } = {}) =>
  api(t, method, `/v1/projects/${t.projectId}${path}`, { key: opts.key ?? t.keys.admin, body: opts.body });

/** The group (REST detail) an event counted on, by its event id. */
export function groupOfEvent(t: TestServer, eventIdValue: string): string {
  const g = t.s.services.errorsIngest.groupOfEvent(t.projectId, eventIdValue);
  expect(g, `event ${eventIdValue} was stored`).toBeDefined();
  return g!;
}
