/**
 * A decode worker: runs `processJob` for the main thread and posts the head, then each slice, then
 * `end` (or one `error`). Only structured-cloneable data crosses the boundary.
 */
import { parentPort } from 'node:worker_threads';
import { IngestDecodeError, processJob, type IngestJob } from '../process.js';
import type { WorkerReply } from './pool.js';
import { lowerThreadPriority } from '../../domain/thread-priority.js';

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
  for (const slice of result.slices) post({ id: msg.id, type: 'slice', slice });
  post({ id: msg.id, type: 'end' });
});
port.postMessage({ id: -1, type: 'ready' } satisfies WorkerReply);
