import { describe, expect, it } from 'vitest';
import {
  bucketCount,
  checkBucketCount,
  defaultGranularity,
  granularityMs,
  parseTimestamp,
  resolveWindow,
  WindowError,
} from '../../../src/domain/metrics/window.js';

const NOW = Date.UTC(2024, 4, 10, 12, 0, 0); // 2024-05-10T12:00:00Z
const H = 3_600_000;
const D = 24 * H;

function windowError(fn: () => unknown): WindowError {
  try {
    fn();
  } catch (e) {
    expect(e).toBeInstanceOf(WindowError);
    return e as WindowError;
  }
  throw new Error('expected a WindowError');
}

describe('parseTimestamp', () => {
  it('accepts Z and numeric offsets', () => {
    expect(parseTimestamp('2024-05-10T12:00:00Z')).toBe(NOW);
    // 14:00 at +02:00 is 12:00 UTC
    expect(parseTimestamp('2024-05-10T14:00:00+02:00')).toBe(NOW);
    expect(parseTimestamp('2024-05-10T07:30:00-0430')).toBe(NOW);
    expect(parseTimestamp('2024-05-10T12:00Z')).toBe(NOW);
    expect(parseTimestamp('2024-05-10T12:00:00.250Z')).toBe(NOW + 250);
    // '+' decoded to a space by a query string
    expect(parseTimestamp('2024-05-10T14:00:00 02:00')).toBe(NOW);
  });
  it('rejects missing timezone, impossible dates and garbage', () => {
    expect(parseTimestamp('2024-05-10T12:00:00')).toBeNull();
    expect(parseTimestamp('2024-05-10')).toBeNull();
    expect(parseTimestamp('2024-02-30T00:00:00Z')).toBeNull();
    expect(parseTimestamp('2024-05-10T24:00:00Z')).toBeNull();
    expect(parseTimestamp('yesterday')).toBeNull();
    expect(parseTimestamp('1715342400000')).toBeNull();
  });
});

describe('resolveWindow', () => {
  it('defaults: to = now, from = 24 h before to', () => {
    expect(resolveWindow({}, { now: NOW })).toEqual({ fromMs: NOW - D, toMs: NOW });
    expect(resolveWindow({ to: '2024-05-01T00:00:00Z' }, { now: NOW })).toEqual({
      fromMs: Date.UTC(2024, 3, 30),
      toMs: Date.UTC(2024, 4, 1),
    });
    expect(resolveWindow({ from: '2024-05-10T11:00:00Z' }, { now: NOW })).toEqual({ fromMs: NOW - H, toMs: NOW });
    expect(resolveWindow({ from: '', to: null }, { now: NOW, defaultMs: H })).toEqual({ fromMs: NOW - H, toMs: NOW });
  });
  it('rejects a timestamp without timezone', () => {
    const e = windowError(() => resolveWindow({ from: '2024-05-10T10:00:00' }, { now: NOW }));
    expect(e.param).toBe('from');
    expect(e.status).toBe(400);
    expect(e.message).toMatch(/timezone/);
    expect(windowError(() => resolveWindow({ to: 'nope' }, { now: NOW })).param).toBe('to');
  });
  it('rejects a reversed or empty window', () => {
    expect(
      windowError(() => resolveWindow({ from: '2024-05-10T12:00:00Z', to: '2024-05-10T11:00:00Z' }, { now: NOW })).message,
    ).toMatch(/earlier/);
    windowError(() => resolveWindow({ from: '2024-05-10T12:00:00Z', to: '2024-05-10T12:00:00Z' }, { now: NOW }));
  });
  it('accepts exactly 30 days and rejects 31 days', () => {
    expect(resolveWindow({ from: '2024-04-10T12:00:00Z' }, { now: NOW })).toEqual({ fromMs: NOW - 30 * D, toMs: NOW });
    const e = windowError(() => resolveWindow({ from: '2024-04-09T12:00:00Z' }, { now: NOW }));
    expect(e.message).toMatch(/30 days/);
  });
});

describe('granularity and buckets', () => {
  it('granularityMs', () => {
    expect(granularityMs('1m')).toBe(60_000);
    expect(granularityMs('5m')).toBe(300_000);
    expect(granularityMs('15m')).toBe(900_000);
    expect(granularityMs('1h')).toBe(H);
    expect(granularityMs('6h')).toBe(6 * H);
    expect(granularityMs('1d')).toBe(D);
    expect(windowError(() => granularityMs('2m')).param).toBe('granularity');
  });
  it('counts epoch-aligned buckets of a half-open window', () => {
    const from = Date.UTC(2024, 0, 1);
    // 10:00..10:05 at 1m → 5 buckets; shifted by 30 s → 6 (both partial ends count)
    expect(bucketCount(from, from + 5 * 60_000, 60_000)).toBe(5);
    expect(bucketCount(from + 30_000, from + 5 * 60_000 + 30_000, 60_000)).toBe(6);
  });
  it('2,000 buckets pass, 2,001 are rejected', () => {
    const from = Date.UTC(2024, 0, 1);
    expect(checkBucketCount(from, from + 2000 * 60_000, 60_000)).toBe(2000);
    const e = windowError(() => checkBucketCount(from, from + 2001 * 60_000, 60_000));
    expect(e.param).toBe('granularity');
    expect(e.message).toMatch(/2001 buckets.*coarser granularity/);
  });
  it('defaultGranularity picks the finest with at most ~300 buckets', () => {
    const from = Date.UTC(2024, 0, 1);
    expect(defaultGranularity(from, from + H)).toBe('1m'); // 60
    expect(defaultGranularity(from, from + D)).toBe('5m'); // 288
    expect(defaultGranularity(from, from + 7 * D)).toBe('1h'); // 168
    expect(defaultGranularity(from, from + 30 * D)).toBe('6h'); // 1h would be 720
  });
});
