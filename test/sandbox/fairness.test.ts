/**
 * Fair share of the sandbox across credentials (issue 10, item 2): a per-credential limit on
 * executes at once (429 with a retry time beyond it), waiting executes served round-robin by
 * credential (a credential that used more CPU recently after the others), a worker for a credential
 * with nothing running even when another fills the pool, and no host call started once an
 * execute's wall clock has run out.
 */
import { afterEach, describe, expect, it } from 'vitest';
import type { HostCall } from '../../sandbox/executor.js';
import { createQuickJsExecutor, type QuickJsExecutor } from '../../sandbox/quickjs-executor.js';
import { OPERATIONS, fakeHost } from './helpers.js';

const open: QuickJsExecutor[] = [];
function make(...args: Parameters<typeof createQuickJsExecutor>): QuickJsExecutor {
  const ex = createQuickJsExecutor(...args);
  open.push(ex);
  return ex;
}
afterEach(async () => {
  await Promise.all(open.splice(0).map((ex) => ex.close()));
});

/** A host whose calls wait until released, recording which execute called first. */
function gatedHost() {
  const started: string[] = [];
  const gates: Array<() => void> = [];
  const host: HostCall = (_op, input: any) => {
    started.push(String(input?.who));
    return new Promise((resolve) => gates.push(() => resolve({ ok: true, value: input?.who })));
  };
  const releaseOne = async () => {
    while (gates.length === 0) await new Promise((r) => setTimeout(r, 5));
    gates.shift()!();
  };
  return { host, started, releaseOne };
}

const call = (who: string) => `return await api.errors.list({ who: '${who}' })`;

describe('per-credential limit', () => {
  it('refuses an execute beyond the credential\'s limit with 429, a retry time, and runs nothing for it', async () => {
    const ex = make({ poolSize: 2, perCredential: 2, wallClockMs: 5000 });
    const { host, started, releaseOne } = gatedHost();
    const a1 = ex.execute({ code: call('a1'), operations: OPERATIONS, credential: 'A' }, host);
    const a2 = ex.execute({ code: call('a2'), operations: OPERATIONS, credential: 'A' }, host);
    const a3 = await ex.execute({ code: call('a3'), operations: OPERATIONS, credential: 'A' }, host);
    expect(a3.error).toMatchObject({ name: 'ConcurrencyLimitError', status: 429, code: 'too_many_executes', retry_after: expect.any(Number) });
    expect(a3.error!.retry_after).toBeGreaterThanOrEqual(1);
    expect(a3.error!.message).toMatch(/already has 2 executes running or waiting/);
    // Another credential is not affected by A's limit.
    const b = ex.execute({ code: call('b'), operations: OPERATIONS, credential: 'B' }, host);
    for (let i = 0; i < 3; i++) await releaseOne();
    const results = await Promise.all([a1, a2, b]);
    expect(results.map((r) => r.result).sort()).toEqual(['a1', 'a2', 'b']);
    expect(started.sort()).toEqual(['a1', 'a2', 'b']);
    expect(ex.stats().refused).toBe(1);
    // Once A's executes are done, A may run again.
    const again = ex.execute({ code: 'return 1', operations: OPERATIONS, credential: 'A' }, host);
    expect((await again).result).toBe(1);
  });
});

describe('round-robin queue', () => {
  it('serves a credential that has waited behind another\'s queue before that credential\'s next execute', async () => {
    // One worker and no burst workers: every execute waits its turn.
    const ex = make({ poolSize: 1, perCredential: 5, wallClockMs: 8000 }, { burstWorkers: 0 });
    const { host, started, releaseOne } = gatedHost();
    const runs = ['a1', 'a2', 'a3'].map((who) => ex.execute({ code: call(who), operations: OPERATIONS, credential: 'A' }, host));
    runs.push(ex.execute({ code: call('b1'), operations: OPERATIONS, credential: 'B' }, host));
    for (let i = 0; i < 4; i++) await releaseOne();
    await Promise.all(runs);
    expect(started).toEqual(['a1', 'b1', 'a2', 'a3']);
  });
});

describe('fair share by CPU', () => {
  it('serves a waiting credential that used little CPU before one that just used a lot', async () => {
    // One worker and no burst workers: every execute waits its turn.
    const ex = make({ poolSize: 1, perCredential: 5, wallClockMs: 8000 }, { burstWorkers: 0 });
    const { host } = fakeHost();
    const spin = (ms: number) => `const end = Date.now() + ${ms}; while (Date.now() < end) {} return 1`;
    // A burns 400 ms of CPU; B has used nothing.
    expect((await ex.execute({ code: spin(400), operations: OPERATIONS, credential: 'A' }, host)).result).toBe(1);
    const order: string[] = [];
    // C holds the only worker while A and then B queue up (A first).
    const c = ex.execute({ code: spin(150), operations: OPERATIONS, credential: 'C' }, host);
    const a = ex.execute({ code: 'return 1', operations: OPERATIONS, credential: 'A' }, host).then(() => order.push('A'));
    const b = ex.execute({ code: 'return 1', operations: OPERATIONS, credential: 'B' }, host).then(() => order.push('B'));
    await Promise.all([c, a, b]);
    // Served in turn alone, A (waiting first, never served since it went idle) would go first.
    expect(order).toEqual(['B', 'A']);
  });
});

describe('a credential with nothing running', () => {
  it('gets a worker while another credential\'s busy loops fill the pool', async () => {
    const ex = make({ poolSize: 1, perCredential: 2, wallClockMs: 8000 });
    const { host } = fakeHost();
    // Warm: the pool's worker and the spare have started.
    await Promise.all([ex.execute({ code: 'return 1', operations: OPERATIONS, credential: 'A' }, host), ex.execute({ code: 'return 1', operations: OPERATIONS, credential: 'B' }, host)]);
    while (ex.stats().idleReady < 2) await new Promise((r) => setTimeout(r, 20));
    let aDone = 0;
    const a = [1, 2].map(() => ex.execute({ code: 'while (true) {}', operations: OPERATIONS, credential: 'A' }, host).then((r) => (aDone++, r)));
    const b = await ex.execute({ code: 'const p = await api.errors.list({}); return p.total', operations: OPERATIONS, credential: 'B' }, host);
    expect(b, JSON.stringify(b.error)).toMatchObject({ result: 3, error: null });
    // B finished while A's busy loops were still running.
    expect(aDone).toBe(0);
    const done = await Promise.all(a);
    expect(done.map((r) => r.error?.name)).toEqual(['TimeoutError', 'TimeoutError']);
  });
});

describe('calls sent before the deadline', () => {
  it('are not started once the execute\'s wall clock has run out', async () => {
    const ex = make({ poolSize: 1, wallClockMs: 1500 });
    expect((await ex.execute({ code: 'return 1', operations: OPERATIONS }, fakeHost().host)).result).toBe(1); // warm the worker
    const starts: number[] = [];
    // Each call keeps the main thread busy for 150 ms, as an expensive operation would.
    const host: HostCall = async () => {
      starts.push(Date.now());
      const until = Date.now() + 150;
      while (Date.now() < until);
      return { ok: true, value: 1 };
    };
    const res = await ex.execute(
      { code: 'const all = await Promise.all(Array.from({ length: 40 }, (_, i) => api.errors.list({ i }))); return all.length', operations: OPERATIONS },
      host,
    );
    // The script ends on its wall clock, or (on a busy machine, when the refusal reaches it first) on
    // the refused call: either way past the deadline and saying so.
    if (res.error?.name === 'ApiError') expect(res.error.code).toBe('deadline_exceeded');
    else expect(res.error?.name).toBe('TimeoutError');
    // 40 × 150 ms = 6 s of work was asked for; only what fits in the wall clock was started.
    expect(starts.length).toBeLessThan(40);
    expect(starts.length).toBeGreaterThan(0);
  });
});
