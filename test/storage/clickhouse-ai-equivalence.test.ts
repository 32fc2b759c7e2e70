/**
 * Issue 20: AI reads answer the same with agent observations and scores in SQLite (rows, hourly
 * rollups, session/user totals) and in ClickHouse (row versions, aggregated when read). Random
 * observations (seeded: every type, ok and error, sessions, users, traces, agents, workflows, models,
 * providers, releases, environments, content or none, privacy) and scores (numeric, boolean,
 * categorical; on an observation, on a trace only, or neither) are written in write batches into a
 * SQLite-only server and a server with ClickHouse; a third of the writes replace an earlier
 * observation or score (also within one batch), some scores are tombstoned. Then agentObservations
 * list/get/quality/export, agentScores list/summary and ai.stats/histogram/session/user over random
 * windows and filters must give the same bodies (numbers up to 1e-9 relative). Replacements keep an
 * observation's start, session and user: with them moved, sessions' and users' first and last
 * activity differ by design (README). Costs and score values are multiples of 1/1024, so sums are
 * exact in any order. Runs in the clickhouse-chdb project.
 */
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { finalizeObservation, OBSERVATION_TYPES, type ObservationDraft, type ScoreDraft } from '../../src/domain/ai/observation.js';
import { api, startTestServer, type TestServer } from '../helpers/server.js';
import { rng } from '../../bench/lib.js';
import { compareOnBoth } from '../support/body-diffs.js';

const mode = process.env.SIGHTLINE_TEST_CLICKHOUSE;
const NOW = Date.parse('2026-04-10T12:00:00.000Z');
const HOUR = 3_600_000;
const DAY = 86_400_000;
const T0 = NOW - 3 * DAY;

const TRACES = Array.from({ length: 40 }, (_, i) => `t${i}`);
const SESSIONS = Array.from({ length: 25 }, (_, i) => `s${i}`);
const USERS = Array.from({ length: 10 }, (_, i) => `u${i}`);
const MODELS = ['gpt-test-a', 'claude-test-b', 'local-c'];
const PROVIDERS = ['openai', 'anthropic', 'ollama'];
const WORDS = ['Alpha', 'beta', 'GAMMA', 'delta_x', '50%'];
const SCORE_NAMES = [
  { name: 'helpfulness', type: 'numeric' as const },
  { name: 'correct', type: 'boolean' as const },
  { name: 'label', type: 'categorical' as const },
];

function generate(seed: number) {
  const r = rng(seed);
  const pick = <T,>(xs: readonly T[]) => xs[Math.floor(r() * xs.length)]!;
  const maybe = <T,>(p: number, x: () => T, y: T) => (r() < p ? x() : y);
  const dyadic = () => Math.floor(r() * 4096) / 1024;
  const drafts: ObservationDraft[] = [];
  const scores: ScoreDraft[] = [];
  /** Fields a replacement may change (start, session and user stay). */
  const variable = (d: Partial<ObservationDraft> & { started_ms: number }): Partial<ObservationDraft> => {
    const type = pick(OBSERVATION_TYPES);
    const gen = type === 'generation';
    const prompt = maybe(0.8, () => Math.floor(r() * 500), null);
    const completion = maybe(0.8, () => Math.floor(r() * 300), null);
    const word = pick(WORDS);
    return {
      trace_id: maybe(0.85, () => pick(TRACES), ''),
      agent_id: maybe(0.6, () => pick(['a1', 'a2', 'a3']), ''),
      workflow_id: maybe(0.4, () => pick(['w1', 'w2']), ''),
      observation_type: type,
      observation_name: `${type} ${word}`,
      operation: gen ? pick(['chat', 'embeddings', '']) : '',
      status_message: '',
      status: r() < 0.15 ? 'error' : 'ok',
      model: gen || r() < 0.2 ? pick([...MODELS, '']) : '',
      provider: gen ? pick([...PROVIDERS, '']) : '',
      tool_name: type === 'tool_call' ? pick(['search', 'fetch']) : '',
      ended_ms: d.started_ms + Math.floor(r() * 5000),
      prompt_tokens: prompt,
      completion_tokens: completion,
      total_tokens: prompt !== null && completion !== null ? (r() < 0.05 ? prompt + completion - 1 : prompt + completion) : maybe(0.3, () => Math.floor(r() * 800), null),
      // Always sent for generations (a price-table cost would not be a multiple of 1/1024).
      cost_usd: gen ? dyadic() : maybe(0.3, dyadic, null),
      environment: pick(['prod', 'staging', '']),
      release: pick(['v1', 'v2', '']),
      input: maybe(0.7, () => ({ system: r() < 0.3 ? 'be brief' : undefined, messages: [{ role: 'user', content: `question about ${word}` }] }), null),
      output: maybe(0.6, () => ({ value: `answer ${pick(WORDS)}` }), null),
      tags: r() < 0.2 ? [`tag-${word}`] : [],
      attributes: r() < 0.3 ? { note: word } : {},
      privacy_mode: r() < 0.05,
    };
  };
  const N = 2400;
  for (let i = 0; i < N; i++) {
    if (i > 20 && r() < 0.33) {
      // A replacement of an earlier observation (the latest draft of its id).
      const old = drafts[Math.floor(r() * drafts.length)]!;
      drafts.push({ ...old, ...variable(old) } as ObservationDraft);
    } else {
      const started_ms = T0 + r() * 3 * DAY;
      const base = {
        observation_id: `o${i}`, parent_observation_id: r() < 0.5 && drafts.length ? drafts[drafts.length - 1]!.observation_id : '', span_id: `sp${i}`,
        session_id: maybe(0.7, () => pick(SESSIONS), ''), user_id: maybe(0.6, () => pick(USERS), ''), distinct_id: '', visitor_id: '', step_id: '',
        level: 'info', source: 'sightline', started_ms,
      };
      drafts.push({ ...base, ...variable(base) } as ObservationDraft);
    }
    if (r() < 0.3) {
      const sn = pick(SCORE_NAMES);
      const replace = scores.length > 5 && r() < 0.3 ? scores[Math.floor(r() * scores.length)]! : null;
      const target = pick(drafts);
      const on = r();
      scores.push({
        score_id: replace ? replace.score_id : `sc${i}`,
        trace_id: on < 0.9 ? target.trace_id : '',
        observation_id: on < 0.6 ? target.observation_id : '',
        span_id: '', session_id: target.session_id, user_id: target.user_id,
        name: replace ? replace.name : sn.name,
        value: (replace ? SCORE_NAMES.find((s) => s.name === replace.name)!.type : sn.type) === 'numeric' ? dyadic() : Math.round(r()),
        string_value: (replace ? replace.name : sn.name) === 'label' ? pick(['good', 'bad', 'meh']) : '',
        data_type: replace ? replace.data_type : sn.type,
        source: pick(['api', 'eval', 'annotation'] as const),
        comment: r() < 0.2 ? 'checked' : '', author: '', model: target.model, environment: target.environment, release: target.release,
        started_ms: T0 + r() * 3 * DAY, deleted: r() < 0.08, metadata: r() < 0.2 ? { k: 1 } : {},
      });
    }
  }
  return { drafts, scores };
}

describe.skipIf(mode !== 'server' && mode !== 'chdb')('AI reads on SQLite and on ClickHouse', () => {
  let a: TestServer;
  let b: TestServer;
  const data = generate(31);
  beforeAll(async () => {
    a = await startTestServer({ now: () => NOW, clickhouse: false });
    b = await startTestServer({ now: () => NOW });
    const BATCH = 150;
    for (const s of [a, b]) {
      const sv = s.s.services;
      let sc = 0;
      for (let i = 0, k = 0; i < data.drafts.length; i += BATCH, k++) {
        const receivedMs = NOW - DAY + k * 1000;
        const rows = data.drafts.slice(i, i + BATCH).map((d) => finalizeObservation(d, { receivedMs, projectPrivacy: false }));
        const scores = data.scores.slice(sc, (sc = Math.round(((i + BATCH) / data.drafts.length) * data.scores.length)));
        // Two jobs per batch: observations, then scores (each replacement after what it replaces).
        await Promise.all([
          sv.writeBatch(() => sv.ai.writeObservations(s.projectId, rows)),
          sv.writeBatch(() => (scores.length ? sv.ai.writeScores(s.projectId, scores, receivedMs) : 0)),
        ]);
      }
    }
  }, 120_000);
  afterAll(async () => {
    await a?.close();
    await b?.close();
  });

  it('keeps observations and scores out of SQLite when they go to ClickHouse', () => {
    const count = (s: TestServer, t: string) => s.s.db.prepare(`SELECT count(*) FROM ${t}`).pluck().get();
    expect(count(a, 'agent_observations')).toBe(new Set(data.drafts.map((d) => d.observation_id)).size);
    expect(count(a, 'agent_scores')).toBe(new Set(data.scores.map((d) => d.score_id)).size);
    for (const t of ['agent_observations', 'agent_scores', 'agent_obs_1h', 'agent_sessions', 'agent_users']) expect(count(b, t), t).toBe(0);
  });

  it('answer every AI read with the same body', async () => {
    const r = rng(7);
    const pick = <T,>(xs: readonly T[]) => xs[Math.floor(r() * xs.length)]!;
    const iso = (ms: number) => new Date(ms).toISOString();
    const windows: [number, number][] = [
      [T0, NOW], [T0 - DAY, NOW], [T0 + HOUR, NOW - 5 * HOUR], [T0 + 17_300, NOW - 41_000], [T0 + DAY + 90 * 60_000 + 5, T0 + DAY + 95 * 60_000 - 3],
      [T0 + 2 * HOUR, T0 + 2 * DAY], [NOW - HOUR, NOW], [T0 + 7 * 60_000 + 1, T0 + 40 * HOUR - 1], [T0 + DAY, T0 + 2 * DAY],
    ];
    const ids = [...new Set(data.drafts.map((d) => d.observation_id))];
    const paths: string[] = [];
    for (let i = 0; i < 110; i++) {
      const [from, to] = pick(windows);
      const q = [`from=${iso(from)}`, `to=${iso(to)}`];
      const kind = pick(['list', 'list', 'quality', 'quality', 'export', 'get', 'scores', 'summary', 'stats', 'histogram', 'session', 'user']);
      if (kind === 'list') {
        for (const [k, v] of [
          ['trace_id', TRACES], ['session_id', SESSIONS], ['user_id', USERS], ['agent_id', ['a1', 'a2']], ['workflow_id', ['w1']], ['observation_type', OBSERVATION_TYPES],
          ['status', ['ok', 'error']], ['model', MODELS], ['tool_name', ['search']], ['q', ['alpha', 'GAMMA', 'delta_', '50%', 'brief', 'tag-']],
        ] as [string, readonly string[]][]) if (r() < 0.15) q.push(`${k}=${encodeURIComponent(pick(v))}`);
        q.push(`limit=${pick([5, 50, 200])}`, `offset=${pick([0, 0, 3])}`);
        paths.push(`/agent-observations?${q.join('&')}`);
      } else if (kind === 'quality') {
        for (const [k, v] of [['agent_id', ['a1', 'a3']], ['workflow_id', ['w2']], ['model', MODELS], ['provider', PROVIDERS], ['release', ['v1']], ['environment', ['prod']]] as const)
          if (r() < 0.2) q.push(`${k}=${pick(v)}`);
        q.push('include_missing_examples=true');
        paths.push(`/agent-observations/quality?${q.join('&')}`);
      } else if (kind === 'export') {
        if (r() < 0.3) q.push(`q=${pick(['alpha', 'answer', 'beta'])}`);
        if (r() < 0.3) q.push(`model=${pick(MODELS)}`);
        if (r() < 0.2) q.push(`provider=${pick(PROVIDERS)}`);
        if (r() < 0.2) q.push(`status=${pick(['ok', 'error'])}`);
        if (r() < 0.3) q.push('require_output=false');
        if (r() < 0.4) q.push(`score_name=${pick(SCORE_NAMES).name}`);
        if (r() < 0.2) q.push(`score_source=${pick(['api', 'eval', 'annotation'])}`);
        if (r() < 0.2) q.push(`score_label=${pick(['good', 'bad'])}`);
        if (r() < 0.2) q.push(`min_score=${pick([0.5, 1, 2])}`);
        if (r() < 0.2) q.push(`max_score=${pick([0.5, 1, 3])}`);
        if (r() < 0.5) q.push('include_identifiers=true', 'include_metadata=true');
        q.push(`limit=${pick([5, 100])}`, `offset=${pick([0, 2])}`);
        paths.push(`/agent-observations/export?${q.join('&')}`);
      } else if (kind === 'get') {
        paths.push(`/agent-observations/${r() < 0.1 ? 'nope' : pick(ids)}`);
      } else if (kind === 'scores' || kind === 'summary') {
        const f: string[] = [];
        if (r() < 0.2) f.push(`trace_id=${pick(TRACES)}`);
        if (r() < 0.1) f.push(`observation_id=${pick(ids)}`);
        if (r() < 0.2) f.push(`session_id=${pick(SESSIONS)}`);
        if (r() < 0.2) f.push(`user_id=${pick(USERS)}`);
        if (r() < 0.3) f.push(`name=${pick(SCORE_NAMES).name}`);
        if (r() < 0.2) f.push(`source=${pick(['api', 'eval', 'annotation'])}`);
        if (r() < 0.2) f.push(`data_type=${pick(['numeric', 'boolean', 'categorical'])}`);
        if (kind === 'scores') f.push(`limit=${pick([10, 100])}`, `offset=${pick([0, 4])}`);
        paths.push(`/agent-scores${kind === 'summary' ? '/summary' : ''}?${[...q, ...f].join('&')}`);
      } else if (kind === 'stats') paths.push(`/ai/stats?${q.join('&')}`);
      else if (kind === 'histogram') paths.push(`/ai/histogram?${q.join('&')}`);
      else if (kind === 'session') paths.push(`/ai/sessions/${r() < 0.1 ? 'nope' : pick(SESSIONS)}`);
      else paths.push(`/ai/users/${r() < 0.1 ? 'nope' : pick(USERS)}?${q.join('&')}`);
    }
    /* eslint-disable-next-line @typescript-eslint/no-explicit-any */
    const { ok, nonEmpty } = await compareOnBoth(a, b, paths, (body: any) =>
      !!(body.data?.length || body.total_observations || body.summary?.observations || body.nodes?.length || body.totals?.observations || body.observation_id));
    expect(ok).toBeGreaterThan(paths.length * 0.8);
    expect(nonEmpty).toBeGreaterThan(paths.length * 0.6);
  }, 120_000);
});
