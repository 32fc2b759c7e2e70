/**
 * From deployment records and activity segments of a project to release records per service and
 * environment (spec "Release"): ids, confidence, start, serving history, commits, previous release.
 */
import { releaseId } from './ids.js';
import { deriveServing, type ActivitySegment, type ServingInterval } from './serving.js';

export interface DeploymentInput {
  id: string;
  provider: string;
  deployment_id: string;
  service: string;
  /** '' when the record names no environment. */
  environment: string;
  version: string;
  status: string;
  url: string | null;
  commit_sha: string | null;
  branch: string | null;
  started_at: number | null;
  finished_at: number | null;
  created_at: number;
}

export interface ActivityInput extends ActivitySegment {
  service_name: string;
  environment: string;
  version: string;
}

export interface ReleaseRecord {
  id: string;
  service_name: string;
  environment: string;
  version: string;
  confidence: 'confirmed' | 'inferred';
  started_at: number;
  start_approximate: boolean;
  ended_at: number | null;
  is_current: boolean;
  first_seen: number | null;
  last_seen: number | null;
  commit_sha: string | null;
  deployment_count: number;
  previous_release_id: string | null;
  serving: ServingInterval[];
  /** Matching deployment records, newest first. */
  deployments: DeploymentInput[];
  commits: Array<{ sha: string; branch: string | null }>;
}

/** Where a deployment record is placed in time: when it started, else when it was recorded. */
export const deploymentAt = (d: Pick<DeploymentInput, 'started_at' | 'created_at'>): number => d.started_at ?? d.created_at;

const streamKey = (service: string, environment: string) => `${service}\u0000${environment}`;

/** Every release of the project that served at some time, grouped by service and environment. */
export function buildReleases(projectId: string, deployments: readonly DeploymentInput[], activity: readonly ActivityInput[], now: number): ReleaseRecord[] {
  const streams = new Map<string, { service: string; environment: string; deps: DeploymentInput[]; act: Map<string, ActivitySegment[]> }>();
  const stream = (service: string, environment: string) => {
    const k = streamKey(service, environment);
    let s = streams.get(k);
    if (!s) streams.set(k, (s = { service, environment, deps: [], act: new Map() }));
    return s;
  };
  for (const d of deployments) stream(d.service, d.environment).deps.push(d);
  for (const a of activity) {
    const m = stream(a.service_name, a.environment).act;
    let l = m.get(a.version);
    if (!l) m.set(a.version, (l = []));
    l.push(a);
  }

  const out: ReleaseRecord[] = [];
  for (const s of streams.values()) {
    const derived = deriveServing({
      deployments: s.deps.map((d) => ({ version: d.version, at: deploymentAt(d), status: d.status })),
      activity: s.act,
      now,
    });
    const id = (v: string) => releaseId(projectId, s.service, s.environment, v);
    const depsOf = new Map<string, DeploymentInput[]>();
    for (const d of s.deps) {
      const l = depsOf.get(d.version);
      if (l) l.push(d);
      else depsOf.set(d.version, [d]);
    }
    for (const v of derived) {
      if (!v.serving.length) continue;
      const deps = (depsOf.get(v.version) ?? []).sort((a, b) => deploymentAt(b) - deploymentAt(a) || b.created_at - a.created_at);
      const commits: ReleaseRecord['commits'] = [];
      for (const d of deps) if (d.commit_sha && !commits.some((c) => c.sha === d.commit_sha)) commits.push({ sha: d.commit_sha, branch: d.branch });
      const last = v.serving[v.serving.length - 1]!;
      out.push({
        id: id(v.version),
        service_name: s.service,
        environment: s.environment,
        version: v.version,
        confidence: v.confirmed ? 'confirmed' : 'inferred',
        started_at: v.started_at,
        start_approximate: v.start_approximate,
        ended_at: last.end,
        is_current: last.end === null,
        first_seen: v.first_seen,
        last_seen: v.last_seen,
        commit_sha: deps.find((d) => d.commit_sha)?.commit_sha ?? null,
        deployment_count: deps.length,
        previous_release_id: v.previous_version === null ? null : id(v.previous_version),
        serving: v.serving,
        deployments: deps,
        commits,
      });
    }
  }
  return out;
}

/** Whether a release served at any time in [from, to]. */
export const servedIn = (r: Pick<ReleaseRecord, 'serving'>, from: number, to: number, now: number): boolean =>
  r.serving.some((i) => i.start <= to && (i.end ?? now) >= from);
