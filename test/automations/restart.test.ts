/**
 * Automation runs survive restarts: a cron automation fires at the right minutes in its time zone
 * (across a DST change and a restart that slept through a fire time), and a SIGKILLed server's due
 * runs are resumed by the next process, none twice.
 */
import { afterAll, describe, expect, it } from 'vitest';
import { spawn } from 'node:child_process';
import { mkdtempSync, rmSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { fileURLToPath } from 'node:url';
import { createSightline, type Sightline } from '../../src/server.js';
import { bootstrapOrganization } from '../../src/core/bootstrap.js';
import type { ApiKeyPrincipal } from '../../src/core/principal.js';

const dir = mkdtempSync(join(tmpdir(), 'sightline-automation-restart-'));
afterAll(() => rmSync(dir, { recursive: true, force: true }));
const CHILD = fileURLToPath(new URL('./fixtures/automation-child.mjs', import.meta.url));

const open = (file: string, now: () => number) => createSightline({ dbFile: file, logLevel: 'silent', port: 0, host: '127.0.0.1' }, { now });
const admin = (p: { project_id: string; organization_id: string }): ApiKeyPrincipal => ({ kind: 'api_key', keyId: 'test', projectId: p.project_id, orgId: p.organization_id, scopes: ['*'] });
async function call(s: Sightline, who: ApiKeyPrincipal, op: string, input: Record<string, unknown>): Promise<any> {
  return (await s.core.invoke(op, { project_id: who.projectId, ...input }, who)).value;
}
async function drain(s: Sightline) {
  for (let i = 0; i < 20; i++) if ((await s.services.scheduler.runDue()) === 0) return;
}

describe('cron automations across a restart', () => {
  it('fire at 09:30 New York time, before and after the DST change, and catch up the fire time the server slept through', { timeout: 120_000 }, async () => {
    const file = join(dir, 'cron.db');
    let clock = Date.parse('2026-03-07T12:00:00Z');
    const s1 = open(file, () => clock);
    const who = admin(bootstrapOrganization(s1.services, { org: 'o', project: 'p', email: 'o@x.test', now: clock }));
    const a = await call(s1, who, 'automations.create', {
      name: 'morning',
      config: { trigger: { type: 'schedule', cron: '30 9 * * *', timezone: 'America/New_York' }, steps: [{ type: 'script', name: 's', code: 'return "fired for " + input.scheduled_for' }], capability: 'read-only' },
    });
    const on = await call(s1, who, 'automations.update', { automation_id: a.id, state: 'enabled' });
    expect(on.next_run_at).toBe('2026-03-07T14:30:00.000Z'); // EST, UTC-5

    clock = Date.parse('2026-03-07T14:29:59Z');
    await drain(s1);
    expect((await call(s1, who, 'automations.listRuns', { automation_id: a.id })).total).toBe(0);
    clock = Date.parse('2026-03-07T14:30:00Z');
    await drain(s1);
    expect((await call(s1, who, 'automations.listRuns', { automation_id: a.id })).total).toBe(1);
    await s1.close();

    // Down through the next fire time (09:30 EDT = 13:30Z on March 8); the next process catches up once.
    clock = Date.parse('2026-03-08T15:00:00Z');
    const s2 = open(file, () => clock);
    await drain(s2);
    await drain(s2);
    const runs = await call(s2, who, 'automations.listRuns', { automation_id: a.id });
    expect(runs.total).toBe(2);
    const fired = [];
    for (const r of runs.data) fired.push((await call(s2, who, 'automations.getRun', { run_id: r.id })).input.scheduled_for);
    expect(fired.sort()).toEqual(['2026-03-07T14:30:00.000Z', '2026-03-08T13:30:00.000Z']);
    expect(runs.data.every((r: { status: string }) => r.status === 'completed')).toBe(true);
    expect((await call(s2, who, 'automations.get', { automation_id: a.id })).next_run_at).toBe('2026-03-09T13:30:00.000Z');
    await s2.close();
  });
});

describe('automation runs across a SIGKILL', () => {
  // A child process starting a whole server is slow on a loaded machine: a generous limit, no timing assertion.
  it('resumes the run the killed process was inside and the one it had not started, and never reruns a committed one', { timeout: 180_000 }, async () => {
    const file = join(dir, 'kill.db');
    const s0 = open(file, Date.now);
    const who = admin(bootstrapOrganization(s0.services, { org: 'o', project: 'p', email: 'o@x.test', now: Date.now() }));
    const quick = await call(s0, who, 'automations.create', { name: 'quick', config: { trigger: { type: 'manual' }, steps: [{ type: 'script', name: 's', code: 'return "quick " + input.input' }], capability: 'read-only' } });
    const agent = await call(s0, who, 'automations.create', { name: 'agent', config: { trigger: { type: 'manual' }, steps: [{ type: 'agent', name: 'a', prompt: 'look' }], capability: 'read-only' } });
    const r1 = await call(s0, who, 'automations.triggerRun', { automation_id: quick.id, input: 1 });
    const r2 = await call(s0, who, 'automations.triggerRun', { automation_id: agent.id });
    const r3 = await call(s0, who, 'automations.triggerRun', { automation_id: quick.id, input: 3 }); // over the concurrency limit of 2: waits
    await s0.close();

    const child = spawn(process.execPath, [CHILD, file, r1.id], { stdio: ['ignore', 'pipe', 'inherit'] });
    await new Promise<void>((resolve, reject) => {
      child.stdout.on('data', (d: Buffer) => d.toString().includes('hanging') && resolve());
      child.on('exit', (code) => reject(new Error(`child exited early (${code})`)));
    });
    child.removeAllListeners('exit');
    const exited = new Promise((r) => child.on('exit', r));
    child.kill('SIGKILL');
    await exited;

    // The dead process's leases (leader 30 s, job 2 min) expire; the next process takes over.
    const later = Date.now() + 121_000;
    const s = open(file, () => later);
    s.services.agentRunner = { run: async () => ({ text: 'looked', answered_by: 'fake', tool_calls: [] }) };
    await drain(s);
    await drain(s);
    const get = (id: string) => call(s, who, 'automations.getRun', { run_id: id });
    const [g1, g2, g3] = [await get(r1.id), await get(r2.id), await get(r3.id)];
    expect([g1.status, g2.status, g3.status]).toEqual(['completed', 'completed', 'completed']);
    expect(g1.attempts).toBe(1); // committed by the child, not run again
    expect(g2.attempts).toBe(2); // interrupted by the kill, run again once
    expect(g3.attempts).toBe(1);
    expect(g1.outputs.map((o: any) => o.content.text)).toEqual(['quick 1']);
    expect(g2.outputs.map((o: any) => o.content.text)).toEqual(['looked']);
    expect(g3.outputs.map((o: any) => o.content.text)).toEqual(['quick 3']);
    await s.close();
  });
});
