import type { ReleaseBatch, ReleaseCell } from '../release-rollups.js';
import { seriesBuckets, totalsRanges, type ReleasesReader, type ReleasesRepo } from '../releases-repo.js';
import type { ActivityInput } from '../../domain/releases/build.js';
import type { Totals } from '../../domain/releases/health.js';
import { SILENCE_MS } from '../../domain/releases/serving.js';
import { newSketch, type Sketch } from '../../domain/releases/sketch.js';
import { lit, type ChEngine } from './client.js';
import { createBatchBuffer, NO_PACING, type BufferPacing } from './batch-buffer.js';
import { insertByPartition } from './monitor-results.js';

/**
 * Release health in ClickHouse (issue 20; schema.ts migration 10): with spans there, every span
 * batch's rollup cells and activity clusters (release-rollups.ts, releaseBatch) become rows here,
 * held with the batch's spans and inserted before its acknowledgement (batch-buffer.ts), so every
 * process reads the release health of every process's spans. Nothing is updated in place: reads sum
 * the cells of a window and merge the activity rows into the segments SQLite keeps (migration 014).
 */

/** The sketch's zero bucket (−Infinity in memory) as stored in `sketchMap.k`. */
const ZERO_KEY = -2147483648;
const DAY_MS = 86_400_000;

export interface ChRollupRow {
  project_id: number;
  service_name: string;
  environment: string;
  t: number;
  version: string;
  spans: number;
  requests: number;
  errors: number;
  'sketchMap.k': number[];
  'sketchMap.n': number[];
}

export interface ChActivityRow {
  project_id: number;
  service_name: string;
  environment: string;
  version: string;
  start_ms: number;
  end_ms: number;
  approx: number;
}

/** A sketch as the map columns' arrays. */
export function sketchColumns(s: Sketch): { 'sketchMap.k': number[]; 'sketchMap.n': number[] } {
  const k: number[] = [];
  const n: number[] = [];
  for (const [key, count] of s) {
    k.push(key === -Infinity ? ZERO_KEY : key);
    n.push(count);
  }
  return { 'sketchMap.k': k, 'sketchMap.n': n };
}

/** The arrays of a summed map as a sketch. */
function sketchOf(ks: readonly (number | string)[], ns: readonly (number | string)[], into: Sketch = newSketch()): Sketch {
  for (let i = 0; i < ks.length; i++) {
    const k = Number(ks[i]);
    const key = k === ZERO_KEY ? -Infinity : k;
    into.set(key, (into.get(key) ?? 0) + Number(ns[i]));
  }
  return into;
}

export const rollupRow = (pid: number, c: ReleaseCell): ChRollupRow => ({
  project_id: pid,
  service_name: c.service,
  environment: c.environment,
  t: c.t,
  version: c.version,
  spans: c.spans,
  requests: c.requests,
  errors: c.errors,
  ...sketchColumns(c.sketch),
});

interface Rows {
  m: ChRollupRow[];
  h: ChRollupRow[];
  a: ChActivityRow[];
}
const empty = (): Rows => ({ m: [], h: [], a: [] });

const dayOf = (ms: number) => Math.floor(Math.max(ms, 0) / DAY_MS);

/** Inserts rollup and activity rows (by day partitions): the cells first, so activity never names a release whose health is not stored. */
export async function insertReleaseRows(engine: ChEngine, rows: Partial<Rows>): Promise<void> {
  if (rows.m?.length) await insertByPartition(engine, 'release_rollup_1m', rows.m, (r) => dayOf(r.t));
  if (rows.h?.length) await insertByPartition(engine, 'release_rollup_1h', rows.h, (r) => dayOf(r.t));
  if (rows.a?.length) await insertByPartition(engine, 'release_activity', rows.a, (r) => dayOf(r.start_ms));
}

/** The rows bound for ClickHouse: a span batch's release rollups, acknowledged with its spans. */
export function createChReleaseStore(engine: ChEngine, pacing: BufferPacing = NO_PACING) {
  const buffer = createBatchBuffer<Rows>({
    empty,
    append(into, from) {
      for (const r of from.m) into.m.push(r);
      for (const r of from.h) into.h.push(r);
      for (const r of from.a) into.a.push(r);
    },
    isEmpty: (r) => !r.m.length && !r.h.length && !r.a.length,
    size: (r) => r.m.length + r.h.length + r.a.length,
    insert: (rows) => insertReleaseRows(engine, rows),
  }, pacing);
  return {
    /** A span batch's cells and clusters (release-rollups.ts, the writer's sink). */
    add(projectId: string, b: ReleaseBatch): void {
      const pid = Number(projectId);
      buffer.add({
        m: b.minutes.map((c) => rollupRow(pid, c)),
        h: b.hours.map((c) => rollupRow(pid, c)),
        a: b.clusters.map((c) => ({ project_id: pid, service_name: c.service, environment: c.environment, version: c.version, start_ms: c.start, end_ms: c.end, approx: 0 })),
      });
    },
    participant: buffer.participant,
    flush: buffer.flush,
  };
}

export type ChReleaseStore = ReturnType<typeof createChReleaseStore>;

/**
 * Activity rows merged into segments as SQLite keeps them: span times of a version with no gap of
 * SILENCE_MS or more inside are one segment; its start is its earliest row's, `approx` that row's
 * (an approximate start wins a tie, as in release-rollups.ts).
 */
export function mergeActivity(rows: readonly ActivityInput[]): ActivityInput[] {
  const byVersion = new Map<string, ActivityInput[]>();
  for (const r of rows) {
    const k = `${r.service_name}\u0000${r.environment}\u0000${r.version}`;
    const list = byVersion.get(k);
    if (list) list.push(r);
    else byVersion.set(k, [r]);
  }
  const out: ActivityInput[] = [];
  for (const list of byVersion.values()) {
    list.sort((x, y) => x.start - y.start || Number(!!y.approx) - Number(!!x.approx));
    let last: ActivityInput | null = null;
    for (const r of list) {
      if (last && r.start - last.end < SILENCE_MS) last.end = Math.max(last.end, r.end);
      else out.push((last = { ...r, approx: !!r.approx }));
    }
  }
  return out;
}

/* eslint-disable @typescript-eslint/no-explicit-any */
/**
 * The release reads with the rollups and activity in ClickHouse; deployment records and new issues
 * (beside the groups) from `repo`. Answers as SQLite's repository does.
 */
export function createChReleasesReader(engine: ChEngine, repo: ReleasesRepo): ReleasesReader {
  const streamCond = (stream?: { service: string; environment: string }) =>
    stream ? ` AND service_name = ${lit(stream.service)} AND environment = ${lit(stream.environment)}` : '';

  /**
   * Merged segments of every version with a row ending at or after `sinceMs` (a segment that does
   * may begin with rows ending long before): its rows grouped by SILENCE_MS of start in SQL first —
   * rows starting within SILENCE_MS of each other are in one segment anyway.
   */
  async function segments(projectId: string, sinceMs: number, stream?: { service: string; environment: string }): Promise<ActivityInput[]> {
    const pid = lit(Number(projectId));
    const where = `project_id = ${pid}${streamCond(stream)}`;
    const recent = Number.isFinite(sinceMs)
      ? ` AND (service_name, environment, version) IN (SELECT service_name, environment, version FROM release_activity WHERE ${where} AND end_ms >= ${lit(sinceMs)})`
      : '';
    const rows = await engine.query<any>(
      `SELECT service_name, environment, version, approx, min(start_ms) AS s, max(end_ms) AS e FROM release_activity WHERE ${where}${recent}
       GROUP BY service_name, environment, version, approx, floor(start_ms / ${SILENCE_MS})`,
    );
    const merged = mergeActivity(
      rows.map((r) => ({ service_name: r.service_name, environment: r.environment, version: r.version, start: Number(r.s), end: Number(r.e), approx: Number(r.approx) === 1 })),
    );
    return merged.filter((s) => s.end >= sinceMs);
  }

  const cellWhere = (projectId: string, service: string, environment: string, a: number, b: number) =>
    `project_id = ${lit(Number(projectId))} AND service_name = ${lit(service)} AND environment = ${lit(environment)} AND t >= ${lit(a)} AND t < ${lit(b)}`;

  return {
    deployments: async (projectId, stream) => repo.deployments(projectId, stream),
    newIssues: async (...a) => repo.newIssues(...a),
    activity: (projectId, sinceMs, stream) => segments(projectId, sinceMs, stream),

    async streams(projectId, sinceMs, toMs) {
      const out = new Map<string, { service: string; environment: string }>();
      for (const r of repo.deploymentStreams(projectId, toMs)) out.set(`${r.service}\u0000${r.environment}`, r);
      for (const s of await segments(projectId, sinceMs)) {
        if (s.start <= toMs) out.set(`${s.service_name}\u0000${s.environment}`, { service: s.service_name, environment: s.environment });
      }
      return [...out.values()];
    },

    async versionKeys(projectId) {
      const out = new Map<string, { service: string; environment: string; version: string }>();
      const rows = await engine.query<any>(`SELECT DISTINCT service_name, environment, version FROM release_activity WHERE project_id = ${lit(Number(projectId))}`);
      for (const r of rows) out.set(`${r.service_name}\u0000${r.environment}\u0000${r.version}`, { service: r.service_name, environment: r.environment, version: r.version });
      for (const k of repo.deploymentKeys(projectId)) out.set(`${k.service}\u0000${k.environment}\u0000${k.version}`, k);
      return [...out.values()];
    },

    async totals(projectId, service, environment, a, b) {
      const out: Totals = { requests: 0, errors: 0, sketch: newSketch() };
      const ranges = totalsRanges(a, b);
      if (!ranges.length) return out;
      const parts = ranges.map(
        (r) => `SELECT requests, errors, sketchMap.k AS k, sketchMap.n AS n FROM release_rollup_${r.unit} WHERE ${cellWhere(projectId, service, environment, r.from, r.to)}`,
      );
      const [row] = await engine.query<any>(
        `SELECT requests, errors, m.1 AS ks, m.2 AS ns FROM (SELECT sum(requests) AS requests, sum(errors) AS errors, sumMap(k, n) AS m FROM (${parts.join(' UNION ALL ')}))`,
      );
      if (!row) return out;
      out.requests = Number(row.requests);
      out.errors = Number(row.errors);
      sketchOf(row.ks, row.ns, out.sketch);
      return out;
    },

    async series(projectId, service, environment, a, b, bucketMs) {
      const { out, at } = seriesBuckets(a, b, bucketMs);
      const a1 = Math.ceil(a / 60_000) * 60_000;
      if (b <= a1) return out;
      const rows = await engine.query<any>(
        `SELECT t, requests, errors, m.1 AS ks, m.2 AS ns FROM (SELECT t, sum(requests) AS requests, sum(errors) AS errors, sumMap(sketchMap.k, sketchMap.n) AS m
         FROM release_rollup_1m WHERE ${cellWhere(projectId, service, environment, a1, b)} GROUP BY t)`,
      );
      for (const r of rows) {
        const p = at(Number(r.t));
        p.requests += Number(r.requests);
        p.errors += Number(r.errors);
        sketchOf(r.ks, r.ns, p.sketch);
      }
      return out;
    },
  };
}
