/**
 * PostHog capture's storage path (issue 20): batches of capture events through the write batcher
 * into the analytics state (persons, distinct ids, sessions, touches and their packed days), with
 * control data in SQLite and in PostgreSQL (a fresh database per round, alternated in the same run).
 * Each batch is its own commit, as one capture request is when requests do not overlap. Prints events/s
 * (wall) and, with PostgreSQL, the round trips per batch while the batch holds the write lock: calls
 * to the client's worker thread and statements sent to PostgreSQL (SyncPg.trips). The digest of the
 * state at the end (every analytics row, ordered) must be the same on both.
 *
 * A batch: 100 events of 20 visitors (5 each, a session each): pageviews (the first with a UTM source
 * or a referrer), a click, `$set`; every fifth visitor identifies (an anonymous id merged into a user
 * id seen before or new), every tenth of those by `$create_alias`.
 *
 *   npx tsx bench/posthog-ingest.ts [batches=300] [--pg postgres://postgres@127.0.0.1/postgres]
 */
import { createHash } from 'node:crypto';
import { mkdtempSync, readFileSync, rmSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import pg from 'pg';
import { createSightline } from '../src/server.js';
import { bootstrapOrganization } from '../src/core/bootstrap.js';
import { normalizeCaptureEvent, type CaptureEvent } from '../src/domain/analytics/capture.js';
import { postgresOf } from '../src/storage/postgres/split-db.js';

const argv = process.argv.slice(2).filter((a, i, l) => !a.startsWith('--') && l[i - 1] !== '--pg');
const BATCHES = Number(argv[0] ?? 300);
const at = process.argv.indexOf('--pg');
const PG_BASE = at >= 0 ? process.argv[at + 1]! : 'postgres://postgres@127.0.0.1/postgres';
const D = Date.UTC(2026, 0, 5);
const SOURCES = [['google', 'cpc', 'spring'], ['newsletter', 'email', null], ['facebook', 'social', 'retarget']] as const;
const k = (n: number) => Math.round(n).toLocaleString('en');

/** Batch `b`: 100 events, 20 distinct ids (plus the user ids they identify as), 20 sessions. */
function captureBatch(b: number): CaptureEvent[] {
  const raw: Record<string, unknown>[] = [];
  for (let v = 0; v < 20; v++) {
    // Visitors 0–4 come back under a user id seen before; the others are new anonymous ids.
    const returning = v < 5;
    const id = returning ? `user-${(b * 5 + v) % 400}` : `anon-${b}-${v}`;
    const session = `s-${b}-${v}`;
    const t0 = D + b * 60_000 + v * 1_000;
    const props = (extra: Record<string, unknown>) => ({ $session_id: session, ...extra });
    const src = SOURCES[(b + v) % SOURCES.length]!;
    const landing =
      v % 3 === 0
        ? `https://shop.example/landing?utm_source=${src[0]}&utm_medium=${src[1]}${src[2] ? `&utm_campaign=${src[2]}` : ''}`
        : 'https://shop.example/landing';
    raw.push({ event: '$pageview', distinct_id: id, timestamp: t0, properties: props({ $current_url: landing, $referrer: v % 3 === 1 ? 'https://news.example/post' : '$direct' }) });
    raw.push({ event: '$pageview', distinct_id: id, timestamp: t0 + 100, properties: props({ $current_url: `https://shop.example/products/${(b + v) % 7}` }) });
    raw.push({ event: 'clicked', distinct_id: id, timestamp: t0 + 200, properties: props({ $current_url: `https://shop.example/products/${(b + v) % 7}`, button: 'add' }) });
    raw.push({ event: '$set', distinct_id: id, timestamp: t0 + 300, properties: props({ $set: { plan: v % 2 ? 'pro' : 'free' } }) });
    if (!returning && v % 5 === 0) {
      // Identify: into a user id seen before (merged or linked) or a new one.
      const user = v % 10 === 0 ? `user-${(b * 3 + v) % 400}` : `user-new-${b}-${v}`;
      raw.push(
        b % 10 === 0
          ? { event: '$create_alias', distinct_id: user, timestamp: t0 + 400, properties: props({ alias: id }) }
          : { event: '$identify', distinct_id: user, timestamp: t0 + 400, properties: props({ $anon_distinct_id: id }) },
      );
    } else raw.push({ event: '$pageview', distinct_id: id, timestamp: t0 + 400, properties: props({ $current_url: 'https://shop.example/checkout' }) });
  }
  return raw.map((e) => normalizeCaptureEvent(e, null, D + 86_400_000)!);
}

/** Every analytics row, ordered, hashed: the same batches must leave the same state on either database. */
function digest(db: ReturnType<typeof createSightline>['db']): string {
  const h = createHash('sha1');
  for (const sql of [
    'SELECT id, project_id, identified, created_at FROM analytics_persons ORDER BY id',
    'SELECT project_id, distinct_id, person_id FROM analytics_distinct_ids ORDER BY project_id, distinct_id',
    'SELECT project_id, session_id, first_ts, last_ts, events, pageviews, replay_id FROM analytics_sessions ORDER BY project_id, session_id',
    'SELECT project_id, session_id, distinct_id FROM analytics_session_ids ORDER BY project_id, session_id, distinct_id',
    'SELECT project_id, pathname, session_id, last_ts FROM analytics_session_pages ORDER BY project_id, pathname, session_id',
    'SELECT project_id, distinct_id, ts, source, medium, campaign, referrer FROM analytics_touches ORDER BY project_id, ts, distinct_id, source, medium, campaign',
    'SELECT project_id, day, n, touches FROM analytics_touch_days ORDER BY project_id, day',
    'SELECT project_id, key, id FROM revenue_keys ORDER BY project_id, id',
    'SELECT project_id, epoch FROM analytics_identity_epoch ORDER BY project_id',
  ]) {
    for (const row of db.prepare(sql).raw(true).all() as unknown[][]) h.update(JSON.stringify(row.map((v) => (Buffer.isBuffer(v) ? v.toString('hex') : v))));
  }
  return h.digest('hex').slice(0, 12);
}

async function run(databaseUrl: string | null): Promise<{ rate: number; calls: number; statements: number; digest: string }> {
  const dir = mkdtempSync(join(tmpdir(), 'sl-bench-posthog-'));
  const s = createSightline({ dbFile: join(dir, 'bench.db'), port: 0, host: '127.0.0.1', logLevel: 'warn', databaseUrl });
  try {
    const boot = bootstrapOrganization(s.services, { now: D });
    const pid = boot.project_id;
    const batches = Array.from({ length: BATCHES }, (_, b) => captureBatch(b));
    const client = postgresOf(s.db);
    const c0 = client ? { ...client.trips } : { calls: 0, statements: 0 };
    const t0 = performance.now();
    let n = 0;
    for (let b = 0; b < batches.length; b++) {
      await s.services.writeBatch(() => s.services.analytics.ingest(pid, batches[b]!, D + 86_400_000 + b));
      n += batches[b]!.length;
    }
    const seconds = (performance.now() - t0) / 1000;
    const c1 = client ? client.trips : c0;
    return { rate: n / seconds, calls: (c1.calls - c0.calls) / BATCHES, statements: (c1.statements - c0.statements) / BATCHES, digest: digest(s.db) };
  } finally {
    await s.close();
    rmSync(dir, { recursive: true, force: true });
  }
}

const rows: string[][] = [];
for (let round = 1; round <= 2; round++) {
  const name = `sl_bench_posthog_${process.pid}_${round}`;
  const admin = new pg.Client({ connectionString: PG_BASE });
  await admin.connect();
  await admin.query(`CREATE DATABASE ${name}`);
  const url = new URL(PG_BASE);
  url.pathname = `/${name}`;
  try {
    const lite = await run(null);
    const onPg = await run(url.toString());
    const load = readFileSync('/proc/loadavg', 'utf8').split(' ')[0]!;
    rows.push([String(round), 'SQLite', k(lite.rate), '–', '–', lite.digest, load]);
    rows.push([String(round), 'PostgreSQL control data', k(onPg.rate), onPg.calls.toFixed(1), onPg.statements.toFixed(1), onPg.digest, load]);
  } finally {
    await admin.query(`DROP DATABASE IF EXISTS ${name} WITH (FORCE)`);
    await admin.end();
  }
}
console.log(`\n${BATCHES} batches of 100 capture events (20 distinct ids, 20 sessions), one commit per batch\n`);
console.log('| round | control data | events/s | PG calls/batch | PG statements/batch | state digest | load |\n|---|---|---:|---:|---:|---|---|');
for (const r of rows) console.log(`| ${r.join(' | ')} |`);
