/**
 * Issue 10: a REST request whose client hangs up before the answer stops its handler's work
 * (HandlerContext.signal, aborted when the connection closes) instead of running on for nobody.
 * The probe operations work in slices, as a long read or a nested execute does, and record each
 * slice they run on the server; a request that completes is not aborted, and a write goes on to
 * the end (its effect is what was asked for: threads.ask stores the answer whatever the caller does).
 */
import { z } from 'zod';
import { afterAll, describe, expect, it } from 'vitest';
import { defineOperation } from '../../operations/define.js';
import { catalogue } from '../../operations/index.js';
import { startTestServer } from '../helpers/server.js';

const SLICES = 10;
const SLICE_MS = 60;
let ran = 0;
let abortedSeen = 0;

async function slices(signal: AbortSignal | undefined): Promise<{ slices: number }> {
  let n = 0;
  for (let i = 0; i < SLICES; i++) {
    if (signal?.aborted) {
      abortedSeen++;
      break;
    }
    await new Promise((r) => setTimeout(r, SLICE_MS));
    ran++;
    n++;
  }
  return { slices: n };
}

/** A test-only operation that works in slices, as a long read or write does. */
const sliced = (operationId: string, method: 'GET' | 'POST', path: string, kind: 'read' | 'write') =>
  defineOperation({
    operationId,
    tag: 'probe',
    summary: `Test only: a slow ${kind} that works in slices`,
    description: 'Test only.',
    method,
    path: `/v1/projects/{project_id}/probe/${path}`,
    scopes: [kind],
    risk: kind,
    sensitive: false,
    projectScoped: true,
    input: z.object({ project_id: z.string() }),
    output: z.object({ slices: z.number() }),
    errors: [],
    handler: (_input, ctx) => slices(ctx.signal),
  });

const probeWrite = sliced('probe.slowWrite', 'POST', 'slow-write', 'write');
const probe = sliced('probe.slowRest', 'GET', 'slow-rest', 'read');

describe('a REST request whose client hangs up', async () => {
  const t = await startTestServer({ options: { operations: [...catalogue, probe, probeWrite] } });
  afterAll(() => t.close());
  const url = `${t.url}/v1/projects/${t.projectId}/probe/slow-rest`;

  it('runs to the end when the client waits for the answer', async () => {
    ran = 0;
    abortedSeen = 0;
    const r = await fetch(url, { headers: { 'x-service-key': t.keys.admin } });
    expect(r.status).toBe(200);
    expect(((await r.json()) as { slices: number }).slices).toBe(SLICES);
    expect(abortedSeen).toBe(0);
  });

  it('stops the handler at its next slice once the client is gone', async () => {
    ran = 0;
    abortedSeen = 0;
    const ac = new AbortController();
    const req = fetch(url, { headers: { 'x-service-key': t.keys.admin }, signal: ac.signal });
    // Hang up once the handler is under way.
    while (ran < 2) await new Promise((r) => setTimeout(r, 10));
    ac.abort();
    await expect(req).rejects.toThrow();
    // Wait as long as the whole handler takes: slices still running would show up here.
    await new Promise((r) => setTimeout(r, SLICES * SLICE_MS + 300));
    expect(abortedSeen).toBe(1);
    expect(ran).toBeLessThan(SLICES);
  });

  it('lets a write run to the end even when the client is gone', async () => {
    ran = 0;
    abortedSeen = 0;
    const ac = new AbortController();
    const req = fetch(`${t.url}/v1/projects/${t.projectId}/probe/slow-write`, { method: 'POST', headers: { 'x-service-key': t.keys.admin }, signal: ac.signal });
    while (ran < 2) await new Promise((r) => setTimeout(r, 10));
    ac.abort();
    await expect(req).rejects.toThrow();
    await new Promise((r) => setTimeout(r, SLICES * SLICE_MS + 300));
    expect(abortedSeen).toBe(0);
    expect(ran).toBe(SLICES);
  });
});
