import { FLAG_COLUMNS, type ObservationRow, type ScoreDraft } from '../../domain/ai/observation.js';
import type { AiIngestView, StoredObservation, StoredScore } from '../ai-repo.js';
import { lit, type ChEngine } from './client.js';
import { createBatchBuffer, NO_PACING, rowArrays, type BufferPacing } from './batch-buffer.js';
import { nextLogId } from './log-store.js';
import { VERSIONED, type VersionedTable } from './schema.js';

/** An observation as its ClickHouse row (schema.ts, migration 8, table `agent_observations`). */
export type ChObservationRow = StoredObservation & { project_id: number; version: number };
/** A score as its ClickHouse row (table `agent_scores`). */
export type ChScoreRow = StoredScore & { project_id: number; version: number; deleted: number };

export function observationRowOf(projectId: number, r: ObservationRow, version: number): ChObservationRow {
  const { flags, ...cols } = r;
  const out = { project_id: projectId, version, ...cols } as ChObservationRow;
  for (const f of FLAG_COLUMNS) out[f] = flags[f] ?? 0;
  return out;
}

export function scoreRowOf(projectId: number, s: ScoreDraft, receivedMs: number, version: number): ChScoreRow {
  return {
    project_id: projectId, version, score_id: s.score_id, trace_id: s.trace_id, observation_id: s.observation_id, span_id: s.span_id, session_id: s.session_id,
    user_id: s.user_id, name: s.name, value: s.value, string_value: s.string_value, data_type: s.data_type, source: s.source, comment: s.comment, author: s.author,
    model: s.model, environment: s.environment, release: s.release, metadata: JSON.stringify(s.metadata), started_ms: s.started_ms, received_ms: receivedMs,
    deleted: s.deleted ? 1 : 0,
  };
}

/** Characters of id literals per lookup query, which names them twice (ClickHouse's default max_query_size is 256 KiB). */
const LOOKUP_TEXT = 100_000;

/** Literals joined into lists of at most `max` characters each (one literal longer than that alone). */
export function literalLists(values: string[], max: number): string[] {
  const out: string[] = [];
  let cur: string[] = [];
  let len = 0;
  for (const v of values) {
    const l = lit(v);
    if (cur.length && len + l.length + 2 > max) (out.push(cur.join(', ')), (cur = []), (len = 0));
    cur.push(l);
    len += l.length + 2;
  }
  if (cur.length) out.push(cur.join(', '));
  return out;
}

type VersionRow = { project_id: number; started_ms: number; version: number };

/**
 * The rows of one insert less the versions a later row of the same insert replaces (a Langfuse
 * create and its update in one batch): only the newest is stored.
 */
export function newestOnly<R extends VersionRow>(rows: R[], idOf: (r: R) => string): R[] {
  const newest = new Map<string, R>();
  for (const r of rows) {
    const k = `${r.project_id}\u0000${idOf(r)}`;
    const o = newest.get(k);
    if (!o || o.version < r.version) newest.set(k, r);
  }
  return newest.size === rows.length ? rows : rows.filter((r) => newest.get(`${r.project_id}\u0000${idOf(r)}`) === r);
}

/**
 * After rows of a versioned table (schema.ts VERSIONED) are inserted: every stored version of their
 * ids but the newest, not marked yet, is marked superseded. The lookup runs after the insert, so of
 * two processes inserting versions of one id at once, the later lookup sees both (an insert is
 * visible once acknowledged, and the keys view fills in the same insert). A process killed between
 * the two leaves its batch unacknowledged: the sender's retry inserts and marks again.
 */
export async function markSuperseded<R extends VersionRow>(engine: ChEngine, t: VersionedTable, rows: R[]): Promise<number> {
  const byProject = new Map<number, Set<string>>();
  for (const r of rows) {
    let ids = byProject.get(r.project_id);
    if (!ids) byProject.set(r.project_id, (ids = new Set()));
    ids.add((r as unknown as Record<string, string>)[t.id]!);
  }
  const marks: Record<string, unknown>[] = [];
  for (const [pid, idSet] of byProject) {
    for (const list of literalLists([...idSet], LOOKUP_TEXT)) {
      const found = await engine.query<{ id: string; started_ms: number; version: number }>(
        `SELECT ${t.id} AS id, started_ms, version FROM ${t.keys} WHERE project_id = ${lit(pid)} AND ${t.id} IN (${list})
         AND (${t.id}, version) NOT IN (SELECT ${t.id}, version FROM ${t.superseded} WHERE project_id = ${lit(pid)} AND ${t.id} IN (${list}))`,
      );
      const versions = new Map<string, Map<number, number>>(); // id → version → start (versions are below 2^53: log-store.ts nextLogId)
      for (const f of found) {
        let v = versions.get(f.id);
        if (!v) versions.set(f.id, (v = new Map()));
        v.set(Number(f.version), f.started_ms);
      }
      for (const [id, v] of versions) {
        if (v.size < 2) continue;
        const newest = Math.max(...v.keys());
        for (const [k, started] of v) if (k !== newest) marks.push({ project_id: pid, started_ms: started, [t.id]: id, version: k });
      }
    }
  }
  if (marks.length) await engine.insert(t.superseded, marks);
  return marks.length;
}

const [OBSERVATIONS, SCORES] = VERSIONED;

/** Inserted rows kept for {@link AiIngestView} besides those still waiting for their insert (a read may have started before it landed). */
const INSERTED_KEPT = 1_000;

/**
 * Agent observations and scores bound for ClickHouse (issue 20): acknowledged once inserted
 * (batch-buffer.ts). Every write is a new row version (the process's increasing id, as log ids):
 * a later write of the same observation or score id replaces the earlier one in every read.
 * SQLite's repository skips a resend of exactly the stored observation (it keeps its first received
 * time); here the resend is a new version with its own received time.
 */
export function createChAiStore(engine: ChEngine, pacing: BufferPacing = NO_PACING) {
  /**
   * Rows written here, by project and id: those whose insert is still to come (their batch's commit,
   * the insert in flight), and the last {@link INSERTED_KEPT} inserted (oldest first: a Map keeps
   * insertion order). A row whose job or insert failed is dropped.
   */
  const waiting = new Map<string, ChObservationRow>();
  const inserted = new Map<string, ChObservationRow>();
  const keyOf = (r: ChObservationRow) => `${r.project_id}\u0000${r.observation_id}`;
  const observations = createBatchBuffer<ChObservationRow[]>({
    ...rowArrays(async (rows) => {
      const stored = newestOnly(rows, (r) => r.observation_id);
      await engine.insert('agent_observations', stored);
      await markSuperseded(engine, OBSERVATIONS, stored);
      for (const r of rows) {
        const k = keyOf(r);
        if (waiting.get(k) === r) waiting.delete(k);
        const old = inserted.get(k);
        if (!old || old.version < r.version) (inserted.delete(k), inserted.set(k, r));
      }
      while (inserted.size > INSERTED_KEPT) inserted.delete(inserted.keys().next().value!);
    }),
    forget(rows) {
      for (const r of rows) if (waiting.get(keyOf(r)) === r) waiting.delete(keyOf(r));
    },
  }, pacing);
  const scores = createBatchBuffer(
    rowArrays<ChScoreRow>(async (rows) => {
      const stored = newestOnly(rows, (r) => r.score_id);
      await engine.insert('agent_scores', stored);
      await markSuperseded(engine, SCORES, stored);
    }),
    pacing,
  );

  function writeObservations(projectId: string, rows: ObservationRow[]): number {
    const pid = Number(projectId);
    const out = rows.map((r) => observationRowOf(pid, r, nextLogId()));
    for (const r of out) waiting.set(keyOf(r), r);
    observations.add(out);
    return rows.length;
  }

  function writeScores(projectId: string, drafts: ScoreDraft[], receivedMs: number): number {
    const pid = Number(projectId);
    scores.add(drafts.map((s) => scoreRowOf(pid, s, receivedMs, nextLogId())));
    return drafts.length;
  }

  /**
   * Observations by id and by trace, read from ClickHouse once, before a batch of Langfuse items is
   * written (the writes are synchronous); what this process wrote and is still inserting (earlier
   * items of the batch among them), or inserted just before the read, comes from its own rows — the
   * newest version wins. Another process's write after the read is not seen (as with any read
   * before a write across processes).
   */
  async function ingestView(
    projectId: string,
    ids: string[],
    traceIds: string[],
    read: (projectId: string, ids: string[], traceIds: string[]) => Promise<ChObservationRow[]>,
  ): Promise<AiIngestView> {
    const pid = Number(projectId);
    const fetched = ids.length || traceIds.length ? await read(projectId, ids, traceIds) : [];
    const stored = new Map(fetched.map((r) => [r.observation_id, r]));
    const newest = (id: string): ChObservationRow | undefined => {
      const k = `${pid}\u0000${id}`;
      let best = stored.get(id);
      for (const r of [inserted.get(k), waiting.get(k)]) if (r && (!best || r.version > best.version)) best = r;
      return best;
    };
    return {
      get: (id) => newest(id) ?? null,
      observationsOfTrace(traceId) {
        const ids = new Set<string>();
        for (const r of stored.values()) if (r.trace_id === traceId) ids.add(r.observation_id);
        for (const m of [inserted, waiting]) for (const r of m.values()) if (r.project_id === pid && r.trace_id === traceId) ids.add(r.observation_id);
        const out: StoredObservation[] = [];
        for (const id of ids) {
          const r = newest(id)!;
          if (r.trace_id === traceId) out.push(r);
        }
        return out;
      },
    };
  }

  return {
    writeObservations,
    writeScores,
    ingestView,
    /** Rows of a batch held until its commit, then inserted before its acknowledgement. */
    participants: [observations.participant, scores.participant],
    /** Inserts rows as they are (`migrate --to-clickhouse`: versions kept). */
    addRows(obs: ChObservationRow[], sc: ChScoreRow[]) {
      observations.add(obs);
      scores.add(sc);
    },
    async flush() {
      await observations.flush();
      await scores.flush();
    },
  };
}

export type ChAiStore = ReturnType<typeof createChAiStore>;
