/**
 * The decode worker pool: ingest bodies are decoded, normalized, limited and grouped on worker
 * threads, so the main thread only authenticates and writes. Workers start lazily on the first job,
 * do not keep the process alive, and are replaced when one dies (a hostile body exhausting a worker's
 * heap fails that request with 413, never the server). Size 0 runs jobs on the main thread (fallback).
 */
import { Worker } from 'node:worker_threads';
import { AppError, PayloadTooLargeError, ValidationError } from '../../core/errors.js';
import { IngestDecodeError, processJob, type IngestHead, type IngestJob, type IngestSlice } from '../process.js';

export type WorkerReply =
  | { id: number; type: 'ready' }
  | { id: number; type: 'head'; head: IngestHead }
  | { id: number; type: 'slice'; slice: IngestSlice }
  | { id: number; type: 'end' }
  | { id: number; type: 'error'; decode: boolean; code: string; message: string };

export interface IngestRun {
  head: IngestHead;
  /** The slices, in order; each arrives as its own event-loop task. */
  slices: AsyncIterable<IngestSlice>;
  /** Stop receiving slices (the request failed, e.g. over quota). */
  cancel(): void;
}

/** Heap of one decode worker: a body the size of the decompressed cap decodes well within it. */
const WORKER_HEAP_MB = 1024;

interface Channel {
  head: { resolve: (h: IngestHead) => void; reject: (e: unknown) => void };
  headDone: boolean;
  slices: IngestSlice[];
  ended: boolean;
  error: unknown;
  wake: (() => void) | null;
  cancelled: boolean;
  maxDecompressedBytes: number;
}

interface Slot {
  worker: Worker;
  jobs: Set<number>;
  lastError: unknown;
  /** The worker has loaded its code (the first start takes a while: it loads the TypeScript). */
  ready: boolean;
}

/**
 * While no worker has loaded yet, bodies up to this size are decoded on the main thread (a few ms at
 * most) instead of waiting for the worker's first start; larger ones wait for it.
 */
export const INLINE_WHILE_COLD_BYTES = 64 * 1024;

function toAppError(code: string, message: string, decode: boolean): AppError {
  if (decode) return new ValidationError(message, undefined, code);
  return new AppError(500, 'api_error', 'internal_error', 'The ingest body could not be processed.');
}

export class DecodePool {
  private slots: Slot[] = [];
  private channels = new Map<number, Channel>();
  private nextId = 1;
  private closed = false;
  /** Jobs run, for tests and the bench. */
  jobsRun = 0;

  constructor(readonly size: number) {}

  /**
   * Starts every worker now instead of at the first large body: a worker's first start (module
   * loading) takes about a second, and bodies over INLINE_WHILE_COLD_BYTES that arrive meanwhile
   * wait for it. A listening server calls it; servers that never listen (tests) keep starting
   * workers lazily.
   */
  warm(): void {
    if (this.closed) return;
    while (this.slots.length < this.size) this.spawn();
  }

  /** Workers started, and how many of them have loaded. */
  workers(): { started: number; ready: number } {
    return { started: this.slots.length, ready: this.slots.filter((x) => x.ready).length };
  }

  async run(job: IngestJob, maxDecompressedBytes: number): Promise<IngestRun> {
    this.jobsRun++;
    if (this.size <= 0 || this.closed) return this.runInline(job);
    if (!this.slots.some((x) => x.ready) && job.body.byteLength <= INLINE_WHILE_COLD_BYTES) {
      if (this.slots.length === 0) this.spawn();
      return this.runInline(job);
    }
    const id = this.nextId++;
    const ch: Channel = { head: null!, headDone: false, slices: [], ended: false, error: null, wake: null, cancelled: false, maxDecompressedBytes };
    const head = new Promise<IngestHead>((resolve, reject) => (ch.head = { resolve, reject }));
    this.channels.set(id, ch);
    const slot = this.pick();
    slot.jobs.add(id);
    // Keep the process alive while a job is in flight; an idle pool does not.
    if (slot.jobs.size === 1) slot.worker.ref();
    const body = job.body;
    // A standalone buffer moves to the worker without a copy; pooled (small) ones are copied.
    const transfer = body.byteOffset === 0 && body.byteLength === body.buffer.byteLength && body.byteLength >= 64 * 1024 ? [body.buffer as ArrayBuffer] : [];
    slot.worker.postMessage({ id, job }, transfer);
    const h = await head;
    return { head: h, slices: this.iterate(id, ch), cancel: () => this.cancel(id, ch) };
  }

  private async runInline(job: IngestJob): Promise<IngestRun> {
    await new Promise((r) => setImmediate(r));
    let result;
    try {
      result = processJob(job);
    } catch (err) {
      if (err instanceof IngestDecodeError) throw new ValidationError(err.message, undefined, err.code);
      throw err;
    }
    let cancelled = false;
    return {
      head: result.head,
      slices: (async function* () {
        for (const s of result.slices) {
          if (cancelled) return;
          yield s;
          await new Promise((r) => setImmediate(r));
        }
      })(),
      cancel: () => (cancelled = true),
    };
  }

  private async *iterate(id: number, ch: Channel): AsyncGenerator<IngestSlice> {
    try {
      for (;;) {
        if (ch.slices.length) {
          yield ch.slices.shift()!;
          continue;
        }
        if (ch.error) throw ch.error;
        if (ch.ended || ch.cancelled) return;
        await new Promise<void>((r) => (ch.wake = r));
      }
    } finally {
      this.cancel(id, ch);
    }
  }

  private cancel(id: number, ch: Channel): void {
    ch.cancelled = true;
    ch.slices.length = 0;
    if (ch.ended || ch.error) this.channels.delete(id);
  }

  private pick(): Slot {
    let best: Slot | undefined;
    for (const s of this.slots) if (!best || s.jobs.size < best.jobs.size) best = s;
    if (best && (best.jobs.size === 0 || this.slots.length >= this.size)) return best;
    return this.spawn();
  }

  private spawn(): Slot {
    const worker = new Worker(new URL('./entry.mjs', import.meta.url), { resourceLimits: { maxOldGenerationSizeMb: WORKER_HEAP_MB } });
    const slot: Slot = { worker, jobs: new Set(), lastError: null, ready: false };
    worker.on('message', (m: WorkerReply) => this.onMessage(slot, m));
    worker.on('error', (err) => (slot.lastError = err));
    worker.on('exit', () => this.onExit(slot));
    worker.unref();
    this.slots.push(slot);
    return slot;
  }

  private onMessage(slot: Slot, m: WorkerReply): void {
    if (m.type === 'ready') {
      slot.ready = true;
      return;
    }
    const ch = this.channels.get(m.id);
    if (m.type === 'end' || m.type === 'error') {
      slot.jobs.delete(m.id);
      if (slot.jobs.size === 0) slot.worker.unref();
    }
    if (!ch) return;
    switch (m.type) {
      case 'head':
        ch.headDone = true;
        ch.head.resolve(m.head);
        return;
      case 'slice':
        if (!ch.cancelled) ch.slices.push(m.slice);
        break;
      case 'end':
        ch.ended = true;
        if (ch.cancelled) this.channels.delete(m.id);
        break;
      case 'error': {
        const err = toAppError(m.code, m.message, m.decode);
        if (!ch.headDone) {
          ch.headDone = true;
          ch.head.reject(err);
          this.channels.delete(m.id);
          return;
        }
        ch.error = err;
        break;
      }
    }
    const w = ch.wake;
    ch.wake = null;
    w?.();
  }

  private onExit(slot: Slot): void {
    const i = this.slots.indexOf(slot);
    if (i >= 0) this.slots.splice(i, 1);
    const oom = (slot.lastError as { code?: string } | null)?.code === 'ERR_WORKER_OUT_OF_MEMORY';
    for (const id of slot.jobs) {
      const ch = this.channels.get(id);
      if (!ch) continue;
      const err = oom ? new PayloadTooLargeError(ch.maxDecompressedBytes) : new AppError(500, 'api_error', 'internal_error', 'The ingest body could not be processed.');
      this.channels.delete(id);
      if (!ch.headDone) {
        ch.headDone = true;
        ch.head.reject(err);
      } else {
        ch.error = err;
        const w = ch.wake;
        ch.wake = null;
        w?.();
      }
    }
    slot.jobs.clear();
  }

  async close(): Promise<void> {
    this.closed = true;
    const slots = this.slots.splice(0);
    await Promise.all(slots.map((s) => s.worker.terminate().catch(() => undefined)));
  }
}

const shared = new Map<number, DecodePool>();

/**
 * The process-wide pool of this size: decode workers are stateless, so every server of the process
 * (tests start many) shares them instead of each starting its own. Idle workers do not keep the
 * process alive.
 */
export function sharedDecodePool(size: number): DecodePool {
  let p = shared.get(size);
  if (!p) {
    p = new DecodePool(size);
    shared.set(size, p);
  }
  return p;
}
