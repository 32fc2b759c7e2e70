/**
 * Status pages and the job queue.
 *
 *   npx tsx bench/status.ts [--seconds 3] [--clients 8] [--components 20] [--jobs 5000]
 *
 * 1. Public page: GET /status/{slug} (HTML with 90-day bars) and /status/{slug}.json for a page with
 *    N monitor components, each with 90 days of results, over real HTTP with C keep-alive clients.
 * 2. Job queue: due no-op jobs claimed and committed per second (each claim and each completion is a
 *    SQLite write), the ceiling for monitor checks and mail per process.
 * Prints one table. Runs in-process on a temp database.
 */
import http from 'node:http';
import type { AddressInfo } from 'node:net';
import { mkdtempSync, rmSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { parseArgs } from 'node:util';
import { createSightline } from '../src/server.js';
import { bootstrapOrganization } from '../src/core/bootstrap.js';
import { openDatabase } from '../src/storage/db.js';
import { createJobsRepo } from '../src/storage/jobs-repo.js';
import { createScheduler } from '../src/core/scheduler.js';

const { values } = parseArgs({ options: { seconds: { type: 'string', default: '3' }, clients: { type: 'string', default: '8' }, components: { type: 'string', default: '20' }, jobs: { type: 'string', default: '5000' } } });
const SECONDS = Number(values.seconds);
const CLIENTS = Number(values.clients);
const COMPONENTS = Number(values.components);
const JOBS = Number(values.jobs);

const dir = mkdtempSync(join(tmpdir(), 'sightline-bench-status-'));
const rows: string[][] = [];

async function load(url: string): Promise<{ rps: number; p50: number; p99: number; bytes: number }> {
  const agent = new http.Agent({ keepAlive: true, maxSockets: CLIENTS });
  const lat: number[] = [];
  let bytes = 0;
  const end = Date.now() + SECONDS * 1000;
  const one = () =>
    new Promise<void>((resolve, reject) => {
      const t0 = performance.now();
      http.get(url, { agent }, (res) => {
        let n = 0;
        res.on('data', (c: Buffer) => (n += c.length));
        res.on('end', () => {
          if (res.statusCode !== 200) return reject(new Error(`status ${res.statusCode}`));
          lat.push(performance.now() - t0);
          bytes = n;
          resolve();
        });
      }).on('error', reject);
    });
  await Promise.all(Array.from({ length: CLIENTS }, async () => {
    while (Date.now() < end) await one();
  }));
  agent.destroy();
  lat.sort((a, b) => a - b);
  return { rps: lat.length / SECONDS, p50: lat[Math.floor(lat.length * 0.5)]!, p99: lat[Math.floor(lat.length * 0.99)]!, bytes };
}

// ── 1. public page ──────────────────────────────────────────────────────────────────────────
{
  const s = createSightline({ dbFile: join(dir, 'page.db'), port: 0, host: '127.0.0.1', logLevel: 'silent' });
  const boot = bootstrapOrganization(s.services, { org: 'Bench', project: 'bench', email: 'b@bench.local', now: Date.now() });
  const pid = boot.project_id;
  const svc = s.services;
  const page = svc.statusPages.create(pid, boot.organization_id, { name: 'Bench', slug: 'bench', is_public: true, custom_domain: null, theme_config: {} }, Date.now());
  const now = Date.now();
  for (let i = 0; i < COMPONENTS; i++) {
    const m = svc.monitors.create(pid, { name: `svc-${i}`, kind: 'http', config: { method: 'GET', url: 'https://example.com', interval_s: 60, timeout_ms: 5000, expected_status: '200-299', body_contains: null, region: 'eu', degraded_after_ms: null }, slug: null, paused: false, next_expected_at: null }, now);
    svc.atomic(() => {
      for (let d = 0; d < 90; d++) for (let k = 0; k < 24; k++) svc.monitors.addResult(pid, m.id, { at_ms: now - d * 86_400_000 - k * 3_600_000, status: (d * 24 + k) % 97 === 0 ? 'down' : 'up', latency_ms: 50, http_status: 200, error: null, region: 'eu', check_in_id: null });
    });
    svc.statusPages.createComponent(page.id, { kind: 'monitor', name: `Service ${i}`, description: null, parent_id: null, monitor_id: m.id, status: null, external_url: null }, now);
  }
  svc.incidents.create(pid, { title: 'Elevated errors', status: 'investigating', impact: 'minor', monitor_id: null, started_at: now, message: 'Looking into it.', author: 'bench' }, now);
  const server = http.createServer(s.app.callback());
  await new Promise<void>((r) => server.listen(0, '127.0.0.1', r));
  const base = `http://127.0.0.1:${(server.address() as AddressInfo).port}`;
  for (const [label, path] of [['GET /status/{slug} (HTML)', '/status/bench'], ['GET /status/{slug}.json', '/status/bench.json']] as const) {
    await load(base + path); // warm-up pass is the same length; only the second counts
    const r = await load(base + path);
    rows.push([label, `${COMPONENTS} monitor components × 90 days`, `${r.rps.toFixed(0)} req/s`, `p50 ${r.p50.toFixed(1)} ms, p99 ${r.p99.toFixed(1)} ms`, `${(r.bytes / 1024).toFixed(0)} KiB`]);
  }
  server.closeAllConnections();
  await new Promise((r) => server.close(r));
  await s.close();
}

// ── 2. job queue ────────────────────────────────────────────────────────────────────────────
{
  const db = openDatabase(join(dir, 'jobs.db'));
  const jobs = createJobsRepo(db);
  const clock = Date.now();
  const sched = createScheduler(jobs, { now: () => clock, concurrency: 64 });
  let ran = 0;
  sched.register('noop', () => ({ commit: () => void ran++ }));
  db.transaction(() => {
    for (let i = 0; i < JOBS; i++) sched.enqueue('noop', String(i), {}, clock);
  })();
  const t0 = performance.now();
  while (ran < JOBS) await sched.runDue();
  const secs = (performance.now() - t0) / 1000;
  rows.push(['job queue: claim + commit', `${JOBS} due no-op jobs, 64 at a time`, `${(JOBS / secs).toFixed(0)} jobs/s`, '', '']);
  await sched.stop();
  db.close();
}

rmSync(dir, { recursive: true, force: true });
console.log('| bench | shape | throughput | latency | body |\n|---|---|---|---|---|');
for (const r of rows) console.log(`| ${r.join(' | ')} |`);
