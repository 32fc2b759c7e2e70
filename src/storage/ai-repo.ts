/**
 * Agent observations, scores and their rollups (migration 020). Every method takes the project id
 * first. Writes keep the hourly rollups exact in the same transaction: a new row adds its
 * contribution, a replaced row (same observation id) subtracts the old one first. Inside a write
 * batch (createWriteBatcher) the rollup and session/user upserts wait for the batch's end, once per key.
 */
import type Database from 'better-sqlite3';
import type { Db } from './db.js';
import { batchTallies } from './write-batcher.js';
import { FLAG_COLUMNS, type FlagColumn, type ObservationRow, type ScoreDraft } from '../domain/ai/observation.js';
import type { FlagSums } from '../domain/ai/quality.js';
import type { TraceInfo } from '../domain/ai/langfuse-legacy.js';
import { OBS_ROWIDS_SQL, obsIdKey, registerObsIdKey } from './obs-ids.js';

const HOUR = 3_600_000;
const DAY = 86_400_000;
const FLAGS = FLAG_COLUMNS.join(', ');
/** Dimensions with their own rollup rows (quality filters, ai.stats groupings). */
const ROLLUP_DIMS = ['agent_id', 'workflow_id', 'model', 'provider', 'release', 'environment'] as const;
export type RollupDim = (typeof ROLLUP_DIMS)[number];
/** Above this many sessions (users) in a window, ai.stats finds its top ones by walking the cost index. */
const PARTY_SORT_MAX = 5000;
/** Entries of the small id level (agent_obs_ids_new, migration 041) that make the writer move them into the big one. */
export const OBS_ID_LEVEL_MAX = 16_384;
/** Writes of at least this many observations probe the id levels for all their keys in one query. */
const PROBE_MIN = 4;
const SUM_COLS = ['cost_sum', 'prompt_sum', 'completion_sum', 'tokens_sum', 'duration_sum', 'gen_duration_sum', 'tool_n'] as const;

export const OBS_COLUMNS = [
  'observation_id', 'parent_observation_id', 'trace_id', 'span_id', 'session_id', 'user_id', 'distinct_id', 'visitor_id', 'agent_id',
  'workflow_id', 'step_id', 'observation_type', 'observation_name', 'operation', 'message', 'level', 'status', 'source', 'model', 'provider',
  'tool_name', 'duration_ms', 'prompt_tokens', 'completion_tokens', 'total_tokens', 'cost_usd', 'cost_source', 'started_ms', 'received_ms',
  'environment', 'release', 'input_json', 'output_json', 'tags', 'attributes', 'had_input', 'had_output', 'had_system',
] as const;

/** A stored observation as read back (JSON columns still text). */
export type StoredObservation = Omit<ObservationRow, 'flags'> & Record<FlagColumn, number>;

export interface ObservationFilters {
  fromMs: number;
  toMs: number;
  trace_id?: string;
  session_id?: string;
  user_id?: string;
  agent_id?: string;
  workflow_id?: string;
  observation_type?: string;
  status?: string;
  model?: string;
  provider?: string;
  tool_name?: string;
  release?: string;
  environment?: string;
  q?: string;
}

export interface ExportFilters extends ObservationFilters {
  require_output: boolean;
  score_name?: string;
  score_source?: string;
  score_label?: string;
  min_score?: number;
  max_score?: number;
}

export interface ScoreFilters {
  fromMs: number;
  toMs: number;
  trace_id?: string;
  observation_id?: string;
  session_id?: string;
  user_id?: string;
  name?: string;
  source?: string;
  data_type?: string;
}

export interface StoredScore {
  score_id: string;
  trace_id: string;
  observation_id: string;
  span_id: string;
  session_id: string;
  user_id: string;
  name: string;
  value: number;
  string_value: string;
  data_type: string;
  source: string;
  comment: string;
  author: string;
  model: string;
  environment: string;
  release: string;
  metadata: string;
  started_ms: number;
  received_ms: number;
}

export interface UsageAggregate {
  n: number;
  generations: number;
  errors: number;
  tool_calls: number;
  cost: number;
  prompt: number;
  completion: number;
  tokens: number;
  gen_duration: number;
}

export interface GroupAggregate extends UsageAggregate {
  key: string;
  provider?: string;
}

export interface PartyAggregate {
  key: string;
  n: number;
  generations: number;
  errors: number;
  cost: number;
  tokens: number;
  first_ms: number;
  last_ms: number;
}

export interface FixDispatch {
  dispatch_id: string;
  source: string;
  requester: string;
  status: string;
  webhook_status: string;
  dispatched_ms: number;
  completed_ms: number | null;
}

/** A trace's, session's or user's first and last observation start (an outer bound: it only grows). */
type Range = { first_ms: number; last_ms: number };
/** The window [fromMs, toMs) narrowed to a range; no range (nothing stored for the id) gives an empty window. */
const narrowed = (fromMs: number, toMs: number, r: Range | undefined) =>
  r ? { fromMs: Math.max(fromMs, r.first_ms), toMs: Math.min(toMs, r.last_ms + 1) } : { fromMs: 0, toMs: 0 };

/** LIKE pattern for a case-insensitive substring (ASCII) with % and _ escaped. */
const likePattern = (q: string) => `%${q.replace(/[\\%_]/g, (c) => `\\${c}`)}%`;

/**
 * Whole hours inside [from, to) come from rollups; the partial hours at the edges from rows, unless
 * `emptyRange` says the part of an edge hour outside the window holds no observation: then that
 * hour's rollup row is exactly the edge, and is read instead. A window ending now (the usual read)
 * has nothing later in its last hour, so the current hour — the busiest part of the window under
 * ingest — is not read row by row.
 */
function split(fromMs: number, toMs: number, emptyRange: (a: number, b: number) => boolean) {
  let hStart = Math.ceil(fromMs / HOUR) * HOUR;
  let hEnd = Math.floor(toMs / HOUR) * HOUR;
  if (hStart > hEnd) {
    // Inside one hour: its rollup row when the hour holds nothing outside the window.
    const h = hEnd;
    if (emptyRange(h, fromMs) && emptyRange(toMs, h + HOUR)) return { hStart: h, hEnd: h + HOUR, edges: [] as [number, number][] };
    return { hStart: 0, hEnd: 0, edges: [[fromMs, toMs]] as [number, number][] };
  }
  const edges: [number, number][] = [];
  if (fromMs < hStart) {
    if (emptyRange(hStart - HOUR, fromMs)) hStart -= HOUR;
    else edges.push([fromMs, hStart]);
  }
  if (toMs > hEnd) {
    if (emptyRange(toMs, hEnd + HOUR)) hEnd += HOUR;
    else edges.push([hEnd, toMs]);
  }
  return { hStart, hEnd, edges };
}

export function createAiRepo(db: Db, opts: { idLevelMax?: number } = {}) {
  const idLevelMax = opts.idLevelMax ?? OBS_ID_LEVEL_MAX;
  registerObsIdKey(db);
  const insertCols = [...OBS_COLUMNS, ...FLAG_COLUMNS];
  const st = {
    insert: db.prepare(`INSERT INTO agent_observations (project_id, ${insertCols.join(', ')}) VALUES (?, ${insertCols.map(() => '?').join(', ')})`),
    update: db.prepare(`UPDATE agent_observations SET ${insertCols.filter((c) => c !== 'observation_id').map((c) => `${c} = ?`).join(', ')} WHERE id = ?`),
    // By id through the two id levels (migration 041); the id itself is compared (keys can collide).
    // (`+`: the row ids, not the time index on project_id.)
    byId: db.prepare(`SELECT * FROM agent_observations WHERE id IN (${OBS_ROWIDS_SQL}) AND +project_id = ? AND +observation_id = ?`),
    idNew: db.prepare('INSERT INTO agent_obs_ids_new (project_id, k, obs) VALUES (?, ?, ?)'),
    // The keys (of a JSON array of keys) present in either id level. Params: project, keys, project, keys.
    keysKnown: db
      .prepare(
        `SELECT k FROM agent_obs_ids_new WHERE project_id = ? AND k IN (SELECT value FROM json_each(?))
         UNION ALL SELECT k FROM agent_obs_ids WHERE project_id = ? AND k IN (SELECT value FROM json_each(?))`,
      )
      .pluck(),
    idNewCount: db.prepare('SELECT count(*) FROM agent_obs_ids_new').pluck(),
    idMove: db.prepare('INSERT OR IGNORE INTO agent_obs_ids (project_id, k, obs) SELECT project_id, k, obs FROM agent_obs_ids_new ORDER BY 1, 2, 3'),
    idClear: db.prepare('DELETE FROM agent_obs_ids_new'),
    // A trace's observations: its time range (migration 039), then the time index filtered on trace_id.
    ofTrace: db.prepare(
      `SELECT o.* FROM agent_obs_traces t JOIN agent_observations o INDEXED BY agent_obs_time
       ON o.project_id = t.project_id AND o.started_ms >= t.first_ms AND o.started_ms <= t.last_ms AND o.trace_id = t.trace_id
       WHERE t.project_id = ? AND t.trace_id = ?`,
    ),
    traceRange: db.prepare('SELECT first_ms, last_ms FROM agent_obs_traces WHERE project_id = ? AND trace_id = ?'),
    // A session's (user's) first and last activity: an outer bound of its observations' start times (migration 053).
    sessionRange: db.prepare('SELECT first_ms, last_ms FROM agent_sessions WHERE project_id = ? AND session_id = ?'),
    userRange: db.prepare('SELECT first_ms, last_ms FROM agent_users WHERE project_id = ? AND user_id = ?'),
    anyIn: db.prepare('SELECT 1 FROM agent_observations INDEXED BY agent_obs_time WHERE project_id = ? AND started_ms >= ? AND started_ms < ? LIMIT 1').pluck(),
    traceUpsert: db.prepare(
      'INSERT INTO agent_obs_traces (project_id, trace_id, first_ms, last_ms) VALUES (?, ?, ?, ?) ON CONFLICT DO UPDATE SET first_ms = min(first_ms, excluded.first_ms), last_ms = max(last_ms, excluded.last_ms)',
    ),
    rollup: db.prepare(
      `INSERT INTO agent_obs_1h (project_id, hour_ms, dim, value, n, ${FLAGS}, ${SUM_COLS.join(', ')})
       VALUES (?, ?, ?, ?, ?, ${FLAG_COLUMNS.map(() => '?').join(', ')}, ${SUM_COLS.map(() => '?').join(', ')})
       ON CONFLICT DO UPDATE SET n = n + excluded.n, ${[...FLAG_COLUMNS, ...SUM_COLS].map((f) => `${f} = ${f} + excluded.${f}`).join(', ')}`,
    ),
    party: (table: string, col: string) =>
      db.prepare(
        `INSERT INTO ${table} (project_id, ${col}, n, generations, errors, cost_sum, tokens_sum, first_ms, last_ms) VALUES (?, ?, ?, ?, ?, ?, ?, ?, ?)
         ON CONFLICT DO UPDATE SET n = n + excluded.n, generations = generations + excluded.generations, errors = errors + excluded.errors,
         cost_sum = cost_sum + excluded.cost_sum, tokens_sum = tokens_sum + excluded.tokens_sum,
         first_ms = min(first_ms, excluded.first_ms), last_ms = max(last_ms, excluded.last_ms)`,
      ),
    score: db.prepare(
      `INSERT INTO agent_scores (project_id, score_id, trace_id, observation_id, span_id, session_id, user_id, name, value, string_value, data_type, source,
        comment, author, model, environment, release, metadata, started_ms, received_ms, deleted)
       VALUES (?, ?, ?, ?, ?, ?, ?, ?, ?, ?, ?, ?, ?, ?, ?, ?, ?, ?, ?, ?, ?)
       ON CONFLICT(project_id, score_id) DO UPDATE SET trace_id = excluded.trace_id, observation_id = excluded.observation_id, span_id = excluded.span_id,
        session_id = excluded.session_id, user_id = excluded.user_id, name = excluded.name, value = excluded.value, string_value = excluded.string_value,
        data_type = excluded.data_type, source = excluded.source, comment = excluded.comment, author = excluded.author, model = excluded.model,
        environment = excluded.environment, release = excluded.release, metadata = excluded.metadata, started_ms = excluded.started_ms,
        received_ms = excluded.received_ms, deleted = excluded.deleted`,
    ),
    trace: db.prepare(
      // The conflict target named: PostgreSQL (agent_traces is a control table there) requires it.
      `INSERT INTO agent_traces (project_id, trace_id, name, session_id, user_id, tags, release, environment, metadata) VALUES (?, ?, ?, ?, ?, ?, ?, ?, ?)
       ON CONFLICT (project_id, trace_id) DO UPDATE SET name = CASE WHEN excluded.name != '' THEN excluded.name ELSE name END,
        session_id = CASE WHEN excluded.session_id != '' THEN excluded.session_id ELSE session_id END,
        user_id = CASE WHEN excluded.user_id != '' THEN excluded.user_id ELSE user_id END,
        tags = CASE WHEN excluded.tags != '[]' THEN excluded.tags ELSE tags END,
        release = CASE WHEN excluded.release != '' THEN excluded.release ELSE release END,
        environment = CASE WHEN excluded.environment != '' THEN excluded.environment ELSE environment END,
        metadata = CASE WHEN excluded.metadata != '{}' THEN excluded.metadata ELSE metadata END`,
    ),
    sessionRows: db.prepare(
      'SELECT * FROM agent_observations WHERE project_id = ? AND started_ms >= ? AND started_ms <= ? AND session_id = ? ORDER BY started_ms, observation_id LIMIT ?',
    ),
    traceGet: db.prepare('SELECT * FROM agent_traces WHERE project_id = ? AND trace_id = ?'),
    privacyGet: db.prepare('SELECT privacy_mode FROM ai_settings WHERE project_id = ?').pluck(),
    dataVersion: db.prepare('PRAGMA data_version').pluck(),
    privacySet: db.prepare('INSERT INTO ai_settings (project_id, privacy_mode, updated_ms) VALUES (?, ?, ?) ON CONFLICT (project_id) DO UPDATE SET privacy_mode = excluded.privacy_mode, updated_ms = excluded.updated_ms'),
    dispatch: db.prepare(
      `INSERT INTO ai_fix_dispatches (project_id, dispatch_id, source, requester, status, webhook_status, dispatched_ms, completed_ms) VALUES (?, ?, ?, ?, ?, ?, ?, ?)
       ON CONFLICT(project_id, dispatch_id) DO UPDATE SET status = excluded.status, webhook_status = excluded.webhook_status, completed_ms = excluded.completed_ms`,
    ),
  };
  const sessionUpsert = st.party('agent_sessions', 'session_id');
  const userUpsert = st.party('agent_users', 'user_id');
  /**
   * Privacy mode per project, read once and kept while the database's `PRAGMA data_version` stays put:
   * it moves when another process commits (SQLite file shared) and, with control data in PostgreSQL,
   * when any process changes `ai_settings` (control_version, PostgreSQL migration 7) — so a project
   * turning privacy mode on through one process has content withheld by every process from the next batch.
   */
  const privacyCache = new Map<number, boolean>();
  let privacyVersion: number | undefined;

  type Contribution = { row: StoredObservation | ObservationRow; sign: 1 | -1 };
  const NF = FLAG_COLUMNS.length;
  const width = 1 + NF + SUM_COLS.length;
  type Cell = { pid: number; hour: number; dim: string; value: string; v: Float64Array };
  type Party = { pid: number; id: string; n: number; gen: number; err: number; cost: number; tokens: number; first: number; last: number };
  /** Rollup cells and session/user totals not yet written, keyed by project, hour, dimension, value (by project and id). */
  type Tally = { cells: Map<string, Cell>; parties: readonly [Map<string, Party>, Map<string, Party>] };
  const newTally = (): Tally => ({ cells: new Map(), parties: [new Map(), new Map()] });

  /** Adds the changes of one write to `t`. */
  function tallyChanges(pid: number, changes: Contribution[], t: Tally) {
    const cells = t.cells;
    // Session/user totals of this write alone first: one that only lost rows is left out (below).
    const parties = [new Map<string, Party>(), new Map<string, Party>()] as const;
    const contrib = new Float64Array(width);
    let lastHour = NaN;
    const lastCells: (Cell | undefined)[] = new Array(ROLLUP_DIMS.length + 1);
    for (const { row: r, sign } of changes) {
      const hour = Math.floor(r.started_ms / HOUR) * HOUR;
      const gen = r.observation_type === 'generation';
      // A new row carries its flags in `flags`; a stored one as columns.
      const flags = ('flags' in r ? r.flags : r) as Record<FlagColumn, number>;
      contrib[0] = sign;
      for (let i = 0; i < NF; i++) contrib[1 + i] = sign * (flags[FLAG_COLUMNS[i]!] ?? 0);
      let j = 1 + NF;
      contrib[j++] = sign * (r.cost_usd ?? 0);
      contrib[j++] = sign * (r.prompt_tokens ?? 0);
      contrib[j++] = sign * (r.completion_tokens ?? 0);
      contrib[j++] = sign * (r.total_tokens ?? 0);
      contrib[j++] = sign * r.duration_ms;
      contrib[j++] = gen ? sign * r.duration_ms : 0;
      contrib[j++] = r.observation_type === 'tool_call' ? sign : 0;
      if (hour !== lastHour) (lastHour = hour), lastCells.fill(undefined);
      for (let d = -1; d < ROLLUP_DIMS.length; d++) {
        const dim = d < 0 ? '' : ROLLUP_DIMS[d]!;
        const value = d < 0 ? '' : String(r[dim as RollupDim]);
        // The previous row's cell of this dimension when the hour and value are the same (the usual case in a batch).
        let e = lastCells[d + 1];
        if (!e || e.value !== value) {
          const k = `${pid}\u0000${hour}\u0000${dim}\u0000${value}`;
          e = cells.get(k);
          if (!e) cells.set(k, (e = { pid, hour, dim, value, v: new Float64Array(width) }));
          lastCells[d + 1] = e;
        }
        const v = e.v;
        for (let i = 0; i < width; i++) v[i]! += contrib[i]!;
      }
      for (let pi = 0; pi < 2; pi++) {
        const id = pi === 0 ? r.session_id : r.user_id;
        if (!id) continue;
        const m = parties[pi]!;
        let p = m.get(id);
        // first/last only grow: a replaced row's old times are kept (they remain an outer bound).
        if (!p) m.set(id, (p = { pid, id, n: 0, gen: 0, err: 0, cost: 0, tokens: 0, first: Infinity, last: -Infinity }));
        p.n += sign;
        p.gen += sign * flags.f_gen;
        p.err += sign * flags.f_error;
        p.cost += sign * (r.cost_usd ?? 0);
        p.tokens += sign * (r.total_tokens ?? 0);
        if (sign > 0) {
          if (r.started_ms < p.first) p.first = r.started_ms;
          if (r.started_ms > p.last) p.last = r.started_ms;
        }
      }
    }
    for (let pi = 0; pi < 2; pi++) {
      for (const [id, p] of parties[pi]!) {
        if (!Number.isFinite(p.first)) continue; // only removals in this write: the totals stay as they were
        mergeParty(t.parties[pi]!, `${pid}\u0000${id}`, p);
      }
    }
  }

  function mergeParty(m: Map<string, Party>, k: string, p: Party) {
    const q = m.get(k);
    if (!q) return void m.set(k, p);
    q.n += p.n;
    q.gen += p.gen;
    q.err += p.err;
    q.cost += p.cost;
    q.tokens += p.tokens;
    if (p.first < q.first) q.first = p.first;
    if (p.last > q.last) q.last = p.last;
  }

  function mergeTally(into: Tally, from: Tally) {
    for (const [k, c] of from.cells) {
      const e = into.cells.get(k);
      if (!e) into.cells.set(k, c);
      else for (let i = 0; i < width; i++) e.v[i]! += c.v[i]!;
    }
    for (let pi = 0; pi < 2; pi++) for (const [k, p] of from.parties[pi]!) mergeParty(into.parties[pi]!, k, p);
  }

  /** One upsert per rollup cell and per session/user. */
  function writeTally(t: Tally) {
    const args: unknown[] = new Array(4 + width);
    for (const e of t.cells.values()) {
      args[0] = e.pid;
      args[1] = e.hour;
      args[2] = e.dim;
      args[3] = e.value;
      for (let i = 0; i < width; i++) args[4 + i] = e.v[i];
      st.rollup.run(args);
    }
    for (let pi = 0; pi < 2; pi++) {
      const stmt = pi === 0 ? sessionUpsert : userUpsert;
      for (const p of t.parties[pi]!.values()) stmt.run(p.pid, p.id, p.n, p.gen, p.err, p.cost, p.tokens, p.first, p.last);
    }
  }

  /*
   * Rollups and session/user totals are tallied in memory and written once per cell (session, user)
   * at the end: of the write batch when ingest runs inside one (the participant below: a job whose
   * savepoint rolls back leaves its tally out), else of the call. Observation rows and trace ranges
   * are written as they come (ingest reads them: replacements, the Langfuse trace update).
   */
  const tallies = batchTallies(newTally, mergeTally, writeTally);
  const batchParticipant = tallies.participant;

  const NOBS = OBS_COLUMNS.length;
  /** The insert's parameters: project id, the columns, the flags (one array, no spreading). */
  function insertArgs(pid: number, r: ObservationRow, out: unknown[]): unknown[] {
    out[0] = pid;
    for (let i = 0; i < NOBS; i++) out[1 + i] = r[OBS_COLUMNS[i]!];
    for (let i = 0; i < NF; i++) out[1 + NOBS + i] = r.flags[FLAG_COLUMNS[i]!];
    return out;
  }

  /** Does the stored row hold exactly this observation (every column and flag but the received time)? */
  function sameObservation(old: StoredObservation, r: ObservationRow): boolean {
    for (let i = 0; i < NOBS; i++) {
      const c = OBS_COLUMNS[i]!;
      if (c !== 'received_ms' && old[c] !== r[c]) return false;
    }
    for (let i = 0; i < NF; i++) if (old[FLAG_COLUMNS[i]!] !== r.flags[FLAG_COLUMNS[i]!]) return false;
    return true;
  }

  const byId = (pid: number, id: string): (StoredObservation & { id: number }) | undefined => {
    const k = obsIdKey(id);
    return st.byId.get(pid, k, pid, k, pid, id) as (StoredObservation & { id: number }) | undefined;
  };
  /** Entries in the small id level, as far as this connection knows (read at the first write). */
  let idNewCount: number | null = null;

  /** Insert or replace observations (same id replaces) and keep the rollups exact. Call inside a transaction. */
  function writeObservations(projectId: string, rows: ObservationRow[]): number {
    const pid = Number(projectId);
    const changes: Contribution[] = [];
    const args: unknown[] = new Array(1 + NOBS + NF);
    const traces = new Map<string, [number, number]>();
    idNewCount ??= st.idNewCount.get() as number;
    // Which of the write's id keys either level holds, in one query: an id whose key is in neither
    // (nor earlier in this write) is new and needs no lookup — the usual case, span ids are random.
    // (Every stored observation has its key in a level; keys can collide, so a known key is looked up.)
    const keys = rows.length >= PROBE_MIN ? rows.map((r) => obsIdKey(r.observation_id)) : null;
    const known = keys ? new Set(st.keysKnown.all(pid, JSON.stringify(keys), pid, JSON.stringify(keys)) as number[]) : null;
    for (let i = 0; i < rows.length; i++) {
      const r = rows[i]!;
      const k = keys ? keys[i]! : obsIdKey(r.observation_id);
      const old = known && !known.has(k) ? undefined : byId(pid, r.observation_id);
      insertArgs(pid, r, args);
      if (!old) {
        const rowid = st.insert.run(args).lastInsertRowid;
        st.idNew.run(pid, k, rowid);
        known?.add(k);
        idNewCount++;
      } else {
        // A resend of what is stored (an exporter's retry, a replayed batch) changes nothing: no
        // update, no rollup change; the row keeps its first received time.
        if (sameObservation(old, r)) continue;
        changes.push({ row: old, sign: -1 });
        // UPDATE … SET (every column but the observation id) WHERE id = <the stored row>
        const v = args.slice(2);
        v.push(old.id);
        st.update.run(v);
      }
      changes.push({ row: r, sign: 1 });
      if (r.trace_id) {
        const t = traces.get(r.trace_id);
        if (!t) traces.set(r.trace_id, [r.started_ms, r.started_ms]);
        else if (r.started_ms < t[0]) t[0] = r.started_ms;
        else if (r.started_ms > t[1]) t[1] = r.started_ms;
      }
    }
    for (const [id, t] of traces) st.traceUpsert.run(pid, id, t[0], t[1]);
    // The small id level is full: its entries move into the big one in key order, in this transaction.
    if (idNewCount >= idLevelMax) {
      st.idMove.run();
      st.idClear.run();
      idNewCount = 0;
    }
    const jobTally = tallies.job();
    if (jobTally) tallyChanges(pid, changes, jobTally);
    else {
      const t = newTally();
      tallyChanges(pid, changes, t);
      writeTally(t);
    }
    return rows.length;
  }

  function writeScores(projectId: string, scores: ScoreDraft[], receivedMs: number): number {
    const pid = Number(projectId);
    for (const s of scores) {
      st.score.run(
        pid, s.score_id, s.trace_id, s.observation_id, s.span_id, s.session_id, s.user_id, s.name, s.value, s.string_value, s.data_type, s.source,
        s.comment, s.author, s.model, s.environment, s.release, JSON.stringify(s.metadata), s.started_ms, receivedMs, s.deleted ? 1 : 0,
      );
    }
    return scores.length;
  }

  // ---- reads -------------------------------------------------------------------------------

  function where(f: ObservationFilters, alias = ''): { sql: string; params: unknown[] } {
    const a = alias ? `${alias}.` : '';
    const parts: string[] = [];
    const params: unknown[] = [];
    for (const k of ['trace_id', 'session_id', 'user_id', 'agent_id', 'workflow_id', 'observation_type', 'status', 'model', 'provider', 'tool_name', 'release', 'environment'] as const) {
      if (f[k] !== undefined) {
        parts.push(`${a}${k} = ?`);
        params.push(f[k]);
      }
    }
    if (f.q) {
      const p = likePattern(f.q);
      parts.push(`(${['message', 'observation_name', 'tool_name', 'input_json', 'output_json', 'attributes', 'tags'].map((c) => `${a}${c} LIKE ? ESCAPE '\\'`).join(' OR ')})`);
      for (let i = 0; i < 7; i++) params.push(p);
    }
    return { sql: parts.length ? ` AND ${parts.join(' AND ')}` : '', params };
  }

  /**
   * With a trace_id filter, the window narrowed to the trace's time range (migration 039: there is no
   * per-observation trace index; the time index walks the range). Every observation of the trace
   * starts within [first_ms, last_ms]; an unknown trace gives an empty window. A session_id or user_id
   * filter narrows it the same way to the session's (user's) first and last activity (migration 053:
   * no per-observation session or user index either).
   */
  function narrowToTrace<F extends ObservationFilters>(projectId: string, filters: F): F {
    let f = filters;
    const pid = Number(projectId);
    const ranges: [string | undefined, Database.Statement][] = [
      [f.trace_id, st.traceRange],
      [f.session_id, st.sessionRange],
      [f.user_id, st.userRange],
    ];
    for (const [id, stmt] of ranges) {
      if (id === undefined) continue;
      const r = stmt.get(pid, id) as Range | undefined;
      f = { ...f, ...narrowed(f.fromMs, f.toMs, r) };
    }
    return f;
  }

  function list(projectId: string, filters: ObservationFilters, limit: number, offset: number): { rows: StoredObservation[]; total: number } {
    const f = narrowToTrace(projectId, filters);
    const w = where(f);
    const base = `FROM agent_observations WHERE project_id = ? AND started_ms >= ? AND started_ms < ?${w.sql}`;
    const args = [Number(projectId), f.fromMs, f.toMs, ...w.params];
    const total = db.prepare(`SELECT count(*) ${base}`).pluck().get(...args) as number;
    const rows = db.prepare(`SELECT * ${base} ORDER BY started_ms DESC, observation_id DESC LIMIT ? OFFSET ?`).all(...args, limit, offset) as StoredObservation[];
    return { rows, total };
  }

  const get = (projectId: string, id: string): StoredObservation | null => byId(Number(projectId), id) ?? null;

  /**
   * Rows and rollups of a window as one source of (value, t, n, flags, sums). With no filter or one
   * filter the whole hours come from the rollup rows of that dimension; with several filters the
   * rows are read. `group` names a dimension whose value comes out as `value` (no filter then).
   */
  function windowSource(projectId: string, fromMs: number, toMs: number, f: Partial<Record<RollupDim, string>>, group?: RollupDim) {
    const filters = Object.entries(f).filter(([, v]) => v !== undefined) as [RollupDim, string][];
    const useRollup = group ? filters.length === 0 : filters.length <= 1;
    const pid = Number(projectId);
    const emptyRange = (a: number, b: number) => a >= b || st.anyIn.get(pid, a, b) === undefined;
    const { hStart, hEnd, edges } = useRollup ? split(fromMs, toMs, emptyRange) : { hStart: 0, hEnd: 0, edges: [[fromMs, toMs]] as [number, number][] };
    const [dim, value] = group ? [group, null] : filters.length === 1 ? filters[0]! : ['', ''];
    const rawFilter = filters.map(([d]) => ` AND ${d} = ?`).join('');
    const sql = `SELECT value, hour_ms AS t, n, ${FLAGS}, ${SUM_COLS.join(', ')} FROM agent_obs_1h
        WHERE project_id = ? AND dim = ?${value === null ? '' : ' AND value = ?'} AND hour_ms >= ? AND hour_ms < ?
      UNION ALL
      SELECT ${group ?? "''"}, started_ms AS t, 1, ${FLAGS}, COALESCE(cost_usd, 0), COALESCE(prompt_tokens, 0), COALESCE(completion_tokens, 0), COALESCE(total_tokens, 0),
        duration_ms, CASE WHEN observation_type = 'generation' THEN duration_ms ELSE 0 END, CASE WHEN observation_type = 'tool_call' THEN 1 ELSE 0 END
        FROM agent_observations WHERE project_id = ? AND (${edges.map(() => '(started_ms >= ? AND started_ms < ?)').join(' OR ') || '0'})${rawFilter}`;
    const params = [pid, dim, ...(value === null ? [] : [value]), hStart, hEnd, pid, ...edges.flat(), ...filters.map(([, v]) => v)];
    return { sql, params };
  }

  function qualitySums(projectId: string, fromMs: number, toMs: number, f: Partial<Record<RollupDim, string>>): FlagSums {
    const src = windowSource(projectId, fromMs, toMs, f);
    const row = db.prepare(`SELECT COALESCE(SUM(n), 0) AS n, ${FLAG_COLUMNS.map((c) => `COALESCE(SUM(${c}), 0) AS ${c}`).join(', ')} FROM (${src.sql})`).get(...src.params) as FlagSums;
    return row;
  }

  /** Up to `limit` observation ids that are eligible for a dimension and miss it. */
  function missingExamples(projectId: string, fromMs: number, toMs: number, f: Partial<Record<RollupDim, string>>, captured: FlagColumn, eligible: FlagColumn | 'n', limit: number): string[] {
    const w = where({ ...f, fromMs, toMs });
    return db
      .prepare(
        `SELECT observation_id FROM agent_observations WHERE project_id = ? AND started_ms >= ? AND started_ms < ?${w.sql}
         AND ${eligible === 'n' ? '1' : `${eligible} = 1`} AND ${captured} = 0 ORDER BY started_ms DESC LIMIT ?`,
      )
      .pluck()
      .all(Number(projectId), fromMs, toMs, ...w.params, limit) as string[];
  }

  /**
   * Current scores timed in the window and the distinct observations they score. With observation
   * filters (agent, workflow, model, provider, release, environment), only scores of observations
   * that match them count.
   */
  function scoreCounts(projectId: string, fromMs: number, toMs: number, f: Partial<Record<RollupDim, string>>) {
    const parts: string[] = [];
    const params: unknown[] = [];
    for (const [k, v] of Object.entries(f)) {
      if (v === undefined) continue;
      parts.push(` AND o.${k} = ?`);
      params.push(v);
    }
    // The scored observation through the id levels (migration 041): there is no index on observation_id.
    const rowids = `SELECT obs FROM agent_obs_ids_new WHERE project_id = sc.project_id AND k = sl_obs_key(sc.observation_id)
      UNION ALL SELECT obs FROM agent_obs_ids WHERE project_id = sc.project_id AND k = sl_obs_key(sc.observation_id)`;
    const join = parts.length
      ? ` JOIN agent_observations o ON o.id IN (${rowids}) AND +o.project_id = sc.project_id AND +o.observation_id = sc.observation_id${parts.join('')}`
      : '';
    return db
      .prepare(
        `SELECT count(*) AS count, count(DISTINCT CASE WHEN sc.observation_id != '' THEN sc.observation_id END) AS scored_observations
         FROM agent_scores sc${join} WHERE sc.project_id = ? AND sc.started_ms >= ? AND sc.started_ms < ? AND sc.deleted = 0`,
      )
      .get(...params, Number(projectId), fromMs, toMs) as { count: number; scored_observations: number };
  }

  function exportRows(projectId: string, filters: ExportFilters, limit: number, offset: number): { rows: StoredObservation[]; hasMore: boolean } {
    const f = narrowToTrace(projectId, filters);
    const w = where({ ...f, observation_type: 'generation' }, 'o');
    const scoreParts: string[] = [];
    const scoreParams: unknown[] = [];
    if (f.score_name !== undefined) (scoreParts.push('sc.name = ?'), scoreParams.push(f.score_name));
    if (f.score_source !== undefined) (scoreParts.push('sc.source = ?'), scoreParams.push(f.score_source));
    if (f.score_label !== undefined) (scoreParts.push('sc.string_value = ?'), scoreParams.push(f.score_label));
    if (f.min_score !== undefined) (scoreParts.push("sc.data_type != 'categorical' AND sc.value >= ?"), scoreParams.push(f.min_score));
    if (f.max_score !== undefined) (scoreParts.push("sc.data_type != 'categorical' AND sc.value <= ?"), scoreParams.push(f.max_score));
    const scoreSql = scoreParts.length
      ? ` AND EXISTS (SELECT 1 FROM agent_scores sc WHERE sc.project_id = o.project_id AND sc.deleted = 0 AND (sc.observation_id = o.observation_id OR (sc.observation_id = '' AND sc.trace_id = o.trace_id AND o.trace_id != '')) AND ${scoreParts.join(' AND ')})`
      : '';
    const rows = db
      .prepare(
        `SELECT o.* FROM agent_observations o WHERE o.project_id = ? AND o.started_ms >= ? AND o.started_ms < ?${w.sql}${f.require_output ? ' AND o.had_output = 1' : ''}${scoreSql}
         ORDER BY o.started_ms ASC, o.observation_id ASC LIMIT ? OFFSET ?`,
      )
      .all(Number(projectId), f.fromMs, f.toMs, ...w.params, ...scoreParams, limit + 1, offset) as StoredObservation[];
    const hasMore = rows.length > limit;
    return { rows: rows.slice(0, limit), hasMore };
  }

  /** Current (not deleted) scores attached to these observations or, without an observation, to their traces. */
  function scoresForObservations(projectId: string, obs: { observation_id: string; trace_id: string }[]): StoredScore[] {
    if (!obs.length) return [];
    const ids = obs.map((o) => o.observation_id);
    const traces = [...new Set(obs.map((o) => o.trace_id).filter(Boolean))];
    return db
      .prepare(
        `SELECT * FROM agent_scores WHERE project_id = ? AND deleted = 0 AND (observation_id IN (SELECT value FROM json_each(?))
         OR (observation_id = '' AND trace_id IN (SELECT value FROM json_each(?)))) ORDER BY started_ms, score_id`,
      )
      .all(Number(projectId), JSON.stringify(ids), JSON.stringify(traces)) as StoredScore[];
  }

  function scoreWhere(f: ScoreFilters) {
    const parts = ['project_id = ?', 'started_ms >= ?', 'started_ms < ?', 'deleted = 0'];
    const params: unknown[] = [0, f.fromMs, f.toMs];
    for (const k of ['trace_id', 'observation_id', 'session_id', 'user_id', 'name', 'source', 'data_type'] as const) {
      if (f[k] !== undefined) {
        parts.push(`${k} = ?`);
        params.push(f[k]);
      }
    }
    return { sql: parts.join(' AND '), params };
  }

  function listScores(projectId: string, f: ScoreFilters, limit: number, offset: number) {
    const w = scoreWhere(f);
    w.params[0] = Number(projectId);
    const total = db.prepare(`SELECT count(*) FROM agent_scores WHERE ${w.sql}`).pluck().get(...w.params) as number;
    const rows = db.prepare(`SELECT * FROM agent_scores WHERE ${w.sql} ORDER BY started_ms DESC, score_id DESC LIMIT ? OFFSET ?`).all(...w.params, limit, offset) as StoredScore[];
    return { rows, total };
  }

  function scoreSummary(projectId: string, f: ScoreFilters) {
    const w = scoreWhere(f);
    w.params[0] = Number(projectId);
    return db
      .prepare(
        `SELECT name, data_type, CASE WHEN data_type = 'categorical' THEN string_value ELSE '' END AS string_value, count(*) AS count,
           CASE WHEN data_type = 'categorical' THEN NULL ELSE avg(value) END AS avg_value,
           CASE WHEN data_type = 'categorical' THEN NULL ELSE min(value) END AS min_value,
           CASE WHEN data_type = 'categorical' THEN NULL ELSE max(value) END AS max_value
         FROM agent_scores WHERE ${w.sql} GROUP BY 1, 2, 3 ORDER BY name, data_type, string_value`,
      )
      .all(...w.params) as { name: string; data_type: string; string_value: string; count: number; avg_value: number | null; min_value: number | null; max_value: number | null }[];
  }

  const USAGE = `COALESCE(SUM(n), 0) AS n, COALESCE(SUM(f_gen), 0) AS generations, COALESCE(SUM(f_error), 0) AS errors, COALESCE(SUM(tool_n), 0) AS tool_calls,
    COALESCE(SUM(cost_sum), 0) AS cost, COALESCE(SUM(prompt_sum), 0) AS prompt, COALESCE(SUM(completion_sum), 0) AS completion,
    COALESCE(SUM(tokens_sum), 0) AS tokens, COALESCE(SUM(gen_duration_sum), 0) AS gen_duration`;

  function usage(projectId: string, fromMs: number, toMs: number, f: Partial<Record<RollupDim, string>> = {}): UsageAggregate {
    const src = windowSource(projectId, fromMs, toMs, f);
    return db.prepare(`SELECT ${USAGE} FROM (${src.sql})`).get(...src.params) as UsageAggregate;
  }

  function usageBy(projectId: string, fromMs: number, toMs: number, dim: 'model' | 'provider', limit: number): GroupAggregate[] {
    const src = windowSource(projectId, fromMs, toMs, {}, dim);
    return db
      .prepare(`SELECT value AS key, ${USAGE} FROM (${src.sql}) WHERE value != '' GROUP BY value HAVING SUM(f_gen) > 0 ORDER BY generations DESC, key LIMIT ?`)
      .all(...src.params, limit) as GroupAggregate[];
  }

  function usageByDay(projectId: string, fromMs: number, toMs: number): (UsageAggregate & { day: number })[] {
    const src = windowSource(projectId, fromMs, toMs, {});
    return db
      .prepare(`SELECT CAST(t / ${DAY} AS INTEGER) * ${DAY} AS day, ${USAGE} FROM (${src.sql}) GROUP BY 1 ORDER BY 1`)
      .all(...src.params) as (UsageAggregate & { day: number })[];
  }

  /** Sessions (or users) active in the window — first activity before `to`, last at or after `from` — with their totals. */
  function parties(projectId: string, kind: 'session' | 'user', fromMs: number, toMs: number, limit: number): { count: number; top: PartyAggregate[] } {
    const table = kind === 'session' ? 'agent_sessions' : 'agent_users';
    const col = kind === 'session' ? 'session_id' : 'user_id';
    const filter = 'WHERE project_id = ? AND last_ms >= ? AND first_ms < ? AND n > 0';
    const args = [Number(projectId), fromMs, toMs];
    // Both indexes are covering for the filter (migration 036): the count reads the window index only.
    const count = db.prepare(`SELECT count(*) FROM ${table} INDEXED BY ${table}_window ${filter}`).pluck().get(...args) as number;
    // Few matches: read them by window and sort. Many: walk the cost-ordered index and stop at `limit`
    // matches (about limit × total / count entries). The order is total, so both give the same rows.
    const index = count > PARTY_SORT_MAX ? `${table}_cost` : `${table}_window`;
    const top = db
      .prepare(`SELECT ${col} AS key, n, generations, errors, cost_sum AS cost, tokens_sum AS tokens, first_ms, last_ms FROM ${table} INDEXED BY ${index} ${filter} ORDER BY cost_sum DESC, n DESC, ${col} LIMIT ?`)
      .all(...args, limit) as PartyAggregate[];
    return { count, top };
  }

  /** A session's observations: the time index over the session's activity range (agent_sessions), filtered on session_id. */
  function sessionRows(projectId: string, sessionId: string, limit: number): StoredObservation[] {
    const pid = Number(projectId);
    const r = st.sessionRange.get(pid, sessionId) as Range | undefined;
    if (!r) return [];
    return st.sessionRows.all(pid, r.first_ms, r.last_ms, sessionId, limit) as StoredObservation[];
  }

  function userBreakdown(projectId: string, userId: string, fromMs: number, toMs: number) {
    const w = narrowed(fromMs, toMs, st.userRange.get(Number(projectId), userId) as Range | undefined);
    const args = [Number(projectId), userId, w.fromMs, w.toMs];
    const base = "FROM agent_observations WHERE project_id = ? AND user_id = ? AND started_ms >= ? AND started_ms < ?";
    const totals = db
      .prepare(
        `SELECT count(*) AS n, COALESCE(SUM(f_gen), 0) AS generations, COALESCE(SUM(f_error), 0) AS errors,
          COALESCE(SUM(CASE WHEN observation_type = 'tool_call' THEN 1 ELSE 0 END), 0) AS tool_calls, COALESCE(SUM(cost_usd), 0) AS cost,
          COALESCE(SUM(prompt_tokens), 0) AS prompt, COALESCE(SUM(completion_tokens), 0) AS completion, COALESCE(SUM(total_tokens), 0) AS tokens,
          COALESCE(SUM(CASE WHEN observation_type = 'generation' THEN duration_ms ELSE 0 END), 0) AS gen_duration, MIN(started_ms) AS first_ms, MAX(started_ms) AS last_ms ${base}`,
      )
      .get(...args) as UsageAggregate & { first_ms: number | null; last_ms: number | null };
    const sessions = db
      .prepare(
        `SELECT session_id AS key, count(*) AS n, COALESCE(SUM(f_gen), 0) AS generations, COALESCE(SUM(f_error), 0) AS errors, COALESCE(SUM(cost_usd), 0) AS cost,
          COALESCE(SUM(total_tokens), 0) AS tokens, MIN(started_ms) AS first_ms, MAX(started_ms) AS last_ms ${base} AND session_id != '' GROUP BY session_id ORDER BY last_ms DESC LIMIT 50`,
      )
      .all(...args) as PartyAggregate[];
    const models = db
      .prepare(
        `SELECT model AS key, count(*) AS n, COALESCE(SUM(cost_usd), 0) AS cost, COALESCE(SUM(total_tokens), 0) AS tokens ${base} AND observation_type = 'generation' AND model != ''
         GROUP BY model ORDER BY n DESC, model LIMIT 20`,
      )
      .all(...args) as { key: string; n: number; cost: number; tokens: number }[];
    return { totals, sessions, models };
  }

  /**
   * A window read in one read transaction: windowSource's probes of the edge hours and the read see
   * the same rows even when another connection (another process) writes in between.
   */
  const snapshot = <A extends unknown[], R>(f: (...a: A) => R): ((...a: A) => R) => {
    // Deferred: it only reads (db.transaction runs BEGIN IMMEDIATE, for writers).
    const t = db.transaction(f).deferred;
    return (...a: A) => t(...a);
  };

  return {
    writeObservations,
    /** Hooks for createWriteBatcher: rollups and session/user totals written once per batch, before its commit. */
    batchParticipant,
    writeScores,
    get,
    // The range reads (trace, session, user) and the rows in one read transaction (another process may write between).
    list: snapshot(list),
    qualitySums: snapshot(qualitySums),
    missingExamples,
    scoreCounts,
    exportRows: snapshot(exportRows),
    scoresForObservations,
    listScores,
    scoreSummary,
    usage: snapshot(usage),
    usageBy: snapshot(usageBy),
    usageByDay: snapshot(usageByDay),
    parties,
    sessionRows: snapshot(sessionRows),
    userBreakdown: snapshot(userBreakdown),
    observationsOfTrace: (projectId: string, traceId: string) => st.ofTrace.all(Number(projectId), traceId) as StoredObservation[],
    upsertTrace(projectId: string, t: TraceInfo) {
      st.trace.run(Number(projectId), t.trace_id, t.name, t.session_id, t.user_id, JSON.stringify(t.tags), t.release, t.environment, JSON.stringify(t.metadata));
    },
    traceInfo(projectId: string, traceId: string): TraceInfo | null {
      const r = st.traceGet.get(Number(projectId), traceId) as (Omit<TraceInfo, 'tags' | 'metadata'> & { tags: string; metadata: string }) | undefined;
      return r ? { ...r, tags: JSON.parse(r.tags), metadata: JSON.parse(r.metadata) } : null;
    },
    privacyMode(projectId: string): boolean {
      const pid = Number(projectId);
      const version = st.dataVersion.get() as number;
      if (version !== privacyVersion) {
        privacyCache.clear();
        privacyVersion = version;
      }
      let v = privacyCache.get(pid);
      if (v === undefined) {
        v = (st.privacyGet.get(pid) as number | undefined) === 1;
        privacyCache.set(pid, v);
      }
      return v;
    },
    setPrivacyMode(projectId: string, on: boolean, now: number) {
      st.privacySet.run(Number(projectId), on ? 1 : 0, now);
      privacyCache.set(Number(projectId), on);
    },
    /** Hosted fixer dispatches: written by automations (a later issue); read by ai.fixStats / ai.fixTimeline. */
    recordFixDispatch(projectId: string, d: FixDispatch) {
      st.dispatch.run(Number(projectId), d.dispatch_id, d.source, d.requester, d.status, d.webhook_status, d.dispatched_ms, d.completed_ms);
    },
    fixStats(projectId: string, fromMs: number, toMs: number) {
      const args = [Number(projectId), fromMs, toMs];
      const by = (col: string) =>
        db.prepare(`SELECT ${col} AS key, count(*) AS count FROM ai_fix_dispatches WHERE project_id = ? AND dispatched_ms >= ? AND dispatched_ms < ? GROUP BY 1 ORDER BY 2 DESC, 1`).all(...args) as { key: string; count: number }[];
      const total = db.prepare('SELECT count(*) FROM ai_fix_dispatches WHERE project_id = ? AND dispatched_ms >= ? AND dispatched_ms < ?').pluck().get(...args) as number;
      return { total, by_source: by('source'), by_requester: by('requester'), by_status: by('status'), by_webhook_delivery: by('webhook_status') };
    },
    fixTimeline(projectId: string, fromMs: number, toMs: number, stepMs: number) {
      const args = [Number(projectId), fromMs, toMs];
      const dispatched = db
        .prepare(`SELECT CAST(dispatched_ms / ${stepMs} AS INTEGER) * ${stepMs} AS t, count(*) AS c FROM ai_fix_dispatches WHERE project_id = ? AND dispatched_ms >= ? AND dispatched_ms < ? GROUP BY 1`)
        .all(...args) as { t: number; c: number }[];
      const completed = db
        .prepare(`SELECT CAST(completed_ms / ${stepMs} AS INTEGER) * ${stepMs} AS t, count(*) AS c FROM ai_fix_dispatches WHERE project_id = ? AND completed_ms >= ? AND completed_ms < ? GROUP BY 1`)
        .all(...args) as { t: number; c: number }[];
      return { dispatched, completed };
    },
  };
}

export type AiRepo = ReturnType<typeof createAiRepo>;

/** The reads of the AI repository that ClickHouse answers in scale-out (issue 20): async for every backend. */
export const AI_READS = [
  'list', 'qualitySums', 'missingExamples', 'scoreCounts', 'exportRows', 'scoresForObservations', 'listScores', 'scoreSummary',
  'usage', 'usageBy', 'usageByDay', 'parties', 'sessionRows', 'userBreakdown', 'get',
] as const;
export type AiReadKey = (typeof AI_READS)[number];
type Fn = (...a: never[]) => unknown;
export type AiReader = { [K in AiReadKey]: AiRepo[K] extends Fn ? (...a: Parameters<AiRepo[K]>) => Promise<ReturnType<AiRepo[K]>> : never };

/** What Langfuse ingest reads while it writes (the observation an update merges into, a trace's observations). */
export interface AiIngestView {
  get(id: string): StoredObservation | null;
  observationsOfTrace(traceId: string): StoredObservation[];
}

/**
 * The AI repository as the services hold it: writes, settings, trace info and fixer dispatches as
 * the SQLite repository has them; the reads async (ClickHouse answers them in scale-out); and
 * `ingestView`, what an ingest job may read synchronously inside a write batch (observations by id
 * or trace, read beforehand where the store is remote).
 */
export type AiService = Omit<AiRepo, AiReadKey | 'observationsOfTrace'> &
  AiReader & { ingestView(projectId: string, ids: string[], traceIds: string[]): Promise<AiIngestView> };

/** The SQLite repository as the service: reads resolved at once, the ingest view reading live. */
export function sqliteAiService(repo: AiRepo): AiService {
  const reads = Object.fromEntries(AI_READS.map((k) => [k, (...a: unknown[]) => Promise.resolve((repo[k] as (...x: unknown[]) => unknown)(...a))])) as AiReader;
  const { observationsOfTrace, ...rest } = repo;
  return {
    ...rest,
    ...reads,
    ingestView: (projectId) =>
      Promise.resolve({ get: (id: string) => repo.get(projectId, id), observationsOfTrace: (traceId: string) => observationsOfTrace(projectId, traceId) }),
  };
}
