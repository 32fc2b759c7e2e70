/**
 * Our own batch endpoint, privacy mode, scores (replace and tombstone), export pages and the
 * command-line quality gate and export formats, on a fixed clock.
 */
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { api, startTestServer, type TestServer } from '../helpers/server.js';
import { runInProcess } from '../cli/helpers.js';

let clock = Date.parse('2026-11-20T12:00:00.000Z');
let t: TestServer;
let P: string;
let env: Record<string, string>;
const at = (minutesAgo: number) => new Date(clock - minutesAgo * 60_000).toISOString();
const get = async (path: string, key = t.keys.admin) => {
  const r = await api(t, 'GET', `${P}${path}`, { key });
  expect(r.status, `${path}: ${JSON.stringify(r.body)}`).toBe(200);
  return r.body;
};
const batch = (body: unknown, key = t.keys.ingest) => api(t, 'POST', '/ingest/v1/ai/batch', { key, body });

const chat = (id: string, minutesAgo: number, extra: Record<string, unknown> = {}) => ({
  observation_id: id,
  observation_type: 'generation',
  operation: 'chat',
  trace_id: `trace-${id}`,
  session_id: 'sess-a',
  user_id: 'user-a',
  model: 'gpt-4o-mini',
  provider: 'openai',
  started_at: at(minutesAgo),
  duration_ms: 1200,
  prompt_tokens: 100,
  completion_tokens: 50,
  system: 'You are helpful.',
  input: [{ role: 'user', content: `question ${id}` }],
  output: { role: 'assistant', content: `answer ${id}` },
  environment: 'prod',
  tags: ['prod'],
  attributes: { team: 'search' },
  ...extra,
});

beforeAll(async () => {
  t = await startTestServer({ now: () => clock });
  P = `/v1/projects/${t.projectId}`;
  env = { SIGHTLINE_URL: t.url, SIGHTLINE_API_KEY: t.keys.admin, HOME: '/nonexistent-home' };
  const r = await batch({
    observations: [
      chat('g1', 50),
      chat('g2', 40),
      chat('g3', 30, { privacy_mode: true }),
      // No system prompt, no cost source (unknown model), no provider.
      chat('g4', 20, { system: undefined, model: 'in-house-llm', provider: undefined }),
      { observation_id: 't1', observation_type: 'tool_call', tool_name: 'search', environment: 'prod', started_at: at(45), parent_observation_id: 'g1', session_id: 'sess-a', input: { q: 'x' }, output: { hits: 2 } },
    ],
    scores: [
      { score_id: 's1', observation_id: 'g1', name: 'helpfulness', data_type: 'numeric', value: 0.2, source: 'eval', timestamp: at(49) },
      { score_id: 's2', observation_id: 'g2', name: 'helpfulness', data_type: 'numeric', value: 0.9, source: 'eval', timestamp: at(39), metadata: { attributes: { judge: 'gpt-4o' }, tags: ['auto'] } },
      { score_id: 's3', observation_id: 'g2', name: 'thumbs', data_type: 'boolean', value: true, source: 'annotation', timestamp: at(38) },
      { score_id: 's4', observation_id: 'g4', name: 'tone', data_type: 'categorical', string_value: 'rude', timestamp: at(19) },
    ],
  });
  expect(r.status, JSON.stringify(r.body)).toBe(200);
  // A later write with the same score id replaces; deleted: true is a tombstone.
  expect((await batch({ scores: [{ score_id: 's1', observation_id: 'g1', name: 'helpfulness', data_type: 'numeric', value: 0.7, source: 'eval', timestamp: at(48) }] })).status).toBe(200);
  expect((await batch({ scores: [{ score_id: 's4', observation_id: 'g4', name: 'tone', data_type: 'categorical', string_value: 'rude', deleted: true, timestamp: at(19) }] })).status).toBe(200);
});
afterAll(() => t.close());

describe('POST /ingest/v1/ai/batch', () => {
  it('rejects an invalid item with a Shape A error naming it, and stores nothing of that request', async () => {
    const r = await batch({ observations: [chat('bad-ok', 5), { observation_id: 'bad', observation_type: 'thinking', started_at: at(5) }] });
    expect(r.status).toBe(400);
    expect(r.body).toMatchObject({ type: 'invalid_request_error', code: 'invalid_parameter', param: 'observations.1.observation_type' });
    const unknown = await batch({ observations: [{ ...chat('bad-ok', 5), colour: 'red' }] });
    expect(unknown.status).toBe(400);
    expect(unknown.body).toMatchObject({ code: 'unknown_field', param: 'observations.0.colour' });
    expect((await api(t, 'GET', `${P}/agent-observations/bad-ok`, { key: t.keys.admin })).status).toBe(404);
  });

  it('needs an ingest key', async () => {
    expect((await batch({ observations: [] }, '')).status).toBe(401);
    expect((await batch({ observations: [] }, t.mintKey(['read']))).status).toBe(403);
  });
});

describe('privacy mode', () => {
  it('withholds the content of an observation that asks for it and keeps a redaction marker', async () => {
    const g3 = await get('/agent-observations/g3');
    expect(g3.input_json).toEqual({ redacted: true, reason: 'privacy_mode' });
    expect(g3.output_json).toEqual({ redacted: true, reason: 'privacy_mode' });
    expect(g3.message).toBe('');
    expect(g3.privacy_mode).toBe(true);
    expect(g3.prompt_tokens).toBe(100);
    expect((await get('/agent-observations?q=question%20g3')).total).toBe(0);
  });

  it('withholds span content everywhere once the project turns privacy mode on', async () => {
    expect((await api(t, 'PATCH', `${P}/ai/settings`, { key: t.keys.admin, body: { privacy_mode: true } })).body).toEqual({ privacy_mode: true });
    const now = BigInt(clock) * 1_000_000n;
    const span = {
      traceId: '0af7651916cd43dd8448eb211c80319c',
      spanId: 'b7ad6b7169203331',
      name: 'chat gpt-4o',
      kind: 3,
      startTimeUnixNano: String(now - 2_000_000_000n),
      endTimeUnixNano: String(now - 1_000_000_000n),
      attributes: [
        { key: 'gen_ai.operation.name', value: { stringValue: 'chat' } },
        { key: 'gen_ai.request.model', value: { stringValue: 'gpt-4o' } },
        { key: 'gen_ai.input.messages', value: { stringValue: '[{"role":"user","parts":[{"type":"text","content":"my password is hunter2"}]}]' } },
      ],
    };
    const r = await api(t, 'POST', '/ingest/v1/traces', { key: t.keys.ingest, body: { resourceSpans: [{ resource: { attributes: [] }, scopeSpans: [{ scope: { name: 'x' }, spans: [span] }] }] } });
    expect(r.status).toBe(200);
    const o = await get('/agent-observations/b7ad6b7169203331');
    expect(o.input_json).toEqual({ redacted: true, reason: 'privacy_mode' });
    const tr = await get('/traces/0af7651916cd43dd8448eb211c80319c');
    expect(JSON.stringify(tr)).not.toContain('hunter2');
    expect(JSON.stringify(tr)).toContain('[withheld: privacy_mode]');
    expect((await get('/ai/stats')).privacy_mode).toBe(true);
    await api(t, 'PATCH', `${P}/ai/settings`, { key: t.keys.admin, body: { privacy_mode: false } });
  });
});

describe('agent scores', () => {
  it('lists current values only: the replaced value and not the tombstoned score', async () => {
    const s = await get('/agent-scores?limit=10');
    expect(s.total).toBe(3);
    expect(s.data.find((x: any) => x.score_id === 's1').value).toBe(0.7);
    expect(s.data.map((x: any) => x.score_id)).not.toContain('s4');
    const sum = await get('/agent-scores/summary?name=helpfulness');
    expect(sum.data).toEqual([{ name: 'helpfulness', data_type: 'numeric', string_value: '', count: 2, avg_value: 0.8, min_value: 0.7, max_value: 0.9 }]);
  });
});

describe('agentObservations.export', () => {
  it('pages completed generations in a deterministic order with has_more', async () => {
    const exportKey = t.mintKey(['ai:export']);
    const p1 = await get('/agent-observations/export?limit=2', exportKey);
    expect(p1.data.map((r: any) => r.observation_id)).toEqual(['g1', 'g2']);
    expect(p1.has_more).toBe(true);
    const p2 = await get('/agent-observations/export?limit=2&offset=2', exportKey);
    expect(p2.data.map((r: any) => r.observation_id)).toEqual(['g3', 'g4']);
    expect(p2.has_more).toBe(false);
    expect(p1.data[0]).not.toHaveProperty('session_id');
    expect(p1.data[0]).not.toHaveProperty('attributes');
    expect(p1.data[1].scores.map((s: any) => s.name).sort()).toEqual(['helpfulness', 'thumbs']);
    expect(p2.data[0].input_json).toEqual({ redacted: true, reason: 'privacy_mode' });
  });

  it('adds identifiers and metadata only when asked, and filters by score', async () => {
    const exportKey = t.mintKey(['ai:export']);
    const r = await get('/agent-observations/export?include_identifiers=true&include_metadata=true&score_name=helpfulness&min_score=0.8', exportKey);
    expect(r.data.map((x: any) => x.observation_id)).toEqual(['g2']);
    expect(r.data[0]).toMatchObject({ session_id: 'sess-a', user_id: 'user-a', tags: { prod: 'true' }, attributes: { team: 'search' } });
    expect(r.data[0].scores.find((s: any) => s.name === 'helpfulness').metadata).toEqual({ attributes: { judge: 'gpt-4o' }, tags: ['auto'] });
    expect((await get('/agent-observations/export?score_name=thumbs&min_score=1', exportKey)).data.map((x: any) => x.observation_id)).toEqual(['g2']);
  });

  it('needs the ai:export scope, which read does not include', async () => {
    const r = await api(t, 'GET', `${P}/agent-observations/export`, { key: t.mintKey(['read']) });
    expect(r.status).toBe(403);
  });
});

describe('quality (hand-computed) and the command-line gate', () => {
  it('computes coverage over the window', async () => {
    const q = await get('/agent-observations/quality?environment=prod');
    // 5 observations; 4 generations (all successful chat generations); g4 lacks system prompt, provider and cost (unknown model).
    expect(q.total_observations).toBe(5);
    expect(q.coverage.system_prompts).toMatchObject({ captured: 3, eligible: 4, percent: 75 });
    expect(q.coverage.model_provider).toMatchObject({ captured: 3, eligible: 4, percent: 75 });
    expect(q.coverage.cost).toMatchObject({ captured: 3, eligible: 4, percent: 75 });
    expect(q.coverage.trace_linkage).toMatchObject({ captured: 4, eligible: 5, percent: 80 });
    expect(q.coverage.generation_inputs.percent).toBe(100);
    // Content-bearing: g1, g2, g4 and the tool call (g3 is withheld): 4 of 5. Privacy mode: g3, 1 of 5.
    expect(q.privacy_posture).toMatchObject({ content_bearing: { count: 4, percent: 80 }, privacy_mode: { count: 1, percent: 20 }, tool_payload_bearing: { count: 1, percent: 20 } });
    expect(q.scores).toEqual({ count: 3, scored_observations: 2 });
  });

  it('passes and fails the gate with the right exit codes, printing the JSON report first', async () => {
    const pass = await runInProcess(['agent-observations', 'quality', '--environment', 'prod', '--threshold', '75', '--min-observations', '5', '--min-scores', '3'], env);
    expect(pass.code).toBe(0);
    expect(JSON.parse(pass.stdout)).toMatchObject({ passed: true, failures: [], report: { total_observations: 5 } });

    const fail = await runInProcess(['agent-observations', 'quality', '--environment', 'prod', '--threshold', '80'], env);
    expect(fail.code).toBe(3);
    const report = JSON.parse(fail.stdout);
    expect(report.passed).toBe(false);
    expect(report.failures).toEqual([
      'system_prompts coverage 75% is below the threshold 80%',
      'model_provider coverage 75% is below the threshold 80%',
      'cost coverage 75% is below the threshold 80%',
    ]);
    expect(fail.stderr).toContain('quality gate failed');

    for (const [flags, failure] of [
      [['--min-observations', '6'], '5 observation(s), fewer than the minimum 6'],
      [['--min-scored-observations', '3'], '2 scored observation(s), fewer than the minimum 3'],
      [['--min-scores', '4'], '3 score(s), fewer than the minimum 4'],
      [['--require-privacy-mode'], '4 observation(s) not in privacy mode'],
      [['--max-content-bearing-percent', '50'], 'content-bearing observations 80% exceed the maximum 50%'],
    ] as [string[], string][]) {
      const r = await runInProcess(['agent-observations', 'quality', '--environment', 'prod', ...flags], env);
      expect(r.code, flags.join(' ')).toBe(3);
      expect(JSON.parse(r.stdout).failures).toEqual([failure]);
    }
  });

  it('fails an empty window by default and on invalid token totals', async () => {
    const empty = await runInProcess(['agent-observations', 'quality', '--gate', '--from', '2026-01-01T00:00:00Z', '--to', '2026-01-02T00:00:00Z'], env);
    expect(empty.code).toBe(3);
    expect(JSON.parse(empty.stdout).failures).toEqual(['empty window: no observations between from and to']);
    const allowed = await runInProcess(['agent-observations', 'quality', '--allow-empty', '--from', '2026-01-01T00:00:00Z', '--to', '2026-01-02T00:00:00Z'], env);
    expect(allowed.code).toBe(0);
    // total below input + output
    expect((await batch({ observations: [chat('bad-tokens', 1, { total_tokens: 10, environment: 'canary' })] })).status).toBe(200);
    const bad = await runInProcess(['agent-observations', 'quality', '--gate', '--environment', 'canary'], env);
    expect(bad.code).toBe(3);
    expect(JSON.parse(bad.stdout).failures).toEqual(['1 observation(s) with invalid token totals (negative, not whole, or total below input + output)']);
  });

  it('exports every page as jsonl and as OpenAI chat fine-tuning lines', async () => {
    const exportEnv = { ...env, SIGHTLINE_API_KEY: t.mintKey(['ai:export']) };
    const jsonl = await runInProcess(['agent-observations', 'export', '--all', '--limit', '2', '--format', 'jsonl'], exportEnv);
    expect(jsonl.code, jsonl.stderr).toBe(0);
    const rows = jsonl.stdout.trim().split('\n').map((l) => JSON.parse(l));
    expect(rows.map((r) => r.observation_id)).toEqual(['g1', 'g2', 'g3', 'g4', 'bad-tokens']);
    const chatLines = await runInProcess(['agent-observations', 'export', '--all', '--format', 'openai-chat', '--score-name', 'helpfulness', '--min-score', '0.8'], exportEnv);
    expect(chatLines.code).toBe(0);
    expect(chatLines.stdout.trim().split('\n').map((l) => JSON.parse(l))).toEqual([
      { messages: [{ role: 'system', content: 'You are helpful.' }, { role: 'user', content: 'question g2' }, { role: 'assistant', content: 'answer g2' }] },
    ]);
  });
});
