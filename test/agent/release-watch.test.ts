/**
 * The release regression watcher: when a release's health verdict (releases.list rules) turns
 * `regressed`, `release.regressed` is published once for that release and becomes an investigate
 * signal that uses the `release-regression` platform skill.
 */
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { api, startTestServer, type TestServer } from '../helpers/server.js';
import { deploy, MIN, requests, sendSpans } from '../operations/releases-fixtures.js';
import type { DomainEvent } from '../../src/core/events.js';
import type { AgentRunner } from '../../src/domain/agent/contract.js';

const T0 = Date.parse('2026-03-01T00:00:00.000Z');
let clock = T0;
let t: TestServer;
const published: DomainEvent[] = [];
const runs: Parameters<AgentRunner['run']>[0][] = [];

beforeAll(async () => {
  t = await startTestServer({ now: () => clock });
  t.s.services.events.subscribe('release.regressed', (e) => published.push(e));
  t.s.services.agentRunner = { run: async (o) => (runs.push(o), { text: 'Roll back 2.0.0: errors up from 0% to 10%.', answered_by: 'fake-model', tool_calls: [] }) };
  clock = T0 + 180 * MIN; // deployments and spans are in the past
  const s = { service: 'checkout', environment: 'production' };
  await deploy(t, { ...s, version: '1.0.0' }, T0);
  await deploy(t, { ...s, version: '2.0.0' }, T0 + 60 * MIN);
  await sendSpans(t, { ...s, version: '1.0.0' }, requests(T0, T0 + 60 * MIN, 100));
  await sendSpans(t, { ...s, version: '2.0.0' }, requests(T0 + 60 * MIN, T0 + 120 * MIN, 100, { errors: 10 }));
  // A healthy stream: never reported.
  const h = { service: 'search', environment: 'production' };
  await deploy(t, { ...h, version: 'a' }, T0);
  await deploy(t, { ...h, version: 'b' }, T0 + 60 * MIN);
  await sendSpans(t, { ...h, version: 'a' }, requests(T0, T0 + 60 * MIN, 100));
  await sendSpans(t, { ...h, version: 'b' }, requests(T0 + 60 * MIN, T0 + 120 * MIN, 100));
});
afterAll(() => t.close());

describe('release regression watcher', () => {
  it('publishes release.regressed once per regressed release and investigates it with the release-regression skill', async () => {
    await t.s.services.scheduler.runDue(); // the watcher's first run, 5 minutes after start
    expect(published).toHaveLength(1);
    expect(published[0]).toMatchObject({ type: 'release.regressed', projectId: t.projectId, service: 'checkout', environment: 'production', version: '2.0.0' });

    const sig = (await api(t, 'GET', `/v1/projects/${t.projectId}/agent/signals`, { key: t.keys.admin })).body.data.find((s: any) => s.source === 'release.regressed');
    expect(sig).toMatchObject({ action: 'investigate', severity: 'sev2', title: 'Release checkout@2.0.0 regressed', status: 'queued' });
    clock += 31_000;
    await t.s.services.scheduler.runDue();
    expect(runs).toHaveLength(1);
    expect(runs[0]!.instructions).toContain('api.releases.get');
    const done = (await api(t, 'GET', `/v1/projects/${t.projectId}/agent/signals`, { key: t.keys.admin })).body.data.find((s: any) => s.id === sig.id);
    expect(done).toMatchObject({ status: 'answered', answer: expect.stringContaining('Roll back') });

    clock += 5 * MIN + 1000;
    await t.s.services.scheduler.runDue();
    expect(published).toHaveLength(1); // once per release
  });
});
