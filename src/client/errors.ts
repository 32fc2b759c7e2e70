/**
 * Errors the client throws. An API answer that is not 2xx becomes a `SightlineError` carrying the
 * spec's Shape A fields (`type`, `code`, `message`, `param`, `doc_url`, `retry_after`) or Shape B
 * (`error`, `message`, `hint`), the HTTP status and the `X-Request-ID` of the response.
 */
export interface SightlineErrorInit {
  status: number;
  code: string;
  message: string;
  type?: string;
  param?: string;
  requestId?: string;
  retryAfter?: number;
  docUrl?: string;
  hint?: string;
  /** The parsed error body, as the server sent it. */
  body?: unknown;
}

export class SightlineError extends Error {
  /** HTTP status; 0 when no HTTP answer was received (see the subclasses). */
  readonly status: number;
  readonly code: string;
  readonly type?: string;
  readonly param?: string;
  readonly requestId?: string;
  /** Seconds the server asked to wait (429). */
  readonly retryAfter?: number;
  readonly docUrl?: string;
  readonly hint?: string;
  readonly body?: unknown;

  constructor(init: SightlineErrorInit) {
    super(init.message);
    this.name = new.target.name;
    this.status = init.status;
    this.code = init.code;
    this.type = init.type;
    this.param = init.param;
    this.requestId = init.requestId;
    this.retryAfter = init.retryAfter;
    this.docUrl = init.docUrl;
    this.hint = init.hint;
    this.body = init.body;
  }

  /** Build from an HTTP answer: Shape A, Shape B, or a body that is neither. */
  static fromResponse(status: number, body: unknown, requestId?: string, retryAfterHeader?: number): SightlineError {
    const b = body && typeof body === 'object' && !Array.isArray(body) ? (body as Record<string, unknown>) : {};
    const str = (v: unknown) => (typeof v === 'string' && v !== '' ? v : undefined);
    const code = str(b.code) ?? str(b.error) ?? `http_${status}`;
    const message = str(b.message) ?? (str(b.error) && !str(b.code) ? str(b.error)! : `The server answered ${status} with no error message.`);
    return new SightlineError({
      status,
      code,
      message,
      type: str(b.type),
      param: str(b.param),
      requestId,
      retryAfter: typeof b.retry_after === 'number' ? b.retry_after : retryAfterHeader,
      docUrl: str(b.doc_url),
      hint: str(b.hint),
      body,
    });
  }
}

/** The client could not place the input on a request (a path parameter is missing, no project id). */
export class SightlineInputError extends SightlineError {
  constructor(code: string, message: string, param?: string) {
    super({ status: 0, code, message, param });
  }
}

/** No HTTP answer: the server could not be reached, or the connection failed. */
export class SightlineConnectionError extends SightlineError {
  constructor(url: string, cause: unknown) {
    const c = cause as { cause?: { code?: string; message?: string }; message?: string } | undefined;
    const why = c?.cause?.code ?? c?.cause?.message ?? c?.message ?? 'unknown error';
    super({ status: 0, code: 'connection_error', message: `Could not reach ${url} (${why}).` });
    this.cause = cause;
  }
}
