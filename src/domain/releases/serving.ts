/**
 * Which release of one service and environment served when (spec "Releases", serving rules 1–4).
 * Pure: it takes the deployment records and the telemetry activity of every version of one
 * service/environment and returns, per version, its serving intervals.
 *
 * Telemetry activity is a list of segments per version: [first, last] times of spans with no gap
 * of SILENCE_MS or more inside (src/storage/release-rollups.ts keeps them at ingest).
 */
export const SILENCE_MS = 15 * 60_000;

/** Deployment records that never served start nothing (they still name the version: `confirmed`). */
export const NOT_SERVING_STATUSES: ReadonlySet<string> = new Set(['failed', 'canceled', 'skipped']);

export interface ActivitySegment {
  start: number;
  end: number;
  /** The start is only known to the hour (telemetry stored before the rollups existed). */
  approx?: boolean;
}

export interface DeploymentMark {
  version: string;
  /** started_at, else when the record was created. */
  at: number;
  status: string;
}

export interface ServingInterval {
  start: number;
  /** null while serving. */
  end: number | null;
  /** What made it start: the first start, a deployment record, telemetry, or the silence rule. */
  cause: 'deployment' | 'telemetry' | 'silence';
}

export interface DerivedVersion {
  version: string;
  confirmed: boolean;
  started_at: number;
  start_approximate: boolean;
  first_seen: number | null;
  last_seen: number | null;
  /** Oldest first; empty when the version never served (it lost an equal-start tie). */
  serving: ServingInterval[];
  /** The version that served just before this one first started serving. */
  previous_version: string | null;
}

/** Sort and merge segments whose gap is under SILENCE_MS (touching hourly backfill segments too). */
export function mergeSegments(segments: readonly ActivitySegment[]): ActivitySegment[] {
  const sorted = [...segments].sort((a, b) => a.start - b.start);
  const out: ActivitySegment[] = [];
  for (const s of sorted) {
    const last = out[out.length - 1];
    if (last && s.start - last.end < SILENCE_MS) {
      last.end = Math.max(last.end, s.end);
    } else out.push({ ...s });
  }
  return out;
}

interface VersionState {
  version: string;
  records: number[];
  segments: ActivitySegment[];
  start: number;
  confirmed: boolean;
  lastSeen: number;
}

/**
 * Rule 4's order: later start is newer; at equal start a version with a deployment record, then the
 * version seen last. Version text never sets the order (the last key only makes ties deterministic).
 */
function newer(a: VersionState, b: VersionState): boolean {
  if (a.start !== b.start) return a.start > b.start;
  if (a.confirmed !== b.confirmed) return a.confirmed;
  if (a.lastSeen !== b.lastSeen) return a.lastSeen > b.lastSeen;
  return a.version > b.version;
}

export function deriveServing(input: {
  deployments: readonly DeploymentMark[];
  activity: ReadonlyMap<string, readonly ActivitySegment[]>;
  now: number;
}): DerivedVersion[] {
  const { now } = input;
  const states = new Map<string, VersionState>();
  const state = (v: string): VersionState => {
    let s = states.get(v);
    if (!s) states.set(v, (s = { version: v, records: [], segments: [], start: Infinity, confirmed: false, lastSeen: -Infinity }));
    return s;
  };
  for (const d of input.deployments) {
    const s = state(d.version);
    s.confirmed = true;
    if (!NOT_SERVING_STATUSES.has(d.status)) s.records.push(d.at);
  }
  for (const [v, segs] of input.activity) {
    if (!segs.length) continue;
    const s = state(v);
    s.segments = mergeSegments(segs);
    s.lastSeen = s.segments[s.segments.length - 1]!.end;
  }
  for (const s of states.values()) {
    s.records.sort((a, b) => a - b);
    s.start = Math.min(s.records[0] ?? Infinity, s.segments[0]?.start ?? Infinity);
  }

  type Ev = { t: number; s: VersionState; kind: 'deployment' | 'telemetry' };
  const events: Ev[] = [];
  for (const s of states.values()) {
    for (const t of s.records) events.push({ t, s, kind: 'deployment' });
    for (const seg of s.segments) events.push({ t: seg.start, s, kind: 'telemetry' });
  }
  events.sort((a, b) => a.t - b.t);

  type Scan = { c: VersionState; k: number; g: number; resume: number };
  // Where the silence search of the serving version stopped (see silenceRollback).
  let scan: Scan | null = null;
  const serving = new Map<string, ServingInterval[]>();
  const previous = new Map<string, string | null>();
  /** Versions a deployment record rolled back from: only another record brings them back. */
  const rolledBackByRecord = new Set<string>();
  let cur = null as VersionState | null;
  let since = -Infinity;

  const switchTo = (s: VersionState, t: number, cause: ServingInterval['cause']) => {
    if (cur) {
      const open = serving.get(cur.version)!;
      open[open.length - 1]!.end = t;
    }
    if (!serving.has(s.version)) {
      serving.set(s.version, []);
      previous.set(s.version, cur?.version ?? null);
    }
    serving.get(s.version)!.push({ start: t, end: null, cause });
    cur = s;
    since = t;
    scan = null;
  };

  /**
   * Rule 3: the serving version sends nothing for SILENCE_MS while an older version sends; the
   * older one serves again from the end of those 15 minutes. Returns the first such rollback before
   * `limit` (the next recorded event), or null.
   */
  // Versions by last telemetry, newest first: the search for an older version still sending stops
  // at the first one that went quiet before the silence began.
  const byLastSeen = [...states.values()].filter((x) => x.segments.length).sort((a, b) => b.lastSeen - a.lastSeen);
  /** Index of the first segment ending at or after `t` (segments are sorted and do not overlap). */
  const firstEndingAfter = (segs: ActivitySegment[], t: number): number => {
    let lo = 0;
    let hi = segs.length;
    while (lo < hi) {
      const mid = (lo + hi) >> 1;
      if (segs[mid]!.end >= t) hi = mid;
      else lo = mid + 1;
    }
    return lo;
  };

  /**
   * Rule 3: the serving version sends nothing for SILENCE_MS while an older version sends; the
   * older one serves again from the end of those 15 minutes (or from when it sends, if later).
   * Returns the first such rollback before `limit` (the next recorded event), or null.
   */
  // Where the silence search of the serving version stopped: silences already found without an older
  // version sending need no second look while the same version keeps serving.

  const silenceRollback = (c: VersionState, from: number, limit: number): { t: number; s: VersionState } | null => {
    const segs = c.segments;
    if (!segs.length) return null;
    if (!scan || scan.c !== c) {
      // Silences of `c` from `from` on: each begins at the end of a segment (or at `from` when no segment covers it).
      const k = firstEndingAfter(segs, from);
      scan =
        k < segs.length && segs[k]!.start <= from
          ? { c, k: k + 1, g: segs[k]!.end, resume: segs[k + 1]?.start ?? Infinity }
          : { c, k, g: from, resume: segs[k]?.start ?? Infinity };
    }
    for (;;) {
      const { g, resume, k }: Scan = scan;
      if (g + SILENCE_MS > Math.min(limit, now)) return null;
      let best: { t: number; s: VersionState } | null = null;
      for (const o of byLastSeen) {
        if (o.lastSeen < g) break;
        if (o === c || !newer(c, o) || rolledBackByRecord.has(o.version)) continue;
        const seg = o.segments[firstEndingAfter(o.segments, g)]!;
        const t = Math.max(g + SILENCE_MS, seg.start);
        if (!best || t < best.t || (t === best.t && newer(o, best.s))) best = { t, s: o };
      }
      if (best && best.t < resume) return best.t >= limit || best.t > now ? null : best;
      if (k >= segs.length) return null;
      scan = { c, k: k + 1, g: segs[k]!.end, resume: segs[k + 1]?.start ?? Infinity };
    }
  };

  let i = 0;
  for (;;) {
    const nextT = i < events.length ? events[i]!.t : Infinity;
    if (cur) {
      const rb = silenceRollback(cur, since, nextT);
      if (rb) {
        switchTo(rb.s, rb.t, 'silence');
        continue;
      }
    }
    if (i >= events.length || nextT > now) break;
    const group: Ev[] = [];
    while (i < events.length && events[i]!.t === nextT) group.push(events[i++]!);
    const records = group.filter((e) => e.kind === 'deployment');
    const pick = (evs: Ev[]) => evs.reduce((a, b) => (newer(b.s, a.s) ? b : a));
    if (records.length) {
      // Rule 2: a deployment record makes its version serve (a rollback when it is the older one).
      const w = pick(records);
      if (w.s !== cur) {
        if (cur) rolledBackByRecord.add(cur.version);
        rolledBackByRecord.delete(w.s.version);
        switchTo(w.s, nextT, 'deployment');
      }
      continue;
    }
    // Rule 4: telemetry of a version newer than the serving one makes it serve from its start.
    const c: VersionState | null = cur;
    const eligible = group.filter((e) => e.s !== c && !rolledBackByRecord.has(e.s.version) && (c === null || newer(e.s, c)));
    if (eligible.length) switchTo(pick(eligible).s, nextT, 'telemetry');
  }

  return [...states.values()]
    .filter((s) => Number.isFinite(s.start))
    .map((s) => {
      const first = s.segments[0];
      const fromTelemetry = !!first && (s.records[0] === undefined || first.start < s.records[0]);
      return {
        version: s.version,
        confirmed: s.confirmed,
        started_at: s.start,
        start_approximate: fromTelemetry && !!first.approx,
        first_seen: first ? first.start : null,
        last_seen: s.segments.length ? s.lastSeen : null,
        serving: serving.get(s.version) ?? [],
        previous_version: previous.get(s.version) ?? null,
      };
    });
}
