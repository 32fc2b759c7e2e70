/**
 * events.latency reads the window's whole hours and 5-minute spans from latency bucket tallies kept
 * at ingest (migration 055), its partial 5-minute edges from events, and the one bucket holding each
 * rank from events. On randomized data over three UTC days (two sources, services and environments
 * including '', fractional, integer and repeated latencies, exactly 0, clock skew into the future,
 * events received later than an hour or exactly an hour after they happened, repeated event ids) its
 * answer equals reading every event of the window — through write batches (a rolled-back job
 * included), windows with edges inside hours, on hour boundaries or inside one 5-minute span, seven
 * filter combinations, and expiry in small batches with its cutoff inside an hour. The tallies equal
 * those the migration's backfill rebuilds from events, also for events stored before it.
 */
import { mkdtempSync, rmSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { afterAll, describe, expect, it } from 'vitest';
import Database from 'better-sqlite3';
import { migrate, openDatabase } from '../../src/storage/db.js';
import { MIGRATIONS } from '../../src/storage/migrations/index.js';
import { createErrorsIngestRepo, type KeyedErrorEvent } from '../../src/storage/errors-repo.js';
import { createErrorGroupsRepo } from '../../src/storage/error-groups-repo.js';
import { createWriteBatcher } from '../../src/storage/write-batcher.js';
import { createRetentionRepo, EXPIRY_TARGETS } from '../../src/storage/retention-repo.js';
import { backfillErrorLatency, createLatencyReader, LATENCY_BUCKET_SQL, LATENCY_SQL } from '../../src/storage/error-latency.js';
import { ExactSum, exactUnits, latencyBucket, unitsToNumber } from '../../src/domain/errors/latency.js';
import type { ErrorEventRecord } from '../../src/domain/telemetry-types.js';
import { rng } from '../../bench/lib.js';

const dir = mkdtempSync(join(tmpdir(), 'sightline-latency-'));
const db = openDatabase(join(dir, 'l.db'));
afterAll(() => {
  db.close();
  rmSync(dir, { recursive: true, force: true });
});
db.prepare("INSERT INTO organizations (id, name, created_at) VALUES ('o', 'Org', 0)").run();
db.prepare("INSERT INTO projects (id, org_id, name, slug, created_at) VALUES (1, 'o', 'web', 'web', 0)").run();
db.prepare("INSERT INTO projects (id, org_id, name, slug, created_at) VALUES (2, 'o', 'api', 'api', 0)").run();

const HOUR = 3_600_000;
const FIVE = 300_000;
const T0 = Date.UTC(2026, 0, 1, 0);
const rnd = rng(19);
const int = (n: number) => Math.floor(rnd() * n);
const SERVICES = ['api', 'API', 'web', ''];
const ENVS = ['production', 'staging', ''];
let nEvents = 0;

/** A latency: mostly fractional and spread, some repeated values, some exactly 0, skew, late. */
function latency(): number {
  const r = rnd();
  if (r < 0.05) return 0;
  if (r < 0.1) return -int(5000) - 0.5; // clock skew: counts as 0
  if (r < 0.13) return HOUR + 1 + int(HOUR); // received too late: left out
  if (r < 0.15) return HOUR; // exactly an hour: counted
  if (r < 0.35) return 250 + int(3); // many events in one bucket
  if (r < 0.45) return 1000 + int(1000); // integers
  return rnd() * (rnd() < 0.9 ? 3000 : HOUR); // fractional
}

function event(): KeyedErrorEvent {
  // Received times over two and a half days; event times fractional (microseconds) but for a few.
  const received = T0 + int(60 * HOUR);
  const l = latency();
  const ts = rnd() < 0.8 ? received - l - int(1000) / 1000 + int(1000) / 1000 : received - Math.round(l);
  const id = rnd() < 0.02 && nEvents > 0 ? `e${int(nEvents)}` : `e${nEvents++}`; // a repeated id is ignored
  const e = {
    event_id: id, timestamp_ms: ts, received_ms: received, source: rnd() < 0.7 ? 'sentry' : 'otlp', platform: 'node', level: 'error', message: 'm', exceptions: [],
    fingerprint: null, environment: ENVS[int(ENVS.length)]!, release: '', service_name: SERVICES[int(SERVICES.length)]!, server_name: '', transaction: '', tags: {},
    user: null, trace_id: null, span_id: null, payload: {},
  } as unknown as ErrorEventRecord;
  return { event: e, key: { fingerprint: 'f', method: 'message', type: 'Error', title: 'f', culprit: '' } as never };
}

const ingest = createErrorsIngestRepo(db);
const groups = createErrorGroupsRepo(db);
const fast = createLatencyReader(db);
const batch = createWriteBatcher(db, 512, [ingest.batchParticipant]);
const retention = createRetentionRepo(db);
const errorTarget = EXPIRY_TARGETS.find((t) => t.table === 'error_events')!;

async function ingestSome(n: number) {
  const alone = Array.from({ length: Math.floor(n / 2) }, event);
  for (let i = 0; i < alone.length; i += 7) ingest.ingest(String(1 + (i % 2)), 'web', alone.slice(i, i + 7), T0);
  const jobs: Promise<unknown>[] = [];
  for (let i = 0; i < n - alone.length; i += 5) {
    const items = Array.from({ length: 5 }, event);
    jobs.push(batch(() => ingest.ingest('1', 'web', items, T0)));
  }
  const doomed = [event(), event(), event()];
  jobs.push(batch(() => {
    ingest.ingest('1', 'web', doomed, T0);
    throw new Error('rolled back');
  }).catch(() => undefined));
  await Promise.all(jobs);
}

const tallies = () => ({
  rows: db.prepare('SELECT * FROM error_latency_tallies ORDER BY project_id, span_ms, dims, service_name, environment, start_ms, source').all(),
});

function windows(): [number, number][] {
  const w: [number, number][] = [
    [T0 - HOUR, T0 + 11 * HOUR], [T0, T0 + 10 * HOUR], [T0 + HOUR, T0 + 3 * HOUR - 1], [T0 + HOUR, T0 + 3 * HOUR],
    [T0 + HOUR + 0.5, T0 + 3 * HOUR - 7], [T0 + 2 * HOUR + 5, T0 + 2 * HOUR + 1800_000], [T0 + 20 * HOUR, T0 + 21 * HOUR], [T0 + HOUR - 1, T0 + 2 * HOUR],
    [T0 + 4 * HOUR, T0 + 5 * HOUR - 1], [T0 + 4 * HOUR + 1, T0 + 6 * HOUR - 2], [T0, T0 + 48 * HOUR - 1], [T0 + 24 * HOUR - 1, T0 + 48 * HOUR + 5],
    [T0 + 3.5 * HOUR, T0 + 50 * HOUR + 17], [T0 - 5 * HOUR, T0 + 70 * HOUR], [T0 + 23 * HOUR + 1, T0 + 25 * HOUR],
    [T0 + 7 * FIVE, T0 + 8 * FIVE - 1], [T0 + 7 * FIVE + 1, T0 + 9 * FIVE], [T0 + 7 * FIVE - 3, T0 + 30 * FIVE + 2], [T0 + 11 * HOUR + 17, T0 + 11 * HOUR + 2 * FIVE + 16],
  ];
  for (let i = 0; i < 15; i++) {
    const a = T0 - HOUR + int(62 * HOUR);
    const b = rnd() < 0.3 ? a + int(HOUR) : rnd() < 0.2 ? a + int(4 * FIVE) : a + int(62 * HOUR);
    w.push([a, b]);
  }
  return w;
}

async function compareAll(label: string) {
  let compared = 0;
  for (const [fromMs, toMs] of windows()) {
    for (const pid of ['1', '2']) {
      for (const [service, environment] of [[undefined, undefined], ['api', undefined], ['API', 'production'], ['', ''], ['none', undefined], [undefined, 'production'], [undefined, '']] as const) {
          const o = { fromMs, toMs, service, environment };
          const at = `${label} ${JSON.stringify({ pid, ...o })}`;
          const expected = groups.latencyScan(pid, o);
          // A window holding a whole 5-minute span is read from the tallies (null: their read gave up); a shorter one from its events.
          const wholeSpan = Math.ceil(fromMs / FIVE) * FIVE + FIVE - 1 <= toMs;
          const got = fast(pid, o);
          if (wholeSpan) {
            expect(got, at).not.toBeNull();
            expect(got, at).toEqual(expected);
            if (got!.length) compared++;
          } else {
            expect(got, at).toBeNull();
            expect(await groups.latency(pid, o), at).toEqual(expected);
          }
        }
    }
  }
  return compared;
}

describe('events.latency from latency bucket tallies', () => {
  it('buckets latencies in SQL as in JavaScript and keeps sums exact', () => {
    const st = db.prepare(`SELECT ${LATENCY_SQL} AS x, ${LATENCY_BUCKET_SQL} AS b FROM (SELECT ? AS received_ms, ? AS timestamp_ms)`);
    for (let i = 0; i < 3000; i++) {
      const r = T0 + int(HOUR);
      const t = r - (i % 4 === 0 ? rnd() * 20 : i % 4 === 1 ? rnd() * HOUR : i % 4 === 2 ? int(5000) : -rnd() * 100);
      const row = st.get(r, t) as { x: number; b: number };
      expect(row.x).toBe(Math.max(0, r - t));
      expect(row.b).toBe(latencyBucket(row.x));
    }
    expect([0, 1 / 32, 1 / 16, 15.99, 16, 16.2, 31.99, 32, HOUR].map(latencyBucket)).toEqual([-1, 0, 1, 255, 256, 257, 383, 384, 2523]);
    for (const x of [0, Number.MIN_VALUE, 1e-310, 0.1, 1, 123.456, HOUR, 2 ** 53 + 2, 1e300]) expect(unitsToNumber(exactUnits(x))).toBe(x);
    expect(unitsToNumber(exactUnits(0.1) + exactUnits(0.2))).toBe(0.30000000000000004);
    for (let k = 0; k < 50; k++) {
      const xs = Array.from({ length: 500 }, () => (k % 2 ? rnd() * 10 ** (int(12) - 6) : Math.max(0, T0 + int(3000) - (T0 + rnd() * 1000))));
      const sum = new ExactSum();
      for (const x of xs) sum.add(x);
      expect(sum.units()).toBe(xs.reduce((a, x) => a + exactUnits(x), 0n));
    }
  });

  it('answers as reading every event does, after ingest and after expiry, and the tallies equal a rebuild', async () => {
    await ingestSome(3000);
    expect(await compareAll('ingest')).toBeGreaterThan(200);
    const kept = tallies();
    backfillErrorLatency(db);
    expect(tallies()).toEqual(kept);
    // Expiry by event time, in small batches, the cutoff inside an hour.
    while (retention.expireBatch(errorTarget, '1', T0 + 3 * HOUR + 1234.5, 37) > 0);
    while (retention.expireBatch(errorTarget, '2', T0 + 30 * HOUR + 17, 41) > 0);
    expect(await compareAll('expiry')).toBeGreaterThan(100);
    const afterExpiry = tallies();
    backfillErrorLatency(db);
    expect(tallies()).toEqual(afterExpiry);
    // More ingest after expiry, then everything of project 2 expires: no rows are left for it.
    await ingestSome(600);
    expect(await compareAll('ingest after expiry')).toBeGreaterThan(100);
    while (retention.expireBatch(errorTarget, '2', T0 + 100 * HOUR, 50) > 0);
    expect(db.prepare('SELECT COUNT(*) FROM error_latency_tallies WHERE project_id = 2').pluck().get()).toBe(0);
    await compareAll('all expired');
  }, 120_000);

  it('reads the bucket of a rank from the latency index', () => {
    const plan = db
      .prepare(`EXPLAIN QUERY PLAN SELECT ${LATENCY_SQL} FROM error_events WHERE project_id = 1 AND source = 'sentry' AND ${LATENCY_BUCKET_SQL} = 5
        AND received_ms >= 0 AND received_ms <= 1 AND received_ms - timestamp_ms <= 3600000`)
      .all() as { detail: string }[];
    expect(plan.map((p) => p.detail).join(' ')).toContain('error_events_latency');
  });

  it('are backfilled from the events stored before migration 055', () => {
    const raw = new Database(join(dir, 'old.db'));
    raw.pragma('foreign_keys = ON');
    migrate(raw, { migrations: MIGRATIONS.filter((m) => m.version < 55) });
    raw.prepare("INSERT INTO organizations (id, name, created_at) VALUES ('o', 'Org', 0)").run();
    raw.prepare("INSERT INTO projects (id, org_id, name, slug, created_at) VALUES (1, 'o', 'web', 'web', 0)").run();
    const ev = raw.prepare(`INSERT INTO error_events (project_id, event_id, group_id, fingerprint_group_id, timestamp_ms, received_ms, source, platform, level, type, message, title,
      service_name, environment, release, transaction_name, server_name, trace_id, span_id, tags, user_json, payload)
      VALUES (1, ?, 'g', 'g', ?, ?, ?, 'node', 'error', 'Error', '', 'E', ?, ?, '', '', '', NULL, NULL, '{}', NULL, '{}')`);
    for (let i = 0; i < 2000; i++) {
      const received = T0 + int(50 * HOUR);
      ev.run(`o${i}`, received - latency() - int(1000) / 1000, received, rnd() < 0.7 ? 'sentry' : 'otlp', SERVICES[int(SERVICES.length)]!, ENVS[int(ENVS.length)]!);
    }
    migrate(raw);
    const reader = createLatencyReader(raw);
    const scan = createErrorGroupsRepo(raw);
    let compared = 0;
    for (const [fromMs, toMs] of windows())
      for (const service of [undefined, 'api'])
        for (const environment of [undefined, 'staging']) {
          const o = { fromMs, toMs, service, environment };
          const got = reader('1', o);
          if (got === null) continue;
          expect(got, JSON.stringify(o)).toEqual(scan.latencyScan('1', o));
          if (got.length) compared++;
        }
    expect(compared).toBeGreaterThan(20);
    raw.close();
  }, 60_000);
});
