import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import http from 'node:http';
import type { AddressInfo } from 'node:net';
import { spawn } from 'node:child_process';
import { fileURLToPath } from 'node:url';
import * as zlib from 'node:zlib';
import { createEnvelope, serializeEnvelope } from '@sentry/core';
import {
  BodyTooLargeError,
  SentryParseError,
  UnsupportedEncodingError,
  decompressBody,
  itemJson,
  keyFromDsn,
  parseEnvelope,
  parseSentryAuth,
  parseSentryAuthQuery,
  resolveSentryKey,
  splitReplayRecording,
  type Envelope,
  type EnvelopeItem,
} from '../../../src/ingest/sentry/envelope.js';
import {
  errorEventFromSentry,
  feedbackFromSentry,
  logsFromSentryLogItem,
  sessionsFromSentry,
  spansFromSpanItem,
  spansFromTransaction,
} from '../../../src/ingest/sentry/normalize.js';
import { groupKeyFor } from '../../../src/domain/grouping/fingerprint.js';

const FIXTURE = fileURLToPath(new URL('./fixtures/sdk-emit.mjs', import.meta.url));
const CWD = fileURLToPath(new URL('../../../', import.meta.url));
const MAX = 10 * 1024 * 1024;

// ---------------------------------------------------------------------------------------------------------
// A tiny Sentry-ingest-shaped server + the real @sentry/node SDK in a child process

interface Captured {
  run: string;
  mark: string;
  method: string;
  url: URL;
  headers: http.IncomingHttpHeaders;
  body: Buffer;
}

const captured: Captured[] = [];
let server: http.Server;
let port = 0;
let currentRun = '';
let currentMark = '';

function runSdk(run: string, env: Record<string, string>): Promise<void> {
  currentRun = run;
  currentMark = '';
  return new Promise((resolve, reject) => {
    const child = spawn(process.execPath, [FIXTURE], {
      cwd: CWD,
      env: { ...process.env, SENTRY_TRACE_LIFECYCLE: '', SENTRY_RELEASE: '', ...env },
      stdio: ['ignore', 'pipe', 'pipe'],
    });
    let stderr = '';
    child.stderr.on('data', (d) => (stderr += d));
    child.stdout.on('data', () => {});
    const timer = setTimeout(() => {
      child.kill('SIGKILL');
      reject(new Error(`SDK run ${run} timed out\n${stderr}`));
    }, 25_000);
    child.on('error', reject);
    child.on('exit', (code) => {
      clearTimeout(timer);
      if (code === 0) resolve();
      else reject(new Error(`SDK run ${run} exited with ${code}\n${stderr}`));
    });
  });
}

beforeAll(async () => {
  server = http.createServer((req, res) => {
    const chunks: Buffer[] = [];
    req.on('data', (c: Buffer) => chunks.push(c));
    req.on('end', () => {
      const url = new URL(req.url ?? '/', 'http://127.0.0.1');
      if (url.pathname.startsWith('/__mark/')) {
        currentMark = url.pathname.slice('/__mark/'.length);
      } else {
        captured.push({ run: currentRun, mark: currentMark, method: req.method ?? '', url, headers: req.headers, body: Buffer.concat(chunks) });
      }
      res.writeHead(200, { 'content-type': 'application/json' });
      res.end('{}');
    });
  });
  await new Promise<void>((r) => server.listen(0, '127.0.0.1', r));
  port = (server.address() as AddressInfo).port;

  // 1. default @sentry/node v11 configuration: everything
  await runSdk('default', { SENTRY_DSN: `http://abc123@127.0.0.1:${port}/ingest/42` });
  // 2. the static trace lifecycle: `transaction` items instead of streamed `span` items
  await runSdk('static', {
    SENTRY_DSN: `http://stat1c@127.0.0.1:${port}/ingest/43`,
    SENTRY_TRACE_LIFECYCLE: 'static',
    SCENARIOS: 'transaction',
  });
  // 3. a tunnel: no auth in the URL, the DSN travels in the envelope header
  await runSdk('tunnel', {
    SENTRY_DSN: `http://tunn3l:s3cret@127.0.0.1:${port}/ingest/44`,
    SENTRY_TUNNEL: `http://127.0.0.1:${port}/tunnel`,
    SCENARIOS: 'message',
  });
}, 90_000);

afterAll(async () => {
  await new Promise<void>((r) => server?.close(() => r()));
});

function requests(run: string, mark: string): Captured[] {
  return captured.filter((c) => c.run === run && c.mark === mark);
}

function envelopes(run: string, mark: string): { req: Captured; env: Envelope }[] {
  return requests(run, mark).map((req) => ({
    req,
    env: parseEnvelope(decompressBody(req.body, req.headers['content-encoding'] as string | undefined, MAX)),
  }));
}

function itemsOf(run: string, mark: string, type: string): { req: Captured; env: Envelope; item: EnvelopeItem }[] {
  return envelopes(run, mark).flatMap(({ req, env }) => env.items.filter((i) => i.type === type).map((item) => ({ req, env, item })));
}

function only<T>(xs: T[]): T {
  expect(xs).toHaveLength(1);
  return xs[0];
}

describe('real @sentry/node v11 envelopes', () => {
  it('posts envelopes to /<path>/api/<project>/envelope/ with auth in the query string', () => {
    const sdkRequests = captured.filter((c) => c.run === 'default');
    expect(sdkRequests.length).toBeGreaterThanOrEqual(7);
    for (const r of sdkRequests) {
      expect(r.method).toBe('POST');
      expect(r.url.pathname).toBe('/ingest/api/42/envelope/');
      expect(r.headers['x-sentry-auth']).toBeUndefined();
      const auth = parseSentryAuthQuery(r.url.search);
      expect(auth.sentry_key).toBe('abc123');
      expect(auth.sentry_version).toBe('7');
      expect(auth.sentry_client).toMatch(/^sentry\.javascript\.node\/11\./);
      expect(resolveSentryKey({ authHeader: r.headers['x-sentry-auth'] as string | undefined, query: r.url.searchParams })).toBe('abc123');
    }
  });

  it('captureException: event item + length-delimited binary attachment, chained exceptions with in_app frames', () => {
    const { env, item } = only(itemsOf('default', 'exception', 'event'));
    expect(env.header.sdk?.name).toBe('sentry.javascript.node');
    expect(env.header.event_id).toMatch(/^[0-9a-f]{32}$/);

    const attachment = only(env.items.filter((i) => i.type === 'attachment'));
    expect(attachment.headers).toMatchObject({ length: 7, filename: 'dump.bin', content_type: 'application/octet-stream' });
    expect([...attachment.payload]).toEqual([0x7b, 0x0a, 0x0a, 0x00, 0xff, 0x0a, 0x7d]);

    const received = Date.now();
    const ev = errorEventFromSentry(itemJson(item), received);
    expect(ev.event_id).toBe(env.header.event_id);
    expect(ev.source).toBe('sentry');
    expect(ev.platform).toBe('node');
    expect(ev.level).toBe('error');
    expect(ev.environment).toBe('staging');
    expect(ev.release).toBe('shop@1.2.3');
    expect(ev.server_name).toBe('web-1');
    expect(ev.service_name).toBe('checkout-api');
    expect(ev.tags).toMatchObject({ 'service.name': 'checkout-api', team: 'payments' });
    expect(ev.user).toMatchObject({ id: 'u-1', email: 'a@example.com' });
    expect(ev.fingerprint).toEqual(['{{ default }}', 'payments']);
    expect(ev.trace_id).toMatch(/^[0-9a-f]{32}$/);
    expect(ev.span_id).toMatch(/^[0-9a-f]{16}$/);
    expect(ev.timestamp_ms).toBeGreaterThan(received - 60_000);
    expect(ev.timestamp_ms).toBeLessThanOrEqual(received);

    // linked errors: the cause first, the captured error last
    expect(ev.exceptions.map((e) => [e.type, e.value])).toEqual([
      ['PaymentDeclinedError', 'card declined for amount 42'],
      ['Error', 'order processing failed'],
    ]);
    const cause = ev.exceptions[0];
    const crashing = cause.frames[cause.frames.length - 1];
    expect(crashing).toMatchObject({ function: 'chargeCard', module: 'sdk-emit', in_app: true });
    expect(crashing.filename).toMatch(/sdk-emit\.mjs$/);
    expect(typeof crashing.lineno).toBe('number');
    expect(typeof crashing.colno).toBe('number');
    const internal = cause.frames.find((f) => f.filename?.startsWith('node:'));
    expect(internal?.in_app).toBe(false);
    expect(cause.frames.some((f) => f.module?.startsWith('@sentry.') && f.in_app === false)).toBe(true);

    const key = groupKeyFor(ev);
    expect(key.method).toBe('sdk_fingerprint');
    expect(key.type).toBe('Error');
    expect(key.title).toBe('Error: order processing failed');
    expect(key.culprit).toBe('processOrder (sdk-emit)');
    expect(key.components[0]).toBe('type=Error');
    expect(key.components).toContain('frame=processOrder (sdk-emit)');
    expect(key.components[key.components.length - 1]).toBe('payments');
    expect(key.components.join('\n')).not.toMatch(/task_queues|@sentry|\d{2,}/);
  });

  it('captureMessage: a message event (with the SDK synthetic stack) groups by message', () => {
    const { item } = only(itemsOf('default', 'message', 'event'));
    const raw = itemJson(item);
    const ev = errorEventFromSentry(raw, Date.now());
    expect(ev.message).toBe('Cache miss for user 1234');
    expect(ev.level).toBe('warning');
    // surprise: node v11 attaches the call-site stack as a type-less exception with mechanism.synthetic
    expect(raw.exception.values[0].mechanism.synthetic).toBe(true);
    expect(ev.exceptions[0].type).toBe('');
    const key = groupKeyFor(ev);
    expect(key.method).toBe('message');
    expect(key.type).toBe('message');
    expect(key.components).toEqual(['message=Cache miss for user <num>']);
    expect(key.title).toBe('Cache miss for user 1234');
    expect(key.culprit).toBe('<anonymous> (sdk-emit)');
  });

  it('startSpan (default streamed lifecycle): one `span` v2 item with the segment and its children', () => {
    const { env, item } = only(itemsOf('default', 'transaction', 'span'));
    expect(item.headers).toMatchObject({ item_count: 3, content_type: 'application/vnd.sentry.items.span.v2+json' });
    expect((env.header.trace as Record<string, unknown>).transaction).toBe('GET /checkout');
    const spans = spansFromSpanItem(itemJson(item));
    expect(spans).toHaveLength(3);
    const root = spans.find((s) => s.name === 'GET /checkout')!;
    const db = spans.find((s) => s.name === 'SELECT orders')!;
    const charge = spans.find((s) => s.name === 'charge')!;
    expect(root.parent_span_id).toBeNull();
    expect(root.kind).toBe(2);
    expect(root.status_code).toBe(1);
    expect(root.attributes['http.method']).toBe('GET');
    expect(db.parent_span_id).toBe(root.span_id);
    expect(charge.parent_span_id).toBe(root.span_id);
    expect(new Set(spans.map((s) => s.trace_id)).size).toBe(1);
    expect(db.kind).toBe(3);
    expect(db.attributes['db.system']).toBe('postgresql');
    expect(db.end_ms - db.start_ms).toBeGreaterThanOrEqual(3);
    expect(db.start_ms).toBeGreaterThanOrEqual(root.start_ms);
    expect(db.end_ms).toBeLessThanOrEqual(root.end_ms);
    expect(charge.status_code).toBe(2);
    expect(charge.status_message).toBe('internal_error');
    for (const s of spans) {
      expect(s.service_name).toBe('checkout-api');
      expect(s.resource).toMatchObject({
        'service.name': 'checkout-api',
        'service.version': 'shop@1.2.3',
        'deployment.environment': 'staging',
        'telemetry.sdk.name': 'sentry.javascript.node',
      });
      expect(s.scope.name).toBe('sentry.javascript.node');
      expect(s.start_ms).toBeGreaterThan(1e12);
    }
  });

  it('startSpan (traceLifecycle static): a `transaction` item → root span + child spans', () => {
    const { req, item } = only(itemsOf('static', 'transaction', 'transaction'));
    expect(parseSentryAuthQuery(req.url.search).sentry_key).toBe('stat1c');
    const tx = itemJson(item);
    const spans = spansFromTransaction(tx);
    expect(spans).toHaveLength(3);
    const [root, ...children] = spans;
    expect(root.name).toBe('GET /checkout');
    expect(root.span_id).toBe(tx.contexts.trace.span_id);
    expect(root.parent_span_id).toBeNull();
    expect(root.kind).toBe(2);
    expect(root.status_code).toBe(1);
    expect(root.start_ms).toBeCloseTo(tx.start_timestamp * 1000, 3);
    expect(root.end_ms).toBeCloseTo(tx.timestamp * 1000, 3);
    expect(root.attributes).toMatchObject({ 'http.method': 'GET', 'sentry.op': 'http.server', team: 'payments' });
    expect(children.map((c) => c.name).sort()).toEqual(['SELECT orders', 'charge']);
    for (const c of children) {
      expect(c.parent_span_id).toBe(root.span_id);
      expect(c.trace_id).toBe(root.trace_id);
    }
    const charge = children.find((c) => c.name === 'charge')!;
    expect(charge.status_code).toBe(2);
    expect(charge.status_message).toBe('internal_error');
    for (const s of spans) {
      expect(s.service_name).toBe('checkout-api');
      expect(s.resource).toMatchObject({
        'service.version': 'shop@1.2.3',
        'deployment.environment': 'staging',
        'host.name': 'web-1',
      });
    }
  });

  it('captureFeedback: a `feedback` item carrying contexts.feedback', () => {
    const { item } = only(itemsOf('default', 'feedback', 'feedback'));
    const raw = itemJson(item);
    expect(raw.type).toBe('feedback');
    const fb = feedbackFromSentry(raw, Date.now());
    expect(fb).toMatchObject({
      message: 'The checkout button does nothing',
      name: 'Jane',
      email: 'jane@example.com',
      url: 'https://shop.example.com/checkout',
      environment: 'staging',
      release: 'shop@1.2.3',
      service_name: 'checkout-api',
    });
    expect(fb.event_id).toMatch(/^[0-9a-f]{32}$/);
  });

  it('startSession/endSession: `session` items (the default process session ends, ours starts and exits)', () => {
    const sessions = itemsOf('default', 'session', 'session').flatMap(({ item }) => sessionsFromSentry(item.type, itemJson(item), Date.now()));
    expect(sessions.length).toBeGreaterThanOrEqual(1);
    const ours = sessions.find((s) => s.init && s.status === 'exited');
    expect(ours).toBeDefined();
    expect(ours).toMatchObject({ release: 'shop@1.2.3', environment: 'staging', errors: 0, quantity: 1 });
    expect(ours!.sid).toMatch(/^[0-9a-f]{32}$/);
    expect(ours!.duration_ms).toBeGreaterThanOrEqual(0);
    // the process session that was running during captureException counted the error
    const processSession = itemsOf('default', 'exception', 'session').map(({ item }) => itemJson(item));
    expect(processSession.some((s) => s.errors === 1)).toBe(true);
  });

  it('Sentry.logger: a `log` container item → LogRecordOut with trace/span ids and typed attributes', () => {
    const { env, item } = only(itemsOf('default', 'log', 'log'));
    expect(item.headers).toMatchObject({ item_count: 2, content_type: 'application/vnd.sentry.items.log+json' });
    expect(env.header.sdk?.name).toBe('sentry.javascript.node');
    const span = spansFromSpanItem(itemJson(only(itemsOf('default', 'log', 'span')).item)).find((s) => s.name === 'log-span')!;
    const received = Date.now();
    const logs = logsFromSentryLogItem(itemJson(item), received);
    expect(logs).toHaveLength(2);
    const [info, error] = logs;
    expect(info.body).toBe('User u-1 placed order 1001');
    expect(info.severity_text).toBe('info');
    expect(info.severity_number).toBe(9);
    expect(info.attributes).toMatchObject({
      cart_items: 3,
      vip: true,
      'sentry.message.template': 'User %s placed order %s',
      'sentry.message.parameter.0': 'u-1',
      'sentry.message.parameter.1': 1001,
      'server.address': 'web-1',
    });
    expect(info.trace_id).toBe(span.trace_id);
    expect(info.span_id).toBe(span.span_id);
    expect(info.service_name).toBe('checkout-api');
    expect(info.resource).toMatchObject({ 'service.version': 'shop@1.2.3', 'deployment.environment': 'staging', 'host.name': 'web-1' });
    expect(info.observed_time_ms).toBe(received);
    expect(info.time_ms).toBeLessThanOrEqual(received);
    expect(info.time_ms).toBeGreaterThan(1e12);
    expect(error.severity_text).toBe('error');
    expect(error.severity_number).toBe(17);
    expect(error.attributes['gateway.latency_ms']).toBe(1523.5);
  });

  it('bodies over 32 KiB arrive gzip-compressed', () => {
    const req = only(requests('default', 'big'));
    expect(req.headers['content-encoding']).toBe('gzip');
    expect(() => parseEnvelope(req.body)).toThrow(SentryParseError);
    const body = decompressBody(req.body, 'gzip', MAX);
    const env = parseEnvelope(body);
    const ev = errorEventFromSentry(itemJson(only(env.items.filter((i) => i.type === 'event'))), Date.now());
    expect(ev.exceptions[0]).toMatchObject({ type: 'TypeError', value: 'big payload' });
    expect((ev.payload as { extra: { blob: string } }).extra.blob).toHaveLength(40_000);
    expect(() => decompressBody(req.body, 'gzip', 16 * 1024)).toThrow(BodyTooLargeError);
  });

  it('tunnel: the DSN (public key) travels in the envelope header', () => {
    const { req, env } = only(itemsOf('tunnel', 'message', 'event'));
    expect(req.url.pathname).toBe('/tunnel');
    expect(parseSentryAuthQuery(req.url.search).sentry_key).toBeUndefined();
    expect(env.header.dsn).toBe(`http://tunn3l@127.0.0.1:${port}/ingest/44`);
    expect(keyFromDsn(env.header.dsn)).toBe('tunn3l');
    expect(resolveSentryKey({ query: req.url.searchParams, envelopeDsn: env.header.dsn })).toBe('tunn3l');
  });
});

// ---------------------------------------------------------------------------------------------------------
// framing

describe('parseEnvelope', () => {
  it('round-trips the SDK serializer, including binary items with embedded newlines', () => {
    const bin = new Uint8Array([0x0a, 0x7b, 0x0a, 0x00, 0xff, 0x0a, 0x0a]);
    const serialized = serializeEnvelope(
      createEnvelope<any>({ event_id: 'a'.repeat(32), sent_at: '2024-01-01T00:00:00.000Z', sdk: { name: 'x', version: '1' } }, [
        [{ type: 'event' }, { message: 'line1\nline2', level: 'info' }],
        [{ type: 'attachment', length: bin.length, filename: 'a.bin' }, bin],
        [{ type: 'client_report' }, { discarded_events: [] }],
      ]),
    );
    const env = parseEnvelope(Buffer.from(serialized as Uint8Array));
    expect(env.header.event_id).toBe('a'.repeat(32));
    expect(env.items.map((i) => i.type)).toEqual(['event', 'attachment', 'client_report']);
    expect(itemJson(env.items[0])).toEqual({ message: 'line1\nline2', level: 'info' });
    expect([...env.items[1].payload]).toEqual([...bin]);
    expect(itemJson(env.items[2])).toEqual({ discarded_events: [] });
  });

  it('handles length-delimited payloads at the very end, with and without a trailing newline', () => {
    const payload = Buffer.from('a\nb\n\nc');
    const head = Buffer.from(`{}\n{"type":"attachment","length":${payload.length}}\n`);
    for (const tail of [Buffer.alloc(0), Buffer.from('\n')]) {
      const env = parseEnvelope(Buffer.concat([head, payload, tail]));
      expect(env.items).toHaveLength(1);
      expect(env.items[0].payload.toString()).toBe('a\nb\n\nc');
    }
  });

  it('tolerates a trailing newline, CRLF header lines, zero-length and empty implicit payloads', () => {
    const env = parseEnvelope(
      Buffer.from('{"event_id":"9ec79c33ec9942ab8353589fcb2e04dc"}\r\n{"type":"event"}\r\n{"a":1}\r\n{"type":"attachment","length":0}\n\n{"type":"session"}\n\n'),
    );
    expect(env.items.map((i) => i.type)).toEqual(['event', 'attachment', 'session']);
    expect(itemJson(env.items[0])).toEqual({ a: 1 });
    expect(env.items[1].payload.length).toBe(0);
    expect(env.items[2].payload.length).toBe(0);
    // header-only envelope
    expect(parseEnvelope(Buffer.from('{}\n')).items).toEqual([]);
    // last item header without payload or newline
    expect(parseEnvelope(Buffer.from('{}\n{"type":"event"}')).items[0].payload.length).toBe(0);
  });

  it('splits replay_recording items (zlib-compressed or raw after their own JSON header line)', () => {
    const events = JSON.stringify([{ type: 4, data: { href: 'http://x' }, timestamp: 1 }]);
    for (const body of [zlib.deflateSync(Buffer.from(events)), Buffer.from(events)]) {
      const payload = Buffer.concat([Buffer.from('{"segment_id":3}\n'), body]);
      const env = parseEnvelope(
        Buffer.concat([
          Buffer.from(`{"event_id":"${'b'.repeat(32)}"}\n{"type":"replay_event"}\n{"replay_id":"${'b'.repeat(32)}"}\n`),
          Buffer.from(`{"type":"replay_recording","length":${payload.length}}\n`),
          payload,
        ]),
      );
      const rec = env.items.find((i) => i.type === 'replay_recording')!;
      const split = splitReplayRecording(rec.payload);
      expect(split.header).toEqual({ segment_id: 3 });
      expect(split.data.toString()).toBe(events);
    }
  });

  it.each([
    ['an empty body', ''],
    ['whitespace only', '\n\n'],
    ['a non-JSON envelope header', 'hello\n{"type":"event"}\n{}'],
    ['an array envelope header', '[1]\n'],
    ['a non-JSON item header', '{}\nnot json\n{}'],
    ['an item header without type', '{}\n{"length":2}\n{}'],
    ['a non-numeric length', '{}\n{"type":"attachment","length":"2"}\nab'],
    ['a negative length', '{}\n{"type":"attachment","length":-1}\nab'],
    ['a length past the end', '{}\n{"type":"attachment","length":50}\nabc'],
    ['a length-delimited payload not followed by a newline', '{}\n{"type":"attachment","length":2}\nabc\n'],
  ])('throws SentryParseError on %s', (_name, text) => {
    expect(() => parseEnvelope(Buffer.from(text))).toThrow(SentryParseError);
  });

  it('itemJson throws SentryParseError on a non-JSON payload', () => {
    const env = parseEnvelope(Buffer.from('{}\n{"type":"event"}\n{nope\n'));
    expect(() => itemJson(env.items[0])).toThrow(SentryParseError);
  });
});

// ---------------------------------------------------------------------------------------------------------
// decompression

describe('decompressBody', () => {
  const envelopeText = `{"event_id":"${'c'.repeat(32)}"}\n{"type":"event"}\n${JSON.stringify({ message: 'hi '.repeat(1000) })}\n`;
  const plain = Buffer.from(envelopeText);

  it.each([
    ['gzip', zlib.gzipSync(plain)],
    ['x-gzip', zlib.gzipSync(plain)],
    ['deflate', zlib.deflateSync(plain)], // zlib-wrapped (RFC 9110)
    ['deflate', zlib.deflateRawSync(plain)], // raw deflate, as some clients send it
    ['br', zlib.brotliCompressSync(plain)],
    ['GZIP', zlib.gzipSync(plain)],
    ['identity', plain],
    [undefined, plain],
    ['', plain],
    ['gzip, br', zlib.brotliCompressSync(zlib.gzipSync(plain))], // applied gzip first, then br
  ])('decodes %s', (encoding, body) => {
    const out = decompressBody(body, encoding, MAX);
    expect(out.equals(plain)).toBe(true);
    expect(parseEnvelope(out).items[0].type).toBe('event');
  });

  it.each([
    ['gzip', (b: Buffer) => zlib.gzipSync(b)],
    ['deflate', (b: Buffer) => zlib.deflateSync(b)],
    ['deflate', (b: Buffer) => zlib.deflateRawSync(b)],
    ['br', (b: Buffer) => zlib.brotliCompressSync(b, { params: { [zlib.constants.BROTLI_PARAM_QUALITY]: 4 } })],
  ])('stops a %s decompression bomb at maxBytes', (encoding, compress) => {
    const bomb = compress(Buffer.alloc(64 * 1024 * 1024)); // 64 MiB of zeros, tiny on the wire
    expect(bomb.length).toBeLessThan(200 * 1024);
    expect(() => decompressBody(bomb, encoding, 1024 * 1024)).toThrow(BodyTooLargeError);
  });

  it('rejects an identity body over maxBytes and accepts one exactly at the limit', () => {
    expect(() => decompressBody(Buffer.alloc(101), undefined, 100)).toThrow(BodyTooLargeError);
    expect(decompressBody(Buffer.alloc(100), undefined, 100).length).toBe(100);
    expect(decompressBody(zlib.gzipSync(Buffer.alloc(100)), 'gzip', 100).length).toBe(100);
  });

  it('throws SentryParseError on corrupt or truncated data and on unknown encodings', () => {
    expect(() => decompressBody(Buffer.from('definitely not gzip'), 'gzip', MAX)).toThrow(SentryParseError);
    expect(() => decompressBody(zlib.gzipSync(plain).subarray(0, 40), 'gzip', MAX)).toThrow(SentryParseError);
    expect(() => decompressBody(Buffer.from('garbage!'), 'br', MAX)).toThrow(SentryParseError);
    expect(() => decompressBody(Buffer.from('garbage!'), 'deflate', MAX)).toThrow(SentryParseError);
    expect(() => decompressBody(plain, 'zstd', MAX)).toThrow(UnsupportedEncodingError);
    expect(() => decompressBody(plain, 'zstd', MAX)).toThrow(SentryParseError);
    expect(() => decompressBody(Buffer.from('garbage!'), 'gzip', MAX)).not.toThrow(BodyTooLargeError);
  });
});

// ---------------------------------------------------------------------------------------------------------
// auth

describe('auth', () => {
  it('parses X-Sentry-Auth headers', () => {
    expect(parseSentryAuth('Sentry sentry_key=abc123, sentry_version=7, sentry_client=sentry.python/2.19.0')).toEqual({
      sentry_key: 'abc123',
      sentry_version: '7',
      sentry_client: 'sentry.python/2.19.0',
    });
    expect(parseSentryAuth('sentry sentry_version=7,sentry_timestamp=1700000000,sentry_key=k1,sentry_secret=s1')).toEqual({
      sentry_version: '7',
      sentry_key: 'k1',
      sentry_secret: 's1',
    });
    expect(parseSentryAuth('sentry_key=bare')).toEqual({ sentry_key: 'bare' });
    expect(parseSentryAuth('DSN https://dsnkey@o1.ingest.example.com/5')).toEqual({ sentry_key: 'dsnkey' });
    expect(parseSentryAuth(undefined)).toEqual({});
    expect(parseSentryAuth('Bearer xyz')).toEqual({});
  });

  it('parses query-string auth', () => {
    expect(parseSentryAuthQuery('?sentry_version=7&sentry_key=q1&sentry_client=sentry.javascript.browser%2F10.0.0')).toEqual({
      sentry_version: '7',
      sentry_key: 'q1',
      sentry_client: 'sentry.javascript.browser/10.0.0',
    });
    expect(parseSentryAuthQuery({ sentry_key: ['q2', 'q3'] })).toEqual({ sentry_key: 'q2' });
    expect(parseSentryAuthQuery(undefined)).toEqual({});
  });

  it('extracts the public key from DSNs', () => {
    expect(keyFromDsn('http://abc123@127.0.0.1:4000/ingest/42')).toBe('abc123');
    expect(keyFromDsn('https://pub:secret@o1.ingest.sentry.io/42')).toBe('pub');
    expect(keyFromDsn('https://o1.ingest.sentry.io/42')).toBeUndefined();
    expect(keyFromDsn('not a dsn')).toBeUndefined();
    expect(keyFromDsn(undefined)).toBeUndefined();
  });

  it('resolves the key header first, then query, then envelope dsn', () => {
    const all = { authHeader: 'Sentry sentry_key=h', query: 'sentry_key=q', envelopeDsn: 'http://d@x/1' };
    expect(resolveSentryKey(all)).toBe('h');
    expect(resolveSentryKey({ ...all, authHeader: undefined })).toBe('q');
    expect(resolveSentryKey({ ...all, authHeader: undefined, query: '' })).toBe('d');
    expect(resolveSentryKey({ authorization: 'Sentry sentry_key=a' })).toBe('a');
    expect(resolveSentryKey({ authorization: 'Bearer token' })).toBeUndefined();
    expect(resolveSentryKey({})).toBeUndefined();
  });
});
