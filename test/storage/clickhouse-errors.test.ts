/**
 * Issue 20: error events in ClickHouse, through a real server (runs in the ClickHouse test projects:
 * chdb, and 18.16 with control data in PostgreSQL in scale-out).
 * - an event one server acknowledged is read at once (errors.get's latest event, events.search,
 *   errors.listRelatedTraces) by a second server on the same stores;
 * - an SDK retry of an event id is stored and counted once; SQLite's `error_events` stays empty;
 * - feedback naming its event finds the event's group (the id index beside the groups);
 * - retention drops expired days from ClickHouse with the hourly tallies before the cutoff's day and
 *   the ids; window counts then count what remains;
 * - `migrate --to-clickhouse` (the function, and the CLI on 18.16) copies a SQLite database's events (a server reading them in ClickHouse
 *   answers as the SQLite server) and refuses a second copy.
 */
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { createHttpEngine, type ChEngine } from '../../src/storage/clickhouse/client.js';
import { copyErrorEventsToClickHouse, CopyRefusedError } from '../../src/storage/clickhouse/migrate.js';
import { clickHouseMutationsPending } from '../../src/storage/clickhouse/retention.js';
import { createChErrorEventsReader } from '../../src/storage/clickhouse/error-events.js';
import { createSqliteErrorEventsReader, MAX_MS, MIN_MS, type ErrorEventsReader } from '../../src/storage/error-events-read.js';
import { parseEventQuery } from '../../src/domain/errors/event-query.js';
import type { ErrorEventRecord } from '../../src/domain/telemetry-types.js';
import { main } from '../../src/cli/main.js';
import { api, startTestServer, type TestServer } from '../helpers/server.js';
import { startSecondServer, type SecondServer } from '../support/second-server.js';
import { hex, sentryEvent, type EventSpec } from '../operations/errors-fixtures.js';
import { createChdbEngine, dropDatabase } from '../support/clickhouse.js';
import { DAY, describeClickHouseRetention, T0 } from '../support/clickhouse-retention.js';

const mode = process.env.SIGHTLINE_TEST_CLICKHOUSE;
const serverUrl = process.env.SIGHTLINE_TEST_CLICKHOUSE_URL;
const NOW = Date.parse('2026-03-10T12:00:00.000Z');
const H = 3_600_000;

/** POSTs one Sentry event (with an optional user) to the store endpoint; returns its event id. */
async function send(t: { url: string; projectId: string; keys: { ingest: string } }, e: EventSpec & { user?: Record<string, unknown> }): Promise<string> {
  const body: Record<string, unknown> = { ...sentryEvent(e), ...(e.user ? { user: e.user } : {}) };
  const r = await fetch(`${t.url}/ingest/api/${t.projectId}/store/?sentry_key=${t.keys.ingest}`, { method: 'POST', body: JSON.stringify(body) });
  expect(r.status, await r.clone().text()).toBe(200);
  return body.event_id as string;
}

const chCount = async (engine: ChEngine, where = '1') => Number((await engine.query<{ n: number }>(`SELECT count() AS n FROM error_events WHERE ${where}`))[0]!.n);

describe.skipIf(mode !== 'server' && mode !== 'chdb')('error events in ClickHouse through a server', () => {
  let t: TestServer;
  let other: SecondServer | undefined;
  const TRACE = hex(0xfeed);
  beforeAll(async () => {
    t = await startTestServer({ now: () => NOW });
  });
  afterAll(async () => {
    await other?.close();
    await t?.close();
  });
  const get = (url: string, path: string) => api({ url }, 'GET', `/v1/projects/${t.projectId}${path}`, { key: t.keys.admin });

  it('reads an event one server acknowledged from a second server on the same stores, and keeps SQLite error_events empty', async () => {
    other = await startSecondServer(t, { now: () => NOW });
    const first = await send(t, { type: 'PaymentError', value: 'card declined', fn: 'charge', at: NOW - 2 * H, trace_id: TRACE, user: { id: 'u1' }, tags: { plan: 'pro', n: '1e400' } });
    const id = await send(t, { type: 'PaymentError', value: 'card declined again', fn: 'charge', at: NOW - H, trace_id: TRACE, user: { email: 'b@x.io' } });
    const group = t.s.services.errorsIngest.groupOfEvent(t.projectId, id)!;
    expect(t.s.services.errorsIngest.groupOfEvent(t.projectId, first)).toBe(group);
    // In ClickHouse, not in SQLite.
    expect(await chCount(t.s.services.clickhouse!.engine, `event_id IN ('${first}', '${id}')`)).toBe(2);
    expect(t.s.db.prepare('SELECT count(*) FROM error_events').pluck().get()).toBe(0);

    const detail = await get(other.url, `/errors/${group}`);
    expect(detail.status).toBe(200);
    expect(detail.body.latest_event).toMatchObject({ event_id: id, type: 'PaymentError' });
    expect(detail.body).toMatchObject({ event_count: 2, window_event_count: 2, window_user_count: 2 });
    const search = await get(other.url, `/events/search?query=${encodeURIComponent(`group:${group} tags.plan:PRO`)}`);
    expect(search.status).toBe(200);
    expect(search.body.data.map((e: { event_id: string }) => e.event_id)).toEqual([first]);
    // A tag number out of the double range compares as SQLite's infinity.
    const big = await get(other.url, `/events/search?query=${encodeURIComponent(`tags.n:>1000000`)}`);
    expect(big.body.data.map((e: { event_id: string }) => e.event_id)).toEqual([first]);
    const traces = await get(other.url, `/errors/${group}/traces`);
    expect(traces.status).toBe(200);
    expect(traces.body.data).toEqual([expect.objectContaining({ trace_id: TRACE, event_count: 2 })]);
    // Both servers answer alike.
    for (const p of [`/errors/${group}`, `/events/search?query=${encodeURIComponent('card')}`, `/errors/${group}/traces`]) expect((await get(other.url, p)).body).toEqual((await get(t.url, p)).body);
  });

  it('stores and counts a repeated event id (an SDK retry) once', async () => {
    const spec = { type: 'RetryError', value: 'sent twice', fn: 'retry', at: NOW - 3 * H, event_id: hex(0xabc123) };
    await send(t, spec);
    await send(t, { ...spec, value: 'sent twice, changed' });
    await send({ url: other!.url, projectId: t.projectId, keys: t.keys }, spec); // and once more through the other server
    const group = t.s.services.errorsIngest.groupOfEvent(t.projectId, spec.event_id)!;
    expect(await chCount(t.s.services.clickhouse!.engine, `event_id = '${spec.event_id}'`)).toBe(1);
    expect(t.s.db.prepare('SELECT count(*) FROM error_event_ids WHERE event_id = ?').pluck().get(spec.event_id)).toBe(1);
    const detail = await get(t.url, `/errors/${group}`);
    expect(detail.body).toMatchObject({ event_count: 1, window_event_count: 1 });
    const search = await get(t.url, `/events/search?query=${encodeURIComponent(`event_id:${spec.event_id}`)}`);
    expect(search.body).toMatchObject({ total: 1, data: [{ event_id: spec.event_id }] });
    expect(JSON.stringify(search.body.data[0])).not.toContain('changed');
    expect(t.s.db.prepare('SELECT count(*) FROM error_events').pluck().get()).toBe(0);
  });

  it('links feedback naming its event to the event\'s group', async () => {
    const id = await send(t, { type: 'FeedbackError', value: 'user saw this', fn: 'fb', at: NOW - H });
    const group = t.s.services.errorsIngest.groupOfEvent(t.projectId, id);
    expect(group).toBeDefined();
    const r = await fetch(`${t.url}/ingest/api/${t.projectId}/envelope/?sentry_key=${t.keys.ingest}`, {
      method: 'POST',
      body: `{}\n{"type":"feedback"}\n${JSON.stringify({ event_id: hex(0xfb1), timestamp: NOW / 1000, contexts: { feedback: { message: 'it broke', associated_event_id: id } } })}\n`,
    });
    expect(r.status).toBe(200);
    const rows = t.s.db.prepare('SELECT message, error_group_id FROM feedback WHERE project_id = ?').all(Number(t.projectId));
    expect(rows).toEqual([{ message: 'it broke', error_group_id: group }]);
  });
});

/** An error event of its own group per project, `label` in its message, user and event id. */
const labelled = (label: string, at: number): ErrorEventRecord =>
  ({
    event_id: Buffer.from(label).toString('hex').padEnd(32, '0'), timestamp_ms: at, received_ms: at + 1000, source: 'sentry', platform: 'node', level: 'error', message: label,
    exceptions: [], fingerprint: null, environment: 'production', release: '', service_name: 'svc', server_name: '', transaction: '', tags: {}, user: { id: label },
    trace_id: null, span_id: null, payload: {},
  }) as ErrorEventRecord;

describeClickHouseRetention({
  kind: 'error_events',
  rows: 'events',
  otherDays: 30,
  write: (t, pid, rows) =>
    t.s.services.writeBatch(() =>
      t.s.services.errorsIngest.ingest(pid, `p${pid}`, rows.map((r) => ({ event: labelled(r.label, T0 - r.daysAgo * DAY), key: { fingerprint: `fp-${pid}`, components: [], method: 'message', type: 'Error', title: 'expiring', culprit: '' } })), T0),
    ),
  left: async (engine) => (await engine.query<{ message: string }>('SELECT message FROM error_events ORDER BY message')).map((r) => r.message),
  async after(t) {
    const db = t.s.db;
    const label = (id: string) => Buffer.from(id.replace(/(00)+$/, ''), 'hex').toString();
    expect((db.prepare('SELECT event_id FROM error_event_ids').pluck().all() as string[]).map(label).sort()).toEqual(['o10', 'o2', 'p2']);
    expect(db.prepare('SELECT count(*) FROM error_events').pluck().get()).toBe(0);
    const groups = [t.projectId, t.otherProject.projectId].map((pid) => ({ pid, id: db.prepare('SELECT id FROM error_groups WHERE project_id = ?').pluck().get(Number(pid)) as string }));
    // The hourly tallies of expired days are gone; those of the kept events stay.
    const hours = (g: string) => (db.prepare('SELECT hour, user_key, n FROM error_group_hour_users WHERE group_id = ? ORDER BY hour').all(g) as { hour: number; user_key: string; n: number }[]).map((h) => ({ ...h, hour: Number(h.hour), n: Number(h.n) }));
    const hourOf = (daysAgo: number) => Math.floor((T0 - daysAgo * DAY) / H) * H;
    expect(hours(groups[0]!.id)).toEqual([{ hour: hourOf(2), user_key: 'id:p2', n: 1 }]);
    expect(hours(groups[1]!.id)).toEqual([
      { hour: hourOf(10), user_key: 'id:o10', n: 1 },
      { hour: hourOf(2), user_key: 'id:o2', n: 1 },
    ]);
    // Window counts (whole hours from the tallies, edges from ClickHouse) count what remains.
    for (const [g, n] of [[groups[0]!, 1], [groups[1]!, 2]] as const) {
      for (const [from, to] of [[undefined, undefined], [T0 - 45 * DAY, T0], [T0 - 45 * DAY + 0.5, T0 - 0.5], [T0 - 40 * DAY - H / 2, T0 - 2 * DAY + H / 2]] as const) {
        expect((await t.s.services.errorGroups.windowCounts(g.pid, [g.id], from, to)).get(g.id)).toEqual({ events: n, users: n });
      }
      // (a window: without one errors.get gives the lifetime counts, which expiry keeps)
      const detail = await api(t, 'GET', `/v1/projects/${g.pid}/errors/${g.id}?from=${new Date(T0 - 45 * DAY).toISOString()}&to=${new Date(T0).toISOString()}`, { key: g.pid === t.projectId ? t.keys.admin : t.otherProject.adminKey });
      expect(detail.body).toMatchObject({ window_event_count: n, window_user_count: n, latest_event: { message: g.pid === t.projectId ? 'p2' : 'o2' } });
    }
  },
});

describe.skipIf(mode !== 'server' && mode !== 'chdb')('error event ids and retention by day', () => {
  let t: TestServer;
  beforeAll(async () => {
    t = await startTestServer({ now: () => T0, config: { retention: { maxDays: 400, intervalMs: 0, batchRows: 50, maxDbBytes: 0 } } });
  });
  afterAll(() => t?.close());

  it('keeps the ids of the events ClickHouse keeps (the cutoff\'s whole day): they are read by id and link replays', async () => {
    const P = t.projectId;
    expect((await api(t, 'PUT', `/v1/projects/${P}/retention`, { key: t.keys.admin, body: { error_events: 7 } })).status).toBe(200);
    // Before the cutoff (7 days ago, 12:00) but on its day: ClickHouse keeps the day. And one day earlier: gone.
    const kept = labelled('kept', T0 - 7 * DAY - H);
    const gone = labelled('gone', T0 - 8 * DAY - H);
    const key = { fingerprint: 'fp-day', components: [], method: 'message' as const, type: 'Error', title: 'by day', culprit: '' };
    await t.s.services.writeBatch(() => t.s.services.errorsIngest.ingest(P, 'p', [kept, gone].map((event) => ({ event, key })), T0));
    t.s.db
      .prepare(`INSERT INTO replays (project_id, replay_id, started_ms, ended_ms, segments, urls, error_ids, trace_ids, environment, release, user_json, updated_ms)
        VALUES (?, 'r1', ?, ?, 1, '[]', ?, '[]', 'elsewhere', '', NULL, ?)`)
      .run(Number(P), T0 - DAY, T0 - DAY + 1000, JSON.stringify([kept.event_id]), T0);
    await t.s.retention.runOnce();
    const engine = t.s.services.clickhouse!.engine;
    for (let i = 0; i < 200 && (await clickHouseMutationsPending(engine)); i++) await new Promise((r) => setTimeout(r, 50)); // a delete, not a dropped day
    expect((await engine.query<{ message: string }>('SELECT message FROM error_events')).map((r) => r.message)).toEqual(['kept']);
    expect(t.s.db.prepare('SELECT event_id FROM error_event_ids').pluck().all()).toEqual([kept.event_id]);
    expect(await t.s.services.errorGroups.event(P, kept.event_id)).toMatchObject({ event_id: kept.event_id, message: 'kept' });
    const group = t.s.services.errorsIngest.groupOfEvent(P, kept.event_id)!;
    expect(group).toBeDefined();
    const replays = await t.s.services.errorGroups.replays(P, group, { fromMs: T0 - 9 * DAY, toMs: T0 - 8 * DAY, environment: 'production', limit: 5 });
    expect(replays.map((r) => [r.replay_id, r.linked_by])).toEqual([['r1', 'error']]);
  });
});

describe.skipIf(mode !== 'server' && mode !== 'chdb')('migrate --to-clickhouse with error events', () => {
  let sqlite: TestServer;
  let copy: SecondServer | undefined;
  let engine: ChEngine;
  const database = `mig_err_${process.pid}_${Date.now()}`;
  const groups: string[] = [];

  beforeAll(async () => {
    sqlite = await startTestServer({ now: () => NOW, clickhouse: false });
    const traces = [hex(0x1111), hex(0x2222)];
    for (let i = 0; i < 14; i++) {
      const id = await send(sqlite, {
        type: ['DbError', 'CacheMiss', 'Timeout'][i % 3], value: `failure ${i} ${i % 2 ? 'Ünïcode' : 'ascii_%'}`, fn: ['q', 'c', 't'][i % 3], at: NOW - (i + 1) * 40 * 60_000,
        service: ['api', 'worker'][i % 2], release: ['1.0', '1.1', ''][i % 3], environment: i % 4 ? 'production' : 'staging',
        ...(i % 3 !== 2 ? { trace_id: traces[i % 2] } : {}), tags: { n: String(i), 'http.status_code': String(500 + (i % 4)) },
        ...(i % 5 ? { user: i % 2 ? { id: `u${i % 3}` } : { email: `e${i % 4}@x.io` } } : {}),
      });
      const g = sqlite.s.services.errorsIngest.groupOfEvent(sqlite.projectId, id)!;
      if (!groups.includes(g)) groups.push(g);
    }
    engine = mode === 'server' ? createHttpEngine(`${serverUrl}/${database}`) : createChdbEngine();
  });
  afterAll(async () => {
    await copy?.close();
    await sqlite?.close();
    await engine?.close();
    if (mode === 'server') await dropDatabase(serverUrl!, database);
  });

  it('copies every event with its id, a server reading them in ClickHouse answers as the SQLite server, and a second copy is refused', async () => {
    expect(sqlite.s.db.prepare('SELECT count(*) FROM error_events').pluck().get()).toBe(14);
    expect(await copyErrorEventsToClickHouse(sqlite.s.db, engine, { batch: 4 })).toMatchObject({ error_events: 14, projects: 1 });
    expect(await chCount(engine)).toBe(14);
    expect(sqlite.s.db.prepare('SELECT count(*) FROM error_event_ids').pluck().get()).toBe(14);
    copy = await startSecondServer(sqlite, { now: () => NOW, engine });
    expect(copy.s.services.clickhouse).toBeDefined();
    const w = `from=${new Date(NOW - 8 * H).toISOString()}&to=${new Date(NOW).toISOString()}`;
    const narrow = `from=${new Date(NOW - 5 * H - 10_000).toISOString()}&to=${new Date(NOW - 90 * 60_000).toISOString()}`;
    const paths = [
      ...groups.flatMap((g) => [`/errors/${g}?include_payload=true`, `/errors/${g}?${narrow}`, `/errors/${g}/traces`, `/errors/${g}/traces?${narrow}&limit=1`]),
      `/errors?${w}`,
      `/events/search?query=`,
      `/events/search?query=${encodeURIComponent('ünïcode -service:worker')}`,
      `/events/search?query=${encodeURIComponent('message:*_%* tags.n:>=3 tags.http.status_code:[500,502]')}&limit=3&offset=1`,
      `/events/search?query=${encodeURIComponent('user.id:U1 release:1.*')}`,
      `/events/search?query=${encodeURIComponent(`group:${groups[0]} -env:staging`)}`,
      `/events/latency?${w}`,
    ];
    for (const p of paths) {
      const a = await api(sqlite, 'GET', `/v1/projects/${sqlite.projectId}${p}`, { key: sqlite.keys.admin });
      const b = await api({ url: copy.url }, 'GET', `/v1/projects/${sqlite.projectId}${p}`, { key: sqlite.keys.admin });
      expect(a.status, `${p}: ${JSON.stringify(a.body)}`).toBe(200);
      expect(b.body, p).toEqual(a.body);
    }
    await expect(copyErrorEventsToClickHouse(sqlite.s.db, engine)).rejects.toThrow(CopyRefusedError);
    expect(await chCount(engine)).toBe(14);
  });

  it('answers every ErrorEventsReader read of the copy as SQLite does (each query runs on this engine)', async () => {
    const pid = Number(sqlite.projectId);
    const lite = createSqliteErrorEventsReader(sqlite.s.db);
    const ch = createChErrorEventsReader(engine, sqlite.s.db);
    const [lo, hi] = [NOW - 5 * H - 0.5, NOW - H];
    const ids = [groups[0]!, groups[1]!];
    const anEvent = sqlite.s.db.prepare('SELECT event_id FROM error_events ORDER BY event_id LIMIT 1').pluck().get() as string;
    const terms = parseEventQuery('failure -service:worker tags.n:>=2 title:*ascii_%* user.email:E* tags.http.status_code:[500,502]', NOW).terms;
    const sortBy = <T,>(k: keyof T) => (xs: T[]) => [...xs].sort((a, b) => (String(a[k]) < String(b[k]) ? -1 : 1));
    const reads: [string, (r: ErrorEventsReader) => Promise<unknown>][] = [
      ['latestEvent', (r) => r.latestEvent(pid, ids)],
      ['event', (r) => r.event(pid, anEvent)],
      ['userKeys', async (r) => sortBy<{ k: string | null; n: number }>('k')((await r.userKeys(pid, [ids], [{ lo, hi: NOW - 4 * H, closed: false }, { lo: NOW - 2 * H, hi, closed: true }]))[0]!.map((x) => ({ k: x.k ?? '', n: x.n })))],
      ['recent', (r) => r.recent(pid, ids, lo, hi, 3)],
      ['firstEventIn', (r) => r.firstEventIn(pid, ids, lo, hi)],
      ['relatedTraces', (r) => r.relatedTraces(pid, ids, { from: lo, to: hi + 10 * H, limit: 1, offset: 1 })],
      ['search', (r) => r.search(pid, { terms, fromMs: NOW - 10 * H, limit: 5, offset: 0, cap: 1000 })],
      ['search all', (r) => r.search(pid, { terms: [], limit: 4, offset: 2, cap: 5 })],
      ['latency', (r) => r.latency(pid, { fromMs: NOW - 20 * H, toMs: NOW, service: 'api' })],
      ['traceGroups', async (r) => sortBy<{ group_id: string }>('group_id')(await r.traceGroups(pid, hex(0x1111)))],
      ['count', (r) => r.count(pid, groups[0]!, lo, hi)],
      ['linked', async (r) => sortBy<{ event_id: string }>('event_id')(await r.linked(pid, { window: { from: lo, to: hi } }))],
      ['linked group', async (r) => sortBy<{ event_id: string }>('event_id')(await r.linked(pid, { groupId: groups[1]!, since: lo }))],
      ['releaseSeen', (r) => r.releaseSeen(pid, '1.1')],
    ];
    for (const [name, read] of reads) expect(await read(ch), name).toEqual(await read(lite));
    // (the reads compared find something)
    expect((await lite.search(pid, { terms, fromMs: NOW - 10 * H, limit: 5, offset: 0, cap: 1000 })).n).toBeGreaterThan(2);
    expect((await lite.traceGroups(pid, hex(0x1111))).length).toBeGreaterThan(0);
    expect((await lite.userKeys(pid, [ids], [{ lo: MIN_MS, hi: MAX_MS, closed: true }]))[0]!.length).toBeGreaterThan(1);
  });

  it.skipIf(mode !== 'server')('runs from the command line, and a second run is refused', async () => {
    const target = `${database}_cli`;
    const saved = { db: process.env.SIGHTLINE_DB, pg: process.env.SIGHTLINE_DATABASE_URL };
    process.env.SIGHTLINE_DB = sqlite.dbFile;
    if (sqlite.s.config.databaseUrl) process.env.SIGHTLINE_DATABASE_URL = sqlite.s.config.databaseUrl;
    const out: string[] = [];
    const write = process.stdout.write.bind(process.stdout);
    process.stdout.write = ((chunk: string) => (out.push(String(chunk)), true)) as typeof process.stdout.write;
    try {
      expect(await main(['migrate', '--to-clickhouse', '--url', `${serverUrl}/${target}`, '--json'])).toBe(0);
      // The error events are refused: ClickHouse holds them (this database's empty kinds copy nothing again).
      await main(['migrate', '--to-clickhouse', '--url', `${serverUrl}/${target}`, '--json']);
      const copied = createHttpEngine(`${serverUrl}/${target}`);
      expect(await chCount(copied)).toBe(14);
      await copied.close();
    } finally {
      process.stdout.write = write;
      for (const [k, v] of [['SIGHTLINE_DB', saved.db], ['SIGHTLINE_DATABASE_URL', saved.pg]] as const) {
        if (v === undefined) delete process.env[k];
        else process.env[k] = v;
      }
      await dropDatabase(serverUrl!, target);
    }
    const [first, second] = out.join('').trim().split('\n').filter((l) => l.startsWith('{')).map((l) => JSON.parse(l));
    expect(first).toMatchObject({ error_events: 14, error_event_projects: 1 });
    expect(second).not.toHaveProperty('error_events');
  });
});
