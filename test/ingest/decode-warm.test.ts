/**
 * A listening server starts its decode workers at once (DecodePool.warm): a worker's first start
 * (module loading) takes about a second, and large bodies that arrive meanwhile wait for it.
 */
import { afterEach, describe, expect, it } from 'vitest';
import { DecodePool } from '../../src/ingest/worker/pool.js';

const pools: DecodePool[] = [];
afterEach(async () => {
  for (const p of pools.splice(0)) await p.close();
});

describe('decode pool warm-up', () => {
  it('starts every worker before any body arrives, and they load', async () => {
    const pool = new DecodePool(2);
    pools.push(pool);
    expect(pool.workers()).toEqual({ started: 0, ready: 0 });
    pool.warm();
    pool.warm(); // idempotent
    expect(pool.workers().started).toBe(2);
    for (let i = 0; i < 600 && pool.workers().ready < 2; i++) await new Promise((r) => setTimeout(r, 50));
    expect(pool.workers()).toEqual({ started: 2, ready: 2 });
    expect(pool.jobsRun).toBe(0);
  });

  it('does nothing for a pool that decodes on the main thread', () => {
    const pool = new DecodePool(0);
    pools.push(pool);
    pool.warm();
    expect(pool.workers()).toEqual({ started: 0, ready: 0 });
  });
});
