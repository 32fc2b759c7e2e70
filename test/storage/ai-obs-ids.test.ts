/**
 * Observations by id without the unique index (migration 041: a small and a big id level, keyed by
 * a 52-bit key of the id). A lookup by id finds span-derived and arbitrary ids in either level, a
 * later write with the same id replaces (also across levels), ids whose keys collide stay apart,
 * scores join their observations, the migration indexes existing rows, and expiring observations
 * takes their id entries (spans expiring leaves observations readable by id).
 */
import { mkdtempSync, rmSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { afterAll, describe, expect, it } from 'vitest';
import { migrate, openDatabase } from '../../src/storage/db.js';
import { MIGRATIONS } from '../../src/storage/migrations/index.js';
import { createAiRepo } from '../../src/storage/ai-repo.js';
import { obsIdKey } from '../../src/storage/obs-ids.js';
import { createRetentionRepo, EXPIRY_TARGETS } from '../../src/storage/retention-repo.js';
import { createSqliteTelemetryWriter } from '../../src/storage/sqlite-telemetry-store.js';
import { withAgentObservations } from '../../src/storage/ai-spans.js';
import { emptyDraft, finalizeObservation, type ScoreDraft } from '../../src/domain/ai/observation.js';
import type { SpanRecord } from '../../src/domain/telemetry-types.js';

const dir = mkdtempSync(join(tmpdir(), 'sightline-ai-ids-'));
afterAll(() => rmSync(dir, { recursive: true, force: true }));

const T0 = Date.parse('2026-11-01T00:00:00Z');
const DAY = 86_400_000;
const obs = (id: string, at: number, model = 'gpt-4o') =>
  finalizeObservation(emptyDraft({ observation_id: id, trace_id: `t-${id}`, started_ms: at, observation_type: 'generation', model }), { receivedMs: at, projectPrivacy: false });
const ALL = { fromMs: 0, toMs: T0 + 1000 * DAY };
const levels = (db: ReturnType<typeof openDatabase>) => ({
  small: db.prepare('SELECT count(*) FROM agent_obs_ids_new').pluck().get(),
  big: db.prepare('SELECT count(*) FROM agent_obs_ids').pluck().get(),
});

describe('observations by id (two id levels)', () => {
  it('finds span-derived and arbitrary ids in both levels, and a later write replaces across levels', () => {
    const db = openDatabase(join(dir, 'a.db'));
    const repo = createAiRepo(db, { idLevelMax: 4 });
    const write = (rows: ReturnType<typeof obs>[]) => db.transaction(() => repo.writeObservations('1', rows))();
    const arbitrary = ['gen-1', 'Langfuse generation ü', '', 'x'.repeat(300)];
    write([obs('00f067aa0ba902b7', T0), obs(arbitrary[0]!, T0 + 1), obs(arbitrary[1]!, T0 + 2)]);
    expect(levels(db)).toEqual({ small: 3, big: 0 });
    expect(repo.get('1', '00f067aa0ba902b7')?.started_ms).toBe(T0);
    expect(repo.get('1', arbitrary[1]!)?.observation_id).toBe(arbitrary[1]);
    // The small level fills up: its entries move into the big one.
    write([obs(arbitrary[2]!, T0 + 3), obs(arbitrary[3]!, T0 + 4)]);
    expect(levels(db)).toEqual({ small: 0, big: 5 });
    for (const id of ['00f067aa0ba902b7', ...arbitrary]) expect(repo.get('1', id)?.observation_id).toBe(id);
    expect(repo.get('1', 'gen-2')).toBeNull();
    expect(repo.get('2', 'gen-1')).toBeNull();
    // Same id again, changed: the row in the big level is replaced, not duplicated; rollups follow.
    write([obs('gen-1', T0 + 10, 'claude-sonnet-4'), obs('new-1', T0 + 11)]);
    expect(repo.get('1', 'gen-1')).toMatchObject({ model: 'claude-sonnet-4', started_ms: T0 + 10 });
    expect(repo.list('1', ALL, 100, 0).total).toBe(6);
    expect(db.prepare("SELECT count(*) FROM agent_observations WHERE observation_id = 'gen-1'").pluck().get()).toBe(1);
    expect(repo.usage('1', ALL.fromMs, ALL.toMs).n).toBe(6);
    expect(repo.usageBy('1', ALL.fromMs, ALL.toMs, 'model', 10).map((g) => [g.key, g.n])).toEqual([
      ['gpt-4o', 5],
      ['claude-sonnet-4', 1],
    ]);
    // Same id twice in one write (the second is an update of the first, still in the small level).
    write([obs('dup', T0 + 20), obs('dup', T0 + 21, 'o3')]);
    expect(repo.get('1', 'dup')).toMatchObject({ model: 'o3', started_ms: T0 + 21 });
    expect(repo.list('1', ALL, 100, 0).total).toBe(7);
    // A Langfuse-style update by id: read the stored row, change it, write it back.
    const stored = repo.get('1', arbitrary[1]!)!;
    write([{ ...obs(arbitrary[1]!, stored.started_ms), level: 'ERROR', status: 'error', message: 'boom' }]);
    expect(repo.get('1', arbitrary[1]!)).toMatchObject({ status: 'error', message: 'boom' });
    expect(repo.list('1', ALL, 100, 0).total).toBe(7);
    db.close();
  });

  it('keeps ids whose keys collide apart, and scores join their observations', () => {
    const db = openDatabase(join(dir, 'b.db'));
    const repo = createAiRepo(db, { idLevelMax: 2 });
    // Sequential ids (a counter) get distinct keys.
    const seq = Array.from({ length: 1000 }, (_, i) => i.toString(16).padStart(16, '0'));
    expect(new Set(seq.map(obsIdKey)).size).toBe(1000);
    const [a, b] = ['abcdef0123456aaa', 'abcdef0123456bbb'];
    const write = (rows: ReturnType<typeof obs>[]) => db.transaction(() => repo.writeObservations('1', rows))();
    write([obs(a, T0, 'gpt-4o')]);
    write([obs('other', T0 + 1), obs('filler', T0 + 2)]); // a moves to the big level
    // A key collision: b's key also names a's row (in the big level).
    const aRow = db.prepare('SELECT id FROM agent_observations WHERE observation_id = ?').pluck().get(a);
    db.prepare('INSERT INTO agent_obs_ids (project_id, k, obs) VALUES (1, ?, ?)').run(obsIdKey(b), aRow);
    expect(repo.get('1', b)).toBeNull();
    write([obs(b, T0 + 3, 'o3')]);
    expect(repo.get('1', a)?.model).toBe('gpt-4o');
    expect(repo.get('1', b)?.model).toBe('o3');
    write([obs(b, T0 + 3, 'o4-mini')]);
    expect(repo.get('1', a)?.model).toBe('gpt-4o');
    expect(repo.get('1', b)?.model).toBe('o4-mini');
    expect(repo.list('1', ALL, 100, 0).total).toBe(4);
    const score = (id: string, obsId: string): ScoreDraft => ({
      score_id: id, trace_id: '', observation_id: obsId, span_id: '', session_id: '', user_id: '', name: 'helpfulness', value: 1, string_value: '',
      data_type: 'numeric', source: 'api', comment: '', author: '', model: '', environment: '', release: '', started_ms: T0 + 5, deleted: false, metadata: {},
    });
    db.transaction(() => repo.writeScores('1', [score('s1', a), score('s2', b), score('s3', 'missing')], T0))();
    expect(repo.scoreCounts('1', ALL.fromMs, ALL.toMs, {})).toEqual({ count: 3, scored_observations: 3 });
    expect(repo.scoreCounts('1', ALL.fromMs, ALL.toMs, { model: 'gpt-4o' })).toEqual({ count: 1, scored_observations: 1 });
    expect(repo.scoreCounts('1', ALL.fromMs, ALL.toMs, { model: 'o4-mini' })).toEqual({ count: 1, scored_observations: 1 });
    db.close();
  });

  it('a write of many rows (its keys probed in one query) stores what row-by-row writes store', () => {
    // The same writes twice: as batches (one probe of both levels for all keys) and one row per write
    // (a lookup per row): replacements from either level, the same id twice in a batch, a colliding
    // key, the same id in another project, resends.
    const run = (file: string, oneByOne: boolean) => {
      const db = openDatabase(join(dir, file));
      const repo = createAiRepo(db, { idLevelMax: 6 });
      const write = (pid: string, rows: ReturnType<typeof obs>[]) => {
        for (const part of oneByOne ? rows.map((r) => [r]) : [rows]) db.transaction(() => repo.writeObservations(pid, part))();
      };
      write('1', Array.from({ length: 9 }, (_, i) => obs(`a${i}`, T0 + i))); // a0..a8: big level after the move
      write('1', [obs('b0', T0 + 20), obs('b1', T0 + 21)]); // small level
      // b's key also names a0's row (a collision in the big level).
      const a0 = db.prepare("SELECT id FROM agent_observations WHERE observation_id = 'a0'").pluck().get();
      db.prepare('INSERT INTO agent_obs_ids (project_id, k, obs) VALUES (1, ?, ?)').run(obsIdKey('coll'), a0);
      write('1', [obs('a3', T0 + 30, 'o3'), obs('b1', T0 + 31, 'o3'), obs('n0', T0 + 32), obs('n0', T0 + 33, 'o4-mini'), obs('coll', T0 + 34), obs('a5', T0 + 5), obs('n1', T0 + 35)]);
      write('2', [obs('a3', T0 + 40), obs('b1', T0 + 41), obs('x', T0 + 42), obs('y', T0 + 43)]);
      write('1', [obs('coll', T0 + 36, 'o3'), obs('a0', T0, 'o3'), obs('n1', T0 + 35), obs('n2', T0 + 37)]);
      const out = {
        rows: db.prepare('SELECT project_id, observation_id, model, started_ms FROM agent_observations ORDER BY project_id, observation_id').all(),
        rollup: db.prepare('SELECT * FROM agent_obs_1h ORDER BY project_id, hour_ms, dim, value').all(),
        ids: db.prepare('SELECT o.project_id, o.observation_id FROM agent_observations o ORDER BY 1, 2').all().length,
      };
      db.close();
      return out;
    };
    const batched = run('p1.db', false);
    expect(batched).toEqual(run('p2.db', true));
    expect(batched.rows).toHaveLength(19);
    expect(batched.rows).toContainEqual({ project_id: 1, observation_id: 'n0', model: 'o4-mini', started_ms: T0 + 33 });
    expect(batched.rows).toContainEqual({ project_id: 1, observation_id: 'a0', model: 'o3', started_ms: T0 });
    expect(batched.rows).toContainEqual({ project_id: 1, observation_id: 'coll', model: 'o3', started_ms: T0 + 36 });
  });

  it('migration 041 indexes the observations stored before it and drops the unique index', () => {
    const db = openDatabase(join(dir, 'c.db'), { migrations: MIGRATIONS.filter((m) => m.version < 41) });
    const ins = db.prepare("INSERT INTO agent_observations (project_id, observation_id, observation_type, started_ms, received_ms) VALUES (?, ?, 'generation', ?, 0)");
    ins.run(1, '00f067aa0ba902b7', T0);
    ins.run(1, 'lf-1', T0 + 1);
    ins.run(2, 'lf-1', T0 + 2);
    migrate(db);
    expect(db.prepare("SELECT count(*) FROM sqlite_master WHERE name = 'agent_obs_id'").pluck().get()).toBe(0);
    const repo = createAiRepo(db);
    expect(repo.get('1', '00f067aa0ba902b7')?.started_ms).toBe(T0);
    expect(repo.get('1', 'lf-1')?.started_ms).toBe(T0 + 1);
    expect(repo.get('2', 'lf-1')?.started_ms).toBe(T0 + 2);
    // A write with a stored id still replaces it.
    db.transaction(() => repo.writeObservations('1', [obs('lf-1', T0 + 7)]))();
    expect(repo.get('1', 'lf-1')?.started_ms).toBe(T0 + 7);
    expect(db.prepare("SELECT count(*) FROM agent_observations WHERE project_id = 1 AND observation_id = 'lf-1'").pluck().get()).toBe(1);
    db.close();
  });

  it('expiring observations takes their id entries; expiring spans leaves span-derived observations readable by id', () => {
    const db = openDatabase(join(dir, 'd.db'));
    const repo = createAiRepo(db, { idLevelMax: 3 });
    const writer = withAgentObservations(db, repo, createSqliteTelemetryWriter(db));
    const span = (id: string, at: number): SpanRecord => ({
      trace_id: 'aa'.repeat(16), span_id: id, parent_span_id: null, trace_state: '', name: 'chat gpt-4o', kind: 1, start_ms: at, end_ms: at + 100,
      status_code: 0, status_message: '', attributes: { 'gen_ai.operation.name': 'chat', 'gen_ai.request.model': 'gpt-4o' }, events: [], links: [],
      resource: { 'service.name': 'agent' }, scope: { name: '', version: '', attributes: {} }, service_name: 'agent',
    });
    const ids = ['1111111111111111', '2222222222222222', '3333333333333333', '4444444444444444', '5555555555555555'];
    // Old ones (T0) and recent ones (T0 + 100 days); the first write moves 3 entries to the big level.
    db.transaction(() => writer.insertSpans('1', [span(ids[0]!, T0), span(ids[1]!, T0), span(ids[2]!, T0 + 100 * DAY)], 'otlp', T0))();
    db.transaction(() => writer.insertSpans('1', [span(ids[3]!, T0), span(ids[4]!, T0 + 100 * DAY)], 'otlp', T0))();
    expect(levels(db)).toEqual({ small: 2, big: 3 });
    for (const id of ids) expect(repo.get('1', id)?.span_id).toBe(id);
    const retention = createRetentionRepo(db);
    const target = (table: string) => EXPIRY_TARGETS.find((t) => t.table === table)!;
    // Spans expire first (their own retention): the observations stay, found by id.
    while (retention.expireBatch(target('spans'), '1', T0 + 200 * DAY, 2) > 0);
    expect(db.prepare('SELECT count(*) FROM spans').pluck().get()).toBe(0);
    for (const id of ids) expect(repo.get('1', id)?.span_id).toBe(id);
    // Observations older than 50 days expire with their id entries, in both levels.
    while (retention.expireBatch(target('agent_observations'), '1', T0 + 50 * DAY, 2) > 0);
    expect(ids.map((id) => repo.get('1', id) !== null)).toEqual([false, false, true, false, true]);
    expect(levels(db)).toEqual({ small: 1, big: 1 });
    db.close();
  });
});
