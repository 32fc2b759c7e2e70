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

// Four faces run every case with the same few credentials: well over the default 1,200 calls a
// minute each. The rate limit has tests of its own.
const t = await startTestServer({ config: { rateLimit: { limit: 1_000_000, windowSeconds: 60 } } });
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
        const ids = ((res.body.data ?? res.body.projects) as { id: string }[]).map((p) => p.id);
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

// ---------------------------------------------------------------------------------------------
// The access matrix over every face (issue 10): REST, the typed client, the CLI and MCP execute
// (the real SDK Client over Streamable HTTP). Every case is answered as the spec says, never 5xx,
// and no answer carries the other tenant's data.

import { Client } from '@modelcontextprotocol/sdk/client/index.js';
import { StreamableHTTPClientTransport } from '@modelcontextprotocol/sdk/client/streamableHttp.js';
import { credentialHeaders, matrixCases, type MatrixCase, type MatrixCredential } from './helpers/access-cases.js';
import { hashSecret } from '../src/domain/identity/secrets.js';
import { createClient, SightlineError } from '../src/client/index.js';
import { runInProcess } from './cli/helpers.js';

const matrix = matrixCases({
  ...t,
  now: () => t.s.core.now(),
  revokeKey(secret) {
    const k = t.s.services.identity.apiKeyBySecretHash(hashSecret(secret))!;
    t.s.services.identity.revokeApiKey(k.project_id, k.id, t.s.core.now());
  },
});

interface Outcome {
  status: number;
  code?: string;
  /** Raw text of the answer, to look for the other tenant's data. */
  text: string;
  projectIds?: string[];
}

/** Text that only the other tenant's data holds. */
const OTHER_TENANT = [t.otherProject.organizationId, 'Other org'];

function check(c: MatrixCase, o: Outcome, face: string) {
  const why = `${face} ${c.title}: ${o.status} ${o.text.slice(0, 300)}`;
  expect(o.status, why).toBeLessThan(500);
  expect(o.status, why).toBe(c.expect.status);
  if (c.expect.code) expect(o.code, why).toBe(c.expect.code);
  if (c.expect.notListedProjectId) expect(o.projectIds, why).not.toContain(c.expect.notListedProjectId);
  if (c.check !== 'other_project' && c.check !== 'other_org_user') for (const s of OTHER_TENANT) expect(o.text, why).not.toContain(s);
}

async function viaRest(c: MatrixCase): Promise<Outcome> {
  const req = httpRequestFor(c.op, c.input, null);
  const res = await fetch(t.url + req.path, { method: req.method, headers: { ...req.headers, ...credentialHeaders(c.credential) }, body: req.body });
  const text = await res.text();
  const body = text ? JSON.parse(text) : null;
  if (res.status >= 400) expect(body, `${c.title}: Shape A`).toMatchObject({ type: expect.any(String), code: expect.any(String), message: expect.any(String) });
  return { status: res.status, code: body?.code, text, projectIds: (body?.data ?? body?.projects)?.map((p: { id: string }) => p.id) };
}

async function viaClient(c: MatrixCase): Promise<Outcome> {
  const cred = c.credential.kind === 'token' ? { accessToken: c.credential.secret! } : c.credential.secret ? { apiKey: c.credential.secret } : {};
  const client = createClient({ baseUrl: t.url, projectId: t.projectId, maxRetries: 0, ...cred });
  try {
    const value = (await client.request(c.operationId, c.input)) as { data?: { id: string }[]; projects?: { id: string }[] };
    return { status: 200, text: JSON.stringify(value), projectIds: (value?.data ?? value?.projects)?.map((p) => p.id) };
  } catch (err) {
    if (!(err instanceof SightlineError)) throw err;
    return { status: err.status, code: err.code, text: JSON.stringify(err.body ?? err.message) };
  }
}

async function viaCli(c: MatrixCase): Promise<Outcome | 'no_credential'> {
  const [tag, ...verb] = c.operationId.split('.');
  const env: Record<string, string> = { SIGHTLINE_URL: t.url };
  if (c.credential.kind === 'key') env.SIGHTLINE_API_KEY = c.credential.secret!;
  const r = await runInProcess([tag!, verb.join('.'), '--body', JSON.stringify(c.input), '--json'], env, {
    loadStoredToken: async () => (c.credential.kind === 'token' ? { accessToken: c.credential.secret!, baseUrl: t.url } : null),
  });
  if (c.credential.kind === 'none') return r.code === 2 && /No credential/.test(r.stderr) ? 'no_credential' : { status: -1, text: r.stderr };
  if (r.code === 0) {
    const value = JSON.parse(r.stdout) as { data?: { id: string }[]; projects?: { id: string }[] };
    return { status: 200, text: r.stdout, projectIds: (value?.data ?? value?.projects)?.map((p) => p.id) };
  }
  const m = /error (\d{3}) (\S+):/.exec(r.stderr);
  return m ? { status: Number(m[1]), code: m[2], text: r.stderr } : { status: -1, text: r.stderr };
}

describe('the access matrix', () => {
  it('covers every operation with every wrong credential that applies to it', () => {
    for (const op of catalogue) {
      const checks = new Set(matrix.filter((c) => c.operationId === op.operationId).map((c) => c.check));
      for (const k of ['no_credential', 'expired_key', 'revoked_key', 'expired_token', 'revoked_token', 'other_project', 'other_org_user'] as const) {
        expect(checks.has(k), `${op.operationId} ${k}`).toBe(true);
      }
      expect(matrix.filter((c) => c.operationId === op.operationId && c.check === 'missing_scope').length, op.operationId).toBe(op.scopes.length);
    }
    console.log(`access matrix: ${matrix.length} cases over ${catalogue.length} operations, 4 faces`);
  });

  // Every case of the catalogue runs in turn through each face: the time grows with the catalogue
  // (and with the machine's load), so these get more than the default 30 seconds.
  it('answers every case as the spec says over REST', async () => {
    for (const c of matrix) check(c, await viaRest(c), 'REST');
  }, 120_000);

  it('answers every case as the spec says through the typed client', async () => {
    for (const c of matrix) check(c, await viaClient(c), 'client');
  }, 120_000);

  it('answers every case as the spec says through the CLI', async () => {
    for (const c of matrix) {
      const o = await viaCli(c);
      if (o === 'no_credential') continue; // the CLI refuses to send a request without one
      check(c, o, 'CLI');
    }
  }, 120_000);

  it('answers every case as the spec says through MCP execute (real SDK Client over HTTP)', async () => {
    const byCredential = new Map<string, { cred: MatrixCredential; cases: MatrixCase[] }>();
    for (const c of matrix) {
      const k = `${c.credential.kind}:${c.credential.secret}`;
      if (!byCredential.has(k)) byCredential.set(k, { cred: c.credential, cases: [] });
      byCredential.get(k)!.cases.push(c);
    }
    for (const { cred, cases } of byCredential.values()) {
      const transport = new StreamableHTTPClientTransport(new URL(`${t.url}/mcp`), { requestInit: { headers: credentialHeaders(cred) } });
      const client = new Client({ name: 'access-matrix', version: '1.0.0' });
      const connected = await client.connect(transport).then(
        () => true,
        (err: Error) => {
          // A credential that does not authenticate never reaches a tool: the MCP endpoint answers 401.
          expect(String(err), cases[0]!.title).toMatch(/401|unauthenticated|nauthorized/);
          return false;
        },
      );
      if (!connected) {
        for (const c of cases) expect(c.expect.status, c.title).toBe(401);
        continue;
      }
      try {
        for (let i = 0; i < cases.length; i += 40) {
          const chunk = cases.slice(i, i + 40);
          const code = `const out = [];
            for (const [id, input] of ${JSON.stringify(chunk.map((c) => [c.operationId, c.input]))}) {
              try { const v = await api.call(id, input); out.push({ status: 200, text: JSON.stringify(v), projectIds: (v && (v.data || v.projects) || []).map((p) => p.id) }); }
              catch (e) { out.push({ status: e.status, code: e.code, text: String(e.message) }); }
            }
            return out;`;
          const r = await client.callTool({ name: 'execute', arguments: { code } });
          const outcome = JSON.parse((r.content as { text: string }[])[0]!.text) as { result: Outcome[]; error: unknown };
          expect(outcome.error, JSON.stringify(outcome.error)).toBeNull();
          chunk.forEach((c, j) => {
            const o = outcome.result[j]!;
            // Hidden operations do not exist for the tool server.
            if (c.op.sensitive && c.expect.status !== 401) expect(o, c.title).toMatchObject({ status: 404, code: 'unknown_operation' });
            else check(c, o, 'MCP');
          });
        }
      } finally {
        await client.close();
      }
    }
  });
});
