/**
 * Resource limits for one sandboxed execution (and the size of the worker pool).
 *
 * Every limit is enforced independently of the script: memory and stack by the
 * QuickJS runtime, time both by a QuickJS interrupt deadline and by a host-side
 * timer that terminates the worker thread, call counts by the worker that owns
 * the host bridge, and output sizes by the worker before anything reaches the
 * main thread.
 */
export interface SandboxLimits {
  /** QuickJS heap limit for one execution. */
  memoryBytes: number;
  /** QuickJS stack limit (unbounded recursion becomes a catchable "stack overflow"). */
  stackBytes: number;
  /** Wall-clock budget for one execution, including time spent waiting on host calls. */
  wallClockMs: number;
  /** Maximum number of host (API) calls one execution may make. */
  maxCalls: number;
  /** Maximum size of the JSON-serialized result; larger results are truncated to a string. */
  maxResultBytes: number;
  /** Maximum total size of captured console output. */
  maxLogBytes: number;
  /** Number of worker threads (only meaningful for the executor, ignored per execution). */
  poolSize: number;
  /**
   * Executes one credential may have running or waiting at once (executor-wide, ignored per
   * execution); more are refused with 429 and a Retry-After.
   */
  perCredential: number;
}

export const KIB = 1024;
export const MIB = 1024 * 1024;

export const DEFAULT_LIMITS: Readonly<SandboxLimits> = Object.freeze({
  memoryBytes: 64 * MIB,
  stackBytes: 512 * KIB,
  wallClockMs: 10_000,
  maxCalls: 100,
  maxResultBytes: 256 * KIB,
  maxLogBytes: 256 * KIB,
  poolSize: 2,
  perCredential: 2,
});

/** Lower bounds that keep the sandbox functional (QuickJS needs some heap and stack to even start). */
const MINIMUMS: Readonly<SandboxLimits> = Object.freeze({
  memoryBytes: 2 * MIB,
  stackBytes: 32 * KIB,
  wallClockMs: 10,
  maxCalls: 0,
  maxResultBytes: 1 * KIB,
  maxLogBytes: 1 * KIB,
  poolSize: 1,
  perCredential: 1,
});

/**
 * Upper bounds. The stack limit must stay well below both the emscripten C stack of the QuickJS
 * build (5 MiB) and what the worker thread's native stack allows (see WORKER_STACK_SIZE_MB in
 * quickjs-executor.ts): QuickJS' own check has to trigger first, otherwise the WebAssembly call
 * stack overflows instead of raising a script-level error.
 */
const MAXIMUMS: Readonly<SandboxLimits> = Object.freeze({
  memoryBytes: 1024 * MIB,
  stackBytes: 1 * MIB,
  wallClockMs: 10 * 60_000,
  maxCalls: 100_000,
  maxResultBytes: 64 * MIB,
  maxLogBytes: 64 * MIB,
  poolSize: 64,
  perCredential: 64,
});

const KEYS = Object.keys(DEFAULT_LIMITS) as Array<keyof SandboxLimits>;

/**
 * Merge partial limit objects over the defaults, left to right. Values that are not finite
 * numbers are ignored; the rest are rounded down and clamped to sane bounds.
 */
export function resolveLimits(...layers: Array<Partial<SandboxLimits> | undefined | null>): SandboxLimits {
  const out: SandboxLimits = { ...DEFAULT_LIMITS };
  for (const layer of layers) {
    if (!layer) continue;
    for (const key of KEYS) {
      const value = layer[key];
      if (typeof value !== 'number' || !Number.isFinite(value)) continue;
      out[key] = Math.min(MAXIMUMS[key], Math.max(MINIMUMS[key], Math.floor(value)));
    }
  }
  return out;
}

/** "10 s", "1.5 s", "0.25 s". */
export function formatSeconds(ms: number): string {
  return `${Number((ms / 1000).toFixed(2))} s`;
}

/** "64 MiB", "512 KiB", "1000 bytes". */
export function formatBytes(bytes: number): string {
  if (bytes >= MIB && bytes % MIB === 0) return `${bytes / MIB} MiB`;
  if (bytes >= KIB && bytes % KIB === 0) return `${bytes / KIB} KiB`;
  return `${bytes} bytes`;
}
