/**
 * Automations end to end on a real server with an injectable clock: templates, states, event
 * triggers (once per event), the triage template fed by the real @sentry/node SDK, capability
 * enforcement, approvals, draft PRs in a local git repository, preview without any change, agent
 * tasks through the agent contract, and cancellation. The queue is driven with runDue().
 */
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { execFile, execFileSync } from 'node:child_process';
import { promisify } from 'node:util';
import { mkdtempSync, rmSync, writeFileSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { api, startTestServer, type TestServer } from '../helpers/server.js';
import type { AgentRunner, AgentState } from '../../src/domain/agent/contract.js';

const run = promisify(execFile);
let t: TestServer;
let clock = Date.parse('2026-03-02T08:00:00Z');
let P = '';
const tmp = mkdtempSync(join(tmpdir(), 'sightline-automations-'));

beforeAll(async () => {
  t = await startTestServer({ now: () => clock });
  P = `/v1/projects/${t.projectId}`;
});
afterAll(async () => {
  await t.close();
  rmSync(tmp, { recursive: true, force: true });
});

const admin = (method: string, path: string, body?: unknown) => api(t, method, P + path, { key: t.keys.admin, body });
/** Runs every due job, as the server's timer would. */
async function drain() {
  for (let i = 0; i < 20; i++) if ((await t.s.services.scheduler.runDue()) === 0) return;
}
async function createEnabled(body: Record<string, unknown>) {
  const c = await admin('POST', '/automations', body);
  expect(c.status, JSON.stringify(c.body)).toBe(201);
  const u = await admin('PATCH', `/automations/${c.body.id}`, { state: 'enabled' });
  expect(u.status, JSON.stringify(u.body)).toBe(200);
  return u.body;
}
async function manualRun(config: Record<string, unknown>, input?: unknown) {
  const c = await admin('POST', '/automations', { name: `manual ${Math.random()}`, config: { trigger: { type: 'manual' }, ...config } });
  expect(c.status, JSON.stringify(c.body)).toBe(201);
  const r = await admin('POST', `/automations/${c.body.id}/runs`, { input });
  expect(r.status, JSON.stringify(r.body)).toBe(202);
  await drain();
  const got = await admin('GET', `/automation-runs/${r.body.id}`);
  return { automation: c.body, run: got.body };
}

describe('automations: templates and states', () => {
  it('lists the day-one templates and creates a draft from one with overrides', async () => {
    const tl = await admin('GET', '/automation-templates');
    expect(tl.body.data.map((x: { id: string }) => x.id)).toEqual(['triage-new-errors', 'weekly-error-digest', 'release-regression-watch', 'feedback-summary', 'noisy-alert-cleanup']);
    const c = await admin('POST', '/automations', { name: 'Digest', template_id: 'weekly-error-digest', overrides: { params: { channel_id: 'ch-1' } } });
    expect(c.status).toBe(201);
    expect(c.body).toMatchObject({ state: 'draft', template_id: 'weekly-error-digest', next_run_at: null, config: { params: { channel_id: 'ch-1' }, capability: 'digest' } });

    const paused = await admin('PATCH', `/automations/${c.body.id}`, { state: 'paused' });
    expect(paused.status).toBe(409); // a draft is not running
    const on = await admin('PATCH', `/automations/${c.body.id}`, { state: 'enabled', name: 'Monday digest' });
    expect(on.body).toMatchObject({ state: 'enabled', name: 'Monday digest', next_run_at: '2026-03-02T09:00:00.000Z' });
    const off = await admin('PATCH', `/automations/${c.body.id}`, { state: 'paused' });
    expect(off.body).toMatchObject({ state: 'paused', next_run_at: null });
    expect((await admin('GET', '/automations?state=paused')).body.data.map((a: { id: string }) => a.id)).toContain(c.body.id);

    const bad = await admin('POST', '/automations', { name: 'x', config: { trigger: { type: 'schedule', cron: '61 * * * *' }, steps: [{ type: 'script', name: 's', code: 'return 1' }], capability: 'digest' } });
    expect(bad.status).toBe(400);
    const nocap = await admin('POST', '/automations', { name: 'x', config: { trigger: { type: 'manual' }, steps: [{ type: 'script', name: 's', code: 'return 1' }], capability: 'nope' } });
    expect(nocap.status).toBe(400);
    expect(nocap.body.message).toContain('nope');
  });

  it('delete removes the automation and its run history', async () => {
    const { automation, run: r } = await manualRun({ steps: [{ type: 'script', name: 's', code: 'return "hello"' }], capability: 'read-only' });
    expect(r.status).toBe('completed');
    expect((await admin('DELETE', `/automations/${automation.id}`)).status).toBe(200);
    expect((await admin('GET', `/automations/${automation.id}`)).status).toBe(404);
    expect((await admin('GET', `/automation-runs/${r.id}`)).status).toBe(404);
    expect((await api(t, 'GET', `/v1/projects/${t.otherProject.projectId}/automations`, { key: t.otherProject.adminKey })).body.data).toEqual([]);
  });
});

describe('automations: event triggers', () => {
  it('the triage template, enabled, triages a new error group sent by @sentry/node (an automatic triage run)', { timeout: 120_000 }, async () => {
    await createEnabled({ name: 'Triage', template_id: 'triage-new-errors' });
    const host = new URL(t.url).host;
    await run(process.execPath, [join(import.meta.dirname, 'fixtures/sentry-throw.mjs')], { env: { ...process.env, SIGHTLINE_DSN: `http://${t.keys.ingest}@${host}/ingest/${t.projectId}` }, timeout: 30_000 });
    const groups = await admin('GET', '/errors?status=all');
    const g = groups.body.data.find((x: { type: string }) => x.type === 'CheckoutTimeoutError');
    expect(g).toBeTruthy();
    await drain();
    const runs = await admin('GET', `/errors/${g.id}/triage-runs`);
    expect(runs.body.data).toHaveLength(1);
    expect(runs.body.data[0]).toMatchObject({ trigger: 'automatic', status: 'completed' });
    expect(runs.body.data[0].result.summary).toContain('CheckoutTimeoutError');
    const triage = (await admin('GET', '/automations')).body.data.find((a: { template_id: string }) => a.template_id === 'triage-new-errors');
    const ar = (await admin('GET', `/automations/${triage.id}/runs`)).body.data;
    expect(ar).toHaveLength(1);
    expect(ar[0]).toMatchObject({ trigger: 'event', status: 'completed' });
    const outs = (await admin('GET', `/automation-runs/${ar[0].id}/outputs`)).body.data;
    expect(outs.map((o: { kind: string }) => o.kind).sort()).toEqual(['summary', 'triage_verdict']);
    await admin('PATCH', `/automations/${triage.id}`, { state: 'paused' });
  });

  it('an event automation runs once per event, and a replayed event starts nothing', async () => {
    const a = await createEnabled({
      name: 'Feedback echo',
      config: { trigger: { type: 'event', event: 'feedback.received' }, conditions: { query: 'checkout' }, steps: [{ type: 'script', name: 'echo', code: 'return { summary: "feedback: " + input.event.message }' }], capability: 'digest' },
    });
    const f1 = await api(t, 'POST', `${P}/feedback`, { key: t.keys.ingest, body: { message: 'The checkout page is slow' } });
    await api(t, 'POST', `${P}/feedback`, { key: t.keys.ingest, body: { message: 'Love the new logo' } }); // fails the condition
    // The same event delivered twice (a replay) must not add a run.
    t.s.services.events.publish({ type: 'feedback.received', projectId: t.projectId, at: clock, feedbackId: 'replayed', message: 'checkout broke', errorGroupId: null });
    t.s.services.events.publish({ type: 'feedback.received', projectId: t.projectId, at: clock, feedbackId: 'replayed', message: 'checkout broke', errorGroupId: null });
    await drain();
    await drain();
    const runs = (await admin('GET', `/automations/${a.id}/runs`)).body.data;
    expect(runs).toHaveLength(2);
    expect(runs.every((r: { status: string; trigger: string }) => r.status === 'completed' && r.trigger === 'event')).toBe(true);
    const texts = await Promise.all(runs.map(async (r: { id: string }) => (await admin('GET', `/automation-runs/${r.id}/outputs`)).body.data[0].content.text));
    expect(texts.sort()).toEqual(['feedback: The checkout page is slow', 'feedback: checkout broke']);
    expect(f1.status).toBe(201);
    await admin('PATCH', `/automations/${a.id}`, { state: 'paused' });
  });
});

describe('automations: capabilities', () => {
  it('a run calling outside its capability fails with an error naming the operation and the capability', async () => {
    const { run: r } = await manualRun({ steps: [{ type: 'script', name: 'peek', code: 'return await api.feedback.list({})' }], capability: 'triage' });
    expect(r.status).toBe('failed');
    expect(r.error).toContain('feedback.list');
    expect(r.error).toContain('`triage`');
    expect(r.steps[0].calls[0]).toMatchObject({ operation_id: 'feedback.list', status: 403 });
  });

  it('a hidden operation is refused even when a project manifest lists it', async () => {
    const d = await admin('POST', '/automation-capabilities', { name: 'keys', description: 'x', operations: ['apiKeys.list'] });
    expect(d.status).toBe(400);
    expect(d.body.code).toBe('unknown_operation');
    const { run: r } = await manualRun({ steps: [{ type: 'script', name: 'keys', code: 'return await api.apiKeys.list({})' }], capability: 'read-only' });
    expect(r.status).toBe('failed');
    expect(r.error).toContain('apiKeys.list');
  });
});

describe('automations: approvals and draft pull requests', () => {
  it('a patch waits for approval; approve releases exactly that output; createPr makes a branch and commit', async () => {
    const repo = join(tmp, 'repo');
    execFileSync('git', ['init', '-q', '-b', 'main', repo]);
    writeFileSync(join(repo, 'app.js'), 'export const timeout = 1000;\n');
    execFileSync('git', ['-C', repo, 'add', '.']);
    execFileSync('git', ['-C', repo, '-c', 'user.name=t', '-c', 'user.email=t@t', 'commit', '-qm', 'init']);
    const diff = ['diff --git a/app.js b/app.js', '--- a/app.js', '+++ b/app.js', '@@ -1 +1 @@', '-export const timeout = 1000;', '+export const timeout = 30000;', ''].join('\n');

    const cap = await admin('POST', '/automation-capabilities', { name: 'fixer', description: 'Propose fixes', operations: ['errors.list'] });
    expect(cap.status).toBe(201);
    const { automation, run: r } = await manualRun({
      steps: [{ type: 'script', name: 'fix', code: `return { summary: 'raise the timeout', patch: { title: 'Raise checkout timeout', diff: input.input.diff } }` }],
      capability: 'fixer',
      repository: { provider: 'local', path: repo },
    }, { diff });
    expect(r.status).toBe('completed');
    const patch = r.outputs.find((o: { kind: string }) => o.kind === 'patch');
    expect(patch).toMatchObject({ needs_approval: true, status: 'pending_approval' });

    // Blocked until approved.
    const early = await admin('POST', `/automation-runs/${r.id}/create-pr`, { output_id: patch.id });
    expect(early.status).toBe(409);
    expect(execFileSync('git', ['-C', repo, 'branch', '--list']).toString()).not.toContain('sightline/');
    // An approval names the exact content.
    const wrong = await admin('POST', `/automation-runs/${r.id}/approve`, { output_id: patch.id, content_hash: 'sha256:' + '0'.repeat(64) });
    expect(wrong.status).toBe(409);
    expect(wrong.body.code).toBe('content_changed');
    // The automation's own run principal can never approve.
    const self = await t.s.core
      .invoke('automations.approve', { project_id: t.projectId, run_id: r.id, output_id: patch.id, content_hash: patch.content_hash }, { kind: 'api_key', keyId: `automation:${r.id}`, projectId: t.projectId, orgId: t.organizationId, scopes: ['*'] })
      .catch((e) => e);
    expect(self.code).toBe('self_approval');

    const ok = await admin('POST', `/automation-runs/${r.id}/approve`, { output_id: patch.id, content_hash: patch.content_hash, note: 'looks right' });
    expect(ok.status).toBe(200);
    expect(ok.body.status).toBe('approved');
    const al = await admin('GET', `/automation-runs/${r.id}/approvals`);
    expect(al.status, JSON.stringify(al.body)).toBe(200);
    const approvals = al.body.data;
    expect(approvals).toEqual([expect.objectContaining({ output_id: patch.id, content_hash: patch.content_hash, decision: 'approved', decided_by: expect.stringMatching(/^key:/), note: 'looks right' })]);
    // Only that output: the summary was never pending and stays as it was.
    const outs = (await admin('GET', `/automation-runs/${r.id}/outputs`)).body.data;
    expect(outs.find((o: { kind: string }) => o.kind === 'summary').status).toBe('final');

    const pr = await admin('POST', `/automation-runs/${r.id}/create-pr`, { output_id: patch.id });
    expect(pr.status, JSON.stringify(pr.body)).toBe(201);
    expect(pr.body).toMatchObject({ provider: 'local', branch: `sightline/automation-${r.id.slice(0, 8)}` });
    const show = execFileSync('git', ['-C', repo, 'show', `${pr.body.branch}:app.js`]).toString();
    expect(show).toBe('export const timeout = 30000;\n');
    expect(execFileSync('git', ['-C', repo, 'log', '-1', '--format=%s', pr.body.branch]).toString().trim()).toBe('Raise checkout timeout');
    expect(execFileSync('git', ['-C', repo, 'rev-parse', pr.body.branch]).toString().trim()).toBe(pr.body.commit);
    // The checkout people work in is untouched.
    expect(execFileSync('git', ['-C', repo, 'rev-parse', '--abbrev-ref', 'HEAD']).toString().trim()).toBe('main');

    clock += 60_000;
    const stats = await admin('GET', '/ai/fixes/stats');
    expect(stats.status, JSON.stringify(stats.body)).toBe(200);
    expect(stats.body).toMatchObject({ total: 1, by_source: [{ key: 'automation', count: 1 }], by_status: [{ key: 'opened', count: 1 }], by_requester: [{ key: expect.any(String), count: 1 }] });
    const timeline = await admin('GET', '/ai/fixes/timeline');
    expect(timeline.body.data.reduce((n: number, p: { dispatched: number }) => n + p.dispatched, 0)).toBe(1);
    expect(automation.id).toBeTruthy();
  });

  it('a write held for approval changes nothing until approved, then is applied', async () => {
    await api(t, 'POST', `/ingest/api/${t.projectId}/store/?sentry_key=${t.keys.ingest}`, { body: { level: 'error', exception: { values: [{ type: 'NoisyError', value: 'again' }] } } });
    const g = (await admin('GET', '/errors?status=all')).body.data.find((x: { type: string }) => x.type === 'NoisyError');
    expect(g.status).toBe('unresolved');
    const { run: r } = await manualRun({
      steps: [{ type: 'script', name: 'mute', code: `const res = await api.errors.update({ error_group_id: input.input.id, status: 'muted' }); return { summary: JSON.stringify(res) }` }],
      capability: 'error-cleanup',
    }, { id: g.id });
    expect(r.status).toBe('completed');
    expect(r.outputs.find((o: { kind: string }) => o.kind === 'summary').content.text).toContain('pending_approval');
    const w = r.outputs.find((o: { kind: string }) => o.kind === 'write');
    expect(w).toMatchObject({ status: 'pending_approval', content: { operation_id: 'errors.update', input: { error_group_id: g.id, status: 'muted' } } });
    expect((await admin('GET', `/errors/${g.id}`)).body.status).toBe('unresolved');
    const ok = await admin('POST', `/automation-runs/${r.id}/approve`, { output_id: w.id, content_hash: w.content_hash });
    expect(ok.body.status).toBe('applied');
    expect((await admin('GET', `/errors/${g.id}`)).body.status).toBe('muted');
    const again = await admin('POST', `/automation-runs/${r.id}/reject`, { output_id: w.id, content_hash: w.content_hash });
    expect(again.status).toBe(409);
  });
});

/** Every table's row count and content (virtual tables through their shadow tables: a contentless one cannot be scanned). */
function snapshot(): Record<string, unknown[]> {
  const tables = t.s.db
    .prepare("SELECT name FROM sqlite_master WHERE type = 'table' AND name NOT LIKE 'sqlite_%' AND sql NOT LIKE 'CREATE VIRTUAL TABLE%' ORDER BY name")
    .pluck()
    .all() as string[];
  return Object.fromEntries(tables.map((n) => [n, (t.s.db.prepare(`SELECT * FROM "${n}"`).all() as unknown[]).map((r) => JSON.stringify(r, (_k, v) => (Buffer.isBuffer(v) ? v.toString('hex') : typeof v === 'bigint' ? String(v) : v))).sort()]));
}

describe('automations.preview', () => {
  it('shows what would have triggered and one dry run, and changes nothing in the database', async () => {
    await api(t, 'POST', `/ingest/api/${t.projectId}/store/?sentry_key=${t.keys.ingest}`, { body: { level: 'error', exception: { values: [{ type: 'PreviewError', value: 'boom' }] } } });
    await drain();
    const before = snapshot();
    const r = await t.s.core.invoke(
      'automations.preview',
      { project_id: t.projectId, template_id: 'triage-new-errors', window_hours: 48 },
      { kind: 'api_key', keyId: 'preview-test', projectId: t.projectId, orgId: t.organizationId, scopes: ['*'] },
    );
    const w = r.value as any;
    expect(w.triggers.length).toBeGreaterThan(0);
    expect(w.triggers.some((x: any) => x.event.title.includes('PreviewError'))).toBe(true);
    expect(w.run.status).toBe('completed');
    const write = w.run.outputs.find((o: any) => o.kind === 'write');
    expect(write).toMatchObject({ status: 'dry_run', content: { operation_id: 'errors.createTriage' } });
    const sched = await t.s.core.invoke(
      'automations.preview',
      { project_id: t.projectId, template_id: 'weekly-error-digest', overrides: { params: { channel_id: 'c1' } }, window_hours: 720 },
      { kind: 'api_key', keyId: 'preview-test', projectId: t.projectId, orgId: t.organizationId, scopes: ['*'] },
    );
    expect((sched.value as any).triggers.length).toBe(4); // Mondays 09:00 in the 30 days before 2026-03-02 08:00
    expect((sched.value as any).run.outputs.find((o: any) => o.kind === 'message').status).toBe('dry_run');
    expect(snapshot()).toEqual(before);
  });

  it('reads nothing the caller could not read itself', async () => {
    const readOnly = t.mintKey(['automations:read']);
    const r = await api(t, 'POST', `${P}/automations/preview`, {
      key: readOnly,
      body: { config: { trigger: { type: 'event', event: 'error.group.created' }, steps: [{ type: 'script', name: 's', code: 'return await api.errors.list({})' }], capability: 'read-only' }, window_hours: 48 },
    });
    expect(r.status).toBe(200);
    expect(r.body.triggers).toEqual([]);
    expect(r.body.run.status).toBe('failed');
    expect(r.body.run.error).toContain('errors:read');
  });
});

describe('automations.preview stops with its caller', () => {
  // Issue 10: the caller's signal (an MCP execute's deadline, a REST client hanging up) reaches the
  // preview's own script run, which is cancelled instead of running its whole time limit for nobody.
  it('cancels the dry run\'s script when the signal aborts', async () => {
    const ac = new AbortController();
    const pending = t.s.core.invoke(
      'automations.preview',
      { project_id: t.projectId, config: { trigger: { type: 'manual' }, steps: [{ type: 'script', name: 'spin', code: 'while (true) {}' }], capability: 'read-only', limits: { timeout_ms: 20_000, max_calls: 10 } } },
      { kind: 'api_key', keyId: 'preview-test', projectId: t.projectId, orgId: t.organizationId, scopes: ['*'] },
      { signal: ac.signal },
    );
    setTimeout(() => ac.abort(), 300);
    const w = (await pending).value as any;
    expect(w.run.status).toBe('cancelled');
    expect(w.run.steps[0].status).toBe('cancelled');
  });
});

describe('automations: agent tasks and channels (agent contract)', () => {
  it('fails an agent task clearly without an agent runner, runs it with one, and respects the budget stage', async () => {
    const step = { type: 'agent', name: 'investigate', prompt: 'Why did checkout fail?', skills: ['triage-checklist'] };
    expect((await admin('POST', '/automation-skills', { name: 'triage-checklist', description: 'How we triage', content: 'Look at the release first.' })).status).toBe(201);
    // The server wires the real agent; this test swaps in none, then fakes, and restores it at the end.
    const real = { runner: t.s.services.agentRunner, state: t.s.services.agentState };
    t.s.services.agentRunner = undefined;
    t.s.services.agentState = undefined;
    const none = await manualRun({ steps: [step], capability: 'read-only' });
    expect(none.run.status).toBe('failed');
    expect(none.run.error).toContain('no agent runner configured');

    const seen: Parameters<AgentRunner['run']>[0][] = [];
    t.s.services.agentRunner = { run: async (o) => (seen.push(o), { text: 'The gateway timed out.', answered_by: 'fake', tool_calls: [] }) };
    let stage: 'normal' | 'exhausted' = 'normal';
    const sent: string[] = [];
    t.s.services.agentState = {
      context: () => ({ settings: {} as never, memory: [], skills: [], usage: { stage, used_percent: 0, wakes: 0, alerts_posted: 0 } }),
      sendToChannel: (_p: string, ch: string, m: { text: string }) => (sent.push(`${ch}:${m.text}`), 'delivery-1'),
    } as unknown as AgentState;
    try {
      const ok = await manualRun({ steps: [step], capability: 'read-only' });
      expect(ok.run.status).toBe('completed');
      expect(ok.run.outputs[0].content.text).toBe('The gateway timed out.');
      expect(seen[0]).toMatchObject({ kind: 'automation', prompt: 'Why did checkout fail?', projectId: t.projectId });
      expect(seen[0]!.instructions).toContain('Look at the release first.');

      // Automatic runs of agent tasks stop when the budget is exhausted.
      stage = 'exhausted';
      const a = await createEnabled({ name: 'agent on feedback', config: { trigger: { type: 'event', event: 'feedback.received' }, steps: [step], capability: 'read-only' } });
      await api(t, 'POST', `${P}/feedback`, { key: t.keys.ingest, body: { message: 'agent please' } });
      await drain();
      const runs = (await admin('GET', `/automations/${a.id}/runs`)).body.data;
      expect(runs[0]).toMatchObject({ status: 'failed', error: expect.stringContaining('exhausted') });
      await admin('PATCH', `/automations/${a.id}`, { state: 'paused' });

      // A message waits for approval, then goes through the agent's channels.
      const m = await manualRun({ steps: [{ type: 'script', name: 'post', code: `return { message: { channel_id: 'ops', title: 'Hi', text: 'digest' } }` }], capability: 'digest' });
      const msg = m.run.outputs[0];
      expect(msg.status).toBe('pending_approval');
      expect(sent).toEqual([]);
      const ap = await admin('POST', `/automation-runs/${m.run.id}/approve`, { output_id: msg.id, content_hash: msg.content_hash });
      expect(ap.body).toMatchObject({ status: 'delivered', detail: { delivery_id: 'delivery-1' } });
      expect(sent).toEqual(['ops:digest']);
    } finally {
      t.s.services.agentRunner = undefined;
      t.s.services.agentState = undefined;
    }
    // Without the agent's channels, an approved message stays undelivered with the reason.
    const u = await manualRun({ steps: [{ type: 'script', name: 'post', code: `return { message: { channel_id: 'ops', title: 'Hi', text: 'x' } }` }], capability: 'digest' });
    const ap2 = await admin('POST', `/automation-runs/${u.run.id}/approve`, { output_id: u.run.outputs[0].id, content_hash: u.run.outputs[0].content_hash });
    expect(ap2.body.status).toBe('undelivered');
    expect(ap2.body.detail.reason).toContain('no channel service configured');
    t.s.services.agentRunner = real.runner;
    t.s.services.agentState = real.state;
  });

  it('at budget stage conserve, automatic runs propose no patches (manual runs still do)', async () => {
    t.s.services.agentState = { context: () => ({ usage: { stage: 'conserve' } }) } as unknown as AgentState;
    try {
      const step = { type: 'script', name: 'fix', code: `return { patch: { title: 'fix', diff: 'diff --git a/x b/x' } }` };
      const a = await createEnabled({ name: 'auto fix', config: { trigger: { type: 'event', event: 'feedback.received' }, steps: [step], capability: 'read-only' } });
      await api(t, 'POST', `${P}/feedback`, { key: t.keys.ingest, body: { message: 'please fix' } });
      await drain();
      const [r] = (await admin('GET', `/automations/${a.id}/runs`)).body.data;
      const outs = (await admin('GET', `/automation-runs/${r.id}/outputs`)).body.data;
      expect(outs).toEqual([expect.objectContaining({ kind: 'patch', status: 'blocked', needs_approval: false, detail: { reason: expect.stringContaining('conserve') } })]);
      await admin('PATCH', `/automations/${a.id}`, { state: 'paused' });
      const manual = await manualRun({ steps: [step], capability: 'read-only' });
      expect(manual.run.outputs[0]).toMatchObject({ kind: 'patch', status: 'pending_approval' });
    } finally {
      t.s.services.agentState = undefined;
    }
  });

  it('skills follow the agent skill rules', async () => {
    expect((await admin('POST', '/automation-skills', { name: 'Bad Name', description: 'x', content: 'y' })).status).toBe(400);
    expect((await admin('POST', '/automation-skills', { name: 'ok', description: 'x', content: 'y'.repeat(12_001) })).status).toBe(400);
    const first = await admin('POST', '/automation-skills', { name: 'release-notes', description: 'x', content: 'v1' });
    const replaced = await admin('POST', '/automation-skills', { name: 'release-notes', description: 'x', content: 'v2' });
    expect([first.status, replaced.status]).toEqual([201, 200]);
    expect(replaced.body.id).toBe(first.body.id);
    const s = await admin('GET', '/automation-skills/release-notes');
    expect(s.body.content).toBe('v2');
    expect((await admin('GET', '/automation-skills')).body.data.map((x: { name: string }) => x.name)).toContain('release-notes');
    expect((await admin('DELETE', `/automation-skills/${s.body.id}`)).status).toBe(200);
    expect((await admin('GET', `/automation-skills/${s.body.id}`)).status).toBe(404);
  });
});

describe('automations.cancelRun', () => {
  it('cancels a queued run so it never runs', async () => {
    const c = await admin('POST', '/automations', { name: 'to cancel', config: { trigger: { type: 'manual' }, steps: [{ type: 'script', name: 's', code: 'return "ran"' }], capability: 'read-only' } });
    const r = await admin('POST', `/automations/${c.body.id}/runs`, {});
    const x = await admin('POST', `/automation-runs/${r.body.id}/cancel`);
    expect(x.body.status).toBe('cancelled');
    await drain();
    const got = await admin('GET', `/automation-runs/${r.body.id}`);
    expect(got.body).toMatchObject({ status: 'cancelled', outputs: [] });
    expect((await admin('POST', `/automation-runs/${r.body.id}/cancel`)).status).toBe(409);
  });
});

describe('automations: run limits and cancelling a running run', () => {
  it('a run over its call limit fails with a clear error', async () => {
    const { run: r } = await manualRun({
      steps: [{ type: 'script', name: 'loop', code: 'for (let i = 0; i < 10; i++) await api.errors.list({ limit: 1 }); return "done"' }],
      capability: 'read-only',
      limits: { timeout_ms: 30_000, max_calls: 3 },
    });
    expect(r.status).toBe('failed');
    expect(r.error).toMatch(/call/i);
    expect(r.steps[0].calls.filter((c: { status: number }) => c.status === 200)).toHaveLength(3);
  });

  it('cancelRun stops a running script: later calls are refused and its outputs are dropped', async () => {
    const c = await admin('POST', '/automations', {
      name: 'long',
      config: { trigger: { type: 'manual' }, steps: [{ type: 'script', name: 'loop', code: 'for (let i = 0; i < 900; i++) await api.errors.list({ limit: 1 }); return { summary: "finished" }' }], capability: 'read-only', limits: { timeout_ms: 60_000, max_calls: 1000 } },
    });
    const r = await admin('POST', `/automations/${c.body.id}/runs`, {});
    const pass = t.s.services.scheduler.runDue();
    for (let i = 0; i < 500 && t.s.services.automations.runAny(r.body.id)!.status !== 'running'; i++) await new Promise((res) => setTimeout(res, 10));
    const x = await admin('POST', `/automation-runs/${r.body.id}/cancel`);
    expect(x.status).toBe(200);
    expect(x.body.status).toBe('cancelled');
    await pass;
    const got = await admin('GET', `/automation-runs/${r.body.id}`);
    expect(got.body).toMatchObject({ status: 'cancelled', outputs: [] });
    expect(got.body.steps[0].status).toBe('cancelled');
  });
});
