/**
 * Public status pages: /status/{slug} (HTML without JavaScript), /status/{slug}.json,
 * /status/{slug}/feed.atom, and email subscription with double opt-in (subscribe → confirmation
 * mail → confirm by a POST from the linked page; every notification carries an unsubscribe link).
 * A page's custom domain serves the same at `/`, `/index.json`, `/feed.atom` through the Host header.
 * Private pages answer 404 unless the request carries a credential that may read the page
 * (statusPages.get through invoke, the one access check).
 */
import { createHash, randomBytes } from 'node:crypto';
import type Koa from 'koa';
import type Router from '@koa/router';
import type { Sightline } from '../server.js';
import { authenticate, credentialFromHeaders } from '../core/authenticate.js';
import { pageView } from '../core/status-view.js';
import { enqueueMail } from '../core/mail.js';
import { checkCsrf, csrfToken, esc, sendPage, type CsrfOptions } from '../pages/layout.js';
import { createOauthRepo } from '../storage/oauth-repo.js';
import type { StatusPageRow } from '../storage/status-pages-repo.js';
import { accentOf, pageJson, renderAtom, renderMessage, renderPage, type RenderLinks } from './render.js';

const FORM_LIMIT = 4096;
const EMAIL = /^[^\s@<>()",;:]{1,64}@[A-Za-z0-9](?:[A-Za-z0-9-]{0,61}[A-Za-z0-9])?(?:\.[A-Za-z0-9](?:[A-Za-z0-9-]{0,61}[A-Za-z0-9])?)+$/;
const sha256 = (s: string) => createHash('sha256').update(s).digest('hex');

async function readForm(ctx: Koa.Context): Promise<URLSearchParams | null> {
  const type = (ctx.get('content-type') || '').split(';')[0]!.trim().toLowerCase();
  if (type !== 'application/x-www-form-urlencoded') return null;
  const chunks: Buffer[] = [];
  let size = 0;
  for await (const c of ctx.req) {
    size += (c as Buffer).length;
    if (size > FORM_LIMIT) return null;
    chunks.push(c as Buffer);
  }
  return new URLSearchParams(Buffer.concat(chunks).toString('utf8'));
}

export function statusMount(s: Sightline, router: Router): void {
  const { services } = s;
  const now = () => s.core.now();
  let key: Buffer | null = null;
  const csrfKey = () => (key ??= createOauthRepo(s.db).secretKey('status-pages-csrf', now()));
  const secure = new URL(s.config.baseUrl).protocol === 'https:';
  const csrf = (path: string): CsrfOptions => ({ key: csrfKey(), cookieName: 'sightline_status_csrf', path, secure });
  /** Subscriptions per client address per hour (a mail bomb through the form stays small). */
  const attempts = new Map<string, { start: number; n: number }>();
  const throttled = (ip: string) => {
    const t = now();
    let w = attempts.get(ip);
    if (!w || t - w.start > 3_600_000) {
      if (attempts.size > 10_000) attempts.clear();
      attempts.set(ip, (w = { start: t, n: 0 }));
    }
    return ++w.n > 10;
  };

  /** The page, if this request may see it. */
  const visible = async (ctx: Koa.Context, page: StatusPageRow | undefined): Promise<StatusPageRow | null> => {
    if (!page) return null;
    if (page.is_public) return page;
    const principal = authenticate(services, credentialFromHeaders(ctx.headers), now());
    if (!principal) return null;
    try {
      await s.core.invoke('statusPages.get', { project_id: page.project_id, status_page_id: page.id }, principal);
      return page;
    } catch {
      return null;
    }
  };

  const notFound = (ctx: Koa.Context) =>
    sendPage(ctx, 404, renderMessage('Page not found', '<p>There is no status page at this address.</p>'));

  const linksFor = (page: StatusPageRow, onDomain: boolean): RenderLinks => {
    const base = onDomain ? '' : `/status/${encodeURIComponent(page.slug)}`;
    return { base, json: onDomain ? '/index.json' : `${base}.json`, feed: `${base}/feed.atom`, subscribe: `${base}/subscribe` };
  };
  const absolute = (ctx: Koa.Context, path: string, onDomain: boolean) => (onDomain ? `${ctx.protocol}://${ctx.host}${path || '/'}` : `${s.config.baseUrl}${path}`);

  const showPage = async (ctx: Koa.Context, page: StatusPageRow, onDomain: boolean, notice?: string, status = 200) => {
    const links = linksFor(page, onDomain);
    const view = await pageView(services, page, now(), { bars: true });
    const token = page.is_public ? csrfToken(ctx, csrf(onDomain ? '/' : links.base), 'subscribe') : null;
    sendPage(ctx, status, renderPage(view, links, { csrf: token, notice, now: now() }), { cacheControl: page.is_public && !token ? 'public, max-age=30' : undefined });
  };

  const handlers = {
    async html(ctx: Koa.Context, found: StatusPageRow | undefined, onDomain: boolean) {
      const page = await visible(ctx, found);
      if (!page) return notFound(ctx);
      await showPage(ctx, page, onDomain);
    },
    async json(ctx: Koa.Context, found: StatusPageRow | undefined, onDomain: boolean) {
      const page = await visible(ctx, found);
      if (!page) {
        ctx.status = 404;
        ctx.body = { type: 'not_found_error', code: 'not_found', message: 'Status page was not found.' };
        return;
      }
      const view = await pageView(services, page, now(), { bars: true });
      ctx.set('Cache-Control', page.is_public ? 'public, max-age=30' : 'no-store');
      if (page.is_public) ctx.set('Access-Control-Allow-Origin', '*');
      ctx.body = pageJson(view, onDomain ? absolute(ctx, '/', true) : services.monitoring.pageUrl(page));
    },
    async feed(ctx: Koa.Context, found: StatusPageRow | undefined, onDomain: boolean) {
      const page = await visible(ctx, found);
      if (!page) return notFound(ctx);
      const links = linksFor(page, onDomain);
      const view = await pageView(services, page, now());
      ctx.set('Cache-Control', page.is_public ? 'public, max-age=60' : 'no-store');
      ctx.set('X-Content-Type-Options', 'nosniff');
      ctx.type = 'application/atom+xml; charset=utf-8';
      ctx.body = renderAtom(view, absolute(ctx, links.base, onDomain), absolute(ctx, links.feed, onDomain), now());
    },
    async subscribe(ctx: Koa.Context, page: StatusPageRow | undefined, onDomain: boolean) {
      if (!page || !page.is_public) return notFound(ctx);
      const links = linksFor(page, onDomain);
      const form = await readForm(ctx);
      if (!form || !checkCsrf(ctx, csrf(onDomain ? '/' : links.base), 'subscribe', form.get('csrf_token') ?? undefined)) {
        return showPage(ctx, page, onDomain, 'The form expired; please try again.', 400);
      }
      const email = (form.get('email') ?? '').trim().toLowerCase();
      if (email.length > 254 || !EMAIL.test(email)) return showPage(ctx, page, onDomain, 'Please enter a valid email address.', 400);
      if (throttled(ctx.ip)) return showPage(ctx, page, onDomain, 'Too many subscriptions from your address; try again later.', 429);
      const token = randomBytes(32).toString('base64url');
      const t = now();
      services.atomic(() => {
        const sub = services.statusPages.subscribe(page.id, email, sha256(token), t);
        if (sub.confirmed_at !== null) return; // already subscribed: say the same thing, send nothing
        const confirmUrl = `${absolute(ctx, `${links.base}/confirm`, onDomain)}?id=${sub.id}&token=${token}`;
        enqueueMail(services.scheduler, `confirm:${sub.id}:${t}`, {
          to: email,
          subject: `Confirm your subscription to ${page.name} status`,
          text: `Someone (hopefully you) asked for incident updates from ${page.name}.\n\nConfirm: ${confirmUrl}\n\nIf it was not you, ignore this message; nothing will be sent.\n`,
        }, t);
      });
      sendPage(ctx, 200, renderMessage('Check your email', `<p>If <strong>${esc(email)}</strong> is not subscribed yet, we sent it a confirmation link. Updates start once it is confirmed.</p><p><a href="${esc(links.base || '/')}">Back to the status page</a></p>`, accentOf(page)));
    },
    /** GET shows a button (mail scanners prefetch links); POST confirms. */
    async confirm(ctx: Koa.Context, page: StatusPageRow | undefined, onDomain: boolean) {
      if (!page || !page.is_public) return notFound(ctx);
      const links = linksFor(page, onDomain);
      const opts = csrf(onDomain ? '/' : links.base);
      const form = ctx.method === 'POST' ? await readForm(ctx) : null;
      const id = (form ?? new URLSearchParams(ctx.querystring)).get('id') ?? '';
      const token = (form ?? new URLSearchParams(ctx.querystring)).get('token') ?? '';
      const sub = token ? services.statusPages.subscriberByToken(page.id, sha256(token)) : undefined;
      if (!sub || sub.id !== id) return sendPage(ctx, 404, renderMessage('Link not valid', '<p>This confirmation link is not valid (or was replaced by a newer one).</p>'));
      if (ctx.method === 'GET') {
        const t = csrfToken(ctx, opts, 'confirm');
        return sendPage(ctx, 200, renderMessage('Confirm your subscription', `<p>Send incident updates from <strong>${esc(page.name)}</strong> to <strong>${esc(sub.email)}</strong>?</p>
<form method="post" action="${esc(`${links.base}/confirm`)}"><input type="hidden" name="csrf_token" value="${esc(t)}"><input type="hidden" name="id" value="${esc(id)}"><input type="hidden" name="token" value="${esc(token)}"><button type="submit" id="confirm">Confirm subscription</button></form>`));
      }
      if (!checkCsrf(ctx, opts, 'confirm', form?.get('csrf_token') ?? undefined)) return sendPage(ctx, 400, renderMessage('Form expired', '<p>Open the link from the email again.</p>'));
      services.statusPages.confirmSubscriber(sub.id, now());
      const unsubscribe = `${links.base}/unsubscribe?id=${sub.id}&token=${services.monitoring.unsubscribeToken(sub.id)}`;
      sendPage(ctx, 200, renderMessage('Subscribed', `<p><strong>${esc(sub.email)}</strong> will get incident updates from ${esc(page.name)}.</p><p><a href="${esc(links.base || '/')}">Back to the status page</a> · <a href="${esc(unsubscribe)}">Unsubscribe</a></p>`));
    },
    async unsubscribe(ctx: Koa.Context, page: StatusPageRow | undefined, onDomain: boolean) {
      if (!page) return notFound(ctx);
      const links = linksFor(page, onDomain);
      const opts = csrf(onDomain ? '/' : links.base);
      const form = ctx.method === 'POST' ? await readForm(ctx) : null;
      const params = form ?? new URLSearchParams(ctx.querystring);
      const id = params.get('id') ?? '';
      const token = params.get('token') ?? '';
      if (!id || !services.monitoring.checkUnsubscribeToken(id, token)) return sendPage(ctx, 404, renderMessage('Link not valid', '<p>This unsubscribe link is not valid.</p>'));
      if (ctx.method === 'GET') {
        const t = csrfToken(ctx, opts, 'unsubscribe');
        return sendPage(ctx, 200, renderMessage('Unsubscribe', `<p>Stop incident updates from <strong>${esc(page.name)}</strong>?</p>
<form method="post" action="${esc(`${links.base}/unsubscribe`)}"><input type="hidden" name="csrf_token" value="${esc(t)}"><input type="hidden" name="id" value="${esc(id)}"><input type="hidden" name="token" value="${esc(token)}"><button type="submit" id="unsubscribe">Unsubscribe</button></form>`));
      }
      if (!checkCsrf(ctx, opts, 'unsubscribe', form?.get('csrf_token') ?? undefined)) return sendPage(ctx, 400, renderMessage('Form expired', '<p>Open the link again.</p>'));
      services.statusPages.removeSubscriber(id);
      sendPage(ctx, 200, renderMessage('Unsubscribed', '<p>You will not get further updates.</p>'));
    },
  };

  // Custom domains: the Host header names the page; its paths sit at the root.
  // Only the paths a custom domain serves look the Host up (it was a URL parse and a query on every
  // request, REST and ingest included), and the base URL's host name is parsed once per value.
  const DOMAIN_PATHS = new Set(['/', '/index.json', '/feed.atom', '/subscribe', '/confirm', '/unsubscribe']);
  let baseUrl = '';
  let baseHost = '';
  s.app.use(async (ctx, next) => {
    if (!DOMAIN_PATHS.has(ctx.path)) return next();
    if (s.config.baseUrl !== baseUrl) baseHost = new URL((baseUrl = s.config.baseUrl)).hostname;
    const host = ctx.hostname.toLowerCase();
    const page = host && host !== baseHost ? services.statusPages.byDomain(host) : undefined;
    if (!page) return next();
    const route = `${ctx.method} ${ctx.path}`;
    if (route === 'GET /' || route === 'HEAD /') return handlers.html(ctx, page, true);
    if (route === 'GET /index.json') return handlers.json(ctx, page, true);
    if (route === 'GET /feed.atom') return handlers.feed(ctx, page, true);
    if (route === 'POST /subscribe') return handlers.subscribe(ctx, page, true);
    if (ctx.path === '/confirm' && (ctx.method === 'GET' || ctx.method === 'POST')) return handlers.confirm(ctx, page, true);
    if (ctx.path === '/unsubscribe' && (ctx.method === 'GET' || ctx.method === 'POST')) return handlers.unsubscribe(ctx, page, true);
    return next();
  });

  const bySlug = (slug: string) => services.statusPages.bySlug(slug.toLowerCase());
  router.get('/status/:slug', (ctx) => {
    const slug = ctx.params.slug!;
    if (slug.endsWith('.json')) return handlers.json(ctx, bySlug(slug.slice(0, -5)), false);
    return handlers.html(ctx, bySlug(slug), false);
  });
  router.get('/status/:slug/feed.atom', (ctx) => handlers.feed(ctx, bySlug(ctx.params.slug!), false));
  router.post('/status/:slug/subscribe', (ctx) => handlers.subscribe(ctx, bySlug(ctx.params.slug!), false));
  router.get('/status/:slug/confirm', (ctx) => handlers.confirm(ctx, bySlug(ctx.params.slug!), false));
  router.post('/status/:slug/confirm', (ctx) => handlers.confirm(ctx, bySlug(ctx.params.slug!), false));
  router.get('/status/:slug/unsubscribe', (ctx) => handlers.unsubscribe(ctx, bySlug(ctx.params.slug!), false));
  router.post('/status/:slug/unsubscribe', (ctx) => handlers.unsubscribe(ctx, bySlug(ctx.params.slug!), false));
}
