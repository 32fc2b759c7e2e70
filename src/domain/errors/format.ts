/** Human wording for time gaps in triage summaries and suspect-commit reasons. Pure. */

/** "less than a minute", "12 min", "3 h", "5 days" (rounded; hours up to 48, then days). */
export function formatDuration(ms: number): string {
  const abs = Math.abs(ms);
  if (abs < 60_000) return 'less than a minute';
  const min = Math.round(abs / 60_000);
  if (min < 60) return `${min} min`;
  const h = Math.round(abs / 3_600_000);
  if (h < 48) return `${h} h`;
  const d = Math.round(abs / 86_400_000);
  return `${d} days`;
}

/** "1 time", "42 times" */
export const times = (n: number) => `${n} ${n === 1 ? 'time' : 'times'}`;
