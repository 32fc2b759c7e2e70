import { describe, expect, it } from 'vitest';
import { z } from 'zod';
import { catalogue } from '../../operations/index.js';
import { toJsonSchema } from '../../src/core/json-schema.js';
import { exampleCall, jsLiteral, jsonSchemaToTs, operationSignature } from '../../src/mcp/signatures.js';

const ts = (schema: z.ZodType, opts = {}) => jsonSchemaToTs(toJsonSchema(schema, 'input'), opts);

describe('TypeScript signatures from zod schemas', () => {
  it('prints optional fields, string-literal unions, ranges and defaults', () => {
    const s = z.object({
      project_id: z.string(),
      status: z.enum(['unresolved', 'resolved']).optional(),
      limit: z.number().int().min(1).max(100).default(50),
    });
    expect(ts(s, { optionalFields: ['project_id'] })).toBe(
      '{ project_id?: string; status?: "unresolved" | "resolved"; limit?: number /* 1..100; default 50 */ }',
    );
  });

  it('prints nullable values, arrays of unions, records and nested objects', () => {
    const s = z.object({
      a: z.string().nullable(),
      b: z.array(z.enum(['x', 'y'])),
      c: z.record(z.string(), z.number()),
      d: z.object({ e: z.boolean() }),
      'odd-key': z.literal(3),
    });
    expect(ts(s)).toBe('{ a: string | null; b: ("x" | "y")[]; c: Record<string, number>; d: { e: boolean }; "odd-key": 3 }');
  });

  it('collapses objects below the depth limit', () => {
    const s = z.object({ a: z.object({ b: z.object({ c: z.object({ d: z.string() }) }) }) });
    expect(ts(s, { maxDepth: 2 })).toBe('{ a: { b: { … } } }');
  });

  it('shrinks depth to stay under the length limit', () => {
    const wide = z.object(Object.fromEntries(Array.from({ length: 30 }, (_, i) => [`field_${i}`, z.object({ inner_value: z.string() })])));
    const text = ts(wide, { maxDepth: 3, maxLength: 600 });
    expect(text).toContain('field_0: { … }');
  });

  it('gives every catalogue operation a compact input and output signature', () => {
    for (const op of catalogue) {
      const sig = operationSignature(op);
      expect(sig.input.startsWith('{'), op.operationId).toBe(true);
      expect(sig.input.length, op.operationId).toBeLessThanOrEqual(2200);
      expect(sig.output.length, op.operationId).toBeLessThanOrEqual(1600);
      if ('project_id' in op.input.shape) expect(sig.input, op.operationId).toContain('project_id?: string');
    }
  });
});

describe('example calls', () => {
  it('come from the descriptor example, without project_id', () => {
    const op = catalogue.find((o) => o.operationId === 'feedback.list')!;
    expect(exampleCall(op)).toBe('await api.feedback.list({ status: "new", limit: 20 })');
  });

  it('fall back to placeholders for required fields', () => {
    const op = catalogue.find((o) => o.operationId === 'feedback.get')!;
    expect(exampleCall({ ...op, example: undefined })).toBe('await api.feedback.get({ feedback_id: "<feedback_id>" })');
  });

  it('print JavaScript object literals the way agents write them', () => {
    expect(jsLiteral({ a: 1, 'b-c': [true, null], d: { e: 'x' } })).toBe('{ a: 1, "b-c": [true, null], d: { e: "x" } }');
    expect(jsLiteral({})).toBe('{}');
  });
});
