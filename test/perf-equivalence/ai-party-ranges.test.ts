/**
 * Migration 053 dropped the per-observation session and user indexes (partial indexes no query
 * could use) and the session and user reads narrow their window to the session's (user's) activity
 * range in agent_sessions / agent_users. Every read answers exactly as the plain filters over all
 * rows do: sessions and users spread over days and interleaved, replacements that move an
 * observation to another session, user or time, Langfuse-style propagation, other projects, windows
 * cutting through sessions, and after retention expired the oldest observations.
 */
import { mkdtempSync, rmSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { afterAll, describe, expect, it } from 'vitest';
import { migrate, openDatabase, type Db } from '../../src/storage/db.js';
import { MIGRATIONS } from '../../src/storage/migrations/index.js';
import { createAiRepo, type AiRepo } from '../../src/storage/ai-repo.js';
import { createRetentionRepo, EXPIRY_TARGETS } from '../../src/storage/retention-repo.js';
import { emptyDraft, finalizeObservation } from '../../src/domain/ai/observation.js';

const dir = mkdtempSync(join(tmpdir(), 'sightline-ai-party-'));
afterAll(() => rmSync(dir, { recursive: true, force: true }));

const H = 3_600_000;
const T0 = Date.parse('2026-11-01T00:00:00Z');
const TYPES = ['generation', 'tool_call', 'agent_step', 'retrieval'] as const;

function rng(seed: number) {
  let a = seed >>> 0;
  return () => {
    a = (a + 0x6d2b79f5) >>> 0;
    let t = Math.imul(a ^ (a >>> 15), a | 1);
    t ^= t + Math.imul(t ^ (t >>> 7), t | 61);
    return ((t ^ (t >>> 14)) >>> 0) / 4294967296;
  };
}

const obs = (id: string, session: string, user: string, at: number, i: number) =>
  finalizeObservation(
    emptyDraft({
      observation_id: id,
      trace_id: `t${i % 7}`,
      session_id: session,
      user_id: user,
      started_ms: at,
      ended_ms: at + (i % 900),
      observation_type: TYPES[i % 4]!,
      model: i % 4 === 0 ? 'gpt-4o' : '',
      status: i % 11 === 0 ? 'error' : 'ok',
      prompt_tokens: i % 4 === 0 ? 100 + i : null,
      completion_tokens: i % 4 === 0 ? 10 + (i % 30) : null,
      output: i % 4 === 0 ? { messages: [{ role: 'assistant', content: `a${i}` }] } : null,
    }),
    { receivedMs: at, projectPrivacy: false },
  );

/** The reads as written before migration 053: the filters over every row, no range. */
function reference(db: Db) {
  const all = (sql: string, ...a: unknown[]) => db.prepare(sql).all(...a);
  return {
    sessionRows: (p: string, s: string, limit: number) =>
      all('SELECT * FROM agent_observations WHERE project_id = ? AND session_id = ? ORDER BY started_ms, observation_id LIMIT ?', Number(p), s, limit),
    list: (p: string, col: 'session_id' | 'user_id', v: string, from: number, to: number, limit: number, offset: number) => {
      const base = `FROM agent_observations WHERE project_id = ? AND started_ms >= ? AND started_ms < ? AND ${col} = ?`;
      return {
        rows: all(`SELECT * ${base} ORDER BY started_ms DESC, observation_id DESC LIMIT ? OFFSET ?`, Number(p), from, to, v, limit, offset),
        total: db.prepare(`SELECT count(*) ${base}`).pluck().get(Number(p), from, to, v),
      };
    },
    userCount: (p: string, u: string, from: number, to: number) =>
      db.prepare('SELECT count(*) FROM agent_observations WHERE project_id = ? AND user_id = ? AND started_ms >= ? AND started_ms < ?').pluck().get(Number(p), u, from, to) as number,
  };
}

function compareAll(db: Db, repo: AiRepo, windows: [number, number][]) {
  const ref = reference(db);
  let checked = 0;
  for (const p of ['1', '2']) {
    for (let s = 0; s < 14; s++) {
      const sid = `s${s}`;
      for (const limit of [1, 5, 2001]) expect(repo.sessionRows(p, sid, limit)).toEqual(ref.sessionRows(p, sid, limit));
      for (const [from, to] of windows) {
        expect(repo.list(p, { fromMs: from, toMs: to, session_id: sid }, 7, 2)).toEqual(ref.list(p, 'session_id', sid, from, to, 7, 2));
        expect(repo.list(p, { fromMs: from, toMs: to, session_id: sid }, 200, 0)).toEqual(ref.list(p, 'session_id', sid, from, to, 200, 0));
      }
    }
    for (let u = 0; u < 6; u++) {
      const uid = `u${u}`;
      for (const [from, to] of windows) {
        const got = repo.list(p, { fromMs: from, toMs: to, user_id: uid }, 200, 0);
        expect(got).toEqual(ref.list(p, 'user_id', uid, from, to, 200, 0));
        // Both filters at once, and the user drill-down read.
        expect(repo.list(p, { fromMs: from, toMs: to, user_id: uid, session_id: 's3' }, 200, 0).rows).toEqual(
          (ref.list(p, 'user_id', uid, from, to, 200, 0).rows as { session_id: string }[]).filter((r) => r.session_id === 's3'),
        );
        const b = repo.userBreakdown(p, uid, from, to);
        expect(b.totals.n).toBe(ref.userCount(p, uid, from, to));
        checked += got.total;
      }
    }
  }
  return checked;
}

describe('session and user reads without the per-observation indexes (migration 053)', () => {
  it('answer exactly as the plain filters, after replacements and expiry', () => {
    const db = openDatabase(join(dir, 'a.db'));
    migrate(db);
    const repo = createAiRepo(db);
    const write = (p: string, rows: ReturnType<typeof obs>[]) => db.transaction(() => repo.writeObservations(p, rows))();
    const rand = rng(7);
    // Sessions and users spread over three days, interleaved, in several writes; project 2 shares the ids.
    for (let b = 0; b < 12; b++) {
      const rows = [];
      for (let i = 0; i < 60; i++) {
        const n = b * 60 + i;
        const s = Math.floor(rand() * 12);
        rows.push(obs(`o${n}`, rand() < 0.1 ? '' : `s${s}`, rand() < 0.15 ? '' : `u${Math.floor(rand() * 5)}`, T0 + s * 5 * H + Math.floor(rand() * 8 * H) + 0.25, n));
      }
      write(b % 4 === 3 ? '2' : '1', rows);
    }
    const windows: [number, number][] = [
      [0, T0 + 10 * 86_400_000],
      [T0 + 7 * H, T0 + 31 * H],
      [T0 + 20 * H + 0.25, T0 + 20 * H + 1],
      [T0 + 60 * H, T0 + 61 * H],
    ];
    expect(compareAll(db, repo, windows)).toBeGreaterThan(300);
    // Replacements: an observation moves to another session, user and a later time (one to a new session).
    const moved = [];
    for (let n = 0; n < 700; n += 13) moved.push(obs(`o${n}`, n % 26 ? `s${(n % 5) + 1}` : 's13', `u${n % 3}`, T0 + 70 * H + n, n + 1));
    write('1', moved);
    // Propagation of a session to stored observations (as a Langfuse trace-create does): a rewrite of the trace's rows.
    write('1', repo.observationsOfTrace('1', 't2').slice(0, 20).map((r) => ({ ...obs(r.observation_id, 's4', 'u5', r.started_ms, 2), trace_id: 't2' })));
    expect(compareAll(db, repo, [...windows, [T0 + 69 * H, T0 + 72 * H]])).toBeGreaterThan(300);
    // Retention takes the observations of the first day.
    const retention = createRetentionRepo(db);
    for (const t of EXPIRY_TARGETS.filter((t) => t.kind === 'agent_observations')) {
      for (const p of ['1', '2']) while (retention.expireBatch(t, p, T0 + 24 * H, 100) > 0);
    }
    expect(db.prepare('SELECT count(*) FROM agent_observations WHERE started_ms < ?').pluck().get(T0 + 24 * H)).toBe(0);
    expect(compareAll(db, repo, windows)).toBeGreaterThan(100);
    db.close();
  });

  it('migration 053 drops the two indexes; the reads walk the time index', () => {
    const db = openDatabase(join(dir, 'b.db'), { migrations: MIGRATIONS.filter((m) => m.version < 53) });
    const idx = () => db.prepare("SELECT name FROM sqlite_master WHERE type = 'index' AND tbl_name = 'agent_observations' ORDER BY name").pluck().all();
    expect(idx()).toEqual(['agent_obs_session', 'agent_obs_time', 'agent_obs_user']);
    // Before: no read could use them (partial indexes on session_id != '' / user_id != '').
    expect(() => db.prepare("SELECT * FROM agent_observations INDEXED BY agent_obs_session WHERE project_id = ? AND session_id = ?")).toThrow(/no query solution/);
    migrate(db);
    expect(idx()).toEqual(['agent_obs_time']);
    const plan = db
      .prepare('EXPLAIN QUERY PLAN SELECT * FROM agent_observations WHERE project_id = ? AND started_ms >= ? AND started_ms <= ? AND session_id = ? ORDER BY started_ms, observation_id LIMIT ?')
      .all(1, 0, 1, 's', 5) as { detail: string }[];
    expect(plan.map((r) => r.detail).join(' | ')).toMatch(/agent_obs_time \(project_id=\? AND started_ms>\? AND started_ms<\?\)/);
    db.close();
  });
});
