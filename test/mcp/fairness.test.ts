/**
 * Issue 10 items 2 and 3 through the real MCP SDK Client: one tenant's busy loops do not stall
 * another tenant's executes or REST reads; executes beyond a credential's limit answer 429 with
 * `retry_after`; every operation an execute runs counts against the same per-credential rate
 * limit as REST, and the execute result shows what is left.
 */
import { afterAll, describe, expect, it } from 'vitest';
import { createQuickJsExecutor } from '../../sandbox/quickjs-executor.js';
import { api, startTestServer } from '../helpers/server.js';
import { execute, httpClient, inMemoryClient } from './helpers.js';

/**
 * The stated bound for tenant B while tenant A runs four `while (true) {}` scripts: 5 s. A's
 * scripts hold their workers for their whole 30 s wall clock here, so without a fair share B would
 * wait at least 30 s (19.7 s was measured before the fix with the default 10 s). Generous on
 * purpose: a loaded 2-core CI machine runs A's two busy threads, B and the test on two cores.
 */
const VICTIM_BOUND_MS = 5_000;

describe('tenant B while tenant A runs four busy loops', async () => {
  const t = await startTestServer();
  afterAll(() => t.close());
  // The default pool (2 workers, 2 executes at once per credential), with a long wall clock.
  const executor = createQuickJsExecutor({ wallClockMs: 30_000 });
  t.s.onClose.push(() => executor.close());
  const a = await inMemoryClient(t, t.keys.admin, { executor, limits: { wallClockMs: 30_000 } });
  const b = await inMemoryClient(t, t.otherProject.adminKey, { executor, limits: { wallClockMs: 30_000 } });

  it(`answers B's trivial execute and REST read within ${VICTIM_BOUND_MS / 1000} s, and refuses A's executes beyond 2 with 429`, async () => {
    // A server that has run executes before: its workers (and the spare) have started.
    await Promise.all([execute(a, 'return 1'), execute(b, 'return 1')]);
    while (executor.stats().idleReady < 3) await new Promise((r) => setTimeout(r, 20));

    const loops = Array.from({ length: 4 }, () =>
      a.callTool({ name: 'execute', arguments: { code: 'while (true) {}' } }).catch((err: unknown) => ({ closed: String(err) })),
    );
    // Two of A's four are refused at once; the other two hold both pool workers.
    const refused = (await Promise.all([loops[2], loops[3]])) as Array<{ structuredContent: any; isError: boolean }>;
    for (const r of refused) {
      expect(r.isError).toBe(true);
      expect(r.structuredContent.error).toMatchObject({ name: 'ConcurrencyLimitError', status: 429, code: 'too_many_executes', retry_after: expect.any(Number) });
    }
    expect(executor.stats().busy).toBe(2);

    const t0 = Date.now();
    const r = await execute(b, 'return 1');
    const executeMs = Date.now() - t0;
    expect(r).toMatchObject({ result: 1, error: null });

    const t1 = Date.now();
    const rest = await api(t, 'GET', `/v1/projects/${t.otherProject.projectId}`, { key: t.otherProject.adminKey });
    const restMs = Date.now() - t1;
    expect(rest.status).toBe(200);

    console.log(`fairness: B's execute ${executeMs} ms, B's REST read ${restMs} ms while A runs busy loops (bound ${VICTIM_BOUND_MS} ms)`);
    expect(executeMs).toBeLessThan(VICTIM_BOUND_MS);
    expect(restMs).toBeLessThan(VICTIM_BOUND_MS);
    // A's loops were still running all along.
    expect(executor.stats().busy).toBeGreaterThanOrEqual(2);
  });
});

describe('the per-credential execute limit over MCP', async () => {
  const t = await startTestServer();
  afterAll(() => t.close());
  const executor = createQuickJsExecutor({ poolSize: 1, perCredential: 2, wallClockMs: 3000 });
  t.s.onClose.push(() => executor.close());
  const a = await inMemoryClient(t, t.keys.admin, { executor, limits: { wallClockMs: 3000 } });

  it('answers an execute beyond it as a tool error with status 429, retry_after and a clear message, running nothing', async () => {
    const running = [execute(a, 'while (true) {}'), execute(a, 'while (true) {}')];
    const refused = await execute(a, 'return await api.feedback.create({ message: "must not be stored" })');
    expect(refused.isError).toBe(true);
    expect(refused.error).toMatchObject({ status: 429, code: 'too_many_executes', retry_after: expect.any(Number) });
    expect(refused.error!.retry_after).toBeGreaterThanOrEqual(1);
    expect(refused.error!.message).toMatch(/already has 2 executes running or waiting.*retry after \d+ s/);
    expect(refused.calls).toEqual([]);
    const stored = await api(t, 'GET', `/v1/projects/${t.projectId}/feedback?limit=100`, { key: t.keys.admin });
    expect(stored.body.data.some((f: { message: string }) => f.message === 'must not be stored')).toBe(false);
    const done = await Promise.all(running);
    expect(done.map((r) => r.error?.name)).toEqual(['TimeoutError', 'TimeoutError']);
    // B's second script waited for the one worker: its wall clock counted the wait and said so.
    expect(done.some((r) => r.time.queued_ms > 0)).toBe(true);
  });
});

describe('operations an execute runs count against the REST rate limit', async () => {
  const t = await startTestServer({ config: { rateLimit: { limit: 30, windowSeconds: 60 } } });
  afterAll(() => t.close());
  const client = (await httpClient(t, t.keys.admin)).client;

  it('shows the remaining budget, spends one per operation, and stops operations once it is spent (REST too)', async () => {
    const one = await execute(client, 'await api.projects.get(); await api.projects.get(); return 1');
    expect(one.rate_limit).toMatchObject({ limit: 30, remaining: expect.any(Number), reset_seconds: expect.any(Number) });
    const two = await execute(client, 'await api.projects.get(); await api.projects.get(); await api.projects.get(); return 1');
    // One for the tools/call request itself, three for the operations.
    expect(two.rate_limit!.remaining).toBe(one.rate_limit!.remaining - 4);

    const r = await execute(
      client,
      `const statuses = [];
       for (let i = 0; i < 50; i++) { try { await api.projects.get(); statuses.push(200); } catch (e) { statuses.push(e.status + ' ' + e.code); } }
       return statuses;`,
    );
    expect(r.error).toBeNull();
    const ok = r.result.filter((s: unknown) => s === 200).length;
    expect(ok).toBe(two.rate_limit!.remaining - 1);
    expect(r.result.slice(ok)).toEqual(Array(50 - ok).fill('429 rate_limited'));
    expect(r.rate_limit).toMatchObject({ limit: 30, remaining: 0 });
    // The budget is the credential's: REST is refused too.
    const rest = await api(t, 'GET', `/v1/projects/${t.projectId}`, { key: t.keys.admin });
    expect(rest.status).toBe(429);
  });
});
