/**
 * Remote access refusals (issue 18): the preview gate, typed-request rejections before any state
 * change, self-approval, a stale policy revision, a replayed step-up code, connector revocation and
 * rotation, hidden operations over MCP, and the console being out of reach of API credentials.
 */
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { api, startTestServer, type TestServer } from '../helpers/server.js';
import { consoleUser, ConsoleClient, DIGEST, enablePreview, enabledTarget, P, stepUpCode, TestConnector, type ConsoleUser } from './helpers.js';
import { execute, inMemoryClient } from '../mcp/helpers.js';

let t: TestServer;
let owner: ConsoleUser;
let approver: ConsoleUser;
let target: Awaited<ReturnType<typeof enabledTarget>>;
const disk = (targetId: string, extra: Record<string, unknown> = {}) => ({ target_id: targetId, operation: { id: 'host.disk_usage', parameters: {} }, timeout_seconds: 10, ...extra });

beforeAll(async () => {
  t = await startTestServer();
  owner = consoleUser(t, 'owner');
  approver = consoleUser(t, 'admin');
});
afterAll(() => t?.close());

describe('the preview gate', () => {
  it('answers 403 remote_access_preview_disabled to every operation until an owner enables it', async () => {
    for (const path of ['/targets', '/setup-targets', '/connectors', '/executions', '/audit']) {
      const r = await api(t, 'GET', P(t) + path, { key: t.keys.admin });
      expect(r.status, path).toBe(403);
      expect(r.body.code).toBe('remote_access_preview_disabled');
      expect(r.body.message).toContain('Recovery');
    }
    const create = await api(t, 'POST', `${P(t)}/connectors`, { key: t.keys.admin, body: { label: 'x' } });
    expect(create.body.code).toBe('remote_access_preview_disabled');
  });

  it('cannot be enabled by an API key, even a * key, nor by an admin', async () => {
    const byKey = await api(t, 'PUT', `${P(t)}/preview`, { key: t.keys.admin, body: { enabled: true } });
    expect(byKey.status).toBe(403);
    expect(byKey.body.code).toBe('owner_required');
    const admin = t.mintUserToken({ role: 'admin', scopes: ['project:write'] });
    const byAdmin = await api(t, 'PUT', `${P(t)}/preview`, { headers: { authorization: `Bearer ${admin.token}` }, body: { enabled: true } });
    expect(byAdmin.body.code).toBe('owner_required');
  });

  it('opens once an owner enables it', async () => {
    await enablePreview(t);
    const r = await api(t, 'GET', `${P(t)}/targets`, { key: t.keys.admin });
    expect(r.status).toBe(200);
    target = await enabledTarget(t, owner);
    const list = await api(t, 'GET', `${P(t)}/targets`, { key: t.keys.admin });
    expect(list.body.data.map((x: { id: string }) => x.id)).toEqual([target.targetId]);
  });
});

describe('typed requests are rejected before any state change', () => {
  const cases: Array<[string, Record<string, unknown>, string]> = [
    ['command text in parameters', { operation: { id: 'host.disk_usage', parameters: { command: 'cat /etc/shadow' } } }, 'command_text_rejected'],
    ['command text as the operation id', { operation: { id: 'df -h; rm -rf /', parameters: {} } }, 'command_text_rejected'],
    ['shell text in a unit', { operation: { id: 'service.status', parameters: { unit: 'nginx.service; reboot' } } }, 'command_text_rejected'],
    ['a top-level command field', { command: 'uptime' }, 'unknown_field'],
    ['an unknown operation id', { operation: { id: 'host.reboot', parameters: {} } }, 'invalid_operation'],
    ['control characters', { operation: { id: 'service.status', parameters: { unit: 'nginx\u0000.service' } } }, 'control_characters'],
    ['an invalid service-unit name', { operation: { id: 'service.status', parameters: { unit: '../../etc/passwd' } } }, 'invalid_service_unit'],
    ['a timeout beyond the policy', { timeout_seconds: 120 }, 'limit_outside_policy'],
    ['an unknown operation field', { operation: { id: 'host.uptime', parameters: {}, shell: true } }, 'unknown_field'],
  ];
  for (const [name, patch, code] of cases) {
    it(`refuses ${name} with 400 ${code}, on preview and create alike`, async () => {
      const before = (await api(t, 'GET', `${P(t)}/audit`, { key: t.keys.admin, headers: {} })).body.data.length;
      for (const path of ['/requests/preview', '/requests']) {
        const r = await api(t, 'POST', P(t) + path, { key: t.keys.admin, body: { ...disk(target.targetId), ...patch } });
        expect(r.status, JSON.stringify(r.body)).toBe(400);
        expect(r.body.code).toBe(code);
      }
      expect((await api(t, 'GET', `${P(t)}/audit`, { key: t.keys.admin })).body.data.length).toBe(before);
    });
  }

  it('previews a remediation as deny / operation_disabled_in_preview and refuses to create it', async () => {
    const body = { target_id: target.targetId, operation: { id: 'service.restart', parameters: { unit: 'nginx.service' } }, timeout_seconds: 10 };
    const p = await api(t, 'POST', `${P(t)}/requests/preview`, { key: t.keys.admin, body });
    expect(p.body).toMatchObject({ action: 'deny', decision_code: 'operation_disabled_in_preview' });
    const c = await api(t, 'POST', `${P(t)}/requests`, { key: t.keys.admin, body });
    expect(c.status).toBe(422);
    expect(c.body.code).toBe('operation_disabled_in_preview');
    const bad = await api(t, 'POST', `${P(t)}/policies/validate`, { key: t.keys.admin, body: { policy: { operations: { 'service.restart': { enabled: true } }, max_timeout_seconds: 10, output_limit: 1000 } } });
    expect(bad.body.valid).toBe(false);
    expect(bad.body.problems[0].code).toBe('remediation_disabled_in_preview');
  });

  it('previews an allowed request as require_approval without creating anything', async () => {
    const p = await api(t, 'POST', `${P(t)}/requests/preview`, { key: t.keys.admin, body: disk(target.targetId) });
    expect(p.body).toMatchObject({ action: 'require_approval', decision_code: 'approval_required', policy_revision: 1 });
    const approvals = await api(t, 'GET', `${P(t)}/approvals`, { headers: { authorization: `Bearer ${t.mintUserToken({ role: 'admin', scopes: ['read'] }).token}` } });
    expect(approvals.body.data).toEqual([]);
  });
});

describe('approvals in the console', () => {
  it('refuses self-approval: the requester cannot approve their own request', async () => {
    const mine = t.mintUserToken({ role: 'admin', scopes: ['remote_access:request'] });
    const req = await api(t, 'POST', `${P(t)}/requests`, { headers: { authorization: `Bearer ${mine.token}` }, body: disk(target.targetId) });
    expect(req.status).toBe(201);
    // Give the token's user a password so they can sign in to the console.
    const u = t.s.services.identity.userById(mine.userId)!;
    const { hashPassword } = await import('../../src/domain/identity/secrets.js');
    t.s.db.prepare('UPDATE users SET password_hash = ? WHERE id = ?').run(hashPassword('pw-self'), u.id);
    const cc = new ConsoleClient(t);
    await cc.signIn({ email: u.email, password: 'pw-self', userId: u.id });
    const page = await cc.projectPage();
    expect(page.html).toContain('your request: another person must review it');
    const step = await cc.stepUp('approve_request', req.body.id);
    expect(step.status).toBe(403);
    expect(step.html).toContain('you cannot decide it');
    expect((await api(t, 'GET', `${P(t)}/requests/${req.body.id}`, { key: t.keys.admin })).body.state).toBe('pending');
  });

  it('refuses to approve a request bound to a stale policy revision and says to preview and create a new request', async () => {
    const req = await api(t, 'POST', `${P(t)}/requests`, { key: t.keys.admin, body: disk(target.targetId) });
    const policy = await api(t, 'GET', `${P(t)}/targets/${target.targetId}/policy`, { key: t.keys.admin });
    const next = await api(t, 'POST', `${P(t)}/targets/${target.targetId}/policy`, { key: t.keys.admin, body: { policy: { ...policy.body.policy, max_timeout_seconds: 20 }, expected_revision: 1 } });
    expect(next.body.revision).toBe(2);
    const again = await api(t, 'POST', `${P(t)}/targets/${target.targetId}/policy`, { key: t.keys.admin, body: { policy: policy.body.policy, expected_revision: 1 } });
    expect(again.body.code).toBe('policy_revision_conflict');
    expect((await api(t, 'GET', `${P(t)}/targets/${target.targetId}/policy?revision=1`, { key: t.keys.admin })).body.policy).toEqual(policy.body.policy);

    const cc = new ConsoleClient(t);
    await cc.signIn(approver);
    await cc.stepUp('approve_request', req.body.id);
    const r = await cc.act('approve_request', req.body.id, await stepUpCode(t, approver.email));
    expect(r.status).toBe(409);
    expect(r.html).toContain('policy_stale');
    expect(r.html).toContain('preview the request again and create a new request');
    const read = await api(t, 'GET', `${P(t)}/requests/${req.body.id}`, { key: t.keys.admin });
    expect(read.body).toMatchObject({ state: 'expired', stale_code: 'policy_stale', execution: null });
    expect(read.body.recovery).toContain('create a new request');
  });

  it('turns an approved request stale when the policy changes before the connector takes it', async () => {
    const req = await api(t, 'POST', `${P(t)}/requests`, { key: t.keys.admin, body: disk(target.targetId) });
    const cc = new ConsoleClient(t);
    await cc.signIn(approver);
    await cc.stepUp('approve_request', req.body.id);
    expect((await cc.act('approve_request', req.body.id, await stepUpCode(t, approver.email))).status).toBe(200);
    const policy = await api(t, 'GET', `${P(t)}/targets/${target.targetId}/policy`, { key: t.keys.admin });
    await api(t, 'POST', `${P(t)}/targets/${target.targetId}/policy`, { key: t.keys.admin, body: { policy: { ...policy.body.policy, output_limit: 4096 } } });
    const poll = await target.connector.poll();
    expect(poll.jobs.filter((j) => j.type === 'execute')).toEqual([]);
    const read = await api(t, 'GET', `${P(t)}/requests/${req.body.id}`, { key: t.keys.admin });
    expect(read.body).toMatchObject({ state: 'approved', stale_code: 'policy_stale', execution: { state: 'stale', error_code: 'policy_stale' }, redacted_output: null });
    expect(read.body.recovery).toContain('preview the request again and create a new request');
  });

  it('lists pending approvals to signed-in users only, and lets the requester cancel', async () => {
    const byKey = await api(t, 'GET', `${P(t)}/approvals`, { key: t.keys.admin });
    expect(byKey.status).toBe(403);
    expect(byKey.body.code).toBe('user_required');
    const requesterKey = t.mintKey(['remote_access:request']);
    const req = await api(t, 'POST', `${P(t)}/requests`, { key: requesterKey, body: disk(target.targetId) });
    const user = t.mintUserToken({ role: 'admin', scopes: ['read'] });
    const list = await api(t, 'GET', `${P(t)}/approvals`, { headers: { authorization: `Bearer ${user.token}` } });
    expect(list.body.data.find((a: { request_id: string }) => a.request_id === req.body.id)).toMatchObject({ operation_id: 'host.disk_usage', target_label: 'web 1', requested_by_you: false });
    const other = await api(t, 'POST', `${P(t)}/requests/${req.body.id}/cancel`, { key: t.mintKey(['remote_access:request']), body: {} });
    expect(other.body.code).toBe('not_requester');
    const mine = await api(t, 'POST', `${P(t)}/requests/${req.body.id}/cancel`, { key: requesterKey, body: {} });
    expect(mine.body.state).toBe('cancelled');
    expect((await api(t, 'POST', `${P(t)}/requests/${req.body.id}/cancel`, { key: requesterKey, body: {} })).body.code).toBe('request_not_pending');
  });

  it('refuses a replayed step-up code, a code for another action, and a code from another session', async () => {
    const req = await api(t, 'POST', `${P(t)}/requests`, { key: t.keys.admin, body: disk(target.targetId) });
    const cc = new ConsoleClient(t);
    await cc.signIn(approver);
    await cc.stepUp('deny_request', req.body.id);
    const code = await stepUpCode(t, approver.email);
    // Bound to the action: the deny code does not approve.
    const wrongAction = await cc.act('approve_request', req.body.id, code);
    expect(wrongAction.status).toBe(403);
    // Bound to the session: the same user signed in elsewhere cannot use it.
    const other = new ConsoleClient(t);
    await other.signIn(approver);
    expect((await other.act('deny_request', req.body.id, code)).status).toBe(403);
    const ok = await cc.act('deny_request', req.body.id, code);
    expect(ok.status).toBe(200);
    const replay = await cc.act('deny_request', req.body.id, code);
    expect(replay.status).toBe(403);
    expect(replay.html).toContain('already used');
    expect((await api(t, 'GET', `${P(t)}/requests/${req.body.id}`, { key: t.keys.admin })).body.state).toBe('denied');
    const audit = (await api(t, 'GET', `${P(t)}/audit?limit=200`, { key: t.keys.admin })).body.data;
    expect(audit.filter((a: { action: string }) => a.action === 'console.step_up_refused').length).toBeGreaterThanOrEqual(3);
  });

  it('is out of reach of API keys and bearer tokens: they only get the sign-in page', async () => {
    const creds: Record<string, string>[] = [{ 'x-service-key': t.keys.admin }, { authorization: `Bearer ${t.mintUserToken({ role: 'owner', scopes: ['*'] }).token}` }];
    for (const headers of creds) {
      const page = await fetch(`${t.url}/console/remote-access/projects/${t.projectId}`, { headers, redirect: 'manual' });
      expect(page.status).toBe(302);
      const act = await fetch(`${t.url}/console/remote-access/projects/${t.projectId}/act`, { method: 'POST', headers: { ...headers, 'content-type': 'application/x-www-form-urlencoded' }, body: 'action=approve_request' });
      expect(act.status).toBe(401);
    }
  });
});

describe('connectors', () => {
  it('accepts an enrollment code once, and refuses it afterwards', async () => {
    const conn = await api(t, 'POST', `${P(t)}/connectors`, { key: t.keys.admin, body: { label: 'site B' } });
    expect(conn.headers.get('cache-control')).toBe('no-store');
    const c = new TestConnector(t);
    expect((await c.enroll(conn.body.enrollment_code)).status).toBe(200);
    const again = await new TestConnector(t).enroll(conn.body.enrollment_code);
    expect(again.status).toBe(401);
    expect(again.body.code).toBe('enrollment_code_invalid');
  });

  it('refuses a replayed signed poll and a forged signature', async () => {
    const conn = await api(t, 'POST', `${P(t)}/connectors`, { key: t.keys.admin, body: { label: 'site C' } });
    const c = new TestConnector(t);
    await c.enroll(conn.body.enrollment_code);
    const ts = String(Date.now());
    expect((await c.signed('/v1/remote-connector/poll', {}, undefined, ts)).status).toBe(200);
    const replay = await c.signed('/v1/remote-connector/poll', {}, undefined, ts);
    expect(replay.body.code).toBe('connector_replay');
    const forged = await c.signed('/v1/remote-connector/poll', {}, new TestConnector(t)['key']);
    expect(forged.body.code).toBe('connector_signature_invalid');
  });

  it('rotates on the next poll: the old key is refused afterwards', async () => {
    const conn = await api(t, 'POST', `${P(t)}/connectors`, { key: t.keys.admin, body: { label: 'site D' } });
    const c = new TestConnector(t);
    await c.enroll(conn.body.enrollment_code);
    await api(t, 'POST', `${P(t)}/connectors/${c.id}/rotate`, { key: t.keys.admin, body: {} });
    const poll = await c.poll();
    expect(poll.body.rotate).toBe(true);
    const { r, old } = await c.rotate();
    expect(r.status).toBe(200);
    expect((await c.signed('/v1/remote-connector/poll', {}, old)).body.code).toBe('connector_signature_invalid');
    expect((await c.poll()).status).toBe(200);
    expect((await api(t, 'GET', `${P(t)}/connectors/${c.id}`, { key: t.keys.admin })).body).toMatchObject({ key_version: 2, rotation_pending: false });
  });

  it('refuses a revoked connector’s signatures from its next poll, and its target leaves the list', async () => {
    const owner2 = consoleUser(t, 'owner');
    const x = await enabledTarget(t, owner2);
    expect((await x.connector.poll()).status).toBe(200);
    const rev = await api(t, 'POST', `${P(t)}/connectors/${x.connector.id}/revoke`, { key: t.keys.admin, body: {} });
    expect(rev.body.status).toBe('revoked');
    const poll = await x.connector.poll();
    expect(poll.status).toBe(401);
    expect(poll.body.code).toBe('connector_revoked');
    const ids = (await api(t, 'GET', `${P(t)}/targets`, { key: t.keys.admin })).body.data.map((d: { id: string }) => d.id);
    expect(ids).not.toContain(x.targetId);
    const req = await api(t, 'POST', `${P(t)}/requests`, { key: t.keys.admin, body: disk(x.targetId) });
    expect(req.body.code).toBe('target_not_enabled');
  });

  it('keeps a target disabled when the confirmed digest does not match the probe', async () => {
    const conn = await api(t, 'POST', `${P(t)}/connectors`, { key: t.keys.admin, body: { label: 'site E' } });
    const c = new TestConnector(t);
    await c.enroll(conn.body.enrollment_code);
    const tg = await api(t, 'POST', `${P(t)}/targets`, { key: t.keys.admin, body: { label: 'db 1', environment: 'production', connector_id: c.id, auth_profile_id: 'db-1' } });
    const v = await api(t, 'POST', `${P(t)}/targets/${tg.body.id}/verification-requests`, { key: t.keys.admin, body: {} });
    const job = (await c.poll()).jobs[0];
    await c.signed('/v1/remote-connector/results', { type: 'verify', target_id: job.target_id, verification_id: job.verification_id, ok: true, host_key_sha256: DIGEST, runner_version: 'test-1' });
    const cc = new ConsoleClient(t);
    await cc.signIn(owner);
    await cc.stepUp('confirm_target', tg.body.id);
    const wrong = 'SHA256:' + Buffer.alloc(32, 9).toString('base64').replace(/=+$/, '');
    const r = await cc.act('confirm_target', tg.body.id, await stepUpCode(t, owner.email), { verification_id: v.body.verification_id, host_key_sha256: wrong });
    expect(r.status).toBe(409);
    const setup = (await api(t, 'GET', `${P(t)}/setup-targets`, { key: t.keys.admin })).body.data.find((d: { id: string }) => d.id === tg.body.id);
    expect(setup).toMatchObject({ enabled: false, setup_state: 'disabled' });
  });
});

describe('reveals', () => {
  it('need the strict acknowledgement, answer no-store and are audited', async () => {
    const missing = await api(t, 'POST', `${P(t)}/targets/${target.targetId}/authority-bundle/reveal`, { key: t.keys.admin, body: {} });
    expect(missing.status).toBe(400);
    const falsy = await api(t, 'POST', `${P(t)}/targets/${target.targetId}/authority-bundle/reveal`, { key: t.keys.admin, body: { acknowledge_sensitive_data: false } });
    expect(falsy.status).toBe(400);
    const ok = await api(t, 'POST', `${P(t)}/targets/${target.targetId}/authority-bundle/reveal`, { key: t.keys.admin, body: { acknowledge_sensitive_data: true } });
    expect(ok.status).toBe(200);
    expect(ok.headers.get('cache-control')).toBe('no-store');
    expect(ok.body.bundle.split('.')).toHaveLength(2);
    const audit = (await api(t, 'GET', `${P(t)}/audit?limit=200`, { key: t.keys.admin })).body.data;
    expect(audit.some((a: { action: string; subject_id: string }) => a.action === 'target.authority_bundle_revealed' && a.subject_id === target.targetId)).toBe(true);
  });
});

describe('MCP', () => {
  it('cannot reach a hidden remote-access operation, and can reach the visible ones', async () => {
    const client = await inMemoryClient(t, t.keys.admin);
    const hidden = await execute(client, `return await api.call('remoteAccess.createConnector', { label: 'from mcp' })`);
    expect(hidden.error).toMatchObject({ status: 404, code: 'unknown_operation' });
    const shape = await execute(client, 'return { connectors: typeof api.remoteAccess.createConnector, list: typeof api.remoteAccess.listTargets }');
    expect(shape.result).toEqual({ connectors: 'undefined', list: 'function' });
    const listed = await execute(client, 'return await api.remoteAccess.listTargets({})');
    expect(listed.result.data.some((d: { id: string }) => d.id === target.targetId)).toBe(true);
  });
});
