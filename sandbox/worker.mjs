// Sandbox worker: runs one untrusted script at a time, each in a fresh QuickJS context.
//
// Plain ESM JavaScript on purpose: worker threads do not reliably inherit TypeScript
// loaders (vitest, tsx), and this file must load identically everywhere.
//
// Protocol (only JSON-serializable data crosses the thread boundary):
//   main -> worker  { type: 'run', runId, code, operations, limits, guestInterrupt, queuedMs, nice? }
//   worker -> main  { type: 'calls', runId, calls: [{ id, operationId, input }], logs }   input: JSON text
//   main -> worker  { type: 'callResults', runId, results: [[id, json], ...] }      json: HostCallResult as JSON text
//   worker -> main  { type: 'done', runId, result, error, resultTruncated, resultUndefined, unsentCalls, logs, fatal, demoted }
//
// Every api call the script makes in one tick (before it next waits) travels in one 'calls'
// message, and their answers come back in one 'callResults' message: Promise.all over ten
// operations is one round trip between the threads, not ten.
//
// Shared channel (issue 19; workerData.channel, a SharedArrayBuffer, and workerData.replyPort): a
// batch and its answers skip the message ports. The worker writes the batch as JSON into the
// buffer, bumps REQ and notifies; the pool (Atomics.waitAsync on REQ) runs the calls, writes the
// answers into the buffer (framed `id:length:json`), sets REPLY to the batch's sequence number and
// notifies; the worker blocks in Atomics.wait on REPLY until then or its deadline. It has nothing
// else to do while a batch is out (one script at a time, no timers in the sandbox), and a blocked
// thread is still stopped by worker.terminate(). A batch too large for the buffer goes as a
// 'calls' message carrying `seq`; answers too large come as { seq, results } on replyPort, read
// synchronously. Only the worker writes REQ and only the pool writes REPLY; they alternate, so
// one data region serves both directions. The script never sees any of this.
//
// Runtime reuse: the QuickJS runtime (the allocator and atom table) is kept between runs; each run
// gets a brand-new context (its own global object, intrinsics and prototypes), so nothing a script
// defines or mutates is visible to the next one. The next run's context is built while the worker
// is idle (PREPARE_DELAY_MS after a run), so an execute does not wait for the prelude to compile.
// The runtime is dropped after any run that hit a limit (time, memory, stack) or failed inside the
// interpreter, and after RUNTIME_MAX_RUNS runs.
//   worker -> main  { type: 'ready' } once QuickJS is loaded
//   worker -> main  { type: 'started', runId } when the script's wall clock starts, for a run sent
//                   before 'ready' (a run sent after it starts at once: one message less per execute)
//
// Security model: the guest only ever sees the `api` and `console` objects built by the
// prelude below. The two raw host functions are passed to the prelude as arguments and live
// only in its closure; they are never reachable from globalThis. Everything the guest could
// tamper with is re-checked here on the host side anyway (allowed operationIds, call limit,
// sizes), so a subverted prelude cannot do more than the public api.

import { readFileSync } from 'node:fs';
import { setPriority } from 'node:os';
import { parentPort, receiveMessageOnPort, workerData } from 'node:worker_threads';
import { RELEASE_SYNC, newQuickJSWASMModule, newVariant, shouldInterruptAfterDeadline } from 'quickjs-emscripten';

if (!parentPort) throw new Error('sandbox/worker.mjs must be started as a worker thread');
const port = parentPort;

// Scripts run at a lower OS priority than the main thread (issue 10): a tenant's busy loops take
// only the CPU the event loop does not need. On Linux nice is per thread (see
// src/core/thread-priority.ts, the TypeScript twin of this).
// `priorities`: the pool lowers this thread's priority per run (see `niceTo`); `nice`: the niceness
// to start at (0 for a worker that serves light credentials at the main thread's priority).
let threadId = 0;
/** This thread's niceness as set here (it only ever goes up). */
let niceness = 0;
if (process.platform === 'linux' && (workerData?.priorities === true || (Number.isInteger(workerData?.nice) && workerData.nice > 0))) {
  try {
    const tid = Number(readFileSync('/proc/thread-self/stat', 'utf8').split(' ', 1)[0]);
    if (Number.isInteger(tid) && tid > 0 && tid !== process.pid) {
      threadId = tid;
      if (Number.isInteger(workerData.nice) && workerData.nice > 0) niceTo(workerData.nice);
    }
  } catch {
    // not allowed or not available: run at the normal priority
  }
}
/** Lower this thread's priority to `nice` (never raises it: that needs privilege). */
function niceTo(nice) {
  if (!threadId || !(nice > niceness)) return;
  try {
    setPriority(threadId, Math.min(19, nice));
    niceness = Math.min(19, nice);
  } catch {
    // not allowed: stays where it is
  }
}
/**
 * A script still running this long after it started is demoted to the lowest priority (nice 19), so
 * other credentials' short scripts, at the pool's priority, get the CPU first. A thread cannot be
 * made less nice again: the worker reports `demoted` and the pool replaces it after this run.
 */
const DEMOTE_AFTER_MS = 50;

/**
 * CPU time this thread has used, in ms (Linux: utime + stime of /proc/thread-self/stat, in 10 ms
 * clock ticks), or null where it cannot be read. The pool charges each run's CPU to its credential
 * (fair share: a credential that used more CPU recently is served after the others).
 */
function threadCpuMs() {
  if (process.platform !== 'linux') return null;
  try {
    const stat = readFileSync('/proc/thread-self/stat', 'utf8');
    const rest = stat.slice(stat.lastIndexOf(')') + 2).split(' ');
    const ticks = Number(rest[11]) + Number(rest[12]);
    return Number.isFinite(ticks) ? ticks * 10 : null;
  } catch {
    return null;
  }
}
let demoted = false;
function demote() {
  demoted = true;
  niceTo(19);
}

const WASM_PAGE = 64 * 1024;
/** quickjs-emscripten's own defaults: 16 MiB initial heap, 2 GiB maximum. */
const WASM_MIN_PAGES = (16 * 1024 * 1024) / WASM_PAGE;
const WASM_MAX_PAGES = 32768;

/** Host calls may carry at most this much JSON input. */
const MAX_INPUT_CHARS = 1024 * 1024;
/** Results up to this many characters are copied out whole (exact byte count); larger ones are sliced in the guest. */
const FULL_RESULT_FACTOR = 4;
/** Time and memory granted to read out an error after the script's own budget is exhausted. */
const DESCRIBE_GRACE_MS = 250;
const DESCRIBE_EXTRA_MEMORY = 8 * 1024 * 1024;
const MAX_ERROR_MESSAGE_CHARS = 2000;

/**
 * Source without indentation and whole-line comments: QuickJS compiles the prelude into every new
 * context, and its tokenizer's time grows with every character (~20% less compile time). Safe for
 * this source only: it has no multi-line string or template literal.
 */
function compact(source) {
  return source
    .split('\n')
    .map((line) => line.trimStart())
    .filter((line) => line !== '' && !line.startsWith('//'))
    .join('\n');
}

const PRELUDE = compact(String.raw`(function (hostCall, hostLog, configJson) {
  'use strict';
  const G = globalThis;
  const apply = Reflect.apply;
  const jsonParse = JSON.parse;
  const jsonStringify = JSON.stringify;
  const freeze = Object.freeze;
  const create = Object.create;
  const defineProperty = Object.defineProperty;
  const StringCtor = String;
  const ErrorCtor = Error;
  const strSlice = String.prototype.slice;
  const reExec = RegExp.prototype.exec;
  const LINE_RE = /sandbox\.js:(\d+)/;

  const config = jsonParse(configJson);
  const LOG_CHARS = config.logChars;
  const FULL_RESULT_CHARS = config.fullResultChars;
  const RESULT_SLICE_CHARS = config.resultSliceChars;
  const MAX_INPUT_CHARS = config.maxInputChars;

  const slice = (s, end) => (s.length > end ? apply(strSlice, s, [0, end]) : s);
  const setOwn = (obj, key, value, enumerable) =>
    defineProperty(obj, key, { value, writable: true, enumerable, configurable: true });

  const safeFormat = (v) => {
    if (typeof v === 'string') return v;
    try {
      const s = jsonStringify(v);
      if (typeof s === 'string') return s;
    } catch (_) {}
    try {
      return StringCtor(v);
    } catch (_) {
      return '[unprintable value]';
    }
  };

  const errorMessage = (e) => {
    try {
      if (e !== null && typeof e === 'object' && typeof e.message === 'string') return e.message;
    } catch (_) {}
    return safeFormat(e);
  };

  class ApiError extends ErrorCtor {
    constructor(info) {
      super(typeof info.message === 'string' ? info.message : 'Operation failed');
      setOwn(this, 'name', 'ApiError', false);
      setOwn(this, 'status', typeof info.status === 'number' ? info.status : 500, true);
      setOwn(this, 'code', typeof info.code === 'string' ? info.code : 'error', true);
      if (typeof info.param === 'string') setOwn(this, 'param', info.param, true);
    }
  }
  freeze(ApiError.prototype);
  freeze(ApiError);

  const invoke = async (operationId, input) => {
    const op = typeof operationId === 'string' ? operationId : safeFormat(operationId);
    let json = 'null';
    if (input !== undefined) {
      let s;
      try {
        s = jsonStringify(input);
      } catch (err) {
        throw new ApiError({ status: 400, code: 'invalid_input',
          message: 'The input for ' + op + ' is not JSON-serializable: ' + errorMessage(err) });
      }
      if (typeof s === 'string') json = s;
      if (json.length > MAX_INPUT_CHARS) {
        throw new ApiError({ status: 413, code: 'input_too_large',
          message: 'The input for ' + op + ' is ' + json.length + ' characters of JSON; the limit is ' + MAX_INPUT_CHARS + '.' });
      }
    }
    const reply = jsonParse(await hostCall(op, json));
    if (reply.ok) return reply.value;
    throw new ApiError(reply.error);
  };

  // ---- api: api.<tag>.<verb>(input) and api.call(operationId, input), deeply frozen ----
  // config.tree: [[key, operationId | subtree], ...] in order (apiTree on the host: which
  // operationIds make a path, and the first of any clash, is decided there). Each function's name
  // is its operationId (a computed key names the arrow function).
  const build = (entries, node) => {
    for (let i = 0; i < entries.length; i++) {
      const key = entries[i][0];
      const v = entries[i][1];
      // Plain assignment on a null-prototype object defines an own data property (no setter runs).
      node[key] = typeof v === 'string' ? freeze(({ [v]: (input) => invoke(v, input) })[v]) : freeze(build(v, create(null)));
    }
    return node;
  };
  const api = create(null);
  build(config.tree, api);
  const call = (operationId, input) => invoke(operationId, input);
  defineProperty(call, 'name', { value: 'call' });
  defineProperty(api, 'call', { value: freeze(call), enumerable: false });
  freeze(api);

  // ---- console ----
  const formatArg = (v) => {
    if (typeof v === 'string') return v;
    try {
      if (v instanceof ErrorCtor) return StringCtor(v.name) + ': ' + StringCtor(v.message);
    } catch (_) {}
    return safeFormat(v);
  };
  let logsFull = false;
  let droppedLogs = 0;
  const emit = (prefix, args) => {
    if (logsFull) {
      droppedLogs++;
      return;
    }
    let line = prefix;
    for (let i = 0; i < args.length; i++) {
      if (i > 0) line += ' ';
      line += formatArg(args[i]);
      if (line.length > LOG_CHARS) break;
    }
    if (hostLog(slice(line, LOG_CHARS), line.length) === true) logsFull = true;
  };
  const console = create(null);
  const methods = [['log', ''], ['info', ''], ['debug', '[debug] '], ['warn', '[warn] '], ['error', '[error] ']];
  for (let i = 0; i < methods.length; i++) {
    const prefix = methods[i][1];
    const fn = (...args) => { emit(prefix, args); };
    defineProperty(fn, 'name', { value: methods[i][0] });
    defineProperty(console, methods[i][0], { value: freeze(fn), enumerable: true });
  }
  freeze(console);

  // Runtimes are reused across executes: nothing of this script may run after it ends. A
  // FinalizationRegistry callback would run whenever the collector gets to it, possibly during a
  // later execute, so the class is not offered.
  delete G.FinalizationRegistry;

  defineProperty(G, 'api', { value: api, writable: false, enumerable: false, configurable: false });
  defineProperty(G, 'console', { value: console, writable: false, enumerable: false, configurable: false });

  // ---- host-side helpers (not reachable from the script) ----
  const serialize = (value) => {
    if (typeof value === 'string' && value.length > FULL_RESULT_CHARS) {
      // Huge string: only encode the part that can survive truncation.
      return [value.length + 2, jsonStringify(slice(value, RESULT_SLICE_CHARS)), false, false];
    }
    let s = value === undefined ? undefined : jsonStringify(value);
    if (typeof s !== 'string') s = 'null';
    const n = s.length;
    return n > FULL_RESULT_CHARS ? [n, slice(s, RESULT_SLICE_CHARS), false, value === undefined] : [n, s, true, value === undefined];
  };

  const dropped = () => droppedLogs;

  // What HELPERS needs, captured before the script runs (it may replace globals and prototypes).
  const prims = freeze({
    __proto__: null, apply, jsonStringify, StringCtor, reExec, LINE_RE, ApiError, slice, safeFormat,
    isArray: Array.isArray, keysOf: Object.keys, maxErrorChars: config.maxErrorChars,
  });

  return { serialize, dropped, prims };
})`);

/**
 * Host-side helpers for the rare paths (an error to read out, a result too large to return),
 * compiled into a run's context only when that run needs them: compiling them into every context
 * ahead of time was ~40% of the prelude's compile time (issue 19). Evaluating this function
 * expression runs nothing of the script's; it is called with the intrinsics the prelude captured
 * before the script ran, so it sees the same functions it would have seen in the prelude.
 */
const HELPERS = compact(String.raw`(function (p) {
  'use strict';
  const apply = p.apply;
  const jsonStringify = p.jsonStringify;
  const StringCtor = p.StringCtor;
  const reExec = p.reExec;
  const LINE_RE = p.LINE_RE;
  const ApiError = p.ApiError;
  const slice = p.slice;
  const safeFormat = p.safeFormat;
  const isArray = p.isArray;
  const keysOf = p.keysOf;
  const maxErrorChars = p.maxErrorChars;
  // The outline of a value too large to return: keys, array lengths and types, a few levels deep.
  const shape = (value) => {
    let budget = 60;
    const walk = (v, depth) => {
      if (budget-- <= 0) return '…';
      if (v === null) return 'null';
      if (isArray(v)) {
        if (v.length === 0) return '[]';
        return 'Array(' + v.length + ') of ' + walk(v[0], depth + 1);
      }
      const t = typeof v;
      if (t === 'string') return v.length > 80 ? 'string(' + v.length + ' chars)' : 'string';
      if (t !== 'object') return t;
      const keys = keysOf(v);
      if (depth >= 3) return '{ ' + keys.length + ' keys }';
      let out = '{ ';
      for (let i = 0; i < keys.length; i++) {
        if (i >= 12) { out += '… ' + (keys.length - i) + ' more keys'; break; }
        out += keys[i] + ': ' + walk(v[keys[i]], depth + 1) + (i < keys.length - 1 ? ', ' : ' ');
      }
      return out + '}';
    };
    try {
      return slice(walk(value, 0), 2000);
    } catch (_) {
      return typeof value;
    }
  };

  const describe = (e) => {
    const out = {};
    if (e !== null && (typeof e === 'object' || typeof e === 'function')) {
      let name, message, stack, status, code;
      try { name = e.name; } catch (_) {}
      try { message = e.message; } catch (_) {}
      try { stack = e.stack; } catch (_) {}
      try { status = e.status; } catch (_) {}
      try { code = e.code; } catch (_) {}
      out.name = typeof name === 'string' && name !== '' ? name : 'Error';
      out.message = typeof message === 'string' ? message : safeFormat(e);
      if (typeof status === 'number') out.status = status;
      if (typeof code === 'string') out.code = code;
      out.api = e instanceof ApiError;
      if (typeof stack === 'string') {
        const m = apply(reExec, LINE_RE, [stack]);
        if (m) out.line = +m[1];
      }
    } else {
      out.name = 'Error';
      out.message = safeFormat(e);
      out.nonError = true;
    }
    out.message = slice(StringCtor(out.message), maxErrorChars);
    return jsonStringify(out);
  };

  return [describe, shape];
})`);

// QuickJS' own memory limit (JS_SetMemoryLimit) is not a reliable cumulative bound in the
// emscripten build: it cannot measure the usable size of past allocations, so it only rejects
// single allocations larger than the limit. The hard bound is the WebAssembly heap itself: this
// worker's module gets a Memory whose maximum is the pool's memory budget plus overhead, so
// running out of heap makes malloc fail and QuickJS throws a clean "out of memory".
//
// The heap is allocated at its full size up front and never grows. quickjs-emscripten reads some
// out-parameters through typed-array views created *before* calling into wasm (e.g. in
// executePendingJobs); if a job grows the memory, those views are detached, the read yields
// undefined and the library silently creates (and leaks) a new context. A fixed-size heap avoids
// every variant of that bug. Untouched pages cost address space, not resident memory.
const wasmMemoryBytes = Number(workerData?.wasmMemoryBytes) || 96 * 1024 * 1024;
const wasmPages = Math.min(WASM_MAX_PAGES, Math.max(WASM_MIN_PAGES, Math.ceil(wasmMemoryBytes / WASM_PAGE)));
const wasmMemory = new WebAssembly.Memory({ initial: wasmPages, maximum: wasmPages });
//
// Host-side allocations in that heap (strings handed to the guest, argument arrays) go through the
// emscripten module's `_malloc`, and quickjs-emscripten does not check its result: when a script has
// filled the heap, a NULL pointer would be written through and corrupt the wasm instance. Wrap it so
// such an allocation throws instead, and retire the worker afterwards to be safe.
let hostAllocationFailed = false;
// The executor compiles the WebAssembly module once and hands it over; instantiating it is cheap.
const wasmModule = workerData?.wasmModule instanceof WebAssembly.Module ? workerData.wasmModule : undefined;
const quickjsReady = newQuickJSWASMModule(newVariant(RELEASE_SYNC, wasmModule ? { wasmMemory, wasmModule } : { wasmMemory })).then((QuickJS) => {
  const emscripten = QuickJS.module;
  const rawMalloc = emscripten?._malloc;
  if (typeof rawMalloc !== 'function') throw new Error('quickjs-emscripten internals changed: module._malloc not found');
  emscripten._malloc = (size) => {
    const ptr = rawMalloc(size);
    if (!ptr && size > 0) {
      hostAllocationFailed = true;
      throw new Error(`out of memory: the sandbox heap is full (host allocation of ${size} bytes failed)`);
    }
    return ptr;
  };
  warmUp(QuickJS);
  return QuickJS;
});

/**
 * Run the prelude once in a throwaway runtime before the worker counts as started, so the first
 * script's wall clock does not pay for compiling the interpreter's hot paths.
 */
function warmUp(QuickJS) {
  const rt = QuickJS.newRuntime();
  try {
    const ctx = rt.newContext();
    try {
      const noop = ctx.newFunction('noop', () => undefined);
      const config = ctx.newString(JSON.stringify({ tree: [['warm', [['up', 'warm.up']]]], logChars: 1024, fullResultChars: 4096, resultSliceChars: 1024, maxInputChars: 1024, maxErrorChars: 100 }));
      const fn = ctx.unwrapResult(ctx.evalCode(PRELUDE, 'prelude.js'));
      const kit = ctx.callFunction(fn, ctx.undefined, noop, noop, config);
      if (kit.error) kit.error.dispose();
      else kit.value.dispose();
      fn.dispose();
      config.dispose();
      noop.dispose();
      const r = ctx.evalCode('(async () => JSON.parse(JSON.stringify({ a: [1, 2, 3] })))()', 'warm.js');
      if (r.error) r.error.dispose();
      else r.value.dispose();
      rt.executePendingJobs();
    } finally {
      ctx.dispose();
    }
  } finally {
    rt.dispose();
  }
}
let loaded = false;
quickjsReady.then(
  () => {
    loaded = true;
    port.postMessage({ type: 'ready' });
  },
  (err) => {
    // Without QuickJS this worker is useless; crash so the pool replaces it.
    setImmediate(() => {
      throw err;
    });
  },
);

// ---- shared host-call channel (see the protocol note at the top) ----
/** Int32 slots at the start of the channel buffer; the data region follows them. */
const CH_REQ = 0;
const CH_REPLY = 1;
const CH_LEN = 2;
const CH_KIND = 3;
const CH_HEADER_BYTES = 16;
const channel = (() => {
  const sab = workerData?.channel;
  const replyPort = workerData?.replyPort;
  if (!(sab instanceof SharedArrayBuffer) || sab.byteLength <= CH_HEADER_BYTES || !replyPort) return null;
  return { ctl: new Int32Array(sab, 0, 4), data: Buffer.from(sab, CH_HEADER_BYTES), seq: 0, replyPort };
})();

/** Answers framed `id:length:json...` (length in UTF-16 units) -> [[id, json], ...]. */
function parseFramedReplies(text) {
  const out = [];
  let i = 0;
  while (i < text.length) {
    const a = text.indexOf(':', i);
    const b = a < 0 ? -1 : text.indexOf(':', a + 1);
    if (b < 0) break;
    const id = Number(text.slice(i, a));
    const len = Number(text.slice(a + 1, b));
    if (!Number.isInteger(id) || !Number.isInteger(len) || len < 0 || b + 1 + len > text.length) break;
    out.push([id, text.slice(b + 1, b + 1 + len)]);
    i = b + 1 + len;
  }
  return out;
}

/** @type {Map<number, Run>} only one at a time in practice, keyed for stale-message safety */
const runs = new Map();
let busy = Promise.resolve();

port.on('message', (msg) => {
  if (!msg || typeof msg !== 'object') return;
  if (msg.type === 'run') {
    // A credential that used much CPU recently runs at the pool's lower priority (the pool then keeps
    // this worker for that credential's scripts only).
    if (Number.isInteger(msg.nice)) niceTo(msg.nice);
    // A run received after 'ready' starts at once; the pool arms its timer at dispatch. Only a run
    // that waited for QuickJS to load says when its clock starts.
    const cold = !loaded;
    busy = busy
      .then(() => runOne(msg, cold))
      .catch((err) => {
        // runOne handles its own failures; this is a last resort so the queue never stalls.
        port.postMessage({
          type: 'done', runId: msg.runId, result: null, logs: [], fatal: true,
          error: { name: 'SandboxInternalError', message: `The sandbox failed: ${err?.message ?? err}` },
        });
      });
  } else if (msg.type === 'callResults') {
    const run = runs.get(msg.runId);
    if (run && Array.isArray(msg.results)) {
      for (const entry of msg.results) {
        if (Array.isArray(entry)) run.deliver(entry[0], typeof entry[1] === 'string' ? entry[1] : null);
      }
    }
  }
});

function utf8Truncate(text, maxBytes) {
  const buf = Buffer.from(text, 'utf8');
  if (buf.length <= maxBytes) return text;
  let end = Math.max(0, maxBytes);
  while (end > 0 && (buf[end] & 0xc0) === 0x80) end--;
  return buf.subarray(0, end).toString('utf8');
}

function formatSeconds(ms) {
  return `${Number((ms / 1000).toFixed(2))} s`;
}

function formatBytes(bytes) {
  const MIB = 1024 * 1024;
  if (bytes >= MIB && bytes % MIB === 0) return `${bytes / MIB} MiB`;
  if (bytes >= 1024 && bytes % 1024 === 0) return `${bytes / 1024} KiB`;
  return `${bytes} bytes`;
}

function envelope(status, code, message) {
  return JSON.stringify({ ok: false, error: { status, code, message } });
}

class Run {
  constructor(msg) {
    /** This thread's CPU time (ms) when the run began, or null where it cannot be read. */
    this.cpuAtStart = null;
    this.runId = msg.runId;
    this.code = typeof msg.code === 'string' ? msg.code : '';
    this.operations = Array.isArray(msg.operations) ? msg.operations.filter((o) => typeof o === 'string') : [];
    this.allowed = new Set(this.operations);
    this.limits = msg.limits;
    // The wall clock counts the time the execute waited for a worker (queuedMs), not the time this
    // worker took to load QuickJS.
    this.queuedMs = Math.max(0, Number(msg.queuedMs) || 0);
    this.deadline = Date.now() + this.limits.wallClockMs - this.queuedMs;
    this.guestInterrupt = msg.guestInterrupt !== false;
    /** Bench only: behave as before runtime reuse and call batching (the "now" column of bench/mcp.ts). */
    this.baseline = msg.baseline === true;
    /** Host calls go over the shared channel (not in baseline mode, which measures the old path). */
    this.channel = this.baseline ? null : channel;
    /** Sequence number of the channel batch whose answers are outstanding (0: none). */
    this.awaiting = 0;
    this.callCount = 0;
    this.nextCallId = 0;
    /** @type {Map<number, import('quickjs-emscripten').QuickJSDeferredPromise>} */
    this.inflight = new Map();
    /** replies ready to be delivered into the guest: [id, json] */
    this.replies = [];
    /** calls made since the last flush: [{ id, operationId, input }] (sent together) */
    this.outbox = [];
    this.wake = null;
    // logs
    this.pendingLogs = [];
    this.logBytes = 0;
    this.logsTruncated = false;
    this.droppedLogEntries = 0;
    this.rt = null;
    this.ctx = null;
  }

  /** Arm the interrupt deadline inside QuickJS (the host timer in the main thread is the backstop). */
  armInterrupt(deadline = this.deadline) {
    if (!this.guestInterrupt) return;
    const expired = shouldInterruptAfterDeadline(deadline);
    if (!threadId || demoted) return this.rt.setInterruptHandler(expired);
    const demoteAt = Date.now() + DEMOTE_AFTER_MS;
    this.rt.setInterruptHandler((rt) => {
      if (!demoted && Date.now() >= demoteAt) demote();
      return expired(rt);
    });
  }

  /** Send every call made in this tick in one message (or one write to the shared channel). */
  flushCalls() {
    if (this.outbox.length === 0) return;
    const ch = this.channel;
    // One channel batch at a time: calls made meanwhile wait for the next flush.
    if (ch && this.awaiting !== 0) return;
    const calls = this.outbox;
    this.outbox = [];
    const logs = this.takeLogs(false);
    if (!ch) {
      port.postMessage({ type: 'calls', runId: this.runId, calls, logs });
      return;
    }
    const seq = ++ch.seq;
    this.awaiting = seq;
    const text = JSON.stringify({ runId: this.runId, calls, logs });
    const room = ch.data.length;
    if (text.length * 3 <= room || Buffer.byteLength(text, 'utf8') <= room) {
      Atomics.store(ch.ctl, CH_LEN, ch.data.write(text, 0, 'utf8'));
      Atomics.store(ch.ctl, CH_REQ, seq);
      Atomics.notify(ch.ctl, CH_REQ);
    } else {
      port.postMessage({ type: 'calls', runId: this.runId, seq, calls, logs });
    }
  }

  /**
   * Block this thread until the pool answers the outstanding channel batch, or the deadline passes
   * (runScript then reports the timeout, as it does for a message that never came).
   */
  awaitChannelReply() {
    const ch = this.channel;
    const seq = this.awaiting;
    for (;;) {
      const current = Atomics.load(ch.ctl, CH_REPLY);
      if (current === seq) break;
      const left = this.deadline - Date.now();
      if (left <= 0) return;
      Atomics.wait(ch.ctl, CH_REPLY, current, left + 1);
    }
    this.awaiting = 0;
    let results = [];
    if (Atomics.load(ch.ctl, CH_KIND) === 0) {
      results = parseFramedReplies(ch.data.toString('utf8', 0, Atomics.load(ch.ctl, CH_LEN)));
    } else {
      // Posted before REPLY was set; answers to batches of earlier runs that nobody read go first.
      for (let m = receiveMessageOnPort(ch.replyPort); m; m = receiveMessageOnPort(ch.replyPort)) {
        if (m.message?.seq === seq) {
          if (Array.isArray(m.message.results)) results = m.message.results;
          break;
        }
      }
    }
    for (const entry of results) if (Array.isArray(entry)) this.deliver(entry[0], typeof entry[1] === 'string' ? entry[1] : null);
  }

  deliver(id, json) {
    if (!this.inflight.has(id)) return;
    this.replies.push([id, json ?? envelope(500, 'internal_error', 'The host returned an unreadable response.')]);
    this.signal();
  }

  signal() {
    const wake = this.wake;
    this.wake = null;
    if (wake) wake();
  }

  /** Wait until a reply arrives or the deadline passes. */
  waitForReply() {
    if (this.replies.length > 0) return Promise.resolve();
    return new Promise((resolve) => {
      const timer = setTimeout(() => {
        this.wake = null;
        resolve();
      }, Math.max(0, this.deadline - Date.now()) + 1);
      this.wake = () => {
        clearTimeout(timer);
        resolve();
      };
    });
  }

  addLog(text, fullChars) {
    if (this.logsTruncated) {
      this.droppedLogEntries++;
      return;
    }
    const max = this.limits.maxLogBytes;
    const bytes = Buffer.byteLength(text, 'utf8');
    if (text.length >= fullChars && this.logBytes + bytes + 1 <= max) {
      this.pendingLogs.push(text);
      this.logBytes += bytes + 1;
      return;
    }
    const room = max - this.logBytes - 1 - 3; // separator and the 3-byte ellipsis
    if (room > 0) this.pendingLogs.push(utf8Truncate(text, room) + '…');
    this.logBytes = max;
    this.logsTruncated = true;
  }

  takeLogs(final) {
    const out = this.pendingLogs;
    this.pendingLogs = [];
    if (final && this.logsTruncated) {
      const dropped = this.droppedLogEntries;
      out.push(
        `…[truncated: logs exceeded the ${formatBytes(this.limits.maxLogBytes)} limit` +
          (dropped > 0 ? `; ${dropped} later ${dropped === 1 ? 'entry was' : 'entries were'} dropped` : '') +
          '; log less, or return the data you need as the result]',
      );
    }
    return out;
  }
}

/**
 * How long after a run the worker starts building the next run's context. On a loaded machine
 * (2 cores, load ~3.5) building it right after 'done' delayed that execute's answer: MCP execute
 * of return 1 3.0 ms p50 with this delay vs 4.3 ms without, 1 call 2.9 vs 4.3 ms (issue 19). A run
 * that arrives sooner builds its own context, as it would have waited for this one anyway.
 */
const PREPARE_DELAY_MS = 2;

/** Runs on one runtime before it is replaced (bounds allocator fragmentation). */
const RUNTIME_MAX_RUNS = 200;
/** @type {{ rt: import('quickjs-emscripten').QuickJSRuntime, runs: number } | null} */
let pooled = null;
/** A context built ahead of time for the next run: { key, ctx, binding, serialize, dropped, prims, describe, shape } */
let spare = null;

function dropRuntime() {
  if (spare) {
    disposeKit(spare);
    spare = null;
  }
  if (pooled) {
    const rt = pooled.rt;
    pooled = null;
    rt.dispose();
  }
}

function disposeKit(kit) {
  for (const h of [kit.serialize, kit.dropped, kit.prims, kit.describe, kit.shape]) if (h && h.alive) h.dispose();
  if (kit.ctx.alive) kit.ctx.dispose();
}

async function runOne(msg, cold) {
  let QuickJS;
  try {
    QuickJS = await quickjsReady;
  } catch (err) {
    port.postMessage({
      type: 'done', runId: msg.runId, result: null, logs: [], fatal: true,
      error: { name: 'SandboxInternalError', message: `The sandbox failed to start: ${err?.message ?? err}` },
    });
    return;
  }
  const run = new Run(msg);
  run.cpuAtStart = threadCpuMs();
  runs.set(run.runId, run);
  hostAllocationFailed = false;
  // The script's own clock starts now (not while the worker was still loading QuickJS).
  if (cold) port.postMessage({ type: 'started', runId: run.runId });
  let outcome;
  let fatal = false;
  try {
    outcome = await execute(QuickJS, run);
  } catch (err) {
    // A host-side failure inside the interpreter (WebAssembly trap, emscripten abort, ...).
    // The wasm instance may be corrupt: report and let the pool replace this worker.
    fatal = true;
    outcome = { result: null, error: hostFailure(run, err) };
  }
  try {
    for (const deferred of run.inflight.values()) deferred.dispose();
    run.inflight.clear();
    if (run.kit) {
      run.kit.binding.run = null;
      disposeKit(run.kit);
    }
  } catch (err) {
    // Leaked handles abort inside QuickJS; never reuse this wasm instance afterwards.
    fatal = true;
    pooled = null;
    spare = null;
    if (!outcome.error) outcome = { result: null, error: hostFailure(run, err) };
  }
  try {
    // A run that hit a limit may leave the runtime in an odd state (an interrupted job queue, a
    // nearly full heap): start the next run on a new runtime.
    const limitHit = outcome.error && ['TimeoutError', 'MemoryLimitError', 'StackOverflowError', 'SandboxInternalError'].includes(outcome.error.name);
    // Jobs still queued (a promise reaction the script left behind, e.g. from a toJSON called while
    // its result was read) belong to this script: they must never run in the next execute.
    const leftovers = pooled ? pooled.rt.hasPendingJob() : false;
    if (pooled && (run.baseline || fatal || limitHit || leftovers || hostAllocationFailed || ++pooled.runs >= RUNTIME_MAX_RUNS || run.rt !== pooled.rt)) dropRuntime();
  } catch {
    // Freeing the runtime failed (something leaked): this worker's wasm instance is not trusted
    // again; the pool replaces it. This run's own outcome stands.
    fatal = true;
    pooled = null;
    spare = null;
  }
  runs.delete(run.runId);
  if (hostAllocationFailed) fatal = true;
  let cpuEnd = null;
  port.postMessage({
    type: 'done',
    runId: run.runId,
    result: outcome.result,
    error: outcome.error,
    resultTruncated: outcome.resultTruncated ?? null,
    resultUndefined: outcome.resultUndefined === true,
    unsentCalls: run.outbox.map((c) => c.operationId),
    logs: run.takeLogs(true),
    fatal,
    ...(demoted ? { demoted: true } : {}),
    ...(run.cpuAtStart !== null && (cpuEnd = threadCpuMs()) !== null ? { cpuMs: Math.max(0, cpuEnd - run.cpuAtStart) } : {}),
  });
  if (!fatal && !run.baseline) {
    // Build the next run's context while idle (same operations and limits as this one), a moment
    // after 'done': built at once, it took a core (~1 ms of CPU) just when the main thread had to
    // take this result and write the response, and the client read it (see PREPARE_DELAY_MS).
    const key = run.kitKey;
    setTimeout(() => {
      if (runs.size > 0 || spare || !key) return;
      try {
        spare = buildKit(QuickJS, key, run.limits);
      } catch {
        spare = null;
        try {
          dropRuntime();
        } catch {
          pooled = null;
        }
      }
    }, PREPARE_DELAY_MS);
  }
}

function hostFailure(run, err) {
  const message = String(err?.message ?? err);
  if (/maximum call stack|stack overflow/i.test(message)) return stackError(run, undefined);
  if (/out of memory|\bOOM\b|enlarge memory|allocation failed/i.test(message)) return memoryError(run, undefined);
  if (Date.now() >= run.deadline) return timeoutError(run);
  return { name: 'SandboxInternalError', message: `The sandbox failed while running the script: ${message}` };
}

function timeoutError(run) {
  const queued = run.queuedMs >= 50 ? ` (${formatSeconds(run.queuedMs)} of it waiting for a sandbox worker)` : '';
  return {
    name: 'TimeoutError',
    message:
      `The script exceeded the ${formatSeconds(run.limits.wallClockMs)} limit${queued} and was stopped. ` +
      'Avoid busy loops, make fewer or smaller API calls, or split the work across several executes.',
  };
}

function memoryError(run, line) {
  return {
    name: 'MemoryLimitError',
    message:
      `The script exceeded the ${formatBytes(run.limits.memoryBytes)} memory limit` +
      (line ? ` (line ${line})` : '') +
      '. Work with less data at once: use filters, smaller page sizes, or return a summary.',
  };
}

function stackError(run, line) {
  return {
    name: 'StackOverflowError',
    message:
      `Maximum call stack size exceeded (stack limit ${formatBytes(run.limits.stackBytes)})` +
      (line ? ` at line ${line}` : '') +
      '. Check for unbounded recursion.',
  };
}

function runtimeFor(QuickJS, limits) {
  if (!pooled) {
    const rt = QuickJS.newRuntime();
    rt.setModuleLoader(() => {
      throw new Error('Modules are not available in the sandbox: import() and import statements are disabled. Use the api object.');
    });
    pooled = { rt, runs: 0 };
  }
  const rt = pooled.rt;
  rt.removeInterruptHandler();
  rt.setMemoryLimit(limits.memoryBytes);
  rt.setMaxStackSize(limits.stackBytes);
  return rt;
}

/**
 * A fresh context with the prelude applied: `api` and `console` built for `key` (the config JSON).
 * Host functions reach the run through `binding.run`, set when a run takes the context.
 */
function buildKit(QuickJS, key, limits) {
  const rt = runtimeFor(QuickJS, limits);
  const ctx = rt.newContext();
  const binding = { run: null };
  // describe and shape: compiled on first use (helperOf).
  const kit = { key, ctx, binding, serialize: null, dropped: null, prims: null, describe: null, shape: null };
  try {
    // ---- host functions handed to the prelude (never placed on globalThis) ----
    const hostCall = ctx.newFunction('hostCall', (opHandle, jsonHandle) => {
      const run = binding.run;
      // Calls refused here never leave the worker; the reply is returned synchronously (the guest
      // awaits it all the same).
      const reject = (status, code, message) => ctx.newString(envelope(status, code, message));
      if (!run) return reject(500, 'internal_error', 'The sandbox is not running a script.');
      if (ctx.typeof(opHandle) !== 'string' || ctx.typeof(jsonHandle) !== 'string') {
        return reject(400, 'invalid_call', 'api.call(operationId, input) needs an operationId string.');
      }
      const operationId = ctx.getString(opHandle);
      if (!run.allowed.has(operationId)) {
        return reject(
          404,
          'unknown_operation',
          `Unknown operation "${operationId.slice(0, 200)}": it is not available to this script. ` +
            'Use the search tool to find the right operationId.',
        );
      }
      if (run.callCount >= run.limits.maxCalls) {
        return reject(
          429,
          'call_limit_exceeded',
          `Call limit exceeded: a script may make at most ${run.limits.maxCalls} API calls per execute. ` +
            'Fetch more per call (filters, larger pages) or split the work across several executes.',
        );
      }
      const input = ctx.getString(jsonHandle);
      if (input.length > MAX_INPUT_CHARS) {
        return reject(413, 'input_too_large', `The input for ${operationId} exceeds ${MAX_INPUT_CHARS} characters of JSON.`);
      }
      run.callCount++;
      const deferred = ctx.newPromise();
      const id = ++run.nextCallId;
      run.inflight.set(id, deferred);
      run.outbox.push({ id, operationId, input });
      if (run.baseline) run.flushCalls();
      return deferred.handle;
    });
    const hostLog = ctx.newFunction('hostLog', (textHandle, lengthHandle) => {
      const run = binding.run;
      if (!run || ctx.typeof(textHandle) !== 'string') return;
      const text = ctx.getString(textHandle);
      const full = ctx.typeof(lengthHandle) === 'number' ? ctx.getNumber(lengthHandle) : text.length;
      run.addLog(text, full);
      // Once the budget is spent the guest stops calling (it only counts what it drops).
      return run.logsTruncated ? ctx.true : ctx.false;
    });
    const config = ctx.newString(key);
    const preludeFn = ctx.unwrapResult(ctx.evalCode(PRELUDE, 'prelude.js'));
    const made = ctx.callFunction(preludeFn, ctx.undefined, hostCall, hostLog, config);
    preludeFn.dispose();
    config.dispose();
    hostCall.dispose();
    hostLog.dispose();
    const handle = ctx.unwrapResult(made);
    kit.serialize = ctx.getProp(handle, 'serialize');
    kit.dropped = ctx.getProp(handle, 'dropped');
    kit.prims = ctx.getProp(handle, 'prims');
    handle.dispose();
    return kit;
  } catch (err) {
    disposeKit(kit);
    throw err;
  }
}

/** The kit's `describe` or `shape` (see HELPERS), compiled into its context on first use. */
function helperOf(kit, which) {
  if (!kit.describe) {
    const { ctx } = kit;
    // Failures are not dumped (ctx.unwrapResult would read the error's properties, running the
    // script's getters): the callers report a generic error instead.
    const unwrap = (r) => {
      if (!r.error) return r.value;
      r.error.dispose();
      throw new Error('The sandbox could not prepare its error helpers.');
    };
    const fn = unwrap(ctx.evalCode(HELPERS, 'helpers.js'));
    try {
      const made = unwrap(ctx.callFunction(fn, ctx.undefined, kit.prims));
      try {
        const describe = ctx.getProp(made, 0);
        let shape;
        try {
          shape = ctx.getProp(made, 1);
        } catch (err) {
          describe.dispose();
          throw err;
        }
        kit.describe = describe;
        kit.shape = shape;
      } finally {
        made.dispose();
      }
    } finally {
      fn.dispose();
    }
  }
  return which === 'shape' ? kit.shape : kit.describe;
}

/**
 * The `api` object's layout for `operations`, as the prelude builds it: [[key, operationId |
 * subtree], ...] in the order of first appearance. An operationId is split on '.'; it is left out
 * when it has fewer than two parts, an empty part, 'call' as its first part (api.call is the
 * generic entry), or a path that clashes with one before it (a function where a namespace should
 * be, or the reverse); namespaces on its path made before the clash stay. Computed here rather
 * than in the guest: it is the same for every run with these operations, and V8 does it in a
 * fraction of what it cost in QuickJS.
 */
function apiTree(operations) {
  const root = new Map();
  for (const op of operations) {
    const parts = op.split('.');
    if (parts.length < 2) continue;
    let node = root;
    let ok = true;
    for (let j = 0; j < parts.length - 1; j++) {
      const key = parts[j];
      if (key === '' || (node === root && key === 'call')) {
        ok = false;
        break;
      }
      const existing = node.get(key);
      if (existing === undefined) {
        const ns = new Map();
        node.set(key, ns);
        node = ns;
      } else if (existing instanceof Map) {
        node = existing;
      } else {
        ok = false;
        break;
      }
    }
    const leaf = parts[parts.length - 1];
    if (!ok || leaf === '' || node.has(leaf)) continue;
    node.set(leaf, op);
  }
  const entries = (m) => [...m].map(([k, v]) => [k, v instanceof Map ? entries(v) : v]);
  return entries(root);
}

/** The last key computed, and what it was computed from: runs mostly repeat it. */
let lastKey = { operations: [], maxLogBytes: -1, maxResultBytes: -1, key: '' };

function sameStrings(a, b) {
  if (a.length !== b.length) return false;
  for (let i = 0; i < a.length; i++) if (a[i] !== b[i]) return false;
  return true;
}

function kitKey(run) {
  const { limits } = run;
  const last = lastKey;
  if (last.maxLogBytes === limits.maxLogBytes && last.maxResultBytes === limits.maxResultBytes && sameStrings(last.operations, run.operations)) {
    return last.key;
  }
  const key = JSON.stringify({
    tree: apiTree(run.operations),
    logChars: limits.maxLogBytes + 1,
    fullResultChars: limits.maxResultBytes * FULL_RESULT_FACTOR,
    resultSliceChars: limits.maxResultBytes,
    maxInputChars: MAX_INPUT_CHARS,
    maxErrorChars: MAX_ERROR_MESSAGE_CHARS,
  });
  lastKey = { operations: run.operations, maxLogBytes: limits.maxLogBytes, maxResultBytes: limits.maxResultBytes, key };
  return key;
}

async function execute(QuickJS, run) {
  const { limits } = run;
  const key = (run.kitKey = kitKey(run));
  let kit = spare;
  spare = null;
  // A context prepared for other operations or limits, or on a runtime since replaced: build anew.
  if (kit && (kit.key !== key || !pooled || kit.ctx.runtime !== pooled.rt)) {
    disposeKit(kit);
    kit = null;
  }
  // Never start a script on a runtime with work queued by someone else (belt and braces: the end of
  // every run already drops such a runtime).
  if (pooled && pooled.rt.hasPendingJob()) {
    if (kit) disposeKit(kit);
    kit = null;
    dropRuntime();
  }
  const rt = runtimeFor(QuickJS, limits);
  run.rt = rt;
  if (!kit) kit = buildKit(QuickJS, key, limits);
  run.kit = kit;
  run.ctx = kit.ctx;
  kit.binding.run = run;
  try {
    return await runScript(run, kit);
  } finally {
    readDroppedLogs(run, kit.dropped);
  }
}

/** Log entries the guest dropped by itself after the budget was spent. */
function readDroppedLogs(run, dropped) {
  const { rt, ctx } = run;
  try {
    rt.removeInterruptHandler();
    const res = ctx.callFunction(dropped, ctx.undefined);
    if (res.error) res.error.dispose();
    else run.droppedLogEntries += res.value.consume((h) => (ctx.typeof(h) === 'number' ? ctx.getNumber(h) : 0));
  } catch {
    // Best effort: only the count in the truncation marker is affected.
  }
}

async function runScript(run, kit) {
  const { rt, ctx } = run;
  if (Date.now() >= run.deadline) return { result: null, error: timeoutError(run) };
  run.armInterrupt();

  // Keep the user's first line on line 1 so reported line numbers match their code.
  const evaluated = ctx.evalCode(`(async () => {${run.code}\n})()`, 'sandbox.js');
  if (evaluated.error) return { result: null, error: consumeError(run, kit, evaluated.error) };
  const promise = evaluated.value;
  try {
    for (;;) {
      // Deliver host replies into the guest.
      while (run.replies.length > 0) {
        const [id, json] = run.replies.shift();
        const deferred = run.inflight.get(id);
        if (!deferred) continue;
        const value = ctx.newString(json); // may throw when the heap is full; the deferred is then disposed with the rest
        run.inflight.delete(id);
        try {
          deferred.resolve(value);
        } catch {
          // Resolving can only fail when the runtime is out of budget; the checks below report it.
        } finally {
          value.dispose();
          deferred.dispose();
        }
      }
      const jobs = rt.executePendingJobs();
      if (jobs.error) return { result: null, error: consumeError(run, kit, jobs.error) };

      const state = ctx.getPromiseState(promise);
      if (state.type === 'fulfilled') {
        if (state.notAPromise) return readResult(run, kit, promise);
        try {
          return readResult(run, kit, state.value);
        } finally {
          state.value.dispose();
        }
      }
      if (state.type === 'rejected') return { result: null, error: consumeError(run, kit, state.error) };

      if (run.replies.length > 0 || rt.hasPendingJob()) continue;
      if (Date.now() >= run.deadline) return { result: null, error: timeoutError(run) };
      // Everything the script asked for in this tick goes out in one message.
      run.flushCalls();
      if (run.inflight.size === 0) {
        return {
          result: null,
          error: {
            name: 'Error',
            message:
              'The script is waiting on a promise that can never settle. Only api.* calls are asynchronous ' +
              'in the sandbox (there are no timers, fetch or I/O); make sure every await leads to one.',
          },
        };
      }
      if (run.awaiting !== 0) run.awaitChannelReply();
      else await run.waitForReply();
    }
  } finally {
    promise.dispose();
  }
}

/** Serialize the script's resolved value inside the guest and apply the result budget. */
function readResult(run, kit, valueHandle) {
  const { ctx, limits } = run;
  const { serialize } = kit;
  const call = ctx.callFunction(serialize, ctx.undefined, valueHandle);
  if (call.error) {
    const error = consumeError(run, kit, call.error);
    if (error.name === 'TypeError' || error.name === 'RangeError' || error.name === 'InternalError') {
      error.message = `The script's return value could not be converted to JSON: ${error.message}`;
    }
    return { result: null, error };
  }
  let total, text, complete, undef;
  const totalHandle = ctx.getProp(call.value, 0);
  const textHandle = ctx.getProp(call.value, 1);
  const completeHandle = ctx.getProp(call.value, 2);
  const undefHandle = ctx.getProp(call.value, 3);
  try {
    total = ctx.getNumber(totalHandle);
    text = ctx.getString(textHandle);
    complete = ctx.typeof(completeHandle) === 'boolean' && ctx.dump(completeHandle) === true;
    undef = ctx.typeof(undefHandle) === 'boolean' && ctx.dump(undefHandle) === true;
  } finally {
    totalHandle.dispose();
    textHandle.dispose();
    completeHandle.dispose();
    undefHandle.dispose();
    call.value.dispose();
  }
  const max = limits.maxResultBytes;
  let size;
  if (complete) {
    const bytes = Buffer.byteLength(text, 'utf8');
    if (bytes <= max) return { result: JSON.parse(text), error: null, resultUndefined: undef };
    size = `${bytes} bytes`;
  } else {
    size = `at least ${total} bytes`;
  }
  let shape = null;
  try {
    run.rt.setInterruptHandler(shouldInterruptAfterDeadline(Date.now() + DESCRIBE_GRACE_MS));
    const described = ctx.callFunction(helperOf(kit, 'shape'), ctx.undefined, valueHandle);
    if (described.error) described.error.dispose();
    else shape = described.value.consume((h) => (ctx.typeof(h) === 'string' ? ctx.getString(h) : null));
  } catch {
    shape = null;
  }
  const marker =
    `…[truncated: result was ${size}, limit ${max}; ` +
    'narrow the query with filters or a smaller limit, or return only the fields you need]';
  const budget = Math.max(0, max - Buffer.byteLength(marker, 'utf8'));
  return { result: utf8Truncate(text, budget) + marker, error: null, resultTruncated: { size, limit: max, shape } };
}

/** Turn a guest exception handle into an ExecuteResult error (disposes the handle). */
function consumeError(run, kit, errorHandle) {
  const { rt, ctx, limits } = run;
  const timedOut = Date.now() >= run.deadline;
  let info = null;
  try {
    // The script's own budgets may be exhausted (that is often why we are here); grant a little
    // time and memory to read the error out.
    rt.setInterruptHandler(shouldInterruptAfterDeadline(Date.now() + DESCRIBE_GRACE_MS));
    rt.setMemoryLimit(limits.memoryBytes + DESCRIBE_EXTRA_MEMORY);
    const described = ctx.callFunction(helperOf(kit, 'describe'), ctx.undefined, errorHandle);
    if (described.error) {
      described.error.dispose();
    } else {
      const json = described.value.consume((h) => (ctx.typeof(h) === 'string' ? ctx.getString(h) : null));
      if (json) info = JSON.parse(json);
    }
  } catch {
    info = null;
  } finally {
    errorHandle.dispose();
    if (run.guestInterrupt) run.armInterrupt();
    else rt.removeInterruptHandler();
    rt.setMemoryLimit(limits.memoryBytes);
  }
  if (!info) {
    if (timedOut) return timeoutError(run);
    return {
      name: 'Error',
      message: 'The script failed with an error that could not be read (the sandbox may have run out of memory).',
    };
  }
  const { name, message } = info;
  if (name === 'InternalError') {
    if (message === 'interrupted') return timeoutError(run);
    if (message === 'out of memory') return memoryError(run, info.line);
    if (message === 'stack overflow') return stackError(run, info.line);
  }
  if (timedOut && message === 'interrupted') return timeoutError(run);
  const error = { name, message: info.api || !info.line ? message : `${message} (line ${info.line})` };
  if (typeof info.status === 'number') error.status = info.status;
  if (typeof info.code === 'string') error.code = info.code;
  return error;
}
