/**
 * Why this file: every server-rendered page (OAuth sign-in and consent, public status pages, later the
 * small console for human-only actions) shares one HTML shell, one set of security headers and one
 * CSRF scheme, so none of them can forget a header or invent a weaker token.
 *
 * - `esc` escapes text for element content and quoted attributes.
 * - `htmlDocument` is the shell: no external assets, `<meta name="referrer" content="no-referrer">`.
 * - `sendPage` sets the headers: a CSP with no scripts (`default-src 'none'`), forms posting only to
 *   this server (plus named targets), `frame-ancestors 'none'` and X-Frame-Options DENY, nosniff,
 *   Referrer-Policy no-referrer, and no caching unless the caller allows it.
 * - CSRF for pages without a sign-in session: a random HttpOnly SameSite=Strict cookie and a form
 *   token that is an HMAC of it and the form's purpose (double submit, signed). Pages with a session
 *   (OAuth) bind their tokens to the session instead (src/oauth/session.ts).
 */
import { createHmac, randomBytes, timingSafeEqual } from 'node:crypto';
import type Koa from 'koa';

export function esc(v: unknown): string {
  return String(v).replace(/[&<>"']/g, (c) => ({ '&': '&amp;', '<': '&lt;', '>': '&gt;', '"': '&quot;', "'": '&#39;' })[c]!);
}

export function htmlDocument(o: { title: string; style: string; body: string; head?: string; lang?: string }): string {
  return `<!doctype html>
<html lang="${esc(o.lang ?? 'en')}">
<head>
<meta charset="utf-8">
<meta name="viewport" content="width=device-width, initial-scale=1">
<meta name="referrer" content="no-referrer">
<title>${esc(o.title)}</title>
<style>${o.style}</style>
${o.head ?? ''}
</head>
<body>
${o.body}
</body>
</html>`;
}

export interface PageHeaderOptions {
  /** Origins forms may post to besides this server (a redirect target after a post). */
  formTargets?: string[];
  /** Cache-Control value; default no-store. */
  cacheControl?: string;
}

export function securityHeaders(o: PageHeaderOptions = {}): Record<string, string> {
  const formAction = ["'self'", ...new Set(o.formTargets ?? [])].join(' ');
  const h: Record<string, string> = {
    'Content-Security-Policy': `default-src 'none'; style-src 'unsafe-inline'; img-src 'self' data:; form-action ${formAction}; frame-ancestors 'none'; base-uri 'none'`,
    'X-Frame-Options': 'DENY',
    'X-Content-Type-Options': 'nosniff',
    'Referrer-Policy': 'no-referrer',
    'Cache-Control': o.cacheControl ?? 'no-store',
  };
  if (!o.cacheControl) h.Pragma = 'no-cache';
  return h;
}

export function sendPage(ctx: Koa.Context, status: number, html: string, o: PageHeaderOptions = {}): void {
  ctx.status = status;
  ctx.set({ 'Content-Type': 'text/html; charset=utf-8', ...securityHeaders(o) });
  ctx.body = html;
}

function cookieValue(ctx: Koa.Context, name: string): string | undefined {
  for (const part of (ctx.get('cookie') || '').split(';')) {
    const i = part.indexOf('=');
    if (i > 0 && part.slice(0, i).trim() === name) return part.slice(i + 1).trim();
  }
  return undefined;
}

export interface CsrfOptions {
  key: Buffer;
  cookieName: string;
  /** Cookie path (the pages that post). */
  path: string;
  secure: boolean;
}

/** The form token for `purpose`, setting the browser's CSRF cookie when it has none. */
export function csrfToken(ctx: Koa.Context, o: CsrfOptions, purpose: string): string {
  let v = cookieValue(ctx, o.cookieName);
  if (!v || !/^[A-Za-z0-9_-]{32,64}$/.test(v)) {
    v = randomBytes(24).toString('base64url');
    const attrs = [`${o.cookieName}=${v}`, `Path=${o.path}`, 'HttpOnly', 'SameSite=Strict'];
    if (o.secure) attrs.push('Secure');
    ctx.append('Set-Cookie', attrs.join('; '));
  }
  return createHmac('sha256', o.key).update(`csrf:${purpose}\n${v}`).digest('base64url');
}

/** True when the posted token matches this browser's cookie and the purpose. */
export function checkCsrf(ctx: Koa.Context, o: CsrfOptions, purpose: string, given: string | undefined): boolean {
  const v = cookieValue(ctx, o.cookieName);
  if (!v || !given) return false;
  const a = Buffer.from(createHmac('sha256', o.key).update(`csrf:${purpose}\n${v}`).digest('base64url'));
  const b = Buffer.from(given);
  return a.length === b.length && timingSafeEqual(a, b);
}
