/**
 * OAuth errors in the RFC 6749 §5.2 shape (`error`, `error_description`, optional `error_uri`), one
 * class per registered error code, after the MCP TypeScript SDK's `src/server/auth/errors.ts`.
 * These never go through the Shape A error middleware: OAuth endpoints answer in the RFC's shape
 * (conventions, Errors).
 */
export interface OAuthErrorResponse {
  error: string;
  error_description?: string;
  error_uri?: string;
}

export abstract class OAuthError extends Error {
  static errorCode: string;
  /** HTTP status used when the error is returned from the token, registration or revocation endpoint. */
  readonly status: number = 400;
  /** Extra response headers (WWW-Authenticate on invalid_client, Retry-After on throttling). */
  readonly headers: Record<string, string> = {};

  constructor(
    message: string,
    readonly errorUri?: string,
  ) {
    super(message);
    this.name = new.target.name;
  }

  get errorCode(): string {
    return (this.constructor as typeof OAuthError).errorCode;
  }

  toResponseObject(): OAuthErrorResponse {
    const out: OAuthErrorResponse = { error: this.errorCode, error_description: this.message };
    if (this.errorUri) out.error_uri = this.errorUri;
    return out;
  }
}

/**
 * The request is missing a required parameter, includes an invalid parameter value, includes a
 * parameter more than once, or is otherwise malformed (RFC 6749 §4.1.2.1, §5.2).
 */
export class InvalidRequestError extends OAuthError {
  static override errorCode = 'invalid_request';
}

/**
 * Client authentication failed. "The authorization server MAY return an HTTP 401 (Unauthorized)
 * status code … If the client attempted to authenticate via the Authorization request header
 * field, the authorization server MUST respond with an HTTP 401" and a WWW-Authenticate header
 * (RFC 6749 §5.2).
 */
export class InvalidClientError extends OAuthError {
  static override errorCode = 'invalid_client';
  override readonly status = 401;
  constructor(message: string, usedBasic = false) {
    super(message);
    if (usedBasic) this.headers['WWW-Authenticate'] = 'Basic realm="sightline-oauth", charset="UTF-8"';
  }
}

/**
 * The authorization grant or refresh token is invalid, expired, revoked, does not match the
 * redirection URI used in the authorization request, or was issued to another client (§5.2).
 */
export class InvalidGrantError extends OAuthError {
  static override errorCode = 'invalid_grant';
}

/** The authenticated client is not authorized to use this grant type (§5.2). */
export class UnauthorizedClientError extends OAuthError {
  static override errorCode = 'unauthorized_client';
}

/** The grant type is not supported by this server (§5.2). */
export class UnsupportedGrantTypeError extends OAuthError {
  static override errorCode = 'unsupported_grant_type';
}

/** The requested scope is invalid, unknown, malformed, or exceeds what was granted (§4.1.2.1, §5.2). */
export class InvalidScopeError extends OAuthError {
  static override errorCode = 'invalid_scope';
}

/** The resource owner or authorization server denied the request (§4.1.2.1). */
export class AccessDeniedError extends OAuthError {
  static override errorCode = 'access_denied';
}

/** The server does not support obtaining an authorization code with this response_type (§4.1.2.1). */
export class UnsupportedResponseTypeError extends OAuthError {
  static override errorCode = 'unsupported_response_type';
}

/** The server met an unexpected condition (§4.1.2.1). */
export class ServerError extends OAuthError {
  static override errorCode = 'server_error';
  override readonly status = 500;
}

/** The server is temporarily unable to handle the request (§4.1.2.1). */
export class TemporarilyUnavailableError extends OAuthError {
  static override errorCode = 'temporarily_unavailable';
  override readonly status = 503;
}

/** RFC 8707 §2: the requested resource is invalid, unknown, or malformed. */
export class InvalidTargetError extends OAuthError {
  static override errorCode = 'invalid_target';
}

/** RFC 7591 §3.2.2: the value of one or more redirection URIs is invalid. */
export class InvalidRedirectUriError extends OAuthError {
  static override errorCode = 'invalid_redirect_uri';
}

/** RFC 7591 §3.2.2: the value of one of the client metadata fields is invalid. */
export class InvalidClientMetadataError extends OAuthError {
  static override errorCode = 'invalid_client_metadata';
}

/** RFC 7009 §2.2.1: the server does not support revoking this token type. */
export class UnsupportedTokenTypeError extends OAuthError {
  static override errorCode = 'unsupported_token_type';
}

/** Not an RFC 6749 code (the MCP SDK uses the same one): too many requests; carries Retry-After. */
export class TooManyRequestsError extends OAuthError {
  static override errorCode = 'too_many_requests';
  override readonly status = 429;
  constructor(message: string, retryAfterSeconds: number) {
    super(message);
    this.headers['Retry-After'] = String(Math.max(1, Math.ceil(retryAfterSeconds)));
  }
}
