/**
 * Sightline processes as a user runs them (`bin/sightline.mjs start`), for the tests of several
 * processes (test/storage/clickhouse-multiprocess.test.ts, test/deploy/proxy.test.ts).
 */
import { spawn, type ChildProcess } from 'node:child_process';
import { randomBytes } from 'node:crypto';
import { join } from 'node:path';
import { freePort } from './clickhouse.js';

export { freePort };

const ROOT = join(import.meta.dirname, '..', '..');

export interface Proc {
  child: ChildProcess;
  url: string;
  port: number;
  /** What it printed (stdout and stderr): the first start prints the keys. */
  out: string;
}

/** Starts a process with these variables on a free port; resolves once it answers /readyz. */
export async function startProcess(env: Record<string, string>): Promise<Proc> {
  const port = await freePort();
  const child = spawn(process.execPath, [join(ROOT, 'bin/sightline.mjs'), 'start'], {
    env: { ...process.env, ...env, PORT: String(port), HOST: '127.0.0.1', LOG_LEVEL: 'warn', SIGHTLINE_RATE_LIMIT: '1000000', SIGHTLINE_TEST_CLICKHOUSE: '' },
    stdio: ['ignore', 'pipe', 'pipe'],
  });
  const p: Proc = { child, url: `http://127.0.0.1:${port}`, port, out: '' };
  child.stdout!.on('data', (d) => (p.out += d));
  child.stderr!.on('data', (d) => (p.out += d));
  const deadline = Date.now() + 45_000;
  for (;;) {
    if (child.exitCode !== null) throw new Error(`sightline exited: ${p.out}`);
    try {
      if ((await fetch(`${p.url}/readyz`)).ok) return p;
    } catch {
      /* not listening yet */
    }
    if (Date.now() > deadline) throw new Error(`sightline did not start: ${p.out}`);
    await new Promise((r) => setTimeout(r, 100));
  }
}

/** The keys and project the first start printed. */
export function printedKeys(out: string): { admin: string; ingest: string; project: string } {
  const admin = /admin key\s+(sl_[0-9a-f]+)/.exec(out)?.[1];
  const ingest = /ingest key\s+(sl_[0-9a-f]+)/.exec(out)?.[1];
  const project = /project\s+(\d+)/.exec(out)?.[1];
  if (!admin || !ingest || !project) throw new Error(`no keys printed: ${out}`);
  return { admin, ingest, project };
}

/** Stops the processes still running (SIGTERM) and waits for them. */
export async function stopProcesses(procs: readonly Proc[]): Promise<void> {
  const running = procs.filter((p) => p.child.exitCode === null && p.child.signalCode === null);
  await Promise.all(running.map((p) => new Promise((r) => (p.child.once('exit', r), p.child.kill('SIGTERM')))));
}

/** One OTLP/JSON export of a root span in a new trace; resolves with the trace id once acknowledged (200), else null. */
export async function sendTrace(url: string, key: string, service = 'multi', name = 'GET /x'): Promise<string | null> {
  const traceId = randomBytes(16).toString('hex');
  const now = BigInt(Date.now()) * 1_000_000n;
  const body = {
    resourceSpans: [{
      resource: { attributes: [{ key: 'service.name', value: { stringValue: service } }] },
      scopeSpans: [{ spans: [{ traceId, spanId: randomBytes(8).toString('hex'), name, kind: 2, startTimeUnixNano: String(now - 5_000_000n), endTimeUnixNano: String(now) }] }],
    }],
  };
  try {
    const r = await fetch(`${url}/ingest/v1/traces`, { method: 'POST', headers: { 'content-type': 'application/json', 'x-service-key': key }, body: JSON.stringify(body) });
    await r.arrayBuffer();
    return r.status === 200 ? traceId : null;
  } catch {
    return null; // the process was killed mid-request: not acknowledged
  }
}
