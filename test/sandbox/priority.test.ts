/**
 * Issue 10: heavy credentials' sandbox scripts run on threads at a lower OS priority than the main
 * thread (Linux: nice is per thread), so a tenant's busy loops take only the CPU the event loop does
 * not need; light credentials' scripts run at the main thread's priority.
 */
import { readdirSync, readFileSync } from 'node:fs';
import { getPriority } from 'node:os';
import { afterEach, describe, expect, it } from 'vitest';
import { createQuickJsExecutor, type QuickJsExecutor } from '../../sandbox/quickjs-executor.js';
import { OPERATIONS, fakeHost } from './helpers.js';

/** Niceness of each thread of this process (field 19 of /proc/self/task/<tid>/stat). */
function threadNiceness(): Map<number, number> {
  const out = new Map<number, number>();
  for (const tid of readdirSync('/proc/self/task')) {
    try {
      const stat = readFileSync(`/proc/self/task/${tid}/stat`, 'utf8');
      const fields = stat.slice(stat.lastIndexOf(')') + 2).split(' ');
      out.set(Number(tid), Number(fields[16]));
    } catch {
      // the thread ended
    }
  }
  return out;
}

let ex: QuickJsExecutor | null = null;
afterEach(async () => {
  await ex?.close();
  ex = null;
});

describe.runIf(process.platform === 'linux')('sandbox worker priority', () => {
  it("runs a light credential's scripts at the main thread's priority (not behind every busy thread on the machine)", async () => {
    const before = getPriority(0);
    ex = createQuickJsExecutor({ poolSize: 1 }, { nice: 7, burstWorkers: 0 });
    expect((await ex.execute({ code: 'return 1', operations: OPERATIONS, credential: 'B' }, fakeHost().host)).result).toBe(1);
    expect(ex.stats().workers).toBe(1);
    const niced = [...threadNiceness().values()].filter((n) => n !== before);
    expect(niced).toEqual([]);
  });

  it("runs a heavy credential's scripts on a worker niced as configured, kept for that credential, and leaves the main thread alone", async () => {
    const before = getPriority(0);
    ex = createQuickJsExecutor({ poolSize: 2, wallClockMs: 1500 }, { nice: 7, burstWorkers: 0, heavyCpuMs: 100 });
    const { host } = fakeHost();
    // A's busy loop: its run time counts as A's CPU while it runs (the loop itself drops to nice 19).
    const loop = ex.execute({ code: 'while (true) {}', operations: OPERATIONS, credential: 'A' }, host);
    await new Promise((r) => setTimeout(r, 300));
    expect((await ex.execute({ code: 'return 2', operations: OPERATIONS, credential: 'A' }, host)).result).toBe(2);
    const niced = [...threadNiceness().entries()].filter(([, n]) => n === 7);
    expect(niced.length).toBe(1);
    expect(niced.some(([tid]) => tid === process.pid)).toBe(false);
    expect(getPriority(0)).toBe(before);
    expect((await loop).error?.name).toBe('TimeoutError');
    // B (light) never runs on A's niced worker: it makes room for a worker at the main thread's priority.
    const started = ex.stats().started;
    expect((await ex.execute({ code: 'return 3', operations: OPERATIONS, credential: 'B' }, host)).result).toBe(3);
    expect(ex.stats().started).toBeGreaterThan(started);
    while ([...threadNiceness().values()].some((n) => n === 7 || n === 19)) await new Promise((r) => setTimeout(r, 20));
  });

  it('demotes a script that keeps running to nice 19, then replaces its worker (a thread cannot be raised again)', async () => {
    ex = createQuickJsExecutor({ poolSize: 1, wallClockMs: 1500 }, { nice: 7, burstWorkers: 0 });
    const { host } = fakeHost();
    expect((await ex.execute({ code: 'return 1', operations: OPERATIONS }, host)).result).toBe(1);
    const startedBefore = ex.stats().started;
    let sawDemoted = false;
    let running = true;
    const run = ex.execute({ code: 'while (true) {}', operations: OPERATIONS }, host).finally(() => (running = false));
    while (running) {
      if ([...threadNiceness().values()].includes(19)) sawDemoted = true;
      await new Promise((r) => setTimeout(r, 20));
    }
    expect((await run).error?.name).toBe('TimeoutError');
    expect(sawDemoted).toBe(true);
    // The next script runs on a new worker at the pool's priority.
    expect((await ex.execute({ code: 'return 2', operations: OPERATIONS }, host)).result).toBe(2);
    expect(ex.stats().started).toBeGreaterThan(startedBefore);
    // The demoted thread goes away (terminated asynchronously).
    while ([...threadNiceness().values()].includes(19)) await new Promise((r) => setTimeout(r, 20));
  });

  it("keeps a demoted worker for its credential's next scripts only, instead of starting a thread per busy loop", async () => {
    // One worker, no burst workers (and so no spares): every new thread shows in `started`. The host's
    // kill backstop waits long: on a loaded machine a thread at nice 19 may get no CPU for the default
    // 500 ms after its deadline, and would be terminated before its own interrupt reports the timeout
    // (seen once in CI: workers 0) — that backstop is another mechanism than the one tested here.
    ex = createQuickJsExecutor({ poolSize: 1, wallClockMs: 1000 }, { nice: 7, burstWorkers: 0, killGraceMs: 10_000 });
    const { host } = fakeHost();
    expect((await ex.execute({ code: 'return 1', operations: OPERATIONS, credential: 'A' }, host)).result).toBe(1);
    const loop = { code: 'while (true) {}', operations: OPERATIONS, credential: 'A' };
    expect((await ex.execute(loop, host)).error?.name).toBe('TimeoutError');
    const started = ex.stats().started;
    // A's next busy loop runs on the same (demoted) worker: no new thread, and it runs at nice 19.
    let sawDemoted = false;
    let running = true;
    const again = ex.execute(loop, host).finally(() => (running = false));
    while (running) {
      if ([...threadNiceness().values()].includes(19)) sawDemoted = true;
      await new Promise((r) => setTimeout(r, 20));
    }
    expect((await again).error?.name).toBe('TimeoutError');
    expect(sawDemoted).toBe(true);
    expect(ex.stats()).toMatchObject({ started, workers: 1, idleReady: 0 });
    // Another credential never gets that worker: the demoted one makes room for a new one at the pool's priority.
    expect((await ex.execute({ code: 'return 2', operations: OPERATIONS, credential: 'B' }, host)).result).toBe(2);
    expect(ex.stats()).toMatchObject({ started: started + 1, workers: 1 });
    while ([...threadNiceness().values()].includes(19)) await new Promise((r) => setTimeout(r, 20));
  });
});
