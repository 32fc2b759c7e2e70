import { FLAG_COLUMNS, type FlagColumn } from '../../domain/ai/observation.js';
import type { FlagSums } from '../../domain/ai/quality.js';
import {
  OBS_COLUMNS, type AiReader, type AiRepo, type AiService, type ExportFilters, type GroupAggregate, type ObservationFilters, type PartyAggregate,
  type RollupDim, type ScoreFilters, type StoredObservation, type StoredScore, type UsageAggregate,
} from '../ai-repo.js';
import { lit, type ChEngine } from './client.js';
import { literalLists, type ChAiStore, type ChObservationRow } from './ai-store.js';
import { VERSIONED, type VersionedTable } from './schema.js';

const DAY = 86_400_000;
const OBS_VALUES = [...OBS_COLUMNS.filter((c) => c !== 'observation_id'), ...FLAG_COLUMNS];
const SCORE_VALUES = [
  'trace_id', 'observation_id', 'span_id', 'session_id', 'user_id', 'name', 'value', 'string_value', 'data_type', 'source', 'comment', 'author', 'model',
  'environment', 'release', 'metadata', 'started_ms', 'received_ms', 'deleted',
] as const;
const OBS_FILTERS = ['trace_id', 'session_id', 'user_id', 'agent_id', 'workflow_id', 'observation_type', 'status', 'model', 'provider', 'tool_name', 'release', 'environment'] as const;
const TEXT_COLUMNS = ['message', 'observation_name', 'tool_name', 'input_json', 'output_json', 'attributes', 'tags'];

const [OBS_T, SCORE_T] = VERSIONED;

/**
 * The current rows of a versioned table (schema.ts VERSIONED) where `cond` holds: its rows less the
 * versions a later one replaced (marked by ai-store.ts markSuperseded), under the table's column
 * names — no aggregation per id. `range`, a condition on the marks' columns (`started_ms`, the id)
 * that `cond` implies (the read's window, the ids read), narrows the marks read: a mark lies at its
 * version's start.
 */
function current(t: VersionedTable, values: readonly string[], pid: number, cond: string, range?: string, withVersion = false): string {
  // The marks are checked on the rows `cond` selected, outside the inner query: as a condition of the
  // inner query, ClickHouse evaluates them with `cond` before reading (PREWHERE), over every row —
  // twice as slow on 18.16 (bench/ai-reads.ts).
  const cols = [t.id, ...values].join(', ');
  return `SELECT ${cols}${withVersion ? ', version' : ''} FROM (SELECT ${cols}, version FROM ${t.table} WHERE project_id = ${lit(pid)} AND (${cond}))
    WHERE (${t.id}, version) NOT IN (SELECT ${t.id}, version FROM ${t.superseded} WHERE project_id = ${lit(pid)}${range ? ` AND ${range}` : ''})`;
}
const obsNow = (pid: number, cond: string, range?: string, withVersion = false) => current(OBS_T, OBS_VALUES, pid, cond, range, withVersion);
const scoresNow = (pid: number, cond: string, range?: string, values: readonly string[] = SCORE_VALUES) => current(SCORE_T, values, pid, cond, range);
/**
 * Only these columns of the current observations, for an aggregate: 18.16 reads every column the
 * inner queries name (all of them: 170–385 ms for the quality sums at 100k, these 16 flags: 124–150).
 */
const obsCols = (values: readonly string[], pid: number, cond: string, range?: string) => current(OBS_T, values, pid, cond, range);

/**
 * The current rows of these ids, found through the keys table (schema.ts migration 11: every
 * version's start, by id) and read by the primary key of their own table. Newest first, so that of
 * two versions left current (a process killed between its insert and its marks) the newest is taken.
 */
function byIds(t: VersionedTable, values: readonly string[], pid: number, ids: string[] | string, withVersion = false): string {
  const list = typeof ids === 'string' ? ids : ids.map(lit).join(', ');
  return `${current(t, values, pid, `${t.id} IN (${list}) AND started_ms IN (SELECT started_ms FROM ${t.keys} WHERE project_id = ${lit(pid)} AND ${t.id} IN (${list}))`,
    `${t.id} IN (${list})`, withVersion)} ORDER BY version DESC`;
}

const win = (fromMs: number, toMs: number) => `started_ms >= ${lit(fromMs)} AND started_ms < ${lit(toMs)}`;
/** ASCII lower case, as SQLite's LIKE folds (and ClickHouse's lower()). */
const asciiLower = (s: string) => s.replace(/[A-Z]/g, (c) => c.toLowerCase());

/** The observation filters (as ai-repo.ts `where`): equalities, `q` a case-insensitive (ASCII) substring of the text columns. */
function obsWhere(f: Partial<ObservationFilters>): string {
  const parts: string[] = [];
  for (const k of OBS_FILTERS) if (f[k] !== undefined) parts.push(`${k} = ${lit(f[k])}`);
  if (f.q) parts.push(`(${TEXT_COLUMNS.map((c) => `position(lower(${c}), ${lit(asciiLower(f.q!))}) > 0`).join(' OR ')})`);
  return parts.map((p) => ` AND ${p}`).join('');
}

const USAGE = `count() AS n, sum(f_gen) AS generations, sum(f_error) AS errors, countIf(observation_type = 'tool_call') AS tool_calls,
  sum(ifNull(cost_usd, 0)) AS cost, sum(ifNull(prompt_tokens, 0)) AS prompt, sum(ifNull(completion_tokens, 0)) AS completion,
  sum(ifNull(total_tokens, 0)) AS tokens, sumIf(duration_ms, observation_type = 'generation') AS gen_duration`;
/** The columns USAGE and PARTY read. */
const USAGE_COLS = ['f_gen', 'f_error', 'observation_type', 'cost_usd', 'prompt_tokens', 'completion_tokens', 'total_tokens', 'duration_ms'];
const PARTY_COLS = ['f_gen', 'f_error', 'cost_usd', 'total_tokens', 'started_ms'];
const PARTY = `count() AS n, sum(f_gen) AS generations, sum(f_error) AS errors, sum(ifNull(cost_usd, 0)) AS cost, sum(ifNull(total_tokens, 0)) AS tokens,
  min(started_ms) AS first_ms, max(started_ms) AS last_ms`;

/** Aggregates as numbers (both engines answer 64-bit integers unquoted: client.ts CH_SETTINGS; this guards a server that quotes them). */
const num = <T extends object>(r: T): T => {
  for (const k in r) if (k !== 'key' && typeof r[k] === 'string') (r as Record<string, unknown>)[k] = Number(r[k]);
  return r;
};

/**
 * Agent observations and scores read from ClickHouse (issue 20): the answers of ai-repo.ts's reads,
 * computed from the current rows (each id's newest version: the rows not marked superseded, schema.ts
 * migration 11) — no rollups, so a replaced observation or score counts once, as its latest write.
 * Differences: sessions' and users' first and last
 * activity are those of their current observations (SQLite keeps the earliest and latest start ever
 * written, an outer bound, when a replacement moves an observation); aggregates cover the retained
 * rows only (SQLite's hourly rollups and session/user totals outlive the observations).
 */
export function createChAiReader(engine: ChEngine) {
  const q = <T>(s: string) => engine.query<T>(s);

  /**
   * The current rows of a page chosen by a narrow query (its ids and starts, in order): read by id
   * within the page's time span (the primary key), every column — 18.16 reads every column a query
   * names for every row it filters, so sorting whole rows to keep a page read them all.
   */
  async function rowsOf(pid: number, page: { observation_id: string; started_ms: number }[]): Promise<StoredObservation[]> {
    if (!page.length) return [];
    const ids = page.map((p) => lit(p.observation_id)).join(', ');
    let lo = Infinity;
    let hi = -Infinity;
    for (const p of page) (lo = Math.min(lo, p.started_ms)), (hi = Math.max(hi, p.started_ms));
    // A millisecond either side: the starts come back as text and are parsed again.
    const rows = await q<StoredObservation>(obsNow(pid, `observation_id IN (${ids}) AND started_ms >= ${lit(lo - 1)} AND started_ms <= ${lit(hi + 1)}`, `observation_id IN (${ids})`));
    const byId = new Map(rows.map((r) => [r.observation_id, r]));
    return page.flatMap((p) => byId.get(p.observation_id) ?? []);
  }

  async function list(projectId: string, f: ObservationFilters, limit: number, offset: number) {
    const pid = Number(projectId);
    const w = win(f.fromMs, f.toMs);
    const base = `FROM (${obsCols(['started_ms'], pid, `${w}${obsWhere(f)}`, w)})`;
    const [[c], page] = await Promise.all([
      q<{ n: number }>(`SELECT count() AS n ${base}`),
      q<{ observation_id: string; started_ms: number }>(`SELECT observation_id, started_ms ${base} ORDER BY started_ms DESC, observation_id DESC LIMIT ${lit(offset)}, ${lit(limit)}`),
    ]);
    return { rows: await rowsOf(pid, page), total: Number(c?.n ?? 0) };
  }

  async function get(projectId: string, id: string): Promise<StoredObservation | null> {
    const [r] = await q<StoredObservation>(`${byIds(OBS_T, OBS_VALUES, Number(projectId), [id])} LIMIT 1`);
    return r ?? null;
  }

  /** Current rows of these ids and of these traces (with their version): the Langfuse ingest view. */
  async function currentRows(projectId: string, ids: string[], traceIds: string[]): Promise<ChObservationRow[]> {
    const pid = Number(projectId);
    const inList = (col: string, xs: string[]) => (xs.length ? `${col} IN (${xs.map(lit).join(', ')})` : '0');
    // By id through the keys, by trace over the project's rows; an id in both answers counts once, its newest current version.
    const [a, b] = await Promise.all([
      // The query names the ids three times: lists of at most 60,000 characters (max_query_size is 256 KiB).
      Promise.all(literalLists(ids, 60_000).map((list) => q<ChObservationRow>(byIds(OBS_T, OBS_VALUES, pid, list, true)))).then((r) => r.flat()),
      traceIds.length ? q<ChObservationRow>(obsNow(pid, inList('trace_id', traceIds), undefined, true)) : [],
    ]);
    const out = new Map<string, ChObservationRow>();
    for (const r of [...a, ...b]) {
      const row = { ...r, project_id: pid, version: Number(r.version) };
      const o = out.get(row.observation_id);
      if (!o || o.version < row.version) out.set(row.observation_id, row);
    }
    return [...out.values()];
  }

  const dims = (f: Partial<Record<RollupDim, string>>) => obsWhere(f as Partial<ObservationFilters>);

  async function qualitySums(projectId: string, fromMs: number, toMs: number, f: Partial<Record<RollupDim, string>>): Promise<FlagSums> {
    const w = win(fromMs, toMs);
    const [r] = await q<FlagSums>(`SELECT count() AS n, ${FLAG_COLUMNS.map((c) => `sum(${c}) AS ${c}_s`).join(', ')} FROM (${obsCols(FLAG_COLUMNS, Number(projectId), `${w}${dims(f)}`, w)})`);
    const out = { n: Number((r as { n: number }).n) } as Record<string, number>;
    for (const c of FLAG_COLUMNS) out[c] = Number((r as unknown as Record<string, number>)[`${c}_s`]);
    return out as unknown as FlagSums;
  }

  async function missingExamples(projectId: string, fromMs: number, toMs: number, f: Partial<Record<RollupDim, string>>, captured: FlagColumn, eligible: FlagColumn | 'n', limit: number) {
    const w = win(fromMs, toMs);
    const cond = `${w}${dims(f)} AND ${eligible === 'n' ? '1' : `${eligible} = 1`} AND ${captured} = 0`;
    const rows = await q<{ observation_id: string }>(
      `SELECT observation_id FROM (${obsCols(['started_ms'], Number(projectId), cond, w)}) ORDER BY started_ms DESC, observation_id DESC LIMIT ${lit(limit)}`,
    );
    return rows.map((r) => r.observation_id);
  }

  async function scoreCounts(projectId: string, fromMs: number, toMs: number, f: Partial<Record<RollupDim, string>>) {
    const pid = Number(projectId);
    const w = win(fromMs, toMs);
    const d = dims(f);
    // With observation filters, only scores of current observations that match them (as SQLite's join).
    const ofObs = d ? ` AND observation_id IN (SELECT observation_id FROM (${obsCols([], pid, `1${d}`)}))` : '';
    const [r] = await q<{ count: number; scored_observations: number }>(
      `SELECT count() AS count, uniqExactIf(observation_id, observation_id != '') AS scored_observations FROM (${scoresNow(pid, w, w, ['observation_id', 'deleted'])}) WHERE deleted = 0${ofObs}`,
    );
    return { count: Number(r?.count ?? 0), scored_observations: Number(r?.scored_observations ?? 0) };
  }

  async function exportRows(projectId: string, f: ExportFilters, limit: number, offset: number): Promise<{ rows: StoredObservation[]; hasMore: boolean }> {
    const pid = Number(projectId);
    const w = win(f.fromMs, f.toMs);
    const cond = `${w}${obsWhere({ ...f, observation_type: 'generation' })}${f.require_output ? ' AND had_output = 1' : ''}`;
    const sc: string[] = [];
    if (f.score_name !== undefined) sc.push(`name = ${lit(f.score_name)}`);
    if (f.score_source !== undefined) sc.push(`source = ${lit(f.score_source)}`);
    if (f.score_label !== undefined) sc.push(`string_value = ${lit(f.score_label)}`);
    if (f.min_score !== undefined) sc.push(`data_type != 'categorical' AND value >= ${lit(f.min_score)}`);
    if (f.max_score !== undefined) sc.push(`data_type != 'categorical' AND value <= ${lit(f.max_score)}`);
    let scoreSql = '';
    if (sc.length) {
      // A generation with a current score matching them: on the observation, or without one on its trace.
      const s = `SELECT observation_id, trace_id FROM (${scoresNow(pid, sc.join(' AND '))}) WHERE deleted = 0`;
      scoreSql = ` AND (observation_id IN (SELECT observation_id FROM (${s}) WHERE observation_id != '')
        OR (trace_id != '' AND trace_id IN (SELECT trace_id FROM (${s}) WHERE observation_id = '')))`;
    }
    const page = await q<{ observation_id: string; started_ms: number }>(
      `SELECT observation_id, started_ms FROM (${obsCols(['started_ms', 'trace_id'], pid, cond, w)}) WHERE 1${scoreSql} ORDER BY started_ms ASC, observation_id ASC LIMIT ${lit(offset)}, ${lit(limit + 1)}`,
    );
    const rows = await rowsOf(pid, page);
    return { rows: rows.slice(0, limit), hasMore: rows.length > limit };
  }

  async function scoresForObservations(projectId: string, obs: { observation_id: string; trace_id: string }[]): Promise<StoredScore[]> {
    if (!obs.length) return [];
    const ids = obs.map((o) => o.observation_id);
    const traces = [...new Set(obs.map((o) => o.trace_id).filter(Boolean))];
    const cond = `(observation_id IN (${ids.map(lit).join(', ')})${traces.length ? ` OR (observation_id = '' AND trace_id IN (${traces.map(lit).join(', ')}))` : ''})`;
    return q<StoredScore>(`SELECT * FROM (${scoresNow(Number(projectId), cond)}) WHERE deleted = 0 ORDER BY started_ms, score_id`);
  }

  function scoreWhere(f: ScoreFilters): string {
    let s = win(f.fromMs, f.toMs); // scoresNow's range: every caller passes it
    for (const k of ['trace_id', 'observation_id', 'session_id', 'user_id', 'name', 'source', 'data_type'] as const) if (f[k] !== undefined) s += ` AND ${k} = ${lit(f[k])}`;
    return s;
  }

  async function listScores(projectId: string, f: ScoreFilters, limit: number, offset: number) {
    const cond = scoreWhere(f);
    const base = `FROM (${scoresNow(Number(projectId), cond, win(f.fromMs, f.toMs))}) WHERE deleted = 0`;
    const [[c], rows] = await Promise.all([
      q<{ n: number }>(`SELECT count() AS n ${base}`),
      q<StoredScore>(`SELECT * ${base} ORDER BY started_ms DESC, score_id DESC LIMIT ${lit(offset)}, ${lit(limit)}`),
    ]);
    return { rows, total: Number(c?.n ?? 0) };
  }

  async function scoreSummary(projectId: string, f: ScoreFilters) {
    const cond = scoreWhere(f);
    const rows = await q<{ name: string; data_type: string; sv: string; count: number; a: number; mn: number; mx: number }>(
      `SELECT name, data_type, if(data_type = 'categorical', string_value, '') AS sv, count() AS count, avg(value) AS a, min(value) AS mn, max(value) AS mx
       FROM (${scoresNow(Number(projectId), cond, win(f.fromMs, f.toMs), ['name', 'data_type', 'string_value', 'value', 'deleted'])}) WHERE deleted = 0 GROUP BY name, data_type, sv ORDER BY name, data_type, sv`,
    );
    return rows.map((r) => {
      const cat = r.data_type === 'categorical';
      return {
        name: r.name, data_type: r.data_type, string_value: r.sv, count: Number(r.count),
        avg_value: cat ? null : Number(r.a), min_value: cat ? null : Number(r.mn), max_value: cat ? null : Number(r.mx),
      };
    });
  }

  /**
   * Usage over the window by model and provider, in one query shared by the calls made together
   * (ai.stats asks for the summary, the top models and the top providers at once): the sums are
   * additive, so each is a sum over these groups. Dropped once answered.
   */
  const grouped = new Map<string, Promise<(UsageAggregate & { model: string; provider: string })[]>>();
  function usageGroups(projectId: string, fromMs: number, toMs: number) {
    const k = `${projectId}\u0000${fromMs}\u0000${toMs}`;
    let p = grouped.get(k);
    if (!p) {
      const w = win(fromMs, toMs);
      p = q<UsageAggregate & { model: string; provider: string }>(
        `SELECT model, provider, ${USAGE} FROM (${obsCols([...USAGE_COLS, 'model', 'provider'], Number(projectId), w, w)}) GROUP BY model, provider`,
      ).then((rows) => rows.map((r) => ({ ...num({ ...r, model: 0, provider: 0 }), model: r.model, provider: r.provider })));
      grouped.set(k, p);
      const drop = () => grouped.delete(k);
      p.then(drop, drop);
    }
    return p;
  }
  const USAGE_SUMS = ['n', 'generations', 'errors', 'tool_calls', 'cost', 'prompt', 'completion', 'tokens', 'gen_duration'] as const;
  const addUsage = (into: UsageAggregate, r: UsageAggregate) => {
    for (const c of USAGE_SUMS) into[c] += Number(r[c]);
  };
  const zeroUsage = (): UsageAggregate => ({ n: 0, generations: 0, errors: 0, tool_calls: 0, cost: 0, prompt: 0, completion: 0, tokens: 0, gen_duration: 0 });

  async function usage(projectId: string, fromMs: number, toMs: number, f: Partial<Record<RollupDim, string>> = {}): Promise<UsageAggregate> {
    const d = dims(f);
    if (!d) {
      const out = zeroUsage();
      for (const g of await usageGroups(projectId, fromMs, toMs)) addUsage(out, g);
      return out;
    }
    const w = win(fromMs, toMs);
    const [r] = await q<UsageAggregate>(`SELECT ${USAGE} FROM (${obsCols(USAGE_COLS, Number(projectId), `${w}${d}`, w)})`);
    return num(r!);
  }

  /** As `ORDER BY generations DESC, key` in ClickHouse: keys in byte order (UTF-8). */
  const byGenerationsThenKey = (a: GroupAggregate, b: GroupAggregate) => b.generations - a.generations || Buffer.compare(Buffer.from(a.key), Buffer.from(b.key));

  async function usageBy(projectId: string, fromMs: number, toMs: number, dim: 'model' | 'provider', limit: number): Promise<GroupAggregate[]> {
    const by = new Map<string, GroupAggregate>();
    for (const g of await usageGroups(projectId, fromMs, toMs)) {
      const key = g[dim];
      if (key === '') continue;
      let a = by.get(key);
      if (!a) by.set(key, (a = { key, ...zeroUsage() }));
      addUsage(a, g);
    }
    return [...by.values()].filter((a) => a.generations > 0).sort(byGenerationsThenKey).slice(0, limit);
  }

  async function usageByDay(projectId: string, fromMs: number, toMs: number): Promise<(UsageAggregate & { day: number })[]> {
    const w = win(fromMs, toMs);
    const rows = await q<UsageAggregate & { day: number }>(
      `SELECT intDiv(toUInt64(started_ms), ${DAY}) * ${DAY} AS day, ${USAGE} FROM (${obsCols([...USAGE_COLS, 'started_ms'], Number(projectId), w, w)}) GROUP BY day ORDER BY day`,
    );
    return rows.map(num);
  }

  /**
   * Sessions (users) active in the window — first activity before `to`, last at or after `from` — with their totals over every retained observation:
   * their count and the top `limit` by cost in one query (the parties sorted inside ClickHouse as tuples, in the order of `ORDER BY cost DESC, n DESC, key`).
   */
  async function parties(projectId: string, kind: 'session' | 'user', fromMs: number, toMs: number, limit: number): Promise<{ count: number; top: PartyAggregate[] }> {
    const col = kind === 'session' ? 'session_id' : 'user_id';
    const all = `SELECT ${col} AS key, ${PARTY} FROM (${obsCols([...PARTY_COLS, col], Number(projectId), `${col} != ''`)}) GROUP BY key`;
    type Top = [negCost: number, negN: number, key: string, generations: number, errors: number, tokens: number, first: number, last: number];
    const [r] = await q<{ parties: number; top: Top[] }>(
      `SELECT count() AS parties, arraySlice(arraySort(groupArray((-cost, -toInt64(n), key, generations, errors, tokens, first_ms, last_ms))), 1, ${lit(limit)}) AS top
       FROM (${all}) WHERE last_ms >= ${lit(fromMs)} AND first_ms < ${lit(toMs)}`,
    );
    const top = (r?.top ?? []).map(([cost, n, key, generations, errors, tokens, first_ms, last_ms]) =>
      num({ key, n: -Number(n), generations, errors, cost: -Number(cost), tokens, first_ms, last_ms }),
    );
    return { count: Number(r?.parties ?? 0), top };
  }

  async function sessionRows(projectId: string, sessionId: string, limit: number): Promise<StoredObservation[]> {
    const cond = `session_id = ${lit(sessionId)}`;
    return q<StoredObservation>(`SELECT * FROM (${obsNow(Number(projectId), cond)}) ORDER BY started_ms, observation_id LIMIT ${lit(limit)}`);
  }

  async function userBreakdown(projectId: string, userId: string, fromMs: number, toMs: number) {
    const w = win(fromMs, toMs);
    const src = `FROM (${obsCols([...USAGE_COLS, 'started_ms', 'session_id', 'model'], Number(projectId), `user_id = ${lit(userId)} AND ${w}`, w)}) WHERE 1`;
    const [[t], sessions, models] = await Promise.all([
      q<UsageAggregate & { first_ms: number | null; last_ms: number | null }>(`SELECT ${USAGE}, min(started_ms) AS first_ms, max(started_ms) AS last_ms ${src}`),
      q<PartyAggregate>(`SELECT session_id AS key, ${PARTY} ${src} AND session_id != '' GROUP BY key ORDER BY last_ms DESC, key LIMIT 50`),
      q<{ key: string; n: number; cost: number; tokens: number }>(
        `SELECT model AS key, count() AS n, sum(ifNull(cost_usd, 0)) AS cost, sum(ifNull(total_tokens, 0)) AS tokens ${src} AND observation_type = 'generation' AND model != ''
         GROUP BY key ORDER BY n DESC, key LIMIT 20`,
      ),
    ]);
    const totals = num(t!);
    // No row: no first or last (ClickHouse's min/max of nothing is 0).
    if (!Number(totals.n)) (totals.first_ms = null), (totals.last_ms = null);
    return { totals, sessions: sessions.map(num), models: models.map(num) };
  }

  const reader: AiReader = {
    list, get, qualitySums, missingExamples, scoreCounts, exportRows, scoresForObservations, listScores, scoreSummary, usage, usageBy, usageByDay, parties,
    sessionRows, userBreakdown,
  };
  return { ...reader, currentRows };
}

export type ChAiReader = ReturnType<typeof createChAiReader>;

/** The AI service with observations and scores in ClickHouse: their writes to the store, every read from ClickHouse; settings, trace info and fixer dispatches stay in SQLite. */
export function chAiService(repo: AiRepo, store: ChAiStore, reader: ChAiReader): AiService {
  const { observationsOfTrace: _o, list: _l, get: _g, qualitySums: _q, missingExamples: _m, scoreCounts: _sc, exportRows: _e, scoresForObservations: _sf,
    listScores: _ls, scoreSummary: _ss, usage: _u, usageBy: _ub, usageByDay: _ud, parties: _p, sessionRows: _sr, userBreakdown: _ubd, ...rest } = repo;
  const { currentRows, ...reads } = reader;
  return {
    ...rest,
    ...reads,
    writeObservations: store.writeObservations,
    writeScores: store.writeScores,
    ingestView: (projectId, ids, traceIds) => store.ingestView(projectId, ids, traceIds, currentRows),
  };
}
