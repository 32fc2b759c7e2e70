/**
 * Error documentation (issue 10 item 9): one entry per code the server can return, generated from
 * declared errors; every doc_url anchor exists; /docs is HTML for a browser, Markdown otherwise.
 * The source scan is what keeps it from drifting: a new `throw new XError(..., 'new_code')` anywhere
 * in src/ or operations/ without a declaration fails here.
 */
import { existsSync, mkdtempSync, readdirSync, readFileSync, rmSync, statSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import ts from 'typescript';
import { chromium } from 'playwright-core';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { startTestServer, type TestServer } from '../helpers/server.js';
import { errorDocs } from '../../src/http/error-docs.js';
import { catalogue } from '../../operations/index.js';

let t: TestServer;
beforeAll(async () => {
  t = await startTestServer();
});
afterAll(() => t.close());

const ROOT = join(import.meta.dirname, '../..');

/** For each error class, which constructor argument is the code, and its default. */
const CODE_ARG: Record<string, { index: number; fallback?: string }> = {
  AppError: { index: 2 },
  ValidationError: { index: 2, fallback: 'invalid_parameter' },
  ForbiddenError: { index: 0 },
  ConflictError: { index: 0 },
  UnprocessableError: { index: 0 },
  RateLimitedError: { index: 2, fallback: 'rate_limited' },
  InsufficientScopeError: { index: 1, fallback: 'insufficient_scope' },
  NotFoundError: { index: -1, fallback: 'not_found' },
  AuthenticationError: { index: -1, fallback: 'unauthenticated' },
  PayloadTooLargeError: { index: -1, fallback: 'payload_too_large' },
  InternalError: { index: -1, fallback: 'internal_error' },
};

function tsFiles(dir: string): string[] {
  const out: string[] = [];
  for (const name of readdirSync(dir)) {
    const p = join(dir, name);
    if (statSync(p).isDirectory()) out.push(...tsFiles(p));
    else if (p.endsWith('.ts')) out.push(p);
  }
  return out;
}

/** Every Shape A code raised with a literal in src/ and operations/ (file:line for the message). */
function raisedCodes(): Map<string, string> {
  const found = new Map<string, string>();
  for (const file of [...tsFiles(join(ROOT, 'src')), ...tsFiles(join(ROOT, 'operations'))]) {
    const text = readFileSync(file, 'utf8');
    if (!/Error\(/.test(text)) continue;
    const sf = ts.createSourceFile(file, text, ts.ScriptTarget.Latest, true);
    const visit = (node: ts.Node) => {
      if (ts.isNewExpression(node) && ts.isIdentifier(node.expression) && CODE_ARG[node.expression.text]) {
        const spec = CODE_ARG[node.expression.text]!;
        const arg = spec.index >= 0 ? node.arguments?.[spec.index] : undefined;
        const code = arg && ts.isStringLiteralLike(arg) ? arg.text : arg ? undefined : spec.fallback;
        if (code) found.set(code, `${file.slice(ROOT.length + 1)}:${sf.getLineAndCharacterOfPosition(node.getStart()).line + 1}`);
      }
      ts.forEachChild(node, visit);
    };
    visit(sf);
  }
  return found;
}

describe('error documentation', () => {
  const docs = errorDocs(catalogue);
  const documented = new Set(docs.map((d) => d.code));

  it('has an entry for every code raised anywhere in the server', () => {
    const raised = raisedCodes();
    expect(raised.size).toBeGreaterThan(20);
    const missing = [...raised].filter(([code]) => !documented.has(code)).map(([code, where]) => `${code} (${where})`);
    expect(missing).toEqual([]);
  });

  it('has an entry for every error an operation declares, naming the operation', () => {
    for (const op of catalogue) for (const e of op.errors) expect(docs.find((d) => d.code === e.code)?.operations, e.code).toContain(op.operationId);
  });

  it('serves an anchor at /docs for every code, in Markdown and in HTML', async () => {
    const md = await (await fetch(`${t.url}/docs`)).text();
    const html = await (await fetch(`${t.url}/docs`, { headers: { accept: 'text/html,application/xhtml+xml,*/*;q=0.8' } })).text();
    for (const code of documented) {
      expect(md, code).toContain(`### ${code}\n`);
      expect(html, code).toContain(`id="${code}"`);
    }
  });

  it('links every error response to an entry that exists', async () => {
    const res = await fetch(`${t.url}/v1/projects/${t.projectId}/logs?nope=1`, { headers: { 'x-service-key': t.keys.admin } });
    const body = (await res.json()) as { doc_url: string; code: string };
    expect(body.doc_url).toBe(`${t.s.config.baseUrl}/docs#unknown_field`);
    const html = await (await fetch(`${t.url}/docs`, { headers: { accept: 'text/html' } })).text();
    expect(html).toContain(`id="${body.code}"`);
  });

  it('keeps Markdown for clients that do not ask for HTML', async () => {
    const res = await fetch(`${t.url}/docs`);
    expect(res.headers.get('content-type')).toContain('text/markdown');
    const html = await fetch(`${t.url}/docs`, { headers: { accept: 'text/html' } });
    expect(html.headers.get('content-type')).toContain('text/html');
    expect(html.headers.get('vary')).toContain('Accept');
  });
});

const CHROMIUM = '/usr/bin/chromium';
describe.skipIf(!existsSync(CHROMIUM))('/docs in headless Chromium', () => {
  it('renders as a page where a doc_url anchor lands on its entry', async () => {
    const profile = mkdtempSync(join(tmpdir(), 'sightline-chromium-'));
    const context = await chromium.launchPersistentContext(profile, {
      executablePath: CHROMIUM,
      headless: true,
      args: ['--headless', '--no-sandbox', '--disable-gpu', '--no-first-run', '--disable-background-networking', '--disable-component-update', '--disable-sync'],
      timeout: 30_000,
    });
    try {
      const page = await context.newPage();
      await page.goto(`${t.url}/docs#insufficient_scope`);
      expect(await page.title()).toBe('Sightline documentation');
      const heading = page.locator('h3#insufficient_scope');
      expect(await heading.textContent()).toBe('insufficient_scope');
      expect(await page.locator('table').count()).toBeGreaterThan(0);
    } finally {
      await context.close();
      rmSync(profile, { recursive: true, force: true });
    }
  }, 60_000);
});
