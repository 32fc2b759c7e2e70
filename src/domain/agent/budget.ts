/**
 * Why this file: the agent's daily budget stages (spec, States: "computed from the day's use;
 * thresholds not shown" — ours are documented here and in the README). Use is counted in units
 * (SIGHTLINE_AGENT_DAILY_BUDGET) per project per UTC day and resets at 00:00 UTC.
 *
 *   used < 70 %        normal       all work
 *   70 % ≤ used < 90 % conserve     all work except automatic fixes
 *   90 % ≤ used < 100% notify_only  no investigations; alerts and answers to direct questions only
 *   used ≥ 100 %       exhausted    only answers to direct questions until the next UTC day
 */

export type Stage = 'normal' | 'conserve' | 'notify_only' | 'exhausted';

export const STAGE_THRESHOLDS = { conserve: 70, notify_only: 90, exhausted: 100 } as const;
export const DAY_MS = 86_400_000;

export const utcDay = (now: number): number => Math.floor(now / DAY_MS);

export function usedPercent(units: number, budget: number): number {
  if (budget <= 0) return 100;
  return Math.round((units / budget) * 1000) / 10;
}

export function stageFor(percent: number): Stage {
  if (percent >= STAGE_THRESHOLDS.exhausted) return 'exhausted';
  if (percent >= STAGE_THRESHOLDS.notify_only) return 'notify_only';
  if (percent >= STAGE_THRESHOLDS.conserve) return 'conserve';
  return 'normal';
}

/** May the agent start an investigation on its own (a signal), at this stage? */
export const mayInvestigate = (s: Stage): boolean => s === 'normal' || s === 'conserve';
/** May it post a proactive alert? Not once the day's budget is exhausted. */
export const mayAlert = (s: Stage): boolean => s !== 'exhausted';
/** May it fix things automatically (auto_fix `project_policy`)? Only at `normal`. */
export const mayAutoFix = (s: Stage): boolean => s === 'normal';
