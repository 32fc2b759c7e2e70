/**
 * Coverage of the quality report (spec, "Agent observation": seven dimensions and their
 * denominators) computed from flag sums, and the command-line quality gate.
 */
import type { FlagColumn } from './observation.js';

export type FlagSums = Record<FlagColumn, number> & { n: number };

/** Dimension → [captured flag, eligible flag or 'n' for every observation]. */
export const DIMENSIONS = {
  // Trace linkage: every observation should carry a trace id.
  trace_linkage: ['f_trace', 'n'],
  // Generation inputs, model and provider: all generations.
  generation_inputs: ['f_input', 'f_gen'],
  // System prompts: chat/system-capable generations.
  system_prompts: ['f_system', 'f_chat'],
  // Completed outputs, token usage, cost: successful generations.
  completed_outputs: ['f_output', 'f_gen_ok'],
  model_provider: ['f_model', 'f_gen'],
  token_usage: ['f_tokens', 'f_gen_ok'],
  cost: ['f_cost', 'f_gen_ok'],
} as const satisfies Record<string, readonly [FlagColumn, FlagColumn | 'n']>;
export type Dimension = keyof typeof DIMENSIONS;
export const DIMENSION_NAMES = Object.keys(DIMENSIONS) as Dimension[];

export interface CoverageEntry {
  captured: number;
  eligible: number;
  missing: number;
  /** captured / eligible × 100, two decimals; null when nothing is eligible (the dimension does not apply). */
  percent: number | null;
}

export const pct = (part: number, whole: number): number | null => (whole > 0 ? Math.round((part / whole) * 10_000) / 100 : null);

export function coverageOf(sums: FlagSums): Record<Dimension, CoverageEntry> {
  const out = {} as Record<Dimension, CoverageEntry>;
  for (const d of DIMENSION_NAMES) {
    const [cap, elig] = DIMENSIONS[d];
    const eligible = elig === 'n' ? sums.n : sums[elig];
    const captured = sums[cap];
    out[d] = { captured, eligible, missing: eligible - captured, percent: pct(captured, eligible) };
  }
  return out;
}

export function privacyPostureOf(sums: FlagSums) {
  const entry = (count: number) => ({ count, percent: pct(count, sums.n) });
  return {
    observations: sums.n,
    privacy_mode: entry(sums.f_privacy),
    content_bearing: entry(sums.f_content),
    reasoning_bearing: entry(sums.f_reasoning),
    tool_payload_bearing: entry(sums.f_tool_payload),
  };
}

export interface QualityReportLike {
  total_observations: number;
  invalid_token_totals: number;
  coverage: Record<string, { percent: number | null; eligible: number }>;
  privacy_posture: { observations: number; privacy_mode: { count: number }; content_bearing: { percent: number | null } };
  scores: { count: number; scored_observations: number };
}

export interface GateOptions {
  /** Every applicable dimension must reach this percentage. */
  threshold?: number;
  min_observations?: number;
  min_scored_observations?: number;
  min_scores?: number;
  require_privacy_mode?: boolean;
  max_content_bearing_percent?: number;
  /** An empty window fails by default; this lets it pass. */
  allow_empty?: boolean;
}

export interface GateResult {
  passed: boolean;
  failures: string[];
}

/** The quality gate (spec, "Agent observations": command-line gate behaviour). */
export function evaluateGate(r: QualityReportLike, o: GateOptions): GateResult {
  const failures: string[] = [];
  if (r.total_observations === 0 && !o.allow_empty) failures.push('empty window: no observations between from and to');
  if (r.invalid_token_totals > 0) failures.push(`${r.invalid_token_totals} observation(s) with invalid token totals (negative, not whole, or total below input + output)`);
  if (o.threshold !== undefined) {
    for (const [dim, c] of Object.entries(r.coverage)) {
      if (c.eligible > 0 && c.percent !== null && c.percent < o.threshold) failures.push(`${dim} coverage ${c.percent}% is below the threshold ${o.threshold}%`);
    }
  }
  if (o.min_observations !== undefined && r.total_observations < o.min_observations) failures.push(`${r.total_observations} observation(s), fewer than the minimum ${o.min_observations}`);
  if (o.min_scored_observations !== undefined && r.scores.scored_observations < o.min_scored_observations) {
    failures.push(`${r.scores.scored_observations} scored observation(s), fewer than the minimum ${o.min_scored_observations}`);
  }
  if (o.min_scores !== undefined && r.scores.count < o.min_scores) failures.push(`${r.scores.count} score(s), fewer than the minimum ${o.min_scores}`);
  if (o.require_privacy_mode && r.privacy_posture.privacy_mode.count < r.privacy_posture.observations) {
    failures.push(`${r.privacy_posture.observations - r.privacy_posture.privacy_mode.count} observation(s) not in privacy mode`);
  }
  if (o.max_content_bearing_percent !== undefined) {
    const p = r.privacy_posture.content_bearing.percent ?? 0;
    if (p > o.max_content_bearing_percent) failures.push(`content-bearing observations ${p}% exceed the maximum ${o.max_content_bearing_percent}%`);
  }
  return { passed: failures.length === 0, failures };
}
