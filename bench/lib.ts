/** Small helpers the benchmark scripts share. */
import { createServer } from 'node:net';

/** A free TCP port on loopback. */
export const freePort = () =>
  new Promise<number>((resolve) => {
    const s = createServer();
    s.listen(0, '127.0.0.1', () => {
      const p = (s.address() as { port: number }).port;
      s.close(() => resolve(p));
    });
  });

/** Deterministic PRNG (mulberry32) so every run seeds the same shape. */
export function rng(seed: number) {
  let a = seed >>> 0;
  return () => {
    a = (a + 0x6d2b79f5) >>> 0;
    let t = a;
    t = Math.imul(t ^ (t >>> 15), t | 1);
    t ^= t + Math.imul(t ^ (t >>> 7), t | 61);
    return ((t ^ (t >>> 14)) >>> 0) / 4294967296;
  };
}

type AnyValue = { stringValue: string } | { intValue: number } | { doubleValue: number } | { boolValue: boolean };

/** An OTLP KeyValue for protobufjs `fromObject`. */
export const attr = (key: string, v: string | number | boolean) => ({
  key,
  value: (typeof v === 'string' ? { stringValue: v } : typeof v === 'boolean' ? { boolValue: v } : Number.isInteger(v) ? { intValue: v } : { doubleValue: v }) as AnyValue,
});

export interface BenchServer {
  child: import('node:child_process').ChildProcess;
  port: number;
  /** The keys `start` printed when it set up an empty database; null when the database was reused. */
  keys: { project: string; ingest: string; admin: string } | null;
}

/**
 * `sightline start` in a child process on a free port (rate limit out of the way), waiting until it
 * answers. On an empty database the printed project and keys are parsed from its banner.
 */
export async function startBenchServer(dbFile: string, env: Record<string, string> = {}): Promise<BenchServer> {
  const { spawn } = await import('node:child_process');
  const { join } = await import('node:path');
  const port = await freePort();
  const child = spawn(process.execPath, [join(import.meta.dirname, '..', 'bin/sightline.mjs'), 'start'], {
    env: { ...process.env, SIGHTLINE_DB: dbFile, PORT: String(port), HOST: '127.0.0.1', LOG_LEVEL: 'warn', SIGHTLINE_RATE_LIMIT: '100000000', ...env },
    stdio: ['ignore', 'pipe', 'inherit'],
  });
  let out = '';
  child.stdout!.on('data', (d) => (out += d));
  for (;;) {
    if (child.exitCode !== null) throw new Error(`server exited: ${out}`);
    try {
      if ((await fetch(`http://127.0.0.1:${port}/`)).ok) break;
    } catch {
      /* not listening yet */
    }
    await new Promise((r) => setTimeout(r, 50));
  }
  const admin = /admin key\s+(sl_[0-9a-f]+)/.exec(out)?.[1];
  const keys = admin
    ? { admin, ingest: /ingest key\s+(sl_[0-9a-f]+)/.exec(out)![1]!, project: /project\s+(\d+)/.exec(out)![1]! }
    : null;
  return { child, port, keys };
}
