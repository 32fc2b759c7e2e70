/**
 * How the telemetry reads grow with data (issue 19, item 6): for each size, a fresh database is
 * seeded with that many spans, that many log records and that many metric points over the same 24
 * hours, then every read operation over spans, logs and metrics is timed over REST (in-process
 * server on loopback) and the p95 printed per size side by side. Aim: no read above 100 ms p95 at
 * 1M rows, and growth well under linear.
 *
 * Seeding goes through the storage write path itself (Services.telemetry: the writer, the log
 * rollups, trace chunks and the metric catalogue, 512 rows per transaction), not through HTTP and
 * decoding, so a size is seeded in a fraction of the ingest bench's time. The seeding time per size
 * is printed; 10M is only run when asked (`--sizes 100000,1000000,10000000`) and is skipped when
 * the previous size's seeding predicts more than 10 minutes for it.
 *
 *   npx tsx bench/scaling.ts [--sizes 100000,1000000] [--runs 15]
 */
import { mkdtempSync, rmSync } from 'node:fs';
import { loadavg, tmpdir } from 'node:os';
import { join } from 'node:path';
import { parseArgs } from 'node:util';
import { randomBytes } from 'node:crypto';
import { createSightline } from '../src/server.js';
import { bootstrapOrganization } from '../src/core/bootstrap.js';
import type { LogRecordOut, SpanRecord } from '../src/domain/telemetry-types.js';
import { DAY, FROM, NOW, ROUTES, SERVICES, int, pick, points, rand, resources, scope, sixSpanTrace } from './seed-data.js';
import { userFieldSql, userKeySql } from '../src/domain/errors/users.js';
import { shortId } from '../src/storage/errors-repo.js';
import { ERROR_GROUP_HOURS_BACKFILL } from '../src/storage/migrations/046-error-group-hours.js';
import { backfillErrorLatency } from '../src/storage/error-latency.js';
import { timeGetP95 } from './lib.js';

const { values: opts } = parseArgs({ options: { sizes: { type: 'string' }, runs: { type: 'string' }, skip: { type: 'string' }, only: { type: 'string' } } });
/** Operation label prefixes to leave out / to run alone (e.g. `--skip metrics,observability` while another change owns them). */
const SKIP = (opts.skip ?? '').split(',').filter(Boolean);
const ONLY = (opts.only ?? '').split(',').filter(Boolean);
const SIZES = (opts.sizes ?? '100000,1000000').split(',').map(Number);
const RUNS = Number(opts.runs ?? 15);
const BATCH = 512;
const hex = (n: number) => randomBytes(n).toString('hex');

const TEMPLATES = [
  () => `request served in ${int(900)} ms for user u${int(50000)}`,
  () => `order ord_${int(100000)} placed with ${1 + int(9)} items`,
  () => `cache miss for key product:${int(20000)}`,
  () => `upstream timeout after ${int(30)} s calling payments`,
  () => `user u${int(50000)} logged in from 10.${int(256)}.${int(256)}.${int(256)}`,
  () => `job ${hex(4)} finished, ${int(1000)} rows processed`,
];

function log(t: number): LogRecordOut {
  const r = rand();
  const [sev, text] = r < 0.7 ? [9, 'INFO'] : r < 0.85 ? [5, 'DEBUG'] : r < 0.95 ? [13, 'WARN'] : r < 0.995 ? [17, 'ERROR'] : [21, 'FATAL'];
  const svc = pick(SERVICES);
  return {
    time_ms: t,
    observed_time_ms: t,
    severity_number: sev,
    severity_text: text,
    body: pick(TEMPLATES)(),
    attributes: { 'http.request.method': pick(['GET', 'GET', 'POST']), 'http.route': pick(ROUTES), 'user.id': `u${int(50000)}` },
    trace_id: null,
    span_id: null,
    flags: 0,
    event_name: '',
    resource: resources.get(svc)!,
    scope,
    service_name: svc,
  };
}

const ERROR_TYPES = ['TypeError', 'RangeError', 'DatabaseError', 'TimeoutError', 'ValidationError'];
const ENVS = ['production', 'production', 'production', 'staging'];

/**
 * Error events, their groups and the groups' context rollups, written with direct SQL on the real
 * schema (multi-row inserts in one transaction, then the rollups computed as migration 034 backfills
 * them): grouping one event at a time through the ingest path would make seeding the slow part.
 * Groups: about one per 500 events (at least 200, at most 5,000), long-tailed; 40% of the events
 * name a user, a third carry a trace id.
 */
function seedErrors(db: ReturnType<typeof createSightline>['db'], pid: number, n: number): { groupIds: string[]; users: string[] } {
  const nGroups = Math.max(200, Math.min(5000, Math.round(n / 500)));
  const groups = Array.from({ length: nGroups }, (_, g) => ({ id: `00000000-0000-4000-8000-${g.toString(16).padStart(12, '0')}`, type: ERROR_TYPES[g % ERROR_TYPES.length]!, svc: SERVICES[g % SERVICES.length]!, fn: `handler${g}` }));
  const users = Array.from({ length: 200 }, (_, u) => `u${u}`);
  db.transaction(() => {
    const ins = db.prepare(`INSERT INTO error_groups (id, project_id, seq, short_id, fingerprint, grouping_method, type, title, culprit, level, service_name, environment, first_seen, last_seen, event_count, updated_at)
      VALUES (?, ?, ?, ?, ?, 'stacktrace', ?, ?, ?, 'error', ?, 'production', ?, ?, 0, ?)`);
    groups.forEach((g, i) => ins.run(g.id, pid, i + 1, shortId('bench', i + 1), `fp${i}`, g.type, `${g.type}: failure in ${g.fn}`, `src/${g.svc}.js in ${g.fn}`, g.svc, FROM, FROM, NOW));
  })();
  {
    const ROWS = 40;
    const cols = 22;
    const stmt = db.prepare(`INSERT INTO error_events (project_id, event_id, group_id, fingerprint_group_id, timestamp_ms, received_ms, source, platform, level, type, message, title,
      service_name, environment, release, transaction_name, server_name, trace_id, span_id, tags, user_json, payload) VALUES ${Array.from({ length: ROWS }, () => `(${Array(cols).fill('?').join(',')})`).join(',')}`);
    const one = db.prepare(`INSERT INTO error_events (project_id, event_id, group_id, fingerprint_group_id, timestamp_ms, received_ms, source, platform, level, type, message, title,
      service_name, environment, release, transaction_name, server_name, trace_id, span_id, tags, user_json, payload) VALUES (${Array(cols).fill('?').join(',')})`);
    let buf: unknown[] = [];
    // Event ids in insertion order (the table is keyed by them): random ids would make seeding a random B-tree insert per row.
    // One transaction per 20,000 rows (one for all would grow the WAL to the whole table).
    let rowsInTx = 0;
    const flushRows = (rows: unknown[]) => {
      stmt.run(rows);
      if ((rowsInTx += ROWS) >= 20_000) {
        db.exec('COMMIT; BEGIN');
        rowsInTx = 0;
      }
    };
    db.exec('BEGIN');
    for (let i = 0; i < n; i++) {
      // Long tail: a few groups hold most events.
      const g = groups[Math.floor(nGroups * rand() ** 3)]!;
      const ts = FROM + (i / n) * DAY;
      const env = pick(ENVS);
      const user = rand() < 0.4 ? pick(users) : null;
      const msg = `${g.type}: failure in ${g.fn} for order ord_${int(100000)}${rand() < 0.05 ? ' (upstream timeout)' : ''}`;
      buf.push(pid, i.toString(16).padStart(32, '0'), g.id, g.id, ts, Math.round(ts + 50 + int(2000)), 'sentry', 'node', rand() < 0.1 ? 'warning' : 'error', g.type, msg, `${g.type}: failure in ${g.fn}`,
        g.svc, env, `${g.svc}@1.${Math.floor((i / n) * 10)}.0`, pick(ROUTES), `web-${int(4)}`, rand() < 0.33 ? hex(16) : null, null,
        JSON.stringify({ 'http.route': pick(ROUTES), browser: pick(['Chrome', 'Firefox', 'Safari']) }), user ? JSON.stringify({ id: user, email: `${user}@example.com` }) : null,
        JSON.stringify({ exception: { values: [{ type: g.type, value: msg, stacktrace: { frames: [{ filename: `/app/src/${g.svc}.js`, function: g.fn, lineno: 10 + (i % 50), in_app: true }] } }] } }));
      if (buf.length === ROWS * cols) {
        flushRows(buf);
        buf = [];
      }
    }
    for (let i = 0; i < buf.length; i += cols) one.run(buf.slice(i, i + cols));
    db.exec('COMMIT');
  }
  db.transaction(() => {
    // The per-(group, hour, user key) tallies ingest keeps, as migration 046 backfills them.
    db.exec(ERROR_GROUP_HOURS_BACKFILL);
    // The per-hour latency bucket tallies behind events.latency, as migration 055 backfills them.
    backfillErrorLatency(db);
    // The group rollups, as migration 034 backfills them from events.
    for (const [kind, col] of [['environment', 'environment'], ['service', 'service_name'], ['release', 'release']] as const)
      db.prepare(`INSERT INTO error_group_dims (group_id, kind, value, event_count, first_seen, last_seen)
        SELECT group_id, '${kind}', ${col}, COUNT(*), MIN(timestamp_ms), MAX(timestamp_ms) FROM error_events WHERE project_id = ? AND ${col} <> '' GROUP BY group_id, ${col}`).run(pid);
    db.prepare(`INSERT OR IGNORE INTO error_group_users (group_id, user_key, user_id, first_seen)
      SELECT group_id, k, MAX(uid), MIN(timestamp_ms) FROM (SELECT group_id, ${userKeySql('user_json')} AS k, NULLIF(${userFieldSql('user_json', 'id')}, '') AS uid, timestamp_ms
      FROM error_events WHERE project_id = ? AND user_json IS NOT NULL) WHERE k IS NOT NULL GROUP BY group_id, k`).run(pid);
    db.prepare(`UPDATE error_groups SET
      event_count = (SELECT COUNT(*) FROM error_events e WHERE e.project_id = error_groups.project_id AND e.group_id = error_groups.id),
      first_seen = COALESCE((SELECT MIN(timestamp_ms) FROM error_events e WHERE e.project_id = error_groups.project_id AND e.group_id = error_groups.id), first_seen),
      last_seen = COALESCE((SELECT MAX(timestamp_ms) FROM error_events e WHERE e.project_id = error_groups.project_id AND e.group_id = error_groups.id), last_seen),
      user_count = (SELECT COUNT(*) FROM error_group_users u WHERE u.group_id = error_groups.id),
      first_release = COALESCE((SELECT value FROM error_group_dims d WHERE d.group_id = error_groups.id AND d.kind = 'release' ORDER BY d.first_seen, d.value LIMIT 1), ''),
      last_release = COALESCE((SELECT value FROM error_group_dims d WHERE d.group_id = error_groups.id AND d.kind = 'release' ORDER BY d.last_seen DESC, d.value DESC LIMIT 1), '')
      WHERE project_id = ?`).run(pid);
    // Feedback: one entry per 20 events, the same window.
    const fb = db.prepare(`INSERT INTO feedback (id, project_id, message, contact_email, environment, user_id, service, status, source, created_at, updated_at) VALUES (?, ?, ?, ?, ?, ?, ?, ?, 'api', ?, ?)`);
    for (let i = 0; i < Math.ceil(n / 20); i++) {
      const t = Math.round(FROM + (i / Math.ceil(n / 20)) * DAY);
      const u = pick(users);
      fb.run(`${hex(8)}-${hex(4)}-4${hex(2).slice(1)}-8${hex(2).slice(1)}-${hex(6)}`, pid, `checkout broke again (${i})`, `${u}@example.com`, pick(ENVS), u, pick(SERVICES), pick(['new', 'new', 'reviewed', 'archived']), t, t);
    }
  })();
  return { groupIds: groups.slice(0, 50).map((g) => g.id), users };
}

interface Seeded {
  groupIds: string[];
  users: string[];
  project: string;
  admin: string;
  traceIds: string[];
  errorTraceIds: string[];
  seedSeconds: number;
}

async function seed(s: ReturnType<typeof createSightline>, n: number): Promise<Seeded> {
  const boot = bootstrapOrganization(s.services, { now: NOW });
  const pid = boot.project_id;
  const w = s.services.telemetry;
  const tx = s.db.transaction((fn: () => void) => fn());
  const traceIds: string[] = [];
  const errorTraceIds: string[] = [];
  const cum = new Map<string, number>();
  const t0 = performance.now();
  const batches = Math.ceil(n / BATCH);
  // With --only naming error/event/feedback reads alone, the telemetry signals are not seeded.
  const telemetry = !ONLY.length || ONLY.some((x) => !/^(errors|events|feedback)/.test(x));
  for (let b = 0; telemetry && b < batches; b++) {
    const t = FROM + ((b + 0.5) / batches) * DAY;
    const spans: SpanRecord[] = [];
    while (spans.length < BATCH) spans.push(...sixSpanTrace(t + int(DAY / batches), { traceIds, errorTraceIds }));
    const logs = Array.from({ length: BATCH }, (_, i) => log(t + (i * DAY) / batches / BATCH));
    const pts = points(t, BATCH, cum);
    tx(() => {
      w.insertSpans(pid, spans.slice(0, BATCH), 'otlp', NOW);
      w.insertLogs(pid, logs, 'otlp', NOW);
      w.insertMetricPoints(pid, pts, NOW);
    });
  }
  const errs = seedErrors(s.db, Number(pid), n);
  return { project: pid, admin: boot.admin_key, traceIds, errorTraceIds, ...errs, seedSeconds: (performance.now() - t0) / 1000 };
}

const timeOp = (base: string, key: string, path: () => string) => timeGetP95(base, key, path, RUNS);

/**
 * Same-run comparison of the window counts of an errors.list page (the 50 groups of the default
 * sort): the read from the hourly tallies (what the server does) against counting every event of
 * the window (what it did before migration 046), alternated on the same file, over the bench's
 * hour-aligned 24 h window and over a window with both edges inside an hour.
 */
async function compareWindowCounts(s: ReturnType<typeof createSightline>, project: string, n: number) {
  const db = s.db;
  const repo = s.services.errorGroups;
  const pid = Number(project);
  const ids = db.prepare('SELECT id FROM error_groups WHERE project_id = ? AND merged_into IS NULL ORDER BY last_seen DESC, id LIMIT 50').pluck().all(pid) as string[];
  const old = (from: number, to: number) => {
    const st = db.prepare(`SELECT COUNT(*) AS events, COUNT(DISTINCT ${userKeySql('user_json')}) AS users FROM error_events WHERE project_id = ? AND group_id IN (?) AND timestamp_ms >= ? AND timestamp_ms <= ?`);
    const out = new Map<string, unknown>();
    for (const id of ids) {
      db.prepare('SELECT id FROM error_groups WHERE project_id = ? AND merged_into = ?').all(pid, id); // the duplicates look-up the read did
      out.set(id, st.get(pid, id, from, to));
    }
    return out;
  };
  const windows: [string, number, number][] = [
    ['24 h, whole hours', FROM, NOW],
    ['24 h, edges inside hours', FROM + 17 * 60_000 + 3_000, NOW - 23 * 60_000],
  ];
  for (const [label, from, to] of windows) {
    const a = old(from, to);
    const b = await repo.windowCounts(project, ids, from, to);
    for (const id of ids) if (JSON.stringify(a.get(id)) !== JSON.stringify(b.get(id))) console.error(`window counts differ for ${id}: ${JSON.stringify(a.get(id))} vs ${JSON.stringify(b.get(id))}`);
    const t = { old: [] as number[], oldCpu: [] as number[], neu: [] as number[], neuCpu: [] as number[] };
    for (let i = 0; i < RUNS; i++) {
      for (const which of i % 2 ? (['neu', 'old'] as const) : (['old', 'neu'] as const)) {
        const c0 = process.cpuUsage();
        const t0 = performance.now();
        if (which === 'old') old(from, to);
        else await repo.windowCounts(project, ids, from, to);
        t[which].push(performance.now() - t0);
        const c = process.cpuUsage(c0);
        t[which === 'old' ? 'oldCpu' : 'neuCpu'].push((c.user + c.system) / 1000);
      }
    }
    const p95 = (xs: number[]) => [...xs].sort((x, y) => x - y)[Math.min(xs.length - 1, Math.ceil(xs.length * 0.95) - 1)]!;
    const med = (xs: number[]) => [...xs].sort((x, y) => x - y)[Math.floor(xs.length / 2)]!;
    console.error(
      `  window counts of a 50-group page at ${n.toLocaleString('en')} events (${label}), ${RUNS} alternated runs: ` +
        `every event p95 ${p95(t.old).toFixed(1)} ms (CPU median ${med(t.oldCpu).toFixed(1)} ms), hourly tallies p95 ${p95(t.neu).toFixed(1)} ms (CPU median ${med(t.neuCpu).toFixed(1)} ms); ` +
        `ratio ${(p95(t.old) / p95(t.neu)).toFixed(1)}×; load average ${loadavg()[0]!.toFixed(1)}`,
    );
  }
}

async function measure(n: number): Promise<{ seedSeconds: number; p95: Map<string, number> }> {
  const dir = mkdtempSync(join(tmpdir(), 'sl-bench-scaling-'));
  const s = createSightline({ dbFile: join(dir, 'bench.db'), port: 0, host: '127.0.0.1', rateLimit: { limit: 1e9, windowSeconds: 60 } }, { now: () => NOW });
  try {
    const seeded = await seed(s, n);
    const server = await s.listen();
    const port = (server.address() as { port: number }).port;
    const base = `http://127.0.0.1:${port}`;
    const P = `/v1/projects/${seeded.project}`;
    const w = `from=${encodeURIComponent(new Date(FROM).toISOString())}&to=${encodeURIComponent(new Date(NOW).toISOString())}`;
    let i = 0;
    const someTrace = () => seeded.traceIds[i++ % seeded.traceIds.length]!;
    const someFailed = () => seeded.errorTraceIds[i++ % seeded.errorTraceIds.length]!;
    const ops: [string, () => string][] = [
      ['logs.search q=timeout', () => `${P}/logs?${w}&q=timeout`],
      ['logs.search (no q)', () => `${P}/logs?${w}`],
      ['logs.search level=fatal service=payments', () => `${P}/logs?${w}&level=fatal&service=payments`],
      ['logs.histogram', () => `${P}/logs/histogram?${w}`],
      ['logs.histogram group_by=service step=1m', () => `${P}/logs/histogram?${w}&group_by=service&step=1m`],
      ['logs.insights', () => `${P}/logs/insights?${w}`],
      ['metrics.list', () => `${P}/metrics?${w}`],
      ['metrics.timeline hist p95', () => `${P}/metrics/timeline?${w}&metric_name=http.server.request.duration&metric_type=hist&aggregation=p95`],
      ['metrics.timeline sum (cumulative)', () => `${P}/metrics/timeline?${w}&metric_name=http.server.requests&metric_type=sum&aggregation=sum`],
      ['metrics.inspect gauge', () => `${P}/metrics/inspect?${w}&metric_name=process.cpu.utilization&metric_type=gauge`],
      ['observability.summary', () => `${P}/observability-summary?${w}`],
      ['traces.operations', () => `${P}/trace-operations?${w}`],
      ['traces.list', () => `${P}/traces?${w}`],
      ['traces.list status=error', () => `${P}/traces?${w}&status=error`],
      ['traces.list service_name=payments', () => `${P}/traces?${w}&service_name=payments`],
      ['traces.serviceMap', () => `${P}/services?${w}`],
      ['traces.get', () => `${P}/traces/${someTrace()}`],
      ['traces.errors', () => `${P}/traces/${someFailed()}/errors`],
      ['errors.list', () => `${P}/errors?${w}`],
      ['errors.list status=all sort=event_count', () => `${P}/errors?${w}&status=all&sort=event_count`],
      ['errors.list environment=staging', () => `${P}/errors?${w}&environment=staging`],
      ['errors.list q=timeout', () => `${P}/errors?${w}&q=timeout`],
      ['errors.list user_id', () => `${P}/errors?${w}&user_id=${pick(seeded.users)}`],
      ['errors.get (busiest group)', () => `${P}/errors/${seeded.groupIds[0]}?${w}`],
      ['errors.get', () => `${P}/errors/${seeded.groupIds[i++ % seeded.groupIds.length]}?${w}`],
      ['errors.traces (busiest group)', () => `${P}/errors/${seeded.groupIds[0]}/traces?${w}`],
      ['errors.suspectCommits', () => `${P}/errors/${seeded.groupIds[i++ % seeded.groupIds.length]}/suspect-commits`],
      ['events.search (no query)', () => `${P}/events/search?${w}`],
      ['events.search level:warning service:payments', () => `${P}/events/search?${w}&q=${encodeURIComponent('level:warning service:payments')}`],
      ['events.search "upstream timeout"', () => `${P}/events/search?${w}&q=${encodeURIComponent('"upstream timeout"')}`],
      ['events.search user.id', () => `${P}/events/search?${w}&q=${encodeURIComponent(`user.id:${pick(seeded.users)}`)}`],
      ['events.search tags.browser:Safari environment:staging', () => `${P}/events/search?${w}&q=${encodeURIComponent('tags.browser:Safari environment:staging')}`],
      ['events.latency', () => `${P}/events/latency?${w}`],
      ['feedback.list', () => `${P}/feedback`],
      ['feedback.list status=reviewed', () => `${P}/feedback?status=reviewed`],
      ['feedback.list q=broke', () => `${P}/feedback?q=${encodeURIComponent('again (1')}`],
    ];
    const p95 = new Map<string, number>();
    for (const [label, path] of ops) {
      if (SKIP.some((x) => label.startsWith(x)) || (ONLY.length && !ONLY.some((x) => label.startsWith(x)))) continue;
      const r = await timeOp(base, seeded.admin, path);
      if (r.status !== 200) console.error(`${label}: HTTP ${r.status} at ${n}`);
      p95.set(label, r.p95);
    }
    server.close();
    if (!ONLY.length || ONLY.some((x) => 'errors.list'.startsWith(x) || x.startsWith('errors.list'))) await compareWindowCounts(s, seeded.project, n);
    return { seedSeconds: seeded.seedSeconds, p95 };
  } finally {
    await s.close();
    if (process.env.BENCH_KEEP_DB) console.error(`kept ${join(dir, 'bench.db')}`);
    else rmSync(dir, { recursive: true, force: true });
  }
}

async function main() {
  const results: { n: number; seedSeconds: number; p95: Map<string, number> }[] = [];
  const skipped: string[] = [];
  for (const n of SIZES) {
    const prev = results.at(-1);
    // Sizes above 1M only when seeding (about linear in rows, slightly worse) is predicted under 10 minutes.
    if (prev && n > 1_000_000 && (prev.seedSeconds * n * 1.2) / prev.n > 600) {
      skipped.push(`${n.toLocaleString('en')} rows skipped: seeding would take about ${Math.round((prev.seedSeconds * n * 1.2) / prev.n / 60)} min here (over 10 min)`);
      continue;
    }
    console.error(`seeding ${n.toLocaleString('en')} spans, logs and metric points…`);
    const r = await measure(n);
    console.error(`  seeded in ${r.seedSeconds.toFixed(0)} s; p95 ms: ${[...r.p95].map(([k, v]) => `${k} ${v.toFixed(1)}`).join('; ')}`);
    results.push({ n, ...r });
  }
  const head = results.map((r) => `${r.n >= 1e6 ? `${r.n / 1e6}M` : `${r.n / 1e3}k`} rows`);
  console.log(`\nRead p95 (ms) by rows per signal (spans, log records and metric points each) over one 24 h window; ${RUNS} sequential REST calls after a warm-up; load average ${loadavg()[0]!.toFixed(1)}.\n`);
  console.log(`| operation | ${head.join(' | ')} | growth ${head.length > 1 ? `${head[0]} → ${head.at(-1)}` : ''} |`);
  console.log(`|---|${head.map(() => '---:').join('|')}|---:|`);
  for (const label of results[0]?.p95.keys() ?? []) {
    const v = results.map((r) => r.p95.get(label)!);
    const growth = v.length > 1 ? `${(v.at(-1)! / v[0]!).toFixed(1)}× for ${(results.at(-1)!.n / results[0]!.n).toFixed(0)}× rows` : '';
    console.log(`| ${label} | ${v.map((x) => x.toFixed(1)).join(' | ')} | ${growth} |`);
  }
  console.log(`\nseeding (storage write path, 512 rows per transaction, three signals): ${results.map((r) => `${r.n.toLocaleString('en')} in ${r.seedSeconds.toFixed(0)} s`).join('; ')}`);
  for (const s of skipped) console.log(s);
}

await main();
