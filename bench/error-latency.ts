/**
 * events.latency: the tallies' read (migration 055) against reading every event of the window (the
 * read before it, kept as ErrorGroupsRepo.latencyScan), in the same process, alternated call by call,
 * on a fresh database per size seeded as bench/scaling.ts seeds error events (one day, 8 services, 2
 * environments, fractional event times, latencies 50–2050 ms). Prints p95 wall time and mean CPU time
 * per call for each window, and checks the two answers are equal.
 *
 *   npx tsx bench/error-latency.ts [--sizes 100000,1000000] [--runs 15] [--days 31] [--ingest 100000]
 *
 * --days spreads the events over that many days (windows of 31 days, 7 days and one day); --ingest
 * also ingests that many events through the ingest path and prints what writing the tallies costs.
 */
import { mkdtempSync, rmSync } from 'node:fs';
import { loadavg, tmpdir } from 'node:os';
import { join } from 'node:path';
import { parseArgs } from 'node:util';
import { isDeepStrictEqual } from 'node:util';
import { openDatabase } from '../src/storage/db.js';
import { createErrorGroupsRepo } from '../src/storage/error-groups-repo.js';
import { backfillErrorLatency, LatencyTally, latencyTallyWriter } from '../src/storage/error-latency.js';
import { createErrorsIngestRepo, type KeyedErrorEvent } from '../src/storage/errors-repo.js';
import type { ErrorEventRecord } from '../src/domain/telemetry-types.js';
import { DAY, FROM, NOW, SERVICES, int, pick, rand } from './seed-data.js';
import { pct } from './lib.js';

const { values: opts } = parseArgs({ options: { sizes: { type: 'string' }, runs: { type: 'string' }, days: { type: 'string' }, ingest: { type: 'string' } } });
/** Days the events spread over (ending at NOW); with more than one, the windows are 31 days, 7 days and a day. */
const DAYS = Number(opts.days ?? 1);
const START = NOW - DAYS * DAY;
const SIZES = (opts.sizes ?? '100000,1000000').split(',').map(Number);
const RUNS = Number(opts.runs ?? 15);
const ENVS = ['production', 'production', 'production', 'staging'];

function seed(db: ReturnType<typeof openDatabase>, n: number) {
  db.prepare("INSERT INTO organizations (id, name, created_at) VALUES ('o', 'Org', 0)").run();
  db.prepare("INSERT INTO projects (id, org_id, name, slug, created_at) VALUES (1, 'o', 'web', 'web', 0)").run();
  const ROWS = 50;
  const cols = 9;
  const stmt = db.prepare(`INSERT INTO error_events (project_id, event_id, group_id, fingerprint_group_id, timestamp_ms, received_ms, source, platform, level, type, message, title,
    service_name, environment, release, transaction_name, server_name, tags, payload) VALUES ${Array.from({ length: ROWS }, () => `(1, ?, ?, ?, ?, ?, ?, 'node', 'error', 'E', 'm', 't', ?, ?, '', '', '', '{}', ?)`).join(',')}`);
  let buf: unknown[] = [];
  db.exec('BEGIN');
  for (let i = 0; i < n; i++) {
    const ts = START + (i / n) * DAYS * DAY;
    buf.push(i.toString(16).padStart(32, '0'), 'g', 'g', ts, Math.round(ts + 50 + int(2000)), rand() < 0.9 ? 'sentry' : 'otlp', pick(SERVICES), pick(ENVS), '{}');
    if (buf.length === ROWS * cols) {
      stmt.run(buf);
      buf = [];
      if (i % 20_000 === 19_999) db.exec('COMMIT; BEGIN');
    }
  }
  db.exec('COMMIT');
  backfillErrorLatency(db);
}

type Win = { fromMs: number; toMs: number; service?: string; environment?: string };
const WINDOWS: [string, Win][] = DAYS > 1 ? [
  [`${DAYS} d, hour-aligned`, { fromMs: START, toMs: NOW }],
  [`${DAYS} d, edges inside hours`, { fromMs: START + 1_234_567, toMs: NOW - 2_345_678 }],
  ['7 d, edges inside hours, service=payments', { fromMs: NOW - 7 * DAY + 1_234_567, toMs: NOW - 2_345_678, service: 'payments' }],
  ['24 h, edges inside hours', { fromMs: FROM + 1_234_567, toMs: NOW - 2_345_678 }],
] : [
  ['24 h, hour-aligned (as scaling.ts)', { fromMs: FROM, toMs: NOW }],
  ['24 h, edges inside hours', { fromMs: FROM + 1_234_567, toMs: NOW - 2_345_678 }],
  ['24 h, service=payments', { fromMs: FROM, toMs: NOW, service: 'payments' }],
  ['24 h, environment=staging', { fromMs: FROM, toMs: NOW, environment: 'staging' }],
  ['1 h, edges inside hours', { fromMs: FROM + 5 * 3_600_000 + 999, toMs: FROM + 6 * 3_600_000 + 999 }],
];

console.log(`load average ${loadavg().map((x) => x.toFixed(1)).join(' ')}; ${RUNS} runs per read, alternated`);
console.log('| events | window | scan p95 ms | tallies p95 ms | scan CPU ms/call | tallies CPU ms/call | equal |');
console.log('|---:|---|---:|---:|---:|---:|---|');
for (const n of SIZES) {
  const dir = mkdtempSync(join(tmpdir(), 'sightline-latency-bench-'));
  const db = openDatabase(join(dir, 'b.db'));
  const t0 = Date.now();
  seed(db, n);
  console.error(`seeded ${n} in ${((Date.now() - t0) / 1000).toFixed(0)} s`);
  const repo = createErrorGroupsRepo(db);
  for (const [label, w] of WINDOWS) {
    const times = { scan: [] as number[], fast: [] as number[] };
    const cpu = { scan: 0, fast: 0 };
    let equal = true;
    for (let r = 0; r < RUNS + 1; r++) {
      const out: Record<string, unknown> = {};
      for (const k of r % 2 ? (['fast', 'scan'] as const) : (['scan', 'fast'] as const)) {
        const c = process.cpuUsage();
        const s = performance.now();
        out[k] = k === 'scan' ? repo.latencyScan('1', w) : await repo.latency('1', w);
        const ms = performance.now() - s;
        const u = process.cpuUsage(c);
        if (r === 0) continue; // warm-up
        times[k].push(ms);
        cpu[k] += (u.user + u.system) / 1000;
      }
      if (!isDeepStrictEqual(out.scan, out.fast)) equal = false;
    }
    const p95 = (xs: number[]) => pct([...xs].sort((a, b) => a - b), 0.95).toFixed(1);
    console.log(`| ${n.toLocaleString('en')} | ${label} | ${p95(times.scan)} | ${p95(times.fast)} | ${(cpu.scan / RUNS).toFixed(1)} | ${(cpu.fast / RUNS).toFixed(1)} | ${equal ? 'yes' : 'NO'} |`);
  }
  db.close();
  rmSync(dir, { recursive: true, force: true });
}
// Ingest: what writing the tallies costs per event, against the whole ingest path (grouping, the
// event row and its indexes, the group tallies), in 512-event transactions.
if (opts.ingest) {
  const n = Number(opts.ingest);
  const dir = mkdtempSync(join(tmpdir(), 'sightline-latency-ingest-'));
  const db = openDatabase(join(dir, 'i.db'));
  db.prepare("INSERT INTO organizations (id, name, created_at) VALUES ('o', 'Org', 0)").run();
  db.prepare("INSERT INTO projects (id, org_id, name, slug, created_at) VALUES (1, 'o', 'web', 'web', 0)").run();
  const ingest = createErrorsIngestRepo(db);
  const write = latencyTallyWriter(db);
  const mk = (i: number): KeyedErrorEvent => {
    const ts = START + (i / n) * DAYS * DAY;
    const e = {
      event_id: `e${i}`, timestamp_ms: ts, received_ms: Math.round(ts + 50 + int(2000)), source: 'sentry', platform: 'node', level: 'error', message: 'm', exceptions: [],
      fingerprint: null, environment: pick(ENVS), release: '', service_name: pick(SERVICES), server_name: '', transaction: '', tags: {}, user: null, trace_id: null, span_id: null, payload: {},
    } as unknown as ErrorEventRecord;
    return { event: e, key: { fingerprint: `f${int(50)}`, method: 'message', type: 'Error', title: 'f', culprit: '' } as never };
  };
  let all = 0;
  let tallies = 0;
  for (let i = 0; i < n; i += 512) {
    const items = Array.from({ length: Math.min(512, n - i) }, (_, k) => mk(i + k));
    let c = process.cpuUsage();
    ingest.ingest('1', 'web', items, NOW);
    let u = process.cpuUsage(c);
    all += u.user + u.system;
    // The same tallies once more, alone (they double, which costs the same as writing them first).
    const t = new LatencyTally();
    for (const { event: e } of items) t.add(1, e.source, e.service_name, e.environment, e.received_ms, e.timestamp_ms);
    c = process.cpuUsage();
    db.transaction(() => write(t))();
    u = process.cpuUsage(c);
    tallies += u.user + u.system;
  }
  console.log(`ingest of ${n.toLocaleString('en')} events in 512-event transactions: ${(all / n).toFixed(1)} µs CPU per event in all, of which writing the latency tallies ≈ ${(tallies / n).toFixed(1)} µs`);
  db.close();
  rmSync(dir, { recursive: true, force: true });
}
console.log(`load average after ${loadavg().map((x) => x.toFixed(1)).join(' ')}`);
