/**
 * Issue 22 item 6, migrations 051 and 052: log attribute values shared by many records are stored
 * once (attr_templates; the row keeps the values that vary), and log rows lose the columns only rows
 * from before migration 037 filled. A database written before the migrations reads the same after
 * them as one written now: rows and their attributes as sent, `key:value` filters on shared and
 * varying values, free text and phrases over attribute values, trace ids, HTTP-method and level
 * counts; logs written after the upgrade add to it, and expiry leaves nothing behind.
 */
import { describe, expect, it } from 'vitest';
import { migrate, openDatabase, type Db } from '../../src/storage/db.js';
import { MIGRATIONS } from '../../src/storage/migrations/index.js';
import { LOG_COUNT_TABLES } from '../../src/storage/migrations/004-log-counts.js';
import { createSqliteTelemetryWriter } from '../../src/storage/sqlite-telemetry-store.js';
import { withLogRollups } from '../../src/storage/log-rollups.js';
import { createLogsReadRepo } from '../../src/storage/logs-read-repo.js';
import { parseLogQuery, splitLogQuery } from '../../src/domain/logs/query.js';
import { createRetentionRepo, EXPIRY_TARGETS } from '../../src/storage/retention-repo.js';
import type { Attributes, LogRecordOut } from '../../src/domain/telemetry-types.js';
import { copyLogTables, untemplateLogs } from '../helpers/log-rows.js';

const T0 = Date.UTC(2026, 0, 1, 10);
const MIN = 60_000;
const TRACE = '4bf92f3577b34da6a3ce929d0e0e4736';
const RES: Attributes[] = [{ 'service.name': 'orders', 'deployment.environment.name': 'prod' }, { 'service.name': 'billing' }];
const ROUTES = ['/api/orders/{id}', '/api/cart', '/health'];
const METHODS = ['GET', 'POST', 'DELETE'];

/** Attributes of log `i`: shared values (method, route, status, function), varying ones (user, order), and other shapes. */
function attrsOf(i: number): Attributes {
  if (i % 17 === 0) return {};
  if (i % 13 === 0) return { 'http.route': '/health', 'code.function': 'probe' }; // nothing varies
  if (i % 11 === 0) return { 'http.method': METHODS[i % 3]!, nested: { a: [1, 'b', null], ok: i % 2 === 0 }, '10': 'numeric key first' };
  if (i % 4 === 3) return { 'user.id': `u_${i}`, 'code.function': 'handleRequest' }; // one value varies
  return {
    'http.request.method': METHODS[i % 3]!, 'http.route': ROUTES[i % 3]!, 'http.response.status_code': i % 10 === 0 ? 500 : 200,
    'user.id': `u_${i}`, 'order.amount': i * 1.25, 'code.function': 'handleRequest', 'thread.id': i % 5, flag: i % 6 === 0,
  };
}

const log = (i: number, body = `request ${i} served`): LogRecordOut => {
  const resource = RES[i % 2]!;
  return {
    resource, scope: { name: 'app', version: '', attributes: {} }, service_name: resource['service.name'] as string,
    time_ms: T0 + i * 7_000 + 0.5, observed_time_ms: T0 + i * 7_000 + (i % 3), severity_number: i % 10 === 0 ? 17 : 9, severity_text: i % 10 === 0 ? 'ERROR' : 'INFO',
    body, attributes: attrsOf(i), trace_id: i % 9 === 0 ? TRACE : null, span_id: i % 9 === 0 ? '00f067aa0ba902b7' : null, flags: 0, event_name: '',
  };
};
const LOGS = Array.from({ length: 300 }, (_, i) => log(i));
const WIN = { fromMs: T0 - MIN, toMs: T0 + 24 * 60 * MIN };

const QUERIES = [
  'http.route:/api/cart', 'http.route:/api/*', 'user.id:u_250', 'user.id:u_7', 'user.id:u_295', 'http.response.status_code:500', 'order.amount:12.5', 'thread.id:3',
  'flag:true', 'code.function:probe', 'http.method:POST', '10:"numeric key first"', 'handlerequest', '"api cart"', 'u_250', 'probe OR u_14',
  'user.id:u_14 OR "orders id"', TRACE, 'served handlerequest',
];

function answers(db: Db) {
  const repo = createLogsReadRepo(db);
  const out: Record<string, unknown> = {};
  const all = repo.search('1', WIN, { limit: 1000, offset: 0 });
  out.all = all.rows.map((r) => [r.body, r.attributes, r.level, r.service_name, r.trace_id, r.span_id, r.scope_name, r.observed_ms, r.severity_text]);
  for (const q of QUERIES) {
    const { match, rest } = splitLogQuery(parseLogQuery(q)!);
    const f = { ...WIN, match, where: rest };
    out[q] = [repo.search('1', f, { limit: 50, offset: 0 }).rows.map((r) => r.body), repo.total('1', f)];
  }
  const counts = (f: object, dims: ('http_method' | 'level')[]) =>
    repo.counts('1', { ...WIN, ...f }, dims, { firstMs: T0 - MIN, stepMs: 10 * MIN }).map((c) => JSON.stringify([c.bucket, ...c.keys, c.n])).sort();
  out.methods = counts({}, ['http_method', 'level']);
  out.methodsRaw = counts({ where: { kind: 'attr', key: 'code.function', value: 'handleRequest', prefix: false } }, ['http_method']);
  out.trace = repo.search('1', { ...WIN, traceId: TRACE }, { limit: 50, offset: 0 }).rows.map((r) => r.body);
  out.newest = repo.newest('1', WIN, 40, { attributes: true }).map((r) => r.attributes);
  return out;
}

/** Expiry of the logs before `beforeMs`; then what is left must be found by nothing but itself. */
function expire(db: Db, beforeMs: number) {
  createRetentionRepo(db).expireBatch(EXPIRY_TARGETS.find((t) => t.table === 'logs')!, '1', beforeMs, 10_000);
  const left = db.prepare('SELECT count(*) FROM logs').pluck().get();
  for (const t of LOG_COUNT_TABLES) expect(db.prepare(`SELECT coalesce(sum(n), 0) FROM ${t.table}`).pluck().get(), t.table).toBe(left);
}

describe('log attribute templates and rows without dead columns (migrations 051, 052)', () => {
  it('stores shared values once and reads every form back as sent', () => {
    const db = openDatabase(':memory:');
    withLogRollups(db, createSqliteTelemetryWriter(db)).insertLogs('1', LOGS, 'otlp', T0);
    const forms = db.prepare(`SELECT count(*) AS n, sum(attr_tmpl IS NOT NULL) AS tmpl, sum(attr_tmpl IS NOT NULL AND attributes = '') AS none,
      sum(attr_tmpl IS NOT NULL AND attributes NOT LIKE '[%' AND attributes <> '') AS one FROM logs`).get() as Record<string, number>;
    expect(forms.n).toBe(300);
    expect(forms.tmpl).toBeGreaterThan(150);
    expect(forms.none).toBeGreaterThan(10); // no value varies: the row holds ''
    expect(forms.one).toBeGreaterThan(10); // one value varies: the row holds it alone
    expect(db.prepare('SELECT count(*) FROM attr_templates').pluck().get()).toBeLessThan(60);
    // The row keeps the varying values only; the stored columns are the 15 of migration 052.
    expect(db.prepare("SELECT max(length(attributes)) FROM logs WHERE attr_tmpl IS NOT NULL AND attributes LIKE '[%'").pluck().get()).toBeLessThan(40);
    expect(db.prepare("SELECT count(*) FROM pragma_table_info('logs')").pluck().get()).toBe(15);

    const repo = createLogsReadRepo(db);
    const rows = repo.search('1', WIN, { limit: 1000, offset: 0 }).rows.reverse();
    expect(rows.map((r) => r.attributes)).toEqual(LOGS.map((l) => JSON.stringify(l.attributes)));
    expect(rows.map((r) => [r.level, r.service_name, r.environment, r.scope_name, r.source, r.connector_key])).toEqual(
      LOGS.map((l) => [l.severity_number === 17 ? 'error' : 'info', l.service_name, l.service_name === 'orders' ? 'prod' : '', 'app', 'otlp', null]),
    );
    const a = answers(db) as Record<string, [string[], number]>;
    const bodies = (f: (i: number) => boolean) => LOGS.map((_, i) => i).filter(f).reverse().slice(0, 50).map((i) => LOGS[i]!.body as string);
    const full = (i: number) => Object.keys(attrsOf(i)).length === 8;
    expect(a['http.route:/api/cart']).toEqual([bodies((i) => full(i) && i % 3 === 1), LOGS.filter((_, i) => full(i) && i % 3 === 1).length]);
    expect(a['user.id:u_250']![0]).toEqual(bodies((i) => i === 250));
    expect(a['user.id:u_7']![0]).toEqual(bodies((i) => i === 7));
    expect(a['user.id:u_295']![0]).toEqual(bodies((i) => i === 295));
    expect(a['http.response.status_code:500']![0]).toEqual(bodies((i) => full(i) && i % 10 === 0));
    expect(a['thread.id:3']![0]).toEqual(bodies((i) => full(i) && i % 5 === 3));
    expect(a['code.function:probe']![0]).toEqual(bodies((i) => i % 17 !== 0 && i % 13 === 0));
    expect(a['"api cart"']![0]).toEqual(bodies((i) => full(i) && i % 3 === 1));
    expect(a['u_250']![0]).toEqual(bodies((i) => i === 250));
    expect(a[TRACE]![0]).toEqual(bodies((i) => i % 9 === 0));
    db.close();
  });

  it('keeps long values on their rows (what the writer remembers stays bounded) and reads them back', () => {
    const db = openDatabase(':memory:');
    const big = (i: number) => ({ ...log(i), attributes: { stack: 'x'.repeat(2000), 'http.route': '/api/cart', n: i % 2 } });
    withLogRollups(db, createSqliteTelemetryWriter(db)).insertLogs('1', [0, 1, 2, 3, 4].map(big), 'otlp', T0);
    expect(db.prepare('SELECT min(length(attributes)) FROM logs').pluck().get()).toBeGreaterThan(2000);
    expect(db.prepare('SELECT count(*) FROM logs WHERE attr_tmpl IS NOT NULL').pluck().get()).toBe(3); // route and n shared from the second on
    const rows = createLogsReadRepo(db).search('1', WIN, { limit: 10, offset: 0 }).rows.reverse();
    expect(rows.map((r) => r.attributes)).toEqual([0, 1, 2, 3, 4].map((i) => JSON.stringify(big(i).attributes)));
    db.close();
  });

  it('reads a database written before the migrations the same after them, also with logs added and expired', () => {
    const now = openDatabase(':memory:');
    const wNow = withLogRollups(now, createSqliteTelemetryWriter(now));
    wNow.insertLogs('1', LOGS, 'otlp', T0);

    // Before: the rows of the writer of migration 050 (whole value lists, the dimension columns
    // empty), in that schema, with their full-text rows and rollups.
    const before = openDatabase(':memory:', { migrations: MIGRATIONS.filter((m) => m.version <= 50) });
    const src = openDatabase(':memory:');
    withLogRollups(src, createSqliteTelemetryWriter(src)).insertLogs('1', LOGS, 'otlp', T0);
    untemplateLogs(src);
    copyLogTables(src, before, ['resources', 'scopes', 'attr_keysets', 'log_dims', 'logs', ...LOG_COUNT_TABLES.map((t) => t.table)]);
    src.close();
    expect(before.prepare("SELECT count(*) FROM pragma_table_info('logs') WHERE name = 'level'").pluck().get()).toBe(1);
    migrate(before);
    expect(before.prepare('SELECT count(*) FROM schema_migrations WHERE version IN (51, 52)').pluck().get()).toBe(2);
    expect(before.prepare('SELECT count(*) FROM logs WHERE attr_tmpl IS NOT NULL OR dims IS NULL').pluck().get()).toBe(0);
    expect(answers(before)).toEqual(answers(now));

    // Logs written after the upgrade (with templates) next to the old rows.
    const extra = Array.from({ length: 120 }, (_, i) => log(i + 1000, `later ${i}`));
    withLogRollups(before, createSqliteTelemetryWriter(before)).insertLogs('1', extra, 'otlp', T0);
    wNow.insertLogs('1', extra, 'otlp', T0);
    expect(before.prepare('SELECT count(*) FROM logs WHERE attr_tmpl IS NOT NULL').pluck().get()).toBeGreaterThan(30);
    expect(answers(before)).toEqual(answers(now));

    // Expiry: the old rows first, then everything; the full-text index keeps nothing of them.
    for (const db of [before, now]) expire(db, T0 + 150 * 7_000);
    expect(answers(before)).toEqual(answers(now));
    for (const db of [before, now]) {
      expire(db, T0 + 48 * 60 * MIN);
      expect(db.prepare('SELECT count(*) FROM logs').pluck().get()).toBe(0);
      expect(db.prepare("SELECT count(*) FROM logs_fts2 WHERE logs_fts2 MATCH 'served OR later OR handlerequest OR get OR api OR u OR 4bf92f3577b3'").pluck().get()).toBe(0);
      db.exec("INSERT INTO logs_fts2 (logs_fts2, rank) VALUES ('integrity-check', 0)");
      db.close();
    }
  });
});
