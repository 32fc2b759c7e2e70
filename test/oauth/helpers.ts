/**
 * A real Sightline for OAuth tests: listening on 127.0.0.1 with its base URL set to the real port
 * (issuer, MCP URL and redirects must name the address clients actually reach), a movable clock,
 * and one user (scrypt is slow: one per file) who owns organization "Acme" with project "web".
 *
 * `Browser` is a tiny cookie-keeping fetch that follows the authorization pages the way a person
 * would: read the form from the HTML, post it back with its hidden fields (CSRF token included).
 */
import http from 'node:http';
import type { AddressInfo } from 'node:net';
import { mkdtempSync, rmSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import * as oauth from 'oauth4webapi';
import { createSightline, type Sightline } from '../../src/server.js';
import { bootstrapOrganization } from '../../src/core/bootstrap.js';

export interface OauthTestServer {
  s: Sightline;
  url: string;
  mcpUrl: string;
  email: string;
  password: string;
  projectId: string;
  organizationId: string;
  /** The server's clock (ms); move it with `advance`. */
  clock: { t: number };
  advance(ms: number): void;
  close(): Promise<void>;
}

export async function startOauthServer(opts: { createUser?: boolean } = {}): Promise<OauthTestServer> {
  const server = http.createServer();
  await new Promise<void>((r) => server.listen(0, '127.0.0.1', r));
  const port = (server.address() as AddressInfo).port;
  const url = `http://127.0.0.1:${port}`;
  const dir = mkdtempSync(join(tmpdir(), 'sightline-oauth-'));
  const clock = { t: Date.now() };
  const s = createSightline({ logLevel: 'silent', dbFile: join(dir, 'test.db'), baseUrl: url, host: '127.0.0.1', port }, { now: () => clock.t });
  server.on('request', s.app.callback());
  let email = '';
  let password = '';
  let projectId = '';
  let organizationId = '';
  if (opts.createUser !== false) {
    const r = bootstrapOrganization(s.services, { org: 'Acme', project: 'web', email: 'ada@example.test', now: clock.t });
    email = r.owner_email;
    password = r.owner_password!;
    projectId = r.project_id;
    organizationId = r.organization_id;
  }
  return {
    s,
    url,
    mcpUrl: s.config.mcpUrl,
    email,
    password,
    projectId,
    organizationId,
    clock,
    advance(ms) {
      clock.t += ms;
    },
    async close() {
      server.closeAllConnections();
      await new Promise<void>((r) => server.close(() => r()));
      await s.close();
      rmSync(dir, { recursive: true, force: true });
    },
  };
}

/** Options for oauth4webapi against a plain-http test server. */
export const insecure = { [oauth.allowInsecureRequests]: true } as const;

export function decodeEntities(v: string): string {
  return v.replace(/&quot;/g, '"').replace(/&#39;/g, "'").replace(/&lt;/g, '<').replace(/&gt;/g, '>').replace(/&amp;/g, '&');
}

/** The first form of a page: its action and hidden inputs. */
export function parseForm(html: string): { action: string; hidden: Record<string, string> } {
  const form = /<form[^>]*action="([^"]*)"[^>]*>([\s\S]*?)<\/form>/i.exec(html);
  if (!form) throw new Error(`no form in page:\n${html.slice(0, 500)}`);
  const hidden: Record<string, string> = {};
  for (const m of form[2]!.matchAll(/<input type="hidden" name="([^"]+)" value="([^"]*)">/g)) hidden[m[1]!] = decodeEntities(m[2]!);
  return { action: decodeEntities(form[1]!), hidden };
}

export interface PageResponse {
  status: number;
  headers: Headers;
  body: string;
  url: string;
}

/** fetch with a cookie jar and manual redirects, like a browser tab driven by hand. */
export class Browser {
  cookies = new Map<string, string>();

  async request(url: string, init: { method?: string; form?: Record<string, string> } = {}): Promise<PageResponse> {
    const headers: Record<string, string> = {};
    if (this.cookies.size) headers.cookie = [...this.cookies].map(([k, v]) => `${k}=${v}`).join('; ');
    let body: string | undefined;
    if (init.form) {
      headers['content-type'] = 'application/x-www-form-urlencoded';
      body = new URLSearchParams(init.form).toString();
    }
    const res = await fetch(url, { method: init.method ?? (init.form ? 'POST' : 'GET'), headers, body, redirect: 'manual' });
    for (const c of res.headers.getSetCookie()) {
      const [pair, ...attrs] = c.split(';');
      const i = pair!.indexOf('=');
      const name = pair!.slice(0, i).trim();
      const value = pair!.slice(i + 1).trim();
      if (attrs.some((a) => /^\s*max-age=0\s*$/i.test(a)) || value === '') this.cookies.delete(name);
      else this.cookies.set(name, value);
    }
    return { status: res.status, headers: res.headers, body: await res.text(), url };
  }

  /** Posts the page's form back with its hidden fields plus `fields`. */
  async submit(page: PageResponse, fields: Record<string, string>, drop: string[] = []): Promise<PageResponse> {
    const { action, hidden } = parseForm(page.body);
    const form = { ...hidden, ...fields };
    for (const d of drop) delete form[d];
    return this.request(new URL(action, page.url).href, { form });
  }
}

export function location(res: PageResponse): URL {
  const l = res.headers.get('location');
  if (!l) throw new Error(`expected a redirect, got ${res.status}:\n${res.body.slice(0, 800)}`);
  return new URL(l, res.url);
}

/**
 * Drives the authorization pages: open the authorize URL, sign in (unless the session already is
 * a user's), then Allow or Deny. Returns the URL the browser is finally sent to.
 */
export async function authorizeInBrowser(
  browser: Browser,
  authorizeUrl: string,
  user: { email: string; password: string },
  decision: 'allow' | 'deny' = 'allow',
): Promise<URL> {
  let page = await browser.request(authorizeUrl);
  if (page.status >= 300 && page.status < 400) return location(page);
  if (page.status !== 200) throw new Error(`authorize page answered ${page.status}:\n${page.body.slice(0, 800)}`);
  if (page.body.includes('name="password"')) {
    const signedIn = await browser.submit(page, { email: user.email, password: user.password });
    if (signedIn.status !== 303) throw new Error(`sign-in answered ${signedIn.status}:\n${signedIn.body.slice(0, 800)}`);
    page = await browser.request(location(signedIn).href);
  }
  const decided = await browser.submit(page, { decision });
  return location(decided);
}

/** A registered public client plus a PKCE authorization URL for it. */
export async function registerPublicClient(t: OauthTestServer, redirectUri = 'http://127.0.0.1:45999/callback', extra: Record<string, unknown> = {}) {
  const as = await discover(t);
  const reg = await oauth.processDynamicClientRegistrationResponse(
    await oauth.dynamicClientRegistrationRequest(
      as,
      { redirect_uris: [redirectUri], token_endpoint_auth_method: 'none', client_name: 'Test IDE', grant_types: ['authorization_code', 'refresh_token'], ...extra },
      insecure,
    ),
  );
  const client: oauth.Client = { client_id: reg.client_id };
  return { as, client, reg, redirectUri };
}

export async function discover(t: OauthTestServer): Promise<oauth.AuthorizationServer> {
  const issuer = new URL(t.url);
  return oauth.processDiscoveryResponse(issuer, await oauth.discoveryRequest(issuer, { algorithm: 'oauth2', ...insecure }));
}

export async function pkce() {
  const verifier = oauth.generateRandomCodeVerifier();
  return { verifier, challenge: await oauth.calculatePKCECodeChallenge(verifier), state: oauth.generateRandomState() };
}

export function authorizeUrl(as: oauth.AuthorizationServer, params: Record<string, string | undefined>): string {
  const u = new URL(as.authorization_endpoint!);
  for (const [k, v] of Object.entries(params)) if (v !== undefined) u.searchParams.set(k, v);
  return u.href;
}

/** Registers a public client and runs authorize → code for it; returns everything a test needs to exchange. */
export async function obtainCode(t: OauthTestServer, browser = new Browser(), scope?: string) {
  const { as, client, redirectUri } = await registerPublicClient(t);
  const p = await pkce();
  const url = authorizeUrl(as, {
    response_type: 'code',
    client_id: client.client_id,
    redirect_uri: redirectUri,
    code_challenge: p.challenge,
    code_challenge_method: 'S256',
    state: p.state,
    scope,
    resource: t.mcpUrl,
  });
  const back = await authorizeInBrowser(browser, url, t);
  const params = oauth.validateAuthResponse(as, client, back, p.state);
  return { as, client, redirectUri, verifier: p.verifier, params, code: params.get('code')! };
}

export async function exchange(t: OauthTestServer, x: Awaited<ReturnType<typeof obtainCode>>, verifier = x.verifier) {
  return oauth.authorizationCodeGrantRequest(x.as, x.client, oauth.None(), x.params, x.redirectUri, verifier, {
    additionalParameters: { resource: t.mcpUrl },
    ...insecure,
  });
}

export function restProjects(t: OauthTestServer, token: string) {
  return fetch(`${t.url}/v1/projects`, { headers: { authorization: `Bearer ${token}` } });
}

/** A raw form post to a token-like endpoint (for requests oauth4webapi would refuse to send). */
export async function postForm(url: string, form: Record<string, string>, headers: Record<string, string> = {}) {
  const res = await fetch(url, { method: 'POST', headers: { 'content-type': 'application/x-www-form-urlencoded', ...headers }, body: new URLSearchParams(form) });
  const text = await res.text();
  return { status: res.status, headers: res.headers, body: text ? JSON.parse(text) : null };
}
