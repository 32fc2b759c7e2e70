import type { AnyOperation } from '../../operations/define.js';
import type { ErrorType } from '../core/errors.js';

/**
 * Error documentation generated from declared errors, so it cannot drift (issue 10 item 9): every
 * `doc_url` is `/docs#<code>`, and /docs has one entry per code the server can return. The entries
 * are the codes raised outside operations (below: authentication, routing, bodies, limits, ingest,
 * MCP) merged with every operation's declared `errors`. test/security/error-docs.test.ts scans the
 * source for error constructors and fails when a code is raised that no entry documents.
 */
export interface ErrorDoc {
  code: string;
  status: number[];
  type: ErrorType;
  /** When it happens, one sentence per source. */
  when: string[];
  /** Operations that declare it (empty for codes any request can get). */
  operations: string[];
}

const TYPE_BY_STATUS: Record<number, ErrorType> = {
  400: 'invalid_request_error',
  401: 'authentication_error',
  403: 'permission_error',
  404: 'not_found_error',
  405: 'invalid_request_error',
  409: 'conflict_error',
  413: 'invalid_request_error',
  415: 'invalid_request_error',
  422: 'invalid_request_error',
  429: 'rate_limit_error',
  500: 'api_error',
};

/** Codes any request may get, whatever the operation (core, HTTP face, ingest, MCP). */
export const GENERAL_ERRORS: readonly { status: number; code: string; when: string }[] = [
  { status: 400, code: 'invalid_parameter', when: 'A field breaks its rule (type, format, range, allowed values); `param` names it.' },
  { status: 400, code: 'unknown_field', when: 'A field or query parameter the operation does not accept; the message lists the accepted ones.' },
  { status: 400, code: 'invalid_json', when: 'The request body is not a JSON object.' },
  // Remote-access connector endpoints (/v1/remote-connector/*, not catalogue operations; src/remote-connector/server-endpoints.ts).
  { status: 401, code: 'connector_signature_missing', when: 'Remote-access connector: a call without the x-sightline-connector, -timestamp and -signature headers.' },
  { status: 401, code: 'connector_signature_invalid', when: 'Remote-access connector: the Ed25519 signature does not verify with the connector\'s current key (e.g. a key replaced by rotation).' },
  { status: 401, code: 'connector_revoked', when: 'Remote-access connector: the connector is revoked; its signatures are refused. Enroll a new connector.' },
  { status: 401, code: 'connector_clock_skew', when: 'Remote-access connector: the signed timestamp is more than 5 minutes from the server clock.' },
  { status: 401, code: 'connector_replay', when: 'Remote-access connector: the signed timestamp is not newer than the last one (a replayed call).' },
  { status: 401, code: 'enrollment_code_invalid', when: 'Remote-access connector: the enrollment code is unknown, used or expired (15 minutes).' },
  { status: 409, code: 'rotation_not_requested', when: 'Remote-access connector: a key rotation without remoteAccess.rotateConnector first.' },
  { status: 409, code: 'verification_not_pending', when: 'Remote-access connector: a probe for a verification that is not pending.' },
  { status: 409, code: 'execution_not_dispatched', when: 'Remote-access connector: a result for an execution that is not waiting for one.' },
  { status: 400, code: 'response_too_large', when: 'The answer would exceed the response size cap (SIGHTLINE_MAX_RESPONSE_BYTES); narrow the request (lower `limit`, a shorter window, more filters).' },
  { status: 400, code: 'too_many_items', when: 'Ingest: a batch holds more items than the endpoint takes (1,000 for Langfuse and AI batches).' },
  { status: 400, code: 'invalid_capture', when: 'PostHog capture: the body holds no event the server can read (JSON, gzip, base64 or form `data=`).' },
  { status: 409, code: 'event_replayed', when: 'Payment webhook: this provider event id was applied before; nothing changed.' },
  { status: 415, code: 'unsupported_encoding', when: 'Ingest: a stacked Content-Encoding (such as `gzip, gzip`) or one the server does not decode.' },
  { status: 503, code: 'storage_unavailable', when: 'The database cannot take the write (disk full, read-only or locked file); nothing from the request was stored. Retry after `Retry-After` seconds.' },
  { status: 400, code: 'invalid_encoding', when: 'Ingest: the body could not be decompressed, or it uses a stacked or unknown Content-Encoding.' },
  { status: 400, code: 'invalid_envelope', when: 'Ingest: the Sentry envelope could not be parsed.' },
  { status: 400, code: 'invalid_event', when: 'Ingest: the Sentry store body is not a JSON event.' },
  { status: 400, code: 'invalid_otlp', when: 'Ingest: the OTLP body could not be decoded.' },
  { status: 401, code: 'unauthenticated', when: 'No credential, or an unknown, revoked or expired one.' },
  { status: 403, code: 'insufficient_scope', when: 'The credential lacks a scope the operation needs (the message names it).' },
  { status: 403, code: 'project_access_denied', when: 'The user is not (or no longer) a member of the organization that owns the project.' },
  { status: 403, code: 'api_key_required', when: 'The operation needs an API key of the project; an OAuth token cannot call it (feedback capture).' },
  { status: 403, code: 'project_mismatch', when: 'Ingest: the key belongs to another project than the one in the URL (check the DSN).' },
  { status: 403, code: 'origin_not_allowed', when: 'MCP: a browser Origin not listed in SIGHTLINE_MCP_ALLOWED_ORIGINS.' },
  { status: 404, code: 'not_found', when: 'The resource does not exist, or belongs to another project (both answer alike).' },
  { status: 404, code: 'route_not_found', when: 'No route has this path; see /openapi.json.' },
  { status: 404, code: 'unknown_operation', when: 'MCP and CLI: no operation has this id.' },
  { status: 405, code: 'method_not_allowed', when: 'The path exists but not with this method; the `Allow` header lists the methods it takes.' },
  { status: 413, code: 'payload_too_large', when: 'The request body (or its decompressed size) is over the cap.' },
  { status: 415, code: 'unsupported_media_type', when: 'A request body not sent as `Content-Type: application/json`.' },
  { status: 429, code: 'rate_limited', when: 'Over the per-credential rate limit (SIGHTLINE_RATE_LIMIT); wait `Retry-After` seconds.' },
  { status: 429, code: 'auth_rate_limited', when: 'Too many failed authentications from this client address (SIGHTLINE_AUTH_FAILURE_LIMIT); wait `Retry-After` seconds.' },
  { status: 429, code: 'ingest_quota_exceeded', when: 'Ingest: the project is over its records-per-minute quota (SIGHTLINE_INGEST_QUOTA_PER_MINUTE).' },
  { status: 500, code: 'internal_error', when: 'The server failed; the request id in `X-Request-ID` finds it in the log.' },
];

/** One entry per code: the general codes merged with every operation's declared errors. */
export function errorDocs(operations: Iterable<AnyOperation>): ErrorDoc[] {
  const byCode = new Map<string, ErrorDoc>();
  const add = (status: number, code: string, when: string, operationId?: string) => {
    let d = byCode.get(code);
    if (!d) byCode.set(code, (d = { code, status: [], type: TYPE_BY_STATUS[status] ?? 'invalid_request_error', when: [], operations: [] }));
    if (!d.status.includes(status)) d.status.push(status);
    if (operationId) {
      if (!d.operations.includes(operationId)) d.operations.push(operationId);
      const line = `${operationId}: ${when}`;
      if (!d.when.includes(line)) d.when.push(line);
    } else if (!d.when.includes(when)) d.when.unshift(when);
  };
  for (const e of GENERAL_ERRORS) add(e.status, e.code, e.when);
  for (const op of operations) for (const e of op.errors) add(e.status, e.code, e.when, op.operationId);
  return [...byCode.values()].sort((a, b) => a.status[0]! - b.status[0]! || a.code.localeCompare(b.code));
}

/** The error reference as Markdown, appended to the README at /docs. */
export function errorDocsMarkdown(docs: readonly ErrorDoc[]): string {
  const lines = [
    '## Error codes',
    '',
    'Every error answers in Shape A (`type`, `code`, `message`, optional `param`, `doc_url`, `retry_after`); `doc_url` points at the entry below. Branch on the HTTP status first, then on `code`.',
    '',
  ];
  for (const d of docs) {
    lines.push(`### ${d.code}`, '', `HTTP ${d.status.join(', ')} · type \`${d.type}\``, '');
    for (const w of d.when) lines.push(`- ${w}`);
    lines.push('');
  }
  return lines.join('\n');
}
