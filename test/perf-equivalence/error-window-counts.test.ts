/**
 * The window counts of errors.list / errors.get (`window_event_count`, `window_user_count`) read the
 * window's whole hours from the per-(group, hour, user key) tallies kept at ingest (migration 046)
 * and only its edge hours from events. On randomized data they equal a straightforward count over
 * the events — through write batches (a rolled-back job included), merges and unmerges (events stay
 * on the group they counted on), expiry in small batches with the cutoff inside an hour, and windows
 * whose edges fall inside hours, on hour boundaries, or are left open. The latest event of a group's
 * history (errors.get) is the newest by event time, then received time.
 */
import { describe, expect, it } from 'vitest';
import { scratchProjectDb } from '../support/scratch-db.js';
import { createErrorsIngestRepo, type KeyedErrorEvent } from '../../src/storage/errors-repo.js';
import { createErrorGroupsRepo } from '../../src/storage/error-groups-repo.js';
import { createWriteBatcher } from '../../src/storage/write-batcher.js';
import { createRetentionRepo, EXPIRY_TARGETS } from '../../src/storage/retention-repo.js';
import { userKeySql } from '../../src/domain/errors/users.js';
import { ERROR_GROUP_HOURS_BACKFILL } from '../../src/storage/migrations/046-error-group-hours.js';
import type { ErrorEventRecord } from '../../src/domain/telemetry-types.js';
import { parseEventQuery } from '../../src/domain/errors/event-query.js';

const { db } = scratchProjectDb('window-counts');

const HOUR = 3_600_000;
const T0 = Date.UTC(2026, 0, 1, 0);
let seed = 7;
const rnd = () => (seed = (seed * 1103515245 + 12345) % 2 ** 31) / 2 ** 31;
const int = (n: number) => Math.floor(rnd() * n);
const USERS: (Record<string, unknown> | null)[] = [
  null, null, null, { ip_address: '{{auto}}' },
  ...Array.from({ length: 8 }, (_, i) => ({ id: `u${i}` })),
  { id: 42 }, { id: '42' }, { email: 'a@x.io' }, { username: 'bo' }, { ip_address: '10.0.0.1' }, { id: '', email: 'c@x.io' },
];
const FPS = ['fa', 'fb', 'fc', 'fd'];
let nEvents = 0;

function event(): KeyedErrorEvent {
  const fp = FPS[int(FPS.length)]!;
  // Eight hours; a third of the times fractional (the column is REAL).
  // Some events share the latest time (ties broken by received time).
  const ts = rnd() < 0.05 ? T0 + 8 * HOUR - 1 : T0 + int(8 * HOUR) + (rnd() < 0.3 ? 0.25 : 0);
  const e: ErrorEventRecord = {
    event_id: `e${nEvents++}`, timestamp_ms: ts, received_ms: Math.floor(ts) + int(1000), source: 'sentry', platform: 'node', level: ['error', 'error', 'warning', 'fatal'][int(4)]!, message: fp, exceptions: [],
    fingerprint: null, environment: 'production', release: '', service_name: ['api', 'API', 'web'][int(3)]!, server_name: '', transaction: '', tags: {},
    user: USERS[int(USERS.length)] ?? null, trace_id: null, span_id: null, payload: {},
  } as ErrorEventRecord;
  return { event: e, key: { fingerprint: fp, method: 'message', type: 'Error', title: fp, culprit: '' } as never };
}

const ingest = createErrorsIngestRepo(db);
const groups = createErrorGroupsRepo(db);
const batch = createWriteBatcher(db, 512, [ingest.batchParticipant]);
const retention = createRetentionRepo(db);
const errorTarget = EXPIRY_TARGETS.find((t) => t.table === 'error_events')!;

async function ingestSome(n: number) {
  // Half alone (one transaction per call), half in write batches with a job that rolls back.
  const alone = Array.from({ length: Math.floor(n / 2) }, event);
  for (let i = 0; i < alone.length; i += 5) ingest.ingest('1', 'web', alone.slice(i, i + 5), T0);
  const jobs: Promise<unknown>[] = [];
  for (let i = 0; i < n - alone.length; i += 3) {
    const items = Array.from({ length: 3 }, event);
    jobs.push(batch(() => ingest.ingest('1', 'web', items, T0)));
  }
  const doomed = [event(), event()];
  jobs.push(batch(() => {
    ingest.ingest('1', 'web', doomed, T0);
    throw new Error('rolled back');
  }).catch(() => undefined));
  await Promise.all(jobs);
}

const gid = (fp: string) => db.prepare('SELECT id FROM error_groups WHERE fingerprint = ?').pluck().get(fp) as string;

/** The straightforward answer: every event of the group and its active duplicates in the window. */
function reference(groupId: string, fromMs?: number, toMs?: number) {
  const ids = [groupId, ...(db.prepare('SELECT id FROM error_groups WHERE merged_into = ?').pluck().all(groupId) as string[])];
  return db
    .prepare(`SELECT COUNT(*) AS events, COUNT(DISTINCT ${userKeySql('user_json')}) AS users FROM error_events
      WHERE project_id = 1 AND group_id IN (${ids.map(() => '?').join(', ')}) AND timestamp_ms >= ? AND timestamp_ms <= ?`)
    .get(...ids, fromMs ?? -8.64e15, toMs ?? 8.64e15);
}

function windows(): [number | undefined, number | undefined][] {
  const out: [number | undefined, number | undefined][] = [
    [undefined, undefined], [T0, undefined], [undefined, T0 + 3 * HOUR], [T0, T0 + 8 * HOUR], [T0 + HOUR, T0 + 2 * HOUR],
    [T0 + HOUR, T0 + 3 * HOUR - 1], [T0 + HOUR + 1, T0 + 3 * HOUR], [T0 + 0.25, T0 + 5 * HOUR + 0.25], [T0 + 2 * HOUR + 10, T0 + 2 * HOUR + 500_000],
  ];
  for (let i = 0; i < 25; i++) {
    const a = T0 - HOUR + int(10 * HOUR) + (rnd() < 0.3 ? 0.25 : 0);
    const b = a + int(6 * HOUR);
    out.push([a, b]);
  }
  return out;
}

async function checkAll() {
  for (const fp of FPS) {
    const id = gid(fp);
    if (!id) continue;
    for (const [from, to] of windows()) {
      expect({ fp, from, to, ...(await groups.windowCounts('1', [id], from, to)).get(id) }).toEqual({ fp, from, to, ...(reference(id, from, to) as object) });
    }
    // The latest event of the group's history (read by one seek per group id): the newest by event time, then received time.
    const ids = [id, ...(db.prepare('SELECT id FROM error_groups WHERE merged_into = ?').pluck().all(id) as string[])];
    const newest = db
      .prepare(`SELECT timestamp_ms, received_ms FROM error_events WHERE group_id IN (${ids.map(() => '?').join(', ')}) ORDER BY timestamp_ms DESC, received_ms DESC LIMIT 1`)
      .get(...ids) as { timestamp_ms: number; received_ms: number } | undefined;
    const latest = await groups.latestEvent('1', id);
    expect(latest ? { timestamp_ms: latest.timestamp_ms, received_ms: latest.received_ms } : undefined).toEqual(newest);
  }
  // A page of groups at once (errors.list): the same counts per group, one read of each kind for
  // the page — with the groups that are not merged (disjoint sets), and with every group, merged
  // duplicates beside their canonical group included (overlapping sets).
  const all = FPS.map(gid).filter((id): id is string => !!id);
  const canonical = all.filter((id) => db.prepare('SELECT merged_into FROM error_groups WHERE id = ?').pluck().get(id) === null);
  for (const page of [canonical, all]) {
    for (const [from, to] of windows()) {
      const counts = await groups.windowCounts('1', page, from, to);
      expect(page.map((id) => ({ id, from, to, ...counts.get(id) }))).toEqual(page.map((id) => ({ id, from, to, ...(reference(id, from, to) as object) })));
    }
  }
  // The tallies are what rebuilding them from the stored events gives (rows at 0 are gone).
  const rows = () => db.prepare('SELECT group_id, hour, user_key, n FROM error_group_hour_users ORDER BY 1, 2, 3').all();
  const kept = rows();
  db.exec('SAVEPOINT rebuild; DELETE FROM error_group_hour_users;' + ERROR_GROUP_HOURS_BACKFILL);
  const rebuilt = rows();
  db.exec('ROLLBACK TO rebuild; RELEASE rebuild');
  expect(kept).toEqual(rebuilt);
}

describe('error group window counts from hourly tallies', () => {
  it('equal a count over the events after ingest, merge, unmerge and expiry', async () => {
    await ingestSome(600);
    expect((await groups.windowCounts('1', [gid('fa')], T0, T0 + 8 * HOUR)).get(gid('fa'))!.events).toBeGreaterThan(50);
    await checkAll();

    // Merge: fb and fc into fa; their new events count on fa (fingerprint group kept).
    expect(groups.merge('1', gid('fa'), [gid('fb'), gid('fc')], T0).ok).toBe(true);
    await ingestSome(300);
    await checkAll();

    // Unmerge fc: the events it had stay its own, those counted on fa while merged stay fa's.
    expect(groups.unmerge('1', gid('fc'), T0).ok).toBe(true);
    await ingestSome(200);
    await checkAll();

    // Expiry in small batches, the cutoff inside an hour.
    const cutoff = T0 + 2 * HOUR + 1_234_567.5;
    while (retention.expireBatch(errorTarget, '1', cutoff, 17) > 0);
    expect(db.prepare('SELECT COUNT(*) FROM error_events WHERE timestamp_ms < ?').pluck().get(cutoff)).toBe(0);
    await checkAll();
    while (retention.expireBatch(errorTarget, '1', T0 + 5 * HOUR, 50) > 0);
    await ingestSome(100);
    await checkAll();
  });
});

describe('events.search pages and capped totals', () => {
  /** The straightforward answer: every match of the window, newest first, counted exactly. */
  function all(where: string, args: unknown[]) {
    return db.prepare(`SELECT event_id FROM error_events WHERE project_id = 1 AND (${where}) ORDER BY timestamp_ms DESC, event_id`).pluck().all(...args) as string[];
  }

  it('return the newest-first page of every match and count up to 1,000, saying when more match', async () => {
    // Enough events for a broad query to pass the cap; a few users are rare (selective through the user.id index).
    await ingestSome(1400);
    const cases: [string, string, unknown[]][] = [
      ['', '1', []],
      ['user.id:u3', "COALESCE(CAST(json_extract(user_json, '$.id') AS TEXT), '') = 'u3' COLLATE NOCASE", []],
      ['user.id:U3', "COALESCE(CAST(json_extract(user_json, '$.id') AS TEXT), '') = 'u3' COLLATE NOCASE", []],
      ['user.id:42', "COALESCE(CAST(json_extract(user_json, '$.id') AS TEXT), '') = '42'", []],
      ['user.id:nobody', '0', []],
      ['level:FATAL', "level = 'fatal'", []],
      ['level:warning service:api', "level = 'warning' AND lower(service_name) = 'api'", []],
      ['level:debug', '0', []],
      ['service:web', "service_name = 'web'", []],
      ['fa', "instr(lower(message), 'fa') > 0", []],
      ['-fa user.id:u1', "NOT instr(lower(message), 'fa') > 0 AND COALESCE(CAST(json_extract(user_json, '$.id') AS TEXT), '') = 'u1'", []],
    ];
    for (const [q, where, args] of cases) {
      const every = all(where, args);
      for (const [limit, offset] of [[50, 0], [7, 3], [100, 950], [100, 1000], [20, 5000]] as const) {
        const r = await groups.searchEvents('1', { terms: parseEventQuery(q, T0).terms, limit, offset });
        expect({ q, limit, offset, ids: r.rows.map((e) => e.event_id) }).toEqual({ q, limit, offset, ids: every.slice(offset, offset + limit) });
        const cap = Math.max(1000, offset + limit);
        expect({ q, limit, offset, total: r.total, capped: r.capped }).toEqual({ q, limit, offset, total: Math.min(every.length, cap), capped: every.length > cap });
      }
    }
    expect(all('1', []).length).toBeGreaterThan(1000);
  });
});

describe('events.latency in one pass', () => {
  it('gives the count, nearest-rank percentiles, max and average an SQL aggregate and sort give', async () => {
    await ingestSome(500);
    const LAT = 'MAX(0, received_ms - timestamp_ms)';
    for (const [from, to, service] of [[T0 - HOUR, T0 + 9 * HOUR, undefined], [T0 + HOUR + 0.5, T0 + 3 * HOUR - 7, undefined], [T0, T0 + 8 * HOUR, 'api'], [T0, T0 + 8 * HOUR, 'none']] as const) {
      const where = `project_id = 1 AND received_ms >= ? AND received_ms <= ? AND received_ms - timestamp_ms <= 3600000${service ? ' AND service_name = ?' : ''}`;
      const args = [from, to, ...(service ? [service] : [])];
      const expected = (db.prepare(`SELECT source, COUNT(*) AS count, MAX(${LAT}) AS max_ms, AVG(${LAT}) AS avg_ms FROM error_events WHERE ${where} GROUP BY source ORDER BY source`).all(...args) as {
        source: string; count: number; max_ms: number; avg_ms: number;
      }[]).map((r) => {
        const at = (p: number) => db.prepare(`SELECT ${LAT} FROM error_events WHERE ${where} AND source = ? ORDER BY 1 LIMIT 1 OFFSET ?`).pluck().get(...args, r.source, Math.min(r.count, Math.max(1, Math.ceil((p / 100) * r.count))) - 1);
        return { ...r, p50_ms: at(50), p95_ms: at(95), p99_ms: at(99), avg_ms: Math.round(r.avg_ms * 1000) / 1000 };
      });
      expect(await groups.latency('1', { fromMs: from, toMs: to, service })).toEqual(expected);
    }
  });
});
