import type Koa from 'koa';
import { PayloadTooLargeError, ValidationError } from '../core/errors.js';

/** Read the raw request body, refusing more than `limit` bytes (413) before buffering it all. */
export async function readRawBody(ctx: Koa.Context, limit: number): Promise<Buffer> {
  const declared = Number(ctx.get('content-length'));
  if (Number.isFinite(declared) && declared > limit) throw new PayloadTooLargeError(limit);
  const chunks: Buffer[] = [];
  let size = 0;
  for await (const chunk of ctx.req) {
    size += (chunk as Buffer).length;
    if (size > limit) throw new PayloadTooLargeError(limit);
    chunks.push(chunk as Buffer);
  }
  return Buffer.concat(chunks);
}

/** JSON object body; empty body → {}. */
export async function readJsonBody(ctx: Koa.Context, limit: number): Promise<Record<string, unknown>> {
  const raw = await readRawBody(ctx, limit);
  if (raw.length === 0) return {};
  let v: unknown;
  try {
    v = JSON.parse(raw.toString('utf8'));
  } catch {
    throw new ValidationError('The request body is not valid JSON.', undefined, 'invalid_json');
  }
  if (!v || typeof v !== 'object' || Array.isArray(v)) throw new ValidationError('The request body must be a JSON object.', undefined, 'invalid_json');
  return v as Record<string, unknown>;
}
