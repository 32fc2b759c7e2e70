/** Monitor states, component health and the roll-ups a status page shows. */

export const MONITOR_STATES = ['up', 'down', 'degraded', 'paused'] as const;
export type MonitorState = (typeof MONITOR_STATES)[number];

export const HEALTH = ['operational', 'degraded', 'down', 'unknown'] as const;
export type Health = (typeof HEALTH)[number];

/** Worst first: a group is as healthy as its worst child; unknown children only count when all are. */
const RANK: Record<Health, number> = { down: 3, degraded: 2, operational: 1, unknown: 0 };

export function healthOfMonitor(state: MonitorState | null | undefined): Health {
  if (state === 'up') return 'operational';
  if (state === 'degraded') return 'degraded';
  if (state === 'down') return 'down';
  return 'unknown';
}

export function worstHealth(list: Health[]): Health {
  let worst: Health = 'unknown';
  for (const h of list) if (RANK[h] > RANK[worst]) worst = h;
  return worst;
}

/** Expected HTTP statuses: codes and ranges, e.g. "200-299,301". */
export function parseExpectedStatus(text: string): [number, number][] {
  const out: [number, number][] = [];
  for (const part of text.split(',').map((s) => s.trim()).filter(Boolean)) {
    const m = /^(\d{3})(?:-(\d{3}))?$/.exec(part);
    if (!m) throw new Error(`\`${part}\` is not a status code or range like 200-299`);
    const lo = Number(m[1]);
    const hi = Number(m[2] ?? m[1]);
    if (lo < 100 || hi > 599 || lo > hi) throw new Error(`\`${part}\` is not a range of HTTP statuses`);
    out.push([lo, hi]);
  }
  if (!out.length) throw new Error('at least one status code is needed');
  return out;
}

export function statusExpected(ranges: [number, number][], status: number): boolean {
  return ranges.some(([lo, hi]) => status >= lo && status <= hi);
}

export type ResultStatus = 'up' | 'down' | 'degraded';

export interface DayCounts {
  day: number;
  ok: number;
  degraded: number;
  failed: number;
}

export interface UptimeBar {
  date: string;
  /** null when there was no result that day. */
  uptime: number | null;
  health: Health;
  checks: number;
}

export const DAY_MS = 86_400_000;

/** One bar per UTC day, oldest first, ending with the day of `now`. Degraded checks count as up. */
export function uptimeBars(days: DayCounts[], now: number, count = 90): UptimeBar[] {
  const byDay = new Map(days.map((d) => [d.day, d]));
  const today = Math.floor(now / DAY_MS);
  const out: UptimeBar[] = [];
  for (let d = today - count + 1; d <= today; d++) {
    const c = byDay.get(d);
    const checks = c ? c.ok + c.degraded + c.failed : 0;
    const uptime = checks ? (c!.ok + c!.degraded) / checks : null;
    const health: Health = !checks ? 'unknown' : c!.failed > 0 ? (uptime! < 0.95 ? 'down' : 'degraded') : c!.degraded > 0 ? 'degraded' : 'operational';
    out.push({ date: new Date(d * DAY_MS).toISOString().slice(0, 10), uptime, health, checks });
  }
  return out;
}

export function uptimeRatio(days: DayCounts[]): number | null {
  let ok = 0;
  let all = 0;
  for (const d of days) {
    ok += d.ok + d.degraded;
    all += d.ok + d.degraded + d.failed;
  }
  return all ? ok / all : null;
}

/** An incident's display id: INC-<number>, numbered per project. */
export const displayId = (i: { number: number }) => `INC-${i.number}`;
