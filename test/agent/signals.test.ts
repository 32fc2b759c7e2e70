/**
 * Signals from real project events (Sentry store endpoint: a new group, a reopened group, a burst
 * for the spike detector), investigations through an injected fake runner that record a
 * conversation and post a signed alert to a local webhook receiver, and the alert rules:
 * `proactive_alerts`, `daily_alert_cap` per UTC day, the budget stage.
 */
import { afterAll, beforeAll, beforeEach, describe, expect, it } from 'vitest';
import http from 'node:http';
import { createHmac, randomBytes } from 'node:crypto';
import type { AddressInfo } from 'node:net';
import { api, startTestServer, type TestServer } from '../helpers/server.js';
import type { AgentRunner } from '../../src/domain/agent/contract.js';

const DAY = 86_400_000;
let clock = Date.UTC(2026, 10, 24, 10, 0, 0);
let t: TestServer;
let P: string;
let receiver: http.Server;
let hookUrl: string;
const received: { path: string; headers: http.IncomingHttpHeaders; body: string }[] = [];
let failNext = 0;
const runs: Parameters<AgentRunner['run']>[0][] = [];
let webhook: { id: string; secret: string };

beforeAll(async () => {
  receiver = http.createServer((req, res) => {
    const chunks: Buffer[] = [];
    req.on('data', (c) => chunks.push(c));
    req.on('end', () => {
      received.push({ path: req.url!, headers: req.headers, body: Buffer.concat(chunks).toString('utf8') });
      if (failNext > 0) {
        failNext--;
        res.writeHead(503).end('busy');
      } else res.writeHead(200).end('ok');
    });
  });
  await new Promise<void>((r) => receiver.listen(0, '127.0.0.1', r));
  hookUrl = `http://127.0.0.1:${(receiver.address() as AddressInfo).port}`;
  t = await startTestServer({ now: () => clock, config: { webhooks: { allowPrivate: '127.0.0.1' }, monitors: { allowPrivate: '127.0.0.1', retentionDays: 90 }, agent: { dailyBudget: 100 } } });
  P = `/v1/projects/${t.projectId}/agent`;
  t.s.services.agentRunner = {
    async run(opts) {
      runs.push(opts);
      return { text: `Root cause: a null user in checkout (${opts.kind}).`, answered_by: 'fake-model', tool_calls: [] };
    },
  };
  const ch = await api(t, 'POST', `${P}/channels`, { key: t.keys.admin, body: { name: 'ops', kind: 'webhook', url: `${hookUrl}/hook` } });
  expect(ch.status).toBe(201);
  expect(ch.body.secret).toMatch(/^whsec_/);
  webhook = { id: ch.body.id, secret: ch.body.secret };
});
afterAll(async () => {
  await t.close();
  receiver.closeAllConnections();
  await new Promise((r) => receiver.close(r));
});
beforeEach(() => {
  received.length = 0;
  runs.length = 0;
});

async function storeEvent(type: string, message: string, level = 'error') {
  const r = await fetch(`${t.url}/ingest/api/${t.projectId}/store/?sentry_key=${t.keys.ingest}`, {
    method: 'POST',
    body: JSON.stringify({ event_id: randomBytes(16).toString('hex'), timestamp: clock / 1000, level, exception: { values: [{ type, value: message }] }, environment: 'production' }),
  });
  expect(r.status).toBe(200);
}
const signals = async () => (await api(t, 'GET', `${P}/signals`, { key: t.keys.admin })).body.data as any[];
const settings = (body: Record<string, unknown>) => api(t, 'PATCH', `${P}/settings`, { key: t.keys.admin, body });
const runJobs = async (advanceMs = 31_000) => {
  clock += advanceMs;
  await t.s.services.scheduler.runDue();
  await t.s.services.scheduler.runDue();
};
/** Checks the signature as a receiver would, with its own HMAC (not the server's helper). */
function verified(h: http.IncomingHttpHeaders, body: string, secret: string): boolean {
  const parts = Object.fromEntries(String(h['sightline-signature']).split(',').map((p) => p.split('=')));
  const mac = createHmac('sha256', secret).update(`${parts.t}.${body}`).digest('hex');
  return parts.v1 === mac && Math.abs(Number(parts.t) - clock / 1000) < 300;
}

describe('signals from project events', () => {
  it('a new error group becomes an investigate signal; the investigation records a conversation and posts a signed alert', async () => {
    await settings({ proactive_alerts: 'important', daily_alert_cap: 10 });
    await storeEvent('CheckoutError', 'user is null');
    const [sig] = await signals();
    expect(sig).toMatchObject({ source: 'error.group.created', action: 'investigate', severity: 'sev2', status: 'queued', reason: expect.stringContaining('new error group') });
    expect(sig.title).toContain('CheckoutError');

    await runJobs();
    expect(runs).toHaveLength(1);
    expect(runs[0]).toMatchObject({ projectId: t.projectId, kind: 'investigation', scopes: ['read'] });
    expect(runs[0]!.instructions).toContain('api.errors.get'); // the triage-new-issue platform skill
    expect(runs[0]!.prompt).toContain('CheckoutError');

    const after = (await signals()).find((s) => s.id === sig.id);
    expect(after).toMatchObject({ status: 'answered', alert: 'posted', answer: expect.stringContaining('Root cause') });
    const conv = (await api(t, 'GET', `${P}/conversations`, { key: t.keys.admin })).body.data.find((c: any) => c.id === after.conversation_id);
    expect(conv).toMatchObject({ kind: 'investigation', status: 'answered', answered_by: 'fake-model', signal_id: sig.id });

    expect(received).toHaveLength(1);
    const hit = received[0]!;
    expect(hit.path).toBe('/hook');
    expect(verified(hit.headers, hit.body, webhook.secret)).toBe(true);
    expect(verified(hit.headers, hit.body.replace('sev2', 'sev1'), webhook.secret)).toBe(false);
    const payload = JSON.parse(hit.body);
    expect(payload).toMatchObject({ type: 'agent.message', title: expect.stringContaining('[sev2]'), data: { signal_id: sig.id, severity: 'sev2', action: 'investigate' } });
    expect(payload.text).toContain('Root cause');
    const log = (await api(t, 'GET', `${P}/deliveries`, { key: t.keys.admin })).body.data;
    expect(log[0]).toMatchObject({ channel_id: webhook.id, status: 'delivered', attempts: 1, last_status_code: 200 });
  });

  it('a resolved group that gets a new event becomes a reopened signal', async () => {
    const created = (await signals()).find((s) => s.title.includes('CheckoutError'))!;
    const groupId = created.subject.replace('group:', '');
    expect((await api(t, 'PATCH', `/v1/projects/${t.projectId}/errors/${groupId}`, { key: t.keys.admin, body: { status: 'resolved' } })).status).toBe(200);
    await storeEvent('CheckoutError', 'user is null');
    const [sig] = await signals();
    expect(sig).toMatchObject({ source: 'error.group.reopened', subject: `group:${groupId}`, action: 'investigate', severity: 'sev2' });
    await runJobs();
    expect(runs).toHaveLength(1);
    expect((await signals())[0]).toMatchObject({ status: 'answered', alert: 'posted' });
  });

  it('a burst in one group is an error spike (once per cool-down), attached to the group\'s earlier signal', async () => {
    for (let i = 0; i < 25; i++) await storeEvent('InventoryTimeout', 'stock service timed out');
    await runJobs(61_000); // the spike detector runs every minute
    const spike = (await signals()).find((s) => s.source === 'error.spike');
    expect(spike).toMatchObject({ action: 'attach_to_existing', severity: 'sev2', title: expect.stringContaining('InventoryTimeout') });
    expect(spike.reason).toMatch(/^25 events in 5 minutes/);
    for (let i = 0; i < 25; i++) await storeEvent('InventoryTimeout', 'stock service timed out');
    await runJobs(61_000);
    expect((await signals()).filter((s) => s.source === 'error.spike')).toHaveLength(1);
  });

  it('a steady group is not a spike', async () => {
    // 3 events a minute for 30 minutes: a usual rate, never 20 in 5 minutes.
    for (let m = 0; m < 10; m++) {
      for (let i = 0; i < 3; i++) await storeEvent('SteadyWarning', 'cache miss', 'error');
      await runJobs(60_000);
    }
    expect((await signals()).filter((s) => s.source === 'error.spike' && s.title.includes('SteadyWarning'))).toEqual([]);
  });

  it('info-level groups are ignored and not investigated', async () => {
    await storeEvent('Notice', 'cache warmed', 'info');
    expect((await signals())[0]).toMatchObject({ action: 'ignore', status: 'ignored', severity: 'sev4' });
  });
});

describe('proactive alerts', () => {
  it('follow proactive_alerts: sev1_only keeps a sev2 signal out of the channel', async () => {
    await settings({ proactive_alerts: 'sev1_only' });
    await storeEvent('MinorError', 'one');
    await runJobs();
    expect((await signals())[0]).toMatchObject({ status: 'answered', alert: 'not_sent:proactive_alerts_sev1_only' });
    expect(received).toEqual([]);
    // A fatal error is sev1 and goes through.
    await storeEvent('FatalCrash', 'segfault', 'fatal');
    await runJobs();
    expect((await signals())[0]).toMatchObject({ severity: 'sev1', alert: 'posted' });
    expect(received).toHaveLength(1);
  });

  it('stop at daily_alert_cap per UTC day and resume the next day', async () => {
    clock = Math.floor(clock / DAY) * DAY + DAY + 3_600_000; // a fresh UTC day
    await settings({ proactive_alerts: 'all', daily_alert_cap: 2 });
    for (const name of ['CapA', 'CapB', 'CapC']) await storeEvent(name, 'boom');
    await runJobs();
    const alerts = (await signals()).filter((s) => /Cap[ABC]/.test(s.title)).map((s) => s.alert);
    expect(alerts.sort()).toEqual(['not_sent:daily_alert_cap', 'posted', 'posted']);
    expect(received).toHaveLength(2);
    expect((await api(t, 'GET', `${P}/usage`, { key: t.keys.admin })).body.alerts_posted).toBe(2);

    clock = Math.floor(clock / DAY) * DAY + DAY + 60_000;
    await storeEvent('CapD', 'boom');
    await runJobs();
    expect((await signals())[0]).toMatchObject({ alert: 'posted' });
  });

  it('no investigation once the budget stage is notify_only; the alert still goes out', async () => {
    t.s.services.agentState!.recordWake(t.projectId, clock, { units: 95 });
    expect((await api(t, 'GET', `${P}/usage`, { key: t.keys.admin })).body.stage).toBe('notify_only');
    await storeEvent('LateError', 'late');
    const [sig] = await signals();
    expect(sig).toMatchObject({ action: 'investigate', status: 'not_investigated:budget', alert: 'posted' });
    await runJobs();
    expect(runs).toEqual([]);
    t.s.services.agentState!.recordWake(t.projectId, clock, { units: 10 });
    await storeEvent('LaterError', 'later');
    expect((await signals())[0]).toMatchObject({ status: 'not_investigated:budget', alert: 'not_sent:budget_exhausted' });
  });

  it('lists the last 100 signals', async () => {
    const list = await signals();
    expect(list.length).toBeGreaterThan(5);
    expect(list.length).toBeLessThanOrEqual(100);
    expect(new Date(list[0].created_at).getTime()).toBeGreaterThanOrEqual(new Date(list.at(-1).created_at).getTime());
  });
});

describe('channels', () => {
  it('retries a failed delivery with backoff and logs every attempt', async () => {
    clock = Math.floor(clock / DAY) * DAY + DAY + 60_000; // budget fresh again
    failNext = 1;
    const id = t.s.services.agentState!.sendToChannel(t.projectId, webhook.id, { title: 'Hello', text: 'retry me' }, clock);
    await t.s.services.scheduler.runDue();
    let d = (await api(t, 'GET', `${P}/deliveries`, { key: t.keys.admin })).body.data.find((x: any) => x.id === id);
    expect(d).toMatchObject({ status: 'pending', attempts: 1, last_status_code: 503 });
    await runJobs(6_000);
    d = (await api(t, 'GET', `${P}/deliveries`, { key: t.keys.admin })).body.data.find((x: any) => x.id === id);
    expect(d).toMatchObject({ status: 'delivered', attempts: 2, last_status_code: 200 });
    expect(received).toHaveLength(2);
  });

  it('posts Slack-compatible {text} to a slack channel, and the alert channel setting picks it', async () => {
    const slack = await api(t, 'POST', `${P}/channels`, { key: t.keys.admin, body: { name: 'slack', kind: 'slack', url: `${hookUrl}/slack` } });
    expect(slack.status).toBe(201);
    expect(slack.body.secret).toBeNull();
    expect((await settings({ alert_channel_id: slack.body.id })).status).toBe(200);
    const list = (await api(t, 'GET', `${P}/channels`, { key: t.keys.admin })).body.data;
    expect(list.find((c: any) => c.id === slack.body.id)).toMatchObject({ is_alert_channel: true, url_host: expect.stringContaining('127.0.0.1') });
    expect(JSON.stringify(list)).not.toContain('/slack');
    await storeEvent('SlackError', 'to slack');
    await runJobs();
    const hit = received.find((r) => r.path === '/slack')!;
    expect(JSON.parse(hit.body).text).toContain('SlackError');
  });

  it('refuses private addresses the operator did not allow, and unknown channels', async () => {
    const r = await api(t, 'POST', `${P}/channels`, { key: t.keys.admin, body: { name: 'x', kind: 'webhook', url: 'http://10.0.0.5/hook' } });
    expect(r.status).toBe(400);
    expect(r.body.code).toBe('address_not_allowed');
    expect((await api(t, 'POST', `${P}/channels`, { key: t.keys.admin, body: { name: 'x', kind: 'webhook', url: 'ftp://example.com/' } })).status).toBe(400);
    expect(() => t.s.services.agentState!.sendToChannel(t.projectId, '00000000-0000-4000-8000-000000000000', { title: 'x', text: 'y' }, clock)).toThrow(/not found/);
    // Channels need project:write: an automations key cannot list or create them.
    const k = t.mintKey(['automations:read', 'automations:write']);
    expect((await api(t, 'GET', `${P}/channels`, { key: k })).status).toBe(403);
    expect((await api(t, 'DELETE', `${P}/channels/${webhook.id}`, { key: t.keys.admin })).status).toBe(200);
    expect((await api(t, 'DELETE', `${P}/channels/${webhook.id}`, { key: t.keys.admin })).status).toBe(404);
  });
});

describe('signals from monitors', () => {
  it('an uptime monitor going down is a sev1 signal; the incident it opens attaches to it', async () => {
    const m = await api(t, 'POST', `/v1/projects/${t.projectId}/monitors`, { key: t.keys.admin, body: { name: 'api', kind: 'http', url: `${hookUrl}/health`, interval_s: 60 } });
    expect(m.status).toBe(201);
    failNext = 1; // the receiver answers 503 to the check
    await t.s.services.scheduler.runDue();
    try {
      const recent = (await signals()).slice(0, 2);
      expect(recent.map((s) => s.source).sort()).toEqual(['incident.opened', 'monitor.down']);
      const down = recent.find((s) => s.source === 'monitor.down');
      expect(down).toMatchObject({ severity: 'sev1', title: 'Monitor down: api', subject: expect.stringMatching(/^incident:/) });
      // One outage, one investigation: whichever event came first investigates, the other attaches.
      expect(recent.map((s) => s.action).sort()).toEqual(['attach_to_existing', 'investigate']);
      expect(new Set(recent.map((s) => s.subject)).size).toBe(1);
      expect(recent.find((s) => s.action === 'investigate')).toMatchObject({ severity: 'sev1', status: 'queued' });
    } finally {
      await api(t, 'DELETE', `/v1/projects/${t.projectId}/monitors/${m.body.id}`, { key: t.keys.admin });
    }
  });

});
