/**
 * Lower the OS scheduling priority of the calling thread (issue 10: attack-side work must not take
 * CPU from the main thread). On Linux `nice` is per thread: a worker thread reads its own thread id
 * from /proc/thread-self/stat and raises its niceness, so the kernel gives the event loop the core
 * first when both want it. Elsewhere, or when not allowed, nothing happens. A thread can only be
 * made nicer, never less nice again (that needs privilege).
 *
 * The same logic lives in plain JavaScript in sandbox/worker.mjs and src/domain/identity/scrypt-worker.mjs
 * (worker entry points that cannot import TypeScript), and sandbox/quickjs-executor.ts (sandbox/ imports only sandbox/).
 */
import { readFileSync } from 'node:fs';
import { setPriority } from 'node:os';

/**
 * Niceness of threads that run work a caller controls (sandbox scripts, ingest decoding, password
 * hashing): SIGHTLINE_WORKER_NICE, default 10; 0 keeps them at the main thread's priority. Under
 * vitest the default is 0: on a CI machine shared with other jobs, a niced worker waits behind
 * every other process, which tests would read as timeouts.
 */
export function backgroundNice(env: NodeJS.ProcessEnv = process.env): number {
  const raw = env.SIGHTLINE_WORKER_NICE;
  const n = raw === undefined || raw === '' ? (env.VITEST ? 0 : 10) : Number(raw);
  return Number.isFinite(n) ? Math.max(0, Math.min(19, Math.floor(n))) : 10;
}

export function lowerThreadPriority(nice: number = backgroundNice()): boolean {
  if (process.platform !== 'linux' || nice <= 0) return false;
  try {
    const tid = Number(readFileSync('/proc/thread-self/stat', 'utf8').split(' ', 1)[0]);
    if (!Number.isInteger(tid) || tid <= 0 || tid === process.pid) return false; // never the main thread
    setPriority(tid, nice);
    return true;
  } catch {
    return false;
  }
}
