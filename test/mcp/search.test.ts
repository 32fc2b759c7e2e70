import { afterAll, describe, expect, it } from 'vitest';
import { catalogue } from '../../operations/index.js';
import { createSearchIndex, queryTerms, stem } from '../../src/mcp/search.js';
import { SEARCH_DEFAULT_LIMIT, searchAnswerer } from '../../src/mcp/server.js';
import { startTestServer } from '../helpers/server.js';
import { inMemoryClient, search, searchRaw } from './helpers.js';
import { SEARCH_EVAL } from './search-eval.js';

const visible = catalogue.filter((op) => !op.sensitive);
const hidden = catalogue.filter((op) => op.sensitive);

describe('search ranking', () => {
  const index = createSearchIndex(catalogue);
  const present = new Set(visible.map((op) => op.operationId));
  const tasks = SEARCH_EVAL.filter((t) => present.has(t.operationId));

  it('has an evaluation set of at least 80 tasks covering every MCP-visible operation', () => {
    expect(SEARCH_EVAL.length).toBeGreaterThanOrEqual(80);
    const covered = new Set(SEARCH_EVAL.map((t) => t.operationId));
    const uncovered = visible.map((op) => op.operationId).filter((id) => !covered.has(id));
    expect(uncovered, 'add tasks for these operations to test/mcp/search-eval.ts').toEqual([]);
  });

  it('finds the needed operation in the top 3 for at least 95% of the tasks, with a median answer under 2 KB', () => {
    const answer = searchAnswerer(index, catalogue);
    let top1 = 0;
    let top3 = 0;
    const misses: string[] = [];
    const bytes: number[] = [];
    for (const t of tasks) {
      const { out } = answer(null, { query: t.task });
      bytes.push(Buffer.byteLength(JSON.stringify(out)));
      const ids = out.results.map((r) => r.operationId);
      expect(ids.length).toBeLessThanOrEqual(SEARCH_DEFAULT_LIMIT);
      if (ids[0] === t.operationId) top1++;
      if (ids.includes(t.operationId)) top3++;
      else misses.push(`${t.task} → ${t.operationId} (got ${ids.join(', ') || 'nothing'})`);
    }
    bytes.sort((a, b) => a - b);
    const median = bytes[Math.floor(bytes.length / 2)]!;
    const pct = (n: number) => ((100 * n) / tasks.length).toFixed(1);
    console.log(
      `MCP search eval: ${tasks.length} tasks over ${present.size} operations — top-1 ${pct(top1)}%, top-3 recall ${pct(top3)}%; ` +
        `answer size median ${median} B, max ${bytes[bytes.length - 1]} B`,
    );
    if (misses.length) console.log(`  misses:\n  ${misses.join('\n  ')}`);
    expect(top3 / tasks.length).toBeGreaterThanOrEqual(0.95);
    expect(median).toBeLessThan(2048);
  });

  it('never indexes a sensitive operation, whatever the query', () => {
    expect(index.operations.some((op) => op.sensitive)).toBe(false);
    for (const op of hidden) {
      for (const q of [op.operationId, op.summary, `${op.summary} ${op.description}`]) {
        expect(index.search(q, 20).map((h) => h.op.operationId)).not.toContain(op.operationId);
      }
    }
  });

  it('puts an operationId written out first', () => {
    for (const op of visible) expect(index.search(`use ${op.operationId} please`, 1)[0]!.op.operationId).toBe(op.operationId);
  });

  it('matches word forms and developer synonyms', () => {
    expect(stem('deployments')).toBe(stem('deploy'));
    expect(stem('deployed')).toBe(stem('deploy'));
    expect(stem('errors')).toBe(stem('error'));
    expect(stem('created')).toBe(stem('create'));
    const terms = queryTerms('bug').map((t) => t.term);
    expect(terms).toContain(stem('error'));
    expect(queryTerms('user reports').map((t) => t.term)).toContain('feedback');
  });

  it('returns nothing for a query with no known word', () => {
    expect(index.search('zzqx wvvq', 5)).toEqual([]);
  });
});

const t = await startTestServer();
afterAll(() => t.close());
const admin = await inMemoryClient(t, t.keys.admin);
const ingestOnly = await inMemoryClient(t, t.keys.ingest);

describe('the search tool', () => {
  it('answers 3 hits by default: the first with typed signatures, all with a ready call and no project_id boilerplate', async () => {
    const out = await search(admin, 'show me new user feedback');
    expect(out.results).toHaveLength(3);
    const [hit, ...rest] = out.results;
    expect(hit).toEqual({
      operationId: 'feedback.list',
      summary: expect.any(String),
      risk: 'read',
      input: expect.any(String),
      output: expect.any(String),
      call: 'await api.feedback.list({ status: "new", limit: 20 })',
    });
    expect(hit.input).toContain('limit?: number /* 1..100; default 50 */');
    expect(hit.input).toContain('cursor?: string');
    expect(hit.output).toContain('next_cursor: string | null');
    expect(hit.output).toMatch(/^\{ data: \{ id: string;/);
    for (const r of out.results) {
      expect(r.input).not.toContain('project_id');
      expect(r).not.toHaveProperty('description');
    }
    // Later hits: field names and the top level of the output.
    for (const r of rest) expect(r.input).toMatch(/^\{ [\w?, ]*\}$|^\{\}$/);
  });

  it('names the scopes the caller lacks, and only then', async () => {
    const asIngest = await search(ingestOnly, 'list user feedback');
    const list = asIngest.results.find((r: any) => r.operationId === 'feedback.list');
    expect(list.missing_scopes).toEqual(['errors:read']);
    const create = (await search(ingestOnly, 'submit user feedback')).results.find((r: any) => r.operationId === 'feedback.create');
    expect(create).not.toHaveProperty('missing_scopes');
    const asAdmin = await search(admin, 'list user feedback');
    expect(asAdmin.results.some((r: any) => 'missing_scopes' in r)).toBe(false);
  });

  it('returns at most `limit` hits and refuses a limit above 10', async () => {
    expect((await search(admin, 'list get create update', 2)).results.length).toBe(2);
    expect((await search(admin, 'list get create update', 10)).results.length).toBe(10);
    const r = await admin.callTool({ name: 'search', arguments: { query: 'list', limit: 11 } });
    expect(r.isError).toBe(true);
  });

  it('returns one operation in full by operationId: the whole description and every field, never cut', async () => {
    const op = visible.find((o) => o.operationId === 'errors.list')!;
    const out = await searchRaw(admin, { operationId: 'errors.list' });
    expect(out.isError).toBe(false);
    const d = out.body.operation;
    expect(d).toMatchObject({ operationId: 'errors.list', description: op.description, risk: 'read', scopes: ['errors:read'], scopes_held: true, pagination: 'offset' });
    expect(op.description.length).toBeGreaterThan(400); // longer than any list answer would show
    for (const field of Object.keys(op.input.shape)) expect(d.input).toContain(`${field}?:`);
    expect(d.input).toContain('Case-insensitive substring of title, type, fingerprint, service or environment.');
    expect(d.output).toContain('facets: { service: { value: string; count: number }[]');
    expect(d.output).not.toContain('…');
  });

  it('says an unknown operationId does not exist and suggests the closest ones', async () => {
    const out = await searchRaw(admin, { operationId: 'errors.delete' });
    expect(out.isError).toBe(true);
    expect(out.body.hint).toMatch(/There is no operation errors\.delete\. Closest: errors\./);
  });

  it('says a hidden operation exists but is not available over MCP, instead of unrelated hits', async () => {
    for (const q of ['create an API key', 'revoke a key', 'list api keys']) {
      const out = await search(admin, q);
      expect(out.results, q).toEqual([]);
      expect(out.unavailable.length, q).toBeGreaterThan(0);
      expect(out.unavailable[0].operationId, q).toMatch(/^apiKeys\./);
      expect(out.hint, q).toContain('not available over MCP');
    }
    const byId = await searchRaw(admin, { operationId: 'apiKeys.create' });
    expect(byId.body.unavailable).toEqual([{ operationId: 'apiKeys.create', summary: expect.any(String), note: expect.stringContaining('not available over MCP') }]);
    expect(byId.body).not.toHaveProperty('operation');
    // A query about an offered resource is answered with it, even when it mentions a key.
    const projects = await search(admin, 'which projects can this API key access');
    expect(projects.results[0].operationId).toBe('projects.list');
  });

  it('never shows a hidden operation as a hit, even searched by name', async () => {
    for (const q of ['api keys', 'apiKeys.list', 'create an API key secret', 'revoke a key']) {
      const out = await search(admin, q, 10);
      expect(out.results.map((r: any) => r.operationId).filter((id: string) => hidden.some((h) => h.operationId === id))).toEqual([]);
    }
  });

  it('hints at the operation groups when nothing matches', async () => {
    const out = await search(admin, 'zzqx wvvq');
    expect(out.results).toEqual([]);
    expect(out.hint).toContain('feedback');
  });
});
