import { beforeAll, describe, expect, it } from 'vitest';
import { decodeLogs, OtlpDecodeError, type OtlpEncoding } from '../../../src/ingest/otlp/decode.js';
import { ExportLogsServiceRequest } from '../../../src/ingest/otlp/schema.js';
import type { LogRecordOut } from '../../../src/domain/telemetry-types.js';
import { LOG_SPAN_CONTEXT, RESOURCE_ATTRS, buildLogsFixture, hrToMs, type LogsFixture } from './fixtures.js';

const within1ms = (actual: number, expected: number) => expect(Math.abs(actual - expected)).toBeLessThan(1);

let fx: LogsFixture;
beforeAll(async () => {
  fx = await buildLogsFixture();
});

describe.each<OtlpEncoding>(['protobuf', 'json'])('decodeLogs(%s) of OpenTelemetry JS SDK payloads', (enc) => {
  const decode = () => decodeLogs(enc === 'protobuf' ? fx.protobuf : fx.json, enc);

  it('keeps all records with the recorded fields', () => {
    const r = decode();
    expect(r.rejected).toBe(0);
    expect(r.rejectionMessage).toBe('');
    expect(r.records).toHaveLength(3);
    r.records.forEach((rec, i) => {
      const sdk = fx.logs[i];
      within1ms(rec.time_ms, hrToMs(sdk.hrTime));
      within1ms(rec.observed_time_ms, hrToMs(sdk.hrTimeObserved));
      expect(rec.severity_number).toBe(sdk.severityNumber ?? 0);
      expect(rec.severity_text).toBe(sdk.severityText ?? '');
      expect(rec.attributes).toEqual(sdk.attributes);
      expect(rec.event_name).toBe(sdk.eventName ?? '');
      expect(rec.resource).toEqual(sdk.resource.attributes);
      expect(rec.service_name).toBe('checkout');
      expect(rec.scope).toEqual({ name: 'app-logger', version: '2.0.0', attributes: {} });
    });
  });

  it('decodes bodies, severities, span context and event names', () => {
    const [a, b, c] = decode().records;
    within1ms(a.time_ms, 1_700_000_500_000.25);
    expect(a).toMatchObject<Partial<LogRecordOut>>({
      severity_number: 17,
      severity_text: 'ERROR',
      body: 'payment failed for order 17',
      attributes: { 'order.id': 17, retryable: false, amount: 12.5, tags: ['a', 'b'] },
      trace_id: LOG_SPAN_CONTEXT.traceId,
      span_id: LOG_SPAN_CONTEXT.spanId,
      flags: 1,
      event_name: '',
    });
    expect(b).toMatchObject<Partial<LogRecordOut>>({
      severity_number: 9,
      severity_text: 'INFO',
      event_name: 'user.login',
      trace_id: null,
      span_id: null,
      flags: 0,
      body: {
        user: 'ana',
        attempts: 3,
        ok: true,
        ratio: 0.5,
        nested: { list: [1, 'two', false] },
        raw: Buffer.from([0, 1, 254, 255]).toString('base64'),
      },
    });
    expect(c).toMatchObject<Partial<LogRecordOut>>({ severity_number: 0, severity_text: '', body: null, attributes: {} });
    expect(a.resource).toMatchObject(RESOURCE_ATTRS);
  });
});

describe('decodeLogs: protobuf and JSON agree', () => {
  it('produces the same records (times within 1 µs)', () => {
    const pb = decodeLogs(fx.protobuf, 'protobuf').records;
    const js = decodeLogs(fx.json, 'json').records;
    const strip = (l: LogRecordOut) => ({ ...l, time_ms: 0, observed_time_ms: 0 });
    expect(js.map(strip)).toEqual(pb.map(strip));
    js.forEach((l, i) => expect(Math.abs(l.time_ms - pb[i].time_ms)).toBeLessThan(0.001));
  });
});

const json = (v: unknown) => Buffer.from(JSON.stringify(v));
const logsReq = (logRecords: unknown[]) => ({ resourceLogs: [{ scopeLogs: [{ logRecords }] }] });

describe('decodeLogs: time fallbacks and hand-built payloads', () => {
  it('uses observed time when time is 0, and now when both are 0 (JSON)', () => {
    const before = Date.now();
    const r = decodeLogs(
      json(
        logsReq([
          { timeUnixNano: '0', observedTimeUnixNano: '1700000000500000000', body: { stringValue: 'observed only' } },
          { body: { stringValue: 'no times' } },
          { timeUnixNano: 1700000000100000000, observedTimeUnixNano: '1700000000200000000' },
        ]),
      ),
      'json',
    );
    const after = Date.now();
    const [a, b, c] = r.records;
    expect(a.time_ms).toBe(1_700_000_000_500);
    expect(a.observed_time_ms).toBe(1_700_000_000_500);
    expect(b.time_ms).toBeGreaterThanOrEqual(before);
    expect(b.time_ms).toBeLessThanOrEqual(after);
    expect(b.observed_time_ms).toBe(b.time_ms);
    within1ms(c.time_ms, 1_700_000_000_100);
    expect(c.observed_time_ms).toBe(1_700_000_000_200);
    expect(a.service_name).toBe('');
    expect(a.scope).toEqual({ name: '', version: '', attributes: {} });
  });

  it('accepts enum names, snake_case, and turns bad or empty ids into null', () => {
    const r = decodeLogs(
      json({
        resource_logs: [
          {
            resource: { attributes: [{ key: 'service.name', value: { stringValue: 'worker' } }] },
            scope_logs: [
              {
                scope: { name: 'w', version: '1' },
                log_records: [
                  {
                    time_unix_nano: '1700000000000000001',
                    severity_number: 'SEVERITY_NUMBER_WARN',
                    severity_text: 'WARN',
                    trace_id: '4BF92F3577B34DA6A3CE929D0E0E4736',
                    span_id: '00f067aa0ba902b7',
                    event_name: 'job.retry',
                    flags: 1,
                    body: { kvlist_value: { values: [{ key: 'n', value: { int_value: '3' } }] } },
                  },
                  { timeUnixNano: '1', traceId: '', spanId: '', severityNumber: 5 },
                  { timeUnixNano: '1', traceId: 'abcd', spanId: '0000000000000000' },
                ],
              },
            ],
          },
        ],
      }),
      'json',
    );
    const [a, b, c] = r.records;
    expect(a).toMatchObject({
      service_name: 'worker',
      severity_number: 13,
      severity_text: 'WARN',
      trace_id: '4bf92f3577b34da6a3ce929d0e0e4736',
      span_id: '00f067aa0ba902b7',
      event_name: 'job.retry',
      flags: 1,
      body: { n: 3 },
    });
    expect([b.trace_id, b.span_id, b.severity_number]).toEqual([null, null, 5]);
    expect([c.trace_id, c.span_id]).toEqual([null, null]);
  });

  it('decodes protobuf event_name (field 12), empty ids as null, and the time fallbacks', () => {
    const body = Buffer.from(
      ExportLogsServiceRequest.encode(
        ExportLogsServiceRequest.fromObject({
          resourceLogs: [
            {
              scopeLogs: [
                {
                  logRecords: [
                    { timeUnixNano: '1700000000250000000', eventName: 'browser.click', body: { stringValue: 'clicked' } },
                    { observedTimeUnixNano: '1700000000750000000', traceId: Buffer.alloc(0), spanId: Buffer.alloc(0) },
                  ],
                },
              ],
            },
          ],
        }),
      ).finish(),
    );
    const [a, b] = decodeLogs(body, 'protobuf').records;
    expect(a.event_name).toBe('browser.click');
    expect(a.time_ms).toBe(1_700_000_000_250);
    expect(a.body).toBe('clicked');
    expect(b.time_ms).toBe(1_700_000_000_750);
    expect(b.event_name).toBe('');
    expect([b.trace_id, b.span_id, b.body]).toEqual([null, null, null]);
  });

  it('throws OtlpDecodeError on undecodable bodies', () => {
    expect(() => decodeLogs(Buffer.from('{"resourceLogs":'), 'json')).toThrow(OtlpDecodeError);
    expect(() => decodeLogs(Buffer.from('[1,2]'), 'json')).toThrow(OtlpDecodeError);
    expect(() => decodeLogs(Buffer.from([0xff, 0xff, 0xff, 0xff, 0x0f]), 'protobuf')).toThrow(OtlpDecodeError);
    expect(() => decodeLogs(fx.protobuf.subarray(0, 40), 'protobuf')).toThrow(OtlpDecodeError);
  });
});
