/**
 * Suspect commits of an error group: the commits of deployments of the group's service and
 * environment that shipped before its first event. Pure.
 *
 * Ranking: the latest deployment before the first event ranks first, each older one after it.
 * score = 1 / rank × closeness, where closeness is 1 when the deployment shipped within an hour of the
 * first event, 0.8 within a day, 0.5 within a week, else 0.25. Deployments are walked newest first, so
 * scores fall monotonically. Deployments without a commit, or that did not ship (failed, canceled,
 * skipped), are left out; a commit deployed several times is listed once, at its newest deployment.
 */
import { formatDuration } from './format.js';

export interface DeploymentCandidate {
  id: string;
  provider: string;
  deployment_id: string;
  version: string | null;
  service: string | null;
  environment: string | null;
  status: string;
  commit_sha: string | null;
  branch: string | null;
  /** started_at, else created_at (ms) */
  at: number;
}

export interface SuspectCommit {
  sha: string;
  branch: string | null;
  deployment: {
    id: string;
    provider: string;
    deployment_id: string;
    version: string | null;
    service: string | null;
    environment: string | null;
    status: string;
  };
  deployed_at: number;
  /** ms between the deployment and the first event */
  lead_ms: number;
  rank: number;
  score: number;
  reason: string;
}

const NOT_SHIPPED = new Set(['failed', 'canceled', 'skipped']);
const HOUR = 3_600_000;

function closeness(gap: number): number {
  if (gap <= HOUR) return 1;
  if (gap <= 24 * HOUR) return 0.8;
  if (gap <= 7 * 24 * HOUR) return 0.5;
  return 0.25;
}

export function rankSuspectCommits(deployments: readonly DeploymentCandidate[], firstEventMs: number, max = 10): SuspectCommit[] {
  const eligible = deployments
    .filter((d) => d.commit_sha && !NOT_SHIPPED.has(d.status) && d.at <= firstEventMs)
    .sort((a, b) => b.at - a.at || a.id.localeCompare(b.id));
  const seen = new Set<string>();
  const out: SuspectCommit[] = [];
  for (const d of eligible) {
    const sha = d.commit_sha!.toLowerCase();
    if (seen.has(sha)) continue;
    seen.add(sha);
    const rank = out.length + 1;
    const gap = firstEventMs - d.at;
    const when = gap < 60_000 ? 'less than a minute' : formatDuration(gap);
    const reason =
      rank === 1
        ? `latest deployment before the first event: deployed ${when} before the first event`
        : `deployed ${when} before the first event; ${rank - 1} newer ${rank - 1 === 1 ? 'deployment' : 'deployments'} shipped since`;
    out.push({
      sha,
      branch: d.branch,
      deployment: {
        id: d.id,
        provider: d.provider,
        deployment_id: d.deployment_id,
        version: d.version,
        service: d.service,
        environment: d.environment,
        status: d.status,
      },
      deployed_at: d.at,
      lead_ms: gap,
      rank,
      score: Math.round((closeness(gap) / rank) * 1000) / 1000,
      reason,
    });
    if (out.length >= max) break;
  }
  return out;
}
