import { describe, expect, it } from 'vitest';
import { deriveServing, mergeSegments, type ActivitySegment, type DeploymentMark } from '../../../src/domain/releases/serving.js';

const M = 60_000;
const T0 = Date.UTC(2026, 0, 10, 12, 0, 0);
const at = (min: number) => T0 + min * M;
const seg = (from: number, to: number, approx = false): ActivitySegment => ({ start: at(from), end: at(to), approx });
const dep = (version: string, min: number, status = 'ready'): DeploymentMark => ({ version, at: at(min), status });

/** Serving lists in minutes from T0 (null end = still serving), keyed by version. */
function serving(deployments: DeploymentMark[], activity: Record<string, ActivitySegment[]>, nowMin: number) {
  const out = deriveServing({ deployments, activity: new Map(Object.entries(activity)), now: at(nowMin) });
  return Object.fromEntries(
    out.map((v) => [v.version, v.serving.map((i) => [(i.start - T0) / M, i.end === null ? null : (i.end - T0) / M])]),
  );
}

describe('release serving (serving rules 1–4)', () => {
  it('rule 1: one release serves at a time, from its start until the next one starts', () => {
    const s = serving([dep('1.0', 0), dep('1.1', 60), dep('1.2', 120)], {}, 200);
    expect(s).toEqual({ '1.0': [[0, 60]], '1.1': [[60, 120]], '1.2': [[120, null]] });
  });

  it('rule 2: a deployment record of an older version after a newer one is a rollback and adds a serving item', () => {
    const s = serving([dep('1.0', 0), dep('1.1', 60), dep('1.0', 90)], { '1.0': [seg(0, 200)], '1.1': [seg(60, 95)] }, 200);
    expect(s).toEqual({ '1.0': [[0, 60], [90, null]], '1.1': [[60, 90]] });
  });

  it('rule 2: rolling forward again with a record serves the newer version again', () => {
    const s = serving([dep('1.0', 0), dep('1.1', 60), dep('1.0', 90), dep('1.1', 150)], {}, 200);
    expect(s).toEqual({ '1.0': [[0, 60], [90, 150]], '1.1': [[60, 90], [150, null]] });
  });

  it('rule 3: 15 minutes of silence from the serving version while an older one keeps sending is a rollback from the end of those 15 minutes', () => {
    // 2.0 appears at 30 (no record) and goes quiet after 60 while 1.0 keeps sending: 1.0 serves again from 75.
    const s = serving([], { '1.0': [seg(0, 180)], '2.0': [seg(30, 60)] }, 180);
    expect(s).toEqual({ '1.0': [[0, 30], [75, null]], '2.0': [[30, 75]] });
  });

  it('rule 3: silence of 14 minutes is not a rollback, and the rollback is not known before the 15 minutes have passed', () => {
    const gap14 = serving([], { '1.0': [seg(0, 180)], '2.0': [seg(30, 60), seg(74, 180)] }, 180);
    expect(gap14).toEqual({ '1.0': [[0, 30]], '2.0': [[30, null]] });
    const early = serving([], { '1.0': [seg(0, 70)], '2.0': [seg(30, 60)] }, 70);
    expect(early).toEqual({ '1.0': [[0, 30]], '2.0': [[30, null]] });
  });

  it('rule 3: a silent version with no older version sending is not rolled back', () => {
    const s = serving([], { '1.0': [seg(0, 20)], '2.0': [seg(30, 60)] }, 180);
    expect(s).toEqual({ '1.0': [[0, 30]], '2.0': [[30, null]] });
  });

  it('rule 3: the newer version sending again after a silence rollback serves again from its return', () => {
    const s = serving([], { '1.0': [seg(0, 300)], '2.0': [seg(30, 60), seg(120, 300)] }, 300);
    expect(s).toEqual({ '1.0': [[0, 30], [75, 120]], '2.0': [[30, 75], [120, null]] });
  });

  it('rule 4: overlapping versions — the later-started one serves from its start whatever the version text says', () => {
    // "0.9-hotfix" starts after "1.0": it is the newer release although its text sorts lower.
    const s = serving([], { '1.0': [seg(0, 120)], '0.9-hotfix': [seg(40, 120)] }, 120);
    expect(s).toEqual({ '1.0': [[0, 40]], '0.9-hotfix': [[40, null]] });
  });

  it('rule 4: an older version still sending (draining pods) does not take serving back', () => {
    const s = serving([dep('1.0', 0), dep('1.1', 60)], { '1.0': [seg(0, 70), seg(100, 101)], '1.1': [seg(60, 200)] }, 200);
    expect(s).toEqual({ '1.0': [[0, 60]], '1.1': [[60, null]] });
  });

  it('rule 4: at equal start a version with a deployment record wins over one without', () => {
    const s = serving([dep('b', 10)], { a: [seg(10, 100)], b: [seg(10, 100)] }, 100);
    expect(s).toEqual({ a: [], b: [[10, null]] });
  });

  it('rule 4: at equal start without records the version seen last wins', () => {
    const s = serving([], { a: [seg(10, 100)], b: [seg(10, 50)] }, 100);
    expect(s).toEqual({ a: [[10, null]], b: [] });
    const s2 = serving([dep('a', 10), dep('b', 10)], { a: [seg(10, 40)], b: [seg(10, 90)] }, 100);
    expect(s2).toEqual({ a: [], b: [[10, null]] });
  });

  it('records of failed, canceled or skipped deployments start nothing but still confirm the version', () => {
    const out = deriveServing({ deployments: [dep('1.0', 0), dep('1.1', 60, 'failed')], activity: new Map(), now: at(100) });
    expect(out.map((v) => [v.version, v.serving.length])).toEqual([['1.0', 1]]);
    const withTelemetry = deriveServing({ deployments: [dep('1.1', 60, 'failed')], activity: new Map([['1.1', [seg(70, 90)]]]), now: at(100) });
    expect(withTelemetry[0]).toMatchObject({ version: '1.1', confirmed: true, started_at: at(70) });
  });

  it('reports start, first/last seen, the previous version and whether the start is only known to the hour', () => {
    const out = deriveServing({
      deployments: [dep('1.1', 60)],
      activity: new Map([
        ['1.0', [seg(0, 59, true)]],
        ['1.1', [seg(61, 90)]],
      ]),
      now: at(100),
    });
    const v10 = out.find((v) => v.version === '1.0')!;
    const v11 = out.find((v) => v.version === '1.1')!;
    expect(v10).toMatchObject({ confirmed: false, started_at: at(0), start_approximate: true, first_seen: at(0), last_seen: at(59), previous_version: null });
    expect(v11).toMatchObject({ confirmed: true, started_at: at(60), start_approximate: false, first_seen: at(61), last_seen: at(90), previous_version: '1.0' });
  });

  it('merges activity segments closer than 15 minutes and keeps those 15 minutes or more apart', () => {
    expect(mergeSegments([seg(20, 30), seg(0, 10), seg(24, 40)]).map((s) => [(s.start - T0) / M, (s.end - T0) / M])).toEqual([[0, 40]]);
    expect(mergeSegments([seg(0, 10), seg(25, 30)]).length).toBe(2);
  });
});
