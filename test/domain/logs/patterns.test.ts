import { describe, expect, it } from 'vitest';
import { distribution, maskMessage, minePatterns, truncateValue } from '../../../src/domain/logs/patterns.js';

describe('maskMessage', () => {
  it('masks numbers, IPs, UUIDs and hex', () => {
    expect(maskMessage('user 123 logged in from 10.0.0.1')).toBe('user <NUM> logged in from <IP>');
    expect(maskMessage('connect to 10.0.0.1:8080 failed')).toBe('connect to <IP>:<NUM> failed');
    expect(maskMessage('peer fe80::1ff:fe23:4567:890a and ::1 and 2001:db8:0:0:0:0:2:1')).toBe('peer <IP> and <IP> and <IP>');
    expect(maskMessage('mapped ::ffff:192.168.0.1')).toBe('mapped <IP>');
    expect(maskMessage('request 6f1c2a4e-9b3d-4c5e-8f70-1a2b3c4d5e6f done')).toBe('request <UUID> done');
    expect(maskMessage('ptr 0xDEADBEEF trace 4bf92f3577b34da6 ok')).toBe('ptr <HEX> trace <HEX> ok');
    expect(maskMessage('took 15ms, retry 2.5 s, at 12:30:45')).toBe('took <NUM>ms, retry <NUM> s, at <NUM>:<NUM>:<NUM>');
  });
  it('leaves words alone', () => {
    // "deadbeef" has no digit; "user123" and "v2" are identifiers; 999.1.1.1 is not an IPv4 address
    expect(maskMessage('deadbeef user123 v2 accepted')).toBe('deadbeef user123 v2 accepted');
    expect(maskMessage('Foo::bar')).toBe('Foo::bar');
    expect(maskMessage('bad 999.1.1.1')).toBe('bad <NUM>.<NUM>'); // read as the decimals 999.1 and 1.1
  });
});

describe('minePatterns', () => {
  it('groups messages that differ by masked values; keeps other templates apart', () => {
    const out = minePatterns([
      { message: 'user 123 logged in from 10.0.0.1', level: 'INFO', service: 'auth' },
      { message: 'user 456 logged in from 10.0.0.2', level: 'info', service: 'auth' },
      { message: 'payment failed for order 9', level: 'error', service: 'billing' },
    ]);
    expect(out).toEqual([
      {
        pattern: 'user <NUM> logged in from <IP>',
        count: 2,
        sample: 'user 123 logged in from 10.0.0.1',
        levels: { info: 2 },
        services: { auth: 2 },
      },
      {
        pattern: 'payment failed for order <NUM>',
        count: 1,
        sample: 'payment failed for order 9',
        levels: { error: 1 },
        services: { billing: 1 },
      },
    ]);
  });

  it('merges differing tokens into <*> above the similarity threshold', () => {
    const out = minePatterns([
      { message: 'User alice logged out' },
      { message: 'User bob logged out' },
      { message: 'Connected to db-primary in region eu' },
      { message: 'Connected to db-replica in region us' },
      // vs "User <*> logged out": only "User" matches (wildcards are not counted) → 1/4 = 0.25 < 0.4
      { message: 'User carol changed password' },
    ]);
    // "User bob logged out" vs "User alice logged out": 3/4 = 0.75 ≥ 0.4 → merged
    // "Connected to db-replica in region us": 4/6 ≈ 0.67 → merged
    expect(out.map((p) => [p.pattern, p.count])).toEqual([
      ['User <*> logged out', 2],
      ['Connected to <*> in region <*>', 2],
      ['User carol changed password', 1],
    ]);
    expect(out[0].services).toBeUndefined();
    expect(out[0].levels).toEqual({});
  });

  it('does not merge below the threshold; a leading token with digits goes to the wildcard branch', () => {
    const out = minePatterns(
      [
        { message: 'cache miss key alpha' },
        { message: 'cache evicted 3 entries' }, // "cache" only: 1/4 = 0.25 < 0.4 → separate
        { message: 'host7a started job' },
        { message: 'host9b started job' }, // first tokens contain digits → same <*> branch → 2/3 → merged
      ],
      { similarity: 0.4 },
    );
    expect(out.map((p) => p.pattern).sort()).toEqual(['<*> started job', 'cache evicted <NUM> entries', 'cache miss key alpha']);
  });

  it('sorts by count and honours maxPatterns', () => {
    const msgs = [
      ...Array.from({ length: 3 }, (_, i) => ({ message: `disk ${i} full` })),
      ...Array.from({ length: 5 }, (_, i) => ({ message: `queue lag ${i} seconds high` })),
      { message: 'boot' },
    ];
    const out = minePatterns(msgs, { maxPatterns: 2 });
    expect(out.map((p) => [p.pattern, p.count])).toEqual([
      ['queue lag <NUM> seconds high', 5],
      ['disk <NUM> full', 3],
    ]);
  });

  it('handles empty messages', () => {
    expect(minePatterns([{ message: '' }, { message: '   ' }])).toEqual([{ pattern: '', count: 2, sample: '', levels: {} }]);
  });

  it('mines 10,000 messages quickly', () => {
    const templates = [
      (i: number) => `user ${i} logged in from 10.0.${i % 255}.${(i * 7) % 255}`,
      (i: number) => `GET /api/orders/${i} returned 200 in ${i % 97}ms`,
      (i: number) => `payment ${i} failed: card declined for customer cus_${i}`,
      (i: number) => `worker-${i % 16} processed batch ${i} with ${i % 50} items`,
      (i: number) => `cache ${i % 2 ? 'hit' : 'miss'} for key session:${i.toString(16)}abcdef`,
    ];
    const msgs = Array.from({ length: 10_000 }, (_, i) => ({ message: templates[i % templates.length](i), level: 'info' }));
    // Speed (~20 ms for these 10,000 messages when idle) is for benches, not tests: this checks the result.
    const out = minePatterns(msgs);
    expect(out.reduce((s, p) => s + p.count, 0)).toBe(10_000);
    expect(out.map((p) => p.pattern)).toEqual([
      'user <NUM> logged in from <IP>',
      'GET /api/orders/<NUM> returned <NUM> in <NUM>ms',
      'payment <NUM> failed: card declined for customer <*>',
      'worker-<NUM> processed batch <NUM> with <NUM> items',
      'cache <*> for key <*>',
    ]);
  });
});

describe('truncateValue', () => {
  it('cuts long strings with an ellipsis, total length = max', () => {
    expect(truncateValue('abc', 256)).toBe('abc');
    const long = 'x'.repeat(300);
    expect(truncateValue(long, 256)).toHaveLength(256);
    expect(truncateValue(long, 256).endsWith('…')).toBe(true);
    expect(truncateValue(long)).toHaveLength(256);
  });
  it('does not split a surrogate pair', () => {
    // 'ab😀c' = a, b, \ud83d, \ude00, c; max 4 → keep 3 units but the 3rd is a high surrogate → 'ab…'
    expect(truncateValue('ab😀cd', 4)).toBe('ab…');
  });
  it('stringifies non-strings', () => {
    expect(truncateValue(42)).toBe('42');
    expect(truncateValue(true)).toBe('true');
    expect(truncateValue(null)).toBe('null');
    expect(truncateValue({ a: [1] })).toBe('{"a":[1]}');
    expect(truncateValue(undefined)).toBe('');
  });
});

describe('distribution', () => {
  it('top values with counts and an other count', () => {
    const d = distribution(['a', 'b', 'a', 'c', 'a', 'b', 'd', undefined, 5], { maxValues: 2 });
    // a:3, b:2 listed; c, d, 5 → other 3; undefined is missing
    expect(d).toEqual({ values: [{ value: 'a', count: 3 }, { value: 'b', count: 2 }], other: 3, total: 8, distinct: 5, missing: 1 });
  });
  it('defaults to 12 values, ties broken by value', () => {
    const d = distribution(Array.from({ length: 20 }, (_, i) => `v${String(i).padStart(2, '0')}`));
    expect(d.values).toHaveLength(12);
    expect(d.values[0]).toEqual({ value: 'v00', count: 1 });
    expect(d.other).toBe(8);
  });
});
