/**
 * Cron monitor schedules, as Sentry's monitor config sends them: a 5-field crontab (minute hour
 * day-of-month month day-of-week; lists, ranges, steps, names, `@hourly`-style aliases) evaluated in
 * an IANA time zone, or an interval (`value` × `unit`).
 */

export type Schedule =
  | { type: 'crontab'; value: string; timezone: string }
  | { type: 'interval'; value: number; unit: 'minute' | 'hour' | 'day' | 'week' | 'month' | 'year' };

interface Fields {
  minute: Set<number>;
  hour: Set<number>;
  dom: Set<number>;
  month: Set<number>;
  dow: Set<number>;
  domStar: boolean;
  dowStar: boolean;
}

const ALIASES: Record<string, string> = {
  '@yearly': '0 0 1 1 *',
  '@annually': '0 0 1 1 *',
  '@monthly': '0 0 1 * *',
  '@weekly': '0 0 * * 0',
  '@daily': '0 0 * * *',
  '@midnight': '0 0 * * *',
  '@hourly': '0 * * * *',
};
const MONTHS = ['jan', 'feb', 'mar', 'apr', 'may', 'jun', 'jul', 'aug', 'sep', 'oct', 'nov', 'dec'];
const DAYS = ['sun', 'mon', 'tue', 'wed', 'thu', 'fri', 'sat'];

export class ScheduleError extends Error {}

function field(text: string, min: number, max: number, names?: string[]): Set<number> {
  const out = new Set<number>();
  const num = (s: string): number => {
    const i = names ? names.indexOf(s.toLowerCase()) : -1;
    const n = i >= 0 ? i + (min === 1 ? 1 : 0) : Number(s);
    if (!Number.isInteger(n)) throw new ScheduleError(`\`${s}\` is not a number`);
    return n;
  };
  for (const part of text.split(',')) {
    const [range, stepText] = part.split('/');
    const step = stepText === undefined ? 1 : Number(stepText);
    if (!Number.isInteger(step) || step < 1) throw new ScheduleError(`bad step in \`${part}\``);
    let lo: number;
    let hi: number;
    if (range === '*') [lo, hi] = [min, max];
    else if (range!.includes('-')) {
      const [a, b] = range!.split('-');
      [lo, hi] = [num(a!), num(b!)];
    } else {
      lo = num(range!);
      hi = stepText === undefined ? lo : max;
    }
    if (max === 7 && hi === 7) hi = 7; // day-of-week 7 is Sunday too
    if (lo < min || hi > max || lo > hi) throw new ScheduleError(`\`${part}\` is outside ${min}-${max}`);
    for (let v = lo; v <= hi; v += step) out.add(max === 7 && v === 7 ? 0 : v);
  }
  return out;
}

export function parseCrontab(expr: string): Fields {
  const text = ALIASES[expr.trim().toLowerCase()] ?? expr.trim();
  const parts = text.split(/\s+/);
  if (parts.length !== 5) throw new ScheduleError('a crontab has five fields: minute hour day-of-month month day-of-week');
  return {
    minute: field(parts[0]!, 0, 59),
    hour: field(parts[1]!, 0, 23),
    dom: field(parts[2]!, 1, 31),
    month: field(parts[3]!, 1, 12, MONTHS),
    dow: field(parts[4]!, 0, 7, DAYS),
    domStar: parts[2] === '*',
    dowStar: parts[4] === '*',
  };
}

/** Throws ScheduleError with a readable reason when the schedule is invalid. */
export function validateSchedule(s: Schedule): void {
  if (s.type === 'crontab') {
    parseCrontab(s.value);
    try {
      new Intl.DateTimeFormat('en-US', { timeZone: s.timezone });
    } catch {
      throw new ScheduleError(`unknown time zone \`${s.timezone}\``);
    }
  } else if (!Number.isInteger(s.value) || s.value < 1) {
    throw new ScheduleError('an interval schedule needs a positive integer value');
  }
}

const fmtCache = new Map<string, Intl.DateTimeFormat>();
function localParts(ms: number, tz: string) {
  let f = fmtCache.get(tz);
  if (!f) {
    f = new Intl.DateTimeFormat('en-US', { timeZone: tz, hourCycle: 'h23', year: 'numeric', month: 'numeric', day: 'numeric', hour: 'numeric', minute: 'numeric', weekday: 'short' });
    fmtCache.set(tz, f);
  }
  const p: Record<string, string> = {};
  for (const x of f.formatToParts(ms)) p[x.type] = x.value;
  return { month: Number(p.month), day: Number(p.day), hour: Number(p.hour) % 24, minute: Number(p.minute), dow: DAYS.indexOf(p.weekday!.toLowerCase().slice(0, 3)) };
}

const MIN = 60_000;
const UNIT_MS = { minute: MIN, hour: 60 * MIN, day: 1440 * MIN, week: 7 * 1440 * MIN, month: 30 * 1440 * MIN, year: 365 * 1440 * MIN };

/** The first scheduled time strictly after `afterMs` (whole minutes). Interval schedules count from `anchorMs`. */
export function nextRun(s: Schedule, afterMs: number, anchorMs = 0): number {
  if (s.type === 'interval') {
    const step = s.value * UNIT_MS[s.unit];
    const k = Math.floor((afterMs - anchorMs) / step) + 1;
    return anchorMs + Math.max(1, k) * step;
  }
  const f = parseCrontab(s.value);
  let t = Math.floor(afterMs / MIN) * MIN + MIN;
  const limit = t + 366 * 1440 * MIN * 5;
  while (t < limit) {
    const p = localParts(t, s.timezone);
    const domOk = f.dom.has(p.day);
    const dowOk = f.dow.has(p.dow);
    const dayOk = f.domStar || f.dowStar ? domOk && dowOk : domOk || dowOk;
    if (!f.month.has(p.month) || !dayOk) {
      t += (1440 - (p.hour * 60 + p.minute)) * MIN; // next local midnight (DST shifts are re-checked)
      continue;
    }
    if (!f.hour.has(p.hour)) {
      t += (60 - p.minute) * MIN;
      continue;
    }
    if (!f.minute.has(p.minute)) {
      t += MIN;
      continue;
    }
    return t;
  }
  throw new ScheduleError('the schedule never fires');
}
