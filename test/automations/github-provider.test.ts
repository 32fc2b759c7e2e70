/**
 * The GitHub provider of draft pull requests (src/domain/automations/git.ts) against a local fake of
 * the GitHub REST API over real HTTP: which calls it makes, in what order, with what bodies, and
 * that it opens a draft on the default branch.
 */
import http from 'node:http';
import type { AddressInfo } from 'node:net';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { githubProvider, GitProviderError } from '../../src/domain/automations/git.js';

const seen: { method: string; path: string; auth: string | undefined; body: any }[] = [];
let api = '';
const server = http.createServer((req, res) => {
  let raw = '';
  req.on('data', (c) => (raw += c));
  req.on('end', () => {
    const body = raw ? JSON.parse(raw) : null;
    seen.push({ method: req.method!, path: req.url!, auth: req.headers.authorization, body });
    const reply = (status: number, json: unknown) => res.writeHead(status, { 'content-type': 'application/json' }).end(JSON.stringify(json));
    const p = req.url!;
    if (req.method === 'GET' && p === '/repos/acme/shop') return reply(200, { default_branch: 'main' });
    if (req.method === 'GET' && p === '/repos/acme/shop/git/ref/heads/main') return reply(200, { object: { sha: 'base-sha' } });
    if (req.method === 'GET' && p === '/repos/acme/shop/git/commits/base-sha') return reply(200, { sha: 'base-sha', tree: { sha: 'base-tree' } });
    if (req.method === 'POST' && p === '/repos/acme/shop/git/trees') return reply(201, { sha: 'new-tree' });
    if (req.method === 'POST' && p === '/repos/acme/shop/git/commits') return reply(201, { sha: 'new-commit' });
    if (req.method === 'POST' && p === '/repos/acme/shop/git/refs') return body.ref === 'refs/heads/taken' ? reply(422, { message: 'Reference already exists' }) : reply(201, { ref: body.ref });
    if (req.method === 'POST' && p === '/repos/acme/shop/pulls') return reply(201, { number: 42, html_url: 'https://github.com/acme/shop/pull/42' });
    reply(404, { message: 'Not Found' });
  });
});

beforeAll(async () => {
  await new Promise<void>((r) => server.listen(0, '127.0.0.1', r));
  api = `http://127.0.0.1:${(server.address() as AddressInfo).port}`;
});
afterAll(() => new Promise<void>((r) => server.close(() => r())));

const diff = [
  'diff --git a/src/retry.ts b/src/retry.ts',
  'new file mode 100644',
  '--- /dev/null',
  '+++ b/src/retry.ts',
  '@@ -0,0 +1,2 @@',
  '+export const RETRIES = 3;',
  '+export const BACKOFF_MS = 200;',
  'diff --git a/src/old.ts b/src/old.ts',
  'deleted file mode 100644',
  '--- a/src/old.ts',
  '+++ /dev/null',
  '@@ -1 +0,0 @@',
  '-export {};',
  '',
].join('\n');

describe('GitHub draft pull requests', () => {
  it('commits the patched files as a tree on a new branch from the default branch and opens a draft', async () => {
    seen.length = 0;
    const gh = githubProvider('acme/shop', 'ghp_test', api);
    const out = await gh.createDraftPr({ title: 'Retry card charges', body: 'From automation run r1.', branch: 'sightline/retry', diff });
    expect(out).toEqual({ provider: 'github', branch: 'sightline/retry', commit: 'new-commit', url: 'https://github.com/acme/shop/pull/42', number: 42 });
    expect(seen.map((r) => `${r.method} ${r.path}`)).toEqual([
      'GET /repos/acme/shop',
      'GET /repos/acme/shop/git/ref/heads/main',
      'GET /repos/acme/shop/git/commits/base-sha',
      'POST /repos/acme/shop/git/trees',
      'POST /repos/acme/shop/git/commits',
      'POST /repos/acme/shop/git/refs',
      'POST /repos/acme/shop/pulls',
    ]);
    expect(seen.every((r) => r.auth === 'Bearer ghp_test')).toBe(true);
    expect(seen[3]!.body).toEqual({
      base_tree: 'base-tree',
      tree: [
        { path: 'src/retry.ts', mode: '100644', type: 'blob', content: 'export const RETRIES = 3;\nexport const BACKOFF_MS = 200;\n' },
        { path: 'src/old.ts', mode: '100644', type: 'blob', sha: null },
      ],
    });
    expect(seen[4]!.body).toEqual({ message: 'Retry card charges\n\nFrom automation run r1.', tree: 'new-tree', parents: ['base-sha'] });
    expect(seen[5]!.body).toEqual({ ref: 'refs/heads/sightline/retry', sha: 'new-commit' });
    expect(seen[6]!.body).toEqual({ title: 'Retry card charges', body: 'From automation run r1.', head: 'sightline/retry', base: 'main', draft: true });
  });

  it('refuses a diff that edits an existing file before calling GitHub, and reports API failures clearly', async () => {
    seen.length = 0;
    const gh = githubProvider('acme/shop', 'ghp_test', api);
    const edit = 'diff --git a/src/a.ts b/src/a.ts\n--- a/src/a.ts\n+++ b/src/a.ts\n@@ -1 +1 @@\n-a\n+b\n';
    await expect(gh.createDraftPr({ title: 't', body: 'b', branch: 'x', diff: edit })).rejects.toThrow(GitProviderError);
    await expect(gh.createDraftPr({ title: 't', body: 'b', branch: 'x', diff: edit })).rejects.toThrow(/edits an existing file/);
    expect(seen).toEqual([]);
    await expect(gh.createDraftPr({ title: 't', body: 'b', branch: 'taken', diff })).rejects.toThrow(/GitHub POST \/git\/refs: 422 Reference already exists/);
  });
});
