/**
 * `node bin/sightline.mjs …` as a real child process against a running server: table and JSON
 * output, --all across pages, help at every level, and the exit codes 0 / 1 / 2.
 */
import { mkdirSync, mkdtempSync, writeFileSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { startTestServer, type TestServer } from '../helpers/server.js';
import { createClient } from '../../src/client/index.js';
import { runBin } from './helpers.js';

let t: TestServer;
let env: Record<string, string>;
let clock = Date.parse('2026-06-01T12:00:00.000Z');

beforeAll(async () => {
  t = await startTestServer({ now: () => clock });
  // An empty home: no stored `sightline login` token can leak into these runs.
  const home = mkdtempSync(join(tmpdir(), 'sightline-home-'));
  env = { SIGHTLINE_URL: t.url, SIGHTLINE_API_KEY: t.keys.admin, HOME: home, XDG_CONFIG_HOME: home, COLUMNS: '160' };
  const client = createClient({ baseUrl: t.url, apiKey: t.keys.admin });
  // Deployments have no quota: enough of them for several pages.
  for (let i = 0; i < 23; i++) {
    clock += 1000;
    await client.deployments.create({ deployment_id: `e2e-${String(i).padStart(2, '0')}`, service: 'web', environment: 'e2e', version: `1.0.${i}` });
  }
  await client.feedback.create({ message: 'Checkout page freezes on submit', environment: 'e2e' });
});
afterAll(() => t.close());

describe('sightline <tag> <verb> as a child process', () => {
  it('prints a table by default', async () => {
    const r = await runBin(['feedback', 'list', '--environment', 'e2e'], env);
    expect(r.code).toBe(0);
    expect(r.stderr).toBe('');
    const [header, row] = r.stdout.split('\n');
    expect(header).toMatch(/^id +message +environment +status +created_at/);
    expect(row).toContain('Checkout page freezes on submit');
  });

  it('prints JSON with --json', async () => {
    const r = await runBin(['deployments', 'list', '--environment', 'e2e', '--limit', '5', '--json'], env);
    expect(r.code).toBe(0);
    const body = JSON.parse(r.stdout);
    expect(body).toMatchObject({ total: 23, limit: 5, offset: 0 });
    expect(body.data.map((d: { deployment_id: string }) => d.deployment_id)).toEqual(['e2e-22', 'e2e-21', 'e2e-20', 'e2e-19', 'e2e-18']);
  });

  it('follows offset pagination with --all, printing every row and progress on stderr', async () => {
    const r = await runBin(['deployments', 'list', '--environment', 'e2e', '--limit', '10', '--all', '--json'], env);
    expect(r.code).toBe(0);
    const ids = JSON.parse(r.stdout).data.map((d: { deployment_id: string }) => d.deployment_id);
    expect(ids).toHaveLength(23);
    expect(new Set(ids).size).toBe(23);
    expect(r.stderr.trim().split('\n')).toEqual(['fetched 10 of 23 rows (1 page)', 'fetched 20 of 23 rows (2 pages)', 'fetched 23 of 23 rows (3 pages)']);

    const table = await runBin(['deployments', 'list', '--environment', 'e2e', '--limit', '10', '--all'], env);
    expect(table.code).toBe(0);
    const lines = table.stdout.trimEnd().split('\n');
    expect(lines[0]).toMatch(/^deployment_id +/);
    expect(lines.filter((l) => /^e2e-\d\d /.test(l))).toHaveLength(23);
  });

  it('answers --help at every level with exit 0', async () => {
    const [top, tag, op] = await Promise.all([
      runBin(['--help'], env),
      runBin(['feedback', '--help'], env),
      runBin(['feedback', 'create', '--help'], env),
    ]);
    expect([top.code, tag.code, op.code]).toEqual([0, 0, 0]);
    expect(top.stdout).toMatch(/^ {2}feedback +create, get, list, update$/m);
    expect(top.stdout).toMatch(/^ {2}start /m);
    expect(tag.stdout).toMatch(/^ {2}create +Submit user feedback +\[events:ingest\]$/m);
    expect(op.stdout).toMatch(/^ {2}--message <string> +\(required\)/m);
    expect(op.stdout).toContain('Scopes: events:ingest');
  });

  it('exits 2 on usage errors, printing nothing on stdout', async () => {
    const [bad, none, unknown] = await Promise.all([
      runBin(['deployments', 'list', '--limit', 'ten'], env),
      runBin([], env),
      runBin(['deployments', 'list', '--colour', 'red'], env),
    ]);
    expect([bad.code, none.code, unknown.code]).toEqual([2, 2, 2]);
    expect(bad.stderr).toContain('--limit expects an integer');
    expect(none.stderr).toContain('Usage');
    expect(unknown.stderr).toContain('Unknown flag --colour');
    expect(bad.stdout + none.stdout + unknown.stdout).toBe('');
  });

  it('exits 1 on an API error, printed readably', async () => {
    const r = await runBin(['deployments', 'list'], { ...env, SIGHTLINE_API_KEY: t.keys.ingest });
    expect(r.code).toBe(1);
    expect(r.stderr).toMatch(/^error 403 insufficient_scope: .*deployments:read/);
    const notFound = await runBin(['feedback', 'get', '--feedback-id', '00000000-0000-4000-8000-000000000000'], env);
    expect(notFound.code).toBe(1);
    expect(notFound.stderr).toMatch(/^error 404 not_found: Feedback was not found\./);
  });

  it('takes a body from stdin with --body -', async () => {
    const r = await runBin(['deployments', 'create', '--body', '-', '--json'], env, JSON.stringify({ deployment_id: 'from-stdin', status: 'ready' }));
    expect(r.code).toBe(0);
    expect(JSON.parse(r.stdout)).toMatchObject({ deployment_id: 'from-stdin', status: 'ready', project_id: t.projectId });
  });

  it('uses the token stored by `sightline login` when no API key is set, and says so when there is none', async () => {
    const home = mkdtempSync(join(tmpdir(), 'sightline-home-'));
    const { SIGHTLINE_API_KEY: _key, ...noKey } = env;
    const none = await runBin(['projects', 'list'], { ...noKey, HOME: home });
    expect(none.code).toBe(2);
    expect(none.stderr).toContain('No credential: set SIGHTLINE_API_KEY');
    // A stored login as src/cli/login.ts writes it; the server takes an API key as a bearer token,
    // so the admin key stands in for an OAuth access token here.
    mkdirSync(join(home, '.config', 'sightline'), { recursive: true });
    writeFileSync(
      join(home, '.config', 'sightline', 'credentials.json'),
      JSON.stringify({ version: 1, baseUrl: t.url, issuer: t.url, token_endpoint: `${t.url}/mcp/token`, client_id: 'cli', access_token: t.keys.admin, expires_at: Date.now() + 3600_000 }),
    );
    const stored = await runBin(['projects', 'list', '--json'], { ...noKey, HOME: home, SIGHTLINE_URL: '' });
    expect(stored.code, stored.stderr).toBe(0);
    expect(JSON.parse(stored.stdout).data.map((p: { id: string }) => p.id)).toEqual([t.projectId]);
  });
});
