/**
 * Revenue impact of a problem (spec, Revenue: impact result and statuses).
 *
 * Method `affected_identified_net_30d`: take the browser sessions that had the problem in the last
 * 30 days; the identified people among them; their net revenue over the same 30 days (R).
 *   low  = R                      (revenue of the people we know were affected)
 *   high = R × sessions / identified sessions (the same rate extended to anonymous affected sessions)
 * Statuses: `no_sessions` (no affected session), `no_identity` (none belongs to an identified
 * person), `no_revenue` (R ≤ 0: range 0 to 0), else `estimated`.
 */
export const IMPACT_METHOD = 'affected_identified_net_30d';
export const IMPACT_WINDOW_DAYS = 30;

export type ImpactStatus = 'estimated' | 'no_sessions' | 'no_identity' | 'no_revenue';

export function estimateImpact(input: { sessions: number; identifiedSessions: number; net: number }): { low: number; high: number; status: ImpactStatus } {
  if (input.sessions === 0) return { low: 0, high: 0, status: 'no_sessions' };
  if (input.identifiedSessions === 0) return { low: 0, high: 0, status: 'no_identity' };
  if (input.net <= 0) return { low: 0, high: 0, status: 'no_revenue' };
  return { low: input.net, high: (input.net * input.sessions) / input.identifiedSessions, status: 'estimated' };
}
