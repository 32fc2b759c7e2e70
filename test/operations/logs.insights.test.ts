import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { startTestServer, type TestServer } from '../helpers/server.js';
import { DAY, HOUR, MIN, SEV, iso, ok, read, sendLogs, type LogSpec } from './telemetry-fixtures.js';

const NOW = Date.parse('2026-03-02T12:00:00.000Z');

interface Row {
  value: string;
  count: number;
  share: number;
  sampled: boolean;
}

describe('logs.insights', () => {
  let t: TestServer;
  beforeAll(async () => {
    t = await startTestServer({ now: () => NOW });
    const current: LogSpec[] = [];
    for (let i = 0; i < 30; i++) {
      current.push({
        at: NOW - (i + 1) * MIN,
        body: `user ${1000 + i} logged in from 10.0.0.${i}`,
        severity: SEV.info,
        attributes: { 'http.route': i % 3 === 0 ? '/login' : '/sso/callback', user: { id: `u${i % 2}` } },
      });
    }
    for (let i = 0; i < 10; i++) {
      current.push({ at: NOW - (40 + i) * MIN, body: `payment failed for order ${5000 + i}: card declined`, severity: i < 7 ? SEV.error : SEV.fatal, attributes: { 'http.route': '/pay' } });
    }
    await sendLogs(t, [
      { resource: { service: 'auth', environment: 'production' }, logs: current.slice(0, 30) },
      { resource: { service: 'billing', environment: 'production', release: '3.1.0' }, logs: current.slice(30) },
    ]);
    // The preceding 24 hours: another mix.
    await sendLogs(t, [
      {
        resource: { service: 'auth', environment: 'staging' },
        logs: Array.from({ length: 4 }, (_, i) => ({ at: NOW - DAY - (i + 1) * HOUR, body: 'session expired', severity: SEV.warn, attributes: { 'http.route': '/refresh' } })),
      },
    ]);
  });
  afterAll(() => t?.close());

  it('mines recurring patterns from the newest logs with counts, levels, a sample and a share', async () => {
    const b = await ok(t, '/logs/insights');
    expect(b.from).toBe(iso(NOW - DAY));
    expect(b.to).toBe(iso(NOW));
    expect(b.sample_count).toBe(40);
    expect(b.total_count).toBe(40);
    expect(b.patterns).toEqual([
      { pattern: 'user <NUM> logged in from <IP>', count: 30, sample: 'user 1000 logged in from 10.0.0.0', levels: { info: 30 }, share: 0.75 },
      { pattern: 'payment failed for order <NUM>: card declined', count: 10, sample: 'payment failed for order 5000: card declined', levels: { error: 7, fatal: 3 }, share: 0.25 },
    ]);
  });

  it('gives exact service, level, environment and source distributions for the window and the one before', async () => {
    const b = await ok(t, '/logs/insights');
    expect(b.previous_from).toBe(iso(NOW - 2 * DAY));
    expect(b.previous_to).toBe(iso(NOW - DAY));
    expect(b.previous_total_count).toBe(4);
    const d = b.distributions;
    expect(d.service.current).toEqual({
      values: [
        { value: 'auth', count: 30, share: 0.75, sampled: false },
        { value: 'billing', count: 10, share: 0.25, sampled: false },
      ],
      other_count: 0,
      missing_count: 0,
      total: 40,
    });
    expect(d.service.previous.values).toEqual([{ value: 'auth', count: 4, share: 1, sampled: false }]);
    expect(d.level.current.values.map((r: Row) => [r.value, r.count])).toEqual([['info', 30], ['error', 7], ['fatal', 3]]);
    expect(d.level.previous.values.map((r: Row) => [r.value, r.count])).toEqual([['warn', 4]]);
    expect(d.environment.current.values.map((r: Row) => r.value)).toEqual(['production']);
    expect(d.environment.previous.values.map((r: Row) => r.value)).toEqual(['staging']);
    expect(d.source.current.values).toEqual([{ value: 'otlp', count: 40, share: 1, sampled: false }]);
  });

  it('samples requested attribute paths for both windows, flat keys and nested maps alike', async () => {
    const b = await ok(t, '/logs/insights', { dimensions: 'http.route,user.id' });
    expect(b.custom_distribution_sample_limit).toBe(10_000);
    expect(b.previous_sample_count).toBe(4);
    const route = b.custom_distributions['http.route'];
    expect(route.current.values).toEqual([
      { value: '/sso/callback', count: 20, share: 0.5, sampled: true },
      { value: '/login', count: 10, share: 0.25, sampled: true },
      { value: '/pay', count: 10, share: 0.25, sampled: true },
    ]);
    expect(route.previous.values).toEqual([{ value: '/refresh', count: 4, share: 1, sampled: true }]);
    const user = b.custom_distributions['user.id'];
    expect(user.current.values.map((r: Row) => [r.value, r.count])).toEqual([['u0', 15], ['u1', 15]]);
    expect(user.current.missing_count).toBe(10);
    expect(user.previous).toEqual({ values: [], other_count: 0, missing_count: 4, total: 4 });
  });

  it('applies the search filters to patterns, counts and distributions', async () => {
    const b = await ok(t, '/logs/insights', { level: 'error,fatal', dimensions: 'http.route' });
    expect(b.total_count).toBe(10);
    expect(b.patterns).toHaveLength(1);
    expect(b.distributions.service.current.values.map((r: Row) => r.value)).toEqual(['billing']);
    expect(b.previous_total_count).toBe(0);
    const text = await ok(t, '/logs/insights', { q: 'declined' });
    expect(text.total_count).toBe(10);
    expect(text.patterns[0].pattern).toBe('payment failed for order <NUM>: card declined');
  });

  it('cuts values to 256 characters and lists at most 12 values per distribution', async () => {
    const at = NOW - 2 * HOUR;
    const long = 'x'.repeat(300);
    await sendLogs(t, [
      {
        resource: { service: 'catalog' },
        logs: [
          ...Array.from({ length: 15 }, (_, i) => ({ at: at - i * 1000, body: `sku ${i} viewed`, attributes: { sku: `sku-${String(i).padStart(2, '0')}`, note: long } })),
          { at: at - 20_000, body: 'sku 3 viewed again', attributes: { sku: 'sku-03', note: long } },
        ],
      },
    ]);
    const b = await ok(t, '/logs/insights', { service: 'catalog', dimensions: 'sku,note' });
    const sku = b.custom_distributions.sku.current;
    expect(sku.values).toHaveLength(12);
    expect(sku.values[0]).toMatchObject({ value: 'sku-03', count: 2 });
    expect(sku.other_count).toBe(3);
    expect(sku.total).toBe(16);
    const note = b.custom_distributions.note.current.values[0];
    expect(note.value).toHaveLength(256);
    expect(note.value.endsWith('…')).toBe(true);
    expect(note.count).toBe(16);
  });

  it('answers 400 for more than five dimensions, a bad path, and windows that are reversed, too long or without a timezone', async () => {
    const six = await read(t, '/logs/insights', { dimensions: 'a,b,c,d,e,f' });
    expect(six.status).toBe(400);
    expect(six.body).toMatchObject({ code: 'invalid_parameter', param: 'dimensions' });
    expect((await read(t, '/logs/insights', { dimensions: 'a,b,c,d,e' })).status).toBe(200);
    expect((await read(t, '/logs/insights', { dimensions: 'http route' })).body.param).toMatch(/^dimensions/);
    const reversed = await read(t, '/logs/insights', { from: iso(NOW), to: iso(NOW - HOUR) });
    expect(reversed.status).toBe(400);
    expect(reversed.body.param).toBe('from');
    const long = await read(t, '/logs/insights', { from: iso(NOW - 31 * DAY), to: iso(NOW) });
    expect(long.status).toBe(400);
    expect(long.body.param).toBe('from');
    expect((await read(t, '/logs/insights', { from: iso(NOW - 30 * DAY), to: iso(NOW) })).status).toBe(200);
    const naive = await read(t, '/logs/insights', { from: '2026-03-01T12:00:00' });
    expect(naive.status).toBe(400);
    expect(naive.body.param).toBe('from');
  });
});

describe('logs.insights over more logs than the sample bound', () => {
  let t: TestServer;
  beforeAll(async () => {
    t = await startTestServer({ now: () => NOW });
    for (let batch = 0; batch < 3; batch++) {
      const logs: LogSpec[] = Array.from({ length: 3400 }, (_, i) => {
        const n = batch * 3400 + i; // n = 0 is the newest
        return { at: NOW - 1000 - n * 1000, body: n < 10_000 ? `cache hit for key k${n}` : `cache evicted key k${n}`, attributes: { shard: n < 10_000 ? 'new' : 'old' } };
      });
      await sendLogs(t, [{ resource: { service: 'cache' }, logs }]);
    }
  });
  afterAll(() => t?.close());

  it('mines and samples only the newest 10,000 while counting all of them exactly', async () => {
    const b = await ok(t, '/logs/insights', { dimensions: 'shard' });
    expect(b.total_count).toBe(10_200);
    expect(b.sample_count).toBe(10_000);
    expect(b.patterns.map((p: { pattern: string; count: number }) => [p.pattern, p.count])).toEqual([['cache hit for key <*>', 10_000]]);
    expect(b.custom_distributions.shard.current.values).toEqual([{ value: 'new', count: 10_000, share: 1, sampled: true }]);
    expect(b.distributions.service.current.values).toEqual([{ value: 'cache', count: 10_200, share: 1, sampled: false }]);
  });
});
