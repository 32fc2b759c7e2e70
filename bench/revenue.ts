/**
 * Product analytics and revenue: PostHog capture throughput, then `revenue.overview`, `revenue.mrr`
 * and `revenue.attribution` latency over a large ledger and capture table.
 *
 *   1. `sightline start` in a child process on an empty file; product analytics is enabled over REST.
 *   2. Capture: posthog-style `{ api_key, batch }` bodies of 500 events posted to /ingest/batch/ over
 *      8 connections (through the real route: decode, persons, touches, sessions, group commit).
 *   3. The server stops; the rest of the capture events and the ledger are seeded straight into the
 *      file through the same repositories the server uses (HTTP seeding of 1M rows takes too long on
 *      a shared 2-core machine), then the server starts again on it.
 *   4. Each read runs `runs` times over REST, each with a different `to` (1 ms apart) so no result
 *      comes from the 5-minute cache; p50/p95 per read for the default 30 days and for the full range.
 *
 * Aims: capture ≥ 10,000 events/s; overview, mrr, attribution ≤ 300 ms p95 uncached over 1M ledger
 * rows and 5M capture events.
 *
 *   npx tsx bench/revenue.ts [--ledger 1000000] [--capture 5000000] [--http-capture 200000] [--days 365] [--runs 20] [--db FILE]
 *   (or BENCH_LEDGER, BENCH_CAPTURE, BENCH_HTTP_CAPTURE, BENCH_DAYS, BENCH_RUNS; flags win)
 *   npx tsx bench/revenue.ts --reads FILE [--runs 20]: only step 4, on a file seeded before with `--db FILE`
 *   (its keys and sizes are kept in FILE.keys.json), e.g. to compare two builds on the same data.
 *
 * Attribution is read with the default 30-day lookback and with `lookback_days=365`.
 *
 * The table shows the slowest run (max) beside p50/p95: the first read of a process also prepares its
 * statements and person indexes (before migration 043 it also loaded a copy of the touch table), and
 * the first read of a range decodes the ledger days that later reads take from the decoded days the
 * server keeps (migration 048; checked against each day's version on every read, not a result cache).
 */
import { mkdtempSync, readFileSync, writeFileSync } from 'node:fs';
import { loadavg, tmpdir } from 'node:os';
import { join } from 'node:path';
import http from 'node:http';
import { parseArgs } from 'node:util';
import { openDatabase } from '../src/storage/db.js';
import { createRevenueRepo } from '../src/storage/revenue-repo.js';
import { createAnalyticsRepo } from '../src/storage/analytics-repo.js';
import { normalizeCaptureEvent, type CaptureEvent } from '../src/domain/analytics/capture.js';
import { toLedgerRow, type LedgerRow, type LedgerType } from '../src/domain/revenue/ledger.js';
import type { SubscriptionRow } from '../src/storage/revenue-repo.js';
import { rng, startBenchServer } from './lib.js';

const { values: o } = parseArgs({
  options: {
    ledger: { type: 'string', default: process.env.BENCH_LEDGER ?? '1000000' },
    capture: { type: 'string', default: process.env.BENCH_CAPTURE ?? '5000000' },
    'http-capture': { type: 'string', default: process.env.BENCH_HTTP_CAPTURE ?? '200000' },
    days: { type: 'string', default: process.env.BENCH_DAYS ?? '365' },
    runs: { type: 'string', default: process.env.BENCH_RUNS ?? '20' },
    db: { type: 'string' },
    reads: { type: 'string' },
  },
});
const LEDGER = Number(o.ledger);
const CAPTURE = Number(o.capture);
const HTTP_CAPTURE = Math.min(Number(o['http-capture']), CAPTURE);
const DAYS = Number(o.days);
const RUNS = Number(o.runs);
const DAY = 86_400_000;
const NOW = Date.now();
const START = NOW - DAYS * DAY;
const USERS = 100_000;

const rand = rng(11);
const int = (n: number) => Math.floor(rand() * n);
const pick = <T>(xs: readonly T[]): T => xs[int(xs.length)]!;
const SOURCES = ['google', 'newsletter', 'twitter', 'linkedin', 'producthunt', 'bing', 'reddit', 'partner'];
const MEDIUMS = ['cpc', 'email', 'social', 'referral'];
const CAMPAIGNS = Array.from({ length: 40 }, (_, i) => `campaign-${i}`);
const PAGES = ['/', '/pricing', '/checkout', '/docs', '/blog', '/settings', '/signup', '/dashboard'];

/** One capture event: pageviews with UTMs now and then, identify merges now and then; ~10 events per session. */
function captureEvent(i: number, ts: number) {
  const user = int(USERS);
  const anon = `anon-${user}`;
  const r = rand();
  if (r < 0.01) return { event: '$identify', distinct_id: `user-${user}`, properties: { $anon_distinct_id: anon, $session_id: `s-${user}-${Math.floor(ts / (73 * DAY))}` }, timestamp: new Date(ts).toISOString() };
  const utm = rand() < 0.15 ? `?utm_source=${pick(SOURCES)}&utm_medium=${pick(MEDIUMS)}&utm_campaign=${pick(CAMPAIGNS)}` : '';
  const page = pick(PAGES);
  return {
    event: r < 0.6 ? '$pageview' : pick(['clicked', 'viewed_item', 'added_to_cart', '$autocapture']),
    distinct_id: user % 3 === 0 ? `user-${user}` : anon,
    properties: { $current_url: `https://shop.example${page}${utm}`, $session_id: `s-${user}-${Math.floor(ts / (73 * DAY))}`, $browser: 'Chrome', i },
    uuid: `00000000-0000-4000-8000-${String(i).padStart(12, '0')}`,
    timestamp: new Date(ts).toISOString(),
  };
}

function ledgerItem(i: number) {
  const ts = START + Math.floor((i / LEDGER) * DAYS * DAY) + int(60_000);
  const user = int(USERS);
  const r = rand();
  const type: LedgerType = r < 0.9 ? 'payment' : r < 0.97 ? 'refund' : r < 0.99 ? 'dispute' : 'dispute_reversal';
  const link = rand();
  return toLedgerRow(
    {
      id: `l-${i}`,
      type,
      amount: 500 + int(20000),
      currency: rand() < 0.7 ? 'USD' : rand() < 0.7 ? 'EUR' : 'GBP',
      occurred_at: ts,
      customer_id: `cus_${user}`,
      ...(link < 0.6 ? { distinct_id: `user-${user}` } : link < 0.8 ? { anonymous_id: `anon-${user}` } : {}),
      plan: pick(['free', 'starter', 'pro', 'team']),
      recurring: rand() < 0.5,
    },
    'api',
  );
}

const agent = new http.Agent({ keepAlive: true, maxSockets: 8 });
function request(port: number, method: string, path: string, headers: Record<string, string>, body?: string): Promise<{ status: number; text: string }> {
  return new Promise((resolve, reject) => {
    const req = http.request({ host: '127.0.0.1', port, method, path, headers, agent }, (res) => {
      let text = '';
      res.setEncoding('utf8');
      res.on('data', (d) => (text += d));
      res.on('end', () => resolve({ status: res.statusCode!, text }));
    });
    req.on('error', reject);
    if (body) req.write(body);
    req.end();
  });
}

/** A fixed CPU loop (about 100 ms on an idle core here): how contended the machine was while measuring. */
function cpuProbeMs(): number {
  const t = performance.now();
  let x = 0;
  for (let i = 0; i < 1e8; i++) x += i % 7;
  if (x < 0) console.log(x);
  return performance.now() - t;
}

const pct = (xs: number[], p: number) => [...xs].sort((a, b) => a - b)[Math.min(xs.length - 1, Math.ceil((p / 100) * xs.length) - 1)]!;

async function main() {
  if (o.reads) return reads(o.reads, JSON.parse(readFileSync(`${o.reads}.keys.json`, 'utf8')), null);
  const dbFile = o.db ?? join(mkdtempSync(join(tmpdir(), 'sightline-bench-revenue-')), 'bench.db');
  const probeBefore = cpuProbeMs();
  console.log(`db ${dbFile}; ledger ${LEDGER}, capture ${CAPTURE} (${HTTP_CAPTURE} over HTTP), ${DAYS} days; load ${loadavg().map((l) => l.toFixed(1)).join(' ')}`);
  const server = await startBenchServer(dbFile);
  if (!server.keys) throw new Error('use an empty --db file: the bench seeds it');
  const { admin, ingest, project } = server.keys;
  const enable = await request(server.port, 'POST', `/v1/projects/${project}/analytics/enable`, { 'x-service-key': admin, 'content-type': 'application/json' }, '{}');
  if (enable.status !== 200) throw new Error(`enable: ${enable.status} ${enable.text}`);

  // ---- capture throughput over HTTP ----
  const BATCH = 500;
  const bodies: string[] = [];
  for (let i = 0; i < HTTP_CAPTURE; i += BATCH) {
    const batch = [];
    for (let j = i; j < Math.min(i + BATCH, HTTP_CAPTURE); j++) batch.push(captureEvent(j, START + Math.floor((j / CAPTURE) * DAYS * DAY)));
    bodies.push(JSON.stringify({ api_key: ingest, batch, sent_at: new Date().toISOString() }));
  }
  let next = 0;
  const t0 = performance.now();
  await Promise.all(
    Array.from({ length: 8 }, async () => {
      while (next < bodies.length) {
        const b = bodies[next++]!;
        const r = await request(server.port, 'POST', '/ingest/batch/', { 'content-type': 'application/json' }, b);
        if (r.status !== 200) throw new Error(`capture: ${r.status} ${r.text}`);
      }
    }),
  );
  const captureSecs = (performance.now() - t0) / 1000;
  const capturePerSec = HTTP_CAPTURE / captureSecs;
  server.child.kill('SIGTERM');
  await new Promise((r) => server.child.once('exit', r));

  // ---- seed the rest straight into the file ----
  const s0 = performance.now();
  const db = openDatabase(dbFile);
  const analytics = createAnalyticsRepo(db);
  const revenue = createRevenueRepo(db);
  const CHUNK = 5000;
  for (let i = HTTP_CAPTURE; i < CAPTURE; i += CHUNK) {
    const events: CaptureEvent[] = [];
    for (let j = i; j < Math.min(i + CHUNK, CAPTURE); j++) {
      const ts = START + Math.floor((j / CAPTURE) * DAYS * DAY);
      events.push(normalizeCaptureEvent(captureEvent(j, ts), null, NOW)!);
    }
    db.transaction(() => analytics.ingest(project, events, NOW))();
  }
  const c1 = performance.now();
  for (let i = 0; i < LEDGER; i += CHUNK) {
    const rows: LedgerRow[] = [];
    for (let j = i; j < Math.min(i + CHUNK, LEDGER); j++) rows.push(ledgerItem(j));
    db.transaction(() => revenue.writeLedger(project, rows, NOW))();
  }
  const subs: SubscriptionRow[] = [];
  for (let u = 0; u < USERS / 5; u++) {
    let at = START + int(DAYS * DAY);
    for (let k = 0; k < 3 && at < NOW; k++) {
      subs.push({ id: `sub-${u}`, status: k === 2 && rand() < 0.3 ? 'canceled' : 'active', mrr: k === 2 && rand() < 0.3 ? 0 : 1000 + int(10) * 1000, currency: 'USD', effective_at: at, customer_id: `cus_${u}`, plan: 'pro', source: 'api' });
      at += int(90) * DAY;
    }
  }
  db.transaction(() => revenue.writeSubscriptions(project, subs, NOW))();
  db.pragma('wal_checkpoint(TRUNCATE)');
  db.exec('ANALYZE');
  db.close();
  const seedSecs = (performance.now() - s0) / 1000;
  console.log(`seeded in ${seedSecs.toFixed(0)} s (capture ${((c1 - s0) / 1000).toFixed(0)} s, ledger and ${subs.length} subscription states ${((performance.now() - c1) / 1000).toFixed(0)} s)`);
  const seeded: Seeded = { admin, project, now: NOW, days: DAYS, ledger: LEDGER, capture: CAPTURE };
  writeFileSync(`${dbFile}.keys.json`, JSON.stringify(seeded));
  await reads(dbFile, seeded, { httpCapture: HTTP_CAPTURE, batch: BATCH, capturePerSec, probeBefore });
}

interface Seeded {
  admin: string;
  project: string;
  now: number;
  days: number;
  ledger: number;
  capture: number;
}

// ---- reads ----
async function reads(dbFile: string, k: Seeded, capture: { httpCapture: number; batch: number; capturePerSec: number; probeBefore: number } | null) {
  const probeBefore = capture?.probeBefore ?? cpuProbeMs();
  if (!capture) console.log(`reads on ${dbFile}; ledger ${k.ledger}, capture ${k.capture}, ${k.days} days; load ${loadavg().map((l) => l.toFixed(1)).join(' ')}`);
  const { admin, project } = k;
  const server = await startBenchServer(dbFile);
  // A re-run on the same file ends its ranges a few seconds earlier, so no result comes from a kept one.
  const end = k.now - (capture ? 0 : 1000 + Math.floor(Math.random() * 60_000));
  const rows: string[][] = [];
  for (const [label, days] of [['last 30 days', 30], [`${k.days} days`, k.days]] as const) {
    for (const [op, extra] of [['overview', {}], ['mrr', {}], ['attribution', {}], ['attribution', { lookback_days: '365' }]] as const) {
      const times: number[] = [];
      let status = 0;
      for (let i = 0; i < RUNS; i++) {
        const to = end - i;
        const from = to - days * DAY;
        const q = new URLSearchParams({ from: new Date(from).toISOString(), to: new Date(to).toISOString(), ...extra });
        const t = performance.now();
        const r = await request(server.port, 'GET', `/v1/projects/${project}/revenue/${op}?${q}`, { 'x-service-key': admin });
        times.push(performance.now() - t);
        status = r.status;
        if (r.status !== 200) throw new Error(`${op}: ${r.status} ${r.text.slice(0, 300)}`);
        if (JSON.parse(r.text).cached) throw new Error(`${op}: answered from the cache`);
      }
      rows.push([`revenue.${op}${'lookback_days' in extra ? ' (lookback 365 days)' : ''}`, label, String(status), pct(times, 50).toFixed(1), pct(times, 95).toFixed(1), Math.max(...times).toFixed(1)]);
    }
  }
  server.child.kill('SIGTERM');
  agent.destroy();

  if (capture) {
    console.log('\n| what | figure | aim |\n|---|---|---|');
    console.log(`| capture over HTTP (${capture.httpCapture} events, batches of ${capture.batch}, 8 connections) | ${Math.round(capture.capturePerSec).toLocaleString('en')} events/s | ≥ 10,000 events/s |`);
  }
  console.log('\n| read (uncached) | range | status | p50 ms | p95 ms | max ms |\n|---|---|---|---|---|---|');
  for (const r of rows) console.log(`| ${r.join(' | ')} |`);
  console.log(`\nledger rows ${k.ledger}, capture events ${k.capture}, load after ${loadavg().map((l) => l.toFixed(1)).join(' ')}; CPU probe ${probeBefore.toFixed(0)} ms before, ${cpuProbeMs().toFixed(0)} ms after (≈100 ms idle)`);
}

main().catch((err) => {
  console.error(err);
  process.exit(1);
});
