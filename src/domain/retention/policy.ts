/**
 * How long each kind of telemetry is kept (days). Defaults are what a team expects of Sentry,
 * SigNoz or Langfuse; an owner may set other periods per project, capped by the server
 * (`SIGHTLINE_RETENTION_MAX_DAYS`). Control data (keys, groups and their workflow state, feedback,
 * deployments, settings) has no retention and is never expired.
 */
export const RETENTION_DEFAULTS = {
  spans: 30,
  logs: 30,
  metric_points: 30,
  metric_rollups: 400,
  error_events: 90,
  replays: 30,
  sessions: 90,
  check_ins: 90,
  ingest_outcomes: 90,
  agent_observations: 90,
  agent_scores: 90,
  capture_events: 400,
  revenue_ledger: 400,
} as const satisfies Record<string, number>;

export type RetentionKind = keyof typeof RETENTION_DEFAULTS;
export const RETENTION_KINDS = Object.keys(RETENTION_DEFAULTS) as RetentionKind[];

export const DAY_MS = 86_400_000;

export interface EffectiveRetention {
  days: number;
  /** Where the number comes from. */
  source: 'default' | 'project' | 'server_cap';
}

/** The period in force: the project's setting or the default, never above the server's cap. */
export function effectiveRetention(kind: RetentionKind, projectDays: number | undefined, maxDays: number): EffectiveRetention {
  const wanted = projectDays ?? RETENTION_DEFAULTS[kind];
  if (wanted > maxDays) return { days: maxDays, source: 'server_cap' };
  return { days: wanted, source: projectDays === undefined ? 'default' : 'project' };
}

/** Disk budget: past the high-water mark the oldest telemetry goes until usage is below the low-water mark. */
export const DISK_HIGH_WATER = 0.9;
export const DISK_LOW_WATER = 0.8;
