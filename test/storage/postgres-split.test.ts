/**
 * Issue 20, the control store: SQLite's SQL translated for PostgreSQL (dialect.ts) and the split
 * handle (split-db.ts) that sends control tables' statements to PostgreSQL and the rest to SQLite.
 * The translation cases are pure; the rest runs on the local PostgreSQL and skips, saying why,
 * without one.
 */
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { tablesOf, translate, splitStatements, translateDdl } from '../../src/storage/postgres/dialect.js';
import { openDatabase, type Db } from '../../src/storage/db.js';
import { openSyncPg, type SyncPg } from '../../src/storage/postgres/sync-client.js';
import { migratePostgres } from '../../src/storage/postgres/schema.js';
import { openSplitDatabase } from '../../src/storage/postgres/split-db.js';
import { CONTROL_TABLES, FRACTIONAL_TIME_COLUMNS } from '../../src/storage/postgres/control-tables.js';
import { createWriteBatcher } from '../../src/storage/write-batcher.js';
import { MOVED_LATER } from '../../src/storage/postgres/migrate.js';
import { createIngestMiscRepo } from '../../src/storage/ingest-misc-repo.js';
import { createAiRepo } from '../../src/storage/ai-repo.js';
import { createRetentionRepo, EXPIRY_TARGETS } from '../../src/storage/retention-repo.js';
import { createPgDatabase, postgresMissing, type PgDatabase } from '../support/postgres.js';

const schema = { primaryKey: (t: string) => (t === 'kv' ? ['k'] : t === 'pair' ? ['a', 'b'] : undefined), generatedKey: (t: string) => (t === 'projects' ? 'id' : undefined) };

describe('SQLite SQL as PostgreSQL runs it', () => {
  it('numbers ? parameters and gives each @name one number however often it appears', () => {
    expect(translate('SELECT * FROM t WHERE a = ? AND b = ?', schema)).toMatchObject({ text: 'SELECT * FROM t WHERE a = $1 AND b = $2', params: [{ index: 0 }, { index: 1 }] });
    const t = translate('SELECT * FROM t WHERE a = @p OR b = @x OR c = @p', schema);
    expect(t.text).toBe('SELECT * FROM t WHERE a = $1 OR b = $2 OR c = $1');
    expect(t.params).toEqual([{ name: 'p' }, { name: 'x' }]);
  });

  it('leaves strings, quoted names and comments alone', () => {
    expect(translate("SELECT 'a ? @b LIKE' AS x FROM t -- ? here\nWHERE y LIKE ?", schema).text).toBe("SELECT 'a ? @b LIKE' AS x FROM t -- ? here\nWHERE y ILIKE $1");
  });

  it('turns INSERT OR IGNORE and INSERT OR REPLACE into ON CONFLICT clauses', () => {
    expect(translate('INSERT OR IGNORE INTO kv (k, v) VALUES (?, ?)', schema).text).toBe('INSERT INTO kv (k, v) VALUES ($1, $2) ON CONFLICT DO NOTHING');
    expect(translate('INSERT OR REPLACE INTO pair (a, b, n, m) VALUES (?, ?, ?, ?)', schema).text).toBe(
      'INSERT INTO pair (a, b, n, m) VALUES ($1, $2, $3, $4) ON CONFLICT (a, b) DO UPDATE SET n = EXCLUDED.n, m = EXCLUDED.m',
    );
    expect(() => translate('INSERT OR REPLACE INTO nokey (a) VALUES (?)', schema)).toThrow(/primary key is unknown/);
  });

  it('returns the generated key of an insert, for lastInsertRowid', () => {
    const t = translate('INSERT INTO projects (org_id, name) VALUES (?, ?)', schema);
    expect(t.text).toBe('INSERT INTO projects (org_id, name) VALUES ($1, $2) RETURNING id');
    expect(t.returnsKey).toBe(true);
  });

  it("rewrites SQLite's functions and operators", () => {
    expect(translate('SELECT * FROM p WHERE org_id IN (SELECT value FROM json_each(?))', schema).text).toBe(
      'SELECT * FROM p WHERE org_id IN (SELECT value FROM json_array_elements_text(($1)::json) AS je(value))',
    );
    expect(translate('SELECT group_concat(name, ? ) AS names, max(a, b) AS top, min(x) AS low FROM t', schema).text).toBe(
      'SELECT string_agg((name)::text, $1) AS names, greatest(a, b) AS top, min(x) AS low FROM t',
    );
    expect(translate("SELECT json_extract(meta, '$.a.b') FROM t", schema).text).toBe("SELECT ((meta)::json #>> '{a,b}') FROM t");
    expect(translate('SELECT * FROM t WHERE a IS ? AND b IS NOT ? AND c IS NULL LIMIT -1', schema).text).toBe(
      'SELECT * FROM t WHERE a IS NOT DISTINCT FROM $1 AND b IS DISTINCT FROM $2 AND c IS NULL LIMIT ALL',
    );
    expect(translate('SELECT CAST(x AS INTEGER) AS firstSeen FROM t', schema).text).toBe('SELECT CAST(x AS BIGINT) AS "firstSeen" FROM t');
    expect(() => translate('SELECT * FROM t WHERE name GLOB ?', schema)).toThrow(/GLOB/);
    expect(translate('SELECT COUNT(DISTINCT k) AS n FROM t INDEXED BY t_k WHERE a = ?', schema).text).toBe('SELECT COUNT(DISTINCT k) AS n FROM t  WHERE a = $1');
  });

  it('finds the tables a statement touches, and not the columns or functions named like them', () => {
    expect(tablesOf('SELECT a.x FROM api_keys a JOIN projects p ON p.id = a.project_id WHERE a.scopes = ?').sort()).toEqual(['api_keys', 'projects']);
    expect(tablesOf('SELECT * FROM feedback f, users u WHERE f.user_id = u.id').sort()).toEqual(['feedback', 'users']);
    expect(tablesOf('INSERT INTO kv (k) VALUES (?) ON CONFLICT (k) DO UPDATE SET v = excluded.v')).toEqual(['kv']);
    expect(tablesOf('SELECT * FROM projects WHERE org_id IN (SELECT value FROM json_each(?))')).toEqual(['projects']);
    expect(tablesOf('SELECT EXISTS (SELECT 1 FROM error_events WHERE x = 1) OR EXISTS (SELECT 1 FROM deployments)').sort()).toEqual(['deployments', 'error_events']);
    expect(tablesOf('CREATE INDEX feedback_time ON feedback(project_id, created_at)')).toEqual(['feedback']);
  });

  it('splits a script into statements, a trigger body whole', () => {
    expect(splitStatements("CREATE TABLE a (x TEXT DEFAULT ';'); CREATE TRIGGER t AFTER DELETE ON a BEGIN DELETE FROM b; DELETE FROM c; END; SELECT 1")).toEqual([
      "CREATE TABLE a (x TEXT DEFAULT ';')",
      'CREATE TRIGGER t AFTER DELETE ON a BEGIN DELETE FROM b; DELETE FROM c; END',
      'SELECT 1',
    ]);
  });

  it("translates SQLite's column types and case-insensitive columns", () => {
    expect(translateDdl('CREATE TABLE u (id INTEGER PRIMARY KEY AUTOINCREMENT, email TEXT NOT NULL UNIQUE COLLATE NOCASE, score REAL, blob BLOB) WITHOUT ROWID')).toBe(
      'CREATE TABLE u (id BIGINT GENERATED BY DEFAULT AS IDENTITY PRIMARY KEY, email CITEXT NOT NULL UNIQUE , score DOUBLE PRECISION, blob BYTEA)',
    );
    expect(translateDdl('CREATE TABLE s (project_id INTEGER PRIMARY KEY, n INTEGER)')).toBe('CREATE TABLE s (project_id BIGINT PRIMARY KEY, n BIGINT)');
  });
});

const missing = await postgresMissing();
if (missing) console.log(`[postgres-split] PostgreSQL cases skipped: ${missing}`);

describe.skipIf(!!missing)('the split database on PostgreSQL', () => {
  let pgdb: PgDatabase;
  let pg: SyncPg;
  let sqlite: Db;
  let db: Db;
  beforeAll(async () => {
    pgdb = await createPgDatabase();
    pg = openSyncPg(pgdb.url);
    migratePostgres(pg);
    sqlite = openDatabase(':memory:');
    sqlite.pragma('foreign_keys = OFF');
    db = openSplitDatabase(sqlite, pg);
    db.prepare("INSERT INTO organizations (id, name, created_at) VALUES ('o1', 'Org', 1)").run();
  });
  afterAll(async () => {
    db?.close();
    await pgdb?.drop();
  });

  it('keeps control rows in PostgreSQL and telemetry rows in SQLite', () => {
    const r = db.prepare('INSERT INTO projects (org_id, name, slug, created_at) VALUES (?, ?, ?, ?)').run('o1', 'P', 'p', 1);
    expect(Number(r.lastInsertRowid)).toBeGreaterThan(0);
    expect(pg.query('SELECT name FROM projects WHERE id = $1', [r.lastInsertRowid]).rows).toEqual([{ name: 'P' }]);
    expect(sqlite.prepare('SELECT count(*) FROM projects').pluck().get()).toBe(0);
    db.prepare("INSERT INTO capture_events (project_id, ts, event, distinct_id, properties, received_at) VALUES (1, 1, 'x', 'd', '{}', 1)").run();
    expect(sqlite.prepare('SELECT count(*) FROM capture_events').pluck().get()).toBe(1);
  });

  it('answers rows as better-sqlite3 does: numbers for 64-bit integers, 1/0 for booleans, pluck and raw', () => {
    expect(db.prepare('SELECT count(*) AS n, count(*) > 0 AS some FROM organizations').get()).toEqual({ n: 1, some: 1 });
    expect(db.prepare('SELECT id FROM organizations').pluck().all()).toEqual(['o1']);
    expect(db.prepare('SELECT id, name FROM organizations').raw().all()).toEqual([['o1', 'Org']]);
    expect(db.prepare('SELECT * FROM organizations').get()).toEqual({ id: 'o1', name: 'Org', created_at: 1 });
  });

  it('compares case-insensitive columns as SQLite does (users.email)', () => {
    db.prepare("INSERT INTO users (id, email, name, password_hash, created_at) VALUES ('u1', 'Ann@Example.com', 'Ann', 'x', 1)").run();
    expect(db.prepare('SELECT id FROM users WHERE email = ?').pluck().get('ann@example.COM')).toBe('u1');
    expect(() => db.prepare("INSERT INTO users (id, email, name, password_hash, created_at) VALUES ('u2', 'ANN@example.com', 'A', 'x', 1)").run()).toThrow(
      expect.objectContaining({ code: 'SQLITE_CONSTRAINT_UNIQUE' }),
    );
  });

  it("rolls back a failed write-batch job's PostgreSQL writes with its SQLite ones, and commits the others", async () => {
    const batch = createWriteBatcher(db);
    const add = db.prepare("INSERT INTO organizations (id, name, created_at) VALUES (?, 'batch', 1)");
    const tele = db.prepare("INSERT INTO capture_events (project_id, ts, event, distinct_id, properties, received_at) VALUES (3, ?, 'batch', 'd', '{}', 1)");
    const jobs = [
      batch(() => (add.run('kept-1'), tele.run(1))),
      batch(() => {
        add.run('dropped');
        tele.run(2);
        throw new Error('job fails');
      }),
      batch(() => (add.run('kept-2'), tele.run(3))),
    ];
    const settled = await Promise.allSettled(jobs);
    expect(settled.map((r) => r.status)).toEqual(['fulfilled', 'rejected', 'fulfilled']);
    expect(pg.query("SELECT id FROM organizations WHERE name = 'batch' ORDER BY id").rows).toEqual([{ id: 'kept-1' }, { id: 'kept-2' }]);
    expect(sqlite.prepare("SELECT ts FROM capture_events WHERE event = 'batch' ORDER BY ts").pluck().all()).toEqual([1, 3]);
  });

  it('refuses, when prepared, a statement that joins control and telemetry tables', () => {
    expect(() => db.prepare('SELECT * FROM error_events e JOIN projects p ON p.id = e.project_id')).toThrow(/control tables \(projects.*telemetry tables \(error_events/);
  });

  it('rolls back the PostgreSQL part of a transaction that throws, and commits both parts of one that returns', () => {
    const add = db.prepare("INSERT INTO organizations (id, name, created_at) VALUES (?, 'x', 1)");
    const tele = db.prepare("INSERT INTO capture_events (project_id, ts, event, distinct_id, properties, received_at) VALUES (2, ?, 'x', 'd', '{}', 1)");
    expect(() =>
      db.transaction(() => {
        add.run('gone');
        tele.run(1);
        throw new Error('no');
      })(),
    ).toThrow('no');
    expect(pg.query("SELECT count(*) FROM organizations WHERE id = 'gone'").rows[0]).toEqual({ count: 0 });
    expect(sqlite.prepare('SELECT count(*) FROM capture_events WHERE project_id = 2').pluck().get()).toBe(0);
    db.transaction(() => {
      add.run('kept');
      tele.run(2);
      // a nested transaction that throws undoes only its own part
      try {
        db.transaction(() => {
          add.run('inner');
          throw new Error('inner');
        })();
      } catch {
        /* expected */
      }
    })();
    expect(pg.query("SELECT id FROM organizations WHERE id IN ('kept', 'inner')").rows).toEqual([{ id: 'kept' }]);
    expect(sqlite.prepare('SELECT count(*) FROM capture_events WHERE project_id = 2').pluck().get()).toBe(1);
  });

  it('keeps a transaction usable after one of its statements fails, as SQLite does', () => {
    const add = db.prepare("INSERT INTO organizations (id, name, created_at) VALUES (?, 'x', 1)");
    db.transaction(() => {
      add.run('t1');
      expect(() => add.run('t1')).toThrow(expect.objectContaining({ code: 'SQLITE_CONSTRAINT_UNIQUE' }));
      add.run('t2');
    })();
    expect(pg.query("SELECT id FROM organizations WHERE id IN ('t1', 't2') ORDER BY id").rows).toEqual([{ id: 't1' }, { id: 't2' }]);
  });

  it("moves PRAGMA data_version when another connection changes a key's table", () => {
    const v = db.prepare('PRAGMA data_version').pluck();
    const before = v.get() as number;
    expect(v.get()).toBe(before);
    const other = openSyncPg(pgdb.url);
    try {
      other.query("UPDATE organizations SET name = 'renamed' WHERE id = 'o1'");
    } finally {
      other.close();
    }
    expect(v.get()).not.toBe(before);
  });

  it('gives packed BLOB columns back byte for byte, as Buffers (bytea)', () => {
    // Every byte value, a length that is not a multiple of 8, and an empty blob.
    const blob = Buffer.from(Array.from({ length: 1029 }, (_, i) => (i * 37 + 11) % 256));
    const put = db.prepare('INSERT INTO revenue_day_rows (project_id, day, n, rows) VALUES (?, ?, ?, ?) ON CONFLICT (project_id, day) DO UPDATE SET n = excluded.n, rows = excluded.rows');
    put.run(9, 0, 1, blob);
    put.run(9, 1, 0, Buffer.alloc(0));
    const back = db.prepare('SELECT rows FROM revenue_day_rows WHERE project_id = 9 AND day = ?').pluck().get(0) as Buffer;
    expect(Buffer.isBuffer(back)).toBe(true);
    expect(back.equals(blob)).toBe(true);
    expect((db.prepare('SELECT day, rows FROM revenue_day_rows WHERE project_id = 9 ORDER BY day').raw().all() as [number, Buffer][]).map(([d, b]) => [d, Buffer.isBuffer(b), b.toString('hex')])).toEqual([
      [0, true, blob.toString('hex')],
      [1, true, ''],
    ]);
    // Appended to as the repositories do (Buffer.concat of what was read), inside a transaction.
    db.transaction(() => put.run(9, 0, 2, Buffer.concat([db.prepare('SELECT rows FROM revenue_day_rows WHERE project_id = 9 AND day = 0').pluck().get() as Buffer, blob])))();
    expect((db.prepare('SELECT rows FROM revenue_day_rows WHERE project_id = 9 AND day = 0').get() as { rows: Buffer }).rows.equals(Buffer.concat([blob, blob]))).toBe(true);
    expect(pg.query('SELECT length(rows) AS n FROM revenue_day_rows WHERE project_id = 9 AND day = 0').rows).toEqual([{ n: 2058 }]);
  });

  it('keeps release health, replays (recordings as bytea), check-ins, outcomes, trace info and fixer dispatches in PostgreSQL (migration 6)', () => {
    const misc = createIngestMiscRepo(db);
    const ai = createAiRepo(db);
    const pid = '41';
    const t0 = 1_700_000_000_000;
    // Sessions: an update keeps the highest error count; a bucket of pre-aggregated sessions. Counts an
    // SDK sent as fractions are truncated (BIGINT refuses them) rather than failing the write.
    const session = { sid: 's1', distinct_id: 'd1', init: true, status: 'ok', started_ms: t0 + 0.5, timestamp_ms: t0, duration_ms: null, errors: 2, release: 'r1', environment: 'prod', user_agent: '', quantity: 1 };
    misc.recordSessions(pid, [session, { ...session, sid: null, status: 'crashed', quantity: 3.5 }], t0);
    misc.recordSessions(pid, [{ ...session, status: 'exited', errors: 1, duration_ms: 1500 }], t0 + 1);
    expect(pg.query('SELECT status, errors, started_ms, duration_ms, updated_ms FROM sessions WHERE project_id = 41').rows).toEqual([
      { status: 'exited', errors: 2, started_ms: t0 + 0.5, duration_ms: 1500, updated_ms: t0 + 1 },
    ]);
    expect(pg.query('SELECT crashed, exited FROM session_aggregates WHERE project_id = 41').rows).toEqual([{ crashed: 3, exited: 0 }]);
    // Replays: a second event widens the range and unions the ids; recordings replaced by segment, counted.
    const replay = { replay_id: 'r'.repeat(32), timestamp_ms: t0 + 10, started_ms: t0 + 5, urls: ['/a'], error_ids: ['e1'], trace_ids: [], environment: 'prod', release: 'r1', user: null };
    misc.upsertReplay(pid, replay, t0);
    misc.upsertReplay(pid, { ...replay, timestamp_ms: t0 + 20, started_ms: t0 + 1, urls: ['/b'], error_ids: ['e2'] }, t0);
    const blob = Buffer.from(Array.from({ length: 300 }, (_, i) => (i * 7) % 256));
    db.transaction(() => {
      misc.addReplayRecording(pid, replay.replay_id, 0, Buffer.from('old'), t0);
      misc.addReplayRecording(pid, replay.replay_id, 0, blob, t0);
      misc.addReplayRecording(pid, replay.replay_id, 1, blob, t0);
    })();
    expect(misc.replay(pid, replay.replay_id)).toMatchObject({ started_ms: t0 + 1, ended_ms: t0 + 20, segments: 2, urls: ['/a', '/b'], error_ids: ['e1', 'e2'] });
    expect(misc.replayForErrorEvent(pid, 'e2')?.replay_id).toBe(replay.replay_id);
    expect(misc.replayForErrorEvent(pid, 'e3')).toBeUndefined();
    expect(misc.replaysInWindow(pid, t0, t0 + 2).map((r) => r.replay_id)).toEqual([replay.replay_id]);
    const stored = pg.query('SELECT payload FROM replay_recordings WHERE project_id = 41 AND segment_id = 0').rows[0]!.payload as Buffer;
    expect(Buffer.isBuffer(stored) && stored.equals(blob)).toBe(true);
    // Check-ins replaced by (id, status); outcomes summed per minute.
    const checkIn = { check_in_id: 'c1', monitor_slug: 'nightly', status: 'in_progress', duration_s: null, environment: 'prod', release: '', payload: { a: 1 } };
    misc.recordCheckIn(pid, checkIn, t0);
    misc.recordCheckIn(pid, { ...checkIn, payload: { a: 2 } }, t0 + 1);
    misc.recordCheckIn(pid, { ...checkIn, status: 'ok', duration_s: 1.25 }, t0 + 2);
    expect(misc.checkIns(pid, 'nightly', 10).map((c) => [c.status, c.duration_s, c.payload])).toEqual([
      ['ok', 1.25, { a: 1 }],
      ['in_progress', null, { a: 2 }],
    ]);
    misc.recordOutcome(pid, t0, 'error', 'spike_protection', 2.5);
    misc.recordOutcome(pid, t0 + 1, 'error', 'spike_protection', 3);
    expect(misc.outcomesSince(pid, t0 - 60_000)).toEqual([{ category: 'error', reason: 'spike_protection', quantity: 5 }]);
    // Langfuse trace info: a later update keeps what it leaves empty. Fixer dispatches: stats and timeline.
    const trace = { trace_id: 't1', name: 'chat', session_id: 'sess', user_id: '', tags: ['a'], release: '', environment: '', metadata: { k: 1 } };
    ai.upsertTrace(pid, trace);
    ai.upsertTrace(pid, { ...trace, name: '', user_id: 'u1', tags: [], metadata: {} });
    expect(ai.traceInfo(pid, 't1')).toEqual({ project_id: 41, ...trace, user_id: 'u1' });
    const dispatch = { dispatch_id: 'f1', source: 'automation', requester: 'k1', status: 'opened', webhook_status: 'delivered', dispatched_ms: t0, completed_ms: t0 + 3_600_000 };
    ai.recordFixDispatch(pid, dispatch);
    ai.recordFixDispatch(pid, { ...dispatch, dispatch_id: 'f2', status: 'failed', dispatched_ms: t0 + 1 });
    expect(ai.fixStats(pid, t0, t0 + 86_400_000)).toMatchObject({ total: 2, by_status: [{ key: 'failed', count: 1 }, { key: 'opened', count: 1 }] });
    const hour = Math.floor(t0 / 3_600_000) * 3_600_000;
    expect(ai.fixTimeline(pid, t0, t0 + 86_400_000, 3_600_000)).toEqual({ dispatched: [{ t: hour, c: 2 }], completed: [{ t: hour + 3_600_000, c: 2 }] });
    for (const table of ['sessions', 'session_aggregates', 'replays', 'replay_recordings', 'check_ins', 'ingest_outcomes', 'agent_traces', 'ai_fix_dispatches']) {
      expect(sqlite.prepare(`SELECT count(*) FROM ${table}`).pluck().get(), table).toBe(0);
    }
    // Retention expires them in PostgreSQL (session_aggregates by the rowid column PostgreSQL keeps);
    // the disk budget, which frees the SQLite file, leaves them alone.
    const retention = createRetentionRepo(db);
    for (const target of EXPIRY_TARGETS.filter((x) => ['sessions', 'session_aggregates', 'replays', 'replay_recordings', 'check_ins', 'ingest_outcomes'].includes(x.table))) {
      expect(retention.oldest(target, pid), target.table).not.toBeNull();
      expect(retention.inFile?.(target), target.table).toBe(false);
      expect(retention.expireBatch(target, pid, t0 + 86_400_000, 100), target.table).toBeGreaterThan(0);
      expect(retention.oldest(target, pid), target.table).toBeNull();
    }
  });

  it('holds every control table with the columns SQLite has', () => {
    // Tables moved by a later migration (3 to 6) are routed to PostgreSQL and adopted from SQLite once.
    expect(MOVED_LATER.map((m) => m.version)).toEqual([3, 4, 5, 6]);
    for (const m of MOVED_LATER) for (const table of m.tables) expect(CONTROL_TABLES.has(table), table).toBe(true);
    for (const table of CONTROL_TABLES) {
      // Capture times keep fractional milliseconds in PostgreSQL as SQLite does (REAL values in INTEGER columns).
      const fractional = FRACTIONAL_TIME_COLUMNS[table] ?? [];
      const sqliteCols = (sqlite.prepare(`PRAGMA table_info(${table})`).all() as Array<{ name: string; type: string }>)
        .map((c) => `${c.name}:${fractional.includes(c.name) ? 'REAL' : c.type.toUpperCase()}`)
        .sort();
      const pgCols = (
        pg.query<{ column_name: string; data_type: string; udt_name: string }>(
          "SELECT column_name, data_type, udt_name FROM information_schema.columns WHERE table_schema = 'public' AND table_name = $1 AND column_name <> 'rowid'",
          [table],
        ).rows
      )
        .map((c) => `${c.column_name}:${({ bigint: 'INTEGER', text: 'TEXT', 'double precision': 'REAL', bytea: 'BLOB' } as Record<string, string>)[c.data_type] ?? (c.udt_name === 'citext' ? 'TEXT' : c.data_type)}`)
        .sort();
      expect(pgCols, table).toEqual(sqliteCols);
    }
  });
});
