import { afterAll, describe, expect, it } from 'vitest';
import { createQuickJsExecutor } from '../../sandbox/quickjs-executor.js';
import { DEFAULT_LIMITS, resolveLimits } from '../../sandbox/limits.js';
import { ERRORS, OPERATIONS, fakeHost } from './helpers.js';

const executor = createQuickJsExecutor({ wallClockMs: 3000 });
afterAll(() => executor.close());

function run(code: string, opts: { operations?: string[]; limits?: Parameters<typeof executor.execute>[0]['limits'] } = {}, handlers?: Parameters<typeof fakeHost>[0]) {
  const fake = fakeHost(handlers);
  return executor
    .execute({ code, operations: opts.operations ?? OPERATIONS, limits: opts.limits }, fake.host)
    .then((res) => ({ ...res, received: fake.received }));
}

describe('limits', () => {
  it('has the documented defaults and merges overrides', () => {
    expect(DEFAULT_LIMITS).toEqual({
      memoryBytes: 64 * 1024 * 1024,
      stackBytes: 512 * 1024,
      wallClockMs: 10_000,
      maxCalls: 100,
      maxResultBytes: 256 * 1024,
      maxLogBytes: 256 * 1024,
      poolSize: 2,
      perCredential: 2,
    });
    const merged = resolveLimits({ maxCalls: 5 }, { wallClockMs: 1500, memoryBytes: Number.NaN });
    expect(merged.maxCalls).toBe(5);
    expect(merged.wallClockMs).toBe(1500);
    expect(merged.memoryBytes).toBe(DEFAULT_LIMITS.memoryBytes);
  });
});

describe('calling operations', () => {
  it('runs a single call and returns its JSON result with a call record', async () => {
    const res = await run(`const page = await api.errors.list({ project: 'web' });\nreturn page.items.map((e) => e.id);`);
    expect(res.error).toBeNull();
    expect(res.result).toEqual(['e1', 'e2']);
    expect(res.received).toEqual([{ operationId: 'errors.list', input: { project: 'web' } }]);
    expect(res.calls).toHaveLength(1);
    expect(res.calls[0]).toMatchObject({ operationId: 'errors.list', status: 200 });
    expect(res.calls[0]!.ms).toBeGreaterThanOrEqual(0);
  });

  it('runs multi-call scripts, in sequence and in parallel, via api.<tag>.<verb> and api.call', async () => {
    const res = await run(`
      const projects = await api.projects.list();
      const pages = await Promise.all(projects.items.map((p) => api.errors.list({ project: p.slug })));
      const top = await api.call('errors.get', { id: pages[1].items[0].id });
      return { totals: pages.map((p) => p.total), top: top.title };
    `);
    expect(res.error).toBeNull();
    expect(res.result).toEqual({ totals: [2, 1], top: ERRORS[2]!.title });
    expect(res.calls.map((c) => c.operationId)).toEqual(['projects.list', 'errors.list', 'errors.list', 'errors.get']);
    expect(res.calls.every((c) => c.status === 200)).toBe(true);
  });

  it('captures console output', async () => {
    const res = await run(`
      console.log('hello', 42, { a: 1 }, [1, 'x'], null, undefined);
      console.info('info line');
      console.warn('careful');
      console.error(new TypeError('bad thing'));
      return 'ok';
    `);
    expect(res.error).toBeNull();
    expect(res.logs).toEqual([
      'hello 42 {"a":1} [1,"x"] null undefined',
      'info line',
      '[warn] careful',
      '[error] TypeError: bad thing',
    ]);
  });

  it('sends only JSON to the host and back', async () => {
    const res = await run(
      `const echo = await api.logs.search({ d: new Date(0), f: () => 1, u: undefined, n: NaN, nested: { ok: true } });
       return { echo, type: typeof echo.when };`,
      {},
      { 'logs.search': (input) => ({ ...input, when: new Date(0), fn: () => 1 }) },
    );
    expect(res.error).toBeNull();
    expect(res.received[0]!.input).toEqual({ d: '1970-01-01T00:00:00.000Z', n: null, nested: { ok: true } });
    expect(res.result).toEqual({
      echo: { d: '1970-01-01T00:00:00.000Z', n: null, nested: { ok: true }, when: '1970-01-01T00:00:00.000Z' },
      type: 'string',
    });
  });

  it('rejects input that is not JSON-serializable without calling the host', async () => {
    const res = await run(`try { await api.errors.list({ big: 10n }) } catch (e) { return [e.status, e.code] }`);
    expect(res.result).toEqual([400, 'invalid_input']);
    expect(res.received).toHaveLength(0);
  });

  it('returns null for undefined results', async () => {
    const res = await run(`await api.projects.list();`);
    expect(res).toMatchObject({ result: null, error: null });
  });
});

describe('operation errors', () => {
  it('are catchable in the script with status, code, message and param', async () => {
    const res = await run(`
      try {
        await api.errors.get({ id: 'nope' });
        return 'not thrown';
      } catch (e) {
        return { isError: e instanceof Error, name: e.name, status: e.status, code: e.code, message: e.message, param: e.param };
      }
    `);
    expect(res.error).toBeNull();
    expect(res.result).toEqual({
      isError: true,
      name: 'ApiError',
      status: 404,
      code: 'not_found',
      message: 'No error with id nope',
      param: 'id',
    });
    expect(res.calls).toEqual([expect.objectContaining({ operationId: 'errors.get', status: 404 })]);
  });

  it('become the execute error (with status and code) when uncaught', async () => {
    const res = await run(`console.log('before'); await api.errors.get({ id: 'nope' }); return 'unreachable';`);
    expect(res.result).toBeNull();
    expect(res.error).toEqual({ name: 'ApiError', message: 'No error with id nope', status: 404, code: 'not_found' });
    expect(res.logs).toEqual(['before']);
    expect(res.calls).toHaveLength(1);
  });

  it('turn a throwing HostCall into a 500 without leaking the host error message', async () => {
    const res = await run(`try { await api.projects.list() } catch (e) { return [e.status, e.code, e.message] }`, {}, {
      'projects.list': () => {
        throw new Error('db password is hunter2');
      },
    });
    expect(res.error).toBeNull();
    const [status, code, message] = res.result as [number, string, string];
    expect([status, code]).toEqual([500, 'internal_error']);
    expect(message).not.toContain('hunter2');
    expect(res.calls).toEqual([expect.objectContaining({ operationId: 'projects.list', status: 500 })]);
  });

  it('reject unknown operations with 404 unknown_operation without reaching the host', async () => {
    const res = await run(`
      const out = { hasAdmin: typeof api.admin };
      try { await api.call('admin.deleteEverything', { all: true }) } catch (e) { out.caught = [e.status, e.code, e.message] }
      await api.call('errors.delete', { id: 'e1' });
    `);
    expect(res.received).toHaveLength(0);
    expect(res.calls).toHaveLength(0);
    expect(res.error).toMatchObject({ name: 'ApiError', status: 404, code: 'unknown_operation' });
    expect(res.error!.message).toMatch(/search/i);
  });

  it('only exposes the operations it was given', async () => {
    const res = await run(`return [Object.keys(api).sort(), Object.keys(api.errors).sort(), typeof api.call, typeof api.logs]`, {
      operations: ['errors.list', 'errors.get', 'projects.list'],
    });
    expect(res.result).toEqual([['errors', 'projects'], ['get', 'list'], 'function', 'undefined']);
  });
});

describe('script failures', () => {
  it('reports syntax errors', async () => {
    const res = await run(`const x = ;`);
    expect(res.error?.name).toBe('SyntaxError');
    expect(res.error?.message).toBeTruthy();
    expect(res.received).toHaveLength(0);
  });

  it('reports thrown errors with their name and line', async () => {
    const res = await run(`const a = 1;\nnull.x;`);
    expect(res.error?.name).toBe('TypeError');
    expect(res.error?.message).toMatch(/line 2/);
  });

  it('handles thrown non-Error values', async () => {
    expect((await run(`throw 'boom'`)).error).toEqual({ name: 'Error', message: 'boom' });
    expect((await run(`throw null`)).error).toEqual({ name: 'Error', message: 'null' });
    expect((await run(`throw { status: 418, code: 'teapot', message: 'short and stout' }`)).error).toMatchObject({
      message: 'short and stout',
      status: 418,
      code: 'teapot',
    });
  });

  it('reports return values that are not JSON', async () => {
    const circular = await run(`const a = {}; a.self = a; return a;`);
    expect(circular.error?.name).toBe('TypeError');
    expect(circular.error?.message).toMatch(/JSON/);
    const bigint = await run(`return 10n`);
    expect(bigint.error?.name).toBe('TypeError');
  });

  it('reports a script that awaits something that can never settle', async () => {
    const res = await run(`await new Promise(() => {}); return 1;`);
    expect(res.error?.message).toMatch(/never settle/);
  });
});

describe('output budgets', () => {
  it('truncates oversized results to a string with a marker', async () => {
    const res = await run(`return Array.from({ length: 2000 }, (_, i) => ({ id: i, title: 'error number ' + i }));`, {
      limits: { maxResultBytes: 4096 },
    });
    expect(res.error).toBeNull();
    expect(typeof res.result).toBe('string');
    const text = res.result as string;
    expect(text.startsWith('[{"id":0,"title":"error number 0"}')).toBe(true);
    expect(text).toMatch(/…\[truncated: result was (at least )?\d+ bytes, limit 4096; narrow the query/);
    expect(Buffer.byteLength(text)).toBeLessThanOrEqual(4096);
  });

  it('keeps results within the budget untouched (default 256 KiB)', async () => {
    const res = await run(`return 'é'.repeat(100 * 1024)`); // 200 KiB of UTF-8
    expect(res.result).toBe('é'.repeat(100 * 1024));
  });

  it('caps logs with a marker entry', async () => {
    const res = await run(`for (let i = 0; i < 500; i++) console.log('line ' + i + ' ' + 'x'.repeat(40)); return 'done';`, {
      limits: { maxLogBytes: 2048 },
    });
    expect(res.error).toBeNull();
    expect(res.result).toBe('done');
    expect(res.logs[0]).toBe('line 0 ' + 'x'.repeat(40));
    const marker = res.logs[res.logs.length - 1]!;
    expect(marker).toMatch(/^…\[truncated: logs exceeded the 2 KiB limit; \d+ later entries were dropped/);
    const kept = res.logs.slice(0, -1).join('\n');
    expect(Buffer.byteLength(kept)).toBeLessThanOrEqual(2048);
    expect(res.logs.length).toBeLessThan(60);
  });

  it('caps a single giant log line', async () => {
    const res = await run(`console.log('y'.repeat(100000)); return 1;`, { limits: { maxLogBytes: 1024 } });
    expect(res.result).toBe(1);
    expect(Buffer.byteLength(res.logs[0]!)).toBeLessThanOrEqual(1024 + 3);
    expect(res.logs[res.logs.length - 1]).toMatch(/truncated/);
  });
});

describe('the api object', () => {
  it('lays out odd operationIds as before (first of a clash wins, invalid ones left out, all frozen)', async () => {
    const operations = ['a.b', 'a.b.c', 'call.x', 'x..y', 'solo', 'p.q.r', 'p.q', 'n.__proto__', 'a.b', 'm.', 'deep.er.op', 'deep.er.op2'];
    const res = await run(
      `const walk = (o) => Object.keys(o).map((k) => typeof o[k] === 'function' ? [k, o[k].name, Object.isFrozen(o[k])] : [k, Object.isFrozen(o[k]), walk(o[k])]);
       return { tree: walk(api), frozen: Object.isFrozen(api), call: typeof api.call, proto: Object.getPrototypeOf(api.n) === null,
         own: Object.getOwnPropertyNames(api.n), desc: Object.getOwnPropertyDescriptor(api.a, 'b').writable };`,
      { operations },
    );
    expect(res.error).toBeNull();
    expect(res.result).toEqual({
      tree: [
        ['a', true, [['b', 'a.b', true]]],
        ['x', true, []],
        ['p', true, [['q', true, [['r', 'p.q.r', true]]]]],
        ['n', true, [['__proto__', 'n.__proto__', true]]],
        ['m', true, []],
        ['deep', true, [['er', true, [['op', 'deep.er.op', true], ['op2', 'deep.er.op2', true]]]]],
      ],
      frozen: true,
      call: 'function',
      proto: true,
      own: ['__proto__'],
      desc: false,
    });
  });
});
