import { describe, expect, it } from 'vitest';
import {
  JsonLogsSerializer,
  JsonTraceSerializer,
  ProtobufLogsSerializer,
  ProtobufMetricsSerializer,
  ProtobufTraceSerializer,
} from '@opentelemetry/otlp-transformer';
import { encodeExportResponse, type OtlpSignal } from '../../../src/ingest/otlp/decode.js';
import {
  ExportLogsServiceResponse,
  ExportMetricsServiceResponse,
  ExportTraceServiceResponse,
} from '../../../src/ingest/otlp/schema.js';

const toPlain = (type: typeof ExportTraceServiceResponse, buf: Buffer) =>
  type.toObject(type.decode(buf), { longs: Number, defaults: false });

describe('encodeExportResponse (protobuf)', () => {
  const cases: [OtlpSignal, typeof ExportTraceServiceResponse, string][] = [
    ['traces', ExportTraceServiceResponse, 'rejectedSpans'],
    ['logs', ExportLogsServiceResponse, 'rejectedLogRecords'],
    ['metrics', ExportMetricsServiceResponse, 'rejectedDataPoints'],
  ];

  it.each(cases)('%s: partial_success round-trips through the schema', (signal, type, field) => {
    const buf = encodeExportResponse(signal, 'protobuf', 3, 'rejected 3: bad ids');
    expect(Buffer.isBuffer(buf)).toBe(true);
    expect(toPlain(type, buf)).toEqual({ partialSuccess: { [field]: 3, errorMessage: 'rejected 3: bad ids' } });
  });

  it.each(cases)('%s: nothing rejected → empty message body', (signal, type) => {
    const buf = encodeExportResponse(signal, 'protobuf', 0, 'ignored');
    expect(buf.length).toBe(0);
    expect(toPlain(type, buf)).toEqual({});
  });

  it('is readable by the OpenTelemetry JS exporters', () => {
    expect(ProtobufTraceSerializer.deserializeResponse(encodeExportResponse('traces', 'protobuf', 2, 'two bad spans'))).toEqual({
      partialSuccess: { rejectedSpans: 2, errorMessage: 'two bad spans' },
    });
    expect(ProtobufLogsSerializer.deserializeResponse(encodeExportResponse('logs', 'protobuf', 5, 'five'))).toEqual({
      partialSuccess: { rejectedLogRecords: 5, errorMessage: 'five' },
    });
    expect(ProtobufMetricsSerializer.deserializeResponse(encodeExportResponse('metrics', 'protobuf', 1, 'summary'))).toEqual({
      partialSuccess: { rejectedDataPoints: 1, errorMessage: 'summary' },
    });
    expect(ProtobufTraceSerializer.deserializeResponse(encodeExportResponse('traces', 'protobuf', 0, ''))).toEqual({});
  });

  it('encodes large counts and UTF-8 messages', () => {
    const buf = encodeExportResponse('traces', 'protobuf', 5_000_000_000, 'ünïcødé ✓');
    expect(toPlain(ExportTraceServiceResponse, buf)).toEqual({ partialSuccess: { rejectedSpans: 5_000_000_000, errorMessage: 'ünïcødé ✓' } });
  });
});

describe('encodeExportResponse (json)', () => {
  it('uses the OTLP/JSON shape with int64 as a string', () => {
    expect(JSON.parse(encodeExportResponse('traces', 'json', 2, 'bad "ids"').toString())).toEqual({
      partialSuccess: { rejectedSpans: '2', errorMessage: 'bad "ids"' },
    });
    expect(JSON.parse(encodeExportResponse('logs', 'json', 1, 'x').toString())).toEqual({
      partialSuccess: { rejectedLogRecords: '1', errorMessage: 'x' },
    });
    expect(JSON.parse(encodeExportResponse('metrics', 'json', 4, 'y').toString())).toEqual({
      partialSuccess: { rejectedDataPoints: '4', errorMessage: 'y' },
    });
  });

  it('is {} when nothing was rejected', () => {
    for (const s of ['traces', 'logs', 'metrics'] as const) expect(encodeExportResponse(s, 'json', 0, 'whatever').toString()).toBe('{}');
  });

  it('is readable by the OpenTelemetry JS exporters', () => {
    expect(JsonTraceSerializer.deserializeResponse(encodeExportResponse('traces', 'json', 2, 'm'))).toEqual({
      partialSuccess: { rejectedSpans: '2', errorMessage: 'm' },
    });
    expect(JsonLogsSerializer.deserializeResponse(encodeExportResponse('logs', 'json', 0, ''))).toEqual({});
  });
});
