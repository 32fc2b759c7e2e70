import type { Db } from './db.js';
import { deploymentWrites } from './deployments-repo.js';
import type { ActivityInput, DeploymentInput } from '../domain/releases/build.js';
import { decodeSketch, mergeInto, newSketch, type Sketch } from '../domain/releases/sketch.js';
import type { Totals } from '../domain/releases/health.js';

const MIN = 60_000;
const HOUR = 3_600_000;

export interface SeriesBucket {
  t: number;
  requests: number;
  errors: number;
  sketch: Sketch;
}

export interface NewIssues {
  count: number;
  items: Array<{ id: string; short_id: string; title: string; first_seen: number }>;
  truncated: boolean;
}

type StreamKey = { service: string; environment: string };
type VersionKey = { service: string; environment: string; version: string };

/**
 * Reads for releases (operations/releases.ts), one interface whatever holds the rollups: deployment
 * records and telemetry activity to derive releases from, the per-minute / per-hour rollups for
 * health windows, and new error groups. SQLite's ({@link sqliteReleasesReader}: migration 014) or,
 * with spans in ClickHouse, ClickHouse's for the telemetry parts (clickhouse/release-store.ts).
 */
export interface ReleasesReader {
  /** Deployment records naming a service and a version (environment '' when none). */
  deployments(projectId: string, stream?: StreamKey): Promise<readonly DeploymentInput[]>;
  /** Activity segments that end at or after `sinceMs`. */
  activity(projectId: string, sinceMs: number, stream?: StreamKey): Promise<ActivityInput[]>;
  /** Services and environments with a release serving at some time up to `toMs` (see the SQLite repository's `streams`). */
  streams(projectId: string, sinceMs: number, toMs: number): Promise<StreamKey[]>;
  /** Every (service, environment, version) named by telemetry or a deployment record. */
  versionKeys(projectId: string): Promise<VersionKey[]>;
  /** Requests, errors and the merged latency sketch of a service and environment over the minute buckets starting in [a, b). */
  totals(projectId: string, service: string, environment: string, a: number, b: number): Promise<Totals>;
  /** Minute rollups of [a, b) summed into buckets of `bucketMs` starting at `a`. */
  series(projectId: string, service: string, environment: string, a: number, b: number, bucketMs: number): Promise<SeriesBucket[]>;
  /** Error groups of the service in the environment first seen in [a, b): the 10 newest, counted to 100. */
  newIssues(projectId: string, service: string, environment: string, a: number, b: number): Promise<NewIssues>;
}

/** The SQLite repository behind the {@link ReleasesReader} interface. */
export function sqliteReleasesReader(repo: ReleasesRepo): ReleasesReader {
  return {
    deployments: async (...a) => repo.deployments(...a),
    activity: async (...a) => repo.activity(...a),
    streams: async (...a) => repo.streams(...a),
    versionKeys: async (...a) => repo.versionKeys(...a),
    totals: async (...a) => repo.totals(...a),
    series: async (...a) => repo.series(...a),
    newIssues: async (...a) => repo.newIssues(...a),
  };
}

/** Bucket starts of [a, b) in whole minutes: the hourly rollup for whole hours inside, the minute rollup for the edges. */
export function totalsRanges(a: number, b: number): Array<{ unit: '1m' | '1h'; from: number; to: number }> {
  const a1 = Math.ceil(a / MIN) * MIN;
  const h1 = Math.ceil(a1 / HOUR) * HOUR;
  const h2 = Math.floor(b / HOUR) * HOUR;
  const out: Array<{ unit: '1m' | '1h'; from: number; to: number }> = h1 < h2
    ? [{ unit: '1m', from: a1, to: h1 }, { unit: '1h', from: h1, to: h2 }, { unit: '1m', from: h2, to: b }]
    : [{ unit: '1m', from: a1, to: b }];
  return out.filter((r) => r.to > r.from);
}

/** Empty series buckets of `bucketMs` from `a` covering [a, b), and the index of the bucket a minute `t` adds to. */
export function seriesBuckets(a: number, b: number, bucketMs: number): { out: SeriesBucket[]; at: (t: number) => SeriesBucket } {
  const n = Math.max(1, Math.ceil((b - a) / bucketMs));
  const out: SeriesBucket[] = Array.from({ length: n }, (_, i) => ({ t: a + i * bucketMs, requests: 0, errors: 0, sketch: newSketch() }));
  return { out, at: (t) => out[Math.min(n - 1, Math.floor((t - a) / bucketMs))]! };
}

/* eslint-disable @typescript-eslint/no-explicit-any */
/**
 * Reads for releases from SQLite: deployment records and telemetry activity to derive releases from, the
 * per-minute / per-hour rollups (migration 014) for health windows, and new error groups.
 */
export function createReleasesRepo(db: Db) {
  const deploymentCols = `id, provider, deployment_id, service, COALESCE(environment, '') AS environment, version, status, url, commit_sha, branch,
    started_at, finished_at, created_at`;
  const s = {
    deployments: db.prepare(`SELECT ${deploymentCols} FROM deployments WHERE project_id = ? AND service IS NOT NULL AND version IS NOT NULL`),
    deploymentsMarker: db.prepare('SELECT COUNT(*) AS n, MAX(updated_at) AS u FROM deployments WHERE project_id = ?'),
    activity: db.prepare(`SELECT service_name, environment, version, start_ms, end_ms, approx FROM release_activity WHERE project_id = ? AND end_ms >= ?`),
    streamActivity: db.prepare(
      `SELECT service_name, environment, version, start_ms, end_ms, approx FROM release_activity
       WHERE project_id = ? AND service_name = ? AND environment = ? AND end_ms >= ?`,
    ),
    activityKeys: db.prepare('SELECT DISTINCT service_name, environment, version FROM release_activity WHERE project_id = ?'),
    deploymentKeys: db.prepare(
      `SELECT DISTINCT service, COALESCE(environment, '') AS environment, version FROM deployments WHERE project_id = ? AND service IS NOT NULL AND version IS NOT NULL`,
    ),
    rows1m: db.prepare('SELECT t, requests, errors, sketch FROM release_rollup_1m WHERE project_id = ? AND service_name = ? AND environment = ? AND t >= ? AND t < ?'),
    rows1h: db.prepare('SELECT t, requests, errors, sketch FROM release_rollup_1h WHERE project_id = ? AND service_name = ? AND environment = ? AND t >= ? AND t < ?'),
    deploymentStreams: db.prepare(`SELECT DISTINCT service, COALESCE(environment, '') AS environment FROM deployments
      WHERE project_id = ? AND service IS NOT NULL AND version IS NOT NULL AND status NOT IN ('failed', 'canceled', 'skipped') AND COALESCE(started_at, created_at) <= ?`),
    activityStreams: db.prepare('SELECT service_name, environment FROM release_activity WHERE project_id = ? AND end_ms >= ? AND start_ms <= ? GROUP BY 1, 2'),
    newIssues: db.prepare(`SELECT id, short_id, title, first_seen FROM error_groups
      WHERE project_id = ? AND service_name = ? AND environment = ? AND first_seen >= ? AND first_seen < ? AND merged_into IS NULL AND service_name != ''
      ORDER BY first_seen DESC, id LIMIT 101`),
  };

  const toDeployment = (r: any): DeploymentInput => ({ ...r, id: String(r.id) });
  const toActivity = (r: any): ActivityInput => ({
    service_name: r.service_name,
    environment: r.environment,
    version: r.version,
    start: r.start_ms,
    end: r.end_ms,
    approx: !!r.approx,
  });

  /**
   * Every release read derives from all of a project's deployment records: keep them per project
   * and read them again only when they changed (this process counts its writes; another process's
   * new or updated record moves the count or the latest updated_at): ~1 ms against ~25 ms and the
   * garbage of re-reading thousands of rows.
   * The records are shared between reads: callers never mutate them.
   */
  const deploymentCache = new Map<number, { marker: string; rows: readonly DeploymentInput[] }>();
  function projectDeployments(pid: number): readonly DeploymentInput[] {
    const m = s.deploymentsMarker.get(pid) as { n: number; u: number | null };
    // Writes through this process (even in the same millisecond), and writes by another process.
    const marker = `${deploymentWrites(db)}:${m.n}:${m.u}`;
    const hit = deploymentCache.get(pid);
    if (hit && hit.marker === marker) return hit.rows;
    const rows = Object.freeze(s.deployments.all(pid).map(toDeployment));
    if (deploymentCache.size > 1000) deploymentCache.clear();
    deploymentCache.set(pid, { marker, rows });
    return rows;
  }

  /** Adds rollup rows of [a, b) (bucket starts) into `into`. */
  function addRows(stmt: typeof s.rows1m, pid: number, service: string, environment: string, a: number, b: number, into: Totals): void {
    if (b <= a) return;
    for (const r of stmt.all(pid, service, environment, a, b) as any[]) {
      into.requests += r.requests;
      into.errors += r.errors;
      if (r.requests) mergeInto(into.sketch, decodeSketch(r.sketch));
    }
  }

  return {
    /** Deployment records naming a service and a version (environment '' when none). */
    deployments(projectId: string, stream?: { service: string; environment: string }): readonly DeploymentInput[] {
      const all = projectDeployments(Number(projectId));
      return stream ? all.filter((d) => d.service === stream.service && d.environment === stream.environment) : all;
    },
    /** Activity segments that end at or after `sinceMs`. */
    activity(projectId: string, sinceMs: number, stream?: { service: string; environment: string }): ActivityInput[] {
      const rows = stream
        ? s.streamActivity.all(Number(projectId), stream.service, stream.environment, sinceMs)
        : s.activity.all(Number(projectId), sinceMs);
      return rows.map(toActivity);
    },
    /**
     * Services and environments with a release serving at some time up to `toMs`: once a stream has
     * a first release, one serves until the next starts (serving rule 1), so these are the streams
     * with a deployment record (that serves) or telemetry (ending at or after `sinceMs`) before `toMs`.
     */
    streams(projectId: string, sinceMs: number, toMs: number): Array<{ service: string; environment: string }> {
      const out = new Map<string, { service: string; environment: string }>();
      for (const r of s.deploymentStreams.all(Number(projectId), toMs) as any[]) out.set(`${r.service}\u0000${r.environment}`, { service: r.service, environment: r.environment });
      for (const r of s.activityStreams.all(Number(projectId), sinceMs, toMs) as any[]) out.set(`${r.service_name}\u0000${r.environment}`, { service: r.service_name, environment: r.environment });
      return [...out.values()];
    },
    /** Services and environments with a deployment record that serves, started by `toMs` (the part of `streams` not from telemetry). */
    deploymentStreams(projectId: string, toMs: number): Array<{ service: string; environment: string }> {
      return (s.deploymentStreams.all(Number(projectId), toMs) as any[]).map((r) => ({ service: r.service, environment: r.environment }));
    },
    /** Every (service, environment, version) a deployment record names (the part of `versionKeys` not from telemetry). */
    deploymentKeys(projectId: string): Array<{ service: string; environment: string; version: string }> {
      return (s.deploymentKeys.all(Number(projectId)) as any[]).map((r) => ({ service: r.service, environment: r.environment, version: r.version }));
    },
    /** Every (service, environment, version) named by telemetry or a deployment record. */
    versionKeys(projectId: string): Array<{ service: string; environment: string; version: string }> {
      const out = new Map<string, { service: string; environment: string; version: string }>();
      for (const r of s.activityKeys.all(Number(projectId)) as any[]) out.set(`${r.service_name}\u0000${r.environment}\u0000${r.version}`, { service: r.service_name, environment: r.environment, version: r.version });
      for (const r of s.deploymentKeys.all(Number(projectId)) as any[]) out.set(`${r.service}\u0000${r.environment}\u0000${r.version}`, { service: r.service, environment: r.environment, version: r.version });
      return [...out.values()];
    },
    /**
     * Requests, errors and the merged latency sketch of a service and environment (every version,
     * health rule 6) over the minute buckets starting in [a, b): whole hours from the hourly rollup,
     * the edges from the minute rollup.
     */
    totals(projectId: string, service: string, environment: string, a: number, b: number): Totals {
      const pid = Number(projectId);
      const out: Totals = { requests: 0, errors: 0, sketch: newSketch() };
      for (const r of totalsRanges(a, b)) addRows(r.unit === '1h' ? s.rows1h : s.rows1m, pid, service, environment, r.from, r.to, out);
      return out;
    },
    /** Minute rollups of [a, b) summed into buckets of `bucketMs` starting at `a`. */
    series(projectId: string, service: string, environment: string, a: number, b: number, bucketMs: number): SeriesBucket[] {
      const { out, at } = seriesBuckets(a, b, bucketMs);
      const a1 = Math.ceil(a / MIN) * MIN;
      for (const r of s.rows1m.all(Number(projectId), service, environment, a1, b) as any[]) {
        const p = at(r.t);
        p.requests += r.requests;
        p.errors += r.errors;
        if (r.requests) mergeInto(p.sketch, decodeSketch(r.sketch));
      }
      return out;
    },
    /** Error groups of the service in the environment first seen in [a, b): the 10 newest, counted to 100. */
    newIssues(projectId: string, service: string, environment: string, a: number, b: number): NewIssues {
      const rows = s.newIssues.all(Number(projectId), service, environment, a, b) as any[];
      return {
        count: Math.min(rows.length, 100),
        items: rows.slice(0, 10).map((r) => ({ id: r.id, short_id: r.short_id, title: r.title, first_seen: r.first_seen })),
        truncated: rows.length > 100,
      };
    },
  };
}

export type ReleasesRepo = ReturnType<typeof createReleasesRepo>;
