import { describe, expect, it } from 'vitest';
import {
  errorEventFromSentry,
  feedbackFromSentry,
  fromTypedAttributes,
  logsFromSentryLogItem,
  normalizeTags,
  sentryServiceName,
  sentryTimeToMs,
  sessionsFromSentry,
  spanKindFor,
  spanStatusCode,
  spansFromSpanItem,
  spansFromTransaction,
} from '../../../src/ingest/sentry/normalize.js';

const TRACE = '0123456789abcdef0123456789abcdef';
const ROOT = '1111111111111111';
const CHILD = '2222222222222222';
const GRANDCHILD = '3333333333333333';

describe('errorEventFromSentry', () => {
  it('applies defaults to a minimal /store/ body', () => {
    const ev = errorEventFromSentry({ message: 'boom' }, 1_700_000_000_000);
    expect(ev.event_id).toMatch(/^[0-9a-f]{32}$/);
    expect(ev).toMatchObject({
      timestamp_ms: 1_700_000_000_000,
      received_ms: 1_700_000_000_000,
      source: 'sentry',
      platform: 'other',
      level: 'error',
      message: 'boom',
      exceptions: [],
      fingerprint: null,
      environment: 'production',
      release: '',
      service_name: '',
      server_name: '',
      transaction: '',
      tags: {},
      user: null,
      trace_id: null,
      span_id: null,
    });
    expect(errorEventFromSentry({}, 1).event_id).not.toBe(errorEventFromSentry({}, 1).event_id);
  });

  it('normalizes ids, timestamps, levels, messages, tags and fingerprints', () => {
    const raw = {
      event_id: '9EC79C33-EC99-42AB-8353-589FCB2E04DC',
      timestamp: '2024-05-01T10:00:00.250',
      level: 'WARN',
      logentry: { message: 'Order %s failed', params: ['A1'], formatted: 'Order A1 failed' },
      tags: [
        ['service.name', 'billing'],
        ['attempt', 3],
        ['skip', null],
      ],
      fingerprint: ['{{ default }}', 42],
      release: 'billing@2.0.0',
      environment: 'prod-eu',
      server_name: 'host-7',
      transaction: 'POST /pay',
      user: { id: 7 },
      contexts: { trace: { trace_id: TRACE.toUpperCase(), span_id: ROOT } },
    };
    const ev = errorEventFromSentry(raw, 5);
    expect(ev.event_id).toBe('9ec79c33ec9942ab8353589fcb2e04dc');
    expect(ev.timestamp_ms).toBe(Date.parse('2024-05-01T10:00:00.250Z'));
    expect(ev.level).toBe('warning');
    expect(ev.message).toBe('Order A1 failed');
    expect(ev.tags).toEqual({ 'service.name': 'billing', attempt: '3' });
    expect(ev.service_name).toBe('billing');
    expect(ev.fingerprint).toEqual(['{{ default }}', '42']);
    expect(ev.trace_id).toBe(TRACE);
    expect(ev.span_id).toBe(ROOT);
    expect(ev.user).toEqual({ id: 7 });
    expect(ev.payload).toBe(raw);
  });

  it('reads seconds-float timestamps and every message location', () => {
    expect(errorEventFromSentry({ timestamp: 1714557600.5 }, 0).timestamp_ms).toBe(1714557600500);
    expect(errorEventFromSentry({ timestamp: '1714557600.5' }, 0).timestamp_ms).toBe(1714557600500);
    expect(errorEventFromSentry({ timestamp: 'garbage' }, 99).timestamp_ms).toBe(99);
    expect(errorEventFromSentry({ logentry: { message: 'raw %s' } }, 0).message).toBe('raw %s');
    expect(errorEventFromSentry({ message: { formatted: 'legacy formatted' } }, 0).message).toBe('legacy formatted');
    expect(errorEventFromSentry({ level: 'nonsense' }, 0).level).toBe('error');
    expect(errorEventFromSentry({ level: 'fatal' }, 0).level).toBe('fatal');
    expect(errorEventFromSentry({ fingerprint: [] }, 0).fingerprint).toBeNull();
  });

  it('maps exception values and frames (in_app only when sent as a boolean)', () => {
    const ev = errorEventFromSentry(
      {
        exception: {
          values: [
            {
              type: 'ValueError',
              value: 'bad',
              module: 'app.models',
              stacktrace: {
                frames: [
                  { filename: 'lib.py', function: 'call', lineno: 1, in_app: false },
                  { filename: 'app/models.py', abs_path: '/srv/app/models.py', module: 'app.models', function: 'save', lineno: 10, colno: 4, in_app: true, vars: { x: 1 } },
                  { filename: 'x.js', function: 'f', in_app: 'yes' },
                ],
              },
            },
          ],
        },
      },
      0,
    );
    expect(ev.exceptions).toEqual([
      {
        type: 'ValueError',
        value: 'bad',
        module: 'app.models',
        frames: [
          { filename: 'lib.py', function: 'call', lineno: 1, in_app: false },
          { filename: 'app/models.py', abs_path: '/srv/app/models.py', module: 'app.models', function: 'save', lineno: 10, colno: 4, in_app: true },
          { filename: 'x.js', function: 'f' },
        ],
      },
    ]);
    // legacy array form and missing type/value
    expect(errorEventFromSentry({ exception: [{ value: 'only value' }] }, 0).exceptions).toEqual([{ type: '', value: 'only value', frames: [] }]);
  });

  it('takes the service name from tags, then trace data, then the otel resource — never from server_name', () => {
    expect(errorEventFromSentry({ server_name: 'host-1' }, 0).service_name).toBe('');
    expect(errorEventFromSentry({ contexts: { trace: { data: { 'service.name': 'from-trace' } } } }, 0).service_name).toBe('from-trace');
    expect(errorEventFromSentry({ contexts: { otel: { resource: { 'service.name': 'from-otel' } } } }, 0).service_name).toBe('from-otel');
    expect(
      errorEventFromSentry({ tags: { 'service.name': 'tag' }, contexts: { trace: { data: { 'service.name': 'from-trace' } } } }, 0).service_name,
    ).toBe('tag');
  });
});

describe('spansFromTransaction', () => {
  const tx = {
    type: 'transaction',
    transaction: 'GET /users/:id',
    transaction_info: { source: 'route' },
    start_timestamp: 1714557600.0,
    timestamp: 1714557600.25,
    release: 'api@1.0.0',
    environment: 'prod',
    server_name: 'web-3',
    sdk: { name: 'sentry.javascript.node', version: '11.12.0' },
    tags: { 'service.name': 'users-api', region: 'eu' },
    measurements: { lcp: { value: 1200, unit: 'millisecond' } },
    contexts: {
      trace: {
        trace_id: TRACE,
        span_id: ROOT,
        parent_span_id: 'aaaaaaaaaaaaaaaa',
        op: 'http.server',
        status: 'ok',
        origin: 'auto.http',
        data: { 'http.route': '/users/:id', nested: { a: [1, 'b'] } },
      },
    },
    spans: [
      { span_id: CHILD, parent_span_id: ROOT, trace_id: TRACE, op: 'db.sql.query', description: 'SELECT * FROM users', start_timestamp: 1714557600.01, timestamp: 1714557600.1, status: 'ok', data: { 'db.system': 'postgresql' } },
      { span_id: GRANDCHILD, parent_span_id: CHILD, op: 'http.client', description: 'GET http://auth', start_timestamp: 1714557600.02, timestamp: 1714557600.05, status: 'deadline_exceeded' },
      { span_id: '4444444444444444', op: 'function', start_timestamp: 1714557600.11, timestamp: 1714557600.12 },
      { span_id: 'not-hex' },
    ],
  };

  it('produces the root span then the children, in ms, with parent links', () => {
    const spans = spansFromTransaction(tx);
    expect(spans.map((s) => s.span_id)).toEqual([ROOT, CHILD, GRANDCHILD, '4444444444444444']);
    const [root, db, http, fn] = spans;
    expect(root).toMatchObject({
      trace_id: TRACE,
      parent_span_id: 'aaaaaaaaaaaaaaaa',
      name: 'GET /users/:id',
      kind: 2,
      start_ms: 1714557600000,
      end_ms: 1714557600250,
      status_code: 1,
      status_message: '',
      service_name: 'users-api',
      trace_state: '',
      events: [],
      links: [],
    });
    expect(root.attributes).toMatchObject({
      'http.route': '/users/:id',
      nested: { a: [1, 'b'] },
      'sentry.op': 'http.server',
      'sentry.origin': 'auto.http',
      'sentry.source': 'route',
      region: 'eu',
      'measurements.lcp': 1200,
    });
    expect(root.resource).toEqual({
      'service.name': 'users-api',
      'service.version': 'api@1.0.0',
      'deployment.environment': 'prod',
      'host.name': 'web-3',
      'telemetry.sdk.name': 'sentry.javascript.node',
      'telemetry.sdk.version': '11.12.0',
    });
    expect(root.scope).toEqual({ name: 'sentry.javascript.node', version: '11.12.0', attributes: {} });

    expect(db).toMatchObject({ parent_span_id: ROOT, name: 'SELECT * FROM users', kind: 3, status_code: 1, service_name: 'users-api' });
    expect(db.start_ms).toBeCloseTo(1714557600010, 3);
    expect(db.end_ms).toBeCloseTo(1714557600100, 3);
    expect(db.attributes).toMatchObject({ 'db.system': 'postgresql', 'sentry.op': 'db.sql.query' });
    expect(http).toMatchObject({ trace_id: TRACE, parent_span_id: CHILD, kind: 3, status_code: 2, status_message: 'deadline_exceeded' });
    // no parent given: hangs off the transaction root; no status: unset; no description: the op
    expect(fn).toMatchObject({ parent_span_id: ROOT, name: 'function', status_code: 0, kind: 1 });
  });

  it('falls back to no service name and production environment', () => {
    const [root] = spansFromTransaction({ ...tx, tags: {}, environment: undefined, server_name: 'web-9' });
    expect(root.service_name).toBe('');
    expect(root.resource['service.name']).toBeUndefined();
    expect(root.resource['deployment.environment']).toBe('production');
    expect(root.resource['host.name']).toBe('web-9');
    expect(spansFromTransaction(null)).toEqual([]);
  });

  it('uses otel.kind when the span came from OpenTelemetry', () => {
    const [root] = spansFromTransaction({ ...tx, contexts: { trace: { ...tx.contexts.trace, op: 'x', data: { 'otel.kind': 'CONSUMER' } } } });
    expect(root.kind).toBe(5);
  });
});

describe('spansFromSpanItem (span v2, the @sentry/node v11 default)', () => {
  it('maps typed attributes, segment parentage, status and links', () => {
    const spans = spansFromSpanItem({
      version: 2,
      items: [
        {
          trace_id: TRACE,
          span_id: ROOT,
          name: 'queue job',
          start_timestamp: 1714557600,
          end_timestamp: 1714557601.5,
          is_segment: true,
          status: 'error',
          attributes: {
            'sentry.op': { value: 'queue.process', type: 'string' },
            'sentry.status.message': { value: 'deadline_exceeded', type: 'string' },
            'service.name': { value: 'worker', type: 'string' },
            'sentry.release': { value: 'w@3', type: 'string' },
            'sentry.environment': { value: 'prod', type: 'string' },
            'sentry.sdk.name': { value: 'sentry.javascript.node', type: 'string' },
            retries: { value: 2, type: 'integer' },
            ratio: { value: 0.5, type: 'double', unit: 'ratio' },
            tags: { value: ['a', 'b'], type: 'array' },
          },
          links: [{ trace_id: TRACE, span_id: CHILD, sampled: true, attributes: { 'sentry.link.type': { value: 'previous_trace', type: 'string' } } }],
        },
      ],
    });
    expect(spans).toHaveLength(1);
    expect(spans[0]).toMatchObject({
      trace_id: TRACE,
      span_id: ROOT,
      parent_span_id: null,
      name: 'queue job',
      kind: 5,
      start_ms: 1714557600000,
      end_ms: 1714557601500,
      status_code: 2,
      status_message: 'deadline_exceeded',
      service_name: 'worker',
      resource: { 'service.name': 'worker', 'service.version': 'w@3', 'deployment.environment': 'prod', 'telemetry.sdk.name': 'sentry.javascript.node' },
      attributes: { retries: 2, ratio: 0.5, tags: ['a', 'b'] },
      links: [{ trace_id: TRACE, span_id: CHILD, trace_state: '', attributes: { 'sentry.link.type': 'previous_trace', 'sentry.sampled': true } }],
    });
  });
});

describe('logsFromSentryLogItem', () => {
  it('maps items, severity, typed attributes, trace and parent span ids', () => {
    const logs = logsFromSentryLogItem(
      {
        version: 2,
        items: [
          {
            timestamp: 1714557600.125,
            level: 'warn',
            body: 'disk almost full',
            trace_id: TRACE,
            severity_number: 13,
            attributes: {
              'sentry.trace.parent_span_id': { value: ROOT, type: 'string' },
              'service.name': { value: 'storage', type: 'string' },
              'sentry.release': { value: 's@1', type: 'string' },
              'sentry.environment': { value: 'prod', type: 'string' },
              'server.address': { value: 'node-4', type: 'string' },
              free_pct: { value: 3.5, type: 'double' },
              plain: 'untyped value',
            },
          },
          { timestamp: 1714557601, level: 'fatal', body: 'gone' },
          'not an object',
        ],
      },
      1714557700000,
    );
    expect(logs).toHaveLength(2);
    expect(logs[0]).toMatchObject({
      time_ms: 1714557600125,
      observed_time_ms: 1714557700000,
      severity_number: 13,
      severity_text: 'warn',
      body: 'disk almost full',
      trace_id: TRACE,
      span_id: ROOT,
      flags: 0,
      event_name: '',
      service_name: 'storage',
      resource: { 'service.name': 'storage', 'service.version': 's@1', 'deployment.environment': 'prod', 'host.name': 'node-4' },
      attributes: { free_pct: 3.5, plain: 'untyped value' },
    });
    expect(logs[1]).toMatchObject({ severity_number: 21, severity_text: 'fatal', trace_id: null, span_id: null, service_name: '' });
    expect(logsFromSentryLogItem({})).toEqual([]);
  });
});

describe('feedback and sessions', () => {
  it('maps a legacy user_report', () => {
    const fb = feedbackFromSentry({ event_id: 'd'.repeat(32), name: 'Ann', email: 'ann@x.io', comments: 'It broke' }, 10);
    expect(fb).toMatchObject({ associated_event_id: 'd'.repeat(32), name: 'Ann', email: 'ann@x.io', message: 'It broke', source: 'user_report' });
  });

  it('maps a feedback event with an associated event', () => {
    const fb = feedbackFromSentry(
      { event_id: 'e'.repeat(32), timestamp: 1714557600, contexts: { feedback: { message: 'hi', associated_event_id: 'f'.repeat(32), source: 'widget' } } },
      0,
    );
    expect(fb).toMatchObject({ event_id: 'e'.repeat(32), timestamp_ms: 1714557600000, message: 'hi', associated_event_id: 'f'.repeat(32), source: 'widget' });
  });

  it('expands session aggregates into one record per non-zero bucket', () => {
    const recs = sessionsFromSentry(
      'sessions',
      { aggregates: [{ started: '2024-05-01T10:00:00Z', exited: 5, errored: 2, crashed: 0 }], attrs: { release: 'r1', environment: 'e1' } },
      0,
    );
    expect(recs.map((r) => [r.status, r.quantity])).toEqual([
      ['exited', 5],
      ['errored', 2],
    ]);
    expect(recs[0]).toMatchObject({ sid: null, release: 'r1', environment: 'e1', started_ms: Date.parse('2024-05-01T10:00:00Z') });
  });
});

describe('helpers', () => {
  it('sentryTimeToMs', () => {
    expect(sentryTimeToMs(1.5)).toBe(1500);
    expect(sentryTimeToMs(1714557600123)).toBe(1714557600123); // already ms
    expect(sentryTimeToMs('2024-05-01T10:00:00+02:00')).toBe(Date.parse('2024-05-01T08:00:00Z'));
    expect(sentryTimeToMs(undefined)).toBeUndefined();
    expect(sentryTimeToMs(Number.NaN)).toBeUndefined();
  });

  it('normalizeTags, fromTypedAttributes, sentryServiceName', () => {
    expect(normalizeTags({ a: 1, b: true, c: null, d: 'x' })).toEqual({ a: '1', b: 'true', d: 'x' });
    expect(normalizeTags([['k', 'v'], ['bad'], 'nope'])).toEqual({ k: 'v' });
    expect(normalizeTags(undefined)).toEqual({});
    expect(fromTypedAttributes({ a: { value: 1, type: 'integer' }, b: { value: undefined, type: 'string' }, c: 3 })).toEqual({ a: 1, c: 3 });
    expect(sentryServiceName({ attributes: { 'service.name': 'attr' } })).toBe('attr');
    expect(sentryServiceName({ tags: [['service.name', 'pair']], attributes: { 'service.name': 'attr' } })).toBe('pair');
  });

  it('spanStatusCode and spanKindFor', () => {
    expect(spanStatusCode('ok')).toBe(1);
    expect(spanStatusCode(undefined)).toBe(0);
    expect(spanStatusCode('unknown')).toBe(0);
    expect(spanStatusCode('internal_error')).toBe(2);
    expect(spanStatusCode('unknown_error')).toBe(2);
    expect(spanStatusCode('error')).toBe(2);
    expect(spanKindFor('http.server', {})).toBe(2);
    expect(spanKindFor('http.client', {})).toBe(3);
    expect(spanKindFor('db', {})).toBe(3);
    expect(spanKindFor('queue.publish', {})).toBe(4);
    expect(spanKindFor('queue.process', {})).toBe(5);
    expect(spanKindFor('ui.render', {})).toBe(1);
    expect(spanKindFor(undefined, { 'otel.kind': 'PRODUCER' })).toBe(4);
  });
});
