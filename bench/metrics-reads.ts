/**
 * Metric reads at size (issue 19, item 6): for each size a fresh database is seeded with that many
 * metric points over 24 hours (bench/scaling.ts's mix: per service a gauge, a cumulative counter per
 * route, a delta histogram per route; 512 points per transaction through the storage write path,
 * which maintains the per-minute, 5-minute and hourly rollups of migrations 040 and 047), then each
 * metric read is timed over REST three times: with the rollups (as served), on the per-minute rollups
 * only (metricsRead.settings.coarseLevels = false) and forced onto the raw points
 * (settings.rollupReads = false; BENCH_RAW_RUNS=0 skips it), p95 of BENCH_RUNS sequential calls after
 * a warm-up. Aim: no read above 100 ms p95 at 1M points, growth well under linear.
 *
 *   BENCH_SIZES=100000,1000000 BENCH_RUNS=15 BENCH_RAW_RUNS=5 npx tsx bench/metrics-reads.ts
 */
import { mkdtempSync, rmSync } from 'node:fs';
import { loadavg, tmpdir } from 'node:os';
import { join } from 'node:path';
import { createSightline } from '../src/server.js';
import { bootstrapOrganization } from '../src/core/bootstrap.js';
import { DAY, FROM, NOW, points } from './seed-data.js';
import { timeGetP95 } from './lib.js';

const SIZES = (process.env.BENCH_SIZES ?? '100000,1000000').split(',').map(Number);
const RUNS = Number(process.env.BENCH_RUNS ?? 15);
/** Calls per read on the raw path (slow at 1M: fewer by default); 0 skips the raw path. */
const RAW_RUNS = Number(process.env.BENCH_RAW_RUNS ?? 5);
const BATCH = 512;

const timeOp = (url: string, key: string, runs = RUNS) => timeGetP95(url, key, () => '', runs);

async function measure(n: number) {
  const dir = mkdtempSync(join(tmpdir(), 'sl-bench-metrics-'));
  const s = createSightline({ dbFile: join(dir, 'bench.db'), port: 0, host: '127.0.0.1', rateLimit: { limit: 1e9, windowSeconds: 60 } }, { now: () => NOW });
  try {
    const boot = bootstrapOrganization(s.services, { now: NOW });
    const pid = boot.project_id;
    const cum = new Map<string, number>();
    const t0 = performance.now();
    const batches = Math.ceil(n / BATCH);
    for (let b = 0; b < batches; b++) s.services.telemetry.insertMetricPoints(pid, points(FROM + ((b + 0.5) / batches) * DAY, BATCH, cum), NOW);
    const seedSeconds = (performance.now() - t0) / 1000;
    const server = await s.listen();
    const base = `http://127.0.0.1:${(server.address() as { port: number }).port}/v1/projects/${pid}`;
    const w = `from=${encodeURIComponent(new Date(FROM).toISOString())}&to=${encodeURIComponent(new Date(NOW).toISOString())}`;
    const odd = `from=${encodeURIComponent(new Date(FROM + 17_321).toISOString())}&to=${encodeURIComponent(new Date(NOW - 41_007).toISOString())}`;
    const H = 'metric_name=http.server.request.duration&metric_type=hist';
    const C = 'metric_name=http.server.requests&metric_type=sum';
    const G = 'metric_name=process.cpu.utilization&metric_type=gauge';
    const ops: [string, string][] = [
      ['metrics.timeline hist p95', `/metrics/timeline?${w}&${H}&aggregation=p95`],
      ['metrics.timeline hist avg 1m', `/metrics/timeline?${w}&${H}&aggregation=avg&granularity=1m`],
      ['metrics.timeline sum (cumulative) sum', `/metrics/timeline?${w}&${C}&aggregation=sum`],
      ['metrics.timeline sum (cumulative) p99', `/metrics/timeline?${w}&${C}&aggregation=p99`],
      ['metrics.timeline gauge max, unaligned edges', `/metrics/timeline?${odd}&${G}&aggregation=max`],
      ['metrics.timeline gauge p90', `/metrics/timeline?${w}&${G}&aggregation=p90`],
      ['metrics.inspect gauge', `/metrics/inspect?${w}&${G}`],
      ['metrics.inspect hist', `/metrics/inspect?${w}&${H}`],
      ['metrics.inspect sum (cumulative)', `/metrics/inspect?${w}&${C}`],
      ['observability.summary', `/observability-summary?${w}`],
    ];
    const out = new Map<string, { rollup: number; minutes: number; raw: number }>();
    for (const [label, path] of ops) {
      s.services.metricsRead.settings.rollupReads = true;
      s.services.metricsRead.settings.coarseLevels = false;
      const m = await timeOp(base + path, boot.admin_key);
      s.services.metricsRead.settings.coarseLevels = true;
      const a = await timeOp(base + path, boot.admin_key);
      s.services.metricsRead.settings.rollupReads = false;
      const b = RAW_RUNS > 0 ? await timeOp(base + path, boot.admin_key, RAW_RUNS) : { p95: NaN, status: 200 };
      if (a.status !== 200 || b.status !== 200) console.error(`${label}: HTTP ${a.status}/${b.status} at ${n}`);
      out.set(label, { rollup: a.p95, minutes: m.p95, raw: b.p95 });
      console.error(`  ${n.toLocaleString('en')} ${label}: rollups ${a.p95.toFixed(1)} ms, per-minute rollups only ${m.p95.toFixed(1)} ms, raw ${ms(b.p95)}`);
    }
    s.services.metricsRead.settings.rollupReads = true;
    server.close();
    return { seedSeconds, p95: out };
  } finally {
    await s.close();
    rmSync(dir, { recursive: true, force: true });
  }
}

/** A p95 for the table, or a dash where the raw path was skipped (BENCH_RAW_RUNS=0). */
const ms = (v: number, unit = ' ms') => (Number.isNaN(v) ? '–' : `${v.toFixed(1)}${unit}`);
const results: { n: number; seedSeconds: number; p95: Map<string, { rollup: number; minutes: number; raw: number }> }[] = [];
for (const n of SIZES) {
  console.error(`seeding ${n.toLocaleString('en')} metric points…`);
  const r = await measure(n);
  console.error(`  seeded in ${r.seedSeconds.toFixed(0)} s`);
  results.push({ n, ...r });
}
const head = results.map((r) => (r.n >= 1e6 ? `${r.n / 1e6}M` : `${r.n / 1e3}k`));
console.log(`\nMetric read p95 (ms), 24 h window, ${RUNS} sequential REST calls after a warm-up (raw path: ${RAW_RUNS}); rollups (every level) / per-minute rollups only / raw path (forced); load average ${loadavg()[0]!.toFixed(1)}.\n`);
console.log(`| operation | ${head.map((h) => `${h} rollups | ${h} minutes only | ${h} raw`).join(' | ')} |`);
console.log(`|---|${head.map(() => '---:|---:|---:').join('|')}|`);
for (const label of results[0]?.p95.keys() ?? []) {
  console.log(`| ${label} | ${results.map((r) => `${r.p95.get(label)!.rollup.toFixed(1)} | ${r.p95.get(label)!.minutes.toFixed(1)} | ${ms(r.p95.get(label)!.raw, '')}`).join(' | ')} |`);
}
console.log(`\nseeding (metric points, 512 per transaction, rollups maintained): ${results.map((r) => `${r.n.toLocaleString('en')} in ${r.seedSeconds.toFixed(0)} s (${Math.round(r.n / r.seedSeconds).toLocaleString('en')}/s)`).join('; ')}`);
