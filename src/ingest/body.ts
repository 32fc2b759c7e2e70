/**
 * Reading an ingest request body: the raw (compressed) cap, one Content-Encoding at most, and
 * streaming decompression with the decompressed cap enforced as bytes arrive. Decompression runs on
 * zlib's thread pool (the async stream API), so a large or hostile body never blocks the event loop.
 *
 * Reusable by every ingest route (OTLP, Sentry, and the connector routes registered in mount.ts):
 *
 *   const body = await readIngestBody(ctx, s.config.ingest);                  // authenticate before calling
 *   const body = await readIngestBody(ctx, limits, { beforeRest: (head) => authenticate(head) });
 *
 * `beforeRest` lets a protocol whose credential may sit inside the body (a Sentry envelope header's
 * `dsn`) authenticate after the first decompressed line and before anything else is inflated.
 */
import type Koa from 'koa';
import type { Readable } from 'node:stream';
import * as zlib from 'node:zlib';
import { AppError, PayloadTooLargeError, ValidationError } from '../core/errors.js';

export interface IngestBodyLimits {
  /** Cap on the bytes on the wire (compressed). */
  maxBodyBytes: number;
  /** Cap on the bytes after decompression. */
  maxDecompressedBytes: number;
}

export interface ReadIngestBodyOptions {
  /**
   * Called once with the first line of the decompressed body (without the newline; at most 64 KiB,
   * or the whole body when it is shorter) before the rest is read and inflated. Throwing aborts the
   * request with that error: nothing more is read or decompressed.
   */
  beforeRest?: (head: Buffer) => void;
}

const HEAD_MAX = 64 * 1024;
const ENCODINGS = new Set(['gzip', 'x-gzip', 'deflate', 'br']);

/** The Content-Encoding to undo ('' for identity). Stacked (`gzip, gzip`) and unknown encodings are 415. */
export function parseContentEncoding(header: string | undefined): string {
  const parts = (header ?? '')
    .split(',')
    .map((e) => e.trim().toLowerCase())
    .filter((e) => e !== '' && e !== 'identity');
  if (parts.length > 1) {
    throw new AppError(415, 'invalid_request_error', 'unsupported_encoding', `Stacked content encodings (${parts.join(', ')}) are refused: send one of gzip, deflate or br.`);
  }
  const enc = parts[0] ?? '';
  if (enc && !ENCODINGS.has(enc)) {
    throw new AppError(415, 'invalid_request_error', 'unsupported_encoding', `Unsupported content-encoding "${enc}": send gzip, deflate, br or none.`);
  }
  return enc;
}

function decoder(enc: string, first: Buffer): zlib.Gunzip | zlib.Inflate | zlib.InflateRaw | zlib.BrotliDecompress {
  if (enc === 'gzip' || enc === 'x-gzip') return zlib.createGunzip();
  if (enc === 'br') return zlib.createBrotliDecompress();
  // HTTP "deflate" is zlib-wrapped per RFC 9110, but many clients send raw deflate.
  const zlibWrapped = first.length >= 2 && (first[0]! & 0x0f) === 8 && first[0]! >> 4 <= 7 && ((first[0]! << 8) | first[1]!) % 31 === 0;
  return zlibWrapped ? zlib.createInflate() : zlib.createInflateRaw();
}

/**
 * Read the request body (raw cap → 413), undo its single Content-Encoding streaming (decompressed
 * cap → 413 as soon as it is crossed; corrupt data → 400 `invalid_encoding`), and return the bytes.
 */
export async function readIngestBody(ctx: Koa.Context, limits: IngestBodyLimits, opts: ReadIngestBodyOptions = {}): Promise<Buffer> {
  const enc = parseContentEncoding(ctx.get('content-encoding') || undefined);
  const declared = Number(ctx.get('content-length'));
  if (Number.isFinite(declared) && declared > limits.maxBodyBytes) throw new PayloadTooLargeError(limits.maxBodyBytes);
  return readStream(ctx.req, enc, limits, opts);
}

/** The same on any readable (exported for tests and non-Koa callers). */
export function readStream(src: Readable, enc: string, limits: IngestBodyLimits, opts: ReadIngestBodyOptions = {}): Promise<Buffer> {
  return new Promise<Buffer>((resolve, reject) => {
    const chunks: Buffer[] = [];
    let size = 0;
    let raw = 0;
    let done = false;
    let head: Buffer[] | null = opts.beforeRest ? [] : null;
    let headSize = 0;
    let inflater: ReturnType<typeof decoder> | null = null;

    const fail = (err: unknown) => {
      if (done) return;
      done = true;
      src.off('data', onRaw);
      src.pause();
      // Drain what the client is still sending so the error response can be read by it.
      src.resume();
      if (inflater) inflater.destroy();
      reject(err);
    };
    const finishHead = (): boolean => {
      if (!head) return true;
      const all = Buffer.concat(head);
      const nl = all.indexOf(0x0a);
      const line = nl >= 0 ? all.subarray(0, nl) : all.subarray(0, HEAD_MAX);
      head = null;
      try {
        opts.beforeRest!(line);
        return true;
      } catch (err) {
        fail(err);
        return false;
      }
    };
    const onOut = (chunk: Buffer) => {
      if (done) return;
      size += chunk.length;
      if (size > limits.maxDecompressedBytes) return fail(new PayloadTooLargeError(limits.maxDecompressedBytes));
      chunks.push(chunk);
      if (head) {
        head.push(chunk);
        headSize += chunk.length;
        if (chunk.includes(0x0a) || headSize >= HEAD_MAX) {
          if (!finishHead()) return;
        }
      }
    };
    const onEnd = () => {
      if (done) return;
      if (head && !finishHead()) return;
      done = true;
      resolve(Buffer.concat(chunks, size));
    };
    const onRaw = (chunk: Buffer) => {
      if (done) return;
      raw += chunk.length;
      if (raw > limits.maxBodyBytes) return fail(new PayloadTooLargeError(limits.maxBodyBytes));
      if (!enc) return onOut(chunk);
      if (!inflater) {
        inflater = decoder(enc, chunk);
        inflater.on('data', onOut);
        inflater.on('end', onEnd);
        inflater.on('error', (err) => {
          // A body whose credential would be in its first line is authenticated before its corruption is reported.
          if (head && !finishHead()) return;
          fail(new ValidationError(`The body could not be decompressed (${enc}): ${err.message}`, undefined, 'invalid_encoding'));
        });
      }
      // Backpressure: stop reading the socket while zlib catches up.
      if (!inflater.write(chunk)) {
        src.pause();
        inflater.once('drain', () => !done && src.resume());
      }
    };
    src.on('data', onRaw);
    src.once('end', () => {
      if (done) return;
      if (!enc) return onEnd();
      if (!inflater) return onEnd();
      inflater.end();
    });
    src.once('error', (err) => fail(err));
  });
}
