/**
 * `execute` over a real MCP Client (in-memory transport): scripts call operations through
 * `api.<tag>.<verb>` with the caller's principal and get the same answers as REST; hostile scripts
 * end with a clear `error` and the server keeps answering.
 */
import { afterAll, describe, expect, it } from 'vitest';
import type { Principal } from '../../src/core/principal.js';
import type { Core } from '../../src/core/invoke.js';
import { localCaller } from '../../src/mcp/execute.js';
import { api, startTestServer } from '../helpers/server.js';
import { execute, inMemoryClient, search } from './helpers.js';

const t = await startTestServer();
afterAll(() => t.close());
const admin = await inMemoryClient(t, t.keys.admin);
const P = `/v1/projects/${t.projectId}`;

async function stillAnswers() {
  const r = await execute(admin, 'return 1 + 1');
  expect(r).toMatchObject({ result: 2, error: null, isError: false });
  expect((await search(admin, 'list feedback')).results.length).toBeGreaterThan(0);
}

describe('execute: scripts call operations as the caller', () => {
  it('returns a single call\'s result exactly as REST answers it', async () => {
    const r = await execute(admin, 'return await api.projects.get({})');
    expect(r.error).toBeNull();
    expect(r.isError).toBe(false);
    const rest = await api(t, 'GET', P, { key: t.keys.admin });
    expect(rest.status).toBe(200);
    expect(r.result).toEqual(rest.body);
    expect(r.calls).toEqual([{ operationId: 'projects.get', status: 200, ms: expect.any(Number) }]);
  });

  it('runs a multi-call script whose results equal the REST answers for the same calls', async () => {
    const r = await execute(
      admin,
      `
      const fb = await api.feedback.create({ message: 'Checkout button does nothing', contact_email: 'ana@example.com', url: 'https://shop.example.com/checkout' });
      const dep = await api.deployments.create({ deployment_id: 'run-77', provider: 'github', service: 'api', version: '1.4.2', environment: 'production', status: 'ready' });
      const feedback = await api.feedback.list({ limit: 10 });
      const deployments = await api.call('deployments.list', { environment: 'production', limit: 10 });
      const project = await api.projects.get();
      console.log('feedback rows', feedback.data.length);
      return { fb, dep, feedback, deployments, project };
    `,
    );
    expect(r.error).toBeNull();
    expect(r.calls.map((c) => c.operationId)).toEqual(['feedback.create', 'deployments.create', 'feedback.list', 'deployments.list', 'projects.get']);
    expect(r.calls.every((c) => c.status === 200)).toBe(true);
    expect(r.logs).toEqual(['feedback rows 1']);

    const feedback = await api(t, 'GET', `${P}/feedback?limit=10`, { key: t.keys.admin });
    const deployments = await api(t, 'GET', `${P}/deployments?environment=production&limit=10`, { key: t.keys.admin });
    const project = await api(t, 'GET', P, { key: t.keys.admin });
    expect(r.result.feedback).toEqual(feedback.body);
    expect(r.result.deployments).toEqual(deployments.body);
    expect(r.result.project).toEqual(project.body);
    expect(feedback.body.data[0]).toMatchObject(r.result.fb);
    expect(deployments.body.data[0]).toEqual(r.result.dep);
    const one = await api(t, 'GET', `${P}/feedback/${r.result.fb.id}`, { key: t.keys.admin });
    expect(one.body).toMatchObject({ id: r.result.fb.id, message: 'Checkout button does nothing', contact_email: 'ana@example.com' });
  });

  it('pages with a cursor loop as the tool description teaches', async () => {
    for (let i = 0; i < 3; i++) await api(t, 'POST', `${P}/feedback`, { key: t.keys.admin, body: { message: `page test ${i}` } });
    const r = await execute(
      admin,
      `const rows = []; let cursor;
       do { const page = await api.feedback.list({ limit: 1, cursor }); rows.push(...page.data); cursor = page.next_cursor; } while (cursor);
       return rows.map((x) => x.id);`,
    );
    expect(r.error).toBeNull();
    const rest = await api(t, 'GET', `${P}/feedback?limit=100`, { key: t.keys.admin });
    expect(r.result).toEqual(rest.body.data.map((x: { id: string }) => x.id));
    expect(r.calls.length).toBe(rest.body.data.length); // the last page already says next_cursor: null
  });

  it('turns a failed call into an error the script can catch, with status, code and message', async () => {
    const r = await execute(
      admin,
      `try { await api.feedback.get({ feedback_id: 'not-a-uuid' }); } catch (e) { return { name: e.name, status: e.status, code: e.code, message: e.message }; }`,
    );
    expect(r.result).toMatchObject({ status: 400, code: 'invalid_parameter', message: expect.stringContaining('feedback_id') });
    expect(r.calls).toEqual([{ operationId: 'feedback.get', status: 400, ms: expect.any(Number) }]);
  });

  it('reports an uncaught failed call in `error` and marks the tool result as an error', async () => {
    const r = await execute(admin, `return await api.feedback.update({ feedback_id: '00000000-0000-4000-8000-000000000000', status: 'reviewed' })`);
    expect(r.isError).toBe(true);
    expect(r.error).toMatchObject({ status: 404, code: 'not_found' });
    expect(r.result).toBeNull();
  });

  it('lets a read-only key read but answers 403 inside the script when it writes', async () => {
    const reader = await inMemoryClient(t, t.mintKey(['read']));
    const r = await execute(
      reader,
      `const list = await api.deployments.list({});
       try { await api.deployments.create({ deployment_id: 'nope' }); return 'wrote'; }
       catch (e) { return { listed: Array.isArray(list.data), status: e.status, code: e.code }; }`,
    );
    expect(r.error).toBeNull();
    expect(r.result).toEqual({ listed: true, status: 403, code: 'insufficient_scope' });
  });

  it('fills project_id for a signed-in user with exactly one project', async () => {
    const user = t.s.services.identity.userByEmail('owner@test.local')!;
    const principal: Principal = { kind: 'user', userId: user.id, email: user.email, scopes: ['*'], roles: { [t.organizationId]: 'owner' }, tokenId: null, clientId: null };
    const asUser = await inMemoryClient(t, principal);
    const r = await execute(asUser, 'const p = await api.projects.get(); const f = await api.feedback.list({ limit: 1 }); return { id: p.id, n: f.data.length }');
    expect(r.error).toBeNull();
    expect(r.result).toEqual({ id: t.projectId, n: 1 });
  });
});

describe('execute: errors that are not AppErrors', () => {
  it('become a generic 500 for the script, with no internal text', async () => {
    const logged: unknown[] = [];
    const failing = { ...t.s.core, invoke: async () => { throw new Error('SQLITE_CORRUPT at /var/lib/secret.db'); } } as Core;
    const principal: Principal = { kind: 'api_key', keyId: 'k', projectId: t.projectId, orgId: t.organizationId, scopes: ['*'] };
    const r = await localCaller(failing, principal, { log: { error: (o: unknown) => void logged.push(o) } }).call('projects.list', {});
    expect(r).toEqual({ ok: false, error: { status: 500, code: 'internal_error', message: expect.any(String) } });
    expect(JSON.stringify(r)).not.toContain('secret');
    expect(logged).toHaveLength(1);
  });
});

describe('execute: hostile scripts end with a clear error and the server keeps answering', () => {
  it('stops a busy loop at the configured wall clock', async () => {
    const short = await inMemoryClient(t, t.keys.admin, { limits: { wallClockMs: 300 } });
    const r = await execute(short, 'while (true) {}');
    expect(r.isError).toBe(true);
    expect(r.error).toMatchObject({ name: 'TimeoutError', message: expect.stringContaining('0.3 s') });
    expect((await execute(short, 'return "alive"')).result).toBe('alive');
    await stillAnswers();
  });

  it('stops a script that allocates 256 MiB at the memory limit', async () => {
    const r = await execute(admin, "return 'x'.repeat(2 ** 28)");
    expect(r.error).toMatchObject({ name: 'MemoryLimitError', message: expect.stringContaining('64 MiB') });
    await stillAnswers();
  });

  it('stops unbounded recursion with a stack overflow', async () => {
    const r = await execute(admin, 'function f(n) { return f(n + 1) + 1; } return f(0);');
    expect(r.error).toMatchObject({ name: 'StackOverflowError' });
    await stillAnswers();
  });

  it('stops a script making 10,000 calls after 100', async () => {
    const r = await execute(admin, 'for (let i = 0; i < 10000; i++) await api.projects.get(); return "done";');
    expect(r.error).toMatchObject({ status: 429, code: 'call_limit_exceeded', message: expect.stringContaining('100') });
    expect(r.calls.length).toBe(100);
    await stillAnswers();
  });

  it('answers a 50 MB result with a few-KB preview, its size and its shape, and says so in `error`', async () => {
    const r = await execute(admin, "return 'x'.repeat(50 * 1024 * 1024)");
    expect(r.isError).toBe(true);
    expect(r.error).toMatchObject({ name: 'ResultTooLargeError', message: expect.stringContaining('262144') });
    expect(r.result).toMatchObject({ size: expect.stringMatching(/bytes/), limit_bytes: 262144, shape: expect.any(String) });
    expect(Buffer.byteLength(r.result.preview)).toBeLessThanOrEqual(4 * 1024 + 3);
    await stillAnswers();
  });

  it('describes the shape of an oversized list result so the agent can narrow it', async () => {
    const r = await execute(
      admin,
      `const project = await api.projects.get();
       return { rows: Array.from({ length: 5000 }, (_, i) => ({ id: project.id, n: i, padding: 'p'.repeat(80) })), total: 5000 };`,
    );
    expect(r.error?.name).toBe('ResultTooLargeError');
    expect(r.result.shape).toBe('{ rows: Array(5000) of { id: string, n: number, padding: string }, total: number }');
    expect(r.result.preview.startsWith('{"rows":[{"id":')).toBe(true);
    // The whole answer stays small: no 256 KiB of cut JSON, once as text and again as structured content.
    expect(JSON.stringify(r).length).toBeLessThan(8 * 1024);
  });

  it('cannot reach the host through the Function constructor', async () => {
    const r = await execute(admin, "return this.constructor.constructor('return process')().env");
    expect(r.error).toMatchObject({ name: 'ReferenceError' });
    expect(JSON.stringify(r)).not.toContain('SIGHTLINE');
    const globals = await execute(admin, 'return [typeof process, typeof require, typeof fetch, typeof setTimeout]');
    expect(globals.result).toEqual(['undefined', 'undefined', 'undefined', 'undefined']);
    await stillAnswers();
  });

  it('keeps prototype pollution of api and Object inside one run', async () => {
    const r = await execute(
      admin,
      `Object.prototype.polluted = 'yes';
       const tries = [];
       try { api.feedback.list = async () => 'hijacked'; } catch (e) { tries.push(e.name); }
       try { api.call = async () => 'hijacked'; } catch (e) { tries.push(e.name); }
       try { Object.setPrototypeOf(api, { evil: true }); } catch (e) { tries.push(e.name); }
       const page = await api.feedback.list({ limit: 1 });
       return { tries, hijacked: page === 'hijacked', evil: api.evil === true };`,
    );
    expect(r.result).toMatchObject({ hijacked: false, evil: false });
    const next = await execute(admin, "return { polluted: ({}).polluted ?? null, list: typeof api.feedback.list, page: (await api.feedback.list({ limit: 1 })).data.length }");
    expect(next.result).toEqual({ polluted: null, list: 'function', page: 1 });
    await stillAnswers();
  });

  it('does not let a __proto__ key in the input change the project: inputs are strict, so it is refused as an unknown field', async () => {
    const r = await execute(admin, `return await api.feedback.list(JSON.parse('{"__proto__": {"project_id": "${t.otherProject.projectId}"}, "limit": 100}'))`);
    expect(r.error).toMatchObject({ status: 400, code: 'unknown_field' });
    const ok = await execute(admin, 'return await api.feedback.list({ limit: 100 })');
    expect(ok.result.data.every((f: { project_id: string }) => f.project_id === t.projectId)).toBe(true);
  });

  it('cannot call a hidden operation: it is not on api and api.call refuses it, naming it', async () => {
    const r = await execute(admin, "return await api.call('apiKeys.list', {})");
    expect(r.error).toMatchObject({ status: 404, code: 'unknown_operation', message: expect.stringContaining('apiKeys.list exists but is not available over MCP') });
    expect(r.calls).toEqual([]);
    const shape = await execute(admin, 'return { apiKeys: typeof api.apiKeys, tags: Object.keys(api).sort() }');
    expect(shape.result.apiKeys).toBe('undefined');
    expect(shape.result.tags).toContain('feedback');
    await stillAnswers();
  });

  it('reports a syntax error without running anything', async () => {
    const r = await execute(admin, 'return {{');
    expect(r.error).toMatchObject({ name: 'SyntaxError' });
    await stillAnswers();
  });
});

describe('execute: failures that say what went wrong', () => {
  it('names a missing operation called as api.<tag>.<verb> instead of "cannot read property of undefined"', async () => {
    const r = await execute(admin, 'const x = await api.alerts.create({ name: "cpu" }); return x;');
    expect(r.error).toMatchObject({ status: 404, code: 'unknown_operation' });
    expect(r.error!.message).toContain('There is no operation alerts.create');
    const verb = await execute(admin, 'return await api.errors.delete({ error_group_id: "x" })');
    expect(verb.error!.message).toMatch(/There is no operation errors\.delete.*Operations nearby: errors\./);
  });

  it('names a hidden operation called as api.<tag>.<verb>', async () => {
    const r = await execute(admin, 'return await api.apiKeys.create({ label: "x", scopes: ["read"] })');
    expect(r.error).toMatchObject({ status: 404, code: 'unknown_operation', message: expect.stringContaining('apiKeys.create exists but is not available over MCP') });
  });

  it('hints to `return` when a script made calls but returned nothing', async () => {
    const r = await execute(admin, 'const page = await api.feedback.list({ limit: 1 }); page.data.length;');
    expect(r.error).toBeNull();
    expect(r.result).toBeNull();
    expect(r.hint).toMatch(/made 1 call but returned nothing \(undefined\): end it with `return <value>`/);
    // No hint when the script returned a value, even null.
    expect((await execute(admin, 'await api.feedback.list({ limit: 1 }); return null;')).hint).toBeNull();
  });

  it('warns about calls that were never awaited (they do not run after the script ends)', async () => {
    const r = await execute(admin, 'api.feedback.list({ limit: 1 }); return "done";');
    expect(r.result).toBe('done');
    expect(r.calls).toEqual([]);
    expect(r.logs.at(-1)).toMatch(/1 api call was never awaited and did not run \(feedback\.list\)/);
  });

  it('reports how long the execute waited and took', async () => {
    const r = await execute(admin, 'return 1');
    expect(r.time).toEqual({ queued_ms: expect.any(Number), total_ms: expect.any(Number) });
    expect(r.time.total_ms).toBeGreaterThanOrEqual(r.time.queued_ms);
  });
});
