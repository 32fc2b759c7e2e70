/**
 * One error hierarchy for every face. The HTTP face renders it as the spec's Shape A
 * (`type`, `code`, `message`, optional `param`, `doc_url`, `retry_after`); MCP and the CLI show the
 * same fields. Anything that is not an AppError becomes a generic 500 with no internal text.
 */
export type ErrorType =
  | 'invalid_request_error'
  | 'authentication_error'
  | 'permission_error'
  | 'not_found_error'
  | 'conflict_error'
  | 'rate_limit_error'
  | 'api_error';

/** The server's own documentation page (GET /docs serves the README); the anchor names the code. */
export const DOC_BASE = '/docs';

export interface ErrorBody {
  type: ErrorType;
  code: string;
  message: string;
  param?: string;
  doc_url?: string;
  retry_after?: number;
}

export class AppError extends Error {
  readonly status: number;
  readonly type: ErrorType;
  readonly code: string;
  readonly param?: string;
  readonly retryAfter?: number;
  /** Extra response headers (rate-limit headers, WWW-Authenticate). */
  readonly headers: Record<string, string>;

  constructor(
    status: number,
    type: ErrorType,
    code: string,
    message: string,
    opts: { param?: string; retryAfter?: number; headers?: Record<string, string> } = {},
  ) {
    super(message);
    this.name = new.target.name;
    this.status = status;
    this.type = type;
    this.code = code;
    this.param = opts.param;
    this.retryAfter = opts.retryAfter;
    this.headers = opts.headers ?? {};
  }

  toBody(): ErrorBody {
    const body: ErrorBody = { type: this.type, code: this.code, message: this.message };
    if (this.param !== undefined) body.param = this.param;
    body.doc_url = `${DOC_BASE}#${this.code}`;
    if (this.retryAfter !== undefined) body.retry_after = this.retryAfter;
    return body;
  }
}

export class ValidationError extends AppError {
  constructor(message: string, param?: string, code = 'invalid_parameter') {
    super(400, 'invalid_request_error', code, message, { param });
  }
}

export class AuthenticationError extends AppError {
  constructor(message = 'A valid credential is required: send an API key in x-service-key or a token in Authorization: Bearer.', headers?: Record<string, string>) {
    super(401, 'authentication_error', 'unauthenticated', message, { headers });
  }
}

export class InsufficientScopeError extends AppError {
  constructor(required: readonly string[], code = 'insufficient_scope', message?: string) {
    super(403, 'permission_error', code, message ?? `This credential lacks the scope this operation needs: ${required.join(' and ')}.`);
  }
}

export class ForbiddenError extends AppError {
  constructor(code: string, message: string) {
    super(403, 'permission_error', code, message);
  }
}

export class NotFoundError extends AppError {
  constructor(what: string, param?: string) {
    super(404, 'not_found_error', 'not_found', `${what} was not found.`, { param });
  }
}

export class ConflictError extends AppError {
  constructor(code: string, message: string, param?: string) {
    super(409, 'conflict_error', code, message, { param });
  }
}

export class PayloadTooLargeError extends AppError {
  constructor(limitBytes: number) {
    super(413, 'invalid_request_error', 'payload_too_large', `The request body is larger than the ${limitBytes}-byte limit.`);
  }
}

export class UnprocessableError extends AppError {
  constructor(code: string, message: string, param?: string) {
    super(422, 'invalid_request_error', code, message, { param });
  }
}

export class RateLimitedError extends AppError {
  constructor(retryAfterSeconds: number, message: string, code = 'rate_limited', headers: Record<string, string> = {}) {
    const retryAfter = Math.max(1, Math.ceil(retryAfterSeconds));
    super(429, 'rate_limit_error', code, message, {
      retryAfter,
      headers: { 'Retry-After': String(retryAfter), ...headers },
    });
  }
}

export class InternalError extends AppError {
  constructor() {
    super(500, 'api_error', 'internal_error', 'The server failed to handle this request. It has been logged; try again later.');
  }
}

/** The database cannot take the write (disk full, read-only file, lock held too long): retry later, nothing was stored. */
export class StorageUnavailableError extends AppError {
  constructor(reason: string) {
    super(503, 'api_error', 'storage_unavailable', `The server cannot store data right now (${reason}); nothing from this request was stored. Retry later.`, { retryAfter: 30, headers: { 'Retry-After': '30' } });
  }
}

const STORAGE_FAILURES: Array<[RegExp, string]> = [
  [/^SQLITE_FULL/, 'the disk is full'],
  [/^SQLITE_READONLY/, 'the database is read-only'],
  [/^SQLITE_(BUSY|LOCKED)/, 'the database is locked by another process'],
  [/^SQLITE_(IOERR|CANTOPEN)/, 'the database file cannot be written'],
];

/** A storage failure a client should retry (503), or null for any other error. */
export function storageFailure(err: unknown): StorageUnavailableError | null {
  const code = (err as { code?: unknown } | null)?.code;
  if (typeof code !== 'string') return null;
  for (const [re, reason] of STORAGE_FAILURES) if (re.test(code)) return new StorageUnavailableError(reason);
  return null;
}

export function toAppError(err: unknown): AppError {
  return err instanceof AppError ? err : (storageFailure(err) ?? new InternalError());
}
