/**
 * Expiry pacing: batches are sized by the time they take and expiry backs off while the server is
 * busy, yet every expired row still goes within the pass. Time is simulated (injected clock, busy
 * signal and pause), so nothing here depends on the machine's speed.
 */
import { describe, expect, it } from 'vitest';
import { createRetentionRunner, paced, type Pacing } from '../../src/core/retention.js';
import type { ExpiryTarget, RetentionRepo } from '../../src/storage/retention-repo.js';

/** A clock that a step advances by `msPerUnit` per unit done (plus `fixedMs`), a fixed busy level, and recorded pauses. */
function simulated(opts: { msPerUnit: number; fixedMs?: number; busy: number }) {
  let t = 0;
  const pauses: number[] = [];
  const pacing: Pacing = { clock: () => t, busy: () => opts.busy, pause: async (ms) => void pauses.push(ms) };
  const work = (units: number) => (t += (opts.fixedMs ?? 0) + units * opts.msPerUnit);
  return { pacing, pauses, work };
}

/** A table of `total` rows deleted by `step`: records each limit asked for and charges the simulated clock. */
function rows(sim: ReturnType<typeof simulated>, total: number) {
  const t = {
    left: total,
    limits: [] as number[],
    step(limit: number): number {
      t.limits.push(limit);
      const n = Math.min(limit, t.left);
      t.left -= n;
      sim.work(n);
      return n;
    },
  };
  return t;
}

describe('paced', () => {
  it('shrinks batches that take too long, never below the minimum, and still does everything', async () => {
    const sim = simulated({ msPerUnit: 2, busy: 0 });
    const t = rows(sim, 5000);
    const done = await paced(
      (limit) => t.step(limit),
      { maxUnits: 1000, minUnits: 16, targetMs: 8, share: 0.15, stopped: () => false },
      sim.pacing,
    );
    expect(done).toBe(5000);
    expect(t.left).toBe(0);
    expect(Math.min(...t.limits)).toBeGreaterThanOrEqual(16);
    // 2 ms a unit against an 8 ms target: after the first batches it asks for a handful of units at a time.
    expect(t.limits.at(-1)).toBeLessThanOrEqual(16);
  });

  it('grows fast batches up to the maximum rows per transaction', async () => {
    const sim = simulated({ msPerUnit: 0.001, busy: 0 });
    const t = rows(sim, 20_000);
    await paced(
      (limit) => t.step(limit),
      { maxUnits: 1000, minUnits: 16, targetMs: 8, share: 0.15, stopped: () => false },
      sim.pacing,
    );
    expect(t.left).toBe(0);
    expect(Math.max(...t.limits)).toBe(1000);
  });

  it('pauses in proportion to the batch while the event loop is busy, and only yields while it is idle', async () => {
    for (const busy of [0, 1]) {
      const sim = simulated({ msPerUnit: 0, fixedMs: 10, busy });
      const t = rows(sim, 100);
      await paced(
        (limit) => t.step(limit),
        { maxUnits: 10, minUnits: 10, targetMs: 10, share: 0.2, stopped: () => false },
        sim.pacing,
      );
      // 10 batches of 10; a pause after each full one (the last, short one ends the loop).
      expect(sim.pauses).toHaveLength(10);
      for (const p of sim.pauses) expect(p).toBeCloseTo(busy ? 40 : 0); // 10 ms × (1 / 0.2 − 1)
    }
  });

  it('runs quick batches back to back within one slice before giving the event loop its turn', async () => {
    const sim = simulated({ msPerUnit: 0.01, busy: 1 }); // 10 units = 0.1 ms
    const t = rows(sim, 1000);
    await paced(
      (limit) => t.step(limit),
      { maxUnits: 10, minUnits: 10, targetMs: 1, share: 0.5, stopped: () => false },
      sim.pacing,
    );
    expect(t.left).toBe(0);
    expect(t.limits.length).toBe(101); // 100 full batches, then the empty one that ends it
    // About 10 batches (1 ms) a slice: far fewer pauses than batches, each as long as its slice (share 0.5).
    expect(sim.pauses.length).toBeLessThanOrEqual(11);
    for (const p of sim.pauses) expect(p).toBeGreaterThanOrEqual(0.99);
  });

  it('stops early when asked', async () => {
    const sim = simulated({ msPerUnit: 0, busy: 0 });
    let calls = 0;
    const done = await paced(() => (++calls, 10), { maxUnits: 10, minUnits: 10, targetMs: 8, share: 0.2, stopped: () => calls >= 3 }, sim.pacing);
    expect(calls).toBe(3);
    expect(done).toBe(30);
  });
});

describe('retention runner with time-bounded batches', () => {
  it('expires every expired row of every target even when each row takes longer than the batch budget', async () => {
    const targets: ExpiryTarget[] = [
      { kind: 'logs', table: 'logs', time: 'time_ms', unitMs: 1, key: ['id'] },
      { kind: 'spans', table: 'spans', time: 'start_ms', unitMs: 1, key: ['rowid'] },
    ];
    const left = new Map<ExpiryTarget, number>([[targets[0]!, 3000], [targets[1]!, 1234]]);
    const sim = simulated({ msPerUnit: 1, busy: 1 }); // 1 ms a row, against the default 8 ms target; the loop always busy
    const limits: number[] = [];
    const repo: RetentionRepo = {
      projects: () => ['1'],
      settings: () => ({}),
      setSettings: () => {},
      expireBatch(target, _p, _cutoff, limit) {
        limits.push(limit);
        const n = Math.min(limit, left.get(target)!);
        left.set(target, left.get(target)! - n);
        sim.work(n);
        return n;
      },
      oldest: () => null,
      usedBytes: () => 0,
      reclaim: () => 0,
      freePages: () => 0,
    };
    const runner = createRetentionRunner({ repo, targets, config: { maxDays: 400, intervalMs: 0, batchRows: 1000, maxDbBytes: 0 }, now: () => Date.parse('2026-06-01T00:00:00Z'), pacing: sim.pacing });
    const report = await runner.runOnce();
    expect(report.expired).toEqual({ logs: 3000, spans: 1234 });
    expect([...left.values()]).toEqual([0, 0]);
    expect(Math.max(...limits)).toBeLessThanOrEqual(1000);
    expect(sim.pauses.every((p) => p > 0)).toBe(true); // busy: it backed off after every full batch
  });

  it('finishes its reclaim step while ingest keeps freeing pages (it gives back at most what was free when the step began)', async () => {
    const sim = simulated({ msPerUnit: 0.01, busy: 1 });
    let reclaimed = 0;
    const repo: RetentionRepo = {
      projects: () => ['1'],
      settings: () => ({}),
      setSettings: () => {},
      expireBatch: () => 0,
      oldest: () => null,
      usedBytes: () => 0,
      // Full-text merges under ingest refill the free list as fast as it is emptied.
      freePages: () => 5000,
      reclaim(pages) {
        reclaimed += pages;
        sim.work(pages);
        if (reclaimed > 1_000_000) throw new Error('the reclaim step never ends');
        return pages;
      },
    };
    const runner = createRetentionRunner({ repo, targets: [], config: { maxDays: 400, intervalMs: 0, batchRows: 1000, maxDbBytes: 0 }, now: () => Date.parse('2026-06-01T00:00:00Z'), pacing: sim.pacing });
    const report = await runner.runOnce();
    expect(report.reclaimed_pages).toBe(5000);
  });
});
