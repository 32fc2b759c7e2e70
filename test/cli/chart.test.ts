/** Charts from the descriptors' display hints, on answers shaped like the operations' own. */
import { describe, expect, it } from 'vitest';
import { renderChart, fitSeries, compactNumber } from '../../src/cli/chart.js';
import { catalogue } from '../../operations/index.js';

const hintOf = (id: string) => catalogue.find((o) => o.operationId === id)!.display!.chart!;
const minutes = (n: number, f: (i: number) => Record<string, unknown>) => Array.from({ length: n }, (_, i) => ({ time: new Date(Date.UTC(2026, 5, 1, 12, i)).toISOString(), ...f(i) }));

describe('charts', () => {
  it('draws release health from its nested series, titled with the verdict', () => {
    const answer = { version: '1.4.2', health: { comparison: 'regressed', decided_by: 'error_rate', series: minutes(30, (i) => ({ request_count: i < 15 ? 10 : 40 })) } };
    const text = renderChart(answer, hintOf('releases.get'), { width: 80 })!;
    expect(text.split('\n').slice(0, 2).join(' · ')).toMatch(/^version 1\.4\.2 · comparison regressed · decided_by error_rate · unit requests · 30 buckets/);
    expect(text).toMatch(/^ *40 [┤┼]/m);
    expect(text).toMatch(/^ +12:00 +12:29$/m);
  });

  it('draws the daily AI cost series', () => {
    const data = Array.from({ length: 7 }, (_, i) => ({ date: `2026-06-0${i + 1}`, cost_usd: i === 3 ? 12.5 : 1 }));
    const text = renderChart({ from: '2026-06-01', to: '2026-06-08', data }, hintOf('ai.histogram'), { width: 60 })!;
    expect(text).toMatch(/unit USD · 7 buckets/);
    expect(text).toMatch(/^ *13 [┤┼]/m);
    expect(text).toMatch(/^ +06-01 00:00 +06-07 00:00$/m);
  });

  it('merges buckets by sum or mean and writes compact numbers', () => {
    expect(fitSeries([1, 2, 3, 4, null, null], 3, 'sum')).toEqual([3, 7, 0]);
    expect(fitSeries([1, 3, null, 5, null, null], 3, 'mean')).toEqual([2, 5, null]);
    expect(compactNumber(12_345)).toBe('12.3k');
    expect(compactNumber(2_500_000, 'By')).toBe('2.5MBy');
    expect(compactNumber(0.25, 'ms')).toBe('0.25ms');
  });

  it('has nothing to draw without points', () => {
    expect(renderChart({ buckets: [] }, hintOf('logs.histogram'), { width: 80 })).toBeNull();
  });
});
