/**
 * Reads by trace (migration 039: a time range per trace instead of a per-observation trace index)
 * return exactly the observations of the trace, also after a replacement moves one to another time,
 * and migration 039 builds the ranges of observations written before it. A resend of a stored
 * observation changes nothing; a changed one replaces it.
 */
import { mkdtempSync, rmSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { afterAll, describe, expect, it } from 'vitest';
import { migrate, openDatabase } from '../../src/storage/db.js';
import { MIGRATIONS } from '../../src/storage/migrations/index.js';
import { createAiRepo } from '../../src/storage/ai-repo.js';
import { emptyDraft, finalizeObservation } from '../../src/domain/ai/observation.js';

const dir = mkdtempSync(join(tmpdir(), 'sightline-ai-trace-'));
afterAll(() => rmSync(dir, { recursive: true, force: true }));

const T0 = Date.parse('2026-11-01T00:00:00Z');
const obs = (id: string, trace: string, at: number) =>
  finalizeObservation(emptyDraft({ observation_id: id, trace_id: trace, started_ms: at, observation_type: 'generation', model: 'gpt-4o' }), { receivedMs: at, projectPrivacy: false });
const ids = (rows: { observation_id: string }[]) => rows.map((r) => r.observation_id).sort();
const ALL = { fromMs: 0, toMs: T0 + 100 * 86_400_000 };

describe('observations by trace', () => {
  it('lists exactly the trace’s observations, after replacements too', () => {
    const db = openDatabase(join(dir, 'a.db'));
    const repo = createAiRepo(db);
    const write = (rows: ReturnType<typeof obs>[]) => db.transaction(() => repo.writeObservations('1', rows))();
    // Two traces interleaved in time, a third far away, and observations without a trace.
    write([obs('a1', 'ta', T0 + 10), obs('b1', 'tb', T0 + 20), obs('a2', 'ta', T0 + 30.5), obs('n1', '', T0 + 25), obs('c1', 'tc', T0 + 86_400_000)]);
    write([obs('a3', 'ta', T0 + 40), obs('b2', 'tb', T0 + 35)]);
    expect(ids(repo.list('1', { ...ALL, trace_id: 'ta' }, 100, 0).rows)).toEqual(['a1', 'a2', 'a3']);
    expect(repo.list('1', { ...ALL, trace_id: 'ta' }, 100, 0).total).toBe(3);
    expect(ids(repo.observationsOfTrace('1', 'tb'))).toEqual(['b1', 'b2']);
    // A replacement moves a2 a day later and b2 into trace ta.
    write([obs('a2', 'ta', T0 + 86_400_000 + 5), obs('b2', 'ta', T0 + 1)]);
    expect(ids(repo.list('1', { ...ALL, trace_id: 'ta' }, 100, 0).rows)).toEqual(['a1', 'a2', 'a3', 'b2']);
    expect(ids(repo.observationsOfTrace('1', 'tb'))).toEqual(['b1']);
    // The window still applies; unknown traces and other projects have nothing.
    expect(ids(repo.list('1', { fromMs: T0, toMs: T0 + 35, trace_id: 'ta' }, 100, 0).rows)).toEqual(['a1', 'b2']);
    expect(repo.list('1', { ...ALL, trace_id: 'nope' }, 100, 0)).toEqual({ rows: [], total: 0 });
    expect(repo.observationsOfTrace('2', 'ta')).toEqual([]);
    expect(ids(repo.exportRows('1', { ...ALL, trace_id: 'ta', require_output: false }, 100, 0).rows)).toEqual(['a1', 'b2', 'a3', 'a2'].sort());
    db.close();
  });

  it('migration 039 builds the trace ranges of existing observations', () => {
    const file = join(dir, 'b.db');
    const db = openDatabase(file, { migrations: MIGRATIONS.filter((m) => m.version < 39) });
    const cols = 'project_id, observation_id, trace_id, observation_type, started_ms, received_ms';
    const ins = db.prepare(`INSERT INTO agent_observations (${cols}) VALUES (?, ?, ?, 'generation', ?, 0)`);
    ins.run(1, 'x1', 'tx', T0 + 5);
    ins.run(1, 'x2', 'tx', T0 + 500);
    ins.run(1, 'y1', 'ty', T0 + 50);
    ins.run(2, 'z1', 'tx', T0 + 9);
    ins.run(1, 'n1', '', T0 + 60);
    migrate(db);
    expect(db.prepare('SELECT project_id, trace_id, first_ms, last_ms FROM agent_obs_traces ORDER BY 1, 2').all()).toEqual([
      { project_id: 1, trace_id: 'tx', first_ms: T0 + 5, last_ms: T0 + 500 },
      { project_id: 1, trace_id: 'ty', first_ms: T0 + 50, last_ms: T0 + 50 },
      { project_id: 2, trace_id: 'tx', first_ms: T0 + 9, last_ms: T0 + 9 },
    ]);
    const repo = createAiRepo(db);
    expect(ids(repo.list('1', { ...ALL, trace_id: 'tx' }, 100, 0).rows)).toEqual(['x1', 'x2']);
    expect(db.prepare("SELECT count(*) FROM sqlite_master WHERE name = 'agent_obs_trace'").pluck().get()).toBe(0);
    db.close();
  });
});

describe('resending observations', () => {
  it('an identical resend changes nothing, a changed one replaces the row and its rollups', () => {
    const db = openDatabase(join(dir, 'c.db'));
    const repo = createAiRepo(db);
    const write = (rows: ReturnType<typeof obs>[]) => db.transaction(() => repo.writeObservations('1', rows))();
    const at = (id: string, received: number, model = 'gpt-4o') =>
      finalizeObservation(emptyDraft({ observation_id: id, trace_id: 't', started_ms: T0 + 10, observation_type: 'generation', model, prompt_tokens: 10, completion_tokens: 5 }), { receivedMs: received, projectPrivacy: false });
    const usage = () => repo.usage('1', T0, T0 + 3_600_000);
    write([at('g1', T0 + 100), at('g2', T0 + 100)]);
    const before = usage();
    expect(before).toMatchObject({ n: 2, generations: 2, tokens: 30 });
    write([at('g1', T0 + 999), at('g2', T0 + 999)]);
    expect(usage()).toEqual(before);
    expect(repo.get('1', 'g1')!.received_ms).toBe(T0 + 100);
    write([at('g1', T0 + 2000, 'gpt-4o-mini')]);
    expect(usage()).toMatchObject({ n: 2, generations: 2, tokens: 30 });
    expect(repo.get('1', 'g1')).toMatchObject({ model: 'gpt-4o-mini', received_ms: T0 + 2000 });
    expect(repo.usageBy('1', T0, T0 + 3_600_000, 'model', 10).map((g) => [g.key, g.n])).toEqual([['gpt-4o', 1], ['gpt-4o-mini', 1]]);
    db.close();
  });
});
