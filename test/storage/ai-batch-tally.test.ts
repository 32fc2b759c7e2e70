/**
 * Rollups and session/user totals are tallied per write batch (createWriteBatcher participant) and
 * written once per key before the commit. The stored tables must be exactly what the same writes
 * give one transaction at a time: the same session in two jobs, replacements across jobs, a job that
 * rolls back (its tally left out), and a project written outside any batch.
 */
import { mkdtempSync, rmSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { afterAll, describe, expect, it } from 'vitest';
import { openDatabase, migrate, type Db } from '../../src/storage/db.js';
import { createAiRepo } from '../../src/storage/ai-repo.js';
import { createWriteBatcher } from '../../src/storage/write-batcher.js';
import { emptyDraft, finalizeObservation, type ObservationRow } from '../../src/domain/ai/observation.js';

const dir = mkdtempSync(join(tmpdir(), 'sightline-ai-tally-'));
const dbs: Db[] = [];
afterAll(() => {
  for (const d of dbs) d.close();
  rmSync(dir, { recursive: true, force: true });
});
function open(name: string) {
  const db = openDatabase(join(dir, name));
  migrate(db);
  dbs.push(db);
  return { db, repo: createAiRepo(db) };
}

const T0 = Date.parse('2026-11-01T00:00:00Z');
function obs(id: string, o: { at: number; session: string; user: string; type?: 'generation' | 'tool_call' | 'agent_step'; model?: string; cost?: number; status?: 'ok' | 'error' }): ObservationRow {
  const gen = (o.type ?? 'generation') === 'generation';
  return finalizeObservation(
    emptyDraft({
      observation_id: id,
      trace_id: `t-${id.slice(0, 2)}`,
      started_ms: T0 + o.at,
      ended_ms: T0 + o.at + 100,
      observation_type: o.type ?? 'generation',
      status: o.status ?? 'ok',
      model: gen ? (o.model ?? 'gpt-4o') : '',
      provider: gen ? 'openai' : '',
      session_id: o.session,
      user_id: o.user,
      prompt_tokens: gen ? 100 : null,
      completion_tokens: gen ? 10 : null,
      // Binary fractions: sums are exact whatever the order of addition.
      cost_usd: o.cost ?? (gen ? 0.25 : null),
    }),
    { receivedMs: T0, projectPrivacy: false },
  );
}

// Jobs: [project, rows, throws after writing?]
const jobs: [string, ObservationRow[], boolean][] = [
  ['1', [obs('a1', { at: 1000, session: 's1', user: 'u1' }), obs('a2', { at: 5000, session: 's1', user: 'u1', type: 'tool_call' })], false],
  ['1', [obs('b1', { at: 500, session: 's1', user: 'u2', model: 'gpt-4o-mini', cost: 0.5 }), obs('b2', { at: 3_700_000, session: 's2', user: 'u1', status: 'error' })], false],
  // Rolls back: none of this may count.
  ['1', [obs('c1', { at: 200, session: 's1', user: 'u1', cost: 8 }), obs('c2', { at: 9_000_000, session: 's3', user: 'u3' })], true],
  // Replaces a1 (other session, hour, model) and re-sends b1 unchanged (a no-op).
  ['1', [obs('a1', { at: 7_300_000, session: 's2', user: 'u2', model: 'x-local', cost: 0.125 }), obs('b1', { at: 500, session: 's1', user: 'u2', model: 'gpt-4o-mini', cost: 0.5 })], false],
  ['2', [obs('d1', { at: 1000, session: 's1', user: 'u1' })], false],
  ['1', [obs('e1', { at: 2000, session: 's1', user: 'u1', type: 'agent_step' })], false],
];

function tables(db: Db) {
  return {
    rollups: db.prepare('SELECT * FROM agent_obs_1h ORDER BY project_id, hour_ms, dim, value').all(),
    sessions: db.prepare('SELECT * FROM agent_sessions ORDER BY project_id, session_id').all(),
    users: db.prepare('SELECT * FROM agent_users ORDER BY project_id, user_id').all(),
    traces: db.prepare('SELECT * FROM agent_obs_traces ORDER BY project_id, trace_id').all(),
    observations: db.prepare('SELECT * FROM agent_observations ORDER BY project_id, observation_id').all(),
  };
}

describe('AI rollups tallied per write batch', () => {
  it('store exactly what one transaction per write stores', async () => {
    const one = open('one.db');
    for (const [pid, rows, fail] of jobs) {
      if (fail) continue; // a rolled-back job leaves nothing
      one.db.transaction(() => one.repo.writeObservations(pid, rows.map((r) => ({ ...r }))))();
    }

    const batched = open('batched.db');
    const run = createWriteBatcher(batched.db, 512, [batched.repo.batchParticipant]);
    const outcomes = await Promise.allSettled(
      jobs.map(([pid, rows, fail]) =>
        run(() => {
          batched.repo.writeObservations(pid, rows.map((r) => ({ ...r })));
          if (fail) throw new Error('job fails after writing');
        }),
      ),
    );
    expect(outcomes.map((o) => o.status)).toEqual(jobs.map(([, , fail]) => (fail ? 'rejected' : 'fulfilled')));

    const a = tables(one.db);
    const b = tables(batched.db);
    // received_ms is the same in both (finalizeObservation's receivedMs); rowids may differ for observations.
    const strip = (rows: unknown[]) => rows.map((r) => ({ ...(r as Record<string, unknown>), id: undefined }));
    expect(b.rollups).toEqual(a.rollups);
    expect(b.sessions).toEqual(a.sessions);
    expect(b.users).toEqual(a.users);
    expect(b.traces).toEqual(a.traces);
    expect(strip(b.observations)).toEqual(strip(a.observations));
    // s1 in project 1 counts a1, a2, b1 and e1: a1 moved to s2, and a write that only takes rows away
    // from a session leaves its totals as they were (an outer bound, as before batching).
    const s1 = b.sessions.find((s) => (s as { project_id: number; session_id: string }).project_id === 1 && (s as { session_id: string }).session_id === 's1') as { n: number; first_ms: number };
    expect(s1.n).toBe(4);
    expect(s1.first_ms).toBe(T0 + 500);
  });

  it('writes at once outside a batch', () => {
    const x = open('alone.db');
    x.db.transaction(() => x.repo.writeObservations('1', [obs('z1', { at: 1000, session: 's9', user: 'u9' })]))();
    expect(x.db.prepare("SELECT n FROM agent_sessions WHERE session_id = 's9'").pluck().get()).toBe(1);
    expect(x.db.prepare("SELECT sum(n) FROM agent_obs_1h WHERE dim = ''").pluck().get()).toBe(1);
  });
});
