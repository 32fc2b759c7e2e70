/**
 * Issue 20: agent observations and scores in ClickHouse. Runs in the ClickHouse test projects (chdb,
 * and 18.16 in scale-out).
 * - a write batch inserts the observations and scores of the jobs that succeeded, after the SQLite
 *   commit, and acknowledges a job only once they are readable; a failing insert fails the jobs;
 * - a second server on the same ClickHouse database reads what the first one wrote, nothing of it in
 *   SQLite; a Langfuse update sent to the second server merges into the observation the first one
 *   stored (read from ClickHouse before the write);
 * - retention drops the days every project's period has passed and deletes a shorter-lived
 *   project's older observations (scores alike);
 * - `migrate --to-clickhouse` copies SQLite's observations and scores, and the copy answers as SQLite.
 */
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import type { ChEngine } from '../../src/storage/clickhouse/client.js';
import { createChAiStore } from '../../src/storage/clickhouse/ai-store.js';
import { createChAiReader } from '../../src/storage/clickhouse/ai-read.js';
import { copyAgentObservationsToClickHouse, CopyRefusedError } from '../../src/storage/clickhouse/migrate.js';
import { createWriteBatcher } from '../../src/storage/write-batcher.js';
import { row, score } from '../support/ai-rows.js';
import { langfuseKeyPair } from '../../src/ingest/langfuse.js';
import { newChEngine, useChStore } from '../support/clickhouse-store-fixture.js';
import { dropDatabase } from '../support/clickhouse.js';
import { DAY, describeClickHouseRetention, T0 } from '../support/clickhouse-retention.js';
import { api, startTestServer, type TestServer } from '../helpers/server.js';
import { startSecondServer, type SecondServer } from '../support/second-server.js';

const mode = process.env.SIGHTLINE_TEST_CLICKHOUSE;

describe.skipIf(mode !== 'server' && mode !== 'chdb')('agent observations in ClickHouse', () => {
  const fx = useChStore();
  const AT = Date.parse('2026-05-01T10:00:00Z');

  it('inserts the rows of the jobs that succeeded, after the commit, before acknowledging them; the newest version of an id counts', async () => {
    const store = createChAiStore(fx.engine);
    const read = createChAiReader(fx.engine);
    const batch = createWriteBatcher(fx.db, 512, store.participants);
    const kept = batch(() => store.writeObservations('7', [row('a', AT), row('b', AT + 1)]) + store.writeScores('7', [score('s1', 'a', AT)], AT));
    const failed = batch(() => {
      store.writeObservations('7', [row('c', AT + 2)]);
      throw new Error('this job fails after writing');
    });
    // Replaces `a` (later in the same batch): counted once, as the replacement.
    const replaced = batch(() => store.writeObservations('7', [row('a', AT, { status: 'error', cost_usd: 2 })]) + store.writeScores('7', [score('s1', 'a', AT, 0.25)], AT));
    const failedCheck = expect(failed).rejects.toThrow('this job fails');
    await expect(kept).resolves.toBe(3);
    await expect(replaced).resolves.toBe(2);
    await failedCheck;
    // acknowledged: readable now
    const list = await read.list('7', { fromMs: AT - DAY, toMs: AT + DAY }, 10, 0);
    expect(list.total).toBe(2);
    expect(list.rows.map((r) => [r.observation_id, r.status])).toEqual([['b', 'ok'], ['a', 'error']]);
    expect(await read.usage('7', AT - DAY, AT + DAY)).toMatchObject({ n: 2, errors: 1, cost: 2.5, generations: 2 });
    expect((await read.listScores('7', { fromMs: AT - DAY, toMs: AT + DAY }, 10, 0)).rows.map((s) => [s.score_id, s.value])).toEqual([['s1', 0.25]]);
    expect(await read.parties('7', 'session', AT - DAY, AT + DAY, 10)).toMatchObject({ count: 1, top: [{ key: 'sess-1', n: 2, errors: 1, cost: 2.5 }] });
  });

  it('shows Langfuse ingest the rows it wrote before their insert, not those of a failed job, and the newest version', async () => {
    const store = createChAiStore(fx.engine);
    const read = createChAiReader(fx.engine);
    const batch = createWriteBatcher(fx.db, 512, store.participants);
    await batch(() => store.writeObservations('9', [row('v1', AT, { observation_name: 'stored' })]));
    const view = await store.ingestView('9', ['v1', 'v2'], ['tr-1'], read.currentRows);
    expect(view.get('v1')?.observation_name).toBe('stored');
    expect(view.get('v2')).toBeNull();
    const seen: (string | undefined)[] = [];
    const first = batch(() => store.writeObservations('9', [row('v2', AT + 1, { observation_name: 'new' }), row('v1', AT, { observation_name: 'replaced' })]));
    // A later job of the same batch: the first job's rows are not inserted yet, the view has them.
    const second = batch(() => {
      seen.push(view.get('v2')?.observation_name, view.get('v1')?.observation_name, view.observationsOfTrace('tr-1').map((o) => o.observation_id).sort().join());
      store.writeObservations('9', [row('v3', AT + 2)]);
      throw new Error('fails after writing v3');
    });
    await first;
    await expect(second).rejects.toThrow('fails after writing v3');
    expect(seen).toEqual(['new', 'replaced', 'v1,v2']);
    expect(view.get('v3')).toBeNull();
  });

  it('fails the jobs of a batch whose insert fails', async () => {
    const broken: ChEngine = { ...fx.engine, insert: async () => Promise.reject(new Error('ClickHouse is down')) };
    const store = createChAiStore(broken);
    const batch = createWriteBatcher(fx.db, 512, store.participants);
    await expect(batch(() => store.writeObservations('8', [row('lost', AT)]))).rejects.toThrow('ClickHouse is down');
    expect((await fx.engine.query<{ n: number }>('SELECT count() AS n FROM agent_observations WHERE project_id = 8'))[0]!.n).toBe(0);
  });
});

describe.skipIf(mode !== 'server' && mode !== 'chdb')('agent observations on two servers with one ClickHouse database', () => {
  let a: TestServer;
  let b: SecondServer;
  const clock = Date.parse('2026-03-01T12:00:00Z');
  const iso = (ms: number) => new Date(ms).toISOString();
  /* eslint-disable @typescript-eslint/no-explicit-any */
  const onB = async (path: string, init: RequestInit = {}): Promise<{ status: number; body: any }> => {
    const r = await fetch(`${b.url}${path}`, { ...init, headers: { 'x-service-key': a.keys.admin, ...(init.headers ?? {}) } });
    return { status: r.status, body: await r.json() };
  };

  beforeAll(async () => {
    a = await startTestServer({ now: () => clock });
    b = await startSecondServer(a, { now: () => clock });
  });
  afterAll(async () => {
    await b?.close();
    await a?.close();
  });

  it('reads on the second server what the first acknowledged, and merges a Langfuse update sent to the second into it', async () => {
    const P = `/v1/projects/${a.projectId}`;
    const at = (minAgo: number) => iso(clock - minAgo * 60_000);
    const sent = await api(a, 'POST', '/ingest/v1/ai/batch', {
      key: a.keys.ingest,
      body: {
        observations: [
          { observation_id: 'g1', observation_type: 'generation', model: 'gpt-4o', provider: 'openai', prompt_tokens: 100, completion_tokens: 20, cost_usd: 0.25, started_at: at(10), session_id: 'sess-a', user_id: 'user-a', trace_id: 'tr-a' },
          { observation_id: 't1', observation_type: 'tool_call', tool_name: 'search', started_at: at(9), session_id: 'sess-a', trace_id: 'tr-a' },
        ],
        scores: [{ score_id: 's1', observation_id: 'g1', name: 'helpfulness', data_type: 'numeric', value: 0.5, source: 'eval', timestamp: at(8) }],
      },
    });
    expect(sent.status, JSON.stringify(sent.body)).toBe(200);
    const win = `from=${encodeURIComponent(iso(clock - 3_600_000))}&to=${encodeURIComponent(iso(clock))}`;
    const list = await onB(`${P}/agent-observations?${win}`);
    expect(list.body.data.map((o: { observation_id: string }) => o.observation_id)).toEqual(['t1', 'g1']);
    const stats = await onB(`${P}/ai/stats?${win}`);
    expect(stats.body.summary).toMatchObject({ observations: 2, requests: 1, tool_calls: 1, cost_usd: 0.25, total_tokens: 120 });
    expect(stats.body.sessions).toMatchObject({ count: 1, top: [{ id: 'sess-a', observations: 2 }] });
    expect((await onB(`${P}/agent-scores?${win}`)).body.data.map((s: { score_id: string; value: number }) => [s.score_id, s.value])).toEqual([['s1', 0.5]]);
    expect((await onB(`${P}/ai/sessions/sess-a`)).body.nodes).toHaveLength(2);

    // A Langfuse generation-update on the second server: the output lands on the stored generation, its other fields kept.
    const keys = langfuseKeyPair(a.projectId, a.keys.ingest);
    const up = await fetch(`${b.url}/ingest/api/public/ingestion`, {
      method: 'POST',
      headers: { authorization: `Basic ${Buffer.from(`${keys.publicKey}:${keys.secretKey}`).toString('base64')}`, 'content-type': 'application/json' },
      body: JSON.stringify({ batch: [{ id: 'e1', type: 'generation-update', timestamp: at(7), body: { id: 'g1', output: 'the answer' } }] }),
    });
    expect(up.status).toBe(207);
    expect(((await up.json()) as { successes: unknown }).successes).toEqual([{ id: 'e1', status: 201 }]);
    const g = (await api(a, 'GET', `${P}/agent-observations/g1`, { key: a.keys.admin })).body;
    expect(g).toMatchObject({ observation_id: 'g1', model: 'gpt-4o', session_id: 'sess-a', user_id: 'user-a', prompt_tokens: 100, cost_usd: 0.25 });
    expect(JSON.stringify(g.output_json)).toContain('the answer');
    // Counted once after the update, on both servers.
    expect((await api(a, 'GET', `${P}/ai/stats?${win}`, { key: a.keys.admin })).body.summary).toMatchObject({ observations: 2, requests: 1 });
    expect((await onB(`${P}/agent-observations?${win}`)).body.total).toBe(2);
    for (const t of ['agent_observations', 'agent_scores', 'agent_obs_1h', 'agent_sessions']) expect(a.s.db.prepare(`SELECT count(*) FROM ${t}`).pluck().get(), t).toBe(0);
  });
});

describeClickHouseRetention({
  kind: 'agent_observations',
  rows: 'observations',
  otherDays: 30,
  write: (t, pid, rows) => t.s.services.writeBatch(() => t.s.services.ai.writeObservations(pid, rows.map((r) => row(r.label, T0 - r.daysAgo * DAY)))),
  left: async (engine) => (await engine.query<{ observation_id: string }>('SELECT observation_id FROM agent_observations ORDER BY observation_id')).map((r) => r.observation_id),
  async after(t) {
    const P = t.projectId;
    const stats = await api(t, 'GET', `/v1/projects/${P}/ai/stats?from=${new Date(T0 - 60 * DAY).toISOString()}&to=${new Date(T0).toISOString()}`, { key: t.keys.admin });
    expect(stats.body.summary.observations).toBe(1);
  },
});

describeClickHouseRetention({
  kind: 'agent_scores',
  rows: 'scores',
  otherDays: 30,
  write: (t, pid, rows) => t.s.services.writeBatch(() => t.s.services.ai.writeScores(pid, rows.map((r) => ({ ...score(r.label, '', T0 - r.daysAgo * DAY) })), T0)),
  left: async (engine) => (await engine.query<{ score_id: string }>('SELECT score_id FROM agent_scores ORDER BY score_id')).map((r) => r.score_id),
});

describe.skipIf(mode !== 'server' && mode !== 'chdb')('migrate --to-clickhouse: agent observations and scores', () => {
  let t: TestServer;
  let engine: ChEngine;
  const AT = Date.parse('2026-05-01T10:00:00Z');
  beforeAll(async () => {
    t = await startTestServer({ now: () => AT, clickhouse: false });
    engine = newChEngine();
  });
  afterAll(async () => {
    await t?.close();
    if (mode === 'server') await dropDatabase(process.env.SIGHTLINE_TEST_CLICKHOUSE_URL!, (engine as unknown as { database: string }).database);
    await engine?.close();
  });

  it('copies every observation and score, and the copy answers as SQLite; a second copy is refused', async () => {
    const sv = t.s.services;
    const pid = t.projectId;
    await sv.writeBatch(() => sv.ai.writeObservations(pid, [row('x1', AT - 5000), row('x2', AT - 4000, { observation_type: 'tool_call', session_id: 'sess-2' }), row('x3', AT - 3000, { user_id: 'user-2' })]));
    await sv.writeBatch(() => sv.ai.writeObservations(pid, [row('x1', AT - 5000, { status: 'error', cost_usd: 1.5 })]));
    await sv.writeBatch(() => sv.ai.writeScores(pid, [score('c1', 'x1', AT - 100), score('c2', 'x2', AT - 90, 0.5), { ...score('c3', 'x3', AT - 80), deleted: true }], AT));
    const report = await copyAgentObservationsToClickHouse(t.s.db, engine, { batch: 2 });
    expect(report).toMatchObject({ agent_observations: 3, agent_scores: 3 });
    const ch = createChAiReader(engine);
    const w = [AT - DAY, AT + 1] as const;
    expect(stripIds(await ch.list(pid, { fromMs: w[0], toMs: w[1] }, 10, 0))).toEqual(stripIds(await sv.ai.list(pid, { fromMs: w[0], toMs: w[1] }, 10, 0)));
    expect(await ch.usage(pid, ...w)).toEqual(await sv.ai.usage(pid, ...w));
    expect(await ch.parties(pid, 'session', ...w, 10)).toEqual(await sv.ai.parties(pid, 'session', ...w, 10));
    expect(stripIds(await ch.listScores(pid, { fromMs: w[0], toMs: w[1] }, 10, 0))).toEqual(stripIds(await sv.ai.listScores(pid, { fromMs: w[0], toMs: w[1] }, 10, 0)));
    // A write after the copy replaces the copied row.
    const store = createChAiStore(engine);
    store.writeObservations(pid, [row('x1', AT - 5000, { status: 'ok', cost_usd: 0.25 })]);
    await store.flush();
    expect(await ch.usage(pid, ...w)).toMatchObject({ n: 3, errors: 0, cost: 1.25 });
    await expect(copyAgentObservationsToClickHouse(t.s.db, engine)).rejects.toThrow(CopyRefusedError);
  });
});

/** SQLite's rows carry their row id, project and tombstone columns; ClickHouse's reads return the stored fields only. */
function stripIds<T extends { rows: object[] }>(r: T): T {
  return { ...r, rows: r.rows.map((x) => Object.fromEntries(Object.entries(x).filter(([k]) => k !== 'id' && k !== 'project_id' && k !== 'deleted'))) };
}
