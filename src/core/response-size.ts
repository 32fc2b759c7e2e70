import type { AnyOperation } from '../../operations/define.js';
import { AppError } from './errors.js';

/** Input fields that make an answer smaller, in the order a message suggests them. */
const NARROWING = ['limit', 'from', 'to', 'q', 'level', 'service', 'status', 'environment', 'release', 'fields', 'metric_limit', 'log_limit'];

/**
 * Every read's answer is capped (issue 10 item 1: 20 fat log rows made one `logs.search` return
 * 35.6 MB and block every other request). The answer is serialized once; past `maxBytes` the
 * caller gets 400 `response_too_large` saying how to narrow the request instead of a huge body.
 */
export function serializeCapped(op: AnyOperation, value: unknown, maxBytes: number): string {
  const text = JSON.stringify(value ?? null);
  // A UTF-8 byte is at most 3 per UTF-16 unit: only count bytes when the length is in range.
  if (text.length * 3 > maxBytes && Buffer.byteLength(text) > maxBytes) throw responseTooLarge(op, Buffer.byteLength(text), maxBytes);
  return text;
}

export function responseTooLarge(op: AnyOperation, bytes: number, maxBytes: number): AppError {
  const fields = NARROWING.filter((f) => f in op.input.shape).map((f) => `\`${f}\``);
  const how = fields.length ? `narrow the request (${fields.join(', ')})` : 'narrow the request';
  return new AppError(
    400,
    'invalid_request_error',
    'response_too_large',
    `The answer to ${op.operationId} would be ${bytes} bytes, over the ${maxBytes}-byte response limit: ${how}${'limit' in op.input.shape ? ', for example a lower `limit`' : ''}.`,
  );
}
