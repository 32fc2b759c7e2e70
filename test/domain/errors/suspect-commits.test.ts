import { describe, expect, it } from 'vitest';
import { rankSuspectCommits, type DeploymentCandidate } from '../../../src/domain/errors/suspect-commits.js';

const FIRST = Date.parse('2026-07-15T10:00:00.000Z');
const M = 60_000;
const H = 60 * M;

let n = 0;
const dep = (over: Partial<DeploymentCandidate>): DeploymentCandidate => ({
  id: `id${++n}`,
  provider: 'github',
  deployment_id: `d${n}`,
  version: null,
  service: 'checkout',
  environment: 'production',
  status: 'ready',
  commit_sha: null,
  branch: 'main',
  at: FIRST - H,
  ...over,
});

describe('rankSuspectCommits', () => {
  it('ranks the latest deployment before the first event first, with the lead time in the reason', () => {
    const r = rankSuspectCommits(
      [
        dep({ commit_sha: 'B'.repeat(40), at: FIRST - 30 * H }),
        dep({ commit_sha: 'a'.repeat(40), at: FIRST - 12 * M }),
        dep({ commit_sha: 'c'.repeat(40), at: FIRST - 9 * 24 * H }),
      ],
      FIRST,
    );
    expect(r.map((c) => [c.sha[0], c.rank, c.score])).toEqual([
      ['a', 1, 1],
      ['b', 2, 0.25], // within a week: 0.5 / 2
      ['c', 3, 0.083],
    ]);
    expect(r[0]!.reason).toBe('latest deployment before the first event: deployed 12 min before the first event');
    expect(r[1]!.reason).toBe('deployed 30 h before the first event; 1 newer deployment shipped since');
    expect(r[2]!.reason).toBe('deployed 9 days before the first event; 2 newer deployments shipped since');
  });

  it('leaves out deployments after the event, without a commit, or that did not ship, and lists a commit once', () => {
    const r = rankSuspectCommits(
      [
        dep({ commit_sha: 'a'.repeat(40), at: FIRST + M }),
        dep({ commit_sha: null, at: FIRST - M }),
        dep({ commit_sha: 'f'.repeat(40), status: 'failed', at: FIRST - 2 * M }),
        dep({ commit_sha: 'e'.repeat(40), status: 'canceled', at: FIRST - 2 * M }),
        dep({ commit_sha: 'd'.repeat(40), at: FIRST - 3 * M }),
        dep({ commit_sha: 'd'.repeat(40), at: FIRST - 5 * H }),
        dep({ commit_sha: '1'.repeat(40), at: FIRST - 30 * 1000 }),
      ],
      FIRST,
    );
    expect(r.map((c) => c.sha[0])).toEqual(['1', 'd']);
    expect(r[0]!.reason).toContain('less than a minute');
    expect(r[1]!.deployed_at).toBe(FIRST - 3 * M);
  });

  it('returns at most `max` and nothing for no candidates', () => {
    const many = Array.from({ length: 15 }, (_, i) => dep({ commit_sha: i.toString(16).padStart(40, '0'), at: FIRST - (i + 1) * M }));
    expect(rankSuspectCommits(many, FIRST)).toHaveLength(10);
    expect(rankSuspectCommits(many, FIRST, 3)).toHaveLength(3);
    expect(rankSuspectCommits([], FIRST)).toEqual([]);
  });
});
