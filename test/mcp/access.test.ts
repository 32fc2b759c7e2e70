/**
 * The same access rules as REST, through MCP `execute`, generated from the catalogue
 * (test/helpers/access-cases.ts): for every operation the tool server exposes, a key of another
 * project gets 404 (projects.list: the project is not listed), a key without the scope gets 403,
 * and an unknown field of a strict body gets 400. Hidden operations are not callable at all.
 */
import { afterAll, describe, expect, it } from 'vitest';
import type { Client } from '@modelcontextprotocol/sdk/client/index.js';
import { catalogue } from '../../operations/index.js';
import { accessCases, type AccessCase } from '../helpers/access-cases.js';
import { startTestServer } from '../helpers/server.js';
import { execute, executorFor, inMemoryClient } from './helpers.js';

const t = await startTestServer();
afterAll(() => t.close());
const executor = executorFor(t);
const visible = catalogue.filter((op) => !op.sensitive);
const cases = (await accessCases(t, visible)).filter((c) => c.check !== 'no_credential');

const clients = new Map<string, Client>();
async function clientFor(key: string): Promise<Client> {
  if (!clients.has(key)) clients.set(key, await inMemoryClient(t, key, { executor }));
  return clients.get(key)!;
}

/** Runs one operation in a script and reports what the script saw. */
async function run(c: AccessCase, key = c.credential!) {
  const code = `try { return { ok: true, value: await api.call(${JSON.stringify(c.operationId)}, ${JSON.stringify(c.input)}) }; }
    catch (e) { return { ok: false, status: e.status, code: e.code, param: e.param, message: e.message }; }`;
  const r = await execute(await clientFor(key), code);
  expect(r.error, JSON.stringify(r.error)).toBeNull();
  return r.result as { ok: boolean; value?: any; status?: number; code?: string; param?: string; message?: string };
}

describe('generated access checks through execute', () => {
  it('cover every MCP-visible operation with the checks that apply to it', () => {
    for (const op of visible) {
      const checks = cases.filter((c) => c.operationId === op.operationId).map((c) => c.check);
      expect(checks, op.operationId).toContain('other_project');
      if (op.scopes.length) expect(checks, op.operationId).toContain('missing_scope');
    }
  });

  for (const c of cases) {
    it(`${c.title} (through execute)`, async () => {
      const r = await run(c);
      if (c.expect.notListedProjectId) {
        expect(r.ok).toBe(true);
        const ids = ((r.value.data ?? r.value.projects) as { id: string }[]).map((p) => p.id);
        expect(ids).not.toContain(c.expect.notListedProjectId);
        expect(ids).toContain(t.otherProject.projectId);
        return;
      }
      expect(r.ok, JSON.stringify(r)).toBe(false);
      expect(r.status, JSON.stringify(r)).toBe(c.expect.status);
      if (c.expect.code) expect(r.code).toBe(c.expect.code);
      if (c.expect.param) expect(r.param).toBe(c.expect.param);
    });
  }

  it('gets past the access checks with the right credential (guards the cases above)', async () => {
    for (const c of cases.filter((x) => x.check === 'other_project')) {
      const r = await run(c, t.keys.admin);
      const why = `${c.operationId}: ${JSON.stringify(r)}`;
      if (r.ok) continue;
      expect(r.status, why).not.toBe(401);
      if (r.status === 403) expect(r.code, why).not.toBe('insufficient_scope');
      if (r.status === 404) expect(r.param, why).not.toBe('project_id');
    }
  });

  it('refuses every hidden operation, whatever the credential', async () => {
    const admin = await clientFor(t.keys.admin);
    for (const op of catalogue.filter((o) => o.sensitive)) {
      const r = await execute(admin, `return await api.call(${JSON.stringify(op.operationId)}, {})`);
      expect(r.error, op.operationId).toMatchObject({ status: 404, code: 'unknown_operation' });
      expect(r.calls).toEqual([]);
    }
  });
});
