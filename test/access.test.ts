/**
 * Generated over the whole catalogue, through the REST face: every operation refuses a missing
 * credential (401), a credential of another project (404), a key without its scope (403) and, for a
 * strict body, an unknown field (400). The same cases run through MCP execute elsewhere
 * (test/helpers/access-cases.ts).
 */
import { afterAll, describe, expect, it } from 'vitest';
import { startTestServer } from './helpers/server.js';
import { accessCases, httpRequestFor, type AccessCase } from './helpers/access-cases.js';
import { catalogue } from '../operations/index.js';

const t = await startTestServer();
afterAll(() => t.close());
const cases = await accessCases(t);

async function run(c: AccessCase) {
  const req = httpRequestFor(c.op, c.input, c.credential);
  const res = await fetch(t.url + req.path, { method: req.method, headers: req.headers, body: req.body });
  const text = await res.text();
  return { status: res.status, body: text ? JSON.parse(text) : null };
}

describe('generated access checks', () => {
  it('cover every operation of the catalogue with the checks that apply to it', () => {
    for (const op of catalogue) {
      const checks = cases.filter((c) => c.operationId === op.operationId).map((c) => c.check);
      expect(checks, op.operationId).toContain('no_credential');
      expect(checks, op.operationId).toContain('other_project');
      if (op.scopes.length) expect(checks, op.operationId).toContain('missing_scope');
    }
    // Strict bodies exist today (feedback.create, deployments.create, apiKeys.create, ...).
    expect(cases.filter((c) => c.check === 'unknown_field').length).toBeGreaterThanOrEqual(4);
  });

  for (const c of cases) {
    it(c.title, async () => {
      const res = await run(c);
      expect(res.status, JSON.stringify(res.body)).toBe(c.expect.status);
      if (c.expect.notListedProjectId) {
        const ids = (res.body.data as { id: string }[]).map((p) => p.id);
        expect(ids).not.toContain(c.expect.notListedProjectId);
        expect(ids).toContain(t.otherProject.projectId);
        return;
      }
      expect(res.body).toMatchObject({ type: expect.any(String), code: expect.any(String), message: expect.any(String) });
      if (c.expect.code) expect(res.body.code).toBe(c.expect.code);
      if (c.expect.param) expect(res.body.param).toBe(c.expect.param);
    });
  }
});

describe('the same request with the right credential', () => {
  it('gets past access checks for every operation (no 401, scope 403 or project 404)', async () => {
    // Guards the generated cases: they fail for the reason they claim. A valid admin key on our
    // project is never refused for its credential, scope or project (feature gates may still say 403).
    for (const c of cases.filter((x) => x.check === 'other_project')) {
      const res = await run({ ...c, credential: t.keys.admin });
      const why = `${c.operationId}: ${res.status} ${JSON.stringify(res.body)}`;
      expect(res.status, why).not.toBe(401);
      if (res.status === 403) expect(res.body.code, why).not.toBe('insufficient_scope');
      if (res.status === 404) expect(res.body.param, why).not.toBe('project_id');
    }
  });
});
