import { getEventListeners } from 'node:events';
import { afterEach, describe, expect, it } from 'vitest';
import { createQuickJsExecutor, type QuickJsExecutor } from '../../sandbox/quickjs-executor.js';
import type { HostCall } from '../../sandbox/executor.js';
import { DEFAULT_HANDLERS, OPERATIONS, fakeHost, sleep } from './helpers.js';

const open: QuickJsExecutor[] = [];
function make(...args: Parameters<typeof createQuickJsExecutor>): QuickJsExecutor {
  const ex = createQuickJsExecutor(...args);
  open.push(ex);
  return ex;
}
afterEach(async () => {
  await Promise.all(open.splice(0).map((ex) => ex.close()));
});

const healthy = `const p = await api.errors.list({ project: 'web' }); return p.total;`;

describe('worker pool', () => {
  it('a runaway script does not block the main event loop; the hung worker is terminated and replaced', async () => {
    // Guest interrupt disabled: only the host-side timer can stop this script.
    const ex = make({ wallClockMs: 800, poolSize: 1 }, { disableGuestInterrupt: true, killGraceMs: 0 });
    const { host } = fakeHost();
    const warm = await ex.execute({ code: healthy, operations: OPERATIONS }, host);
    expect(warm, JSON.stringify(warm)).toMatchObject({ result: 2 }); // warm the worker

    let ticks = 0;
    const ticker = setInterval(() => ticks++, 10);
    const started = Date.now();
    const res = await ex.execute({ code: `while (true) {}`, operations: OPERATIONS }, host);
    clearInterval(ticker);

    expect(res.error?.name).toBe('TimeoutError');
    expect(res.error?.message).toContain('exceeded the 0.8 s limit');
    expect(Date.now() - started).toBeGreaterThanOrEqual(750);
    expect(ticks).toBeGreaterThan(5); // ~80 expected; 0 if the loop ran on the main thread
    expect(ex.stats()).toMatchObject({ replaced: 1, workers: 0 });

    const after = await ex.execute({ code: healthy, operations: OPERATIONS }, host);
    expect(after).toMatchObject({ result: 2, error: null });
    expect(ex.stats()).toMatchObject({ replaced: 1, started: 2, workers: 1 });
  });

  it('with the guest interrupt armed, a runaway script is stopped inside QuickJS and the worker is reused', async () => {
    const ex = make({ wallClockMs: 600, poolSize: 1 }, { killGraceMs: 3000 });
    const { host } = fakeHost();
    let ticks = 0;
    const ticker = setInterval(() => ticks++, 10);
    const res = await ex.execute({ code: `let n = 0; while (true) { n++ }`, operations: OPERATIONS }, host);
    clearInterval(ticker);
    expect(res.error?.name).toBe('TimeoutError');
    expect(ticks).toBeGreaterThan(20);
    expect((await ex.execute({ code: healthy, operations: OPERATIONS }, host)).result).toBe(2);
    expect(ex.stats()).toMatchObject({ replaced: 0, started: 1 });
  });

  it('a cancelled execute stops at once, even a script that never yields, and the pool serves the next one', async () => {
    // A 60 s wall clock: only the cancel can end this script within the test's time.
    const ex = make({ wallClockMs: 60_000, poolSize: 1 });
    const { host } = fakeHost();
    const calls: string[] = [];
    const recording: HostCall = async (op, input) => (calls.push(op), host(op, input));
    const ac = new AbortController();
    const running = ex.execute({ code: `await api.errors.list({}); while (true) {}`, operations: OPERATIONS, signal: ac.signal }, recording);
    for (let i = 0; i < 500 && calls.length === 0; i++) await sleep(10);
    expect(calls).toEqual(['errors.list']);
    // A second execute waits for the only worker; cancelled while waiting, it never starts.
    const waitingAc = new AbortController();
    const waiting = ex.execute({ code: `await api.logs.search({}); return 'ran'`, operations: OPERATIONS, signal: waitingAc.signal }, recording);
    waitingAc.abort();
    expect(await waiting).toMatchObject({ result: null, error: { name: 'CancelledError' } });
    ac.abort();
    const res = await running;
    expect(res.error?.name).toBe('CancelledError');
    expect(res.calls.map((c) => c.operationId)).toEqual(['errors.list']);
    expect(ex.stats()).toMatchObject({ replaced: 1 });
    expect(await ex.execute({ code: healthy, operations: OPERATIONS }, host)).toMatchObject({ result: 2, error: null });
    expect(calls).toEqual(['errors.list']); // the cancelled waiting script never called
    // Already aborted: nothing runs.
    expect(await ex.execute({ code: healthy, operations: OPERATIONS, signal: AbortSignal.abort() }, recording)).toMatchObject({ error: { name: 'CancelledError' } });
    expect(calls).toEqual(['errors.list']);
  });

  it('leaves no listener on a caller signal once its executes end (one signal may serve many)', async () => {
    const ex = make({ wallClockMs: 2000, poolSize: 1 });
    const { host } = fakeHost();
    const ac = new AbortController();
    for (let i = 0; i < 5; i++) expect(await ex.execute({ code: healthy, operations: OPERATIONS, signal: ac.signal }, host)).toMatchObject({ result: 2, error: null });
    expect(getEventListeners(ac.signal, 'abort')).toHaveLength(0);
    ac.abort(); // aborting later touches nothing that ended
    expect(await ex.execute({ code: healthy, operations: OPERATIONS }, host)).toMatchObject({ result: 2, error: null });
  });

  it('a host call that never answers times out within the wall clock', async () => {
    const ex = make({ wallClockMs: 600, poolSize: 1 });
    const never: HostCall = () => new Promise(() => {});
    const res = await ex.execute({ code: `console.log('calling'); await api.errors.list({}); return 'no';`, operations: OPERATIONS }, never);
    expect(res.error?.name).toBe('TimeoutError');
    expect(res.logs).toEqual(['calling']);
    const { host } = fakeHost();
    expect((await ex.execute({ code: healthy, operations: OPERATIONS }, host)).result).toBe(2);
  });

  it('runs concurrent executes correctly (8 at once on 2 workers)', async () => {
    const ex = make({ poolSize: 2 });
    const seen: Array<{ operationId: string; input: any }> = [];
    const host: HostCall = async (operationId, input: any) => {
      seen.push({ operationId, input });
      await sleep(5 + (input.job % 3) * 5);
      return { ok: true, value: { job: input.job, step: input.step, doubled: input.job * 2 } };
    };
    const jobs = Array.from({ length: 8 }, (_, job) =>
      ex.execute(
        {
          code: `
            const out = [];
            for (let step = 0; step < 3; step++) out.push((await api.logs.search({ job: ${job}, step })).doubled);
            console.log('job', ${job});
            return { job: ${job}, out };
          `,
          operations: OPERATIONS,
        },
        host,
      ),
    );
    expect(ex.stats().queued).toBeGreaterThan(0);
    const results = await Promise.all(jobs);
    results.forEach((res, job) => {
      expect(res.error).toBeNull();
      expect(res.result).toEqual({ job, out: [job * 2, job * 2, job * 2] });
      expect(res.logs).toEqual([`job ${job}`]);
      expect(res.calls).toHaveLength(3);
    });
    expect(seen).toHaveLength(24);
    expect(ex.stats()).toMatchObject({ started: 2, workers: 2, busy: 0, queued: 0, replaced: 0 });
  });

  it('queues when all workers are busy; the wait counts toward the wall clock and is reported', async () => {
    const ex = make({ poolSize: 1, wallClockMs: 5000 });
    const { host, received } = fakeHost();
    const slow = ex.execute({ code: `while (true) {}`, operations: OPERATIONS, limits: { wallClockMs: 500 } }, host);
    const fast = ex.execute({ code: healthy, operations: OPERATIONS }, host);
    const [a, b] = await Promise.all([slow, fast]);
    expect(a.error?.name).toBe('TimeoutError');
    expect(b).toMatchObject({ result: 2, error: null });
    expect(b.queuedMs).toBeGreaterThan(0);
    expect(b.elapsedMs).toBeGreaterThanOrEqual(b.queuedMs!);
    expect(received).toHaveLength(1);
  });

  it('an execute whose wall clock runs out while it waits for a worker ends without running', async () => {
    const ex = make({ poolSize: 1, wallClockMs: 5000 });
    const { host, received } = fakeHost();
    const slow = ex.execute({ code: `while (true) {}`, operations: OPERATIONS, limits: { wallClockMs: 1500 } }, host);
    const starved = await ex.execute({ code: healthy, operations: OPERATIONS, limits: { wallClockMs: 200 } }, host);
    expect(starved.error?.name).toBe('TimeoutError');
    expect(starved.error?.message).toMatch(/waiting for a sandbox worker; the script never started/);
    expect(received).toEqual([]);
    expect((await slow).error?.name).toBe('TimeoutError');
  });

  it('replaces a worker that crashes and keeps answering', async () => {
    const ex = make({ poolSize: 1 }, { workerUrl: new URL('./fixtures/crashing-worker.mjs', import.meta.url) });
    const { host } = fakeHost();
    expect((await ex.execute({ code: healthy, operations: OPERATIONS }, host)).result).toBe(2);
    const crashed = await ex.execute({ code: `/* __crash__ */ return 1`, operations: OPERATIONS }, host);
    expect(crashed.error?.name).toBe('SandboxCrashError');
    expect(crashed.result).toBeNull();
    expect((await ex.execute({ code: healthy, operations: OPERATIONS }, host)).result).toBe(2);
    expect(ex.stats()).toMatchObject({ replaced: 1, started: 2 });
  });

  it('a script that fills the heap and then receives a large API response fails cleanly without corrupting the worker', async () => {
    const ex = make({ poolSize: 1, wallClockMs: 20_000 });
    const big = 'y'.repeat(4 * 1024 * 1024);
    const host: HostCall = async (operationId) => ({ ok: true, value: operationId === 'logs.search' ? big : { small: true } });
    const res = await ex.execute(
      {
        code: `
          const keep = [];
          try { while (true) keep.push(new Float64Array(1 << 14)); } catch (e) {}
          try { while (true) keep.push({ n: keep.length }); } catch (e) {}
          const text = await api.logs.search({ q: 'everything' });
          return [keep.length, text.length];
        `,
        operations: OPERATIONS,
      },
      host,
    );
    expect(res.result).toBeNull();
    expect(res.error?.name).toBe('MemoryLimitError');
    // The same pool still computes correct answers afterwards.
    for (let i = 0; i < 3; i++) {
      const after = await ex.execute(
        { code: `const s = await api.logs.search({}); return [s.length, [1, 2, 3].map((x) => x * ${i}).join(',')]`, operations: OPERATIONS },
        host,
      );
      expect(after).toMatchObject({ result: [big.length, `${i},${2 * i},${3 * i}`], error: null });
    }
  });

  it('close() terminates workers, settles pending executes and refuses new ones', async () => {
    const ex = make({ poolSize: 1, wallClockMs: 5000 });
    const never: HostCall = () => new Promise(() => {});
    const running = ex.execute({ code: `await api.errors.list({})`, operations: OPERATIONS }, never);
    const queued = ex.execute({ code: `return 1`, operations: OPERATIONS }, never);
    await sleep(300);
    expect(ex.stats()).toMatchObject({ workers: 1, busy: 1, queued: 1 });
    await ex.close();
    expect(ex.stats()).toMatchObject({ workers: 0, busy: 0, queued: 0 });
    const [a, b] = await Promise.all([running, queued]);
    expect(a.error?.name).toBe('SandboxClosedError');
    expect(b.error?.name).toBe('SandboxClosedError');
    const late = await ex.execute({ code: `return 1`, operations: OPERATIONS }, never);
    expect(late.error?.name).toBe('SandboxClosedError');
    await ex.close(); // idempotent
  });

  it('execute never throws, even for nonsense input', async () => {
    const ex = make({ poolSize: 1 });
    const { host } = fakeHost();
    const res = await ex.execute({ code: 42 as unknown as string, operations: OPERATIONS }, host);
    expect(res.error?.name).toBe('TypeError');
    const noOps = await ex.execute({ code: `return typeof api.call`, operations: undefined as unknown as string[] }, host);
    expect(noOps).toMatchObject({ result: 'function', error: null });
  });

  it('carries host calls over the shared channel, and batches or answers too large for it as messages, with the same results', async () => {
    const echo = { 'logs.search': (input: { query?: string; repeat?: number }) => ({ items: [{ message: (input?.query ?? '').repeat(input?.repeat ?? 1) }] }) };
    // Sequential and concurrent calls, non-ASCII text, logs, an error answer, a big answer to a small
    // call (1.4 MB of UTF-8, more than the 1 MiB buffer) and a big input (2 MB, likewise).
    const code = `
      let n = 0;
      for (let i = 0; i < 5; i++) n += (await api.errors.list({ project: 'web' })).total;
      console.log('héllo', n);
      const all = await Promise.all([api.errors.get({ id: 'e3' }), api.errors.get({ id: 'nope' }).catch((e) => e.status)]);
      const big = (await api.logs.search({ query: 'é', repeat: 700000 })).items[0].message;
      const huge = (await api.logs.search({ query: 'ü'.repeat(1000000) })).items[0].message;
      return [n, all[0].title, all[1], big.length, big.slice(0, 3), huge.length];`;
    const results = [];
    for (const sharedChannel of [true, false]) {
      const ex = make({ poolSize: 1 }, { sharedChannel });
      const { host } = fakeHost({ ...DEFAULT_HANDLERS, ...echo });
      const res = await ex.execute({ code, operations: OPERATIONS }, host);
      expect(res.error, JSON.stringify(res.error)).toBeNull();
      results.push({ result: res.result, logs: res.logs, calls: res.calls.map((c) => [c.operationId, c.status]) });
      const { channelBatches, messageBatches } = ex.stats();
      // 5 sequential calls, one Promise.all pair, two big ones: 8 batches.
      if (sharedChannel) expect({ channelBatches, messageBatches }).toEqual({ channelBatches: 7, messageBatches: 1 });
      else expect({ channelBatches, messageBatches }).toEqual({ channelBatches: 0, messageBatches: 8 });
    }
    expect(results[0]).toEqual(results[1]);
    expect(results[0]!.result).toEqual([10, 'Error: connection refused', 404, 700000, 'ééé', 1000000]);
    expect(results[0]!.logs).toEqual(['héllo 10']);
  });
});
