/**
 * Ingest tells the rest of the server what happened, once committed: a new error group, a resolved
 * group that got a new event, feedback. Signals (the in-project agent) and automations subscribe.
 */
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { randomBytes } from 'node:crypto';
import { api, startTestServer, type TestServer } from '../helpers/server.js';
import type { DomainEvent } from '../../src/core/events.js';

let t: TestServer;
const seen: DomainEvent[] = [];

beforeAll(async () => {
  t = await startTestServer();
  t.s.services.events.subscribe('*', (e) => {
    // Each event is published after its write: the group or feedback is already readable.
    if (e.type === 'error.group.created') expect(t.s.services.errorsIngest.exists(e.projectId, e.groupId)).toBe(true);
    seen.push(e);
  });
});
afterAll(() => t.close());

async function storeEvent(type: string, message: string) {
  const r = await fetch(`${t.url}/ingest/api/${t.projectId}/store/?sentry_key=${t.keys.ingest}`, {
    method: 'POST',
    body: JSON.stringify({ event_id: randomBytes(16).toString('hex'), level: 'error', exception: { values: [{ type, value: message }] }, environment: 'production' }),
  });
  expect(r.status).toBe(200);
}

describe('domain events from ingest', () => {
  it('publishes error.group.created once per new group, with its short id, and not for later events', async () => {
    await storeEvent('TypeError', 'x is undefined');
    await storeEvent('TypeError', 'x is undefined');
    const created = seen.filter((e) => e.type === 'error.group.created');
    expect(created).toHaveLength(1);
    expect(created[0]).toMatchObject({ projectId: t.projectId, title: expect.stringContaining('TypeError'), shortId: expect.stringMatching(/^[A-Z0-9]+-\d+$/), environment: 'production' });
  });

  it('publishes error.group.reopened when a resolved group gets a new event', async () => {
    const groupId = (seen.find((e) => e.type === 'error.group.created') as any).groupId;
    const r = await api(t, 'PATCH', `/v1/projects/${t.projectId}/errors/${groupId}`, { key: t.keys.admin, body: { status: 'resolved' } });
    expect(r.status).toBe(200);
    expect(seen.filter((e) => e.type === 'error.group.reopened')).toHaveLength(0);
    await storeEvent('TypeError', 'x is undefined');
    await storeEvent('TypeError', 'x is undefined');
    const reopened = seen.filter((e) => e.type === 'error.group.reopened');
    expect(reopened).toHaveLength(1);
    expect(reopened[0]).toMatchObject({ groupId });
  });

  it('publishes feedback.received for stored feedback only', async () => {
    const ok = await api(t, 'POST', `/v1/projects/${t.projectId}/feedback`, { key: t.keys.ingest, body: { message: 'The export button does nothing' } });
    expect(ok.status).toBe(201);
    const bad = await api(t, 'POST', `/v1/projects/${t.projectId}/feedback`, { key: t.keys.ingest, body: { message: '' } });
    expect(bad.status).toBe(400);
    const fb = seen.filter((e) => e.type === 'feedback.received');
    expect(fb).toHaveLength(1);
    expect(fb[0]).toMatchObject({ feedbackId: ok.body.id, message: 'The export button does nothing', errorGroupId: null });
  });
});
