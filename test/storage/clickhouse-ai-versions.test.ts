/**
 * Issue 20: versions of agent observations and scores in ClickHouse (schema.ts migration 11). Every
 * write of an id is a new row; reads take the rows not marked superseded (ai-store.ts markSuperseded,
 * run after each insert from the keys table) instead of aggregating every id of the project. Runs in
 * the ClickHouse test projects (chdb, and 18.16 in scale-out).
 * - two processes (two stores, no memory of each other's rows) replacing one observation and one
 *   score at once: each counts once, as its newest version;
 * - a replacement that moves an observation to another day: found at its new start only;
 * - versions stored before migration 11 are marked by it.
 */
import { describe, expect, it } from 'vitest';
import { createChAiStore, observationRowOf, scoreRowOf } from '../../src/storage/clickhouse/ai-store.js';
import { createChAiReader } from '../../src/storage/clickhouse/ai-read.js';
import { CH_MIGRATIONS, migrateClickHouse } from '../../src/storage/clickhouse/schema.js';
import { nextLogId } from '../../src/storage/clickhouse/log-store.js';
import { expireClickHouseAgentObservations } from '../../src/storage/clickhouse/retention.js';
import { createWriteBatcher } from '../../src/storage/write-batcher.js';
import { row, score } from '../support/ai-rows.js';
import { chMode, newChEngine, useChStore } from '../support/clickhouse-store-fixture.js';
import { dropDatabase } from '../support/clickhouse.js';

const DAY = 86_400_000;
const AT = Date.parse('2026-05-01T10:00:00Z');

describe.skipIf(!chMode)('versions of agent observations and scores in ClickHouse', () => {
  const fx = useChStore();
  const win = (from: number, to: number) => ({ fromMs: from, toMs: to });

  it('counts an observation and a score two processes replace at once once, as their newest versions', async () => {
    const read = createChAiReader(fx.engine);
    // Two processes: each store knows only the rows it wrote.
    const [a, b] = [createChAiStore(fx.engine), createChAiStore(fx.engine)];
    const [batchA, batchB] = [createWriteBatcher(fx.db, 512, a.participants), createWriteBatcher(fx.db, 512, b.participants)];
    await batchA(() => a.writeObservations('3', [row('x', AT, { cost_usd: 1 }), row('y', AT)]) + a.writeScores('3', [score('s', 'o', AT, 0.1)], AT));
    // Both replace `x` and `s` in the same moment; b's versions are the newer (written last).
    await Promise.all([
      batchA(() => a.writeObservations('3', [row('x', AT, { cost_usd: 2 })]) + a.writeScores('3', [score('s', 'o', AT + 5, 0.2)], AT)),
      batchB(() => b.writeObservations('3', [row('x', AT + 60_000, { cost_usd: 4, status: 'error' })]) + b.writeScores('3', [score('s', 'o', AT + 9, 0.3)], AT)),
    ]);
    const w = win(AT - DAY, AT + DAY);
    const list = await read.list('3', w, 10, 0);
    expect(list.total).toBe(2);
    expect(list.rows.map((r) => [r.observation_id, r.cost_usd, r.started_ms])).toEqual([['x', 4, AT + 60_000], ['y', 0.5, AT]]);
    expect(await read.usage('3', AT - DAY, AT + DAY)).toMatchObject({ n: 2, errors: 1, cost: 4.5 });
    expect(await read.parties('3', 'session', AT - DAY, AT + DAY, 10)).toMatchObject({ count: 1, top: [{ key: 'sess-1', n: 2, cost: 4.5 }] });
    expect((await read.get('3', 'x'))?.cost_usd).toBe(4);
    const scores = await read.listScores('3', w, 10, 0);
    expect(scores.total).toBe(1);
    expect(scores.rows.map((s) => [s.score_id, s.value, s.started_ms])).toEqual([['s', 0.3, AT + 9]]);
    expect(await read.scoreSummary('3', w)).toMatchObject([{ name: 'q', count: 1, avg_value: 0.3 }]);
    // A deletion (the newest version, a tombstone) from the first process: no score left.
    await batchA(() => a.writeScores('3', [score('s', 'o', AT + 9, 0.3, true)], AT));
    expect((await read.listScores('3', w, 10, 0)).total).toBe(0);
  });

  it('finds an observation replaced with a start on another day at its new start only', async () => {
    const read = createChAiReader(fx.engine);
    const first = createChAiStore(fx.engine);
    await createWriteBatcher(fx.db, 512, first.participants)(() => first.writeObservations('4', [row('m', AT, { session_id: 's-moved' })]));
    // Another process moves it three days later (it has no memory of the first write).
    const later = createChAiStore(fx.engine);
    await createWriteBatcher(fx.db, 512, later.participants)(() => later.writeObservations('4', [row('m', AT + 3 * DAY, { session_id: 's-moved', total_tokens: 40 })]));
    expect((await read.list('4', win(AT - DAY, AT + DAY), 10, 0)).total).toBe(0);
    expect(await read.usage('4', AT - DAY, AT + DAY)).toMatchObject({ n: 0 });
    expect((await read.list('4', win(AT + 2 * DAY, AT + 4 * DAY), 10, 0)).rows.map((r) => r.total_tokens)).toEqual([40]);
    expect((await read.usageByDay('4', AT - DAY, AT + 5 * DAY)).map((d) => [d.day, d.n])).toEqual([[Math.floor((AT + 3 * DAY) / DAY) * DAY, 1]]);
    expect((await read.sessionRows('4', 's-moved', 10)).map((r) => r.started_ms)).toEqual([AT + 3 * DAY]);
    expect(await read.parties('4', 'session', AT - 10 * DAY, AT + 10 * DAY, 10)).toMatchObject({ count: 1, top: [{ key: 's-moved', n: 1, tokens: 40 }] });
    expect((await read.get('4', 'm'))?.started_ms).toBe(AT + 3 * DAY);
    expect((await read.currentRows('4', ['m'], ['tr-1'])).map((r) => r.total_tokens)).toEqual([40]);
  });

  it('replaces a batch whose ids fill more than one look-up query', async () => {
    const read = createChAiReader(fx.engine);
    const ids = Array.from({ length: 1500 }, (_, i) => `${String(i).padStart(4, '0')}-${'x'.repeat(200)}`); // ~300 KB of ids, named twice per look-up
    const first = createChAiStore(fx.engine);
    await createWriteBatcher(fx.db, 512, first.participants)(() => first.writeObservations('6', ids.map((id) => row(id, AT))));
    const later = createChAiStore(fx.engine);
    await createWriteBatcher(fx.db, 512, later.participants)(() => later.writeObservations('6', ids.map((id) => row(id, AT + 1000, { total_tokens: 2 }))));
    expect(await read.usage('6', AT - DAY, AT + DAY)).toMatchObject({ n: 1500, tokens: 3000 });
    // Langfuse ingest's view of them (read by id through the keys): every one, its newest version.
    const view = await read.currentRows('6', ids, []);
    expect(view.length).toBe(1500);
    expect(view.every((r) => r.total_tokens === 2)).toBe(true);
  });

  it('expires keys and marks by whole months with their observations', async () => {
    const read = createChAiReader(fx.engine);
    const OLD = Date.parse('2026-01-10T10:00:00Z');
    const NEW = Date.parse('2026-04-10T10:00:00Z');
    for (const at of [OLD, NEW]) {
      // Each written twice by two processes: a version and its replacement (marked).
      for (const v of [1, 2]) {
        const st = createChAiStore(fx.engine);
        await createWriteBatcher(fx.db, 512, st.participants)(() => st.writeObservations('8', [row(`r-${at}`, at, { total_tokens: v })]));
      }
    }
    const count = async (table: string) => Number((await fx.engine.query<{ n: number }>(`SELECT count() AS n FROM ${table} WHERE project_id = 8`))[0]!.n);
    expect([await count('agent_observation_keys'), await count('agent_observations_superseded')]).toEqual([4, 2]);
    await expireClickHouseAgentObservations(fx.engine, [{ projectId: '8', cutoffMs: Date.parse('2026-03-01T00:00:00Z') }]);
    expect([await count('agent_observation_keys'), await count('agent_observations_superseded')]).toEqual([2, 1]);
    expect((await read.list('8', win(OLD - DAY, NEW + DAY), 10, 0)).rows.map((r) => [r.observation_id, r.total_tokens])).toEqual([[`r-${NEW}`, 2]]);
  });

  it('marks the versions stored before migration 11', async () => {
    const engine = newChEngine();
    try {
      // The schema as it was before migration 11, with two versions of `old` on different days and of `sc`.
      await engine.command('CREATE TABLE IF NOT EXISTS sightline_migrations (version UInt32, name String, applied_ms Float64) ENGINE = MergeTree PARTITION BY tuple() ORDER BY version');
      for (const m of CH_MIGRATIONS.filter((x) => x.version < 11)) {
        for (const s of m.statements) await engine.command(s);
        await engine.insert('sightline_migrations', [{ version: m.version, name: m.name, applied_ms: Date.now() }]);
      }
      const [v1, v2, v3, v4] = [nextLogId(), nextLogId(), nextLogId(), nextLogId()];
      await engine.insert('agent_observations', [
        observationRowOf(5, row('old', AT, { cost_usd: 1 }), v1),
        observationRowOf(5, row('old', AT + 2 * DAY, { cost_usd: 3 }), v2),
        observationRowOf(5, row('kept', AT), v1),
      ]);
      await engine.insert('agent_scores', [scoreRowOf(5, score('sc', 'o', AT, 0.5), AT, v3), scoreRowOf(5, score('sc', 'o', AT, 0.75), AT, v4)]);
      expect(await migrateClickHouse(engine)).toBe(CH_MIGRATIONS.filter((x) => x.version >= 11).length);
      const read = createChAiReader(engine);
      expect(await read.usage('5', AT - DAY, AT + 3 * DAY)).toMatchObject({ n: 2, cost: 3.5 });
      expect((await read.list('5', win(AT - DAY, AT + DAY), 10, 0)).rows.map((r) => r.observation_id)).toEqual(['kept']);
      expect((await read.get('5', 'old'))?.cost_usd).toBe(3);
      expect((await read.listScores('5', win(AT - DAY, AT + DAY), 10, 0)).rows.map((s) => s.value)).toEqual([0.75]);
    } finally {
      if (chMode === 'server') await dropDatabase(process.env.SIGHTLINE_TEST_CLICKHOUSE_URL!, (engine as unknown as { database: string }).database);
      await engine.close();
    }
  });
});
