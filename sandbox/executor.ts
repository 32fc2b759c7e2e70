import type { SandboxLimits } from './limits.js';

export type { SandboxLimits } from './limits.js';

export interface HostCallError {
  status: number;
  code: string;
  message: string;
  param?: string;
}

export type HostCallResult = { ok: true; value: unknown } | { ok: false; error: HostCallError };

/** What the executor tells a host call besides its input. */
export interface HostCallContext {
  /**
   * Aborted when nobody will read the answer: the execute's wall clock ran out, or it ended
   * (finished, failed, cancelled) while the call was in flight. A call that works in slices or
   * waits on I/O stops at the next check; one that has not started yet is not started.
   */
  signal: AbortSignal;
}

/** Runs outside the sandbox, in the main thread, with the caller's credentials (the sandbox never sees them). */
export type HostCall = (operationId: string, input: unknown, ctx?: HostCallContext) => Promise<HostCallResult>;

export interface ExecuteOptions {
  /** Body of an async function (may use `await` and `return`). */
  code: string;
  /** operationIds the script may call, e.g. 'errors.list'; builds api.errors.list */
  operations: string[];
  limits?: Partial<SandboxLimits>;
  /**
   * Who the execute runs for (one key per credential). Executes of one credential share its fair
   * share of the pool: at most `perCredential` at once, and waiting executes are served
   * round-robin across credentials. Without it, the execute is anonymous: no per-credential limit
   * (callers that run their own scripts, e.g. tests and benches).
   */
  credential?: string;
  /**
   * Cancels the execute: a waiting one never starts; a running one stops at once (its worker is
   * terminated and replaced, so even a script that never yields ends), its pending calls get no
   * answer and no later call starts. The result's error is a `CancelledError`.
   */
  signal?: AbortSignal;
}

export interface CallRecord {
  operationId: string;
  /** 200 for a successful call, otherwise the error status the host returned. */
  status: number;
  ms: number;
}

export interface ExecuteError {
  name: string;
  message: string;
  status?: number;
  code?: string;
  /** Seconds to wait before trying again (429 responses). */
  retry_after?: number;
}

export interface ExecuteResult {
  /** The JSON value the script resolved with (undefined becomes null); a truncated string when too large. */
  result: unknown;
  logs: string[];
  calls: CallRecord[];
  error: ExecuteError | null;
  /**
   * Set when `result` was cut to the result budget: the original size, the limit in bytes and the
   * outline of the value (keys, array lengths, types).
   */
  resultTruncated?: { size: string; limit: number; shape?: string | null } | null;
  /** The script finished without returning a value (`undefined`, reported as null). */
  resultUndefined?: boolean;
  /** api calls the script made but never awaited before it finished; they were not run. */
  unsentCalls?: string[];
  /** Time the execute waited for a worker before the script started (part of its wall clock). */
  queuedMs?: number;
  /** Time from the execute's submission to its result. */
  elapsedMs?: number;
}

export interface Executor {
  /** Never throws: every failure is reported in `error`. */
  execute(opts: ExecuteOptions, host: HostCall): Promise<ExecuteResult>;
  close(): Promise<void>;
}

/**
 * Error names produced by the sandbox itself (in addition to whatever the script throws,
 * e.g. TypeError, SyntaxError, ReferenceError, or 'ApiError' for operation failures).
 */
export const SandboxErrorName = {
  Timeout: 'TimeoutError',
  Memory: 'MemoryLimitError',
  StackOverflow: 'StackOverflowError',
  Api: 'ApiError',
  Crash: 'SandboxCrashError',
  Closed: 'SandboxClosedError',
  Internal: 'SandboxInternalError',
  Busy: 'ConcurrencyLimitError',
  Cancelled: 'CancelledError',
} as const;
