import { Worker } from 'node:worker_threads';
import { performance } from 'node:perf_hooks';
import type {
  CallRecord,
  ExecuteError,
  ExecuteOptions,
  ExecuteResult,
  Executor,
  HostCall,
  HostCallError,
  HostCallResult,
} from './executor.js';
import { SandboxErrorName } from './executor.js';
import { formatBytes, formatSeconds, resolveLimits, type SandboxLimits } from './limits.js';

/**
 * Native stack of each worker thread. QuickJS' own stack check (SandboxLimits.stackBytes, at most
 * 2 MiB) must fire before V8's native stack limit, otherwise deep recursion traps inside the
 * WebAssembly module instead of raising a catchable "stack overflow" in the script.
 */
const WORKER_STACK_SIZE_MB = 32;
/** V8 heap of a worker (QuickJS' wasm memory is separate and bounded by memoryBytes). */
const WORKER_HEAP_MB = 256;
/**
 * WebAssembly heap of a worker = memoryBytes + this overhead (QuickJS' static data, C stack, the
 * runtime's own structures). This cap is what actually bounds a script's memory; see worker.mjs.
 */
const WASM_OVERHEAD_BYTES = 32 * 1024 * 1024;
/** Extra time allowed for a cold worker to load QuickJS before the script's wall clock starts. */
const STARTUP_ALLOWANCE_MS = 10_000;

export interface QuickJsExecutorOptions {
  /**
   * How long after `wallClockMs` the host waits before terminating the worker thread. The
   * in-QuickJS interrupt deadline (at exactly `wallClockMs`) normally stops a runaway script first
   * and the worker is reused; the host timer is the backstop for anything the interrupt cannot
   * reach. Default 500.
   */
  killGraceMs?: number;
  /** Recycle a worker after this many executions (bounds wasm heap fragmentation). Default 500. */
  maxRunsPerWorker?: number;
  /**
   * Testing only: do not arm the interrupt deadline inside QuickJS, so that only the host timer can
   * stop a CPU-bound script (exercises the terminate-and-replace path).
   */
  disableGuestInterrupt?: boolean;
  /** Worker entry point (tests use a wrapper to simulate crashes). Default: ./worker.mjs next to this file. */
  workerUrl?: URL;
}

export interface SandboxPoolStats {
  /** Live worker threads. */
  workers: number;
  /** Workers currently running a script. */
  busy: number;
  /** Executions waiting for a worker. */
  queued: number;
  /** Worker threads started since creation. */
  started: number;
  /** Workers terminated because a script timed out or the worker crashed. */
  replaced: number;
  /** Finished executions. */
  completed: number;
}

export interface QuickJsExecutor extends Executor {
  stats(): SandboxPoolStats;
}

interface Job {
  runId: number;
  code: string;
  operations: string[];
  allowed: Set<string>;
  limits: SandboxLimits;
  host: HostCall;
  resolve: (result: ExecuteResult) => void;
  calls: CallRecord[];
  logs: string[];
  callCount: number;
  timer: ReturnType<typeof setTimeout> | null;
  done: boolean;
}

interface Slot {
  worker: Worker;
  job: Job | null;
  runs: number;
  retired: boolean;
  lastError: unknown;
}

type WorkerMessage =
  | { type: 'ready' }
  | { type: 'started'; runId: number }
  | { type: 'call'; runId: number; id: number; operationId: string; input: string; logs?: string[] }
  | {
      type: 'done';
      runId: number;
      result: unknown;
      error: ExecuteError | null;
      resultTruncated?: { size: string; limit: number } | null;
      logs?: string[];
      fatal?: boolean;
    };

function timeoutError(limits: SandboxLimits): ExecuteError {
  return {
    name: SandboxErrorName.Timeout,
    message:
      `The script exceeded the ${formatSeconds(limits.wallClockMs)} limit and was stopped. ` +
      'Avoid busy loops, make fewer or smaller API calls, or split the work across several executes.',
  };
}

function errorResult(error: ExecuteError, calls: CallRecord[] = [], logs: string[] = []): ExecuteResult {
  return { result: null, logs, calls, error };
}

function roundMs(ms: number): number {
  return Math.round(ms * 10) / 10;
}

/** Encode a HostCallResult as the JSON text the guest parses; never throws. */
function encodeHostResult(
  res: HostCallResult | undefined,
  operationId: string,
  limits: SandboxLimits,
): { json: string; status: number } {
  const fail = (status: number, code: string, message: string, param?: string) => ({
    json: JSON.stringify({ ok: false, error: param === undefined ? { status, code, message } : { status, code, message, param } }),
    status,
  });
  if (!res || typeof res !== 'object') {
    return fail(500, 'internal_error', `The ${operationId} operation returned an invalid response.`);
  }
  if (res.ok === true) {
    let json: string | undefined;
    try {
      json = JSON.stringify({ ok: true, value: res.value === undefined ? null : res.value });
    } catch {
      json = undefined;
    }
    if (typeof json !== 'string') {
      return fail(500, 'internal_error', `The ${operationId} operation returned a response that is not JSON.`);
    }
    const maxChars = Math.floor(limits.memoryBytes / 4);
    if (json.length > maxChars) {
      return fail(
        413,
        'response_too_large',
        `The ${operationId} response is ${json.length} characters of JSON, more than the sandbox can hold ` +
          `(${maxChars}). Narrow the query with filters or a smaller limit.`,
      );
    }
    return { json, status: 200 };
  }
  const e: Partial<HostCallError> = (res as { error?: Partial<HostCallError> }).error ?? {};
  const status = typeof e.status === 'number' && Number.isFinite(e.status) ? Math.trunc(e.status) : 500;
  const code = typeof e.code === 'string' ? e.code : 'error';
  const message = typeof e.message === 'string' ? e.message : `The ${operationId} operation failed.`;
  return fail(status, code, message, typeof e.param === 'string' ? e.param : undefined);
}

/**
 * A pool of worker threads, each running scripts in a fresh QuickJS runtime per execution.
 * `limits` are the defaults for every execution (per-execute `limits` override them) and fix the
 * pool size.
 */
export function createQuickJsExecutor(
  limits?: Partial<SandboxLimits>,
  options: QuickJsExecutorOptions = {},
): QuickJsExecutor {
  const baseLimits = resolveLimits(limits);
  const poolSize = baseLimits.poolSize;
  const killGraceMs = Math.max(0, options.killGraceMs ?? 500);
  const maxRunsPerWorker = Math.max(1, options.maxRunsPerWorker ?? 500);
  const guestInterrupt = !options.disableGuestInterrupt;
  const workerUrl = options.workerUrl ?? new URL('./worker.mjs', import.meta.url);

  const slots: Slot[] = [];
  const queue: Job[] = [];
  const exiting = new Set<Promise<unknown>>();
  let closed = false;
  let nextRunId = 0;
  let started = 0;
  let replaced = 0;
  let completed = 0;

  function finish(
    job: Job,
    outcome: { result?: unknown; error: ExecuteError | null; resultTruncated?: { size: string; limit: number } | null; logs?: string[] },
  ): void {
    if (job.done) return;
    job.done = true;
    if (job.timer) clearTimeout(job.timer);
    job.timer = null;
    if (outcome.logs) job.logs.push(...outcome.logs);
    completed++;
    job.resolve({
      result: outcome.error ? null : outcome.result === undefined ? null : outcome.result,
      logs: job.logs,
      calls: job.calls,
      error: outcome.error,
      resultTruncated: outcome.error ? null : (outcome.resultTruncated ?? null),
    });
  }

  function retire(slot: Slot, countAsReplaced: boolean): void {
    if (slot.retired) return;
    slot.retired = true;
    if (countAsReplaced) replaced++;
    const index = slots.indexOf(slot);
    if (index >= 0) slots.splice(index, 1);
    const p = slot.worker.terminate().catch(() => undefined);
    exiting.add(p);
    void p.finally(() => exiting.delete(p));
  }

  function spawn(): Slot {
    const worker = new Worker(workerUrl, {
      resourceLimits: { stackSizeMb: WORKER_STACK_SIZE_MB, maxOldGenerationSizeMb: WORKER_HEAP_MB },
      workerData: { wasmMemoryBytes: baseLimits.memoryBytes + WASM_OVERHEAD_BYTES },
    });
    started++;
    const slot: Slot = { worker, job: null, runs: 0, retired: false, lastError: undefined };
    worker.on('message', (msg: WorkerMessage) => onMessage(slot, msg));
    worker.on('error', (err) => {
      slot.lastError = err;
    });
    worker.on('exit', () => onExit(slot));
    worker.unref();
    slots.push(slot);
    return slot;
  }

  function onExit(slot: Slot): void {
    const job = slot.job;
    slot.job = null;
    const unexpected = !slot.retired;
    if (unexpected) {
      slot.retired = true;
      const index = slots.indexOf(slot);
      if (index >= 0) slots.splice(index, 1);
      if (!closed) replaced++;
    }
    if (job && !job.done) {
      const err = slot.lastError as { code?: string; message?: string } | undefined;
      if (err?.code === 'ERR_WORKER_OUT_OF_MEMORY') {
        finish(job, {
          error: {
            name: SandboxErrorName.Memory,
            message:
              `The script exhausted the sandbox worker's memory (limit ${formatBytes(job.limits.memoryBytes)}). ` +
              'Work with less data at once.',
          },
        });
      } else {
        finish(job, {
          error: {
            name: SandboxErrorName.Crash,
            message:
              'The sandbox worker crashed while running the script' +
              (err?.message ? ` (${String(err.message).slice(0, 300)})` : '') +
              '. The worker was replaced; try again with a simpler script.',
          },
        });
      }
    }
    pump();
  }

  function onMessage(slot: Slot, msg: WorkerMessage): void {
    if (!msg || typeof msg !== 'object') return;
    if (msg.type === 'started') {
      const job = slot.job;
      if (job && !job.done && job.runId === msg.runId) armKillTimer(slot, job, job.limits.wallClockMs + killGraceMs);
    } else if (msg.type === 'call') {
      const job = slot.job;
      if (!job || job.done || job.runId !== msg.runId) return;
      if (Array.isArray(msg.logs) && msg.logs.length) job.logs.push(...msg.logs);
      void handleCall(slot, job, msg);
    } else if (msg.type === 'done') {
      const job = slot.job;
      if (!job || job.runId !== msg.runId) return;
      slot.job = null;
      slot.runs++;
      finish(job, { result: msg.result, error: msg.error ?? null, resultTruncated: msg.resultTruncated, logs: msg.logs });
      if (msg.fatal) retire(slot, true);
      else if (slot.runs >= maxRunsPerWorker) retire(slot, false);
      else slot.worker.unref();
      pump();
    }
  }

  async function handleCall(
    slot: Slot,
    job: Job,
    msg: { id: number; operationId: string; input: string },
  ): Promise<void> {
    const operationId = String(msg.operationId);
    let encoded: { json: string; status: number };
    if (!job.allowed.has(operationId)) {
      // The worker already filters these; never forward an operation the caller did not allow.
      encoded = encodeHostResult(
        {
          ok: false,
          error: {
            status: 404,
            code: 'unknown_operation',
            message: `Unknown operation "${operationId.slice(0, 200)}". Use the search tool to find the right operationId.`,
          },
        },
        operationId,
        job.limits,
      );
    } else if (job.callCount >= job.limits.maxCalls) {
      encoded = encodeHostResult(
        {
          ok: false,
          error: {
            status: 429,
            code: 'call_limit_exceeded',
            message: `Call limit exceeded: a script may make at most ${job.limits.maxCalls} API calls per execute.`,
          },
        },
        operationId,
        job.limits,
      );
    } else {
      job.callCount++;
      let input: unknown = null;
      try {
        input = typeof msg.input === 'string' ? JSON.parse(msg.input) : null;
      } catch {
        input = null;
      }
      const startedAt = performance.now();
      let res: HostCallResult | undefined;
      try {
        res = await job.host(operationId, input);
      } catch {
        res = {
          ok: false,
          error: { status: 500, code: 'internal_error', message: `The ${operationId} operation failed unexpectedly.` },
        };
      }
      encoded = encodeHostResult(res, operationId, job.limits);
      if (!job.done) job.calls.push({ operationId, status: encoded.status, ms: roundMs(performance.now() - startedAt) });
    }
    if (job.done || slot.job !== job || slot.retired) return;
    slot.worker.postMessage({ type: 'callResult', runId: job.runId, id: msg.id, json: encoded.json });
  }

  /** Host-side backstop: if the worker has not answered in time, kill it and fail the job. */
  function armKillTimer(slot: Slot, job: Job, ms: number): void {
    if (job.timer) clearTimeout(job.timer);
    job.timer = setTimeout(() => {
      if (job.done) return;
      // The worker did not answer in time: it may be stuck in native code. Kill and replace it.
      finish(job, { error: timeoutError(job.limits) });
      if (slot.job === job) slot.job = null;
      retire(slot, true);
      pump();
    }, ms);
  }

  function dispatch(slot: Slot, job: Job): void {
    slot.job = job;
    slot.worker.ref();
    // Re-armed with the real budget when the worker reports that the script started.
    armKillTimer(slot, job, job.limits.wallClockMs + killGraceMs + STARTUP_ALLOWANCE_MS);
    slot.worker.postMessage({
      type: 'run',
      runId: job.runId,
      code: job.code,
      operations: job.operations,
      limits: job.limits,
      guestInterrupt,
    });
  }

  function pump(): void {
    if (closed) return;
    while (queue.length > 0) {
      let slot = slots.find((s) => !s.retired && s.job === null);
      if (!slot) {
        if (slots.length >= poolSize) return;
        try {
          slot = spawn();
        } catch (err) {
          const job = queue.shift()!;
          finish(job, {
            error: {
              name: SandboxErrorName.Internal,
              message: `Could not start a sandbox worker: ${(err as Error)?.message ?? String(err)}`,
            },
          });
          continue;
        }
      }
      dispatch(slot, queue.shift()!);
    }
  }

  function execute(opts: ExecuteOptions, host: HostCall): Promise<ExecuteResult> {
    try {
      if (closed) {
        return Promise.resolve(
          errorResult({ name: SandboxErrorName.Closed, message: 'The sandbox executor has been closed.' }),
        );
      }
      if (!opts || typeof opts.code !== 'string') {
        return Promise.resolve(errorResult({ name: 'TypeError', message: 'execute: `code` must be a string.' }));
      }
      if (typeof host !== 'function') {
        return Promise.resolve(errorResult({ name: 'TypeError', message: 'execute: a HostCall function is required.' }));
      }
      const operations = Array.isArray(opts.operations)
        ? opts.operations.filter((op): op is string => typeof op === 'string')
        : [];
      const jobLimits = resolveLimits(baseLimits, opts.limits);
      // The worker's heap is sized for the executor's memoryBytes; an execution cannot ask for more.
      jobLimits.memoryBytes = Math.min(jobLimits.memoryBytes, baseLimits.memoryBytes);
      return new Promise<ExecuteResult>((resolve) => {
        queue.push({
          runId: ++nextRunId,
          code: opts.code,
          operations,
          allowed: new Set(operations),
          limits: jobLimits,
          host,
          resolve,
          calls: [],
          logs: [],
          callCount: 0,
          timer: null,
          done: false,
        });
        pump();
      });
    } catch (err) {
      return Promise.resolve(
        errorResult({
          name: SandboxErrorName.Internal,
          message: `The sandbox failed to start the script: ${(err as Error)?.message ?? String(err)}`,
        }),
      );
    }
  }

  async function close(): Promise<void> {
    if (closed) {
      await Promise.all([...exiting]);
      return;
    }
    closed = true;
    const closedError = { name: SandboxErrorName.Closed, message: 'The sandbox executor was closed before the script finished.' };
    for (const job of queue.splice(0)) finish(job, { error: closedError });
    for (const slot of [...slots]) {
      if (slot.job) finish(slot.job, { error: closedError });
      slot.job = null;
      retire(slot, false);
    }
    await Promise.all([...exiting]);
  }

  function stats(): SandboxPoolStats {
    return {
      workers: slots.length,
      busy: slots.filter((s) => s.job !== null).length,
      queued: queue.length,
      started,
      replaced,
      completed,
    };
  }

  return { execute, close, stats };
}
