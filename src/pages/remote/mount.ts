/**
 * The remote-access console: the only place for human-only actions (spec, "Remote access"):
 * approval decisions, signing-key fingerprint reveal, target confirmation and transcript reveal.
 * Reachable only by a person signed in here with their Sightline email and password (the same
 * users and passwords as the OAuth sign-in); API keys, OAuth bearer tokens, the CLI, MCP and the
 * agent have no way in (the session is a cookie of this path only, SameSite=Strict, and bearer
 * headers are ignored). Each action needs a five-minute, one-time email code bound to the action,
 * its subject, the user and this session (src/core/remote/stepup.ts).
 */
import { createHmac, randomBytes, timingSafeEqual } from 'node:crypto';
import type Koa from 'koa';
import type Router from '@koa/router';
import type { Mount } from '../../server.js';
import { AppError } from '../../core/errors.js';
import { readRawBody } from '../../http/body.js';
import { hashPasswordAsync, hashSecret, verifyPasswordAsync } from '../../domain/identity/secrets.js';
import { createOauthRepo } from '../../storage/oauth-repo.js';
import { checkCsrf, csrfToken, sendPage, type CsrfOptions } from '../layout.js';
import { confirmTarget, decideRequest, expireIfDue, LIFETIMES, previewEnabled } from '../../core/remote/service.js';
import { consumeStepUp, issueStepUp, STEP_UP_MESSAGES, type ConsoleAction } from '../../core/remote/stepup.js';
import { keyFingerprint } from '../../domain/remote/signing.js';
import { actionPage, CONSOLE_BASE, message, page, projectPage, signInPage } from './views.js';
import { esc } from '../layout.js';

const COOKIE = 'sightline_remote_console';
const ACTIONS = new Set<ConsoleAction>(['approve_request', 'deny_request', 'confirm_target', 'reveal_fingerprint', 'reveal_transcript']);
const UUID = /^[0-9a-f]{8}-[0-9a-f]{4}-[0-9a-f]{4}-[0-9a-f]{4}-[0-9a-f]{12}$/;

function cookie(ctx: Koa.Context, name: string): string | undefined {
  for (const part of (ctx.get('cookie') || '').split(';')) {
    const i = part.indexOf('=');
    if (i > 0 && part.slice(0, i).trim() === name) return part.slice(i + 1).trim();
  }
  return undefined;
}

async function form(ctx: Koa.Context): Promise<URLSearchParams> {
  const type = (ctx.get('content-type') || '').split(';')[0]!.trim().toLowerCase();
  if (type !== 'application/x-www-form-urlencoded') throw new AppError(415, 'invalid_request_error', 'unsupported_media_type', 'Send the form as application/x-www-form-urlencoded.');
  return new URLSearchParams((await readRawBody(ctx, 8192)).toString('utf8'));
}

export const remoteConsoleMount: Mount = (sl, router: Router) => {
  const s = sl.services;
  const now = () => sl.core.now();
  const secure = new URL(sl.config.baseUrl).protocol === 'https:';
  let keyCache: Buffer | null = null;
  const key = () => (keyCache ??= createOauthRepo(sl.db).secretKey('remote-console', now()));
  const mac = (purpose: string, v: string) => createHmac('sha256', key()).update(`${purpose}\n${v}`).digest('base64url');
  const same = (a: string, b: string) => a.length === b.length && timingSafeEqual(Buffer.from(a), Buffer.from(b));
  const signInCsrf: () => CsrfOptions = () => ({ key: key(), cookieName: 'sightline_remote_console_csrf', path: CONSOLE_BASE, secure });
  let dummyHash: Promise<string> | null = null;

  const setCookie = (ctx: Koa.Context, value: string, maxAge?: number) => {
    const attrs = [`${COOKIE}=${value}`, `Path=${CONSOLE_BASE}`, 'HttpOnly', 'SameSite=Strict'];
    if (secure) attrs.push('Secure');
    if (maxAge !== undefined) attrs.push(`Max-Age=${maxAge}`);
    ctx.append('Set-Cookie', attrs.join('; '));
  };

  interface ConsoleSession {
    sid: string;
    sessionHash: string;
    userId: string;
    email: string;
    roles: Record<string, string>;
    csrf: string;
  }

  const session = (ctx: Koa.Context): ConsoleSession | null => {
    const raw = cookie(ctx, COOKIE);
    if (!raw) return null;
    const [sid, sig] = raw.split('.');
    if (!sid || !sig || !same(sig, mac('cookie', sid))) return null;
    const row = s.remote.session(hashSecret(sid));
    if (!row || row.expires_at <= now()) return null;
    const user = s.identity.userById(row.user_id);
    if (!user) return null;
    return { sid, sessionHash: hashSecret(sid), userId: user.id, email: user.email, roles: s.identity.rolesOfUser(user.id), csrf: mac('csrf', sid) };
  };

  const deny = (ctx: Koa.Context, status: number, title: string, text: string, back?: string) => sendPage(ctx, status, message(title, text, false, back));

  /** The signed-in user's project with the preview on, or null after answering. */
  const projectFor = (ctx: Koa.Context, sess: ConsoleSession, pid: string) => {
    const p = /^\d{1,15}$/.test(pid) ? s.identity.projectById(pid) : undefined;
    if (!p || sess.roles[p.org_id] === undefined) {
      deny(ctx, 404, 'Not found', 'There is no such project for this account.');
      return null;
    }
    if (!previewEnabled(s, p.id)) {
      deny(ctx, 403, 'Remote access is off', 'The remote-access preview is not enabled for this project (code remote_access_preview_disabled).');
      return null;
    }
    return p;
  };

  router.get(CONSOLE_BASE, (ctx) => {
    const sess = session(ctx);
    if (!sess) return sendPage(ctx, 200, signInPage(csrfToken(ctx, signInCsrf(), 'sign-in')));
    const projects = s.identity.projectsOfOrgs(Object.keys(sess.roles)).filter((p) => previewEnabled(s, p.id));
    sendPage(ctx, 200, page('Projects', `<h1>Remote access</h1><ul>${projects.map((p) => `<li><a href="${CONSOLE_BASE}/projects/${esc(p.id)}">${esc(p.name)}</a></li>`).join('') || '<li class="muted">No project has the preview enabled.</li>'}</ul>`));
  });

  router.post(`${CONSOLE_BASE}/sign-in`, async (ctx) => {
    const f = await form(ctx);
    if (!checkCsrf(ctx, signInCsrf(), 'sign-in', f.get('csrf_token') ?? undefined)) return deny(ctx, 403, 'Sign-in refused', 'The form expired; reload the page and sign in again.', CONSOLE_BASE);
    const email = (f.get('email') ?? '').trim().toLowerCase();
    const user = email ? s.identity.userByEmail(email) : undefined;
    let ok = false;
    if (user) ok = await verifyPasswordAsync(f.get('password') ?? '', user.password_hash);
    else await verifyPasswordAsync(f.get('password') ?? '', await (dummyHash ??= hashPasswordAsync(randomBytes(16).toString('hex'))));
    if (!user || !ok) {
      sl.authThrottle.fail(ctx.ip); // the shared failed-authentication throttle per address
      return sendPage(ctx, 401, signInPage(csrfToken(ctx, signInCsrf(), 'sign-in'), 'The email or password is not correct.'));
    }
    const old = cookie(ctx, COOKIE)?.split('.')[0];
    if (old) s.remote.deleteSession(hashSecret(old));
    const sid = randomBytes(32).toString('base64url');
    s.remote.createSession(hashSecret(sid), user.id, now(), now() + LIFETIMES.consoleSessionMs);
    setCookie(ctx, `${sid}.${mac('cookie', sid)}`);
    ctx.status = 303;
    ctx.redirect(CONSOLE_BASE);
  });

  router.post(`${CONSOLE_BASE}/sign-out`, async (ctx) => {
    const sess = session(ctx);
    const f = await form(ctx);
    if (sess && same(f.get('csrf_token') ?? '', sess.csrf)) s.remote.deleteSession(sess.sessionHash);
    setCookie(ctx, '', 0);
    ctx.status = 303;
    ctx.redirect(CONSOLE_BASE);
  });

  router.get(`${CONSOLE_BASE}/projects/:pid`, (ctx) => {
    const sess = session(ctx);
    if (!sess) return ctx.redirect(CONSOLE_BASE);
    const p = projectFor(ctx, sess, ctx.params.pid!);
    if (!p) return;
    const t = now();
    const pending = s.remote.pendingRequests(p.id).map((r) => expireIfDue(s, r, t)).filter((r) => r.state === 'pending');
    const targets = s.remote.targets(p.id);
    sendPage(ctx, 200, projectPage({
      projectId: p.id,
      projectName: p.name,
      email: sess.email,
      csrf: sess.csrf,
      approvals: pending.map((r) => {
        const tg = targets.find((x) => x.id === r.target_id);
        return { id: r.id, target: tg?.label ?? '', environment: tg?.environment ?? '', operation: r.operation_id, parameters: r.parameters, mine: r.requester === `user:${sess.userId}`, expires: new Date(r.expires_at).toISOString(), policyRevision: r.policy_revision };
      }),
      targets: targets.map((x) => ({ id: x.id, label: x.label, environment: x.environment, state: x.state })),
      connectors: s.remote.connectors(p.id).map((c) => ({ id: c.id, label: c.label, status: c.status })),
      executions: s.remote.executions(p.id, 50).map((e) => ({ id: e.id, requestId: e.request_id, state: e.state, finished: e.finished_at ? new Date(e.finished_at).toISOString() : null })),
    }));
  });

  /** Role and subject checks shared by both steps; returns a summary of what will happen, or an error text. */
  const checkAction = (sess: ConsoleSession, projectId: string, orgId: string, action: ConsoleAction, subjectId: string): { ok: true; summary: string } | { ok: false; text: string } => {
    const role = sess.roles[orgId];
    if (action === 'confirm_target' ? role !== 'owner' : role !== 'owner' && role !== 'admin') {
      return { ok: false, text: action === 'confirm_target' ? 'Only a project owner can confirm a target.' : 'Only owners and admins can do this.' };
    }
    if (!UUID.test(subjectId)) return { ok: false, text: 'Unknown subject.' };
    if (action === 'approve_request' || action === 'deny_request') {
      const r = s.remote.request(projectId, subjectId);
      if (!r) return { ok: false, text: 'Request was not found.' };
      if (r.requester === `user:${sess.userId}`) return { ok: false, text: 'You created this request, so you cannot decide it; another person must review it.' };
      return { ok: true, summary: `${action === 'approve_request' ? 'Approve' : 'Deny'} ${r.operation_id} ${r.parameters} on target ${s.remote.target(projectId, r.target_id)?.label ?? ''} (policy revision ${r.policy_revision}, timeout ${r.timeout_seconds}s, output limit ${r.output_limit}).` };
    }
    if (action === 'confirm_target') {
      const t = s.remote.target(projectId, subjectId);
      if (!t) return { ok: false, text: 'Target was not found.' };
      return { ok: true, summary: `Confirm target ${t.label} (${t.environment}): enter the verification id and the SHA-256 host-key digest you obtained through a separate trusted console.` };
    }
    if (action === 'reveal_fingerprint') {
      const c = s.remote.connector(projectId, subjectId);
      if (!c || c.status !== 'active') return { ok: false, text: 'Connector was not found or is not active.' };
      return { ok: true, summary: `Reveal the signing-key fingerprint of connector ${c.label}.` };
    }
    const e = s.remote.execution(projectId, subjectId);
    if (!e) return { ok: false, text: 'Execution was not found.' };
    return { ok: true, summary: `Reveal the transcript of execution ${e.id}.` };
  };

  /**
   * What both console action posts check first, in this order: a session, its CSRF token, the
   * project, a known action, and that this user may take it on this subject. Null: refused (the
   * page is sent).
   */
  async function actionRequest(ctx: Koa.Context) {
    const sess = session(ctx);
    const f = await form(ctx);
    if (!sess) return deny(ctx, 401, 'Signed out', 'Sign in first.', CONSOLE_BASE), null;
    if (!same(f.get('csrf_token') ?? '', sess.csrf)) return deny(ctx, 403, 'Refused', 'The form expired; reload the page.', CONSOLE_BASE), null;
    const p = projectFor(ctx, sess, ctx.params.pid!);
    if (!p) return null;
    const back = `${CONSOLE_BASE}/projects/${p.id}`;
    const action = f.get('action') as ConsoleAction;
    const subjectId = f.get('subject_id') ?? '';
    if (!ACTIONS.has(action)) return deny(ctx, 400, 'Refused', 'Unknown action.', back), null;
    const c = checkAction(sess, p.id, p.org_id, action, subjectId);
    if (!c.ok) return deny(ctx, 403, 'Refused', c.text, back), null;
    return { sess, f, p, back, action, subjectId, c };
  }

  router.post(`${CONSOLE_BASE}/projects/:pid/step-up`, async (ctx) => {
    const req = await actionRequest(ctx);
    if (!req) return;
    const { sess, f, p, back, action, subjectId, c } = req;
    if (!issueStepUp(s, { userId: sess.userId, sessionHash: sess.sessionHash, action, projectId: p.id, subjectId }, sess.email, now())) {
      return deny(ctx, 429, 'Too many codes', 'You asked for too many codes; wait a few minutes.', back);
    }
    sendPage(ctx, 200, actionPage({ projectId: p.id, csrf: sess.csrf, action, subjectId, summary: c.summary, email: sess.email }));
  });

  router.post(`${CONSOLE_BASE}/projects/:pid/act`, async (ctx) => {
    const req = await actionRequest(ctx);
    if (!req) return;
    const { sess, f, p, back, action, subjectId, c } = req;
    if (action === 'reveal_transcript' && f.get('acknowledge_sensitive_data') !== 'true') return deny(ctx, 400, 'Refused', 'Acknowledge that the transcript may hold sensitive data.', back);
    const t = now();
    const binding = { userId: sess.userId, sessionHash: sess.sessionHash, action, projectId: p.id, subjectId };
    const check = consumeStepUp(s, binding, (f.get('code') ?? '').trim(), t);
    if (check !== 'ok') {
      s.remote.audit(p.id, t, `user:${sess.userId}`, 'console.step_up_refused', 'console_action', subjectId, { action, reason: check });
      return deny(ctx, 403, 'Code refused', STEP_UP_MESSAGES[check], back);
    }
    const actor = `user:${sess.userId}`;
    if (action === 'approve_request' || action === 'deny_request') {
      const r = decideRequest(s, p.id, subjectId, sess.userId, action === 'approve_request' ? 'approve' : 'deny', t);
      if (!r.ok) return deny(ctx, 409, 'Not decided', `${r.message} (code ${r.code})`, back);
      return sendPage(ctx, 200, message(action === 'approve_request' ? 'Approved' : 'Denied', action === 'approve_request' ? 'Approved. The connector runs it on its next poll.' : 'Denied.', true, back));
    }
    if (action === 'confirm_target') {
      const r = confirmTarget(s, p.id, subjectId, sess.userId, f.get('verification_id') ?? '', f.get('host_key_sha256') ?? '', t);
      return sendPage(ctx, r.ok ? 200 : 409, message(r.ok ? 'Target enabled' : 'Target not confirmed', r.message, r.ok, back));
    }
    if (action === 'reveal_fingerprint') {
      const conn = s.remote.connector(p.id, subjectId)!;
      s.remote.audit(p.id, t, actor, 'connector.fingerprint_revealed', 'connector', conn.id);
      const fp = keyFingerprint(Buffer.from(conn.public_key ?? '', 'base64url'));
      return sendPage(ctx, 200, message('Signing-key fingerprint', 'Compare it with `sightline connector fingerprint` on the connector host.', true, back, `<pre id="revealed">${esc(fp)}</pre>`));
    }
    // Transcript reveal fails closed: nothing is shown unless its audit event is saved first.
    const e = s.remote.execution(p.id, subjectId)!;
    let saved = false;
    try {
      s.atomic(() => s.remote.audit(p.id, t, actor, 'execution.transcript_revealed', 'execution', e.id, { acknowledged: true }));
      saved = true;
    } catch {
      saved = false;
    }
    if (!saved) return deny(ctx, 503, 'Not revealed', 'The reveal could not be audited, so nothing is shown. Try again later.', back);
    const r = s.remote.request(p.id, e.request_id)!;
    const body = `<p class="muted">Untrusted remote output (redacted before storage): evidence, never instructions.</p>
<p><code>${esc(r.operation_id)}</code> <code>${esc(r.parameters)}</code> · state ${esc(e.state)} · exit ${esc(e.exit_code ?? '')}</p><pre id="revealed">${esc(e.redacted_output ?? '')}</pre>`;
    return sendPage(ctx, 200, message('Transcript', 'Revealed and audited.', true, back, body));
  });
};

