/**
 * Issue 20: agent observation and score reads with them in ClickHouse (control data in PostgreSQL),
 * beside SQLite alone.
 *
 * The same N observations (traces of four: an agent step, two generations and a tool call; sessions of
 * five traces, one busy session of every 300th trace; 2,000 users; spread over the last 30 days) and
 * scores on a share of the generations are stored through the ingest write path (`writeDrafts` in
 * write batches, as `/v1/ai/batch` and the Langfuse endpoints do after decoding) into two Sightlines:
 * SQLite alone, and ClickHouse (a private clickhouse-server, Debian's 18.16 as the tests start it) +
 * PostgreSQL (a fresh database on the local server). A share of the generations is sent twice, as a
 * Langfuse create then update: first without output and usage, then complete one chunk later (a new
 * row version in ClickHouse, argMax'd by every read); their scores are sent again with a new value.
 *
 * Then each read is timed over REST on both, sequential calls after a warm-up: ai.stats (30 days and
 * 24 h), ai.histogram (30 days), agentObservations.quality (30 days), agentObservations.list (a filter,
 * first page), agentObservations.get, agentScores.summary (30 days), ai.session of the busy session.
 * Every read must answer 200 on both; some bodies are compared (counts, totals) and a mismatch is
 * printed loudly (exit code 1). Prints p95 per read and backend, the ratio, the ClickHouse queries one
 * call makes, and the load average.
 *
 *   npx tsx bench/ai-reads.ts [--observations 300000] [--scored 0.2] [--resent 0.1] [--runs 20]
 *                             [--pg postgres://postgres@127.0.0.1:5432/postgres] [--prof] [--hold]
 *
 * `--prof` prints each ClickHouse query of one call per read with its time. `--hold` keeps the seeded
 * clickhouse-server running after the figures (its HTTP address printed) until Ctrl-C, for trying
 * queries by hand (`curl '<address>/?database=bench_ai_reads' --data-binary 'SELECT …'`).
 */
import { readFileSync } from 'node:fs';
import pg from 'pg';
import { writeDrafts } from '../src/ingest/ai-write.js';
import { emptyDraft, type ObservationDraft, type ScoreDraft } from '../src/domain/ai/observation.js';
import type { ChEngine } from '../src/storage/clickhouse/client.js';
import { startClickHouseServer, type ClickHouseServer } from '../test/support/clickhouse.js';
import { openBenchSide, rng, timeGetP95, type BenchSide, flag } from './lib.js';

const N = Number(flag('observations', '300000'));
const SCORED = Number(flag('scored', '0.2'));
const RESENT = Number(flag('resent', '0.1'));
const RUNS = Number(flag('runs', '20'));
const PG_BASE = flag('pg', 'postgres://postgres@127.0.0.1:5432/postgres');
const PROF = process.argv.includes('--prof');
const HOLD = process.argv.includes('--hold');
const MIN = 60_000;
const HOUR = 60 * MIN;
const DAY = 24 * HOUR;
const NOW = Date.now();
const load = () => readFileSync('/proc/loadavg', 'utf8').split(' ')[0]!;

const PER_TRACE = 4;
const TRACES_PER_SESSION = 5;
const BUSY_EVERY = 300; // every 300th trace is in the busy session
const BUSY = 'session-busy';
const TRACES_PER_CHUNK = 256; // 1,024 observations per chunk, written as 4 jobs of 256
const MODELS: Array<[string, string]> = [['gpt-4o-mini', 'openai'], ['gpt-4o', 'openai'], ['claude-sonnet-4-20250514', 'anthropic'], ['gemini-2.5-flash', 'google']];
const ENVS = ['production', 'production', 'production', 'staging'];
const TRACES = Math.ceil(N / PER_TRACE);

interface Chunk {
  drafts: ObservationDraft[];
  scores: ScoreDraft[];
  /** The complete versions of this chunk's resent generations (and their scores' new values), sent with the next chunk. */
  updates: ObservationDraft[];
  updateScores: ScoreDraft[];
}

function score(o: ObservationDraft, name: string, data_type: ScoreDraft['data_type'], value: number, string_value = ''): ScoreDraft {
  return {
    score_id: `${o.observation_id}-${name}`, trace_id: o.trace_id, observation_id: o.observation_id, span_id: '', session_id: o.session_id, user_id: o.user_id,
    name, value, string_value, data_type, source: 'eval', comment: '', author: '', model: o.model, environment: o.environment, release: o.release,
    started_ms: o.ended_ms, deleted: false, metadata: {},
  };
}

/**
 * The observations of traces [t0, t1) (the same on both sides: one seeded generator, called in order).
 * `sessionBase` keeps each session's start (sessions are five consecutive traces a minute apart).
 */
function chunk(t0: number, t1: number, r: () => number, sessionBase: Map<number, number>): Chunk {
  const out: Chunk = { drafts: [], scores: [], updates: [], updateScores: [] };
  for (let t = t0; t < t1 && t * PER_TRACE < N; t++) {
    const busy = t % BUSY_EVERY === 0;
    const s = Math.floor(t / TRACES_PER_SESSION);
    // Within [now − 30 days + 2 h, now − 10 min], so every 30-day window read later covers all of them,
    // in trace order with a little jitter, as they arrive live: an insert then lands in one or two day
    // partitions (random times over 30 days made ~30 parts per insert — thousands of small parts that
    // slowed every ClickHouse read, even at a few thousand observations, far from live conditions).
    const span = 30 * DAY - 2 * HOUR - 10 * MIN - TRACES_PER_SESSION * MIN;
    const at = (i: number) => NOW - 10 * MIN - TRACES_PER_SESSION * MIN - span + Math.floor((span * i) / TRACES) + Math.floor(r() * 10 * MIN);
    if (!busy && !sessionBase.has(s)) (sessionBase.clear(), sessionBase.set(s, Math.min(at(t), NOW - 10 * MIN - TRACES_PER_SESSION * MIN)));
    const start = busy ? Math.min(at(t), NOW - 10 * MIN - TRACES_PER_SESSION * MIN) : sessionBase.get(s)! + (t % TRACES_PER_SESSION) * MIN;
    const session_id = busy ? BUSY : `session-${s}`;
    const user_id = `user-${s % 2000}`;
    const [model, provider] = MODELS[Math.floor(r() * MODELS.length)]!;
    const environment = ENVS[t % ENVS.length]!;
    const release = `agent@3.${t % 7}.0`;
    const trace_id = `trace-${t}`;
    const root = `obs-${t}-0`;
    const common = { trace_id, session_id, user_id, environment, release, agent_id: 'support', source: 'api' };
    out.drafts.push(emptyDraft({ ...common, observation_id: root, observation_type: 'agent_step', observation_name: 'invoke_agent support', operation: 'invoke_agent', level: 'info', started_ms: start, ended_ms: start + 900 + Math.floor(r() * 2000) }));
    for (const k of [1, 3]) {
      const at = start + (k === 1 ? 5 : 500);
      const prompt = 200 + Math.floor(r() * 800);
      const completion = 20 + Math.floor(r() * 300);
      const failed = r() < 0.03;
      const gen = emptyDraft({
        ...common,
        observation_id: `obs-${t}-${k}`, parent_observation_id: root, observation_type: 'generation', observation_name: `chat ${model}`, operation: 'chat',
        model, provider, started_ms: at, ended_ms: at + 200 + Math.floor(r() * 1500),
        status: failed ? 'error' : 'ok', level: failed ? 'error' : 'info', status_message: failed ? 'rate limited (429)' : '',
        prompt_tokens: prompt, completion_tokens: failed ? 0 : completion,
        input: { system: 'You are a helpful support agent.', messages: [{ role: 'user', content: `Where is order ${t}-${k}?` }] },
        output: failed ? null : { messages: [{ role: 'assistant', content: `Order ${t}-${k} ships tomorrow.` }] },
        tags: [`tier:${t % 3 === 0 ? 'pro' : 'free'}`],
      });
      const scores: ScoreDraft[] = [];
      if (r() < SCORED) {
        scores.push(score(gen, 'helpfulness', 'numeric', Math.round(r() * 100) / 100));
        if (t % 2 === 0) scores.push(score(gen, 'correct', 'boolean', r() < 0.8 ? 1 : 0));
        if (t % 3 === 0) scores.push(score(gen, 'sentiment', 'categorical', 0, ['positive', 'neutral', 'negative'][Math.floor(r() * 3)]!));
      }
      if (!failed && r() < RESENT) {
        // Langfuse: generation-create without output and usage, generation-update with them.
        out.drafts.push({ ...gen, output: null, prompt_tokens: null, completion_tokens: null, ended_ms: at });
        out.updates.push(gen);
        out.scores.push(...scores.map((x) => ({ ...x, value: x.data_type === 'numeric' ? Math.round((1 - x.value) * 100) / 100 : x.value })));
        out.updateScores.push(...scores);
      } else {
        out.drafts.push(gen);
        out.scores.push(...scores);
      }
    }
    out.drafts.push(emptyDraft({
      ...common, observation_id: `obs-${t}-2`, parent_observation_id: root, observation_type: 'tool_call', observation_name: 'execute_tool lookup_order', operation: 'execute_tool',
      tool_name: 'lookup_order', started_ms: start + 300, ended_ms: start + 300 + Math.floor(r() * 150), level: 'info',
      input: { value: { order: `${t}` } }, output: { value: { status: 'shipped' } },
    }));
  }
  return out;
}

type Side = BenchSide;

async function side(name: string, config: { clickhouseUrl?: string; databaseUrl?: string }, opened: Side[]): Promise<Side> {
  const x = await openBenchSide(name, config, opened); // closed by main's finally even if seeding fails
  const s = x.s;
  const r = rng(11); // the same observations on both sides
  const sessionBase = new Map<number, number>();
  let pending: Chunk | null = null;
  const t0 = performance.now();
  for (let t = 0; t < TRACES; t += TRACES_PER_CHUNK) {
    const c = chunk(t, t + TRACES_PER_CHUNK, r, sessionBase);
    const jobs: Promise<unknown>[] = [];
    const q = TRACES_PER_CHUNK; // 4 jobs of 64 traces (256 observations) each
    for (let j = 0; j < c.drafts.length; j += q) {
      const drafts = c.drafts.slice(j, j + q);
      const ids = new Set(drafts.map((d) => d.observation_id));
      const scores = c.scores.filter((x) => ids.has(x.observation_id));
      jobs.push(s.services.writeBatch(() => writeDrafts(s.services, x.project, drafts, scores, Date.now())));
    }
    // The previous chunk's updates: their creates were acknowledged with that chunk.
    if (pending?.updates.length) {
      const p = pending;
      jobs.push(s.services.writeBatch(() => writeDrafts(s.services, x.project, p.updates, p.updateScores, Date.now())));
    }
    await Promise.all(jobs);
    pending = c;
    if (t % (TRACES_PER_CHUNK * 50) === 0) process.stdout.write(`  ${name}: ${t * PER_TRACE} observations seeded\r`);
  }
  if (pending?.updates.length) {
    const p = pending;
    await s.services.writeBatch(() => writeDrafts(s.services, x.project, p.updates, p.updateScores, Date.now()));
  }
  x.seedSeconds = (performance.now() - t0) / 1000;
  await x.listen();
  return x;
}

/** ClickHouse queries (SQL and ms) made while `fn` runs, by wrapping the engine's `query`. */
async function chQueries(engine: ChEngine, fn: () => Promise<unknown>): Promise<{ sql: string; ms: number }[]> {
  const original = engine.query;
  const log: { sql: string; ms: number }[] = [];
  engine.query = (async (sql: string) => {
    const a = performance.now();
    try {
      return await original.call(engine, sql);
    } finally {
      log.push({ sql: sql.replace(/\s+/g, ' '), ms: performance.now() - a });
    }
  }) as ChEngine['query'];
  try {
    await fn();
  } finally {
    engine.query = original;
  }
  return log;
}

const get = async (x: Side, path: string): Promise<{ status: number; body: any }> => {
  const r = await fetch(`${x.url}${path}`, { headers: { 'x-service-key': x.key } });
  return { status: r.status, body: await r.json() };
};

async function main() {
  let ch: ClickHouseServer | null = null;
  let admin: pg.Client | null = null;
  let pgName = '';
  const sides: Side[] = [];
  let stopping = false;
  /** The clickhouse-server started and the PostgreSQL database created (settled either way): what cleanup must undo exists by then. */
  let ready: Promise<unknown> = Promise.resolve();
  // One cleanup, shared by the signal handler and the finally below (a signal makes the seeding fail too).
  let cleaning: Promise<void> | null = null;
  const cleanup = () =>
    (cleaning ??= (async () => {
      await ready.catch(() => {});
      for (const x of sides.splice(0)) await x.close().catch((e) => console.error(`closing ${x.name}: ${e}`));
      if (admin) {
        if (pgName) await admin.query(`DROP DATABASE IF EXISTS ${pgName} WITH (FORCE)`).catch((e) => console.error(`dropping ${pgName}: ${e}`));
        await admin.end().catch(() => {});
      }
      // The private clickhouse-server outlives this process unless stopped here.
      if (ch) await ch.stop().catch((e) => console.error(`stopping clickhouse-server: ${e}`));
    })());
  const onSignal = (sig: NodeJS.Signals) => {
    if (stopping) return;
    stopping = true;
    console.error(`\n${sig}: stopping the private clickhouse-server`);
    void cleanup().finally(() => process.exit(130));
  };
  for (const sig of ['SIGINT', 'SIGTERM', 'SIGHUP'] as const) process.on(sig, onSignal);
  const notStopping = () => {
    if (stopping) throw new Error('stopped by a signal');
  };
  let mismatches = 0;
  try {
    const pgUrl = new URL(PG_BASE);
    ready = (async () => {
      ch = await startClickHouseServer();
      admin = new pg.Client({ connectionString: PG_BASE });
      await admin.connect();
      pgName = `sl_bench_ai_reads_${process.pid}`;
      await admin.query(`CREATE DATABASE ${pgName}`);
      pgUrl.pathname = `/${pgName}`;
    })();
    await ready;
    notStopping();
    ch = ch!;

    console.log(`clickhouse-server ${ch.version}; seeding ${N} observations (${Math.round(SCORED * 100)} % of generations scored, ${Math.round(RESENT * 100)} % of generations sent twice) over 30 days on each backend (load ${load()})`);
    notStopping();
    await side('SQLite', {}, sides);
    notStopping(); // a side created after cleanup closed the others would be left behind
    await side('ClickHouse + PostgreSQL', { clickhouseUrl: `${ch.url}/bench_ai_reads`, databaseUrl: pgUrl.toString() }, sides);
    for (const x of sides) console.log(`  ${x.name}: seeded in ${x.seedSeconds.toFixed(0)} s (${Math.round(N / x.seedSeconds)} observations/s)     `);
    const [lite, chSide] = sides as [Side, Side];
    const engine = chSide.s.services.clickhouse!.engine;
    const versions = await engine.query<{ rows: number; ids: number }>('SELECT count() AS rows, uniqExact(observation_id) AS ids FROM agent_observations');
    const scoreVersions = await engine.query<{ rows: number; ids: number }>('SELECT count() AS rows, uniqExact(score_id) AS ids FROM agent_scores');
    console.log(`ClickHouse rows (versions, less any merged already) / ids: observations ${versions[0]!.rows} / ${versions[0]!.ids}, scores ${scoreVersions[0]!.rows} / ${scoreVersions[0]!.ids} (before any merge)`);

    const P = (x: Side) => `/v1/projects/${x.project}`;
    const iso = (ms: number) => encodeURIComponent(new Date(ms).toISOString());
    // One `to` for every read, so the two sides answer over the same window; `from` is 30 days (24 h) before it.
    const TO = Date.now();
    const w30 = `from=${iso(TO - 30 * DAY)}&to=${iso(TO)}`;
    const w24 = `from=${iso(TO - DAY)}&to=${iso(TO)}`;
    const w7 = `from=${iso(TO - 7 * DAY)}&to=${iso(TO)}`;
    const someGen = `obs-${Math.floor(TRACES / 2)}-1`;
    const round2 = (v: number) => Math.round(v * 100) / 100;
    type Read = [label: string, path: (x: Side) => string, digest?: (b: any) => unknown];
    const reads: Read[] = [
      ['ai.stats, 30 days', (x) => `${P(x)}/ai/stats?${w30}`, (b) => ({ ...b.summary, cost_usd: round2(b.summary.cost_usd), avg_latency_ms: Math.round(b.summary.avg_latency_ms), sessions: b.sessions.count, users: b.users.count, models: b.top_models.map((m: any) => [m.model, m.requests]) })],
      ['ai.stats, 24 h', (x) => `${P(x)}/ai/stats?${w24}`, (b) => ({ observations: b.summary.observations, requests: b.summary.requests, total_tokens: b.summary.total_tokens, sessions: b.sessions.count, users: b.users.count })],
      ['ai.histogram, 30 days', (x) => `${P(x)}/ai/histogram?${w30}`, (b) => b.data.map((d: any) => [d.date, d.observations, d.requests, d.errors, d.total_tokens])],
      ['agentObservations.quality, 30 days', (x) => `${P(x)}/agent-observations/quality?${w30}`, (b) => ({ total: b.total_observations, generations: b.generations, coverage: b.coverage, invalid: b.invalid_token_totals, scores: b.scores })],
      ['agentObservations.list, 7 days, model + status', (x) => `${P(x)}/agent-observations?${w7}&model=gpt-4o&status=ok&limit=50`, (b) => ({ total: b.total, ids: b.data.map((o: any) => o.observation_id) })],
      ['agentObservations.get (a resent generation or not)', (x) => `${P(x)}/agent-observations/${someGen}`, (b) => ({ tokens: b.total_tokens, output: b.output_json, status: b.status })],
      ['agentScores.summary, 30 days', (x) => `${P(x)}/agent-scores/summary?${w30}`, (b) => b.data.map((d: any) => ({ ...d, avg_value: d.avg_value === null ? null : round2(d.avg_value) }))],
      ['ai.session, busy session', (x) => `${P(x)}/ai/sessions/${BUSY}`, (b) => ({ nodes: b.nodes.length, truncated: b.truncated, observations: b.totals.observations, tokens: b.totals.total_tokens, errors: b.totals.errors })],
    ];

    // Every read answers 200 on both sides; digests of the bodies must agree.
    for (const [label, path, digest] of reads) {
      const [a, b] = [await get(lite, path(lite)), await get(chSide, path(chSide))];
      if (a.status !== 200 || b.status !== 200) throw new Error(`${label}: SQLite ${a.status}, ClickHouse ${b.status}: ${JSON.stringify(a.status !== 200 ? a.body : b.body).slice(0, 400)}`);
      if (!digest) continue;
      const [da, db] = [JSON.stringify(digest(a.body)), JSON.stringify(digest(b.body))];
      if (da !== db) {
        mismatches++;
        console.log(`\n!!!!!!!! MISMATCH in ${label} !!!!!!!!\n  SQLite:     ${da.slice(0, 1500)}\n  ClickHouse: ${db.slice(0, 1500)}\n`);
      }
    }
    console.log(mismatches ? `!!!!!!!! ${mismatches} read(s) differ between the backends !!!!!!!!` : 'bodies agree on every compared read');

    const rows: string[][] = [];
    for (const [label, path] of reads) {
      const p95: number[] = [];
      for (const x of sides) {
        const r = await timeGetP95(x.url, x.key, () => path(x), RUNS);
        if (r.status !== 200) throw new Error(`${label} on ${x.name}: ${r.status}`);
        p95.push(r.p95);
      }
      const log = await chQueries(engine, () => get(chSide, path(chSide)));
      if (PROF) {
        console.log(`\n${label}: ${log.length} ClickHouse queries`);
        for (const q of log) console.log(`  ${q.ms.toFixed(1)} ms  ${q.sql.slice(0, 240)}`);
      }
      rows.push([label, ...p95.map((v) => v.toFixed(1)), (p95[1]! / p95[0]!).toFixed(2), String(log.length), load()]);
    }
    console.log(`\n${N} agent observations over 30 days (${versions[0]!.rows} ClickHouse row versions), ${scoreVersions[0]!.ids} scores; p95 of ${RUNS} sequential calls after a warm-up (ms):\n`);
    console.log('| read | SQLite | ClickHouse + PostgreSQL | ratio | CH queries | load |\n|---|---:|---:|---:|---:|---:|');
    for (const r of rows) console.log(`| ${r.join(' | ')} |`);
    if (mismatches) console.log(`\n!!!!!!!! ${mismatches} read(s) differ between the backends (above) !!!!!!!!`);
    if (HOLD) {
      console.log(`\nholding: clickhouse-server at ${ch.url} (database bench_ai_reads, project_id ${chSide.project}); Ctrl-C stops it`);
      await new Promise(() => {}); // until a signal: onSignal cleans up
    }
  } finally {
    await cleanup();
    for (const sig of ['SIGINT', 'SIGTERM', 'SIGHUP'] as const) process.off(sig, onSignal);
  }
  if (mismatches) process.exitCode = 1;
}

await main();
