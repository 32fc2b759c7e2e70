import { beforeAll, describe, expect, it } from 'vitest';
import { SpanKind, type Attributes as OtelAttributes } from '@opentelemetry/api';
import type { ReadableSpan } from '@opentelemetry/sdk-trace-base';
import { decodeTraces, OtlpDecodeError, type OtlpEncoding } from '../../../src/ingest/otlp/decode.js';
import { ExportTraceServiceRequest } from '../../../src/ingest/otlp/schema.js';
import type { SpanRecord } from '../../../src/domain/telemetry-types.js';
import { ALL_TYPES_ATTRS, REMOTE_PARENT, RESOURCE_ATTRS, buildSpanBatch, buildTraceFixture, hrToMs, type TraceFixture } from './fixtures.js';

const within1ms = (actual: number, expected: number) => expect(Math.abs(actual - expected)).toBeLessThan(1);
const OTLP_KIND: Record<SpanKind, number> = {
  [SpanKind.INTERNAL]: 1,
  [SpanKind.SERVER]: 2,
  [SpanKind.CLIENT]: 3,
  [SpanKind.PRODUCER]: 4,
  [SpanKind.CONSUMER]: 5,
};

let fx: TraceFixture;
beforeAll(async () => {
  fx = await buildTraceFixture();
});

function byName(records: SpanRecord[], name: string): SpanRecord {
  const r = records.find((x) => x.name === name);
  if (!r) throw new Error(`no span ${name}`);
  return r;
}
function sdkSpan(name: string): ReadableSpan {
  const s = fx.spans.find((x) => x.name === name);
  if (!s) throw new Error(`no sdk span ${name}`);
  return s;
}

describe.each<OtlpEncoding>(['protobuf', 'json'])('decodeTraces(%s) of OpenTelemetry JS SDK payloads', (enc) => {
  const decode = () => decodeTraces(enc === 'protobuf' ? fx.protobuf : fx.json, enc);

  it('keeps every span, rejects nothing', () => {
    const r = decode();
    expect(r.rejected).toBe(0);
    expect(r.rejectionMessage).toBe('');
    expect(r.records).toHaveLength(fx.spans.length);
    expect(r.records.map((s) => s.name).sort()).toEqual(fx.spans.map((s) => s.name).sort());
  });

  it('matches every recorded field of each span', () => {
    const r = decode();
    for (const sdk of fx.spans) {
      const rec = byName(r.records, sdk.name);
      const ctx = sdk.spanContext();
      expect(rec.trace_id).toBe(ctx.traceId);
      expect(rec.span_id).toBe(ctx.spanId);
      expect(rec.trace_id).toMatch(/^[0-9a-f]{32}$/);
      expect(rec.span_id).toMatch(/^[0-9a-f]{16}$/);
      expect(rec.parent_span_id).toBe(sdk.parentSpanContext?.spanId ?? null);
      expect(rec.trace_state).toBe(ctx.traceState?.serialize() ?? '');
      expect(rec.kind).toBe(OTLP_KIND[sdk.kind]);
      within1ms(rec.start_ms, hrToMs(sdk.startTime));
      within1ms(rec.end_ms, hrToMs(sdk.endTime));
      expect(rec.status_code).toBe(sdk.status.code);
      expect(rec.status_message).toBe(sdk.status.message ?? '');
      expect(rec.attributes).toEqual(sdk.attributes);
      expect(rec.events).toHaveLength(sdk.events.length);
      sdk.events.forEach((ev, i) => {
        expect(rec.events[i].name).toBe(ev.name);
        expect(rec.events[i].attributes).toEqual(ev.attributes ?? {});
        within1ms(rec.events[i].time_ms, hrToMs(ev.time));
      });
      expect(rec.links).toEqual(
        sdk.links.map((l) => ({
          trace_id: l.context.traceId,
          span_id: l.context.spanId,
          trace_state: l.context.traceState?.serialize() ?? '',
          attributes: (l.attributes ?? {}) as OtelAttributes,
        })),
      );
      expect(rec.resource).toEqual(sdk.resource.attributes);
      expect(rec.service_name).toBe('checkout');
      expect(rec.scope).toEqual({ name: 'checkout-lib', version: '1.4.2', attributes: {} });
    }
  });

  it('decodes the concrete values recorded by the fixture', () => {
    const r = decode();
    const root = byName(r.records, 'POST /checkout');
    expect(root.kind).toBe(2);
    expect(root.status_code).toBe(2);
    expect(root.status_message).toBe('payment failed');
    expect(root.parent_span_id).toBeNull();
    expect(root.attributes).toEqual(ALL_TYPES_ATTRS);
    expect(typeof root.attributes.int).toBe('number');
    expect(root.events.map((e) => e.name)).toEqual(['cache.miss', 'exception']);
    expect(root.events[0].attributes).toEqual({ 'cache.key': 'cart:1', 'cache.ttl': 30 });
    within1ms(root.start_ms, 1_700_000_000_123.456);
    within1ms(root.events[0].time_ms, 1_700_000_000_124.956);
    expect(root.end_ms - root.start_ms).toBeCloseTo(30.75, 3);
    expect(root.resource).toMatchObject(RESOURCE_ATTRS);

    const child = byName(r.records, 'GET payments');
    expect(child.kind).toBe(3);
    expect(child.parent_span_id).toBe(root.span_id);
    expect(child.trace_id).toBe(root.trace_id);
    expect(child.status_code).toBe(1);
    const other = byName(r.records, 'background');
    expect(child.links).toEqual([
      { trace_id: other.trace_id, span_id: other.span_id, trace_state: '', attributes: { 'link.reason': 'triggered-by', 'link.n': 2 } },
    ]);

    const remote = byName(r.records, 'consume order');
    expect(remote.kind).toBe(4);
    expect(remote.trace_id).toBe(REMOTE_PARENT.traceId);
    expect(remote.parent_span_id).toBe(REMOTE_PARENT.spanId);
    expect(remote.trace_state).toBe(REMOTE_PARENT.traceState);
  });
});

describe('decodeTraces: protobuf and JSON agree', () => {
  it('produces the same records from both encodings (times within 1 µs)', () => {
    const pb = decodeTraces(fx.protobuf, 'protobuf').records;
    const js = decodeTraces(fx.json, 'json').records;
    const strip = (s: SpanRecord) => ({ ...s, start_ms: 0, end_ms: 0, events: s.events.map((e) => ({ ...e, time_ms: 0 })) });
    expect(js.map(strip)).toEqual(pb.map(strip));
    js.forEach((s, i) => {
      expect(Math.abs(s.start_ms - pb[i].start_ms)).toBeLessThan(0.001);
      expect(Math.abs(s.end_ms - pb[i].end_ms)).toBeLessThan(0.001);
    });
  });
});

// ------------------------------------------------------------------------------------------------
// Hand-built payloads
// ------------------------------------------------------------------------------------------------

const TRACE = '5b8efff798038103d269b633813fc60c';
const SPAN = 'eee19b7ec3c1b174';
const json = (v: unknown) => Buffer.from(JSON.stringify(v));
const spanReq = (spans: unknown[], resourceAttrs: unknown[] = []) => ({
  resourceSpans: [{ resource: { attributes: resourceAttrs }, scopeSpans: [{ scope: { name: 's' }, spans }] }],
});

describe('decodeTraces: hand-built OTLP/JSON', () => {
  it('accepts int64 times as strings and as numbers, enum names, and ignores unknown fields', () => {
    const body = json({
      someFutureField: { x: 1 },
      resourceSpans: [
        {
          resource: { attributes: [{ key: 'service.name', value: { stringValue: 'api' } }], futureThing: true },
          scopeSpans: [
            {
              scope: { name: 'lib', version: '9', attributes: [{ key: 'scope.attr', value: { boolValue: true } }] },
              spans: [
                {
                  traceId: TRACE.toUpperCase(),
                  spanId: SPAN,
                  name: 'a',
                  kind: 'SPAN_KIND_SERVER',
                  startTimeUnixNano: '1700000000123456789',
                  endTimeUnixNano: 1700000000223456789,
                  status: { code: 'STATUS_CODE_ERROR', message: 'bad' },
                  unknownSpanField: [1, 2, 3],
                },
              ],
            },
          ],
        },
      ],
    });
    const r = decodeTraces(body, 'json');
    expect(r.rejected).toBe(0);
    expect(r.records).toHaveLength(1);
    const s = r.records[0];
    expect(s.trace_id).toBe(TRACE);
    expect(s.kind).toBe(2);
    expect(s.status_code).toBe(2);
    expect(s.status_message).toBe('bad');
    expect(s.start_ms).toBeCloseTo(1_700_000_000_123.456789, 6);
    within1ms(s.end_ms, 1_700_000_000_223.456789);
    expect(s.service_name).toBe('api');
    expect(s.scope).toEqual({ name: 'lib', version: '9', attributes: { 'scope.attr': true } });
    expect(s.parent_span_id).toBeNull();
    expect(s.events).toEqual([]);
    expect(s.links).toEqual([]);
  });

  it('accepts snake_case field names', () => {
    const body = json({
      resource_spans: [
        {
          scope_spans: [
            {
              spans: [
                {
                  trace_id: TRACE,
                  span_id: SPAN,
                  parent_span_id: 'aaaaaaaaaaaaaaaa',
                  trace_state: 'k=v',
                  name: 'snake',
                  start_time_unix_nano: '1000000',
                  end_time_unix_nano: '2000000',
                  attributes: [{ key: 'n', value: { int_value: '5' } }],
                },
              ],
            },
          ],
        },
      ],
    });
    const [s] = decodeTraces(body, 'json').records;
    expect(s).toMatchObject({ parent_span_id: 'aaaaaaaaaaaaaaaa', trace_state: 'k=v', start_ms: 1, end_ms: 2, attributes: { n: 5 } });
    expect(s.service_name).toBe('');
  });

  it('converts every AnyValue kind', () => {
    const attrs = [
      { key: 's', value: { stringValue: 'x' } },
      { key: 'i.str', value: { intValue: '42' } },
      { key: 'i.num', value: { intValue: -7 } },
      { key: 'i.big', value: { intValue: '9007199254740993' } },
      { key: 'd', value: { doubleValue: 2.5 } },
      { key: 'd.nan', value: { doubleValue: 'NaN' } },
      { key: 'b', value: { boolValue: false } },
      { key: 'arr', value: { arrayValue: { values: [{ stringValue: 'a' }, { intValue: '1' }, { arrayValue: {} }] } } },
      { key: 'kv', value: { kvlistValue: { values: [{ key: 'inner', value: { boolValue: true } }] } } },
      { key: 'bytes', value: { bytesValue: 'AAEC/w==' } },
      { key: 'empty', value: {} },
      { key: '__proto__', value: { stringValue: 'not a prototype' } },
    ];
    const [s] = decodeTraces(json(spanReq([{ traceId: TRACE, spanId: SPAN, name: 'x', attributes: attrs }])), 'json').records;
    expect(s.attributes.s).toBe('x');
    expect(s.attributes['i.str']).toBe(42);
    expect(s.attributes['i.num']).toBe(-7);
    expect(s.attributes['i.big']).toBe('9007199254740993');
    expect(s.attributes.d).toBe(2.5);
    expect(s.attributes['d.nan']).toBeNaN();
    expect(s.attributes.b).toBe(false);
    expect(s.attributes.arr).toEqual(['a', 1, []]);
    expect(s.attributes.kv).toEqual({ inner: true });
    expect(s.attributes.bytes).toBe('AAEC/w==');
    expect(s.attributes.empty).toBeNull();
    expect(Object.getPrototypeOf(s.attributes)).toBe(Object.prototype);
    expect(Object.getOwnPropertyDescriptor(s.attributes, '__proto__')?.value).toBe('not a prototype');
  });

  it('rejects spans with bad ids (partial success) and keeps the valid ones', () => {
    const body = json(
      spanReq([
        { traceId: TRACE, spanId: SPAN, name: 'ok-1' },
        { traceId: TRACE, spanId: 'abc', name: 'short-span-id' },
        { traceId: TRACE, spanId: '0000000000000000', name: 'zero-span-id' },
        { traceId: '00000000000000000000000000000000', spanId: SPAN, name: 'zero-trace-id' },
        { traceId: 'zz8efff798038103d269b633813fc60c', spanId: SPAN, name: 'non-hex-trace-id' },
        { spanId: SPAN, name: 'missing-trace-id' },
        { traceId: TRACE, spanId: SPAN, parentSpanId: '1234', name: 'bad-parent' },
        'not an object',
        { traceId: TRACE, spanId: 'a1a2a3a4a5a6a7a8', name: 'ok-2', parentSpanId: '' },
      ]),
    );
    const r = decodeTraces(body, 'json');
    expect(r.records.map((s) => s.name)).toEqual(['ok-1', 'ok-2']);
    expect(r.records[1].parent_span_id).toBeNull();
    expect(r.rejected).toBe(7);
    expect(r.rejectionMessage).toMatch(/^rejected 7 spans: /);
    expect(r.rejectionMessage).toContain('invalid span_id: must be 8 bytes (16 hex chars), not all zero (2)');
    expect(r.rejectionMessage).toContain('invalid trace_id: must be 16 bytes (32 hex chars), not all zero (3)');
    expect(r.rejectionMessage).toContain('invalid parent_span_id: must be empty or 8 bytes (16 hex chars) (1)');
    expect(r.rejectionMessage).toContain('item is not a JSON object (1)');
  });

  it('returns no records for an empty request object', () => {
    expect(decodeTraces(json({}), 'json')).toEqual({ records: [], rejected: 0, rejectionMessage: '' });
    expect(decodeTraces(json({ resourceSpans: [] }), 'json').records).toEqual([]);
  });

  it('throws OtlpDecodeError for bodies that are not an OTLP/JSON object', () => {
    for (const bad of ['{"resourceSpans": [', '', 'null', '[]', '42', '"x"', '\u0000\u0001garbage']) {
      expect(() => decodeTraces(Buffer.from(bad), 'json'), JSON.stringify(bad)).toThrow(OtlpDecodeError);
    }
  });
});

describe('decodeTraces: hand-built protobuf', () => {
  const pb = (obj: object) => Buffer.from(ExportTraceServiceRequest.encode(ExportTraceServiceRequest.fromObject(obj)).finish());
  const id = (hex: string) => Buffer.from(hex, 'hex');

  it('rejects spans with wrong-length or all-zero ids and keeps valid ones', () => {
    const body = pb({
      resourceSpans: [
        {
          resource: { attributes: [{ key: 'service.name', value: { stringValue: 'svc' } }] },
          scopeSpans: [
            {
              spans: [
                { traceId: id(TRACE), spanId: id(SPAN), name: 'ok', parentSpanId: Buffer.alloc(8) },
                { traceId: id(TRACE).subarray(0, 8), spanId: id(SPAN), name: 'short-trace' },
                { traceId: id(TRACE), spanId: Buffer.alloc(8), name: 'zero-span' },
                { traceId: id(TRACE), name: 'no-span-id' },
                { traceId: id(TRACE), spanId: id(SPAN), parentSpanId: id('abcd'), name: 'bad-parent' },
              ],
            },
          ],
        },
      ],
    });
    const r = decodeTraces(body, 'protobuf');
    expect(r.records.map((s) => s.name)).toEqual(['ok']);
    expect(r.records[0].parent_span_id).toBeNull(); // all-zero parent = root
    expect(r.records[0].start_ms).toBe(0);
    expect(r.rejected).toBe(4);
    expect(r.rejectionMessage).toContain('rejected 4 spans');
  });

  it('keeps int64 attributes beyond 2^53 as decimal strings', () => {
    const body = pb({
      resourceSpans: [
        {
          scopeSpans: [
            {
              spans: [
                {
                  traceId: id(TRACE),
                  spanId: id(SPAN),
                  attributes: [
                    { key: 'big', value: { intValue: '9223372036854775807' } },
                    { key: 'neg', value: { intValue: '-9007199254740993' } },
                    { key: 'small', value: { intValue: -12 } },
                    { key: 'bytes', value: { bytesValue: Buffer.from([0, 1, 2, 255]) } },
                    { key: 'empty.str', value: { stringValue: '' } },
                    { key: 'unset', value: {} },
                  ],
                },
              ],
            },
          ],
        },
      ],
    });
    const [s] = decodeTraces(body, 'protobuf').records;
    expect(s.attributes).toEqual({
      big: '9223372036854775807',
      neg: '-9007199254740993',
      small: -12,
      bytes: 'AAEC/w==',
      'empty.str': '',
      unset: null,
    });
  });

  it('throws OtlpDecodeError (not another error, not silent garbage) for random bytes', () => {
    let seed = 0x12345678;
    const rand = () => {
      seed ^= seed << 13;
      seed ^= seed >>> 17;
      seed ^= seed << 5;
      return (seed >>> 0) & 0xff;
    };
    for (let n = 0; n < 20; n++) {
      const body = Buffer.alloc(256 + n * 37);
      for (let i = 0; i < body.length; i++) body[i] = rand();
      expect(() => decodeTraces(body, 'protobuf')).toThrow(OtlpDecodeError);
    }
    // A truncated real payload and a length prefix pointing past the end.
    expect(() => decodeTraces(fx.protobuf.subarray(0, fx.protobuf.length - 7), 'protobuf')).toThrow(OtlpDecodeError);
    expect(() => decodeTraces(Buffer.from([0x0a, 0xff, 0x01, 0x00]), 'protobuf')).toThrow(OtlpDecodeError);
    // A JSON body sent as protobuf.
    expect(() => decodeTraces(fx.json, 'protobuf')).toThrow(OtlpDecodeError);
  });

  it('decodes an empty body as an empty request', () => {
    expect(decodeTraces(Buffer.alloc(0), 'protobuf')).toEqual({ records: [], rejected: 0, rejectionMessage: '' });
  });
});

describe('decodeTraces throughput (informational)', () => {
  it('decodes a 512-span protobuf batch', async () => {
    const body = await buildSpanBatch(512);
    for (let i = 0; i < 30; i++) decodeTraces(body, 'protobuf');
    // Best of several short rounds, in CPU time: the figure is informational and the box may be busy.
    let bestMs = Infinity;
    for (let round = 0; round < 8; round++) {
      const c0 = process.cpuUsage();
      for (let i = 0; i < 10; i++) decodeTraces(body, 'protobuf');
      const c = process.cpuUsage(c0);
      bestMs = Math.min(bestMs, (c.user + c.system) / 1000 / 10);
    }
    expect(decodeTraces(body, 'protobuf').records).toHaveLength(512);
    console.log(`[otlp] protobuf decode: ~${Math.round(512 / (bestMs / 1000)).toLocaleString('en-US')} spans/s (${bestMs.toFixed(2)} ms CPU per 512-span batch of ${body.length} B)`);
  });
});
