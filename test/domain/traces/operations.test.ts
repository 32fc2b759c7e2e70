import { describe, expect, it } from 'vitest';
import { normalizeOperation, percentile, sparkline } from '../../../src/domain/traces/operations.js';

describe('normalizeOperation', () => {
  it('replaces numeric and UUID segments and keeps the method', () => {
    expect(normalizeOperation('GET /users/123/orders/6f1c2a4e-9b3d-4c5e-8f70-1a2b3c4d5e6f')).toBe('GET /users/{n}/orders/{uuid}');
    expect(normalizeOperation('DELETE /items/42')).toBe('DELETE /items/{n}');
    expect(normalizeOperation('/health')).toBe('/health');
  });
  it('strips query strings and fragments', () => {
    expect(normalizeOperation('GET /search?q=shoes&page=2')).toBe('GET /search');
    expect(normalizeOperation('GET /users/7?expand=1#top')).toBe('GET /users/{n}');
  });
  it('keeps scheme and host of absolute URLs', () => {
    expect(normalizeOperation('GET https://api.example.com:8443/v1/users/99?x=1')).toBe('GET https://api.example.com:8443/v1/users/{n}');
  });
  it('leaves mixed segments and non-path names alone', () => {
    expect(normalizeOperation('GET /v2/users/abc123')).toBe('GET /v2/users/abc123');
    expect(normalizeOperation('SELECT orders')).toBe('SELECT orders');
    expect(normalizeOperation('grpc.health.v1.Health/Check')).toBe('grpc.health.v1.Health/Check');
    expect(normalizeOperation('  GET   /a/1  ')).toBe('GET /a/{n}');
    expect(normalizeOperation('GET')).toBe('GET');
  });
});

describe('sparkline', () => {
  it('counts times per equal slice of the window', () => {
    // window 0..100 in 4 slices of 25: [0,25) [25,50) [50,75) [75,100]
    expect(sparkline([0, 10, 24.9, 25, 60, 99, 100, -1, 101], 0, 100, 4)).toEqual([3, 1, 1, 2]);
  });
  it('defaults to 60 buckets and handles empty windows', () => {
    const s = sparkline([0, 59_999, 60_000, 3_599_999], 0, 3_600_000);
    expect(s).toHaveLength(60);
    expect(s[0]).toBe(2);
    expect(s[1]).toBe(1);
    expect(s[59]).toBe(1);
    expect(sparkline([5], 10, 10, 3)).toEqual([0, 0, 0]);
    expect(() => sparkline([], 0, 1, 0)).toThrow(RangeError);
  });
});

describe('percentile (re-exported)', () => {
  it('interpolates', () => {
    expect(percentile([10, 20, 30, 40, 50], 0.95)).toBeCloseTo(48, 10); // h = 3.8 → 40 + 0.8·10
  });
});
