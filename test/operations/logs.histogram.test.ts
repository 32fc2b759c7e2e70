import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { startTestServer, type TestServer } from '../helpers/server.js';
import { DAY, HOUR, MIN, SEV, iso, ok, read, sendLogs } from './telemetry-fixtures.js';

const NOW = Date.parse('2026-03-02T12:00:00.000Z');
const H = (h: number, m = 0, s = 0) => NOW - 12 * HOUR + h * HOUR + m * MIN + s * 1000; // clock time on 2026-03-02

interface Bucket {
  time: string;
  total: number;
  levels: Record<string, number>;
  groups?: Record<string, number>;
}

describe('logs.histogram', () => {
  let t: TestServer;
  beforeAll(async () => {
    t = await startTestServer({ now: () => NOW });
    await sendLogs(t, [
      {
        resource: { service: 'api', environment: 'production', release: '1.4.0' },
        logs: [
          { at: H(9, 5), body: 'GET /orders 200', severity: SEV.info, attributes: { 'http.request.method': 'GET' } },
          { at: H(9, 6), body: 'GET /orders 500 timeout', severity: SEV.error, attributes: { 'http.request.method': 'GET' } },
          { at: H(9, 59, 59), body: 'POST /orders 201', severity: SEV.info, attributes: { 'http.request.method': 'POST' } },
          { at: H(10, 0), body: 'legacy client call', severity: SEV.warn, attributes: { 'http.method': 'PUT' } },
          { at: H(11, 30), body: 'background tick', severity: SEV.debug },
        ],
      },
      {
        resource: { service: 'worker', environment: 'staging', release: '2.0.0' },
        logs: [
          { at: H(9, 10), body: 'job 1 done', severity: SEV.info, attributes: { 'log.source': 'cron' } },
          { at: H(10, 45), body: 'job 2 crashed: timeout', severity: SEV.fatal },
          { at: H(8, 59), body: 'before the window', severity: SEV.error },
          { at: H(12, 0), body: 'at the window end (excluded)', severity: SEV.error },
        ],
      },
    ]);
  });
  afterAll(() => t?.close());

  const win = { from: iso(H(9)), to: iso(H(12)) };

  it('counts by time and severity with every bucket of the window present', async () => {
    const b = await ok(t, '/logs/histogram', { ...win, step: '1h' });
    expect(b).toMatchObject({ step: '1h', group_by: null, from: win.from, to: win.to, total: 7 });
    expect(b.buckets.map((x: Bucket) => [x.time, x.total])).toEqual([
      [iso(H(9)), 4],
      [iso(H(10)), 2],
      [iso(H(11)), 1],
    ]);
    expect(b.buckets[0].levels).toEqual({ trace: 0, debug: 0, info: 3, warn: 0, error: 1, fatal: 0 });
    expect(b.buckets[1].levels).toMatchObject({ warn: 1, fatal: 1 });
    expect(b.buckets[2].levels).toMatchObject({ debug: 1 });
    expect(b.buckets[0].groups).toBeUndefined();
  });

  it('fills empty buckets with zeros at a fine step', async () => {
    const b = await ok(t, '/logs/histogram', { ...win, step: '15m' });
    expect(b.buckets).toHaveLength(12);
    expect(b.buckets.filter((x: Bucket) => x.total > 0).map((x: Bucket) => [x.time, x.total])).toEqual([
      [iso(H(9)), 3],
      [iso(H(9, 45)), 1],
      [iso(H(10)), 1],
      [iso(H(10, 45)), 1],
      [iso(H(11, 30)), 1],
    ]);
    expect(b.buckets[1]).toEqual({ time: iso(H(9, 15)), total: 0, levels: { trace: 0, debug: 0, info: 0, warn: 0, error: 0, fatal: 0 } });
  });

  it('groups by service, service_version, environment, level and source', async () => {
    const service = await ok(t, '/logs/histogram', { ...win, step: '6h', group_by: 'service' });
    // 6h buckets are epoch-aligned: 06:00–12:00 holds the whole window.
    expect(service.buckets).toHaveLength(1);
    expect(service.buckets[0]).toMatchObject({ time: iso(H(6)), total: 7, groups: { api: 5, worker: 2 } });
    const version = await ok(t, '/logs/histogram', { ...win, step: '6h', group_by: 'service_version' });
    expect(version.buckets[0].groups).toEqual({ '1.4.0': 5, '2.0.0': 2 });
    const env = await ok(t, '/logs/histogram', { ...win, step: '6h', group_by: 'environment' });
    expect(env.buckets[0].groups).toEqual({ production: 5, staging: 2 });
    const level = await ok(t, '/logs/histogram', { ...win, step: '6h', group_by: 'level' });
    expect(level.buckets[0].groups).toEqual({ info: 3, error: 1, warn: 1, debug: 1, fatal: 1 });
    const source = await ok(t, '/logs/histogram', { ...win, step: '6h', group_by: 'source' });
    expect(source.buckets[0].groups).toEqual({ otlp: 6, cron: 1 });
  });

  it('groups by HTTP method from http.request.method or the older http.method, "(none)" for the rest', async () => {
    const b = await ok(t, '/logs/histogram', { ...win, step: '1h', group_by: 'http_method' });
    expect(b.buckets.map((x: Bucket) => x.groups)).toEqual([
      { GET: 2, POST: 1, '(none)': 1 },
      { PUT: 1, '(none)': 1 },
      { '(none)': 1 },
    ]);
  });

  it('applies the search filters, free text included', async () => {
    const errors = await ok(t, '/logs/histogram', { ...win, step: '1h', level: 'error,fatal' });
    expect(errors.total).toBe(2);
    const api = await ok(t, '/logs/histogram', { ...win, step: '1h', service: 'api', environment: 'production', release: '1.4.0' });
    expect(api.total).toBe(5);
    const text = await ok(t, '/logs/histogram', { ...win, step: '1h', q: 'timeout' });
    expect(text.buckets.map((x: Bucket) => x.total)).toEqual([1, 1, 0]);
    const grouped = await ok(t, '/logs/histogram', { ...win, step: '1h', q: 'timeout', group_by: 'service' });
    expect(grouped.buckets.map((x: Bucket) => x.groups)).toEqual([{ api: 1 }, { worker: 1 }, {}]);
  });

  it('counts exactly at window edges that are not whole minutes or hours', async () => {
    // 09:05:30 → 10:45:30 cuts the minutes of 09:05 and 10:45 in half.
    const from = H(9, 5, 30);
    const to = H(10, 45, 30);
    await sendLogs(t, [
      {
        resource: { service: 'edge' },
        logs: [
          { at: H(9, 5, 10), body: 'edge before from' },
          { at: H(9, 5, 40), body: 'edge after from' },
          { at: H(10, 45, 20), body: 'edge before to' },
          { at: H(10, 45, 50), body: 'edge after to' },
        ],
      },
    ]);
    for (const step of ['1m', '5m', '15m', '1h', '6h', '1d']) {
      const b = await ok(t, '/logs/histogram', { from: iso(from), to: iso(to), step, service: 'edge' });
      expect(b.total, step).toBe(2);
    }
    const all = await ok(t, '/logs/histogram', { from: iso(from), to: iso(to), step: '1m' });
    const search = await ok(t, '/logs', { from: iso(from), to: iso(to), limit: 1000 });
    expect(all.total).toBe(search.data.length);
    expect(search.total).toBe(search.data.length);
  });

  it('chooses a step for the window when none is given', async () => {
    const day = await ok(t, '/logs/histogram');
    expect(day.step).toBe('5m');
    expect(day.from).toBe(iso(NOW - DAY));
    expect(day.buckets).toHaveLength(288);
    const hour = await ok(t, '/logs/histogram', { from: iso(NOW - HOUR), to: iso(NOW) });
    expect(hour.step).toBe('1m');
    expect(hour.buckets).toHaveLength(60);
  });

  it('answers 400 for more than 2,000 buckets, an unknown step or group, or a reversed window', async () => {
    const tooMany = await read(t, '/logs/histogram', { from: iso(NOW - 3 * DAY), to: iso(NOW), step: '1m' });
    expect(tooMany.status).toBe(400);
    expect(tooMany.body).toMatchObject({ code: 'invalid_parameter', param: 'step' });
    expect(tooMany.body.message).toContain('4320');
    const justEnough = await read(t, '/logs/histogram', { from: iso(NOW - 2000 * MIN), to: iso(NOW), step: '1m' });
    expect(justEnough.status).toBe(200);
    expect(justEnough.body.buckets).toHaveLength(2000);
    expect((await read(t, '/logs/histogram', { step: '2m' })).body.param).toBe('step');
    expect((await read(t, '/logs/histogram', { group_by: 'host' })).body.param).toBe('group_by');
    const reversed = await read(t, '/logs/histogram', { from: iso(NOW), to: iso(NOW - HOUR) });
    expect(reversed.status).toBe(400);
    expect(reversed.body.param).toBe('from');
  });
});
