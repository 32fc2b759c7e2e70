/**
 * GET /openapi.json: a valid OpenAPI 3.1 document derived from the catalogue, with the flags,
 * security schemes and error shapes the spec names.
 */
import { Validator } from '@seriousme/openapi-schema-validator';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { api, startTestServer, type TestServer } from './helpers/server.js';
import { catalogue } from '../operations/index.js';
import { fieldLocations } from '../operations/define.js';

let t: TestServer;
// eslint-disable-next-line @typescript-eslint/no-explicit-any
let doc: any;

beforeAll(async () => {
  t = await startTestServer();
  const res = await api(t, 'GET', '/openapi.json');
  expect(res.status).toBe(200);
  expect(res.headers.get('content-type')).toMatch(/application\/json/);
  doc = res.body;
});
afterAll(() => t.close());

describe('GET /openapi.json', () => {
  it('is a valid OpenAPI 3.1 document', async () => {
    const validator = new Validator();
    const result = await validator.validate(structuredClone(doc));
    expect(result.errors ?? [], JSON.stringify(result.errors, null, 1)?.slice(0, 2000)).toEqual([]);
    expect(result.valid).toBe(true);
    expect(doc.openapi).toMatch(/^3\.1\./);
  });

  it('has info version 1.0.0 and a server at the base URL', () => {
    expect(doc.info.version).toBe('1.0.0');
    expect(doc.info.title).toEqual(expect.any(String));
    expect(doc.servers).toEqual([{ url: t.s.config.baseUrl }]);
  });

  it('needs no credential', async () => {
    expect((await api(t, 'GET', '/openapi.json')).status).toBe(200);
  });

  it('documents every operation of the catalogue with operationId, tag and the x- flags', () => {
    const byId = new Map<string, { method: string; path: string; o: Record<string, unknown> }>();
    for (const [path, item] of Object.entries(doc.paths as Record<string, Record<string, Record<string, unknown>>>)) {
      for (const [method, o] of Object.entries(item)) byId.set(o.operationId as string, { method, path, o });
    }
    expect(byId.size).toBe(catalogue.length);
    for (const op of catalogue) {
      const found = byId.get(op.operationId);
      expect(found, op.operationId).toBeDefined();
      const { method, path, o } = found!;
      expect(method).toBe(op.method.toLowerCase());
      expect(path).toBe(op.path);
      expect(o.tags).toEqual([op.tag]);
      const scoped = !['projects.list', 'projects.get', 'users.me'].includes(op.operationId);
      expect(o['x-project-scoped'], op.operationId).toBe(scoped);
      expect(o['x-sensitive'], op.operationId).toBe(op.sensitive);
      expect(o['x-risk'], op.operationId).toBe(op.risk);
      expect(o.summary).toBe(op.summary);
      expect(String(o.description)).toContain(op.description);
      // Every path parameter is declared, and a body exactly when the operation has body fields.
      const params = (o.parameters as { name: string; in: string }[]) ?? [];
      for (const p of fieldLocations(op).path) expect(params).toContainEqual(expect.objectContaining({ name: p, in: 'path', required: true }));
      expect('requestBody' in o, op.operationId).toBe(fieldLocations(op).body.length > 0);
      const success = String(op.successStatus ?? 200);
      expect(Object.keys(o.responses as object)).toContain(success);
    }
  });

  it('lists every tag it uses', () => {
    const tags = new Set((doc.tags as { name: string }[]).map((x) => x.name));
    for (const op of catalogue) expect(tags.has(op.tag), op.tag).toBe(true);
  });

  it('declares the three security schemes: API key header, bearer, and OAuth authorization code named mcp', () => {
    const s = doc.components.securitySchemes;
    expect(s.apiKey).toMatchObject({ type: 'apiKey', in: 'header', name: 'x-service-key' });
    expect(s.bearer).toMatchObject({ type: 'http', scheme: 'bearer' });
    expect(s.mcp.type).toBe('oauth2');
    expect(s.mcp.flows.authorizationCode).toMatchObject({
      authorizationUrl: `${t.s.config.mcpUrl}/authorize`,
      tokenUrl: `${t.s.config.mcpUrl}/token`,
    });
    const names = (doc.security as Record<string, unknown>[]).flatMap((x) => Object.keys(x)).sort();
    expect(names).toEqual(['apiKey', 'bearer', 'mcp']);
    // Scopes an operation asks of the OAuth scheme are declared by the scheme.
    const declared = Object.keys(s.mcp.flows.authorizationCode.scopes);
    for (const item of Object.values(doc.paths as Record<string, Record<string, { security: Record<string, string[]>[] }>>)) {
      for (const o of Object.values(item)) for (const req of o.security) for (const sc of req.mcp ?? []) expect(declared).toContain(sc);
    }
  });

  it('documents both error shapes in its error schema', () => {
    const schemas = doc.components.schemas;
    const variants = (schemas.Error.oneOf ?? schemas.Error.anyOf) as { $ref: string }[];
    const resolved = variants.map((v) => schemas[v.$ref.replace('#/components/schemas/', '')]);
    const a = resolved.find((x) => x.required?.includes('code'));
    const b = resolved.find((x) => x.required?.includes('error'));
    expect(a.required).toEqual(expect.arrayContaining(['type', 'code', 'message']));
    expect(Object.keys(a.properties)).toEqual(expect.arrayContaining(['type', 'code', 'message', 'param', 'doc_url', 'retry_after']));
    expect(Object.keys(b.properties)).toEqual(expect.arrayContaining(['error', 'message', 'hint']));
  });

  it('points the error responses of operations at the error schema', () => {
    const fb = doc.paths['/v1/projects/{project_id}/feedback'].post;
    for (const status of ['400', '409', '413', '429']) {
      const r = fb.responses[status];
      expect(r, status).toBeDefined();
      const resolved = r.$ref ? doc.components.responses[r.$ref.split('/').pop()] : r;
      expect(resolved.content['application/json'].schema).toEqual({ $ref: '#/components/schemas/Error' });
    }
    expect(fb.parameters).toContainEqual(expect.objectContaining({ name: 'Idempotency-Key', in: 'header', required: false }));
  });
});
