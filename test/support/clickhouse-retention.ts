import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import type { ChEngine } from '../../src/storage/clickhouse/client.js';
import { clickHouseMutationsPending } from '../../src/storage/clickhouse/retention.js';
import { api, startTestServer, type TestServer } from '../helpers/server.js';
import { chMode } from './clickhouse-store-fixture.js';

export const DAY = 86_400_000;
export const T0 = Date.parse('2026-06-01T12:00:00.000Z');

export interface RetentionCase {
  /** The retention setting's key and the retention report's. */
  kind: 'spans' | 'logs' | 'metric_points' | 'capture_events' | 'agent_observations' | 'agent_scores' | 'error_events';
  /** What is expired, in the test's title ("spans", "records", "points"). */
  rows: string;
  /** Writes one row per label (its project, its age in days) through the server's telemetry writer. */
  write(t: TestServer, pid: string, rows: { label: string; daysAgo: number }[]): Promise<unknown>;
  /** The labels of the rows left in ClickHouse, sorted. */
  left(engine: ChEngine): Promise<string[]>;
  /** The other project's period when the kind's default is not 30 days (set on it as 30). */
  otherDays?: 30;
  /** Further checks once expired (reads through the API, derived tables). */
  after?(t: TestServer, engine: ChEngine): Promise<void>;
}

/**
 * The retention scenario every ClickHouse kind of telemetry shares: the main project keeps the kind
 * 7 days, the other project the default 30; rows 40, 10 and 2 days old in each. After a run, rows of
 * 40 days are gone (a dropped day partition), the main project's 10-day-old row too (a delete), the
 * rest kept — labels p40/p10/p2 and o40/o10/o2.
 */
export function describeClickHouseRetention(c: RetentionCase): void {
  describe.skipIf(!chMode)(`retention of ${c.kind} in ClickHouse`, () => {
    let t: TestServer;
    beforeAll(async () => {
      t = await startTestServer({ now: () => T0, config: { retention: { maxDays: 400, intervalMs: 0, batchRows: 50, maxDbBytes: 0 } } });
    });
    afterAll(() => t.close());

    it(`drops days every project's period has passed, deletes a shorter-lived project's older ${c.rows}, and keeps the rest`, async () => {
      const P = t.projectId;
      const O = t.otherProject.projectId;
      const put = await api(t, 'PUT', `/v1/projects/${P}/retention`, { key: t.keys.admin, body: { [c.kind]: 7 } });
      expect(put.status).toBe(200);
      if (c.otherDays) expect((await api(t, 'PUT', `/v1/projects/${O}/retention`, { key: t.otherProject.adminKey, body: { [c.kind]: c.otherDays } })).status).toBe(200);
      for (const [pid, p] of [[P, 'p'], [O, 'o']] as const) await c.write(t, pid, [40, 10, 2].map((d) => ({ label: `${p}${d}`, daysAgo: d })));
      const ch = t.s.services.clickhouse!;
      expect(await c.left(ch.engine)).toHaveLength(6);

      const report = await t.s.retention.runOnce();
      for (let i = 0; i < 200 && (await clickHouseMutationsPending(ch.engine)); i++) await new Promise((r) => setTimeout(r, 50));
      expect(await c.left(ch.engine)).toEqual(['o10', 'o2', 'p2']);
      expect(report.expired[c.kind]).toBe(3);
      await c.after?.(t, ch.engine);
    });
  });
}
