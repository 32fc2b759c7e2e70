/**
 * The hourly rollups answer exactly what the rows answer, for windows with partial hours at both
 * edges, after replacements (same observation id) that move a row to another hour and dimension.
 */
import { mkdtempSync, rmSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { afterAll, describe, expect, it } from 'vitest';
import { openDatabase } from '../../src/storage/db.js';
import { createAiRepo } from '../../src/storage/ai-repo.js';
import { emptyDraft, finalizeObservation, FLAG_COLUMNS } from '../../src/domain/ai/observation.js';

const dir = mkdtempSync(join(tmpdir(), 'sightline-ai-'));
const db = openDatabase(join(dir, 'ai.db'));
const repo = createAiRepo(db);
afterAll(() => {
  db.close();
  rmSync(dir, { recursive: true, force: true });
});

const T0 = Date.parse('2026-11-01T00:00:00Z');
let seed = 7;
const rnd = () => ((seed = (seed * 1103515245 + 12345) % 2 ** 31) / 2 ** 31);
const pick = <T,>(xs: T[]) => xs[Math.floor(rnd() * xs.length)]!;

function row(id: string) {
  const gen = rnd() < 0.6;
  return finalizeObservation(
    emptyDraft({
      observation_id: id,
      started_ms: T0 + Math.floor(rnd() * 30 * 3_600_000),
      observation_type: gen ? 'generation' : pick(['tool_call', 'agent_step']),
      status: rnd() < 0.1 ? 'error' : 'ok',
      model: gen ? pick(['gpt-4o', 'gpt-4o-mini', 'x-local']) : '',
      provider: gen && rnd() < 0.8 ? 'openai' : '',
      agent_id: pick(['a', 'b']),
      session_id: pick(['s1', 's2', 's3', '']),
      user_id: pick(['u1', 'u2', '']),
      trace_id: rnd() < 0.9 ? 't' : '',
      prompt_tokens: rnd() < 0.8 ? Math.floor(rnd() * 500) : null,
      completion_tokens: rnd() < 0.8 ? Math.floor(rnd() * 100) : null,
      input: rnd() < 0.7 ? { messages: [{ role: 'user', content: 'q' }] } : null,
      output: rnd() < 0.7 ? { messages: [{ role: 'assistant', content: 'a' }] } : null,
      ended_ms: 0,
    }),
    { receivedMs: T0, projectPrivacy: false },
  );
}

function rawSums(from: number, to: number, agent?: string) {
  return db
    .prepare(
      `SELECT count(*) AS n, ${FLAG_COLUMNS.map((f) => `COALESCE(SUM(${f}), 0) AS ${f}`).join(', ')} FROM agent_observations
       WHERE project_id = 1 AND started_ms >= ? AND started_ms < ?${agent ? ' AND agent_id = ?' : ''}`,
    )
    .get(from, to, ...(agent ? [agent] : []));
}

describe('AI hourly rollups', () => {
  it('match the rows for windows with partial edge hours, also after replacements', () => {
    const rows = Array.from({ length: 600 }, (_, i) => row(`o${i}`));
    for (const r of rows) if (r.started_ms < T0 + 1000) r.started_ms = T0 + 1000;
    db.transaction(() => repo.writeObservations('1', rows))();
    // Replace 100 of them with different hours, types and sessions.
    db.transaction(() => repo.writeObservations('1', Array.from({ length: 100 }, (_, i) => row(`o${i * 3}`))))();
    const windows: [number, number][] = [
      [T0, T0 + 30 * 3_600_000],
      [T0 + 1_234_567, T0 + 17 * 3_600_000 + 999],
      [T0 + 5 * 3_600_000 + 10, T0 + 5 * 3_600_000 + 2_000_000],
    ];
    for (const [from, to] of windows) {
      expect(repo.qualitySums('1', from, to, {})).toEqual(rawSums(from, to));
      expect(repo.qualitySums('1', from, to, { agent_id: 'a' })).toEqual(rawSums(from, to, 'a'));
      // Sessions active in the window (first before `to`, last at or after `from`) with their totals.
      const sessions = repo.parties('1', 'session', from, to, 10);
      const raw = db
        .prepare("SELECT session_id AS key, count(*) AS n FROM agent_observations WHERE project_id = 1 AND session_id != '' GROUP BY 1 HAVING min(started_ms) < ? AND max(started_ms) >= ?")
        .all(to, from) as { key: string; n: number }[];
      expect(sessions.count).toBe(raw.length);
      expect(Object.fromEntries(sessions.top.map((s) => [s.key, s.n]))).toEqual(Object.fromEntries(raw.map((s) => [s.key, s.n])));
      const u = repo.usage('1', from, to);
      const rawUsage = db
        .prepare('SELECT count(*) AS n, COALESCE(SUM(prompt_tokens), 0) AS prompt, COALESCE(SUM(cost_usd), 0) AS cost FROM agent_observations WHERE project_id = 1 AND started_ms >= ? AND started_ms < ?')
        .get(from, to) as { n: number; prompt: number; cost: number };
      expect(u.n).toBe(rawUsage.n);
      const byModel = repo.usageBy('1', from, to, 'model', 10);
      const rawByModel = db
        .prepare("SELECT model AS key, count(*) AS n FROM agent_observations WHERE project_id = 1 AND model != '' AND observation_type = 'generation' AND started_ms >= ? AND started_ms < ? GROUP BY 1")
        .all(from, to) as { key: string; n: number }[];
      expect(Object.fromEntries(byModel.map((m) => [m.key, m.generations]))).toEqual(Object.fromEntries(rawByModel.map((m) => [m.key, m.n])));
      expect(repo.qualitySums('1', from, to, { agent_id: 'a', model: 'gpt-4o' })).toEqual(
        db.prepare(`SELECT count(*) AS n, ${FLAG_COLUMNS.map((f) => `COALESCE(SUM(${f}), 0) AS ${f}`).join(', ')} FROM agent_observations WHERE project_id = 1 AND started_ms >= ? AND started_ms < ? AND agent_id = 'a' AND model = 'gpt-4o'`).get(from, to),
      );
      expect(u.prompt).toBe(rawUsage.prompt);
      expect(u.cost).toBeCloseTo(rawUsage.cost, 9);
    }
  });
});
