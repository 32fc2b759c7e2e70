import { afterAll, afterEach, describe, expect, it } from 'vitest';
import { createQuickJsExecutor } from '../../sandbox/quickjs-executor.js';
import type { ExecuteResult } from '../../sandbox/executor.js';
import { OPERATIONS, fakeHost } from './helpers.js';

// One worker, so every hostile script below runs on the same thread as the health checks after it.
// A generous kill grace keeps the host-side backstop out of the way on a loaded CI machine: these
// tests check that QuickJS itself stops each script (see pool.test.ts for the backstop).
const executor = createQuickJsExecutor({ wallClockMs: 1500, poolSize: 1 }, { killGraceMs: 3000 });
afterAll(() => executor.close());

/** Heavy (but bounded) scripts get a roomier clock so a slow CI machine does not turn them into timeouts. */
const ROOMY = { wallClockMs: 15_000 };

async function run(code: string, limits?: { wallClockMs: number }) {
  const fake = fakeHost();
  const res = await executor.execute({ code, operations: OPERATIONS, limits }, fake.host);
  return { ...res, received: fake.received };
}

/** After every hostile script the executor must still answer a normal one correctly. */
afterEach(async () => {
  const res = await run(`const p = await api.errors.list({ project: 'api' }); console.log('healthy'); return p.total;`);
  expect(res).toMatchObject({ result: 1, error: null, logs: ['healthy'] });
  expect(res.calls).toHaveLength(1);
});

function expectError(res: ExecuteResult, name: string) {
  expect(res.error, JSON.stringify(res.error)).not.toBeNull();
  expect(res.error!.name).toBe(name);
  expect(res.error!.message.length).toBeGreaterThan(10);
  expect(res.result).toBeNull();
}

describe('hostile scripts', () => {
  it('while (true) {} times out cleanly', async () => {
    const res = await run(`console.log('spinning'); while (true) {}`);
    expectError(res, 'TimeoutError');
    expect(res.error!.message).toContain('exceeded the 1.5 s limit');
    expect(res.logs).toEqual(['spinning']);
  });

  it('a catch block cannot swallow the timeout', async () => {
    const res = await run(`for (;;) { try { while (true) {} } catch (e) { console.log('caught', String(e)) } }`);
    expectError(res, 'TimeoutError');
    expect(res.logs).toEqual([]);
  });

  it("'x'.repeat(2**28) hits the memory limit", async () => {
    const res = await run(`return 'x'.repeat(2 ** 28).length`);
    expectError(res, 'MemoryLimitError');
    expect(res.error!.message).toContain('64 MiB');
  });

  it('gradual allocation hits the memory limit', async () => {
    // Many allocations that are each far below the limit (QuickJS' own accounting misses these in
    // the emscripten build; the capped WebAssembly heap is what stops them).
    const res = await run(`const keep = []; while (true) keep.push(new Float64Array(1 << 17).fill(keep.length), { n: keep.length });`, ROOMY);
    expectError(res, 'MemoryLimitError');
  });

  it('unbounded recursion hits the stack limit', async () => {
    const res = await run(`function f() { return f() } f()`);
    expectError(res, 'StackOverflowError');
  });

  it('stack overflow inside the script is catchable and the script can carry on', async () => {
    const res = await run(`function f(n) { return f(n + 1) + 1 } try { f(0) } catch (e) { return e.message }`);
    expect(res.error).toBeNull();
    expect(res.result).toMatch(/stack/);
  });

  it('10,000 host calls stop at the call limit; the host sees at most 100', async () => {
    const res = await run(`for (let i = 0; i < 10000; i++) await api.errors.list({ i }); return 'done';`, ROOMY);
    expect(res.error).toMatchObject({ name: 'ApiError', status: 429, code: 'call_limit_exceeded' });
    expect(res.received).toHaveLength(100);
    expect(res.calls).toHaveLength(100);
  });

  it('2,000 calls fired without awaiting also stop at the limit', async () => {
    const res = await run(`
      const settled = await Promise.allSettled(Array.from({ length: 2000 }, (_, i) => api.errors.list({ i })));
      return settled.filter((s) => s.status === 'rejected' && s.reason.code === 'call_limit_exceeded').length;
    `, ROOMY);
    expect(res.error).toBeNull();
    expect(res.result).toBe(1900);
    expect(res.received).toHaveLength(100);
  });

  it('a 50 MB result is refused or truncated, never delivered whole', async () => {
    const res = await run(`return 'x'.repeat(50 * 1024 * 1024)`, ROOMY);
    if (res.error) {
      expect(res.error.name).toBe('MemoryLimitError');
    } else {
      expect(typeof res.result).toBe('string');
      expect(res.result as string).toMatch(/…\[truncated: result was .*\d+ bytes, limit 262144/);
      expect(Buffer.byteLength(res.result as string)).toBeLessThanOrEqual(256 * 1024);
    }
  });

  it('an 8 MB log line is capped', async () => {
    const res = await run(`console.log('x'.repeat(8 * 1024 * 1024)); return 'ok'`, ROOMY);
    if (!res.error) {
      expect(res.result).toBe('ok');
      expect(res.logs.join('').length).toBeLessThanOrEqual(257 * 1024);
    } else {
      expect(res.error.name).toBe('MemoryLimitError');
    }
  });

  it('cannot reach process through the Function constructor', async () => {
    const res = await run(`return this.constructor.constructor('return process')()`);
    expectError(res, 'ReferenceError');
    expect(res.error!.message).toContain('process');

    const probe = await run(`
      const results = {};
      try { results.viaFunction = typeof Function('return this')().process } catch (e) { results.viaFunction = 'threw' }
      try { results.viaCtor = typeof await (async () => {}).constructor('return process')() } catch (e) { results.viaCtor = 'threw ' + e.name }
      return results;
    `);
    expect(probe.result).toEqual({ viaFunction: 'undefined', viaCtor: 'threw ReferenceError' });
  });

  it('has no require, fetch, process, timers or host bridge globals', async () => {
    const res = await run(`
      const names = ['require', 'fetch', 'process', 'module', 'Buffer', 'setTimeout', 'setInterval', 'setImmediate',
        'XMLHttpRequest', 'WebSocket', 'Deno', 'Bun', 'std', 'os', 'hostCall', 'hostLog', '__host_call', 'parentPort'];
      const types = {};
      for (const n of names) types[n] = typeof globalThis[n];
      return { types, globals: Object.getOwnPropertyNames(globalThis).filter((n) => /host|call|require|process/i.test(n)) };
    `);
    expect(res.error).toBeNull();
    const { types, globals } = res.result as { types: Record<string, string>; globals: string[] };
    expect(Object.values(types).every((t) => t === 'undefined')).toBe(true);
    expect(globals).toEqual([]);
  });

  it('cannot import modules', async () => {
    const dynamic = await run(`const fs = await import('fs'); return typeof fs.readFileSync`);
    expect(dynamic.error).not.toBeNull();
    expect(dynamic.result).toBeNull();
    const fromFunction = await run(`return await Function("return import('node:child_process')")()`);
    expect(fromFunction.error).not.toBeNull();
  });

  it('api objects are frozen: reassignment and prototype pollution change nothing', async () => {
    const res = await run(`
      const original = api.errors.list;
      try { api.errors.list = () => 'pwned' } catch (e) {}
      try { api.errors = { list: () => 'pwned' } } catch (e) {}
      try { api.call = () => 'pwned' } catch (e) {}
      try { globalThis.api = { errors: { list: () => 'pwned' } } } catch (e) {}
      try { api.__proto__.call = () => 'pwned' } catch (e) {}
      try { Object.setPrototypeOf(api.errors, { list: () => 'pwned' }) } catch (e) {}
      try { Object.defineProperty(api.errors, 'list', { value: () => 'pwned' }) } catch (e) {}
      Object.prototype.x = 1;
      Object.prototype.ok = false;
      Object.prototype.error = { status: 500, code: 'polluted', message: 'polluted' };
      JSON.stringify = () => '{"injected":true}';
      JSON.parse = () => ({ ok: true, value: 'pwned' });
      Promise.prototype.then = function () { throw new Error('hijacked then') };
      const page = await api.errors.list({ project: 'web' });
      const viaCall = await api.call('errors.get', { id: 'e3' });
      return {
        same: api.errors.list === original,
        frozen: [Object.isFrozen(api), Object.isFrozen(api.errors), Object.isFrozen(api.errors.list)],
        total: page.total,
        title: viaCall.title,
      };
    `);
    expect(res.error).toBeNull();
    expect(res.result).toMatchObject({ same: true, frozen: [true, true, true], total: 2, title: 'Error: connection refused' });
    expect(res.received).toEqual([
      { operationId: 'errors.list', input: { project: 'web' } },
      { operationId: 'errors.get', input: { id: 'e3' } },
    ]);
  });

  it('pollution does not leak into the next execute', async () => {
    const first = await run(`Object.prototype.polluted = 'yes'; Array.prototype.map = null; globalThis.leak = 1; return 1`);
    expect(first.error).toBeNull();
    const second = await run(`return [({}).polluted, typeof [].map, typeof globalThis.leak]`);
    expect(second.result).toEqual([null, 'function', 'undefined']);
  });

  it('catching the api error and inspecting it exposes nothing of the host', async () => {
    const res = await run(`
      try { await api.call('nope.nope') } catch (e) {
        return { keys: Object.getOwnPropertyNames(e).sort(), ctorName: e.constructor.name };
      }
    `);
    expect(res.result).toEqual({ keys: ['code', 'message', 'name', 'stack', 'status'], ctorName: 'ApiError' });
  });

  it('none of the above needed a worker to be replaced', () => {
    // Timeouts, memory and stack errors are all stopped inside QuickJS; the worker is reused.
    // (A leaked QuickJS handle would abort in JS_FreeRuntime and show up here as a replacement.)
    expect(executor.stats().replaced).toBe(0);
    expect(executor.stats().started).toBe(1);
  });
});
