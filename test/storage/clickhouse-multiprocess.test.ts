/**
 * Issue 20, several processes: three Sightline processes (`bin/sightline.mjs start`) sharing one
 * ClickHouse database and, in the scale-out project, one PostgreSQL database with a SQLite file each (as
 * on three machines; without PostgreSQL they share one SQLite file). Spans are sent through all three while
 * one is SIGKILLed: every span a process acknowledged is readable from the others. Feedback sent
 * through the survivors at once is admitted exactly 20 times in the minute (the quota check and the
 * insert hold the database's write lock together; without that the race between two processes is a
 * few microseconds wide, so this test shows the quota holds across processes rather than catching
 * that race reliably). The scheduler keeps firing after its leader is SIGKILLed: an uptime monitor's
 * checks go on from a survivor once the leader lease (2 s here) runs out. Runs on clickhouse-server (the `scale-out` project, or `clickhouse-18`
 * without PostgreSQL) only.
 */
import { randomBytes } from 'node:crypto';
import { mkdtempSync, rmSync } from 'node:fs';
import { createServer as createHttpServer } from 'node:http';
import Database from 'better-sqlite3';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { dropDatabase } from '../support/clickhouse.js';
import { sentryEvent } from '../operations/errors-fixtures.js';
import { createPgDatabase, pgQuery, type PgDatabase } from '../support/postgres.js';
import { printedKeys, sendTrace, startProcess, stopProcesses, type Proc } from '../support/processes.js';

const mode = process.env.SIGHTLINE_TEST_CLICKHOUSE;
const serverUrl = process.env.SIGHTLINE_TEST_CLICKHOUSE_URL;


describe.skipIf(mode !== 'server')('three processes over one SQLite file and ClickHouse', () => {
  const dir = mkdtempSync(join(tmpdir(), 'sightline-multi-'));
  const database = `multi_${process.pid}_${Date.now()}`;
  const procs: Proc[] = [];
  let keys: { ingest: string; admin: string; project: string };

  let pgDatabase: PgDatabase | null = null;

  beforeAll(async () => {
    // In the scale-out project, control data (keys, feedback, the scheduler's lease) in PostgreSQL too.
    if (process.env.SIGHTLINE_TEST_POSTGRES) pgDatabase = await createPgDatabase();
    const env = {
      ...(pgDatabase ? { SIGHTLINE_DATABASE_URL: pgDatabase.url } : {}),
      SIGHTLINE_DB: join(dir, 'shared.db'),
      SIGHTLINE_CLICKHOUSE_URL: `${serverUrl}/${database}`,
      SIGHTLINE_SCHEDULER_LEASE_MS: '2000',
      SIGHTLINE_MONITOR_ALLOW_PRIVATE: '127.0.0.1',
    };
    // With PostgreSQL, each process has a SQLite file of its own, as on separate machines: nothing the
    // processes share may live there. Without it they share one file.
    const own = (i: number) => (pgDatabase ? { ...env, SIGHTLINE_DB: join(dir, `process-${i}.db`) } : env);
    procs.push(await startProcess(own(0))); // the first one sets the database up and prints the keys
    keys = printedKeys(procs[0]!.out);
    procs.push(...(await Promise.all([startProcess(own(1)), startProcess(own(2))])));
  }, 120_000);
  afterAll(async () => {
    await stopProcesses(procs);
    await dropDatabase(serverUrl!, database);
    await pgDatabase?.drop();
    rmSync(dir, { recursive: true, force: true });
  });

  it('keeps every acknowledged span readable from the others when one process is SIGKILLed', async () => {
    const acked: string[] = [];
    let stop = false;
    const sender = async (p: Proc) => {
      while (!stop && p.child.exitCode === null) {
        const t = await sendTrace(p.url, keys.ingest);
        if (t) acked.push(t);
      }
    };
    const senders = procs.map((p) => sender(p));
    // At least 1.5 s and 20 acknowledged spans before the kill (a loaded machine acknowledges fewer).
    const started = Date.now();
    while (Date.now() - started < 1500 || (acked.length < 20 && Date.now() - started < 15_000)) await new Promise((r) => setTimeout(r, 100));
    procs[2]!.child.kill('SIGKILL');
    await new Promise((r) => setTimeout(r, 1000));
    stop = true;
    await Promise.all(senders);
    expect(procs[2]!.child.signalCode).toBe('SIGKILL');
    expect(acked.length).toBeGreaterThan(20);
    const missing: string[] = [];
    for (const [i, t] of acked.entries()) {
      const reader = procs[i % 2]!; // the survivors
      const r = await fetch(`${reader.url}/v1/projects/${keys.project}/traces/${t}`, { headers: { 'x-service-key': keys.admin } });
      await r.arrayBuffer();
      if (r.status !== 200) missing.push(`${t}: ${r.status}`);
    }
    expect(missing).toEqual([]);
  });

  it('differences one cumulative counter whose exports reached different processes as one series', async () => {
    // One OTLP/JSON export per process, values 10, 25 and 31 under one start: increases 15 and 6.
    const start = BigInt(Date.now() - 600_000) * 1_000_000n;
    const values = [10, 25, 31];
    for (const [i, v] of values.entries()) {
      const at = BigInt(Date.now() - 120_000 + i * 30_000) * 1_000_000n;
      const body = {
        resourceMetrics: [{
          resource: { attributes: [{ key: 'service.name', value: { stringValue: 'multi' } }] },
          scopeMetrics: [{ scope: { name: 'm' }, metrics: [{ name: 'multi.requests', sum: { aggregationTemporality: 2, isMonotonic: true, dataPoints: [{ startTimeUnixNano: String(start), timeUnixNano: String(at), asInt: String(v) }] } }] }],
        }],
      };
      const live = procs.filter((p) => p.child.exitCode === null && p.child.signalCode === null);
      const r = await fetch(`${live[i % live.length]!.url}/ingest/v1/metrics`, { method: 'POST', headers: { 'content-type': 'application/json', 'x-service-key': keys.ingest }, body: JSON.stringify(body) });
      await r.arrayBuffer();
      expect(r.status).toBe(200);
    }
    const reader = procs[0]!;
    const r = await fetch(`${reader.url}/v1/projects/${keys.project}/metrics/timeline?metric_name=multi.requests&metric_type=sum&aggregation=sum&from=-5m&to=now&granularity=1h`, {
      headers: { 'x-service-key': keys.admin },
    });
    const body = (await r.json()) as { buckets: { value: number | null; point_count: number }[] };
    expect(r.status).toBe(200);
    const total = body.buckets.reduce((t, b) => t + (b.value ?? 0), 0);
    const points = body.buckets.reduce((t, b) => t + b.point_count, 0);
    expect({ total, points }).toEqual({ total: 21, points: 3 });
  });

  it('counts an error sent through each process on one group, whose latest event any process reads', async () => {
    const live = procs.filter((p) => p.child.exitCode === null && p.child.signalCode === null);
    const value = `multi ${randomBytes(4).toString('hex')}`;
    const ids: string[] = [];
    for (const [i, p] of live.entries()) {
      const body = sentryEvent({ type: 'MultiProcessError', value, fn: 'everywhere', at: Date.now() - 60_000 + i * 1000, event_id: randomBytes(16).toString('hex') });
      const r = await fetch(`${p.url}/ingest/api/${keys.project}/store/?sentry_key=${keys.ingest}`, { method: 'POST', body: JSON.stringify(body) });
      expect(r.status, await r.text()).toBe(200);
      ids.push(body.event_id as string);
    }
    for (const reader of live) {
      const r = await fetch(`${reader.url}/v1/projects/${keys.project}/errors?q=${encodeURIComponent('MultiProcessError')}`, { headers: { 'x-service-key': keys.admin } });
      const list = (await r.json()) as { data: { id: string; event_count: number }[] };
      expect(r.status).toBe(200);
      expect(list.data.map((g) => g.event_count)).toEqual([live.length]);
      const g = await fetch(`${reader.url}/v1/projects/${keys.project}/errors/${list.data[0]!.id}`, { headers: { 'x-service-key': keys.admin } });
      expect(((await g.json()) as { latest_event: { event_id: string } }).latest_event.event_id).toBe(ids.at(-1));
    }
  });

  it('keeps an MCP session on the process that opened it, and answers elsewhere with a clear 404', async () => {
    const live = procs.filter((p) => p.child.exitCode === null && p.child.signalCode === null);
    const headers = { 'content-type': 'application/json', accept: 'application/json, text/event-stream', 'x-service-key': keys.admin };
    const init = await fetch(`${live[0]!.url}/mcp`, {
      method: 'POST',
      headers,
      body: JSON.stringify({ jsonrpc: '2.0', id: 1, method: 'initialize', params: { protocolVersion: '2025-06-18', capabilities: {}, clientInfo: { name: 'multi', version: '1' } } }),
    });
    await init.arrayBuffer();
    expect(init.status).toBe(200);
    const sid = init.headers.get('mcp-session-id')!;
    expect(sid).toBeTruthy();
    const list = (url: string) =>
      fetch(`${url}/mcp`, { method: 'POST', headers: { ...headers, 'mcp-session-id': sid, 'mcp-protocol-version': '2025-06-18' }, body: JSON.stringify({ jsonrpc: '2.0', id: 2, method: 'tools/list' }) });
    const elsewhere = await list(live[1]!.url);
    expect(elsewhere.status).toBe(404);
    expect(((await elsewhere.json()) as { error: { message: string } }).error.message).toBe('Session not found: start a new session with initialize.');
    const home = await list(live[0]!.url);
    expect(home.status).toBe(200);
    expect(await home.text()).toContain('execute');
  });

  it('stores one feedback record for one Idempotency-Key sent through both processes at once', async () => {
    const live = procs.filter((p) => p.child.exitCode === null && p.child.signalCode === null);
    const key = `idem-${randomBytes(6).toString('hex')}`;
    const answers = await Promise.all(
      Array.from({ length: 10 }, (_, i) =>
        fetch(`${live[i % live.length]!.url}/v1/projects/${keys.project}/feedback`, {
          method: 'POST',
          headers: { 'content-type': 'application/json', 'x-service-key': keys.ingest, 'idempotency-key': key },
          body: JSON.stringify({ message: 'sent once, retried everywhere' }),
        }).then(async (r) => ({ status: r.status, id: ((await r.json()) as { id?: string }).id })),
      ),
    );
    expect(answers.map((a) => a.status)).toEqual(Array(10).fill(201));
    expect(new Set(answers.map((a) => a.id)).size).toBe(1);
    const list = await fetch(`${live[1]!.url}/v1/projects/${keys.project}/feedback?q=${encodeURIComponent('retried everywhere')}`, { headers: { 'x-service-key': keys.admin } });
    expect(((await list.json()) as { data: unknown[] }).data).toHaveLength(1);
  });

  it('admits exactly 20 feedback records a minute across the processes', async () => {
    const live = procs.filter((p) => p.child.exitCode === null && p.child.signalCode === null);
    expect(live.length).toBe(2);
    // The rolling minute may already hold the record of the idempotency test above.
    const since = new Date(Date.now() - 50_000).toISOString();
    const before = await fetch(`${live[0]!.url}/v1/projects/${keys.project}/feedback?from=${encodeURIComponent(since)}&limit=100`, { headers: { 'x-service-key': keys.admin } });
    const already = ((await before.json()) as { data: unknown[] }).data.length;
    const statuses = await Promise.all(
      Array.from({ length: 40 }, (_, i) =>
        fetch(`${live[i % live.length]!.url}/v1/projects/${keys.project}/feedback`, {
          method: 'POST',
          headers: { 'content-type': 'application/json', 'x-service-key': keys.ingest },
          body: JSON.stringify({ message: `from process ${i % live.length}, #${i}` }),
        }).then(async (r) => (await r.arrayBuffer(), r.status)),
      ),
    );
    expect(statuses.filter((s) => s === 201)).toHaveLength(20 - already);
    expect(statuses.filter((s) => s === 429)).toHaveLength(20 + already);
  });

  it('keeps the scheduler firing after its leader is SIGKILLed', async () => {
    const live = procs.filter((p) => p.child.exitCode === null && p.child.signalCode === null);
    expect(live.length).toBe(2);
    const hits: number[] = [];
    const target = createHttpServer((_req, res) => (hits.push(Date.now()), res.end('ok')));
    await new Promise<void>((r) => target.listen(0, '127.0.0.1', r));
    try {
      const url = `http://127.0.0.1:${(target.address() as { port: number }).port}/health`;
      const created = await fetch(`${live[0]!.url}/v1/projects/${keys.project}/monitors`, {
        method: 'POST',
        headers: { 'content-type': 'application/json', 'x-service-key': keys.admin },
        body: JSON.stringify({ name: 'failover', kind: 'http', url, interval_s: 30, timeout_ms: 2000 }),
      });
      expect(created.status, await created.clone().text()).toBe(201);
      const monitorId = ((await created.json()) as { id: string }).id;
      const waitForHit = async (after: number, ms: number) => {
        const deadline = Date.now() + ms;
        while (!hits.some((t) => t > after) && Date.now() < deadline) await new Promise((r) => setTimeout(r, 100));
        return hits.find((t) => t > after);
      };
      expect(await waitForHit(0, 10_000), 'the first check (due at once)').toBeDefined();
      await new Promise((r) => setTimeout(r, 1000)); // let the leader commit the check it ran

      // The leader lease names the process that holds it.
      const leaderPid = async () => {
        const sql = "SELECT owner FROM scheduler_leader WHERE name = 'main'";
        let row: { owner: string } | undefined;
        if (pgDatabase) row = (await pgQuery(pgDatabase.url, sql))[0] as { owner: string } | undefined;
        else {
          const db = new Database(join(dir, 'shared.db'), { readonly: true, fileMustExist: true });
          try {
            row = db.prepare(sql).get() as { owner: string } | undefined;
          } finally {
            db.close();
          }
        }
        return row ? Number(row.owner.split(':')[1]) : null;
      };
      const leaderNow = await leaderPid();
      const leader = live.find((p) => p.child.pid === leaderNow);
      expect(leader, 'one of the live processes leads').toBeDefined();
      const survivor = live.find((p) => p !== leader)!;
      const exited = new Promise((r) => leader!.child.once('exit', r));
      leader!.child.kill('SIGKILL');
      await exited;
      const killedAt = Date.now();

      // The next check is due 30 s after the first; only the survivor can run it.
      const next = await waitForHit(killedAt, 45_000);
      expect(next, 'a check after the leader died').toBeDefined();
      expect(await leaderPid()).toBe(survivor.child.pid);
      // The target saw the request; the survivor records the result once the check completes.
      const upResults = async () => {
        const results = await fetch(`${survivor.url}/v1/projects/${keys.project}/monitors/${monitorId}/results`, { headers: { 'x-service-key': keys.admin } });
        expect(results.status).toBe(200);
        return ((await results.json()) as { data: { status: string }[] }).data.filter((r) => r.status === 'up').length;
      };
      let up = await upResults();
      for (const until = Date.now() + 10_000; up < 2 && Date.now() < until; up = await upResults()) await new Promise((r) => setTimeout(r, 200));
      expect(up).toBeGreaterThanOrEqual(2);
    } finally {
      await new Promise((r) => target.close(r));
    }
  }, 90_000);
});
