/**
 * Property-based fuzzing of every operation's input (issue 10, "Deliver as well"): inputs drawn
 * from each operation's own zod schema (through its JSON Schema), then hostile mutations: unknown
 * fields, wrong types, 1 MB strings, deep nesting, control characters, prototype keys and invalid
 * UTF-8. Over real HTTP with a valid admin key, so validation and handlers are what is exercised.
 * Properties: no response ≥ 500; every 4xx in Shape A; a rejected request changes nothing (the
 * connection's total_changes() is the same before and after). A bounded number of runs per
 * operation keeps the file to seconds.
 */
import fc from 'fast-check';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { catalogue } from '../../operations/index.js';
import type { AnyOperation } from '../../operations/define.js';
import { fieldLocations } from '../../operations/define.js';
import { toJsonSchema, type JsonSchema } from '../../src/core/json-schema.js';
import { httpRequestFor, inputFor } from '../helpers/access-cases.js';
import { startTestServer, type TestServer } from '../helpers/server.js';

const RUNS_PER_OPERATION = 8;
const MB = 'x'.repeat(1024 * 1024);

let t: TestServer;
const stats = { requests: 0, rejected: 0, accepted: 0, byStatus: {} as Record<number, number> };
beforeAll(async () => {
  // The server's clock stands still: the key's last_used_at (written at most once a minute) and due
  // scheduler jobs (a created monitor's checks) would otherwise land during a later rejected request
  // when the run takes over a minute on a loaded machine, and count as that request's change.
  const frozen = Date.now();
  t = await startTestServer({ now: () => frozen, config: { rateLimit: { limit: 1_000_000, windowSeconds: 60 } } });
  // The key's last_used_at is written on first use: do it now so it is not counted as a change.
  await fetch(`${t.url}/v1/projects`, { headers: { 'x-service-key': t.keys.admin } });
});
afterAll(async () => {
  console.log(`fuzz: ${stats.requests} requests over ${catalogue.length} operations; ${stats.accepted} accepted, ${stats.rejected} rejected; by status ${JSON.stringify(stats.byStatus)}`);
  await t.close();
});

const changes = () => (t.s.db.prepare('SELECT total_changes() AS n').get() as { n: number }).n;

/** An arbitrary for a (simple) JSON Schema, as zod's toJSONSchema writes them. */
function arb(js: JsonSchema, depth = 0): fc.Arbitrary<unknown> {
  if ('const' in js) return fc.constant(js.const);
  if (Array.isArray(js.enum)) return fc.constantFrom(...(js.enum as unknown[]));
  if (Array.isArray(js.anyOf)) return fc.oneof(...(js.anyOf as JsonSchema[]).map((s) => arb(s, depth)));
  if (Array.isArray(js.oneOf)) return fc.oneof(...(js.oneOf as JsonSchema[]).map((s) => arb(s, depth)));
  const type = Array.isArray(js.type) ? js.type[0] : js.type;
  switch (type) {
    case 'string': {
      if (js.format === 'uuid') return fc.uuid();
      if (js.format === 'date-time') return fc.date({ min: new Date('2020-01-01'), max: new Date('2030-01-01'), noInvalidDate: true }).map((d) => d.toISOString());
      if (js.format === 'email') return fc.emailAddress();
      if (js.format === 'uri' || js.format === 'url') return fc.webUrl();
      return fc.string({ minLength: Number(js.minLength ?? 0), maxLength: Math.min(Number(js.maxLength ?? 40), 40) });
    }
    case 'integer':
      return fc.integer({ min: typeof js.minimum === 'number' ? js.minimum : -1000, max: typeof js.maximum === 'number' ? Math.min(js.maximum, 1e9) : 1e6 });
    case 'number':
      return fc.double({ noNaN: true, min: -1e6, max: 1e6 });
    case 'boolean':
      return fc.boolean();
    case 'array':
      return depth > 2 ? fc.constant([]) : fc.array(arb((js.items ?? {}) as JsonSchema, depth + 1), { maxLength: 3 });
    case 'object': {
      if (depth > 2) return fc.constant({});
      const props = (js.properties ?? {}) as Record<string, JsonSchema>;
      return fc.record(Object.fromEntries(Object.entries(props).map(([k, s]) => [k, arb(s, depth + 1)])), { requiredKeys: [] });
    }
    default:
      return fc.jsonValue({ maxDepth: 2 });
  }
}

/** Values of the wrong kind, or hostile ones, for any field. */
const hostileValue = fc.oneof(
  fc.constantFrom<unknown>(null, true, 0, -1, 1e308, [], {}, [[[]]], '', ' ', 'constructor', '__proto__', 'toString', 'hasOwnProperty', '\u0000', 'a\u0000b', '\u001b[31m', '\r\n', '\ud800', '%00', '../../etc/passwd', "' OR 1=1 --", '"*', 'NEAR(', '*'),
  fc.string({ unit: 'binary', maxLength: 20 }),
  fc.integer().map((n) => String(n)),
);

const PROTO_KEYS = ['__proto__', 'constructor', 'prototype'];

/** JSON nested `n` levels deep, as text (the test process could not stringify it either). */
const deepJson = (n: number) => '{"a":['.repeat(n) + '1' + ']}'.repeat(n);

interface Attempt {
  input: Record<string, unknown>;
  /** A raw body replacing the JSON one (invalid UTF-8). */
  rawBody?: Buffer;
  rawQuery?: string;
}

function mutations(op: AnyOperation, base: Record<string, unknown>): Attempt[] {
  const where = fieldLocations(op);
  const hasBody = where.body.length > 0;
  const fields = [...where.query, ...where.body];
  const big = hasBody ? MB : 'x'.repeat(8 * 1024); // a query string travels in the request head (16 KB)
  const out: Attempt[] = [
    { input: { ...base, zz_unknown_field: 1 } },
    { input: { ...base, [fields[0] ?? 'x']: big } },
  ];
  for (const f of fields) {
    out.push({ input: { ...base, [f]: { nested: true } } });
    out.push({ input: { ...base, [f]: 'a\u0000\u0001\u001f\u007fb' } });
    for (const k of ['constructor', '__proto__']) out.push({ input: { ...base, [f]: k } });
  }
  if (hasBody) {
    for (const k of PROTO_KEYS) {
      const body = JSON.stringify({ ...base, polluted: 1 }).replace('"polluted"', JSON.stringify(k));
      out.push({ input: base, rawBody: Buffer.from(body) });
    }
    const deepBody = JSON.stringify({ ...base, [where.body[0]!]: 'DEEP' }).replace('"DEEP"', deepJson(5000));
    out.push({ input: base, rawBody: Buffer.from(deepBody) });
    const json = Buffer.from(JSON.stringify({ ...base, [where.body[0]!]: 'XX' }));
    const i = json.indexOf('XX');
    json[i] = 0xc3;
    json[i + 1] = 0x28; // invalid UTF-8 sequence
    out.push({ input: base, rawBody: json });
  } else {
    out.push({ input: base, rawQuery: `${where.query[0] ?? 'q'}=%C3%28%FF` });
    for (const k of PROTO_KEYS) out.push({ input: base, rawQuery: `${encodeURIComponent(k)}=1` });
    out.push({ input: base, rawQuery: `${where.query[0] ?? 'q'}[__proto__][x]=1` });
  }
  return out;
}

async function attempt(op: AnyOperation, a: Attempt): Promise<void> {
  const req = httpRequestFor(op, a.input, t.keys.admin);
  // Header inputs (Idempotency-Key) carry only what an HTTP client can send in a header.
  for (const [h, v] of Object.entries(req.headers)) if (!/^[\t\x20-\x7e]*$/.test(v) || v !== v.trim()) req.headers[h] = encodeURIComponent(v);
  let path = req.path;
  if (a.rawQuery) path = path.split('?')[0] + '?' + a.rawQuery;
  const before = changes();
  const res = await fetch(t.url + path, { method: req.method, headers: req.headers, body: a.rawBody ?? req.body });
  const text = await res.text();
  stats.requests++;
  stats.byStatus[res.status] = (stats.byStatus[res.status] ?? 0) + 1;
  const why = `${op.operationId} ${res.status} ${path.slice(0, 200)} ${String(req.body ?? '').slice(0, 200)} → ${text.slice(0, 300)}`;
  expect(res.status, why).toBeLessThan(500);
  if (res.status >= 400) {
    stats.rejected++;
    const body = JSON.parse(text);
    expect(body, why).toMatchObject({ type: expect.any(String), code: expect.any(String), message: expect.any(String) });
    expect(changes(), `${why}: a rejected request changed the database`).toBe(before);
  } else stats.accepted++;
}

describe('fuzzing every operation input', () => {
  for (const op of catalogue) {
    it(`${op.operationId}: schema-drawn and hostile inputs never get 5xx, 4xx is Shape A and changes nothing`, async () => {
      const js = toJsonSchema(op.input, 'input');
      const props = (js.properties ?? {}) as Record<string, JsonSchema>;
      const base = inputFor(op, t.projectId);
      const fields = Object.keys(props).filter((k) => k !== 'project_id' && !(fieldLocations(op).path.includes(k)));
      const drawn = fc.record(Object.fromEntries(fields.map((k) => [k, arb(props[k]!)])), { requiredKeys: [] });
      // One hostile field at a time over a valid base, so no other field's error hides it.
      const broken = fields.length ? fc.constantFrom(...fields).chain((f) => hostileValue.map((v) => ({ [f]: v }))) : fc.constant({});
      await fc.assert(
        fc.asyncProperty(fc.oneof(drawn, broken), async (fieldsIn) => {
          await attempt(op, { input: { ...base, ...(fieldsIn as Record<string, unknown>) } });
        }),
        { numRuns: RUNS_PER_OPERATION, seed: 4242 },
      );
      for (const a of mutations(op, base)) await attempt(op, a);
    });
  }
});
