import { readFile } from 'node:fs/promises';
import { createRequire } from 'node:module';
import { MessageChannel, type MessagePort, Worker } from 'node:worker_threads';
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
/** Idle workers kept booted while credentials' executes run (within poolSize + burstWorkers). */
const SPARE_WORKERS = 2;
/**
 * Niceness of sandbox worker threads (QuickJsExecutorOptions.nice): SIGHTLINE_WORKER_NICE, default
 * 10 (0 under vitest); the same rule as src/domain/thread-priority.ts backgroundNice().
 */
function defaultWorkerNice(env: NodeJS.ProcessEnv = process.env): number {
  const raw = env.SIGHTLINE_WORKER_NICE;
  const n = raw === undefined || raw === '' ? (env.VITEST ? 0 : 10) : Number(raw);
  return Number.isFinite(n) ? n : 10;
}
/**
 * Fair share by CPU: each credential is charged the CPU time its scripts used (reported by the
 * worker; the run's wall time while it is still running), decaying with this half-life. A waiting
 * credential that used less recently is served first.
 */
const CPU_HALF_LIFE_MS = 10_000;
/**
 * Usage differences under this are ties (served in turn, least recently served first): short
 * scripts of every credential alternate as before, only real CPU hogs go to the back.
 */
const CPU_QUANTUM_MS = 25;
/**
 * Data region of each worker's shared host-call channel (see worker.mjs): a batch of calls, or its
 * answers, up to this size skips the message ports; larger ones travel as messages.
 */
const CHANNEL_BYTES = 1024 * 1024;
/** Int32 slots at the start of the channel buffer (worker.mjs has the same). */
const CH_REQ = 0;
const CH_REPLY = 1;
const CH_LEN = 2;
const CH_KIND = 3;
const CH_HEADER_BYTES = 16;
/** Atomics.waitAsync (Node 16+; ES2024, newer than the lib this project compiles against). */
const waitAsync = (Atomics as unknown as {
  waitAsync(ta: Int32Array, index: number, value: number): { async: false; value: string } | { async: true; value: Promise<string> };
}).waitAsync;
/**
 * A worker whose script was demoted to nice 19 is kept for its credential's next scripts (a "hog
 * lane"), at most this long idle. Booting a replacement costs hundreds of ms of CPU at the pool's
 * priority, which is what another tenant's busy loops used to cost everyone else (issue 10).
 */
const LANE_IDLE_MS = 2_000;
/**
 * A credential whose scripts used this much CPU recently (decayed, CPU_HALF_LIFE_MS: about 7% of a
 * core kept up, or a one-second burst) is heavy: its scripts run on workers lowered to the pool's
 * niceness (`nice`), kept for that credential only. Others' scripts run on workers at the main
 * thread's priority, so a light tenant's execute does not wait for a core behind every busy thread
 * on the machine (issue 10: at nice 10 the victim's `return 1` waited behind the attack's
 * decoding and HTTP work, and behind any other process).
 */
const HEAVY_CPU_MS = 1_000;
/** Extra time allowed for a cold worker to load QuickJS before the script's wall clock starts. */
const STARTUP_ALLOWANCE_MS = 10_000;

/**
 * The QuickJS WebAssembly module, compiled once per process (off the main thread) and handed to
 * every worker, so a new worker instantiates it instead of compiling it again.
 */
let sharedModule: Promise<unknown> | null = null;
let compiledModule: unknown = null;
function compileQuickJs(): void {
  sharedModule ??= (async () => {
    try {
      const file = createRequire(import.meta.url).resolve('@jitl/quickjs-wasmfile-release-sync/wasm');
      const wasm = (globalThis as unknown as { WebAssembly: { compile(bytes: Uint8Array): Promise<unknown> } }).WebAssembly;
      compiledModule = await wasm.compile(await readFile(file));
      return compiledModule;
    } catch {
      return null; // each worker compiles its own
    }
  })();
}

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
  /**
   * Workers started beyond `poolSize` for credentials that have nothing running while others fill
   * the pool (so one tenant's busy loops never make another tenant wait for a whole wall clock).
   * They stop after `burstIdleMs` without work. Default: poolSize.
   */
  burstWorkers?: number;
  /** Default 10000. */
  burstIdleMs?: number;
  /**
   * OS niceness of the workers that run heavy credentials' scripts (Linux, per thread; 0 = the
   * main thread's priority; see `heavyCpuMs`). Those scripts then get only the CPU the event loop
   * does not need, so a tenant's busy loops do not slow other tenants' requests; light credentials'
   * scripts run at the main thread's priority. Default SIGHTLINE_WORKER_NICE, else 10 (0 under vitest).
   */
  nice?: number;
  /**
   * Recent CPU (ms, decayed; the run time of scripts still running counts) from which a
   * credential's scripts run at `nice`; below it they run at the main thread's priority. Default
   * 1000 (HEAVY_CPU_MS).
   */
  heavyCpuMs?: number;
  /**
   * Bench only: run scripts as the sandbox did before runtime reuse and call batching (a new
   * QuickJS runtime per execute, one message per call), for the "now" column of bench/mcp.ts.
   */
  baseline?: boolean;
  /**
   * Host calls travel over a SharedArrayBuffer channel (the worker blocks on Atomics.wait for the
   * answers) instead of a message each way. Default true; false is for bench/mcp.ts' comparison.
   */
  sharedChannel?: boolean;
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
  /** Executes refused because their credential already had `perCredential` running or waiting. */
  refused: number;
  /** Idle workers that have loaded QuickJS (a script sent to one starts at once). */
  idleReady: number;
  /** Batches of host calls that came over the shared channel (the rest came as messages). */
  channelBatches: number;
  /** Batches of host calls that came as messages (baseline mode, no channel, or too large for it). */
  messageBatches: number;
}

export interface QuickJsExecutor extends Executor {
  stats(): SandboxPoolStats;
}

interface Job {
  runId: number;
  /** Fair-share key ('' for anonymous executes). */
  credential: string;
  submittedAt: number;
  /** Absolute time (Date.now) the script must be done by; counts the time spent queued. */
  deadline: number;
  /** Time spent waiting for a worker, set at dispatch. */
  queuedMs: number;
  /** performance.now() when the job was given a worker (0 while waiting): its run time is charged to its credential. */
  runStartedAt: number;
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
  /** Aborted at the deadline or when the job ends: host calls in flight are abandoned (HostCallContext.signal). */
  abort: AbortController;
  abortTimer: ReturnType<typeof setTimeout> | null;
  /** Removes the listener on the caller's signal (a caller may reuse one signal for many executes). */
  unlisten: (() => void) | null;
  done: boolean;
}

interface Slot {
  worker: Worker;
  job: Job | null;
  runs: number;
  retired: boolean;
  lastError: unknown;
  /** Started beyond poolSize for fairness; stops when idle. */
  burst: boolean;
  /** QuickJS is loaded: a script dispatched now starts at once. */
  ready: boolean;
  idleTimer: ReturnType<typeof setTimeout> | null;
  /**
   * Set when a script of this credential was demoted on this worker (its thread is at nice 19 for
   * good), or when the worker was lowered to the pool's niceness for this heavy credential
   * (HEAVY_CPU_MS): the worker then runs only that credential's scripts (see LANE_IDLE_MS).
   */
  demotedFor: string | null;
  /** The thread's niceness (it only goes up): 0 for workers serving light credentials. */
  nice: number;
  /** The shared host-call channel: its header and data views, the port for oversized answers, the last batch seen. */
  channel: { ctl: Int32Array; data: Buffer; port: MessagePort; lastReq: number } | null;
}

type WorkerMessage =
  | { type: 'ready' }
  | { type: 'started'; runId: number }
  | { type: 'calls'; runId: number; seq?: number; calls: Array<{ id: number; operationId: string; input: string }>; logs?: string[] }
  | {
      type: 'done';
      runId: number;
      result: unknown;
      error: ExecuteError | null;
      resultTruncated?: { size: string; limit: number; shape?: string | null } | null;
      resultUndefined?: boolean;
      unsentCalls?: string[];
      logs?: string[];
      fatal?: boolean;
      /** The script ran long and its thread was demoted to nice 19 (it cannot be raised again): replace the worker. */
      demoted?: boolean;
      /** CPU time the run used on the worker thread, where the worker can read it. */
      cpuMs?: number;
    };

function timeoutError(limits: SandboxLimits, queuedMs = 0, ranNothing = false): ExecuteError {
  const queued = queuedMs >= 50 ? ` (${formatSeconds(queuedMs)} of it waiting for a sandbox worker${ranNothing ? '; the script never started' : ''})` : '';
  return {
    name: SandboxErrorName.Timeout,
    message:
      `The script exceeded the ${formatSeconds(limits.wallClockMs)} limit${queued} and was stopped. ` +
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
  const perCredential = baseLimits.perCredential;
  const burstWorkers = Math.max(0, Math.floor(options.burstWorkers ?? poolSize));
  const burstIdleMs = Math.max(0, options.burstIdleMs ?? 10_000);
  const killGraceMs = Math.max(0, options.killGraceMs ?? 500);
  const maxRunsPerWorker = Math.max(1, options.maxRunsPerWorker ?? 500);
  const guestInterrupt = !options.disableGuestInterrupt;
  const workerUrl = options.workerUrl ?? new URL('./worker.mjs', import.meta.url);
  const workerNice = Math.max(0, Math.min(19, Math.floor(options.nice ?? defaultWorkerNice())));
  const heavyCpuMs = Math.max(0, options.heavyCpuMs ?? HEAVY_CPU_MS);
  const sharedChannel = options.sharedChannel !== false;
  compileQuickJs();

  const slots: Slot[] = [];
  /** Waiting executes by credential; `order` is the round-robin rotation of credentials with waiting executes. */
  const waiting = new Map<string, Job[]>();
  const order: string[] = [];
  let queued = 0;
  /** When each credential was last given a worker (a sequence number; entries go when it has nothing active). */
  const lastServed = new Map<string, number>();
  let serveSeq = 0;
  /** Recent CPU use by credential (decayed, see CPU_HALF_LIFE_MS), as of `at`. */
  const cpuUsed = new Map<string, { ms: number; at: number }>();

  function decayed(e: { ms: number; at: number }, now: number): number {
    return e.ms * Math.pow(0.5, Math.max(0, now - e.at) / CPU_HALF_LIFE_MS);
  }

  function charge(credential: string, ms: number): void {
    const now = performance.now();
    const e = cpuUsed.get(credential);
    cpuUsed.set(credential, { ms: (e ? decayed(e, now) : 0) + Math.max(0, ms), at: now });
    if (cpuUsed.size > 1000) for (const [k, v] of cpuUsed) if (decayed(v, now) < 1) cpuUsed.delete(k);
  }

  /** A credential's recent CPU: its decayed past use plus the run time so far of its running scripts. */
  function usageOf(credential: string, now: number): number {
    const e = cpuUsed.get(credential);
    let ms = e ? decayed(e, now) : 0;
    for (const s of slots) if (s.job && !s.job.done && s.job.credential === credential && s.job.runStartedAt > 0) ms += now - s.job.runStartedAt;
    return ms;
  }
  /** Executes running or waiting, by credential. */
  const active = new Map<string, Set<Job>>();
  const exiting = new Set<Promise<unknown>>();
  let closed = false;
  let nextRunId = 0;
  let started = 0;
  let replaced = 0;
  let completed = 0;
  let refused = 0;
  let channelBatches = 0;
  let messageBatches = 0;

  function finish(
    job: Job,
    outcome: {
      result?: unknown;
      error: ExecuteError | null;
      resultTruncated?: { size: string; limit: number; shape?: string | null } | null;
      resultUndefined?: boolean;
      unsentCalls?: string[];
      logs?: string[];
      cpuMs?: number;
    },
  ): void {
    if (job.done) return;
    job.done = true;
    job.unlisten?.();
    job.unlisten = null;
    if (job.runStartedAt > 0) {
      const wall = performance.now() - job.runStartedAt;
      charge(job.credential, typeof outcome.cpuMs === 'number' && Number.isFinite(outcome.cpuMs) ? Math.min(outcome.cpuMs, wall) : wall);
    }
    if (job.timer) clearTimeout(job.timer);
    job.timer = null;
    if (job.abortTimer) clearTimeout(job.abortTimer);
    job.abortTimer = null;
    // Calls still in flight get no answer: tell them to stop.
    job.abort.abort();
    if (outcome.logs) job.logs.push(...outcome.logs);
    const mine = active.get(job.credential);
    if (mine) {
      mine.delete(job);
      if (mine.size === 0) {
        active.delete(job.credential);
        lastServed.delete(job.credential);
      }
    }
    completed++;
    job.resolve({
      result: outcome.error ? null : outcome.result === undefined ? null : outcome.result,
      logs: job.logs,
      calls: job.calls,
      error: outcome.error,
      resultTruncated: outcome.error ? null : (outcome.resultTruncated ?? null),
      resultUndefined: !outcome.error && outcome.resultUndefined === true,
      unsentCalls: outcome.unsentCalls ?? [],
      queuedMs: roundMs(job.queuedMs),
      elapsedMs: roundMs(Date.now() - job.submittedAt),
    });
  }

  function retire(slot: Slot, countAsReplaced: boolean): void {
    if (slot.retired) return;
    slot.retired = true;
    if (slot.idleTimer) clearTimeout(slot.idleTimer);
    if (countAsReplaced) replaced++;
    const index = slots.indexOf(slot);
    if (index >= 0) slots.splice(index, 1);
    closeChannel(slot);
    const p = slot.worker.terminate().catch(() => undefined);
    exiting.add(p);
    void p.finally(() => exiting.delete(p));
  }

  /** The credential's scripts run at the pool's lower priority (see HEAVY_CPU_MS). */
  function heavy(credential: string): boolean {
    return workerNice > 0 && usageOf(credential, performance.now()) >= heavyCpuMs;
  }

  function spawn(burst: boolean, nice = 0): Slot {
    const sab = sharedChannel ? new SharedArrayBuffer(CH_HEADER_BYTES + CHANNEL_BYTES) : null;
    const ports = sab ? new MessageChannel() : null;
    const worker = new Worker(workerUrl, {
      resourceLimits: { stackSizeMb: WORKER_STACK_SIZE_MB, maxOldGenerationSizeMb: WORKER_HEAP_MB },
      workerData: {
        wasmMemoryBytes: baseLimits.memoryBytes + WASM_OVERHEAD_BYTES,
        wasmModule: compiledModule,
        nice,
        priorities: workerNice > 0,
        ...(sab && ports ? { channel: sab, replyPort: ports.port2 } : {}),
      },
      transferList: ports ? [ports.port2] : [],
    });
    started++;
    const channel = sab && ports ? { ctl: new Int32Array(sab, 0, 4), data: Buffer.from(sab, CH_HEADER_BYTES), port: ports.port1, lastReq: 0 } : null;
    const slot: Slot = { worker, job: null, runs: 0, retired: false, lastError: undefined, burst, idleTimer: null, ready: false, demotedFor: null, nice, channel };
    if (channel) listen(slot);
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
    if (slot.idleTimer) clearTimeout(slot.idleTimer);
    const unexpected = !slot.retired;
    if (unexpected) {
      slot.retired = true;
      closeChannel(slot);
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
    if (msg.type === 'ready') {
      slot.ready = true;
      if (!slot.job) pump();
    } else if (msg.type === 'started') {
      const job = slot.job;
      if (job && !job.done && job.runId === msg.runId) {
        // The worker's clock: the time left when the script starts (worker start-up excluded).
        job.deadline = Date.now() + job.limits.wallClockMs - job.queuedMs;
        armKillTimer(slot, job, Math.max(0, job.deadline - Date.now()) + killGraceMs);
      }
    } else if (msg.type === 'calls') {
      messageBatches++;
      onCalls(slot, msg.runId, msg.seq, msg.calls, msg.logs);
    } else if (msg.type === 'done') {
      const job = slot.job;
      if (!job || job.runId !== msg.runId) return;
      slot.job = null;
      slot.runs++;
      finish(job, {
        result: msg.result,
        error: msg.error ?? null,
        resultTruncated: msg.resultTruncated,
        resultUndefined: msg.resultUndefined,
        unsentCalls: Array.isArray(msg.unsentCalls) ? msg.unsentCalls : [],
        logs: msg.logs,
        ...(typeof msg.cpuMs === 'number' ? { cpuMs: msg.cpuMs } : {}),
      });
      if (msg.fatal || slot.runs >= maxRunsPerWorker) retire(slot, msg.fatal === true);
      else if (msg.demoted && job.credential === '') retire(slot, false);
      else {
        // A demoted worker stays, for this credential only (anonymous executes get a new worker).
        if (msg.demoted) {
          slot.demotedFor ??= job.credential;
          slot.nice = 19;
        }
        slot.worker.unref();
      }
      pump();
    }
  }

  /** Run one call on the host: refused when not allowed, over the call limit, or past the deadline. */
  function startCall(job: Job, operationId: string, inputJson: unknown): Promise<{ json: string; status: number }> | { json: string; status: number } {
    const refuse = (error: HostCallError) => encodeHostResult({ ok: false, error }, operationId, job.limits);
    if (!job.allowed.has(operationId)) {
      // The worker already filters these; never forward an operation the caller did not allow.
      return refuse({
        status: 404,
        code: 'unknown_operation',
        message: `Unknown operation "${operationId.slice(0, 200)}". Use the search tool to find the right operationId.`,
      });
    }
    if (job.callCount >= job.limits.maxCalls) {
      return refuse({
        status: 429,
        code: 'call_limit_exceeded',
        message: `Call limit exceeded: a script may make at most ${job.limits.maxCalls} API calls per execute.`,
      });
    }
    // A call the script sent before its deadline but that would start after it is not started:
    // the script has been (or is about to be) stopped, and nobody would read the answer.
    if (job.done || job.abort.signal.aborted || Date.now() >= job.deadline) {
      return refuse({
        status: 408,
        code: 'deadline_exceeded',
        message: `Not run: the execute's ${formatSeconds(job.limits.wallClockMs)} wall clock had run out.`,
      });
    }
    job.callCount++;
    let input: unknown = null;
    try {
      input = typeof inputJson === 'string' ? JSON.parse(inputJson) : null;
    } catch {
      input = null;
    }
    const startedAt = performance.now();
    const settle = (res: HostCallResult | undefined) => {
      const encoded = encodeHostResult(res, operationId, job.limits);
      if (!job.done) job.calls.push({ operationId, status: encoded.status, ms: roundMs(performance.now() - startedAt) });
      return encoded;
    };
    const failed = (): HostCallResult => ({
      ok: false,
      error: { status: 500, code: 'internal_error', message: `The ${operationId} operation failed unexpectedly.` },
    });
    try {
      return job.host(operationId, input, { signal: job.abort.signal }).then(settle, () => settle(failed()));
    } catch {
      return settle(failed());
    }
  }

  /** A batch from the worker, by message or over the channel (`seq`: answer over the channel). */
  function onCalls(slot: Slot, runId: unknown, seq: unknown, calls: unknown, logs: unknown): void {
    const job = slot.job;
    if (!job || job.done || job.runId !== runId) return;
    if (Array.isArray(logs) && logs.length) job.logs.push(...logs.filter((l): l is string => typeof l === 'string'));
    if (Array.isArray(calls)) void handleCalls(slot, job, calls, typeof seq === 'number' ? seq : undefined);
  }

  /** Wait (without blocking the event loop) for the worker's next batch on the shared channel. */
  function listen(slot: Slot): void {
    const ch = slot.channel;
    if (!ch || slot.retired) return;
    const waited = waitAsync(ch.ctl, CH_REQ, ch.lastReq);
    if (waited.async) void waited.value.then(() => onChannel(slot));
    else queueMicrotask(() => onChannel(slot));
  }

  function onChannel(slot: Slot): void {
    const ch = slot.channel;
    if (!ch || slot.retired) return;
    const seq = Atomics.load(ch.ctl, CH_REQ);
    if (seq !== ch.lastReq) {
      ch.lastReq = seq;
      let batch: { runId?: unknown; calls?: unknown; logs?: unknown } | null = null;
      try {
        batch = JSON.parse(ch.data.toString('utf8', 0, Atomics.load(ch.ctl, CH_LEN)));
      } catch {
        batch = null;
      }
      channelBatches++;
      if (batch && typeof batch === 'object') onCalls(slot, batch.runId, seq, batch.calls, batch.logs);
    }
    listen(slot);
  }

  /** Releases the pool's wait on a retired worker's channel. */
  function closeChannel(slot: Slot): void {
    const ch = slot.channel;
    if (!ch) return;
    Atomics.notify(ch.ctl, CH_REQ);
    ch.port.close();
  }

  /** One batch of calls from the worker (all made in one tick): started in order, answered together. */
  async function handleCalls(
    slot: Slot,
    job: Job,
    calls: Array<{ id: number; operationId: string; input: string }>,
    seq: number | undefined,
  ): Promise<void> {
    const pending: Array<Promise<{ json: string; status: number }> | { json: string; status: number }> = [];
    for (const c of calls) pending.push(startCall(job, String(c?.operationId), c?.input));
    const encoded = await Promise.all(pending);
    if (job.done || slot.job !== job || slot.retired) return;
    const ch = slot.channel;
    if (seq === undefined || !ch) {
      slot.worker.postMessage({ type: 'callResults', runId: job.runId, results: calls.map((c, i) => [c.id, encoded[i]!.json]) });
      return;
    }
    // Framed `id:length:json` (length in UTF-16 units): the answers' JSON is not escaped again.
    let text = '';
    for (let i = 0; i < calls.length; i++) text += `${calls[i]!.id}:${encoded[i]!.json.length}:${encoded[i]!.json}`;
    if (text.length * 3 <= ch.data.length || Buffer.byteLength(text, 'utf8') <= ch.data.length) {
      Atomics.store(ch.ctl, CH_LEN, ch.data.write(text, 0, 'utf8'));
      Atomics.store(ch.ctl, CH_KIND, 0);
    } else {
      // Too large for the buffer: posted first, so it is there when the worker wakes.
      ch.port.postMessage({ seq, results: calls.map((c, i) => [c.id, encoded[i]!.json]) });
      Atomics.store(ch.ctl, CH_KIND, 1);
    }
    Atomics.store(ch.ctl, CH_REPLY, seq);
    Atomics.notify(ch.ctl, CH_REPLY);
  }

  function cancelledError(): ExecuteError {
    return { name: SandboxErrorName.Cancelled, message: 'The execute was cancelled: nothing after the cancel ran, and calls in flight got no answer.' };
  }

  /** Stops a job wherever it is: still waiting (never starts) or running (its worker is replaced). */
  function cancel(job: Job): void {
    if (job.done) return;
    if (removeWaiting(job)) return finish(job, { error: cancelledError() });
    const slot = slots.find((s) => s.job === job);
    finish(job, { error: cancelledError() });
    if (slot) {
      slot.job = null;
      retire(slot, true);
    }
    pump();
  }

  /** Host-side backstop: if the worker has not answered in time, kill it and fail the job. */
  function armKillTimer(slot: Slot, job: Job, ms: number, deadlineKnown = true): void {
    if (job.timer) clearTimeout(job.timer);
    // At the deadline, host calls in flight are abandoned even before the worker reports the timeout
    // (armed once the script has started: a cold worker moves the deadline when it reports 'started').
    if (job.abortTimer) clearTimeout(job.abortTimer);
    job.abortTimer = deadlineKnown ? setTimeout(() => job.abort.abort(), Math.max(0, job.deadline - Date.now())) : null;
    job.timer = setTimeout(() => {
      if (job.done) return;
      // The worker did not answer in time: it may be stuck in native code. Kill and replace it.
      finish(job, { error: timeoutError(job.limits, job.queuedMs) });
      if (slot.job === job) slot.job = null;
      retire(slot, true);
      pump();
    }, ms);
  }

  function dispatch(slot: Slot, job: Job): void {
    if (slot.idleTimer) clearTimeout(slot.idleTimer);
    slot.idleTimer = null;
    slot.job = job;
    slot.worker.ref();
    if (job.timer) clearTimeout(job.timer);
    job.queuedMs = Date.now() - job.submittedAt;
    // A heavy credential's script lowers the worker to the pool's niceness, for good: the worker
    // becomes that credential's lane.
    const nice = heavy(job.credential) && slot.nice < workerNice ? workerNice : undefined;
    if (nice !== undefined) slot.nice = nice;
    if (slot.nice > 0) slot.demotedFor ??= job.credential;
    job.runStartedAt = performance.now();
    if (slot.ready) {
      // QuickJS is loaded: the script starts as soon as the worker reads this message.
      job.deadline = Date.now() + job.limits.wallClockMs - job.queuedMs;
      armKillTimer(slot, job, Math.max(0, job.deadline - Date.now()) + killGraceMs);
    } else {
      // Re-armed with the real budget when the worker reports that the script started.
      armKillTimer(slot, job, Math.max(0, job.deadline - Date.now()) + killGraceMs + STARTUP_ALLOWANCE_MS, false);
    }
    slot.worker.postMessage({
      type: 'run',
      runId: job.runId,
      code: job.code,
      operations: job.operations,
      limits: job.limits,
      guestInterrupt,
      queuedMs: job.queuedMs,
      ...(nice !== undefined ? { nice } : {}),
      ...(options.baseline ? { baseline: true } : {}),
    });
  }

  function enqueue(job: Job): void {
    let list = waiting.get(job.credential);
    if (!list) {
      list = [];
      waiting.set(job.credential, list);
      order.push(job.credential);
    }
    list.push(job);
    queued++;
    // The wall clock runs while waiting: an execute that cannot start in time ends without running.
    job.timer = setTimeout(() => {
      if (job.done || !removeWaiting(job)) return;
      finish(job, { error: timeoutError(job.limits, Date.now() - job.submittedAt, true) });
    }, Math.max(0, job.deadline - Date.now()));
  }

  function removeWaiting(job: Job): boolean {
    const list = waiting.get(job.credential);
    const i = list ? list.indexOf(job) : -1;
    if (!list || i < 0) return false;
    list.splice(i, 1);
    queued--;
    if (list.length === 0) {
      waiting.delete(job.credential);
      const k = order.indexOf(job.credential);
      if (k >= 0) order.splice(k, 1);
    }
    job.queuedMs = Date.now() - job.submittedAt;
    return true;
  }

  /**
   * Next waiting execute, by fair share: the waiting credential that used the least CPU recently
   * goes first (usageOf, in CPU_QUANTUM_MS steps); among equals, credentials are served in turn
   * (the one served least recently first, one never served before all others). `onlyIdle`: only
   * credentials with nothing running.
   */
  function takeNext(onlyIdle: boolean): Job | null {
    const k = pickNext(onlyIdle);
    return k < 0 ? null : takeAt(k);
  }

  /** Index in `order` of the credential takeNext would serve, or -1. */
  function pickNext(onlyIdle: boolean): number {
    let best = -1;
    let bestUse = 0;
    const now = performance.now();
    for (let k = 0; k < order.length; k++) {
      const credential = order[k]!;
      if (onlyIdle && (credential === '' || runningOf(credential) > 0)) continue;
      const use = Math.floor(usageOf(credential, now) / CPU_QUANTUM_MS);
      if (best < 0 || use < bestUse || (use === bestUse && (lastServed.get(credential) ?? 0) < (lastServed.get(order[best]!) ?? 0))) {
        best = k;
        bestUse = use;
      }
    }
    return best;
  }

  function takeAt(k: number): Job {
    const credential = order[k]!;
    const list = waiting.get(credential)!;
    const job = list.shift()!;
    queued--;
    lastServed.set(credential, ++serveSeq);
    if (list.length === 0) {
      waiting.delete(credential);
      order.splice(k, 1);
    }
    return job;
  }

  function runningOf(credential: string): number {
    let n = 0;
    for (const s of slots) if (s.job && !s.job.done && s.job.credential === credential) n++;
    return n;
  }

  function startWorker(burst: boolean, nice = 0): Slot | null {
    try {
      return spawn(burst, nice);
    } catch (err) {
      const job = takeNext(false);
      if (job) {
        finish(job, {
          error: {
            name: SandboxErrorName.Internal,
            message: `Could not start a sandbox worker: ${(err as Error)?.message ?? String(err)}`,
          },
        });
      }
      return null;
    }
  }

  function pump(): void {
    if (closed) return;
    const idle = (burst: boolean) =>
      // A worker that has loaded QuickJS first; one still booting only when none is ready.
      slots.find((s) => !s.retired && s.job === null && s.demotedFor === null && s.burst === burst && s.ready) ??
      slots.find((s) => !s.retired && s.job === null && s.demotedFor === null && s.burst === burst);
    const idleLane = (credential?: string) =>
      slots.find((s) => !s.retired && s.job === null && s.demotedFor !== null && (credential === undefined || s.demotedFor === credential));
    while (queued > 0) {
      // The credential next in turn runs on its own demoted worker if it has one idle (no new thread).
      const next = pickNext(false);
      let slot = next >= 0 ? idleLane(order[next]!) : undefined;
      if (slot) {
        dispatch(slot, takeAt(next));
        continue;
      }
      slot = idle(false);
      if (slot) {
        dispatch(slot, takeNext(false)!);
        continue;
      }
      // A worker started for a heavy credential boots at the pool's niceness (its lane).
      const bootNice = (k: number) => (k >= 0 && heavy(order[k]!) ? workerNice : 0);
      if (slots.length < poolSize) {
        slot = startWorker(false, bootNice(next)) ?? undefined;
        if (slot) dispatch(slot, takeNext(false)!);
        continue;
      }
      // The pool is busy. Burst workers serve only credentials with nothing running, so one
      // credential's long scripts never make another credential wait.
      if (order.some((c) => c !== '' && runningOf(c) === 0)) {
        slot = idle(true);
        if (!slot && slots.length < poolSize + burstWorkers) slot = startWorker(true, bootNice(pickNext(true))) ?? undefined;
        if (slot) {
          dispatch(slot, takeNext(true)!);
          continue;
        }
      }
      // Nothing can take the next execute: an idle demoted worker (it serves only its credential)
      // makes room for a new one.
      slot = idleLane();
      if (!slot) break;
      retire(slot, false);
    }
    // While credentials' executes run, keep two idle workers booted ahead of need (up to poolSize +
    // burstWorkers in all), so the next credential does not wait for a worker thread to start even
    // when another credential takes the last free one at the same time (booting a worker takes
    // seconds on a loaded machine).
    if (
      burstWorkers > 0 &&
      slots.length < poolSize + burstWorkers &&
      slots.some((s) => s.job !== null && s.job.credential !== '') &&
      slots.filter((s) => !s.retired && s.job === null && s.demotedFor === null).length < SPARE_WORKERS
    ) {
      startWorker(slots.length >= poolSize);
    }
    // Burst workers stop after a while without work (SPARE_WORKERS idle ones stay as spares).
    for (const s of slots) {
      if (s.demotedFor !== null && !s.job && !s.idleTimer && !s.retired) {
        // A demoted worker its credential has not reused soon goes.
        s.idleTimer = setTimeout(() => {
          s.idleTimer = null;
          if (!s.job) retire(s, false);
        }, Math.min(LANE_IDLE_MS, burstIdleMs));
        s.idleTimer.unref?.();
      } else if (s.burst && !s.job && !s.idleTimer && !s.retired) {
        s.idleTimer = setTimeout(() => {
          s.idleTimer = null;
          if (s.job || s.retired) return;
          const idle = slots.filter((x) => !x.retired && x.job === null && x.demotedFor === null).length;
          const busyCredentialed = slots.some((x) => x.job !== null && x.job.credential !== '');
          if (idle > SPARE_WORKERS || !busyCredentialed) retire(s, false);
          else pump();
        }, burstIdleMs);
        s.idleTimer.unref?.();
      }
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
      const credential = typeof opts.credential === 'string' ? opts.credential : '';
      const now = Date.now();
      const mine = credential ? active.get(credential) : undefined;
      if (credential && mine && mine.size >= perCredential) {
        refused++;
        // The soonest of this credential's executes ends by its deadline.
        let soonest = Infinity;
        for (const j of mine) soonest = Math.min(soonest, j.deadline);
        const retryAfter = Math.max(1, Math.ceil((soonest - now) / 1000));
        return Promise.resolve(
          errorResult({
            name: SandboxErrorName.Busy,
            status: 429,
            code: 'too_many_executes',
            retry_after: retryAfter,
            message:
              `This credential already has ${mine.size} executes running or waiting, the most it may have at once ` +
              `(${perCredential}). Nothing was run: wait for one to finish (retry after ${retryAfter} s), ` +
              'or do the work in one script.',
          }),
        );
      }
      return new Promise<ExecuteResult>((resolve) => {
        const job: Job = {
          runId: ++nextRunId,
          credential,
          submittedAt: now,
          deadline: now + jobLimits.wallClockMs,
          queuedMs: 0,
          runStartedAt: 0,
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
          abort: new AbortController(),
          abortTimer: null,
          unlisten: null,
          done: false,
        };
        let set = active.get(credential);
        if (!set) active.set(credential, (set = new Set()));
        set.add(job);
        if (opts.signal) {
          if (opts.signal.aborted) return finish(job, { error: cancelledError() });
          const signal = opts.signal;
          const onAbort = () => cancel(job);
          signal.addEventListener('abort', onAbort, { once: true });
          job.unlisten = () => signal.removeEventListener('abort', onAbort);
        }
        enqueue(job);
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
    for (const list of [...waiting.values()]) for (const job of list) finish(job, { error: closedError });
    waiting.clear();
    order.length = 0;
    queued = 0;
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
      queued,
      started,
      replaced,
      completed,
      refused,
      idleReady: slots.filter((s) => !s.retired && s.job === null && s.demotedFor === null && s.ready).length,
      channelBatches,
      messageBatches,
    };
  }

  return { execute, close, stats };
}
