import { createHmac, randomBytes, timingSafeEqual } from 'node:crypto';
import type Koa from 'koa';
import { hashSecret } from '../domain/identity/secrets.js';
import { LIFETIMES, type OauthContext } from './context.js';

export const SESSION_COOKIE = 'sightline_oauth_session';

export interface Session {
  /** The raw session id (only ever in the cookie and in memory; the database holds its hash). */
  sid: string;
  userId: string | null;
}

function parseCookies(header: string): Map<string, string> {
  const out = new Map<string, string>();
  for (const part of header.split(';')) {
    const i = part.indexOf('=');
    if (i < 0) continue;
    const k = part.slice(0, i).trim();
    if (!out.has(k)) out.set(k, part.slice(i + 1).trim());
  }
  return out;
}

function sameMac(a: string, b: string): boolean {
  const x = Buffer.from(a);
  const y = Buffer.from(b);
  return x.length === y.length && timingSafeEqual(x, y);
}

/**
 * Sign-in sessions of the authorization pages: a random id in a signed, HttpOnly, SameSite=Lax
 * cookie scoped to `{mcp_path}/authorize`, the id's hash in the database. CSRF tokens are HMACs of
 * the session id, the form's purpose and the pending authorization request, so a token is good for
 * one form of one request in one browser only.
 */
export function createSessions(o: OauthContext) {
  const key = o.repo.secretKey('session-cookie', o.now());
  const mac = (purpose: string, value: string) => createHmac('sha256', key).update(`${purpose}\n${value}`).digest('base64url');
  const mcp = new URL(o.config.mcpUrl);
  const cookiePath = `${mcp.pathname.replace(/\/+$/, '')}/authorize`;
  const secure = mcp.protocol === 'https:';

  const setCookie = (ctx: Koa.Context, value: string, maxAgeSeconds?: number) => {
    const attrs = [`${SESSION_COOKIE}=${value}`, `Path=${cookiePath}`, 'HttpOnly', 'SameSite=Lax'];
    if (secure) attrs.push('Secure');
    if (maxAgeSeconds !== undefined) attrs.push(`Max-Age=${maxAgeSeconds}`);
    ctx.append('Set-Cookie', attrs.join('; '));
  };

  return {
    /** The session named by a correctly signed, unexpired cookie, or null. */
    read(ctx: Koa.Context): Session | null {
      const raw = parseCookies(ctx.get('cookie')).get(SESSION_COOKIE);
      if (!raw) return null;
      const [sid, sig] = raw.split('.');
      if (!sid || !sig || !sameMac(sig, mac('cookie', sid))) return null;
      const row = o.repo.session(hashSecret(sid));
      if (!row || row.expires_at <= o.now()) return null;
      if (row.user_id && !o.identity.userById(row.user_id)) return null;
      return { sid, userId: row.user_id };
    },

    /**
     * Starts a new session (anonymous before sign-in, a user's after). The previous one is deleted:
     * a fresh id at sign-in defeats session fixation.
     */
    start(ctx: Koa.Context, userId: string | null, previous?: Session | null): Session {
      if (previous) o.repo.deleteSession(hashSecret(previous.sid));
      const sid = randomBytes(32).toString('base64url');
      const now = o.now();
      o.repo.createSession(hashSecret(sid), userId, now, now + (userId ? LIFETIMES.sessionMs : LIFETIMES.anonymousSessionMs));
      setCookie(ctx, `${sid}.${mac('cookie', sid)}`);
      return { sid, userId };
    },

    end(ctx: Koa.Context, session: Session | null): void {
      if (session) o.repo.deleteSession(hashSecret(session.sid));
      setCookie(ctx, '', 0);
    },

    csrfToken(session: Session, purpose: 'sign-in' | 'consent', requestId: string): string {
      return mac(`csrf:${purpose}`, `${session.sid}\n${requestId}`);
    },

    checkCsrf(session: Session | null, purpose: 'sign-in' | 'consent', requestId: string, given: string | undefined): boolean {
      if (!session || !given) return false;
      return sameMac(given, mac(`csrf:${purpose}`, `${session.sid}\n${requestId}`));
    },
  };
}

export type Sessions = ReturnType<typeof createSessions>;
