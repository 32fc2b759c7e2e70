import { createHash } from 'node:crypto';
import { describe, expect, it } from 'vitest';
import type { ErrorEventRecord, ExceptionValue, StackFrame } from '../../../src/domain/telemetry-types.js';
import {
  groupKeyFor,
  isSystemFrame,
  normalizeFilename,
  normalizeFunctionName,
  normalizeMessage,
} from '../../../src/domain/grouping/fingerprint.js';

function event(over: Partial<ErrorEventRecord> = {}): ErrorEventRecord {
  return {
    event_id: '0'.repeat(32),
    timestamp_ms: 0,
    received_ms: 0,
    source: 'sentry',
    platform: 'node',
    level: 'error',
    message: '',
    exceptions: [],
    fingerprint: null,
    environment: 'production',
    release: '',
    service_name: '',
    server_name: '',
    transaction: '',
    tags: {},
    user: null,
    trace_id: null,
    span_id: null,
    payload: null,
    ...over,
  };
}

function f(module: string, fn: string, lineno: number, in_app: boolean | undefined = true, extra: Partial<StackFrame> = {}): StackFrame {
  return { module, function: fn, lineno, colno: lineno * 3, filename: `/srv/app/${module.replace(/\./g, '/')}.js`, ...(in_app === undefined ? {} : { in_app }), ...extra };
}

function exc(type: string, value: string, frames: StackFrame[]): ExceptionValue {
  return { type, value, frames };
}

/** A TypeError thrown in loadUser, called from handler, called from express (not in-app). */
function userError(lines: [number, number] = [10, 42], over: { value?: string; lib?: StackFrame[] } = {}): ErrorEventRecord {
  return event({
    exceptions: [
      exc('TypeError', over.value ?? "Cannot read properties of undefined (reading 'id')", [
        f('node:internal/process/task_queues', 'processTicksAndRejections', 95, false, { filename: 'node:internal/process/task_queues' }),
        ...(over.lib ?? [f('express.lib.router:layer', 'Layer.handle', 95, false)]),
        f('app.routes', 'handler', lines[0]),
        f('app.users', 'loadUser', lines[1]),
      ]),
    ],
    transaction: 'GET /users/:id',
  });
}

const sha = (components: string[]) => createHash('sha256').update(JSON.stringify(components)).digest('hex');

describe('exception frames', () => {
  it('groups the same exception from different line and column numbers together', () => {
    const a = groupKeyFor(userError([10, 42]));
    const b = groupKeyFor(userError([11, 57]));
    expect(a.method).toBe('exception_frames');
    expect(a.components).toEqual(['type=TypeError', 'frame=handler (app.routes)', 'frame=loadUser (app.users)']);
    expect(a.fingerprint).toBe(sha(a.components));
    expect(a.fingerprint).toMatch(/^[0-9a-f]{64}$/);
    expect(b.fingerprint).toBe(a.fingerprint);
  });

  it('splits on a different in-app function', () => {
    const base = groupKeyFor(userError());
    const other = userError();
    other.exceptions[0].frames[3] = f('app.users', 'loadProfile', 42);
    expect(groupKeyFor(other).fingerprint).not.toBe(base.fingerprint);
    const otherModule = userError();
    otherModule.exceptions[0].frames[3] = f('app.accounts', 'loadUser', 42);
    expect(groupKeyFor(otherModule).fingerprint).not.toBe(base.fingerprint);
  });

  it('ignores changes to frames that are not in-app', () => {
    const base = groupKeyFor(userError());
    const moreLib = groupKeyFor(
      userError([10, 42], {
        lib: [f('express.lib.router:index', 'next', 280, false), f('express.lib.router:layer', 'Layer.handle [as handle_request]', 99, false), f('some-mw', 'mw', 5, false)],
      }),
    );
    const noLib = groupKeyFor(userError([10, 42], { lib: [] }));
    expect(moreLib.fingerprint).toBe(base.fingerprint);
    expect(noLib.fingerprint).toBe(base.fingerprint);
  });

  it('ignores the exception value when frames identify the error, but not the type', () => {
    const base = groupKeyFor(userError());
    expect(groupKeyFor(userError([10, 42], { value: "Cannot read properties of null (reading 'name')" })).fingerprint).toBe(base.fingerprint);
    const rangeError = userError();
    rangeError.exceptions[0].type = 'RangeError';
    expect(groupKeyFor(rangeError).fingerprint).not.toBe(base.fingerprint);
  });

  it('normalizes anonymous functions and V8 receiver prefixes', () => {
    const variants = ['<anonymous>', 'Object.<anonymous>', '?', '', undefined].map((fn) =>
      groupKeyFor(event({ exceptions: [exc('Error', 'x', [{ module: 'app.main', function: fn, lineno: 1, in_app: true }])] })),
    );
    expect(variants[0].components).toEqual(['type=Error', 'frame=<anonymous> (app.main)']);
    for (const v of variants) expect(v.fingerprint).toBe(variants[0].fingerprint);
    const esm = groupKeyFor(event({ exceptions: [exc('Error', 'x', [f('app.svc', 'Module.run', 3)])] }));
    const cjs = groupKeyFor(event({ exceptions: [exc('Error', 'x', [f('app.svc', 'Object.run', 9)])] }));
    expect(esm.components).toEqual(['type=Error', 'frame=run (app.svc)']);
    expect(cjs.fingerprint).toBe(esm.fingerprint);
  });

  it('strips bundler content hashes, hosts and query strings from browser filenames', () => {
    const browser = (file: string, line: number) =>
      groupKeyFor(
        event({
          platform: 'javascript',
          exceptions: [
            exc('TypeError', 'x is not a function', [
              { filename: file, function: 'onClick', lineno: line, colno: 10, in_app: true },
              { filename: 'https://cdn.example.com/assets/vendor-7d8e9f01.js', function: 'dispatch', lineno: 1, in_app: false },
            ]),
          ],
        }),
      );
    const a = browser('https://shop.example.com/static/js/main.4f3a2b1c.chunk.js', 1);
    const b = browser('https://staging.shop.example.com/static/js/main.9e8d7c6b.chunk.js?v=2', 2);
    expect(a.components).toEqual(['type=TypeError', 'frame=onClick (static/js/main.chunk.js)']);
    expect(b.fingerprint).toBe(a.fingerprint);
    const vite1 = browser('https://x.io/assets/index-DiwrgTda.js', 1);
    const vite2 = browser('https://x.io/assets/index-B3xY9qZa.js', 1);
    expect(vite1.components).toEqual(['type=TypeError', 'frame=onClick (assets/index.js)']);
    expect(vite2.fingerprint).toBe(vite1.fingerprint);
    expect(browser('webpack:///./src/cart.ts', 3).components).toEqual(['type=TypeError', 'frame=onClick (src/cart.ts)']);
  });

  it('when nothing is marked in_app, uses frames outside node_modules and node internals', () => {
    const build = (libFn: string, appLine: number) =>
      event({
        platform: 'node',
        exceptions: [
          exc('Error', 'fail', [
            { filename: 'node:internal/timers', function: 'listOnTimeout', lineno: 1 },
            { filename: '/home/ci/build-81/node_modules/pg/lib/client.js', function: libFn, lineno: 10 },
            { filename: '/home/ci/build-81/src/db/query.js', function: 'runQuery', lineno: appLine },
            { filename: '/home/ci/build-81/node_modules/pg/lib/query.js', function: 'handleError', lineno: 3 },
          ]),
        ],
      });
    const a = groupKeyFor(build('Client.query', 5));
    expect(a.components).toEqual(['type=Error', 'frame=runQuery (db/query.js)']);
    expect(groupKeyFor(build('Client._pulseQueryQueue', 9)).fingerprint).toBe(a.fingerprint);
    // a different checkout directory does not matter either
    const moved = build('Client.query', 5);
    moved.exceptions[0].frames[2].filename = '/srv/deploy/releases/2024/src/db/query.js';
    expect(groupKeyFor(moved).fingerprint).toBe(a.fingerprint);
    expect(a.culprit).toBe('runQuery (db/query.js)');
  });

  it('collapses recursion so the depth does not split groups', () => {
    const rec = (depth: number) =>
      groupKeyFor(event({ exceptions: [exc('RangeError', 'Maximum call stack size exceeded', [f('app.tree', 'main', 1), ...Array.from({ length: depth }, (_, i) => f('app.tree', 'walk', 10 + i))])] }));
    expect(rec(3).components).toEqual(['type=RangeError', 'frame=main (app.tree)', 'frame=walk (app.tree)']);
    expect(rec(50).fingerprint).toBe(rec(3).fingerprint);
  });

  it('groups chained exceptions by the last (captured) exception', () => {
    const chained = (causeType: string) =>
      groupKeyFor(
        event({
          exceptions: [exc(causeType, 'inner', [f('app.pay', 'charge', 5)]), exc('Error', 'order failed', [f('app.orders', 'process', 7)])],
        }),
      );
    expect(chained('PaymentDeclined').components).toEqual(['type=Error', 'frame=process (app.orders)']);
    expect(chained('Timeout').fingerprint).toBe(chained('PaymentDeclined').fingerprint);
  });
});

describe('exception without usable frames', () => {
  it('groups by type and normalized value', () => {
    const netErr = (value: string, frames: StackFrame[] = []) => groupKeyFor(event({ exceptions: [exc('Error', value, frames)] }));
    const a = netErr('connect ECONNREFUSED 10.0.0.12:5432');
    expect(a.method).toBe('exception_type');
    expect(a.components).toEqual(['type=Error', 'value=connect ECONNREFUSED <ip>']);
    expect(netErr('connect ECONNREFUSED 10.0.0.99:6543').fingerprint).toBe(a.fingerprint);
    // only node-internal frames: still no usable frames
    expect(netErr('connect ECONNREFUSED 127.0.0.1:5432', [{ filename: 'node:net', function: 'TCPConnectWrap.afterConnect', lineno: 1, in_app: false }]).fingerprint).toBe(
      a.fingerprint,
    );
    expect(netErr('connect ETIMEDOUT 10.0.0.12:5432').fingerprint).not.toBe(a.fingerprint);
    expect(groupKeyFor(event({ exceptions: [exc('TypeError', 'connect ECONNREFUSED 10.0.0.12:5432', [])] })).fingerprint).not.toBe(a.fingerprint);
  });
});

describe('SDK fingerprint', () => {
  it('wins over the default grouping', () => {
    const a = groupKeyFor({ ...userError(), fingerprint: ['payment-failure'] });
    const b = groupKeyFor({ ...event({ message: 'totally different' }), fingerprint: ['payment-failure'] });
    expect(a.method).toBe('sdk_fingerprint');
    expect(a.components).toEqual(['payment-failure']);
    expect(a.fingerprint).toBe(sha(['payment-failure']));
    expect(b.fingerprint).toBe(a.fingerprint);
    // title / culprit still describe the event
    expect(a.title).toBe("TypeError: Cannot read properties of undefined (reading 'id')");
    expect(a.culprit).toBe('loadUser (app.users)');
  });

  it('expands {{ default }} to the default components', () => {
    const plain = groupKeyFor(userError());
    const withTenant = groupKeyFor({ ...userError(), fingerprint: ['{{ default }}', 'tenant-a'] });
    expect(withTenant.components).toEqual(['type=TypeError', 'frame=handler (app.routes)', 'frame=loadUser (app.users)', 'tenant-a']);
    expect(withTenant.method).toBe('sdk_fingerprint');
    expect(groupKeyFor({ ...userError([1, 2]), fingerprint: ['{{ default }}', 'tenant-a'] }).fingerprint).toBe(withTenant.fingerprint);
    expect(groupKeyFor({ ...userError(), fingerprint: ['{{ default }}', 'tenant-b'] }).fingerprint).not.toBe(withTenant.fingerprint);
    // alone (any spacing) it is exactly the default grouping
    const onlyDefault = groupKeyFor({ ...userError(), fingerprint: ['{{default}}'] });
    expect(onlyDefault.fingerprint).toBe(plain.fingerprint);
    expect(onlyDefault.method).toBe('exception_frames');
  });

  it('expands {{ transaction }} and {{ type }}', () => {
    const k = groupKeyFor({ ...userError(), fingerprint: ['{{ transaction }}', '{{ type }}', 'x'] });
    expect(k.components).toEqual(['GET /users/:id', 'TypeError', 'x']);
  });
});

describe('message events', () => {
  const msg = (message: string) => groupKeyFor(event({ message, level: 'warning' }));

  it.each([
    ['numbers', 'Cache miss for user 1234 after 3 tries', 'Cache miss for user 98 after 12 tries'],
    ['UUIDs', 'Order 550e8400-e29b-41d4-a716-446655440000 not found', 'Order 6ba7b810-9dad-11d1-80b4-00c04fd430c8 not found'],
    ['hex', 'Bad pointer 0x7ffe5a3c at block a3f9c2e18b7d', 'Bad pointer 0xdeadbeef at block 00ff11ee22dd'],
    ['quoted values', `User 'alice' has no role "admin"`, `User 'bob' has no role "editor"`],
    ['IPs', 'Rejected connection from 10.1.2.3:5555', 'Rejected connection from 192.168.0.77'],
    ['emails', 'Bounce for jane.doe@example.com', 'Bounce for x+1@mail.co.uk'],
  ])('groups messages differing only in %s', (_what, a, b) => {
    expect(msg(a).method).toBe('message');
    expect(msg(b).fingerprint).toBe(msg(a).fingerprint);
  });

  it('writes the normalized message as the component', () => {
    expect(msg('Cache miss for user 1234').components).toEqual(['message=Cache miss for user <num>']);
    expect(msg(`User 'alice' from 10.0.0.1 (id 550e8400-e29b-41d4-a716-446655440000, hash 0xdeadbeef)`).components).toEqual([
      'message=User <str> from <ip> (id <uuid>, hash <hex>)',
    ]);
  });

  it('splits differently worded messages', () => {
    expect(msg('Cache miss for user 1234').fingerprint).not.toBe(msg('Cache hit for user 1234').fingerprint);
    expect(msg('Payment failed').fingerprint).not.toBe(msg('Payment refunded').fingerprint);
  });

  it('treats the SDK synthetic stack of captureMessage as a message event', () => {
    const withStack = groupKeyFor(
      event({
        message: 'Cache miss for user 1234',
        exceptions: [exc('', 'Cache miss for user 1234', [f('app.cache', 'get', 10)])],
      }),
    );
    expect(withStack.method).toBe('message');
    expect(withStack.type).toBe('message');
    expect(withStack.fingerprint).toBe(msg('Cache miss for user 5678').fingerprint);
    expect(withStack.culprit).toBe('get (app.cache)');
  });
});

describe('title, type and culprit', () => {
  it('for exceptions: `Type: value`, culprit = top in-app frame', () => {
    const k = groupKeyFor(userError());
    expect(k.type).toBe('TypeError');
    expect(k.title).toBe("TypeError: Cannot read properties of undefined (reading 'id')");
    expect(k.culprit).toBe('loadUser (app.users)');
  });

  it('truncates long values to 200 characters and uses the first line', () => {
    const long = groupKeyFor(event({ exceptions: [exc('ValidationError', 'x'.repeat(500), [])] }));
    expect(Array.from(long.title)).toHaveLength(200);
    expect(long.title.startsWith('ValidationError: xxx')).toBe(true);
    expect(long.title.endsWith('…')).toBe(true);
    const multi = groupKeyFor(event({ exceptions: [exc('SyntaxError', 'Unexpected token\n  at line 3', [])] }));
    expect(multi.title).toBe('SyntaxError: Unexpected token');
  });

  it('handles missing values and types', () => {
    expect(groupKeyFor(event({ exceptions: [exc('AbortError', '', [])] })).title).toBe('AbortError');
    const untyped = groupKeyFor(event({ exceptions: [exc('', 'something odd', [])] }));
    expect(untyped.type).toBe('Error');
    expect(untyped.title).toBe('Error: something odd');
  });

  it('for messages: first line of the message, culprit = transaction when there are no frames', () => {
    const k = groupKeyFor(event({ message: '\nDisk quota exceeded\nfor volume 7', transaction: 'cron:cleanup' }));
    expect(k.type).toBe('message');
    expect(k.title).toBe('Disk quota exceeded');
    expect(k.culprit).toBe('cron:cleanup');
    expect(groupKeyFor(event({ message: 'y'.repeat(300) })).title).toHaveLength(200);
    expect(groupKeyFor(event({})).title).toBe('<unlabeled event>');
  });

  it('exception culprit falls back to the transaction when there are no frames', () => {
    expect(groupKeyFor(event({ exceptions: [exc('Error', 'x', [])], transaction: 'POST /checkout' })).culprit).toBe('POST /checkout');
  });
});

describe('helpers', () => {
  it('normalizeMessage', () => {
    expect(normalizeMessage('took 1.5s for 1,234 rows')).toBe('took <num>s for <num> rows');
    expect(normalizeMessage("Can't find user 'bob'")).toBe("Can't find user <str>");
    expect(normalizeMessage('host fe80::1ff:fe23:4567:890a down')).toBe('host <ip> down');
    expect(normalizeMessage('at 12:30:45')).toBe('at <num>:<num>:<num>');
    expect(normalizeMessage('commit a1b2c3d4e5 deadbeefcafebabe1 and the accepted facade')).toBe('commit <hex> <hex> and the accepted facade');
    expect(normalizeMessage('Foo::bar   failed\n')).toBe('Foo::bar failed');
  });

  it('normalizeFunctionName and normalizeFilename', () => {
    expect(normalizeFunctionName('async Promise.all (index 0)')).toBe('Promise.all');
    expect(normalizeFunctionName('render/<')).toBe('render');
    expect(normalizeFilename('webpack-internal:///(app-pages-browser)/./src/app/page.tsx')).toBe('src/app/page.tsx');
    expect(normalizeFilename('/srv/app/node_modules/express/lib/router.js')).toBe('express/lib/router.js');
    expect(normalizeFilename('app:///dist/742.a1b2c3d4.js')).toBe('dist/<num>.js');
    expect(normalizeFilename('https://x.com/_next/static/abc123XYZ9/_buildManifest.js')).toBe('_next/static/<hash>/_buildManifest.js');
    expect(normalizeFilename('C:\\Users\\me\\app\\src\\x.js')).toBe('src/x.js');
    expect(normalizeFilename('https://x.io/components/MyComponent.js')).toBe('components/MyComponent.js');
  });

  it('isSystemFrame', () => {
    expect(isSystemFrame({ filename: 'node:internal/timers' })).toBe(true);
    expect(isSystemFrame({ filename: '/a/node_modules/b/c.js', function: 'x' })).toBe(true);
    expect(isSystemFrame({ filename: 'chrome-extension://abc/content.js', function: 'x' })).toBe(true);
    expect(isSystemFrame({ filename: 'native' })).toBe(true);
    expect(isSystemFrame({ filename: '/srv/app/src/x.js', function: 'x' })).toBe(false);
  });
});
