/**
 * releases.list and releases.get latency over 90 days of 10 services × 3 environments × 200
 * releases (6,000 deployment records, a rollback record every 25th release) and N spans (default
 * 5,000,000). A Sightline server runs in a child process; this process seeds it through the public
 * paths — deployments with POST /deployments, spans as OTLP protobuf batches of 512 root server spans
 * posted to /ingest/v1/traces, each span carrying the `service.version` serving at its time, 2% errors
 * — then times the release reads over REST and prints p50/p95 per call.
 *
 *   npx tsx bench/releases.ts [--spans 5000000] [--runs 30] [--db /tmp/x/bench.db]
 *
 * With --db an existing seeded file is reused (or created and kept); the seed time is printed.
 */
import { existsSync, mkdtempSync, readFileSync, rmSync, writeFileSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { dirname, join } from 'node:path';
import { randomBytes } from 'node:crypto';
import http from 'node:http';
import { parseArgs } from 'node:util';
import { ExportTraceServiceRequest } from '../src/ingest/otlp/schema.js';
import { attr, rng, startBenchServer, request, pct, timeGet } from './lib.js';

const { values: opts } = parseArgs({ options: { db: { type: 'string' }, spans: { type: 'string' }, runs: { type: 'string' } } });
const TARGET_SPANS = Number(opts.spans ?? 5_000_000);
const RUNS = Number(opts.runs ?? 30);
const SERVICES = Array.from({ length: 10 }, (_, i) => `svc-${i}`);
const ENVIRONMENTS = ['production', 'staging', 'development'];
const RELEASES = 200;
const DAYS = 90;
const DAY = 86_400_000;
const BATCH = 512;
const CONNECTIONS = 4;

const rand = rng(7);


const ns = (ms: number) => (BigInt(Math.round(ms)) * 1_000_000n).toString();

interface Stream {
  service: string;
  environment: string;
  /** Release start times (ms) and versions, oldest first; a rollback re-serves the previous version. */
  timeline: Array<{ at: number; version: string }>;
}

function streams(nowMs: number): Stream[] {
  const start = nowMs - DAYS * DAY;
  const step = (DAYS * DAY) / RELEASES;
  const out: Stream[] = [];
  for (const service of SERVICES) {
    for (const environment of ENVIRONMENTS) {
      const timeline: Stream['timeline'] = [];
      for (let i = 0; i < RELEASES; i++) {
        const at = start + i * step + rand() * step * 0.2;
        timeline.push({ at, version: `${service}@1.${Math.floor(i / 10)}.${i % 10}` });
        // Every 25th release is rolled back two hours later by a deployment record of the previous one.
        if (i > 0 && i % 25 === 0) timeline.push({ at: at + 2 * 3_600_000, version: timeline[timeline.length - 2]!.version });
      }
      out.push({ service, environment, timeline });
    }
  }
  return out;
}

function versionAt(s: Stream, t: number): string {
  let lo = 0;
  let hi = s.timeline.length - 1;
  while (lo < hi) {
    const mid = (lo + hi + 1) >> 1;
    if (s.timeline[mid]!.at <= t) lo = mid;
    else hi = mid - 1;
  }
  return s.timeline[lo]!.version;
}

/** One batch: BATCH root server spans of one stream over [from, to), grouped by version (one resource each). */
function batch(s: Stream, from: number, to: number): Buffer {
  const byVersion = new Map<string, unknown[]>();
  for (let i = 0; i < BATCH; i++) {
    const t = from + ((to - from) * (i + rand())) / BATCH;
    const v = versionAt(s, t);
    let l = byVersion.get(v);
    if (!l) byVersion.set(v, (l = []));
    const d = 20 * Math.exp((rand() + rand() + rand() - 1.5) * 1.2);
    l.push({
      traceId: randomBytes(16),
      spanId: randomBytes(8),
      name: 'GET /api/items/:id',
      kind: 2,
      startTimeUnixNano: ns(t),
      endTimeUnixNano: ns(t + d),
      attributes: [attr('http.request.method', 'GET'), attr('http.route', '/api/items/:id')],
      status: { code: rand() < 0.02 ? 2 : 0 },
    });
  }
  const resourceSpans = [...byVersion].map(([version, spans]) => ({
    resource: { attributes: [attr('service.name', s.service), attr('service.version', version), attr('deployment.environment.name', s.environment)] },
    scopeSpans: [{ scope: { name: 'bench', version: '1' }, spans }],
  }));
  return Buffer.from(ExportTraceServiceRequest.encode(ExportTraceServiceRequest.fromObject({ resourceSpans })).finish());
}

async function seed(port: number, keys: { project: string; ingest: string; admin: string }, nowMs: number): Promise<{ deployments: number; spans: number; seconds: number }> {
  const t0 = performance.now();
  const all = streams(nowMs);
  let deployments = 0;
  const depJobs: Array<() => Promise<void>> = [];
  for (const s of all) {
    s.timeline.forEach((r, i) => {
      depJobs.push(async () => {
        const body = JSON.stringify({
          deployment_id: `${s.service}-${s.environment}-${i}`,
          provider: 'github',
          service: s.service,
          environment: s.environment,
          version: r.version,
          status: 'ready',
          commit_sha: randomBytes(20).toString('hex'),
          branch: 'main',
          started_at: new Date(r.at).toISOString(),
        });
        const res = await request(port, 'POST', `/v1/projects/${keys.project}/deployments`, { 'x-service-key': keys.admin, 'content-type': 'application/json' }, body);
        if (res.status !== 201) throw new Error(`deployment: ${res.status} ${res.body}`);
        deployments++;
      });
    });
  }
  await pool(depJobs);
  console.log(`recorded ${deployments.toLocaleString('en')} deployments in ${((performance.now() - t0) / 1000).toFixed(1)} s`);

  // Batches interleaved across streams in time order, as live traffic arrives.
  const perStream = Math.max(1, Math.round(TARGET_SPANS / BATCH / all.length));
  const span = (DAYS * DAY) / perStream;
  const start = nowMs - DAYS * DAY;
  let spans = 0;
  const jobs: Array<() => Promise<void>> = [];
  for (let k = 0; k < perStream; k++) {
    for (const s of all) {
      jobs.push(async () => {
        const res = await request(port, 'POST', '/ingest/v1/traces', { 'x-service-key': keys.ingest, 'content-type': 'application/x-protobuf' }, batch(s, start + k * span, start + (k + 1) * span - 1));
        if (res.status !== 200) throw new Error(`ingest: ${res.status} ${res.body}`);
        spans += BATCH;
        if (spans % (BATCH * 500) === 0) process.stdout.write(`\r${spans.toLocaleString('en')} spans`);
      });
    }
  }
  await pool(jobs);
  process.stdout.write('\n');
  return { deployments, spans, seconds: (performance.now() - t0) / 1000 };
}

async function pool(jobs: Array<() => Promise<void>>): Promise<void> {
  let next = 0;
  await Promise.all(
    Array.from({ length: CONNECTIONS }, async () => {
      while (next < jobs.length) await jobs[next++]!();
    }),
  );
}


const time = (port: number, key: string, label: string, path: () => string) => timeGet(port, key, label, path, RUNS);

async function main() {
  const dbFile = opts.db ?? join(mkdtempSync(join(tmpdir(), 'sl-bench-releases-')), 'bench.db');
  const sidecar = `${dbFile}.bench.json`;
  const reuse = existsSync(dbFile) && existsSync(sidecar);
  const { child, port, keys } = await startBenchServer(dbFile);
  try {
    let meta: { project: string; admin: string; nowMs: number; spans: number; deployments: number };
    if (reuse) {
      meta = JSON.parse(readFileSync(sidecar, 'utf8'));
      console.log(`reusing ${dbFile}: ${meta.spans.toLocaleString('en')} spans, ${meta.deployments.toLocaleString('en')} deployments`);
    } else {
      if (!keys) throw new Error('the database was not empty and has no bench sidecar');
      const nowMs = Date.now();
      console.log(`seeding ${TARGET_SPANS.toLocaleString('en')} spans over ${DAYS} days, ${SERVICES.length}×${ENVIRONMENTS.length}×${RELEASES} releases into ${dbFile}`);
      const r = await seed(port, keys, nowMs);
      console.log(`seeded ${r.spans.toLocaleString('en')} spans and ${r.deployments.toLocaleString('en')} deployments in ${r.seconds.toFixed(1)} s`);
      meta = { project: keys.project, admin: keys.admin, nowMs, spans: r.spans, deployments: r.deployments };
      writeFileSync(sidecar, JSON.stringify(meta));
    }
    const P = `/v1/projects/${meta.project}/releases`;
    const all = JSON.parse((await request(port, 'GET', `${P}?limit=100&service_name=svc-3&environment=production`, { 'x-service-key': meta.admin })).body.toString());
    const ids: string[] = all.data.map((r: { id: string }) => r.id);
    if (!ids.length) throw new Error('no releases listed');
    const pickId = () => ids[Math.floor(rand() * ids.length)]!;
    const from90 = new Date(meta.nowMs - 89 * DAY).toISOString();
    const results = [
      await time(port, meta.admin, 'releases.list (30 days, all services, limit 50, 25 compared)', () => P),
      await time(port, meta.admin, 'releases.list (90 days, limit 100)', () => `${P}?from=${encodeURIComponent(from90)}&limit=100`),
      await time(port, meta.admin, 'releases.list (one service and environment)', () => `${P}?service_name=svc-5&environment=staging`),
      await time(port, meta.admin, 'releases.get (current release)', () => `${P}/${ids[0]}`),
      await time(port, meta.admin, 'releases.get (random release of the last 30 days)', () => `${P}/${pickId()}`),
    ];
    console.log(`\n${RUNS} sequential REST calls each after one warm-up; server and client share this machine (load average ${(await import('node:os')).loadavg()[0]!.toFixed(1)}).\n`);
    console.log('| call | p50 ms | p95 ms | max ms | response bytes | aim p95 |');
    console.log('|---|---:|---:|---:|---:|---:|');
    for (const r of results) console.log(`| ${r.label} | ${r.p50.toFixed(1)} | ${r.p95.toFixed(1)} | ${r.max.toFixed(1)} | ${r.bytes.toLocaleString('en')} | ≤ 200 |`);
  } finally {
    child.kill('SIGTERM');
    await new Promise((r) => child.once('exit', r));
    if (!opts.db) rmSync(dirname(dbFile), { recursive: true, force: true });
  }
}

main().catch((err) => {
  console.error(err);
  process.exit(1);
});
