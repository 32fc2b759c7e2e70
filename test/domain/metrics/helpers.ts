import type { MetricPointInput } from '../../../src/domain/metrics/normalize.js';

/** Window used by the metric tests: 2024-01-01T00:00Z .. 01:00Z. */
export const T0 = Date.UTC(2024, 0, 1, 0, 0, 0);
export const MIN = 60_000;
export const at = (minutes: number) => T0 + minutes * MIN;
export const WINDOW = { fromMs: T0, toMs: at(60) };

export function pt(p: Partial<MetricPointInput> & Pick<MetricPointInput, 'type' | 'time_ms'>): MetricPointInput {
  return {
    temporality: p.type === 'gauge' ? 'unspecified' : 'cumulative',
    start_ms: null,
    series_key: 's1',
    scope_name: 'scope',
    monotonic: p.type === 'sum' ? true : undefined,
    ...p,
  } as MetricPointInput;
}

/** Cumulative counter point with a given start (minutes relative to T0). */
export const counter = (minute: number, value: number, startMinute: number | null = -120, extra: Partial<MetricPointInput> = {}) =>
  pt({ type: 'sum', time_ms: at(minute), value, start_ms: startMinute === null ? null : at(startMinute), ...extra });
