/**
 * Runtime reuse (issue 19 item 5) keeps every execute isolated: each gets a fresh context, and
 * nothing one script leaves behind runs, or is visible, in the next one on the same worker.
 */
import { afterAll, describe, expect, it } from 'vitest';
import { createQuickJsExecutor } from '../../sandbox/quickjs-executor.js';
import { OPERATIONS, fakeHost } from './helpers.js';

// One worker: every script below runs on the same thread (and runtime, when it is reused).
const executor = createQuickJsExecutor({ wallClockMs: 3000, poolSize: 1 }, { killGraceMs: 3000 });
afterAll(() => executor.close());
const run = (code: string, wallClockMs?: number) => executor.execute({ code, operations: OPERATIONS, limits: wallClockMs ? { wallClockMs } : undefined }, fakeHost().host);

describe('one worker, many executes', () => {
  it('gives every execute fresh globals and prototypes', async () => {
    await run(`globalThis.leak = 'secret'; Object.prototype.polluted = 1; Array.prototype.push = () => 0; JSON.parse = () => 'hijacked'; return 1`);
    const next = await run(`return [typeof leak, ({}).polluted ?? null, [].push(1), JSON.parse('2')]`);
    expect(next).toMatchObject({ result: ['undefined', null, 1, 2], error: null });
  });

  it('never runs a promise reaction one script left queued in the next script', async () => {
    const first = await run(`return { toJSON() { Promise.resolve().then(() => { while (true) {} }); return 'first'; } }`);
    expect(first).toMatchObject({ result: 'first', error: null });
    // Had the first script's loop run here, it would have spent this script's whole wall clock.
    const second = await run(`const p = await api.errors.list({}); return ['second', p.total]`);
    expect(second).toMatchObject({ result: ['second', 3], error: null });
  });

  it('reads errors and outlines oversized results with the intrinsics captured before the script ran', async () => {
    // The helpers that read an error or outline a result are compiled into the context only when
    // needed, after the script ran: what it replaced must not change what they report.
    const tamper = `JSON.stringify = () => 'hijacked'; Object.keys = () => ['x']; Array.isArray = () => false; ` +
      `String = () => 'S'; RegExp.prototype.exec = () => null; Function.prototype.apply = () => 'A'; Reflect.apply = () => 'R';`;
    const failed = await run(`${tamper}\nthrow new RangeError('boom')`);
    expect(failed.error).toMatchObject({ name: 'RangeError', message: 'boom (line 2)' });
    const apiFailed = await run(`${tamper}\nawait api.call('errors.get', { id: 'missing' })`);
    expect(apiFailed.error?.name).toBe('ApiError');
    const big = await executor.execute(
      { code: `${tamper}\nreturn { rows: Array.from({ length: 5000 }, (_, i) => ({ id: i, text: 'x'.repeat(50) })) }`, operations: OPERATIONS, limits: { maxResultBytes: 1024 } },
      fakeHost().host,
    );
    expect(big.error).toBeNull();
    expect(big.resultTruncated?.shape).toBe('{ rows: Array(5000) of { id: number, text: string } }');
  });

  it('offers no FinalizationRegistry, whose callbacks could run during a later execute', async () => {
    expect((await run(`return typeof FinalizationRegistry`)).result).toBe('undefined');
  });

  it('keeps each execute\'s memory limit after many executes on the same runtime', async () => {
    for (let i = 0; i < 5; i++) expect((await run(`return Array.from({ length: 1000 }, (_, j) => j).length`)).result).toBe(1000);
    const big = await run(`const keep = []; while (true) keep.push(new Float64Array(1 << 17).fill(keep.length));`, 20_000);
    expect(big.error?.name).toBe('MemoryLimitError');
    expect((await run(`return 'alive'`)).result).toBe('alive');
  });
});
