/**
 * Compact TypeScript signatures of an operation's input and output, for MCP `search` results.
 *
 * Walks the JSON Schema that zod derives (`src/core/json-schema.ts`, the same schema OpenAPI shows)
 * and prints it as a TypeScript type an agent can read at a glance:
 *
 *   { project_id?: string; status?: ("new" | "reviewed" | "archived")[]; limit?: number /* 1..100, default 50 *\/ }
 *
 * Depth-limited and length-limited: deeper objects collapse to `{ … }`, so a hit stays small.
 */
import type { AnyOperation } from '../../operations/define.js';
import { toJsonSchema, type JsonSchema } from '../core/json-schema.js';

export interface SignatureOptions {
  /** Object nesting printed in full; deeper objects become `{ … }`. */
  maxDepth?: number;
  /** Above this many characters the signature is printed again with less depth. */
  maxLength?: number;
  /** Top-level fields shown as optional even when required (e.g. project_id, filled from the credential). */
  optionalFields?: readonly string[];
  /** Show short field descriptions as comments at the top level. */
  describeTopLevel?: boolean;
  /** Top-level arrays also accept a comma-separated string (query parameters of GET operations). */
  csvArrays?: boolean;
  /** Top-level fields left out (e.g. project_id, which every operation takes and the credential fills). */
  omitFields?: readonly string[];
  /** Longest top-level field description shown (default 90). */
  maxDescription?: number;
  /** Enums with more values than this print as their base type (`string`). Default: all values. */
  maxEnumValues?: number;
}

const SAFE_INT = 9007199254740991;
const IDENT = /^[A-Za-z_$][A-Za-z0-9_$]*$/;

interface Ctx {
  root: JsonSchema;
  maxDepth: number;
  opts: SignatureOptions;
  refs: Set<string>;
}

const asSchema = (v: unknown): JsonSchema => (v && typeof v === 'object' ? (v as JsonSchema) : {});

function key(name: string): string {
  return IDENT.test(name) ? name : JSON.stringify(name);
}

function resolveRef(ref: string, ctx: Ctx): JsonSchema | null {
  const m = /^#\/(\$defs|definitions)\/(.+)$/.exec(ref);
  if (!m) return null;
  const defs = asSchema(ctx.root[m[1]!]);
  return (defs[m[2]!] as JsonSchema | undefined) ?? null;
}

/** Range / default / format notes: `1..100, default 50`. */
function notes(s: JsonSchema): string[] {
  const out: string[] = [];
  const min = typeof s.minimum === 'number' && s.minimum > -SAFE_INT ? s.minimum : undefined;
  const max = typeof s.maximum === 'number' && s.maximum < SAFE_INT ? s.maximum : undefined;
  if (min !== undefined && max !== undefined) out.push(`${min}..${max}`);
  else if (min !== undefined) out.push(`≥ ${min}`);
  else if (max !== undefined) out.push(`≤ ${max}`);
  if (typeof s.format === 'string' && ['date-time', 'uuid', 'email', 'uri', 'url', 'date'].includes(s.format)) {
    out.push(s.format === 'date-time' ? 'ISO 8601' : s.format);
  }
  if (typeof s.maxLength === 'number' && s.type === 'string' && s.maxLength <= 64) out.push(`≤ ${s.maxLength} chars`);
  if ('default' in s && s.default !== undefined && (typeof s.default !== 'object' || s.default === null)) {
    out.push(`default ${JSON.stringify(s.default)}`);
  }
  return out;
}

function wrapUnion(t: string): string {
  return /[|&]/.test(t) && !/^\(.*\)$/.test(t) && !t.startsWith('{') ? `(${t})` : t;
}

function union(parts: string[]): string {
  const uniq = [...new Set(parts)];
  // `null` last reads better: `string | null`.
  uniq.sort((a, b) => (a === 'null' ? 1 : 0) - (b === 'null' ? 1 : 0));
  return uniq.join(' | ');
}

function typeOf(s: JsonSchema, depth: number, ctx: Ctx): string {
  if (typeof s.$ref === 'string') {
    const name = s.$ref.split('/').pop()!;
    if (ctx.refs.has(s.$ref)) return name;
    const target = resolveRef(s.$ref, ctx);
    if (!target) return 'unknown';
    ctx.refs.add(s.$ref);
    try {
      return typeOf(target, depth, ctx);
    } finally {
      ctx.refs.delete(s.$ref);
    }
  }
  if ('const' in s) return JSON.stringify(s.const);
  if (Array.isArray(s.enum)) {
    if (ctx.opts.maxEnumValues !== undefined && s.enum.length > ctx.opts.maxEnumValues) {
      return union([...new Set(s.enum.map((v) => (v === null ? 'null' : typeof v)))]);
    }
    return union(s.enum.map((v) => JSON.stringify(v)));
  }
  for (const k of ['anyOf', 'oneOf'] as const) {
    if (Array.isArray(s[k])) return union((s[k] as unknown[]).map((x) => typeOf(asSchema(x), depth, ctx)));
  }
  if (Array.isArray(s.allOf)) {
    const parts = (s.allOf as unknown[]).map((x) => typeOf(asSchema(x), depth, ctx));
    return parts.length === 1 ? parts[0]! : parts.map(wrapUnion).join(' & ');
  }
  if (Array.isArray(s.type)) return union(s.type.map((t) => typeOf({ ...s, type: t }, depth, ctx)));
  switch (s.type) {
    case 'string':
      return 'string';
    case 'integer':
    case 'number':
      return 'number';
    case 'boolean':
      return 'boolean';
    case 'null':
      return 'null';
    case 'array': {
      if (Array.isArray(s.prefixItems)) return `[${(s.prefixItems as unknown[]).map((x) => typeOf(asSchema(x), depth, ctx)).join(', ')}]`;
      return `${wrapUnion(typeOf(asSchema(s.items), depth, ctx))}[]`;
    }
    case 'object':
      return objectType(s, depth, ctx, false);
    default:
      if (s.properties) return objectType(s, depth, ctx, false);
      return 'unknown';
  }
}

function objectType(s: JsonSchema, depth: number, ctx: Ctx, top: boolean): string {
  const props = asSchema(s.properties) as Record<string, JsonSchema>;
  const names = Object.keys(props);
  const extra = s.additionalProperties;
  if (!names.length) {
    if (top) return '{}';
    if (extra && typeof extra === 'object') return `Record<string, ${typeOf(extra as JsonSchema, depth + 1, ctx)}>`;
    return extra === false ? '{}' : 'Record<string, unknown>';
  }
  if (depth >= ctx.maxDepth) return '{ … }';
  const required = new Set(Array.isArray(s.required) ? (s.required as string[]) : []);
  const shown = top && ctx.opts.omitFields ? names.filter((n) => !ctx.opts.omitFields!.includes(n)) : names;
  if (!shown.length) return '{}';
  const fields = shown.map((name) => {
    const fs = props[name]!;
    const optional = !required.has(name) || (top && ctx.opts.optionalFields?.includes(name));
    let t = typeOf(fs, depth + 1, ctx);
    if (top && ctx.opts.csvArrays && (fs.type === 'array' || t.endsWith('[]'))) t = `${t} | string`;
    const n = notes(fs);
    if (top && ctx.opts.describeTopLevel && typeof fs.description === 'string') {
      const d = fs.description.replace(/\s+/g, ' ').trim();
      // Range and default are already in the notes; short descriptions add the meaning.
      if (d.length <= (ctx.opts.maxDescription ?? 90) && !/^Page size|^Rows to skip/.test(d)) n.push(d.replace(/\*\//g, '* /'));
    }
    return `${key(name)}${optional ? '?' : ''}: ${t}${n.length ? ` /* ${n.join('; ')} */` : ''}`;
  });
  return `{ ${fields.join('; ')} }`;
}

/** TypeScript type text of a JSON Schema. */
export function jsonSchemaToTs(schema: JsonSchema, opts: SignatureOptions = {}): string {
  const maxLength = opts.maxLength ?? 1200;
  for (let depth = opts.maxDepth ?? 3; depth >= 1; depth--) {
    const ctx: Ctx = { root: schema, maxDepth: depth, opts, refs: new Set() };
    const isObject = schema.type === 'object' || !!schema.properties;
    const text = isObject ? objectType(schema, 0, ctx, true) : typeOf(schema, 0, ctx);
    if (text.length <= maxLength || depth === 1) return text;
  }
  return 'unknown';
}

export interface OperationSignature {
  input: string;
  output: string;
}

const cache = new WeakMap<AnyOperation, OperationSignature>();
const compactCache = new WeakMap<AnyOperation, OperationSignature>();
const fullCache = new WeakMap<AnyOperation, OperationSignature>();

/**
 * Signatures for a list of search hits: no project_id (the credential fills it; said once per
 * answer), no field descriptions (ranges and defaults kept), the output two levels deep.
 */
export function compactSignature(op: AnyOperation): OperationSignature {
  const hit = compactCache.get(op);
  if (hit) return hit;
  const sig = {
    input: jsonSchemaToTs(toJsonSchema(op.input, 'input'), {
      maxDepth: 2,
      maxLength: 700,
      omitFields: ['project_id'],
      csvArrays: op.method === 'GET',
    }),
    output: jsonSchemaToTs(toJsonSchema(op.output, 'output'), { maxDepth: 2, maxLength: 600, maxEnumValues: 3 }),
  };
  compactCache.set(op, sig);
  return sig;
}

const briefCache = new WeakMap<AnyOperation, string>();

/** The output one level deep (`{ data: { … }[]; total: number }`), for hits after the first. */
export function briefOutput(op: AnyOperation): string {
  const hit = briefCache.get(op);
  if (hit !== undefined) return hit;
  const out = jsonSchemaToTs(toJsonSchema(op.output, 'output'), { maxDepth: 1, maxLength: 300 });
  briefCache.set(op, out);
  return out;
}

const briefInputCache = new WeakMap<AnyOperation, string>();

/** Input field names only (`?` when optional, project_id left out), for hits after the first. */
export function briefInput(op: AnyOperation): string {
  const hit = briefInputCache.get(op);
  if (hit !== undefined) return hit;
  const js = toJsonSchema(op.input, 'input');
  const required = new Set(Array.isArray(js.required) ? (js.required as string[]) : []);
  const names = Object.keys((js.properties ?? {}) as Record<string, unknown>).filter((n) => n !== 'project_id');
  const out = names.length ? `{ ${names.map((n) => `${key(n)}${required.has(n) ? '' : '?'}`).join(', ')} }` : '{}';
  briefInputCache.set(op, out);
  return out;
}

/** Everything, never cut: every field with its description, every level of the output. */
export function fullSignature(op: AnyOperation): OperationSignature {
  const hit = fullCache.get(op);
  if (hit) return hit;
  const sig = {
    input: jsonSchemaToTs(toJsonSchema(op.input, 'input'), {
      maxDepth: 8,
      maxLength: Number.MAX_SAFE_INTEGER,
      optionalFields: ['project_id'],
      describeTopLevel: true,
      maxDescription: Number.MAX_SAFE_INTEGER,
      csvArrays: op.method === 'GET',
    }),
    output: jsonSchemaToTs(toJsonSchema(op.output, 'output'), { maxDepth: 8, maxLength: Number.MAX_SAFE_INTEGER }),
  };
  fullCache.set(op, sig);
  return sig;
}

/** Input and output signatures of an operation (cached: descriptors never change at runtime). */
export function operationSignature(op: AnyOperation): OperationSignature {
  const hit = cache.get(op);
  if (hit) return hit;
  const sig = {
    input: jsonSchemaToTs(toJsonSchema(op.input, 'input'), {
      maxDepth: 2,
      maxLength: 1600,
      optionalFields: ['project_id'],
      describeTopLevel: true,
      csvArrays: op.method === 'GET',
    }),
    output: jsonSchemaToTs(toJsonSchema(op.output, 'output'), { maxDepth: 3, maxLength: 1200 }),
  };
  cache.set(op, sig);
  return sig;
}

/** A JavaScript object literal in the style agents write: `{ status: "new", limit: 20 }`. */
export function jsLiteral(v: unknown): string {
  if (Array.isArray(v)) return `[${v.map(jsLiteral).join(', ')}]`;
  if (v && typeof v === 'object') {
    const entries = Object.entries(v as Record<string, unknown>);
    if (!entries.length) return '{}';
    return `{ ${entries.map(([k, x]) => `${key(k)}: ${jsLiteral(x)}`).join(', ')} }`;
  }
  return JSON.stringify(v) ?? 'undefined';
}

/** `await api.feedback.list({ status: "new", limit: 20 })` — from the descriptor's example, else its required fields. */
export function exampleCall(op: AnyOperation): string {
  const [tag, ...rest] = op.operationId.split('.');
  const verb = rest.join('.');
  let input: Record<string, unknown>;
  if (op.example) input = { ...op.example };
  else {
    const js = toJsonSchema(op.input, 'input');
    input = {};
    for (const k of (Array.isArray(js.required) ? (js.required as string[]) : [])) if (k !== 'project_id') input[k] = `<${k}>`;
  }
  delete input.project_id;
  const target = IDENT.test(tag!) && IDENT.test(verb) ? `api.${tag}.${verb}` : `api.call(${JSON.stringify(op.operationId)}, `;
  const args = jsLiteral(input);
  return target.startsWith('api.call') ? `await ${target}${args})` : `await ${target}(${args})`;
}
