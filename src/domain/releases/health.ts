/**
 * Release health comparison (spec "Releases", health comparison rules 1–4). Pure: windows from
 * serving intervals, figures from rolled-up counts and latency sketches, and the verdict.
 */
import { quantiles, type Sketch } from './sketch.js';

export const MAX_WINDOW_MS = 24 * 3_600_000;
export const MIN_WINDOW_MS = 5 * 60_000;
export const MIN_REQUESTS = 50;
export const ERROR_RATE_POINTS = 1;
export const P95_PERCENT = 20;
export const P95_MS = 5;
/** Floating-point slack so that exactly 1 point / 20% / 5 ms count as reached (3/100 − 2/100 is 0.00999…). */
const EPS = 1e-9;

export type Comparison = 'improved' | 'regressed' | 'unchanged' | 'insufficient_data';
export type DecidedBy =
  | 'error_rate'
  | 'p95_latency'
  | 'error_rate_and_p95_latency'
  | 'no_threshold_crossed'
  | 'no_previous_release'
  | 'window_under_5_minutes'
  | 'too_few_requests';

export interface Span {
  start: number;
  end: number;
}

export interface HealthWindows {
  window: Span;
  previous_window: Span | null;
  /** Set when the comparison cannot run whatever the figures. */
  insufficient: 'no_previous_release' | 'window_under_5_minutes' | null;
}

/**
 * Rule 1: two windows of equal length, the shorter of the two serving times (at most 24 h), the
 * current one from the release's first serving start, the previous one ending just before it.
 * Rule 2: under 5 minutes, or no previous release → the release's own serving time alone.
 */
export function healthWindows(current: { start: number; end: number | null }, previous: { start: number; end: number | null } | null, now: number): HealthWindows {
  const curEnd = Math.min(current.end ?? now, now);
  const own: Span = { start: current.start, end: Math.max(current.start, curEnd) };
  if (!previous) return { window: own, previous_window: null, insufficient: 'no_previous_release' };
  const prevLen = Math.min(previous.end ?? current.start, current.start) - previous.start;
  const len = Math.min(own.end - own.start, prevLen, MAX_WINDOW_MS);
  if (len < MIN_WINDOW_MS) return { window: own, previous_window: null, insufficient: 'window_under_5_minutes' };
  return {
    window: { start: current.start, end: current.start + len },
    previous_window: { start: current.start - len, end: current.start },
    insufficient: null,
  };
}

export interface Totals {
  requests: number;
  errors: number;
  sketch: Sketch;
}

export interface Figures {
  request_count: number;
  error_count: number;
  /** 0 to 1. */
  error_rate: number;
  p50_ms: number | null;
  p95_ms: number | null;
  p99_ms: number | null;
  throughput_per_min: number;
}

export function figures(t: Totals, window: Span): Figures {
  const [p50, p95, p99] = quantiles(t.sketch, [0.5, 0.95, 0.99]);
  const minutes = Math.max(window.end - window.start, 1) / 60_000;
  return {
    request_count: t.requests,
    error_count: t.errors,
    error_rate: t.requests ? t.errors / t.requests : 0,
    p50_ms: p50 ?? null,
    p95_ms: p95 ?? null,
    p99_ms: p99 ?? null,
    throughput_per_min: t.requests / minutes,
  };
}

export interface Deltas {
  error_rate_points: number;
  p95_percent: number | null;
  throughput_percent: number | null;
}

export function deltas(cur: Figures, prev: Figures): Deltas {
  const pct = (a: number | null, b: number | null) => (a === null || b === null || b === 0 ? null : ((a - b) / b) * 100);
  return {
    error_rate_points: (cur.error_rate - prev.error_rate) * 100,
    p95_percent: pct(cur.p95_ms, prev.p95_ms),
    throughput_percent: pct(cur.throughput_per_min, prev.throughput_per_min),
  };
}

/**
 * Rules 3–4: each side needs MIN_REQUESTS; `regressed` when the error rate is up 1 point or more, or
 * p95 is up 20% or more and 5 ms or more; `improved` symmetrically; `regressed` wins a mixed result.
 */
export function verdict(cur: Figures, prev: Figures): { comparison: Comparison; decided_by: DecidedBy } {
  if (cur.request_count < MIN_REQUESTS || prev.request_count < MIN_REQUESTS) return { comparison: 'insufficient_data', decided_by: 'too_few_requests' };
  const points = (cur.error_rate - prev.error_rate) * 100;
  const errWorse = points >= ERROR_RATE_POINTS - EPS;
  const errBetter = points <= -ERROR_RATE_POINTS + EPS;
  let latWorse = false;
  let latBetter = false;
  if (cur.p95_ms !== null && prev.p95_ms !== null) {
    const ms = cur.p95_ms - prev.p95_ms;
    const pct = prev.p95_ms > 0 ? (ms / prev.p95_ms) * 100 : ms > 0 ? Infinity : 0;
    latWorse = pct >= P95_PERCENT - EPS && ms >= P95_MS - EPS;
    latBetter = pct <= -P95_PERCENT + EPS && ms <= -P95_MS + EPS;
  }
  const both = (a: boolean, b: boolean): DecidedBy => (a && b ? 'error_rate_and_p95_latency' : a ? 'error_rate' : 'p95_latency');
  if (errWorse || latWorse) return { comparison: 'regressed', decided_by: both(errWorse, latWorse) };
  if (errBetter || latBetter) return { comparison: 'improved', decided_by: both(errBetter, latBetter) };
  return { comparison: 'unchanged', decided_by: 'no_threshold_crossed' };
}

/** Bucket size for `series`: whole minutes, at most 60 points over the window. */
export function seriesBucketMs(window: Span): number {
  const minutes = Math.max(1, Math.ceil((window.end - window.start) / 60_000));
  return Math.max(1, Math.ceil(minutes / 60)) * 60_000;
}
