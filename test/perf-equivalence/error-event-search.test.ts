/**
 * events.search free text on SQLite reads the trigram index of error events (migration 057) and
 * keeps its exact predicate on the candidates: on events with ASCII and non-ASCII case variants
 * (É/é, ß, İ, final sigma, the Kelvin sign, a decomposed ï), quotes, backslashes, `%` and `_`, its
 * answers (rows of a page, the count up to the cap, whether it is capped) equal reading every event
 * of the window with that predicate (the code before the index) — for short terms (no trigram),
 * negated terms, phrases with spaces, `message:` / `title:` values with `*` or in lists, terms mixed
 * with fields and windows — also after retention deleted some events. A term of 3+ characters is
 * answered through the index (the query plan names it); events stored before migration 057 are
 * indexed by it.
 */
import { mkdtempSync, rmSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import Database from 'better-sqlite3';
import { afterAll, describe, expect, it } from 'vitest';
import { migrate, openDatabase, type Db } from '../../src/storage/db.js';
import { MIGRATIONS } from '../../src/storage/migrations/index.js';
import { createErrorsIngestRepo, type KeyedErrorEvent } from '../../src/storage/errors-repo.js';
import { compileEventTerms, createSqliteErrorEventsReader, EVENT_COLUMNS, eventFromRow, searchCandidates } from '../../src/storage/error-events-read.js';
import { createRetentionRepo, EXPIRY_TARGETS } from '../../src/storage/retention-repo.js';
import { parseEventQuery, type EventQueryTerm } from '../../src/domain/errors/event-query.js';
import type { ErrorEventRecord } from '../../src/domain/telemetry-types.js';
import { rng } from '../../bench/lib.js';

const dir = mkdtempSync(join(tmpdir(), 'sightline-evfts-'));
afterAll(() => rmSync(dir, { recursive: true, force: true }));

const T0 = Date.UTC(2026, 0, 1);
const HOUR = 3_600_000;
const PIECES = [
  'connection', 'Connection', 'CONNECTION', 'reset', 'Timeout', 'Café', 'CAFÉ', 'café', 'cafe', 'straße', 'STRASSE', 'İstanbul', 'istanbul', 'ΟΔΟΣ', 'οδος', 'οδοσ',
  '100%', '1000', 'a_b', 'axb', 'a%b', 'say "hi"', "it's", 'back\\slash', 'x', 'ab', 'naïve', 'nai\u0308ve', '😀emoji', 'order 12345', 'order 1234', 'Ünïcödé', 'ünïcödé',
  '\u212Aelvin', 'kelvin', 'KELVIN', 'ǅemal', 'ǆemal', 'ﬁle', 'file',
];
const TYPES = ['ConnectionError', 'TimeoutError', 'CaféError', 'Error', 'ΣError', 'KelvinError'];

function seed(db: Db, n: number, seedNo: number) {
  db.prepare("INSERT INTO organizations (id, name, created_at) VALUES ('o', 'Org', 0)").run();
  db.prepare("INSERT INTO projects (id, org_id, name, slug, created_at) VALUES (1, 'o', 'web', 'web', 0)").run();
  db.prepare("INSERT INTO projects (id, org_id, name, slug, created_at) VALUES (2, 'o', 'api', 'api', 0)").run();
  const rnd = rng(seedNo);
  const int = (k: number) => Math.floor(rnd() * k);
  const text = () => Array.from({ length: 1 + int(4) }, () => PIECES[int(PIECES.length)]).join(rnd() < 0.7 ? ' ' : '');
  const ingest = createErrorsIngestRepo(db);
  for (let i = 0; i < n; i += 10) {
    const items: KeyedErrorEvent[] = Array.from({ length: 10 }, (_, k) => {
      const type = TYPES[int(TYPES.length)]!;
      const e = {
        event_id: `s${seedNo}e${i + k}`, timestamp_ms: T0 + int(48 * HOUR), received_ms: T0 + 48 * HOUR, source: 'sentry', platform: 'node', level: rnd() < 0.8 ? 'error' : 'warning',
        message: text(), exceptions: [], fingerprint: null, environment: 'production', release: '', service_name: 'api', server_name: '', transaction: '', tags: {},
        user: null, trace_id: null, span_id: null, payload: {},
      } as unknown as ErrorEventRecord;
      const title = text();
      return { event: e, key: { fingerprint: title, method: 'message', type, title, culprit: '' } as never };
    });
    ingest.ingest(String(1 + ((i / 10) % 2)), 'web', items, T0);
  }
}

/** events.search as before the index: every event of the window checked by the compiled terms. */
function scan(db: Db, pid: number, o: { terms: readonly EventQueryTerm[]; fromMs?: number; toMs?: number; limit: number; offset: number; cap: number }) {
  const c = compileEventTerms(o.terms);
  const where = ['project_id = ?', ...c.sql];
  const args: unknown[] = [pid, ...c.args];
  if (o.fromMs !== undefined) where.push('timestamp_ms >= ?'), args.push(o.fromMs);
  if (o.toMs !== undefined) where.push('timestamp_ms <= ?'), args.push(o.toMs);
  const w = where.join(' AND ');
  const n = (db.prepare(`SELECT COUNT(*) AS n FROM (SELECT 1 FROM error_events WHERE ${w} LIMIT ?)`).get(...args, o.cap + 1) as { n: number }).n;
  const rows = db.prepare(`SELECT ${EVENT_COLUMNS} FROM error_events WHERE ${w} ORDER BY timestamp_ms DESC, event_id LIMIT ? OFFSET ?`).all(...args, o.limit, o.offset).map(eventFromRow);
  return { rows, n };
}

const QUERIES = [
  'connection', 'CONNECTION', 'Connection reset', '"connection reset"', '"on res"', 'café', 'CAFÉ', 'Café', 'cafe', 'straße', 'STRASSE', 'ΟΔΟΣ', 'οδος', 'οδοσ', 'İstanbul',
  'istanbul', 'ab', 'x', 'é', '-connection', '-café timeout', '-"order 1234"', 'message:café', 'title:CAFÉ', 'message:con*ion', 'message:*é*', 'title:c*f*',
  'message:[café,reset]', 'message:[ab,reset]', '-message:connection', '"100%"', '100%', '"1000"', 'a_b', 'a%b', '"say \\"hi\\""', "it's", '"back\\\\slash"', 'naïve',
  'nai\u0308ve', '😀emo', 'order 12345', '"order 1234"', 'connection level:error', 'connection -level:error', 'connection -type:TimeoutError', 'type:CaféError café',
  'connectionerror', 'ror', 'σerror', 'ΣERROR', '\u212Aelvin', 'kelvin', 'KELVIN', 'ǅemal', 'Ǆemal', 'ﬁle', 'FILE', 'ünïcödé', 'ÜNÏCÖDÉ', 'zzz', '"  "', 'timeout café reset', 'con*ion', 'message:*', 'title:"a_b"', 'message:100%*', '"ion\\\\"',
];
const WINDOWS: [number | undefined, number | undefined][] = [[undefined, undefined], [T0 + 5 * HOUR, T0 + 30 * HOUR], [T0 + 20 * HOUR, undefined], [undefined, T0 + 2 * HOUR], [T0 + 7 * HOUR + 1, T0 + 7 * HOUR + 1]];
const PAGES = [{ limit: 50, offset: 0, cap: 1000 }, { limit: 5, offset: 3, cap: 7 }, { limit: 3, offset: 0, cap: 2 }];

/** A reader over `db` that keeps the SQL it prepares. */
function spied(db: Db) {
  const seen: string[] = [];
  const proxy = new Proxy(db, {
    get(t, k) {
      if (k === 'prepare') return (sql: string) => (seen.push(sql), t.prepare(sql));
      const v = Reflect.get(t, k, t) as unknown;
      return typeof v === 'function' ? v.bind(t) : v;
    },
  });
  return { reader: createSqliteErrorEventsReader(proxy), seen };
}

const planOf = (db: Db, sql: string) =>
  (db.prepare(`EXPLAIN QUERY PLAN ${sql}`).all(...Array(sql.split('?').length - 1).fill(null)) as { detail: string }[]).map((r) => r.detail).join('\n');

async function compareAll(db: Db, label: string) {
  const { reader, seen } = spied(db);
  let nonEmpty = 0;
  let viaIndex = 0;
  for (const q of QUERIES) {
    const terms = parseEventQuery(q, T0).terms;
    for (const [fromMs, toMs] of WINDOWS) {
      for (const pid of [1, 2]) {
        for (const page of PAGES) {
          const o = { terms, fromMs, toMs, ...page };
          const at = `${label} ${q} ${JSON.stringify({ pid, fromMs, toMs, ...page })}`;
          seen.length = 0;
          const got = await reader.search(pid, o);
          expect(got, at).toEqual(scan(db, pid, o));
          if (got.n) nonEmpty++;
          if (searchCandidates(db, pid, o)) {
            viaIndex++;
            // The candidates from the index; the count and the page: event rows by primary key, for those candidates.
            const cands = planOf(db, seen.find((s) => s.includes('MATCH ? ORDER BY'))!);
            expect(cands, at).toMatch(/SCAN error_events_fts VIRTUAL TABLE INDEX/);
            expect(cands, at).toMatch(/SEARCH i USING INTEGER PRIMARY KEY \(rowid=\?\)/);
            const reads = seen.filter((s) => s.includes('FROM error_events WHERE') && s.includes('json_each'));
            expect(reads.length, at).toBe(2);
            for (const sql of reads) {
              const plan = planOf(db, sql);
              expect(sql, at).toContain('error_event_fts_ids');
              expect(plan, at).toMatch(/SEARCH error_events USING PRIMARY KEY \(project_id=\? AND event_id=\?\)/);
              expect(plan, at).not.toMatch(/error_events USING INDEX|SCAN error_events\b/);
            }
          }
        }
      }
    }
  }
  return { nonEmpty, viaIndex };
}

describe('events.search through the trigram index (migration 057)', () => {
  const db = openDatabase(join(dir, 'a.db'));
  afterAll(() => db.close());
  seed(db, 3000, 7);

  it('answers as the scan does, for every kind of term, window and page', async () => {
    const { nonEmpty, viaIndex } = await compareAll(db, 'fresh');
    expect(nonEmpty).toBeGreaterThan(500);
    expect(viaIndex).toBeGreaterThan(500);
  });

  it('reads the index for a term of 3+ characters, not for a shorter, negated or NUL-holding one', () => {
    const terms = (q: string) => ({ terms: parseEventQuery(q, T0).terms });
    for (const q of ['con', 'café', '"on res"', 'message:con*ion', 'title:[café,reset]', '-ab connection', 'ΟΔΟΣ']) expect(searchCandidates(db, 1, terms(q)), q).not.toBeNull();
    for (const q of ['ab', 'é', '-connection', 'message:[ab,reset]', 'message:c*n', 'level:error', 'co\u0000n']) expect(searchCandidates(db, 1, terms(q)), q).toBeNull();
    const plan = planOf(db, `SELECT 1 FROM error_events WHERE project_id = ? AND event_id IN (${searchCandidates(db, 1, terms('café'))!.sql})`);
    expect(plan).toMatch(/SEARCH error_events USING PRIMARY KEY/);
    expect(plan).not.toMatch(/SCAN error_events\b/);
  });

  it('reads the window instead when the index names too many events', () => {
    const terms = parseEventQuery('connection', T0).terms;
    expect(searchCandidates(db, 1, { terms }, 5)).toBeNull();
    expect(searchCandidates(db, 1, { terms })).not.toBeNull();
    // Few in a narrow window, but common in all: the index's rows to read stop at the limit.
    const narrow = { terms, fromMs: T0 + 7 * HOUR, toMs: T0 + 7 * HOUR + 60_000 };
    const inAll = db.prepare(`SELECT count(*) FROM error_events_fts WHERE error_events_fts MATCH '"con" AND "nec"'`).pluck().get() as number;
    expect(inAll).toBeGreaterThan(100);
    expect(searchCandidates(db, 1, narrow, 5, inAll + 1)).not.toBeNull();
    expect(searchCandidates(db, 1, narrow, 5, inAll)).toBeNull();
    expect(searchCandidates(db, 1, narrow, 5, 100)).toBeNull();
  });

  it('forgets expired events, and still answers as the scan does', async () => {
    const before = db.prepare('SELECT count(*) FROM error_event_fts_ids').pluck().get() as number;
    expect(before).toBe(db.prepare('SELECT count(*) FROM error_events').pluck().get());
    const target = EXPIRY_TARGETS.find((t) => t.table === 'error_events')!;
    const retention = createRetentionRepo(db);
    let gone = 0;
    for (const pid of ['1', '2']) while (retention.expireBatch(target, pid, T0 + 24 * HOUR, 97)) gone++;
    expect(gone).toBeGreaterThan(0);
    const left = db.prepare('SELECT count(*) FROM error_events').pluck().get() as number;
    expect(left).toBeLessThan(before);
    expect(db.prepare('SELECT count(*) FROM error_event_fts_ids').pluck().get()).toBe(left);
    // Every index row left is an event left: what the index finds for a trigram all events hold ('ion' of every type but two) is in the table.
    const indexed = db.prepare(`SELECT count(*) FROM error_events_fts WHERE error_events_fts MATCH '"err" OR "ror"'`).pluck().get();
    expect(indexed).toBe(left);
    db.prepare("INSERT INTO error_events_fts (error_events_fts, rank) VALUES ('integrity-check', 0)").run();
    await compareAll(db, 'after expiry');
  });
});

describe('migration 057', () => {
  it('indexes the events stored before it', async () => {
    const raw = new Database(join(dir, 'old.db')) as unknown as Db;
    migrate(raw, { migrations: MIGRATIONS.filter((m) => m.version < 57) });
    seed(raw, 600, 11);
    expect(raw.prepare("SELECT count(*) FROM sqlite_master WHERE name = 'error_events_fts'").pluck().get()).toBe(0);
    migrate(raw);
    const n = raw.prepare('SELECT count(*) FROM error_events').pluck().get() as number;
    expect(n).toBe(600);
    expect(raw.prepare('SELECT count(*) FROM error_event_fts_ids').pluck().get()).toBe(n);
    const { viaIndex, nonEmpty } = await compareAll(raw, 'migrated');
    expect(viaIndex).toBeGreaterThan(100);
    expect(nonEmpty).toBeGreaterThan(100);
    // Found through the index alone: its candidates for a word are the events holding it.
    const terms = parseEventQuery('connection', T0).terms;
    const c = searchCandidates(raw, 1, { terms })!;
    const ids = raw.prepare(c.sql).pluck().all(...c.args) as string[];
    expect(ids.length).toBeLessThan(n);
    const holding = raw.prepare("SELECT event_id FROM error_events WHERE project_id = 1 AND (instr(lower(message), 'connection') OR instr(lower(title), 'connection') OR instr(lower(type), 'connection'))").pluck().all() as string[];
    expect(holding.length).toBeGreaterThan(50);
    expect(ids.sort()).toEqual(holding.sort());
    raw.close();
  });
});
