/**
 * The TypeScript client against a real server: methods derived from the catalogue, input split into
 * path/query/body/header by the descriptors, both credential forms, Shape A errors, bounded 429
 * retries honouring Retry-After, and offset/cursor iteration.
 */
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { startTestServer, type TestServer } from '../helpers/server.js';
import { catalogue, tagModules } from '../../operations/index.js';
import type { AnyOperation } from '../../operations/define.js';
import {
  createClient,
  SightlineConnectionError,
  SightlineError,
  SightlineInputError,
  type SightlineClient,
} from '../../src/client/index.js';

const T0 = Date.parse('2026-04-01T10:00:00.000Z');
let clock = T0;
let t: TestServer;
let client: SightlineClient;

/** A fetch that records every request it passes on. */
function recordingFetch() {
  const calls: Array<{ method: string; url: URL; headers: Headers; body: string | undefined }> = [];
  const f: typeof fetch = async (input, init) => {
    calls.push({ method: init?.method ?? 'GET', url: new URL(String(input)), headers: new Headers(init?.headers), body: init?.body as string | undefined });
    return fetch(input, init);
  };
  return { calls, fetch: f };
}

/** A fetch that answers from a script, without a server. */
function scriptedFetch(answers: Array<() => Response>) {
  const urls: string[] = [];
  const f: typeof fetch = async (input) => {
    urls.push(String(input));
    const next = answers.shift();
    if (!next) throw new Error('no more scripted answers');
    return next();
  };
  return { urls, fetch: f };
}

const json = (status: number, body: unknown, headers: Record<string, string> = {}) =>
  new Response(JSON.stringify(body), { status, headers: { 'content-type': 'application/json', ...headers } });

beforeAll(async () => {
  t = await startTestServer({ now: () => clock });
  client = createClient({ baseUrl: t.url, apiKey: t.keys.admin });
});
afterAll(() => t.close());

describe('methods derived from the catalogue', () => {
  it('offers client.<tag>.<verb> for every operation, hidden ones included', () => {
    for (const op of catalogue) {
      const [tag, verb] = op.operationId.split('.') as [string, string];
      const method = (client as unknown as Record<string, Record<string, { operationId: string }>>)[tag]?.[verb];
      expect(method, op.operationId).toBeTypeOf('function');
      expect(method!.operationId).toBe(op.operationId);
    }
    expect(client.apiKeys.create).toBeTypeOf('function');
  });

  it('types each method by the export name of its descriptor, which is its verb (`del` for delete)', () => {
    // The client's types read tag files by export name (operations/index.ts TagModules); this keeps them true.
    for (const [tag, mod] of Object.entries(tagModules)) {
      for (const [exportName, value] of Object.entries(mod)) {
        const op = value as AnyOperation;
        if (!op || typeof op !== 'object' || !('operationId' in op) || !('handler' in op)) continue;
        expect(op.operationId, `${tag}.ts export ${exportName}`).toBe(`${tag}.${exportName === 'del' ? 'delete' : exportName}`);
      }
    }
  });
});

describe('requests', () => {
  it('leaves project_id out and uses the only project of the key, asking projects.list once', async () => {
    const rec = recordingFetch();
    const c = createClient({ baseUrl: t.url, apiKey: t.keys.admin, fetch: rec.fetch });
    const created = await c.deployments.create({ deployment_id: 'client-1', service: 'api', version: '2.0.0', status: 'ready' });
    expect(created).toMatchObject({ project_id: t.projectId, deployment_id: 'client-1', status: 'ready' });
    const listed = await c.deployments.list({ service: 'api', limit: 5 });
    expect(listed.data.map((d) => d.deployment_id)).toContain('client-1');
    expect(rec.calls.map((r) => `${r.method} ${r.url.pathname}`)).toEqual([
      'GET /v1/projects',
      `POST /v1/projects/${t.projectId}/deployments`,
      `GET /v1/projects/${t.projectId}/deployments`,
    ]);
    expect(rec.calls[2]!.url.searchParams.get('service')).toBe('api');
    expect(rec.calls[2]!.url.searchParams.get('limit')).toBe('5');
  });

  it('puts path fields in the path, query fields in the query, body fields in the body and header fields in headers', async () => {
    const rec = recordingFetch();
    const c = createClient({ baseUrl: t.url, apiKey: t.keys.admin, fetch: rec.fetch, projectId: t.projectId });
    const first = await c.feedback.create({ message: 'Split me', idempotency_key: 'client-key-1', environment: 'prod' });
    const replay = await c.feedback.create({ message: 'Split me', idempotency_key: 'client-key-1', environment: 'prod' });
    expect(replay.id).toBe(first.id);
    const post = rec.calls[0]!;
    expect(post.url.pathname).toBe(`/v1/projects/${t.projectId}/feedback`);
    expect(post.headers.get('idempotency-key')).toBe('client-key-1');
    expect(JSON.parse(post.body!)).toEqual({ message: 'Split me', environment: 'prod' });

    const got = await c.feedback.get({ feedback_id: first.id });
    expect(got.message).toBe('Split me');
    expect(rec.calls[2]!.url.pathname).toBe(`/v1/projects/${t.projectId}/feedback/${first.id}`);

    await c.feedback.list({ status: ['new', 'reviewed'], q: 'Split' });
    expect(rec.calls[3]!.url.searchParams.get('status')).toBe('new,reviewed');
    expect(rec.calls[3]!.body).toBeUndefined();
  });

  it('sends an API key as x-service-key, and a token as Authorization: Bearer', async () => {
    const rec = recordingFetch();
    await createClient({ baseUrl: t.url, apiKey: t.keys.admin, fetch: rec.fetch }).projects.list();
    expect(rec.calls[0]!.headers.get('x-service-key')).toBe(t.keys.admin);
    expect(rec.calls[0]!.headers.get('authorization')).toBeNull();

    const bearer = recordingFetch();
    // The server takes an API key as a bearer token too (spec: Authentication 1).
    const projects = await createClient({ baseUrl: t.url, accessToken: t.keys.admin, fetch: bearer.fetch }).projects.list();
    expect(projects.data.map((p) => p.id)).toEqual([t.projectId]);
    expect(bearer.calls[0]!.headers.get('authorization')).toBe(`Bearer ${t.keys.admin}`);
    expect(bearer.calls[0]!.headers.get('x-service-key')).toBeNull();
  });

  it('asks for project_id when the credential reaches several projects', async () => {
    const s = scriptedFetch([() => json(200, { data: [{ id: '1' }, { id: '2' }] })]);
    const c = createClient({ baseUrl: 'http://example.invalid', accessToken: 'tok', fetch: s.fetch });
    const err = await c.feedback.list().catch((e) => e);
    expect(err).toBeInstanceOf(SightlineInputError);
    expect(err).toMatchObject({ code: 'project_id_required', param: 'project_id', status: 0 });
    expect(s.urls).toEqual(['http://example.invalid/v1/projects']);
  });

  it('refuses to build a path with a missing path field', async () => {
    const err = await client.feedback.get({} as never).catch((e) => e);
    expect(err).toBeInstanceOf(SightlineInputError);
    expect(err).toMatchObject({ code: 'missing_parameter', param: 'feedback_id' });
  });
});

describe('errors', () => {
  it('throws SightlineError with status, code, message and request id for a missing scope', async () => {
    const ingestOnly = createClient({ baseUrl: t.url, apiKey: t.keys.ingest });
    const err = await ingestOnly.feedback.list().catch((e) => e);
    expect(err).toBeInstanceOf(SightlineError);
    expect(err).toMatchObject({ status: 403, code: 'insufficient_scope', type: 'permission_error' });
    expect(err.message).toMatch(/errors:read/);
    expect(err.requestId).toMatch(/\S+/);
  });

  it('carries the param of a validation error', async () => {
    const err = await client.deployments.create({ deployment_id: 'x', commit_sha: 'a'.repeat(65) }).catch((e) => e);
    expect(err).toMatchObject({ status: 400, code: 'invalid_parameter', param: 'commit_sha' });
  });

  it('reads the legacy Shape B error body too', async () => {
    const s = scriptedFetch([() => json(400, { error: 'bad_thing', message: 'That was bad.', hint: 'Do better.' }, { 'x-request-id': 'req-b' })]);
    const err = await createClient({ baseUrl: 'http://example.invalid', apiKey: 'k', projectId: '1', fetch: s.fetch })
      .feedback.list()
      .catch((e) => e);
    expect(err).toMatchObject({ status: 400, code: 'bad_thing', message: 'That was bad.', hint: 'Do better.', requestId: 'req-b' });
  });

  it('turns an unreachable server into SightlineConnectionError', async () => {
    const err = await createClient({ baseUrl: 'http://127.0.0.1:1', apiKey: 'k', projectId: '1' })
      .feedback.list()
      .catch((e) => e);
    expect(err).toBeInstanceOf(SightlineConnectionError);
    expect(err).toMatchObject({ status: 0, code: 'connection_error' });
  });
});

describe('429 retries', () => {
  it('waits Retry-After and retries when the feedback quota is reached (the server clock moves with the wait)', async () => {
    const sleeps: number[] = [];
    const c = createClient({
      baseUrl: t.url,
      apiKey: t.keys.admin,
      projectId: t.projectId,
      sleep: async (ms) => {
        sleeps.push(ms);
        clock += ms;
      },
    });
    clock += 24 * 3600_000; // a fresh quota day for this test
    for (let i = 0; i < 20; i++) await c.feedback.create({ message: `quota ${i}` });
    expect(sleeps).toEqual([]);
    const twentyFirst = await c.feedback.create({ message: 'quota 20' });
    expect(twentyFirst.id).toMatch(/[0-9a-f-]{36}/);
    expect(sleeps).toHaveLength(1);
    expect(sleeps[0]).toBeGreaterThan(0);
    expect(sleeps[0]).toBeLessThanOrEqual(60_000);
  });

  it('retries at most 3 times, then throws the 429', async () => {
    const limited = () => json(429, { type: 'rate_limit_error', code: 'rate_limited', message: 'Slow down.', retry_after: 1 }, { 'retry-after': '1' });
    const s = scriptedFetch([limited, limited, limited, limited, limited]);
    const sleeps: number[] = [];
    const c = createClient({ baseUrl: 'http://example.invalid', apiKey: 'k', projectId: '1', fetch: s.fetch, sleep: async (ms) => void sleeps.push(ms) });
    const err = await c.deployments.list().catch((e) => e);
    expect(err).toMatchObject({ status: 429, code: 'rate_limited', retryAfter: 1 });
    expect(s.urls).toHaveLength(4);
    expect(sleeps).toEqual([1000, 1000, 1000]);
  });

  it('does not wait beyond 60 s in total', async () => {
    const limited = () => json(429, { code: 'rate_limited', message: 'Slow down.' }, { 'retry-after': '40' });
    const s = scriptedFetch([limited, limited, () => json(200, { data: [], total: 0, limit: 50, offset: 0 })]);
    const sleeps: number[] = [];
    const c = createClient({ baseUrl: 'http://example.invalid', apiKey: 'k', projectId: '1', fetch: s.fetch, sleep: async (ms) => void sleeps.push(ms) });
    const err = await c.deployments.list().catch((e) => e);
    expect(err).toMatchObject({ status: 429, retryAfter: 40 });
    expect(sleeps).toEqual([40_000]);
    expect(s.urls).toHaveLength(2);
  });

  it('retries then returns the answer once the limit lifts', async () => {
    const s = scriptedFetch([
      () => json(429, { code: 'rate_limited', message: 'Slow down.' }, { 'retry-after': '2' }),
      () => json(200, { data: [], total: 0, limit: 50, offset: 0 }),
    ]);
    const sleeps: number[] = [];
    const c = createClient({ baseUrl: 'http://example.invalid', apiKey: 'k', projectId: '1', fetch: s.fetch, sleep: async (ms) => void sleeps.push(ms) });
    expect(await c.deployments.list()).toEqual({ data: [], total: 0, limit: 50, offset: 0 });
    expect(sleeps).toEqual([2000]);
  });
});

describe('iteration', () => {
  it('iterates an offset list with limit/offset while offset + limit < total', async () => {
    const rec = recordingFetch();
    const c = createClient({ baseUrl: t.url, apiKey: t.keys.admin, projectId: t.projectId, fetch: rec.fetch });
    for (let i = 0; i < 7; i++) await c.deployments.create({ deployment_id: `iter-${i}`, environment: 'iterate-env' });
    rec.calls.length = 0;
    const seen: string[] = [];
    for await (const d of c.deployments.list.iterate({ environment: 'iterate-env', limit: 3 })) seen.push(d.deployment_id);
    expect(seen.sort()).toEqual(['iter-0', 'iter-1', 'iter-2', 'iter-3', 'iter-4', 'iter-5', 'iter-6']);
    // The first page leaves offset to its default (0).
    expect(rec.calls.map((r) => r.url.searchParams.get('offset'))).toEqual([null, '3', '6']);
    expect(rec.calls.map((r) => r.url.searchParams.get('limit'))).toEqual(['3', '3', '3']);
  });

  it('iterates a cursor list with next_cursor until it is null', async () => {
    const rec = recordingFetch();
    const c = createClient({ baseUrl: t.url, apiKey: t.keys.admin, fetch: rec.fetch, projectId: t.projectId });
    clock += 24 * 3600_000;
    for (let i = 0; i < 5; i++) {
      clock += 1000; // distinct creation times: the list is newest first
      await c.feedback.create({ message: `cursor ${i}`, environment: 'cursor-env' });
    }
    rec.calls.length = 0;
    const pages: number[] = [];
    for await (const page of c.feedback.list.pages({ environment: 'cursor-env', limit: 2 })) pages.push(page.data.length);
    expect(pages).toEqual([2, 2, 1]);
    expect(rec.calls[0]!.url.searchParams.get('cursor')).toBeNull();
    expect(rec.calls[1]!.url.searchParams.get('cursor')).toMatch(/\S+/);
    const messages: string[] = [];
    for await (const f of c.feedback.list.iterate({ environment: 'cursor-env', limit: 2 })) messages.push(f.message);
    expect(messages).toEqual(['cursor 4', 'cursor 3', 'cursor 2', 'cursor 1', 'cursor 0']);
  });

  it('offers iterate only on paginated lists', () => {
    expect('iterate' in client.deployments.list).toBe(true);
    expect('iterate' in client.feedback.list).toBe(true);
    expect('iterate' in client.feedback.get).toBe(false);
    expect('iterate' in client.projects.list).toBe(false);
  });
});
