import { describe, expect, it } from 'vitest';
import { compareGroups, errorRate, operationRow, selectPercentile, sortNeeds, type OperationGroup } from '../../../src/domain/traces/operation-stats.js';
import { percentile } from '../../../src/domain/traces/operations.js';

const g = (p: Partial<OperationGroup> & { operation: string }): OperationGroup => ({ service_name: 'api', last_ms: 0, ...p });

describe('operation rows', () => {
  it('computes percentiles from sorted durations, the error rate and a 60-bucket sparkline', () => {
    const buckets = new Uint32Array(60);
    buckets[0] = 2;
    buckets[59] = 3;
    const row = operationRow(g({ operation: 'GET /a', last_ms: 5, count: 5, errors: 2, durations: Float64Array.from([10, 20, 30, 40, 50]), buckets }));
    expect(row).toMatchObject({ trace_count: 5, error_count: 2, error_rate: 0.4, p50_ms: 30, p95_ms: 48, last_ms: 5 });
    expect(row.sparkline).toHaveLength(60);
    expect(row.sparkline[0]).toBe(2);
    expect(row.sparkline[59]).toBe(3);
    expect(operationRow(g({ operation: 'x' }))).toMatchObject({ trace_count: 0, p50_ms: null, p95_ms: null, error_rate: 0 });
  });

  it('sorts descending by the chosen key with stable tie-breaks', () => {
    const a = g({ operation: 'a', last_ms: 3, count: 10, errors: 1, durations: Float64Array.from([1, 2, 100]) });
    const b = g({ operation: 'b', last_ms: 9, count: 2, errors: 2, durations: Float64Array.from([5, 6]) });
    const c = g({ operation: 'c', last_ms: 9, count: 20, errors: 0, durations: Float64Array.from([7]) });
    const ids = (sort: Parameters<typeof compareGroups>[0]) => [a, b, c].sort(compareGroups(sort)).map((x) => x.operation);
    expect(ids('last_seen')).toEqual(['c', 'b', 'a']); // c and b tie on last_seen; c has more
    expect(ids('count')).toEqual(['c', 'a', 'b']);
    expect(ids('p95')).toEqual(['a', 'c', 'b']);
    expect(ids('error_rate')).toEqual(['b', 'a', 'c']);
  });

  it('knows what each sort needs and rounds error rates', () => {
    expect(sortNeeds('last_seen')).toBe('last');
    expect(sortNeeds('count')).toBe('counts');
    expect(sortNeeds('error_rate')).toBe('counts');
    expect(sortNeeds('p95')).toBe('detail');
    expect(errorRate(1, 3)).toBe(0.3333);
    expect(errorRate(0, 0)).toBe(0);
  });
});

describe('selectPercentile', () => {
  it('matches interpolated percentiles of the sorted values, with many duplicates too', () => {
    let seed = 7;
    const rnd = () => ((seed = (seed * 1103515245 + 12345) % 2147483648) / 2147483648);
    for (const [n, distinct] of [
      [1, 1],
      [2, 2],
      [17, 5],
      [1000, 1000],
      [5000, 3],
      [4096, 1],
    ]) {
      const values = Array.from({ length: n }, () => Math.floor(rnd() * distinct) * 1.5);
      const sorted = [...values].sort((a, b) => a - b);
      for (const q of [0, 0.5, 0.95, 0.99, 1]) {
        expect(selectPercentile(Float64Array.from(values), q), `n=${n} q=${q}`).toBeCloseTo(percentile(sorted, q)!, 9);
      }
    }
    expect(selectPercentile(new Float64Array(0), 0.5)).toBeNull();
    expect(() => selectPercentile(Float64Array.from([1]), 2)).toThrow(RangeError);
  });
});
