/**
 * Issue 20: log records in ClickHouse. Runs in the `clickhouse-18` project (Debian's
 * clickhouse-server 18.16) and the `clickhouse-chdb` project (ClickHouse 26 in-process).
 * - a write batch inserts the log records of the jobs that succeeded, after the SQLite commit, and
 *   acknowledges a job only once its records are readable; a failing insert fails the jobs;
 * - retention drops the days every project's log period has passed and deletes a shorter-lived
 *   project's older records.
 */
import { describe, expect, it } from 'vitest';
import type { ChEngine } from '../../src/storage/clickhouse/client.js';
import { createChLogStore } from '../../src/storage/clickhouse/log-store.js';
import { createWriteBatcher } from '../../src/storage/write-batcher.js';
import type { LogRecordOut } from '../../src/domain/telemetry-types.js';
import { useChStore } from '../support/clickhouse-store-fixture.js';
import { DAY, describeClickHouseRetention, T0 } from '../support/clickhouse-retention.js';
import { api } from '../helpers/server.js';

const mode = process.env.SIGHTLINE_TEST_CLICKHOUSE;

const log = (body: string, timeMs = 1_780_000_000_000): LogRecordOut => ({
  resource: { 'service.name': 'svc' },
  scope: { name: 'test', version: '', attributes: {} },
  service_name: 'svc',
  time_ms: timeMs,
  observed_time_ms: timeMs,
  severity_number: 9,
  severity_text: 'INFO',
  body,
  attributes: { n: 1 },
  trace_id: null,
  span_id: null,
  flags: 0,
  event_name: '',
});

describe.skipIf(mode !== 'server' && mode !== 'chdb')('log store in ClickHouse', () => {
  const fx = useChStore();

  it('inserts the log records of the jobs that succeeded, after the commit, before acknowledging them', async () => {
    const store = createChLogStore(fx.engine);
    const batch = createWriteBatcher(fx.db, 512, [store.participant]);
    const kept = batch(() => store.add('7', [log('one'), log('two')], 'otlp', 1));
    const failed = batch(() => {
      store.add('7', [log('three')], 'otlp', 1);
      throw new Error('this job fails after adding its log');
    });
    const alsoKept = batch(() => store.add('7', [log('four')], 'otlp', 1, 'drain-1'));
    const failedCheck = expect(failed).rejects.toThrow('this job fails');
    await expect(kept).resolves.toBe(2);
    // acknowledged: readable now, in arrival order for equal times
    const rows = await fx.engine.query<{ body: string; connector_key: string }>('SELECT body, connector_key FROM logs WHERE project_id = 7 ORDER BY id');
    expect(rows).toEqual([
      { body: 'one', connector_key: '' },
      { body: 'two', connector_key: '' },
      { body: 'four', connector_key: 'drain-1' },
    ]);
    await failedCheck;
    await expect(alsoKept).resolves.toBe(1);
  });

  it('fails the jobs of a batch whose insert fails', async () => {
    const broken: ChEngine = { ...fx.engine, insert: async () => Promise.reject(new Error('ClickHouse is down')) };
    const store = createChLogStore(broken);
    const batch = createWriteBatcher(fx.db, 512, [store.participant]);
    await expect(batch(() => store.add('8', [log('lost')], 'otlp', 1))).rejects.toThrow('ClickHouse is down');
    expect((await fx.engine.query<{ n: number }>('SELECT count() AS n FROM logs WHERE project_id = 8'))[0]!.n).toBe(0);
  });
});

describeClickHouseRetention({
  kind: 'logs',
  rows: 'records',
  write: (t, pid, rows) => t.s.services.writeBatch(() => t.s.services.telemetry.insertLogs(pid, rows.map((r) => log(r.label, T0 - r.daysAgo * DAY)), 'otlp', T0)),
  left: async (engine) => (await engine.query<{ body: string }>('SELECT body FROM logs ORDER BY body')).map((r) => r.body),
  async after(t) {
    const P = t.projectId;
    const search = await api(t, 'GET', `/v1/projects/${P}/logs?from=${new Date(T0 - 60 * DAY).toISOString()}&to=${new Date(T0).toISOString()}`, { key: t.keys.admin });
    expect(search.body.data.map((r: { body: string }) => r.body)).toEqual(['p2']);
  },
});
