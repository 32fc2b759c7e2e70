/**
 * Issue 20: error reads with events in ClickHouse and groups in PostgreSQL, beside SQLite alone.
 *
 * The same N error events (G fingerprints, spread over the last 7 days, a user and tags on each) are
 * stored through the ingest storage path (`ingestKeyedErrorEvents` in write batches, as the HTTP
 * endpoints do after decoding) into two Sightlines: SQLite alone, and ClickHouse (a private
 * clickhouse-server, Debian's 18.16 as the tests start it) + PostgreSQL (a fresh database on the
 * local server). Then each read is timed over REST on both, sequential calls after a warm-up:
 * errors.list (24 h window, sorted by events, with window counts), errors.get of the biggest group
 * (window 7 days: latest event, tag counts, window counts), events.search (a field query over 7 days;
 * and a free-text one), events.latency (24 h). Prints p95 per read and backend, and the ratio.
 *
 *   npx tsx bench/error-reads.ts [--events 300000] [--groups 2000] [--runs 20] [--pg postgres://postgres@127.0.0.1:5432/postgres] [--sqlite-only]
 *
 * --sqlite-only: SQLite alone (no clickhouse-server, no PostgreSQL): its seeding rate and reads.
 */
import { readFileSync } from 'node:fs';
import { randomBytes } from 'node:crypto';
import pg from 'pg';
import { processJob } from '../src/ingest/process.js';
import { ingestKeyedErrorEvents, SpikeGuard } from '../src/ingest/pipeline.js';
import { ingestLimitsFromEnv } from '../src/ingest/limits.js';
import { startClickHouseServer } from '../test/support/clickhouse.js';
import { openBenchSide, rng, timeGetP95, type BenchSide, flag } from './lib.js';

const N = Number(flag('events', '300000'));
const G = Number(flag('groups', '2000'));
const RUNS = Number(flag('runs', '20'));
const PG_BASE = flag('pg', 'postgres://postgres@127.0.0.1:5432/postgres');
const DAY = 86_400_000;
const NOW = Date.now();
const SQLITE_ONLY = process.argv.includes('--sqlite-only');
const load = () => readFileSync('/proc/loadavg', 'utf8').split(' ')[0]!;

const FNS = ['chargeCard', 'loadCart', 'renderPage', 'saveOrder', 'sendMail', 'syncStock'];
const ENVS = ['production', 'production', 'production', 'staging'];
/** Event i: fingerprint i % G (skewed: low groups get more), a time in the last 7 days, a user of 5,000. */
function envelope(i: number, r: () => number): Buffer {
  const g = Math.floor(G * r() ** 2);
  const id = randomBytes(16).toString('hex');
  const at = NOW - Math.floor(r() * 7 * DAY);
  const event = {
    event_id: id,
    timestamp: at / 1000,
    platform: 'node',
    level: i % 10 === 0 ? 'warning' : 'error',
    environment: ENVS[i % ENVS.length],
    release: `checkout@1.${g % 5}.${i % 3}`,
    exception: {
      values: [
        {
          type: `E${g}Error`,
          value: `Cannot read properties of undefined (reading 'id') for order ${i}`,
          stacktrace: {
            frames: [
              { filename: '/app/src/routes.js', function: 'handler', lineno: 42, in_app: true },
              { filename: `/app/src/m${g}.js`, function: FNS[g % FNS.length], lineno: 100 + g, in_app: true },
            ],
          },
        },
      ],
    },
    user: { id: `user-${Math.floor(r() * 5000)}` },
    tags: { 'service.name': g % 3 === 0 ? 'checkout' : 'api', 'http.status_code': String(500 + (i % 4)), region: ['eu', 'us', 'ap'][i % 3] },
  };
  return Buffer.from(`${JSON.stringify({ event_id: id, sent_at: new Date(at).toISOString() })}\n{"type":"event"}\n${JSON.stringify(event)}\n`);
}

type Side = BenchSide;

async function side(name: string, config: { clickhouseUrl?: string; databaseUrl?: string }, opened: Side[]): Promise<Side> {
  const x = await openBenchSide(name, config, opened); // closed by main's finally even if seeding fails
  const s = x.s;
  s.db.prepare('UPDATE projects SET spike_threshold_per_minute = NULL WHERE id = ?').run(Number(x.project));
  const project = s.services.identity.projectById(x.project)!;
  const limits = ingestLimitsFromEnv();
  const spike = new SpikeGuard();
  const r = rng(7); // the same events on both sides
  const t0 = performance.now();
  for (let i = 0; i < N; i += 1024) {
    const keyed = Array.from({ length: Math.min(1024, N - i) }, (_, j) => processJob({ kind: 'envelope', body: envelope(i + j, r), receivedMs: Date.now(), limits }).slices.flatMap((e) => e.errors ?? []));
    const jobs: Promise<unknown>[] = [];
    for (let j = 0; j < keyed.length; j += 256) jobs.push(s.services.writeBatch(() => ingestKeyedErrorEvents(s.services, spike, project, keyed.slice(j, j + 256).flat(), Date.now())));
    await Promise.all(jobs);
    if (i % (1024 * 50) === 0) process.stdout.write(`  ${name}: ${i} events seeded\r`);
  }
  x.seedSeconds = (performance.now() - t0) / 1000;
  await x.listen();
  return x;
}

async function main() {
  const pgName = `sl_bench_error_reads_${process.pid}`;
  const admin = SQLITE_ONLY ? null : new pg.Client({ connectionString: PG_BASE });
  await admin?.connect();
  await admin?.query(`CREATE DATABASE ${pgName}`);
  const ch = SQLITE_ONLY ? null : await startClickHouseServer();
  const pgUrl = new URL(PG_BASE);
  pgUrl.pathname = `/${pgName}`;
  const sides: Side[] = [];
  try {
    console.log(`seeding ${N} events in ${G} groups on each backend (load ${load()})`);
    await side('SQLite', {}, sides);
    if (ch) await side('ClickHouse + PostgreSQL', { clickhouseUrl: `${ch.url}/bench_error_reads`, databaseUrl: pgUrl.toString() }, sides);
    for (const x of sides) console.log(`  ${x.name}: seeded in ${x.seedSeconds.toFixed(0)} s (${Math.round(N / x.seedSeconds)} events/s)     `);

    const P = (x: Side) => `/v1/projects/${x.project}`;
    const iso = (ms: number) => encodeURIComponent(new Date(ms).toISOString());
    const big = async (x: Side) => {
      const r = await fetch(`${x.url}${P(x)}/errors?sort=event_count&limit=1`, { headers: { 'x-service-key': x.key } });
      return ((await r.json()) as { data: { id: string; event_count: number }[] }).data[0]!;
    };
    const reads: Array<[string, (x: Side, group: string) => string]> = [
      ['errors.list, 24 h, by events', (x) => `${P(x)}/errors?from=${iso(NOW - DAY)}&sort=event_count&limit=50`],
      ['errors.list, 7 days, service filter', (x) => `${P(x)}/errors?from=${iso(NOW - 7 * DAY)}&service=checkout&limit=50`],
      ['errors.get, biggest group, 7 days', (x, g) => `${P(x)}/errors/${g}?from=${iso(NOW - 7 * DAY)}`],
      ['errors.get, biggest group, lifetime', (x, g) => `${P(x)}/errors/${g}`],
      ['events.search, field query, 7 days', (x) => `${P(x)}/events/search?query=${encodeURIComponent('level:error environment:staging tags.http.status_code:>=502')}&from=${iso(NOW - 7 * DAY)}`],
      ['events.search, free text, 7 days', (x) => `${P(x)}/events/search?query=${encodeURIComponent('"order 12345"')}&from=${iso(NOW - 7 * DAY)}`],
      // A word no event holds, and one every event holds (SQLite: the window newest first, not the text index).
      ['events.search, free text none, 7 days', (x) => `${P(x)}/events/search?query=${encodeURIComponent('deadlock')}&from=${iso(NOW - 7 * DAY)}`],
      ['events.search, free text all, 7 days', (x) => `${P(x)}/events/search?query=${encodeURIComponent('undefined')}&from=${iso(NOW - 7 * DAY)}`],
      ['events.search, free text all, 1 h', (x) => `${P(x)}/events/search?query=${encodeURIComponent('undefined')}&from=${iso(NOW - 3_600_000)}`],
      ['events.search, free text + field, 7 days', (x) => `${P(x)}/events/search?query=${encodeURIComponent('order level:warning environment:staging')}&from=${iso(NOW - 7 * DAY)}`],
      ['events.search, one user, 30 days', (x) => `${P(x)}/events/search?query=${encodeURIComponent('user.id:user-42')}`],
      ['events.latency, 24 h', (x) => `${P(x)}/events/latency`],
    ];
    const rows: string[][] = [];
    const groups = new Map<Side, { id: string; event_count: number }>();
    for (const x of sides) groups.set(x, await big(x));
    console.log(`biggest group: ${[...groups.values()].map((g) => g.event_count).join(' / ')} events`);
    for (const [label, path] of reads) {
      const p95: number[] = [];
      for (const x of sides) {
        const r = await timeGetP95(x.url, x.key, () => path(x, groups.get(x)!.id), RUNS);
        if (r.status !== 200) throw new Error(`${label} on ${x.name}: ${r.status}`);
        p95.push(r.p95);
      }
      rows.push([label, ...p95.map((v) => v.toFixed(1)), ...(ch ? [(p95[1]! / p95[0]!).toFixed(2)] : []), load()]);
    }
    console.log(`\n${N} error events, ${G} groups, p95 of ${RUNS} sequential calls after a warm-up (ms):\n`);
    console.log(ch ? '| read | SQLite | ClickHouse + PostgreSQL | ratio | load |\n|---|---:|---:|---:|---:|' : '| read | SQLite | load |\n|---|---:|---:|');
    for (const r of rows) console.log(`| ${r.join(' | ')} |`);
  } finally {
    for (const x of sides) await x.close();
    await admin?.query(`DROP DATABASE IF EXISTS ${pgName} WITH (FORCE)`);
    await admin?.end();
    await ch?.stop();
  }
}

await main();
