/**
 * Issue 20, PostgreSQL migration 6: release-health sessions and their aggregates, session replays
 * with their recordings, cron check-ins, ingest outcomes, Langfuse trace info and hosted-fixer
 * dispatches are control data. Two servers with SQLite files of their own over one PostgreSQL
 * database see each other's rows: what one ingests, the other reads. `sightline migrate
 * --to-postgres` copies them; a server already on PostgreSQL adopts them from its SQLite file at its
 * first start with migration 6, once. Runs on the local PostgreSQL; skips, saying why, without one.
 */
import { afterAll, describe, expect, it } from 'vitest';
import { api, startTestServer, type TestServer } from '../helpers/server.js';
import { startSecondServer, startServerOn } from '../support/second-server.js';
import type { Sightline } from '../../src/server.js';
import { openDatabase } from '../../src/storage/db.js';
import { openSyncPg } from '../../src/storage/postgres/sync-client.js';
import { copyControlToPostgres } from '../../src/storage/postgres/migrate.js';
import { INGEST_MISC_TABLES } from '../../src/storage/postgres/control-tables.js';
import { langfuseKeyPair } from '../../src/ingest/langfuse.js';
import { createPgDatabase, pgAsBeforeMove, pgQuery, postgresMissing, type PgDatabase } from '../support/postgres.js';

const missing = await postgresMissing();
if (missing) console.log(`[postgres-ingest-misc] skipped: ${missing}`);

const REPLAY = 'ab'.repeat(16);
const RECORDING = Buffer.concat([Buffer.from('{"segment_id":0}\n'), Buffer.from([0x78, 0x9c, 0x00, 0xff, 0x10, 0x0a, 0x80, 0x7f])]);

/** One Sentry envelope: a replay event and its recording, a cron check-in, a session update and a client report. */
function envelope(nowS: number): Buffer {
  const item = (header: Record<string, unknown>, payload: unknown) => `${JSON.stringify(header)}\n${JSON.stringify(payload)}\n`;
  return Buffer.concat([
    Buffer.from(`${JSON.stringify({ event_id: REPLAY })}\n`),
    Buffer.from(item({ type: 'replay_event' }, { type: 'replay_event', replay_id: REPLAY, timestamp: nowS, replay_start_timestamp: nowS - 5, urls: ['https://shop.example/'], error_ids: [], trace_ids: [] })),
    Buffer.from(`${JSON.stringify({ type: 'replay_recording', length: RECORDING.length })}\n`),
    RECORDING,
    Buffer.from('\n'),
    Buffer.from(item({ type: 'check_in' }, { check_in_id: 'c'.repeat(32), monitor_slug: 'nightly-export', status: 'ok', duration: 1.5, environment: 'prod' })),
    Buffer.from(item({ type: 'session' }, { sid: 's'.repeat(32), did: 'user-1', init: true, started: new Date(nowS * 1000 - 60_000).toISOString(), timestamp: new Date(nowS * 1000).toISOString(), status: 'crashed', errors: 1, attrs: { release: 'shop@1.0.0', environment: 'prod' } })),
    Buffer.from(item({ type: 'client_report' }, { discarded_events: [{ reason: 'queue_overflow', category: 'error', quantity: 3 }] })),
  ]);
}

const sendEnvelope = (url: string, projectId: string, ingestKey: string) =>
  fetch(`${url}/ingest/api/${projectId}/envelope/?sentry_key=${ingestKey}`, { method: 'POST', body: envelope(Date.now() / 1000) });

const langfuse = (url: string, projectId: string, ingestKey: string, batch: unknown[]) => {
  const k = langfuseKeyPair(projectId, ingestKey);
  return fetch(`${url}/ingest/api/public/ingestion`, {
    method: 'POST',
    headers: { authorization: `Basic ${Buffer.from(`${k.publicKey}:${k.secretKey}`).toString('base64')}`, 'content-type': 'application/json' },
    body: JSON.stringify({ batch }),
  });
};

const DISPATCH = { dispatch_id: 'fix-1', source: 'automation', requester: 'key-1', status: 'opened', webhook_status: 'delivered', dispatched_ms: Date.now() - 60_000, completed_ms: Date.now() };

/** What a server answers about these rows, through its repositories. */
function snapshot(s: Sightline, projectId: string) {
  const misc = s.services.ingestMisc;
  return {
    replay: misc.replay(projectId, REPLAY) ?? null,
    checkIns: misc.checkIns(projectId, 'nightly-export', 10),
    outcomes: misc.outcomesSince(projectId, 0),
    sessions: s.db.prepare('SELECT session_id, status, errors, release FROM sessions WHERE project_id = ?').all(Number(projectId)),
    trace: s.services.ai.traceInfo(projectId, 'tr-shared'),
    fixes: s.services.ai.fixStats(projectId, 0, Date.now() + 1),
  };
}

const startServer = startServerOn;

describe.skipIf(!!missing)('release health, replays, check-ins, outcomes, trace info and fixer dispatches in PostgreSQL (migration 6)', () => {
  const cleanup: Array<() => Promise<void>> = [];
  afterAll(async () => {
    while (cleanup.length) await cleanup.pop()!();
  });

  it('two servers over one PostgreSQL database read what the other ingested', async () => {
    const pgdb = await createPgDatabase();
    cleanup.push(() => pgdb.drop());
    const a = await startTestServer({ clickhouse: false, config: { databaseUrl: pgdb.url } });
    cleanup.push(() => a.close());
    const b = await startSecondServer(a);
    cleanup.push(() => b.close());
    expect(b.s.config.dbFile).not.toBe(a.dbFile);
    const pid = a.projectId;

    // Ingested through A.
    expect((await sendEnvelope(a.url, pid, a.keys.ingest)).status).toBe(200);
    const trace = await langfuse(a.url, pid, a.keys.ingest, [
      { id: 'e1', type: 'trace-create', timestamp: new Date().toISOString(), body: { id: 'tr-shared', name: 'checkout-agent', sessionId: 'lf-sess', userId: 'lf-user' } },
    ]);
    expect(trace.status).toBe(207);
    a.s.services.ai.recordFixDispatch(pid, DISPATCH);

    // Read through B: the replay linked from feedback, the recording's bytes, the check-in, the
    // session, the client report's outcome, the trace info and the fixer dispatch.
    const created = await api(b, 'POST', `/v1/projects/${pid}/feedback`, { key: a.keys.admin, body: { message: 'the cart froze', replay_id: REPLAY } });
    expect(created.status).toBe(201);
    const fb = await api(b, 'GET', `/v1/projects/${pid}/feedback/${created.body.id}`, { key: a.keys.admin });
    expect(fb.body.replay_session_id).toBe(REPLAY);
    const seen = snapshot(b.s, pid);
    expect(seen.replay).toMatchObject({ replay_id: REPLAY, segments: 1, urls: ['https://shop.example/'] });
    expect(seen.checkIns.map((c) => [c.monitor_slug, c.status, c.duration_s])).toEqual([['nightly-export', 'ok', 1.5]]);
    expect(seen.sessions).toEqual([{ session_id: 's'.repeat(32), status: 'crashed', errors: 1, release: 'shop@1.0.0' }]);
    expect(seen.outcomes).toContainEqual({ category: 'client:error', reason: 'queue_overflow', quantity: 3 });
    expect(seen.trace).toMatchObject({ name: 'checkout-agent', session_id: 'lf-sess', user_id: 'lf-user' });
    const fixes = await api(b, 'GET', `/v1/projects/${pid}/ai/fixes/stats`, { key: a.keys.admin });
    expect(fixes.body).toMatchObject({ total: 1, by_status: [{ key: 'opened', count: 1 }] });
    const recording = (b.s.db.prepare('SELECT payload FROM replay_recordings WHERE project_id = ? AND replay_id = ?').pluck().get(Number(pid), REPLAY)) as Buffer;
    expect(Buffer.isBuffer(recording) && recording.equals(RECORDING)).toBe(true);

    // A Langfuse observation sent to B for A's trace takes the trace's session and user.
    const obs = await langfuse(b.url, pid, a.keys.ingest, [
      { id: 'e2', type: 'generation-create', timestamp: new Date().toISOString(), body: { id: 'gen-shared', traceId: 'tr-shared', name: 'llm', model: 'gpt-4o-mini', startTime: new Date().toISOString() } },
    ]);
    expect(obs.status).toBe(207);
    const got = await api(b, 'GET', `/v1/projects/${pid}/agent-observations/gen-shared`, { key: a.keys.admin });
    expect(got.body).toMatchObject({ session_id: 'lf-sess', user_id: 'lf-user' });

    // A second replay event through B widens A's replay: one row, shared.
    const later = Buffer.from(
      `${JSON.stringify({ event_id: REPLAY })}\n${JSON.stringify({ type: 'replay_event' })}\n${JSON.stringify({ type: 'replay_event', replay_id: REPLAY, timestamp: Date.now() / 1000 + 30, urls: ['https://shop.example/pay'], error_ids: [], trace_ids: [] })}\n`,
    );
    expect((await fetch(`${b.url}/ingest/api/${pid}/envelope/?sentry_key=${a.keys.ingest}`, { method: 'POST', body: later })).status).toBe(200);
    expect(a.s.services.ingestMisc.replay(pid, REPLAY)?.urls).toEqual(['https://shop.example/', 'https://shop.example/pay']);
    // Nothing of it is in either SQLite file.
    for (const s of [a.s, b.s]) {
      const sqlite = openDatabase(s.config.dbFile);
      try {
        for (const table of INGEST_MISC_TABLES) expect(sqlite.prepare(`SELECT count(*) FROM ${table}`).pluck().get(), table).toBe(0);
      } finally {
        sqlite.close();
      }
    }
  });

  it('migrate --to-postgres copies them, and a server already on PostgreSQL adopts them from SQLite at its first start with migration 6, once', async () => {
    const t: TestServer = await startTestServer({ clickhouse: false, config: { databaseUrl: null } });
    const pid = t.projectId;
    expect((await sendEnvelope(t.url, pid, t.keys.ingest)).status).toBe(200);
    expect(
      (await langfuse(t.url, pid, t.keys.ingest, [{ id: 'e1', type: 'trace-create', timestamp: new Date().toISOString(), body: { id: 'tr-shared', name: 'checkout-agent', sessionId: 'lf-sess' } }])).status,
    ).toBe(207);
    t.s.services.ai.recordFixDispatch(pid, DISPATCH);
    // Two pre-aggregated session buckets (session_aggregates, a table with SQLite's implicit rowid).
    t.s.services.ingestMisc.recordSessions(pid, [1, 2].map((q) => ({ sid: null, distinct_id: null, init: true, status: 'exited', started_ms: Date.now() - q, timestamp_ms: Date.now(), duration_ms: null, errors: 0, release: 'shop@1.0.0', environment: 'prod', user_agent: '', quantity: q })), Date.now());
    const before = snapshot(t.s, pid);
    expect(before.replay).not.toBeNull();
    const dbFile = t.dbFile;
    await t.s.close();
    const counts = async (url: string) => Object.fromEntries(await Promise.all(INGEST_MISC_TABLES.map(async (x) => [x, (await pgQuery(url, `SELECT count(*)::int AS n FROM ${x}`))[0]!.n])));
    const expected = { sessions: 1, session_aggregates: 2, replays: 1, replay_recordings: 1, check_ins: 1, ingest_outcomes: 1, agent_traces: 1, ai_fix_dispatches: 1 };

    // migrate --to-postgres: every row of these tables, the recording byte for byte.
    const copied = await createPgDatabase();
    cleanup.push(() => copied.drop());
    const sqlite = openDatabase(dbFile);
    const pg = openSyncPg(copied.url);
    try {
      copyControlToPostgres(sqlite, pg);
    } finally {
      pg.close();
      sqlite.close();
    }
    expect(await counts(copied.url)).toEqual(expected);
    expect((await pgQuery(copied.url, 'SELECT payload FROM replay_recordings'))[0]!.payload).toEqual(RECORDING);

    // PostgreSQL as a Sightline before migration 6 left it: control data copied, these tables still in SQLite.
    const pgdb: PgDatabase = await pgAsBeforeMove(dbFile, INGEST_MISC_TABLES);
    cleanup.push(() => pgdb.drop());
    const first = await startServer(dbFile, pgdb.url);
    try {
      expect(await counts(pgdb.url)).toEqual(expected);
      expect(snapshot(first.s, pid)).toEqual(before);
      // New writes go on: a dispatch gets an id after the adopted one (the identity sequence moved on).
      first.s.services.ai.recordFixDispatch(pid, { ...DISPATCH, dispatch_id: 'fix-2' });
      const ids = (await pgQuery(pgdb.url, 'SELECT id::int AS id FROM ai_fix_dispatches ORDER BY id')).map((r) => r.id as number);
      expect(ids).toHaveLength(2);
      expect(ids[1]).toBeGreaterThan(ids[0]!);
    } finally {
      await first.stop();
    }
    // A second start finds PostgreSQL holding these tables: nothing copied again (the aggregates,
    // which have no key to refuse a duplicate, are not doubled).
    const second = await startServer(dbFile, pgdb.url);
    try {
      expect(await counts(pgdb.url)).toEqual({ ...expected, ai_fix_dispatches: 2 });
    } finally {
      await second.stop();
    }
  });
});
