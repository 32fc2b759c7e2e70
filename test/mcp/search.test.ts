import { afterAll, describe, expect, it } from 'vitest';
import { catalogue } from '../../operations/index.js';
import { createSearchIndex, queryTerms, stem } from '../../src/mcp/search.js';
import { startTestServer } from '../helpers/server.js';
import { inMemoryClient, search } from './helpers.js';
import { SEARCH_EVAL } from './search-eval.js';

const visible = catalogue.filter((op) => !op.sensitive);
const hidden = catalogue.filter((op) => op.sensitive);

describe('search ranking', () => {
  const index = createSearchIndex(catalogue);
  const present = new Set(visible.map((op) => op.operationId));
  const tasks = SEARCH_EVAL.filter((t) => present.has(t.operationId));

  it('has an evaluation set of at least 40 tasks covering every MCP-visible operation', () => {
    expect(SEARCH_EVAL.length).toBeGreaterThanOrEqual(40);
    const covered = new Set(SEARCH_EVAL.map((t) => t.operationId));
    const uncovered = visible.map((op) => op.operationId).filter((id) => !covered.has(id));
    expect(uncovered, 'add tasks for these operations to test/mcp/search-eval.ts').toEqual([]);
  });

  it('finds the needed operation in the top 3 for at least 90% of the evaluation tasks', () => {
    let top1 = 0;
    let top3 = 0;
    const misses: string[] = [];
    for (const t of tasks) {
      const ids = index.search(t.task, 3).map((h) => h.op.operationId);
      if (ids[0] === t.operationId) top1++;
      if (ids.includes(t.operationId)) top3++;
      else misses.push(`${t.task} → ${t.operationId} (got ${ids.join(', ') || 'nothing'})`);
    }
    const pct = (n: number) => ((100 * n) / tasks.length).toFixed(1);
    console.log(`MCP search eval: ${tasks.length} tasks over ${present.size} operations — top-1 ${pct(top1)}%, top-3 ${pct(top3)}%`);
    if (misses.length) console.log(`  misses:\n  ${misses.join('\n  ')}`);
    expect(top3 / tasks.length).toBeGreaterThanOrEqual(0.9);
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
  it('answers each hit with operationId, summary, risk, scopes, signatures and a ready call', async () => {
    const out = await search(admin, 'show me new user feedback');
    expect(out.query).toBe('show me new user feedback');
    const hit = out.results.find((r: any) => r.operationId === 'feedback.list');
    expect(hit).toMatchObject({
      operationId: 'feedback.list',
      summary: expect.any(String),
      risk: 'read',
      scopes: ['errors:read'],
      scopes_held: true,
      pagination: 'cursor',
      call: 'await api.feedback.list({ status: "new", limit: 20 })',
    });
    expect(hit.input).toContain('project_id?: string');
    expect(hit.input).toContain('limit?: number /* 1..100; default 50 */');
    expect(hit.input).toContain('cursor?: string');
    expect(hit.output).toContain('next_cursor: string | null');
    expect(hit.output).toMatch(/^\{ data: \{ id: string;/);
  });

  it('says whether the caller holds the scopes an operation needs', async () => {
    const asIngest = await search(ingestOnly, 'list user feedback');
    const list = asIngest.results.find((r: any) => r.operationId === 'feedback.list');
    expect(list.scopes_held).toBe(false);
    const create = (await search(ingestOnly, 'submit user feedback')).results.find((r: any) => r.operationId === 'feedback.create');
    expect(create.scopes_held).toBe(true);
  });

  it('returns 5 hits by default, at most `limit`, and refuses a limit above 20', async () => {
    expect((await search(admin, 'list')).results.length).toBeLessThanOrEqual(5);
    expect((await search(admin, 'list get create update', 2)).results.length).toBe(2);
    const r = await admin.callTool({ name: 'search', arguments: { query: 'list', limit: 21 } });
    expect(r.isError).toBe(true);
  });

  it('never shows a hidden operation, even searched by name', async () => {
    for (const q of ['api keys', 'apiKeys.list', 'create an API key secret', 'revoke a key']) {
      const out = await search(admin, q, 20);
      expect(out.results.map((r: any) => r.operationId).filter((id: string) => hidden.some((h) => h.operationId === id))).toEqual([]);
    }
  });

  it('hints at the operation groups when nothing matches', async () => {
    const out = await search(admin, 'zzqx wvvq');
    expect(out.results).toEqual([]);
    expect(out.hint).toContain('feedback');
  });
});
