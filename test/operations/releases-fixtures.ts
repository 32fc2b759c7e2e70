/**
 * Hand-built spans (OTLP/JSON to the real ingest endpoint) and deployment records for release tests.
 * A "request" is a root server span; its duration is the latency the health comparison reads.
 */
import { expect } from 'vitest';
import { randomBytes } from 'node:crypto';
import { api, type TestServer } from '../helpers/server.js';
import { attrs, nanos } from './telemetry-fixtures.js';

export const MIN = 60_000;

export interface SpanSpec {
  at: number;
  ms?: number;
  error?: boolean;
  /** Child (internal) span: not a request. */
  child?: boolean;
  exception?: { type: string; message: string };
}

export interface Stream {
  service: string;
  environment?: string;
  version?: string;
}

const hex = (n: number) => randomBytes(n).toString('hex');

export function spansPayload(stream: Stream, spans: SpanSpec[]) {
  const resource: Record<string, string> = { 'service.name': stream.service };
  if (stream.environment !== undefined) resource['deployment.environment.name'] = stream.environment;
  if (stream.version !== undefined) resource['service.version'] = stream.version;
  return {
    resourceSpans: [
      {
        resource: { attributes: attrs(resource) },
        scopeSpans: [
          {
            scope: { name: 'release-test', version: '1.0.0' },
            spans: spans.map((s) => ({
              traceId: hex(16),
              spanId: hex(8),
              ...(s.child ? { parentSpanId: hex(8) } : {}),
              name: 'GET /checkout',
              kind: s.child ? 1 : 2,
              startTimeUnixNano: nanos(s.at),
              endTimeUnixNano: nanos(s.at + (s.ms ?? 10)),
              attributes: attrs({ 'http.request.method': 'GET', 'http.route': '/checkout' }),
              status: { code: s.error ? 2 : 0 },
              events: s.exception
                ? [{ name: 'exception', timeUnixNano: nanos(s.at), attributes: attrs({ 'exception.type': s.exception.type, 'exception.message': s.exception.message }) }]
                : [],
            })),
          },
        ],
      },
    ],
  };
}

export async function sendSpans(t: TestServer, stream: Stream, spans: SpanSpec[]): Promise<void> {
  for (let i = 0; i < spans.length; i += 1000) {
    const r = await fetch(`${t.url}/ingest/v1/traces`, {
      method: 'POST',
      headers: { 'content-type': 'application/json', 'x-service-key': t.keys.ingest },
      body: JSON.stringify(spansPayload(stream, spans.slice(i, i + 1000))),
    });
    expect(r.status, await r.text()).toBe(200);
  }
}

/** `n` requests spread evenly over [from, to), `errors` of them failing, each lasting `ms`. */
export function requests(from: number, to: number, n: number, opts: { errors?: number; ms?: number } = {}): SpanSpec[] {
  const step = (to - from) / n;
  return Array.from({ length: n }, (_, i) => ({ at: from + step * (i + 0.5), ms: opts.ms ?? 10, error: i < (opts.errors ?? 0) }));
}

let seq = 0;
export async function deploy(t: TestServer, stream: Stream, at: number, extra: Record<string, unknown> = {}): Promise<void> {
  const body = {
    deployment_id: `run-${++seq}`,
    service: stream.service,
    version: stream.version,
    ...(stream.environment !== undefined ? { environment: stream.environment } : {}),
    status: 'ready',
    started_at: new Date(at).toISOString(),
    ...extra,
  };
  const r = await api(t, 'POST', `/v1/projects/${t.projectId}/deployments`, { key: t.keys.admin, body });
  expect(r.status, JSON.stringify(r.body)).toBe(201);
}
