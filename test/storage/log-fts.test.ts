/**
 * Issue 22, migration 050: new logs' full-text rows keep no positions (`logs_fts2`, detail=none);
 * rows written before stay in `logs_fts` (detail=full). Searches answer the same whichever table
 * holds a log: phrases (quoted, hyphenated, path-like words) match adjacent words only, prefixes,
 * OR, attribute values and trace ids; counts agree with the rows; expiry empties both tables.
 */
import { describe, expect, it } from 'vitest';
import { openDatabase, type Db } from '../../src/storage/db.js';
import { createSqliteTelemetryWriter } from '../../src/storage/sqlite-telemetry-store.js';
import { withLogRollups } from '../../src/storage/log-rollups.js';
import { createLogsReadRepo } from '../../src/storage/logs-read-repo.js';
import { parseLogQuery, splitLogQuery } from '../../src/domain/logs/query.js';
import { createRetentionRepo, EXPIRY_TARGETS } from '../../src/storage/retention-repo.js';
import type { Attributes, LogRecordOut } from '../../src/domain/telemetry-types.js';

const T0 = Date.UTC(2026, 0, 1, 10);
const TRACE = '4bf92f3577b34da6a3ce929d0e0e4736';
const res: Attributes = { 'service.name': 'shop' };

const log = (i: number, body: string, attributes: Attributes, trace: string | null = null): LogRecordOut => ({
  resource: res, scope: { name: 'app', version: '', attributes: {} }, service_name: 'shop', time_ms: T0 + i * 1000, observed_time_ms: T0 + i * 1000,
  severity_number: 9, severity_text: 'INFO', body, attributes, trace_id: trace, span_id: null, flags: 0, event_name: '',
});

const LOGS: LogRecordOut[] = [
  log(0, 'connection reset by peer', { 'http.route': '/api/checkout' }, TRACE),
  log(1, 'reset the connection', { 'http.route': '/api/orders/checkout' }),
  log(2, 'user added sku-4242 to cart', { user: 'u_1' }),
  log(3, 'sku 9 added, 4242 left', { user: 'u_2' }),
  log(4, 'Élan vital restored', { tags: ['alpha', 'beta gamma'] }),
  log(5, 'payment declined', { tier: 'gold card' }),
];

/** The text the writer indexes for a log (sqlite-telemetry-store.ts): body, and attribute values then the trace token. */
const indexed = (l: LogRecordOut) => {
  const vals = Object.values(l.attributes).flatMap((v) => (Array.isArray(v) ? v : [v])).map(String);
  if (l.trace_id) vals.push(l.trace_id.slice(0, 12));
  return [typeof l.body === 'string' ? l.body : '', vals.join(' ')];
};

/** A database with the logs written now; `old` of them moved to the pre-050 table, as if written before the migration. */
function dbWith(old: (i: number) => boolean): Db {
  const db = openDatabase(':memory:');
  withLogRollups(db, createSqliteTelemetryWriter(db)).insertLogs('1', LOGS, 'otlp', T0);
  const ids = db.prepare('SELECT id FROM logs ORDER BY id').pluck().all() as number[];
  ids.forEach((id, i) => {
    if (!old(i)) return;
    db.prepare("INSERT INTO logs_fts2 (logs_fts2, rowid, body, attrs) VALUES ('delete', ?, ?, ?)").run(id, ...indexed(LOGS[i]!));
    db.prepare('INSERT INTO logs_fts (rowid, body, attrs) VALUES (?, ?, ?)').run(id, ...indexed(LOGS[i]!));
  });
  return db;
}

/** Every word of every log's full-text row, as one FTS5 OR. */
const ALL_WORDS = [...new Set(LOGS.flatMap((l) => indexed(l).join(' ').toLowerCase().normalize('NFD').replace(/\p{Mn}/gu, '').split(/[^\p{L}\p{N}]+/u)).filter(Boolean))]
  .map((w) => `"${w}"`)
  .join(' OR ');

const QUERIES = [
  'connection reset', '"connection reset"', '"reset by"', 'sku-42*', 'conn*', '/api/checkout', 'checkout', 'sku-4242', '4242',
  'elan-vital', '"beta gamma"', '"alpha beta"', '"gold card" OR sku-4242', 'declined OR "reset the"', '"gamma alpha"', 'card gold',
];

function answers(db: Db) {
  const repo = createLogsReadRepo(db);
  const win = { fromMs: T0 - 1000, toMs: T0 + 60_000 };
  const out: Record<string, unknown> = {};
  for (const q of QUERIES) {
    // As logs.search reads `q` (src/domain/logs/query.ts): words, "phrases", prefixes*, OR.
    const { match, rest } = splitLogQuery(parseLogQuery(q)!);
    const f = { ...win, match, where: rest };
    const r = repo.search('1', f, { limit: 50, offset: 0 });
    out[q] = { bodies: r.rows.map((x) => x.body).sort(), total: r.total, count: repo.total('1', f) };
  }
  // Free text under an OR with a key:value term (the row-filter path).
  const parsed = splitLogQuery(parseLogQuery('user:u_1 OR "reset the"')!);
  out.or = repo.search('1', { ...win, match: parsed.match, where: parsed.rest }, { limit: 50, offset: 0 }).rows.map((x) => x.body).sort();
  out.trace = repo.search('1', { ...win, traceId: TRACE }, { limit: 50, offset: 0 }).rows.map((x) => x.body);
  return out;
}

const bodies = (...i: number[]) => i.map((k) => LOGS[k]!.body as string).sort();

describe('full-text rows without positions (migration 050)', () => {
  it('stores new logs in logs_fts2 and answers phrases, prefixes, OR and trace ids exactly', () => {
    const db = dbWith(() => false);
    expect(db.prepare(`SELECT count(*) FROM logs_fts2 WHERE logs_fts2 MATCH ?`).pluck().get(ALL_WORDS)).toBe(LOGS.length);
    expect(db.prepare('SELECT count(*) FROM logs_fts_docsize').pluck().get()).toBe(0);
    const a = answers(db) as Record<string, { bodies: string[]; total: number; count: number }>;
    const expectQ = (q: string, b: string[]) => {
      expect(a[q]!.bodies, q).toEqual(b);
      expect(a[q]!.count, q).toBe(b.length);
    };
    expectQ('connection reset', bodies(0, 1));
    expectQ('"connection reset"', bodies(0));
    expectQ('"reset by"', bodies(0));
    expectQ('sku-42*', bodies(2));
    expectQ('conn*', bodies(0, 1));
    expectQ('/api/checkout', bodies(0));
    expectQ('checkout', bodies(0, 1));
    expectQ('sku-4242', bodies(2));
    expectQ('4242', bodies(2, 3));
    expectQ('elan-vital', bodies(4));
    expectQ('"beta gamma"', bodies(4));
    expectQ('"alpha beta"', bodies(4)); // array values are indexed one after another
    expectQ('"gamma alpha"', []);
    expectQ('"gold card" OR sku-4242', bodies(2, 5));
    expectQ('declined OR "reset the"', bodies(1, 5));
    expectQ('card gold', bodies(5));
    expect(a.or).toEqual(bodies(1, 2));
    expect(a.trace).toEqual(bodies(0));
    db.close();
  });

  it('finds a trace id typed as free text in q, for new and older full-text rows', () => {
    // Logs are indexed under the trace id's first 12 hex digits (migration 037), not the whole id.
    for (const old of [() => false, () => true]) {
      const db = dbWith(old);
      const repo = createLogsReadRepo(db);
      const win = { fromMs: T0 - 1000, toMs: T0 + 60_000 };
      for (const q of [TRACE, TRACE.toUpperCase(), `"${TRACE}"`, `reset ${TRACE}`, `${TRACE} OR declined`, `user:u_9 OR ${TRACE}`]) {
        const { match, rest } = splitLogQuery(parseLogQuery(q)!);
        const r = repo.search('1', { ...win, match, where: rest }, { limit: 50, offset: 0 });
        expect(r.rows.map((x) => x.body).sort(), q).toEqual(q.includes('declined') ? bodies(0, 5) : bodies(0));
      }
      db.close();
    }
  });

  it('answers the same for rows written before the migration, and for a mix of both', () => {
    const now = answers(dbWith(() => false));
    expect(answers(dbWith(() => true))).toEqual(now);
    expect(answers(dbWith((i) => i % 2 === 0))).toEqual(now);
  });

  it('expiry removes the rows of both tables, every word of them', () => {
    const db = dbWith((i) => i % 2 === 0);
    const repo = createRetentionRepo(db);
    const target = EXPIRY_TARGETS.find((t) => t.table === 'logs')!;
    // The three oldest first: the others are still found by every search, and only they.
    repo.expireBatch(target, '1', T0 + 2500, 100);
    const after = answers(db) as Record<string, { bodies: string[] }>;
    expect(after['connection reset']!.bodies).toEqual([]);
    expect(after['4242']!.bodies).toEqual(bodies(3));
    expect(after['"beta gamma"']!.bodies).toEqual(bodies(4));
    expect(after['"gold card" OR sku-4242']!.bodies).toEqual(bodies(5));
    repo.expireBatch(target, '1', T0 + 3_600_000, 100);
    expect(db.prepare('SELECT count(*) FROM logs').pluck().get()).toBe(0);
    expect(db.prepare('SELECT count(*) FROM logs_fts_docsize').pluck().get()).toBe(0);
    // logs_fts2 keeps no per-row record: nothing of the deleted rows may be left under any word.
    for (const t of ['logs_fts', 'logs_fts2']) {
      expect(db.prepare(`SELECT count(*) FROM ${t} WHERE ${t} MATCH ?`).pluck().get(ALL_WORDS), t).toBe(0);
      db.exec(`INSERT INTO ${t} (${t}, rank) VALUES ('integrity-check', 0)`);
    }
    db.close();
  });
});
