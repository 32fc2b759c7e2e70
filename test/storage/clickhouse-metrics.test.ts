/**
 * Issue 20: metric points in ClickHouse. Runs in the ClickHouse test projects (chdb, and 18.16 in
 * scale-out).
 * - a write batch inserts the metric points of the jobs that succeeded, after the SQLite commit, and
 *   acknowledges a job only once its points are readable; a failing insert fails the jobs;
 * - retention drops the days every project's metric point period has passed and deletes a
 *   shorter-lived project's older points; metrics.list then lists only the retained points' metrics.
 */
import { describe, expect, it } from 'vitest';
import type { ChEngine } from '../../src/storage/clickhouse/client.js';
import { createChMetricStore } from '../../src/storage/clickhouse/metric-store.js';
import { createWriteBatcher } from '../../src/storage/write-batcher.js';
import type { MetricPointRecord } from '../../src/domain/telemetry-types.js';
import { useChStore } from '../support/clickhouse-store-fixture.js';
import { DAY, describeClickHouseRetention, T0 } from '../support/clickhouse-retention.js';
import { api } from '../helpers/server.js';

const mode = process.env.SIGHTLINE_TEST_CLICKHOUSE;

const point = (name: string, timeMs = 1_780_000_000_000, value = 1): MetricPointRecord => ({
  resource: { 'service.name': 'svc' },
  scope: { name: 'test', version: '', attributes: {} },
  service_name: 'svc',
  metric_name: name,
  description: '',
  unit: '1',
  type: 'gauge',
  temporality: 'unspecified',
  monotonic: false,
  start_ms: null,
  time_ms: timeMs,
  attributes: { n: 1 },
  flags: 0,
  value,
});

describe.skipIf(mode !== 'server' && mode !== 'chdb')('metric store in ClickHouse', () => {
  const fx = useChStore();

  it('inserts the metric points of the jobs that succeeded, after the commit, before acknowledging them', async () => {
    const store = createChMetricStore(fx.engine);
    const batch = createWriteBatcher(fx.db, 512, [store.participant]);
    const kept = batch(() => store.add('7', [point('one'), point('two')], 1));
    const failed = batch(() => {
      store.add('7', [point('three')], 1);
      throw new Error('this job fails after adding its point');
    });
    const alsoKept = batch(() => store.add('7', [point('four')], 1));
    const failedCheck = expect(failed).rejects.toThrow('this job fails');
    await expect(kept).resolves.toBe(2);
    // acknowledged: readable now, in arrival order for equal times
    const rows = await fx.engine.query<{ metric_name: string }>('SELECT metric_name FROM metric_points WHERE project_id = 7 ORDER BY id');
    expect(rows.map((r) => r.metric_name)).toEqual(['one', 'two', 'four']);
    await failedCheck;
    await expect(alsoKept).resolves.toBe(1);
  });

  it('fails the jobs of a batch whose insert fails', async () => {
    const broken: ChEngine = { ...fx.engine, insert: async () => Promise.reject(new Error('ClickHouse is down')) };
    const store = createChMetricStore(broken);
    const batch = createWriteBatcher(fx.db, 512, [store.participant]);
    await expect(batch(() => store.add('8', [point('lost')], 1))).rejects.toThrow('ClickHouse is down');
    expect((await fx.engine.query<{ n: number }>('SELECT count() AS n FROM metric_points WHERE project_id = 8'))[0]!.n).toBe(0);
  });
});

describeClickHouseRetention({
  kind: 'metric_points',
  rows: 'points',
  write: (t, pid, rows) => t.s.services.writeBatch(() => t.s.services.telemetry.insertMetricPoints(pid, rows.map((r) => point(r.label, T0 - r.daysAgo * DAY)), T0)),
  left: async (engine) => (await engine.query<{ metric_name: string }>('SELECT metric_name FROM metric_points ORDER BY metric_name')).map((r) => r.metric_name),
  async after(t) {
    const P = t.projectId;
    const list = await api(t, 'GET', `/v1/projects/${P}/metrics?from=${new Date(T0 - 29 * DAY).toISOString()}&to=${new Date(T0).toISOString()}`, { key: t.keys.admin });
    expect(list.body.data.map((r: { metric_name: string }) => r.metric_name)).toEqual(['p2']);
  },
});
