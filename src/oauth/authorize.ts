import { randomBytes, randomUUID } from 'node:crypto';
import type Koa from 'koa';
import { hashPasswordAsync, hashSecret, verifyPasswordAsync } from '../domain/identity/secrets.js';
import type { AuthRequestRow, OauthClientRow } from '../storage/oauth-repo.js';
import { LIFETIMES, type OauthContext } from './context.js';
import {
  AccessDeniedError,
  InvalidRequestError,
  InvalidTargetError,
  OAuthError,
  TooManyRequestsError,
  UnsupportedResponseTypeError,
} from './errors.js';
import { isLoopbackIp, readForm, Throttle, uniqueParams } from './http-util.js';
import { issuerOf } from './metadata.js';
import { consentPage } from './pages/consent.js';
import { errorPage } from './pages/error.js';
import { sendPage } from './pages/layout.js';
import { signInPage } from './pages/sign-in.js';
import { DEFAULT_SCOPES, parseScope, REQUESTABLE_SCOPES, SCOPE_DESCRIPTIONS } from './scopes.js';
import type { Session, Sessions } from './session.js';

/** Sign-in attempts per email address and per client IP address per window. */
export const SIGN_IN_LIMIT = { perEmail: 10, perIp: 50, windowMs: 10 * 60_000 };

/** S256 challenges are the base64url SHA-256 of the verifier: exactly 43 characters (RFC 7636 §4.2). */
const S256_CHALLENGE = /^[A-Za-z0-9_-]{43}$/;

/** A hash to verify against when the email is unknown, so both paths cost one scrypt. */
let dummyHash: Promise<string> | null = null;

/**
 * The registered redirect URI that `given` matches, compared as strings (OAuth 2.1 §4.1.3 "exact
 * string matching"); for loopback IP literals the port may differ, since a native app listens on
 * whatever port is free (RFC 8252 §7.3: the server "MUST allow any port to be specified at the
 * time of the request for loopback IP redirect URIs").
 */
export function matchRedirectUri(registered: readonly string[], given: string): boolean {
  if (registered.includes(given)) return true;
  let g: URL;
  try {
    g = new URL(given);
  } catch {
    return false;
  }
  if (g.protocol !== 'http:' || !isLoopbackIp(g.hostname)) return false;
  return registered.some((r) => {
    const u = new URL(r);
    return u.protocol === g.protocol && u.hostname === g.hostname && u.pathname === g.pathname && u.search === g.search && !u.hash && !g.hash;
  });
}

/** Is `resource` this server's MCP URL (RFC 8707 §2: an absolute URI without a fragment)? */
function namesThisResource(resource: string, mcpUrl: string): boolean {
  try {
    const u = new URL(resource);
    return !u.hash && !resource.includes('#') && u.href === new URL(mcpUrl).href;
  } catch {
    return false;
  }
}

class PageError extends Error {
  constructor(
    readonly status: number,
    readonly code: string,
    message: string,
  ) {
    super(message);
  }
}

export function authorizeHandlers(o: OauthContext, sessions: Sessions) {
  const mcpPath = new URL(o.config.mcpUrl).pathname.replace(/\/+$/, '');
  const paths = {
    authorize: `${mcpPath}/authorize`,
    consent: `${mcpPath}/authorize/consent`,
    signIn: `${mcpPath}/authorize/sign-in`,
  };
  const issuer = issuerOf(o.config);
  const emailThrottle = new Throttle(SIGN_IN_LIMIT.perEmail, SIGN_IN_LIMIT.windowMs, o.now);
  const ipThrottle = new Throttle(SIGN_IN_LIMIT.perIp, SIGN_IN_LIMIT.windowMs, o.now);

  /** Redirects to the (validated) redirect URI with the response parameters, state and iss. */
  const redirectBack = (ctx: Koa.Context, status: 302 | 303, redirectUri: string, params: Record<string, string | null | undefined>) => {
    const u = new URL(redirectUri);
    for (const [k, v] of Object.entries(params)) if (v !== undefined && v !== null) u.searchParams.set(k, v);
    u.searchParams.set('iss', issuer); // RFC 9207
    ctx.body = ''; // before the status: Koa turns a null body into 204
    ctx.status = status;
    ctx.set('Location', u.href);
    ctx.set('Cache-Control', 'no-store');
    ctx.set('Referrer-Policy', 'no-referrer');
  };
  const redirectError = (ctx: Koa.Context, status: 302 | 303, redirectUri: string, state: string | null | undefined, err: OAuthError) =>
    redirectBack(ctx, status, redirectUri, { error: err.errorCode, error_description: err.message, state });

  const pendingRequest = (id: string | undefined): { req: AuthRequestRow; client: OauthClientRow } => {
    const req = id ? o.repo.request(id) : undefined;
    const client = req ? o.repo.client(req.client_id) : undefined;
    if (!req || !client || req.expires_at <= o.now()) {
      throw new PageError(400, 'invalid_request', 'This sign-in request has expired or was already used. Start again from the application.');
    }
    return { req, client };
  };

  const clientName = (c: OauthClientRow) => c.client_name || 'An unnamed application';

  /** The sign-in page, or the consent page when the session is a user's. */
  const render = (ctx: Koa.Context, session: Session, req: AuthRequestRow, client: OauthClientRow, opts: { status?: number; error?: string; email?: string } = {}) => {
    const user = session.userId ? o.identity.userById(session.userId) : undefined;
    if (!user) {
      const html = signInPage({
        action: paths.signIn,
        requestId: req.id,
        csrf: sessions.csrfToken(session, 'sign-in', req.id),
        clientName: clientName(client),
        email: opts.email,
        error: opts.error,
      });
      return sendPage(ctx, opts.status ?? 200, html);
    }
    const roles = o.identity.rolesOfUser(user.id);
    const orgIds = Object.keys(roles);
    const names = o.repo.orgNames(orgIds);
    const projects = o.identity.projectsOfOrgs(orgIds);
    const html = consentPage({
      action: paths.consent,
      requestId: req.id,
      csrf: sessions.csrfToken(session, 'consent', req.id),
      clientName: clientName(client),
      clientId: client.client_id,
      clientUri: typeof client.metadata.client_uri === 'string' ? client.metadata.client_uri : undefined,
      redirectUri: req.redirect_uri,
      email: user.email,
      organizations: orgIds
        .map((id) => ({ name: names[id] ?? id, role: roles[id]!, projects: projects.filter((p) => p.org_id === id).map((p) => p.name) }))
        .sort((a, b) => a.name.localeCompare(b.name)),
      scopes: req.scopes.map((name) => ({ name, description: SCOPE_DESCRIPTIONS[name] ?? name })),
    });
    sendPage(ctx, opts.status ?? 200, html, [new URL(req.redirect_uri).origin]);
  };

  /** Page errors: shown in the browser, never redirected (the redirect target is not trusted). */
  const page = (fn: (ctx: Koa.Context) => Promise<void> | void): Koa.Middleware => async (ctx) => {
    try {
      await fn(ctx);
    } catch (err) {
      if (err instanceof PageError) return sendPage(ctx, err.status, errorPage(err.code, err.message));
      if (err instanceof OAuthError) return sendPage(ctx, err.status, errorPage(err.errorCode, err.message));
      o.log.error({ err, requestId: ctx.state.requestId, path: ctx.path }, 'authorization page failed');
      sendPage(ctx, 500, errorPage('server_error', 'The server failed to handle this request. Try again later.'));
    }
  };

  /**
   * `GET {mcp_url}/authorize` (RFC 6749 §4.1.1, OAuth 2.1 §4.1.1). The client and redirect URI are
   * checked first; until both are known good, errors are shown as a page. After that, errors go
   * back to the client by redirect with `state` (§4.1.2.1).
   */
  const start = page((ctx) => {
    let q: Map<string, string>;
    try {
      q = uniqueParams(ctx.URL.searchParams);
    } catch (err) {
      throw new PageError(400, 'invalid_request', (err as Error).message);
    }
    const clientId = q.get('client_id');
    if (!clientId) throw new PageError(400, 'invalid_request', 'The request has no client_id.');
    const client = o.repo.client(clientId);
    if (!client) throw new PageError(400, 'invalid_client', 'The application is not registered with this server (unknown client_id).');
    const given = q.get('redirect_uri');
    let redirectUri: string;
    if (given !== undefined) {
      if (!matchRedirectUri(client.redirect_uris, given)) {
        throw new PageError(400, 'invalid_request', 'The redirect_uri is not one this application registered, so you were not sent back to it.');
      }
      redirectUri = given;
    } else if (client.redirect_uris.length === 1) {
      redirectUri = client.redirect_uris[0]!;
    } else {
      throw new PageError(400, 'invalid_request', 'The request has no redirect_uri and the application registered several.');
    }

    const state = q.get('state') ?? null;
    const fail = (err: OAuthError) => redirectError(ctx, 302, redirectUri, state, err);
    try {
      const responseType = q.get('response_type');
      if (!responseType) throw new InvalidRequestError('response_type is required; use `code`.');
      if (responseType !== 'code') throw new UnsupportedResponseTypeError('Only response_type=code is supported.');
      if (state !== null && state.length > 2000) throw new InvalidRequestError('state is longer than 2000 characters.');
      // OAuth 2.1 §4.1.1 / RFC 7636: PKCE is required, and only S256 ("plain" is refused).
      const challenge = q.get('code_challenge');
      const method = q.get('code_challenge_method');
      if (!challenge) throw new InvalidRequestError('PKCE is required: send code_challenge with code_challenge_method=S256.');
      if (method !== 'S256') {
        throw new InvalidRequestError(
          method ? `code_challenge_method ${method} is not supported; use S256.` : 'code_challenge_method is required and must be S256.',
        );
      }
      if (!S256_CHALLENGE.test(challenge)) throw new InvalidRequestError('code_challenge must be the 43-character base64url SHA-256 of the code verifier.');
      // RFC 8707: the token is for this MCP server only. Absent, it defaults to it (the only resource here).
      const resource = q.get('resource') ?? o.config.mcpUrl;
      if (!namesThisResource(resource, o.config.mcpUrl)) throw new InvalidTargetError(`The resource must be this server's MCP URL, ${o.config.mcpUrl}.`);
      const allowed = client.scope ? client.scope.split(' ') : REQUESTABLE_SCOPES;
      let scopes = parseScope(q.get('scope'), allowed);
      if (scopes.length === 0) scopes = client.scope ? client.scope.split(' ') : [...DEFAULT_SCOPES];

      const now = o.now();
      o.repo.prune(now);
      const req: AuthRequestRow = {
        id: randomUUID(),
        client_id: client.client_id,
        redirect_uri: redirectUri,
        redirect_uri_given: given !== undefined,
        scopes,
        state,
        code_challenge: challenge,
        resource: o.config.mcpUrl,
        created_at: now,
        expires_at: now + LIFETIMES.requestMs,
      };
      o.repo.createRequest(req);
      const session = sessions.read(ctx) ?? sessions.start(ctx, null);
      render(ctx, session, req, client);
    } catch (err) {
      if (err instanceof OAuthError) return fail(err);
      throw err;
    }
  });

  /** `GET {mcp_url}/authorize/consent?request_id=…` — where sign-in lands (post/redirect/get). */
  const showConsent = page((ctx) => {
    const { req, client } = pendingRequest(typeof ctx.query.request_id === 'string' ? ctx.query.request_id : undefined);
    const session = sessions.read(ctx) ?? sessions.start(ctx, null);
    render(ctx, session, req, client);
  });

  /** `POST {mcp_url}/authorize/sign-in` — email and password of a Sightline user. */
  const signIn = page(async (ctx) => {
    const form = await readForm(ctx);
    const { req, client } = pendingRequest(form.get('request_id'));
    const session = sessions.read(ctx);
    if (!sessions.checkCsrf(session, 'sign-in', req.id, form.get('csrf_token'))) {
      throw new PageError(403, 'invalid_request', 'The sign-in form was not sent from this page or has expired (CSRF check failed). Start again from the application.');
    }
    const email = (form.get('email') ?? '').trim();
    const password = form.get('password') ?? '';
    try {
      ipThrottle.hit(ctx.ip, 'sign-in attempts from this address');
      emailThrottle.hit(email.toLowerCase(), 'sign-in attempts for this account');
    } catch (err) {
      if (err instanceof TooManyRequestsError) {
        ctx.set(err.headers);
        return render(ctx, session!, req, client, { status: 429, error: err.message, email });
      }
      throw err;
    }
    const user = email ? o.identity.userByEmail(email) : undefined;
    let ok = false;
    // scrypt runs on the thread pool, not the event loop: a sign-in flood does not stall other requests.
    if (user) ok = await verifyPasswordAsync(password, user.password_hash);
    else await verifyPasswordAsync(password, await (dummyHash ??= hashPasswordAsync(randomBytes(16).toString('hex'))));
    if (!user || !ok) {
      return render(ctx, session!, req, client, { status: 401, error: 'The email or password is not correct.', email });
    }
    sessions.start(ctx, user.id, session);
    ctx.body = '';
    ctx.status = 303;
    ctx.set('Location', `${paths.consent}?request_id=${encodeURIComponent(req.id)}`);
    ctx.set('Cache-Control', 'no-store');
  });

  /** `POST {mcp_url}/authorize/consent` — Allow issues a single-use code; Deny returns access_denied. */
  const decide = page(async (ctx) => {
    const form = await readForm(ctx);
    const { req, client } = pendingRequest(form.get('request_id'));
    const session = sessions.read(ctx);
    if (!sessions.checkCsrf(session, 'consent', req.id, form.get('csrf_token'))) {
      throw new PageError(403, 'invalid_request', 'The consent form was not sent from this page or has expired (CSRF check failed). Start again from the application.');
    }
    if (!session!.userId) return render(ctx, session!, req, client);
    const decision = form.get('decision');
    if (decision !== 'allow' && decision !== 'deny') throw new PageError(400, 'invalid_request', 'Choose Allow or Deny.');
    // One decision per request: a second post (double click, replayed form) finds nothing.
    if (!o.repo.deleteRequest(req.id)) throw new PageError(400, 'invalid_request', 'This sign-in request was already answered.');
    if (decision === 'deny') {
      return redirectError(ctx, 303, req.redirect_uri, req.state, new AccessDeniedError('The user denied the request.'));
    }
    const code = randomBytes(32).toString('base64url');
    const now = o.now();
    o.repo.createGrantWithCode({
      grantId: randomUUID(),
      clientId: client.client_id,
      userId: session!.userId,
      scopes: req.scopes,
      resource: req.resource,
      codeHash: hashSecret(code),
      redirectUri: req.redirect_uri,
      redirectUriGiven: req.redirect_uri_given,
      codeChallenge: req.code_challenge,
      now,
      codeExpiresAt: now + LIFETIMES.codeMs,
    });
    redirectBack(ctx, 303, req.redirect_uri, { code, state: req.state });
  });

  return { paths, start, showConsent, signIn, decide };
}
