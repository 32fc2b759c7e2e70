import { describe, expect, it } from 'vitest';
import { raisedException, topInAppFrame, trimPayload } from '../../../src/domain/errors/payload.js';
import { nearestRankIndex, percentile } from '../../../src/domain/errors/latency.js';
import { formatDuration } from '../../../src/domain/errors/format.js';

describe('trimPayload', () => {
  it('returns a small payload unchanged', () => {
    const p = { a: 1, b: ['x'] };
    expect(trimPayload(p)).toEqual({ payload: p, truncated: false });
  });

  it('cuts long strings and keeps the end of long arrays until the payload fits', () => {
    const p = { blob: 'y'.repeat(50_000), list: Array.from({ length: 1000 }, (_, i) => ({ i, text: 'z'.repeat(100) })) };
    const r = trimPayload(p, 16 * 1024);
    expect(r.truncated).toBe(true);
    expect(Buffer.byteLength(JSON.stringify(r.payload))).toBeLessThanOrEqual(16 * 1024);
    const out = r.payload as { blob: string; list: { i: number }[] };
    expect(out.blob).toMatch(/more characters]$/);
    expect(out.list.at(-1)!.i).toBe(999);
  });

  it('replaces a payload that cannot fit with a note', () => {
    const wide = Object.fromEntries(Array.from({ length: 50 }, (_, i) => [`k${i}`, 'v'.repeat(300)]));
    expect(trimPayload(wide, 100)).toEqual({ payload: { note: 'payload omitted: larger than 100 bytes even when trimmed' }, truncated: true });
  });
});

describe('raisedException and topInAppFrame', () => {
  it('reads the innermost exception of Sentry `exception.values` or a bare array', () => {
    const frames = [{ filename: 'a.js', function: 'a', in_app: true }];
    expect(raisedException({ exception: { values: [{ type: 'Outer' }, { type: 'Inner', value: 'v', stacktrace: { frames } }] } })).toEqual({ type: 'Inner', value: 'v', frames });
    expect(raisedException({ exception: [{ type: 'X', value: '' }] })).toEqual({ type: 'X', value: '', frames: [] });
    expect(raisedException({ message: 'm' })).toBeNull();
    expect(raisedException('nope')).toBeNull();
  });

  it('prefers the newest in-app frame, else the newest non-library frame', () => {
    expect(topInAppFrame([{ function: 'a', in_app: true }, { function: 'b', in_app: false }])!.function).toBe('a');
    expect(topInAppFrame([{ function: 'app', filename: 'src/x.js' }, { function: 'lib', filename: 'node_modules/y/z.js' }])!.function).toBe('app');
    expect(topInAppFrame([])).toBeNull();
  });
});

describe('latency percentiles and durations', () => {
  it('uses the nearest rank', () => {
    expect(percentile([10, 20, 30, 40], 50)).toBe(20);
    expect(percentile([10, 20, 30, 40], 95)).toBe(40);
    expect(percentile([5], 99)).toBe(5);
    expect(percentile([], 50)).toBeNull();
    expect(nearestRankIndex(20, 95)).toBe(18);
    expect(nearestRankIndex(20, 0)).toBe(0);
  });

  it('words durations in minutes, hours and days', () => {
    expect(formatDuration(30_000)).toBe('less than a minute');
    expect(formatDuration(12 * 60_000)).toBe('12 min');
    expect(formatDuration(3 * 3_600_000)).toBe('3 h');
    expect(formatDuration(5 * 86_400_000)).toBe('5 days');
  });
});
