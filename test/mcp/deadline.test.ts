/**
 * Issue 10 item 2, last sentence: calls an execute already sent must not keep running once its
 * wall clock has run out. A call in flight at the deadline is told to stop (HandlerContext.signal)
 * and no new call starts after it. The probe operation below works in slices, as a long read or a
 * wait on a model does, and records each slice it runs on the server.
 */
import { z } from 'zod';
import { afterAll, describe, expect, it } from 'vitest';
import { defineOperation } from '../../operations/define.js';
import { catalogue } from '../../operations/index.js';
import { createQuickJsExecutor } from '../../sandbox/quickjs-executor.js';
import { startTestServer } from '../helpers/server.js';
import { execute, inMemoryClient } from './helpers.js';

const SLICES = 10;
const SLICE_MS = 60;
/** When each slice of a probe call ran (server side). */
const ran: number[] = [];
/** When each probe call started. */
const started: number[] = [];

const probe = defineOperation({
  operationId: 'probe.slow',
  tag: 'probe',
  summary: 'Test only: a slow read that works in slices',
  description: 'Test only.',
  method: 'GET',
  path: '/v1/projects/{project_id}/probe/slow',
  scopes: ['read'],
  risk: 'read',
  sensitive: false,
  projectScoped: true,
  input: z.object({ project_id: z.string() }),
  output: z.object({ slices: z.number() }),
  errors: [],
  async handler(_input, ctx) {
    started.push(Date.now());
    let n = 0;
    for (let i = 0; i < SLICES; i++) {
      if (ctx.signal?.aborted) break;
      await new Promise((r) => setTimeout(r, SLICE_MS));
      ran.push(Date.now());
      n++;
    }
    return { slices: n };
  },
});

describe('an execute past its wall clock', async () => {
  const t = await startTestServer({ options: { operations: [...catalogue, probe] } });
  afterAll(() => t.close());
  const limits = { wallClockMs: 1_000 };
  const executor = createQuickJsExecutor(limits);
  t.s.onClose.push(() => executor.close());
  const client = await inMemoryClient(t, t.keys.admin, { executor, limits });

  it('stops the calls it had in flight and starts none after its deadline', async () => {
    expect((await execute(client, 'return 1')).result).toBe(1); // warm the worker
    ran.length = 0;
    started.length = 0;
    // Four slow calls at a time, again and again: far more work than fits in the wall clock.
    const t0 = Date.now();
    const out = await execute(client, 'for (;;) await Promise.all([1, 2, 3, 4].map(() => api.probe.slow({})))');
    const answeredAt = Date.now();
    expect(out.error?.name === 'TimeoutError' || out.error?.code === 'deadline_exceeded', JSON.stringify(out.error)).toBe(true);
    // Wait as long as a call takes in full: anything still running would show up here.
    await new Promise((r) => setTimeout(r, SLICES * SLICE_MS + 300));
    const deadline = t0 + limits.wallClockMs;
    const afterAnswer = ran.filter((at) => at > answeredAt + SLICE_MS).length;
    console.log(`deadline: ${started.length} probe calls started, ${ran.length} slices ran, ${afterAnswer} of them after the execute answered`);
    expect(started.length).toBeGreaterThan(0);
    // No call started after the answer (the deadline has passed by then).
    expect(started.filter((at) => at > answeredAt).length).toBe(0);
    // Calls in flight at the deadline stopped at their next slice: nothing ran on after the answer.
    expect(afterAnswer).toBe(0);
    expect(ran.filter((at) => at > deadline + 2 * SLICE_MS + 500).length).toBe(0);
  });
});
