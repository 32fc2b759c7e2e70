/**
 * A decode worker: runs `processJob` for the main thread and posts the head, then each slice, then
 * `end` (or one `error`). Only structured-cloneable data crosses the boundary.
 */
import { parentPort } from 'node:worker_threads';
import { IngestDecodeError, processJob, type IngestJob } from '../process.js';
import type { WorkerReply } from './pool.js';
import { lowerThreadPriority } from '../../domain/thread-priority.js';
import type { EncodedSpans } from '../../storage/clickhouse/span-rows.js';

if (!parentPort) throw new Error('decode-worker must run as a worker thread');
const port = parentPort;
// Decoding a hostile body takes only the CPU the event loop does not need (issue 10).
lowerThreadPriority();

port.on('message', (msg: { id: number; job: IngestJob }) => {
  const post = (m: WorkerReply) => port.postMessage(m);
  let result;
  try {
    result = processJob(msg.job);
  } catch (err) {
    const e = err as Error;
    post({ id: msg.id, type: 'error', decode: err instanceof IngestDecodeError, code: (err as IngestDecodeError).code ?? 'internal', message: e?.message ?? String(err) });
    return;
  }
  post({ id: msg.id, type: 'head', head: result.head });
  for (const slice of result.slices) port.postMessage({ id: msg.id, type: 'slice', slice } satisfies WorkerReply, slice.ch ? transferable(slice.ch) : []);
  post({ id: msg.id, type: 'end' });
});
port.postMessage({ id: -1, type: 'ready' } satisfies WorkerReply);

/** The ClickHouse text's buffers that hold nothing else: moved to the main thread, not copied. */
function transferable(ch: EncodedSpans): ArrayBuffer[] {
  const out: ArrayBuffer[] = [];
  for (const u of [ch.spans, ch.entries, ch.chunks]) {
    if (u.byteOffset === 0 && u.byteLength === u.buffer.byteLength && u.byteLength > 0 && !out.includes(u.buffer as ArrayBuffer)) out.push(u.buffer as ArrayBuffer);
  }
  return out;
}
