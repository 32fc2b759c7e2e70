import { z } from 'zod';

export type JsonSchema = Record<string, unknown>;

/** JSON Schema (2020-12, as OpenAPI 3.1 uses) of a zod schema, without the $schema marker. */
export function toJsonSchema(schema: z.ZodType, io: 'input' | 'output' = 'input'): JsonSchema {
  const js = z.toJSONSchema(schema, { io, unrepresentable: 'any', target: 'draft-2020-12' }) as JsonSchema;
  delete js.$schema;
  return js;
}

/** JSON Schema of a subset of an object's fields (path, query or body). */
export function pickSchema(obj: z.ZodObject, keys: string[], io: 'input' | 'output' = 'input'): JsonSchema {
  const picked = Object.fromEntries(keys.map((k) => [k, true])) as Record<string, true>;
  return toJsonSchema(obj.pick(picked), io);
}
