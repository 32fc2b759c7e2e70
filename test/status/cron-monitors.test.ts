/**
 * Cron monitors fed by the real @sentry/node SDK (captureCheckIn and withMonitor) through the Sentry
 * DSN: the first check-in with a monitor config creates the monitor; ok, error, missed and timed-out
 * runs drive its state and incidents. The clock is injected, so "missed" and "timeout" are reached
 * by moving time, not by waiting.
 */
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import * as Sentry from '@sentry/node';
import { api, startTestServer, type TestServer } from '../helpers/server.js';

let t: TestServer;
let clock = Date.parse('2026-03-02T10:00:30Z');
const config = { schedule: { type: 'crontab' as const, value: '*/10 * * * *' }, checkinMargin: 2, maxRuntime: 3, timezone: 'Europe/Berlin' };

beforeAll(async () => {
  t = await startTestServer({ now: () => clock });
  const port = new URL(t.url).port;
  Sentry.init({ dsn: `http://${t.keys.ingest}@127.0.0.1:${port}/ingest/${t.projectId}`, defaultIntegrations: false, environment: 'production', release: 'jobs@1.0.0' });
});
afterAll(async () => {
  await Sentry.close(2000);
  await t.close();
});

const P = () => `/v1/projects/${t.projectId}`;
async function monitor() {
  const list = (await api(t, 'GET', `${P()}/monitors?kind=cron`, { key: t.keys.admin })).body.data;
  return list.find((m: { cron: { slug: string } }) => m.cron.slug === 'nightly-report');
}
async function results(id: string) {
  return (await api(t, 'GET', `${P()}/monitors/${id}/results?from=2026-03-01T00:00:00Z&to=2026-03-03T00:00:00Z`, { key: t.keys.admin })).body.data;
}

describe('cron monitors from Sentry check-ins', () => {
  it('creates the monitor from the first check-in\'s monitor config and records an ok run', async () => {
    const id = Sentry.captureCheckIn({ monitorSlug: 'nightly-report', status: 'in_progress' }, config);
    await Sentry.flush(2000);
    clock += 20_000;
    Sentry.captureCheckIn({ checkInId: id, monitorSlug: 'nightly-report', status: 'ok', duration: 20 });
    await Sentry.flush(2000);
    const m = await monitor();
    expect(m).toMatchObject({
      kind: 'cron',
      state: 'up',
      cron: { slug: 'nightly-report', schedule: '*/10 * * * *', checkin_margin_min: 2, max_runtime_min: 3, timezone: 'Europe/Berlin', next_expected_at: '2026-03-02T10:10:00.000Z' },
    });
    expect((await results(m.id)).map((r: { status: string }) => r.status)).toEqual(['ok', 'in_progress']);
    expect((await results(m.id))[0]).toMatchObject({ latency_ms: 20_000, check_in_id: id });
  });

  it('goes down with an incident on an error check-in and recovers on the next ok run', async () => {
    clock = Date.parse('2026-03-02T10:10:05Z');
    Sentry.captureCheckIn({ monitorSlug: 'nightly-report', status: 'error' });
    await Sentry.flush(2000);
    const m = await monitor();
    expect(m.state).toBe('down');
    const inc = (await api(t, 'GET', `${P()}/incidents/${m.open_incident_id}`, { key: t.keys.admin })).body;
    expect(inc).toMatchObject({ title: 'nightly-report is down', status: 'investigating', display_id: 'INC-1' });

    clock = Date.parse('2026-03-02T10:20:10Z');
    await Sentry.withMonitor('nightly-report', async () => 'report sent', config);
    await Sentry.flush(2000);
    expect((await monitor()).state).toBe('up');
    expect((await api(t, 'GET', `${P()}/incidents/INC-1`, { key: t.keys.admin })).body.status).toBe('resolved');
  });

  it('marks a run that stays in progress past max runtime as timed out', async () => {
    clock = Date.parse('2026-03-02T10:30:00Z');
    const id = Sentry.captureCheckIn({ monitorSlug: 'nightly-report', status: 'in_progress' }, config);
    await Sentry.flush(2000);
    clock += 2 * 60_000;
    await t.s.services.scheduler.runDue();
    expect((await monitor()).state).toBe('up'); // still within max runtime
    clock += 60_000 + 1;
    await t.s.services.scheduler.runDue();
    const m = await monitor();
    expect(m.state).toBe('down');
    expect((await results(m.id))[0]).toMatchObject({ status: 'timeout', check_in_id: id, error: 'the run did not finish within 3 min' });
    // A late finish of the same run does not count twice.
    Sentry.captureCheckIn({ checkInId: id, monitorSlug: 'nightly-report', status: 'ok', duration: 400 });
    await Sentry.flush(2000);
    expect((await results(m.id))[0].status).toBe('timeout');
  });

  it('detects a missed check-in after the schedule time plus margin', async () => {
    clock = Date.parse('2026-03-02T10:40:01Z');
    Sentry.captureCheckIn({ monitorSlug: 'nightly-report', status: 'ok' });
    await Sentry.flush(2000);
    let m = await monitor();
    expect(m.state).toBe('up');
    expect(m.cron.next_expected_at).toBe('2026-03-02T10:50:00.000Z');

    clock = Date.parse('2026-03-02T10:51:59Z');
    await t.s.services.scheduler.runDue();
    expect((await monitor()).state).toBe('up'); // inside the 2-minute margin
    clock = Date.parse('2026-03-02T10:52:00Z');
    await t.s.services.scheduler.runDue();
    m = await monitor();
    expect(m.state).toBe('down');
    expect((await results(m.id))[0]).toMatchObject({ status: 'missed', error: expect.stringContaining('expected 2026-03-02T10:50:00.000Z') });
    expect(m.cron.next_expected_at).toBe('2026-03-02T11:00:00.000Z');
    const open = (await api(t, 'GET', `${P()}/incidents?status=open`, { key: t.keys.admin })).body.data;
    expect(open.map((i: { monitor_id: string }) => i.monitor_id)).toContain(m.id);
  });

  it('ignores check-ins for an unknown slug without a monitor config', async () => {
    Sentry.captureCheckIn({ monitorSlug: 'never-configured', status: 'ok' });
    await Sentry.flush(2000);
    const list = (await api(t, 'GET', `${P()}/monitors?kind=cron`, { key: t.keys.admin })).body.data;
    expect(list.map((m: { name: string }) => m.name)).toEqual(['nightly-report']);
  });
});
