import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import * as oauth from 'oauth4webapi';
import {
  authorizeInBrowser,
  authorizeUrl,
  Browser,
  location,
  parseForm,
  pkce,
  registerPublicClient,
  startOauthServer,
  type OauthTestServer,
} from './helpers.js';

let t: OauthTestServer;
/** One signed-in browser for tests that are about the consent step (signing in costs a scrypt). */
let signedIn: Browser;

beforeAll(async () => {
  t = await startOauthServer();
  signedIn = new Browser();
  const { as, client, redirectUri } = await registerPublicClient(t);
  const p = await pkce();
  await authorizeInBrowser(
    signedIn,
    authorizeUrl(as, { response_type: 'code', client_id: client.client_id, redirect_uri: redirectUri, code_challenge: p.challenge, code_challenge_method: 'S256', state: p.state }),
    t,
  );
});
afterAll(async () => {
  await t.close();
});

async function setup(redirectUri?: string) {
  const c = await registerPublicClient(t, redirectUri);
  const p = await pkce();
  const base = {
    response_type: 'code',
    client_id: c.client.client_id,
    redirect_uri: c.redirectUri,
    code_challenge: p.challenge,
    code_challenge_method: 'S256',
    state: p.state,
    resource: t.mcpUrl,
  };
  return { ...c, p, base };
}

function expectErrorRedirect(res: { status: number; headers: Headers; url: string; body: string }, redirectUri: string, error: string, state: string) {
  expect(res.status).toBe(302);
  const to = location(res);
  expect(to.origin + to.pathname).toBe(redirectUri);
  expect(to.searchParams.get('error')).toBe(error);
  expect(to.searchParams.get('state')).toBe(state);
  expect(to.searchParams.get('iss')).toBe(t.url);
  expect(to.searchParams.get('code')).toBeNull();
}

describe('GET {mcp_url}/authorize', () => {
  it('refuses code_challenge_method=plain with invalid_request, returned to the client with state', async () => {
    const x = await setup();
    const res = await new Browser().request(authorizeUrl(x.as, { ...x.base, code_challenge: x.p.verifier, code_challenge_method: 'plain' }));
    expectErrorRedirect(res, x.redirectUri, 'invalid_request', x.p.state);
    expect(location(res).searchParams.get('error_description')).toMatch(/S256/);
  });

  it('refuses a request without code_challenge (PKCE is required)', async () => {
    const x = await setup();
    const res = await new Browser().request(authorizeUrl(x.as, { ...x.base, code_challenge: undefined, code_challenge_method: undefined }));
    expectErrorRedirect(res, x.redirectUri, 'invalid_request', x.p.state);
    expect(location(res).searchParams.get('error_description')).toMatch(/PKCE/);
  });

  it('refuses a code_challenge without code_challenge_method (plain is not assumed)', async () => {
    const x = await setup();
    const res = await new Browser().request(authorizeUrl(x.as, { ...x.base, code_challenge_method: undefined }));
    expectErrorRedirect(res, x.redirectUri, 'invalid_request', x.p.state);
  });

  it('shows an error page and does not redirect when the redirect_uri was not registered', async () => {
    const x = await setup();
    const res = await new Browser().request(authorizeUrl(x.as, { ...x.base, redirect_uri: 'https://attacker.example/callback' }));
    expect(res.status).toBe(400);
    expect(res.headers.get('location')).toBeNull();
    expect(res.headers.get('content-type')).toMatch(/text\/html/);
    expect(res.body).toContain('not one this application registered');
    expect(res.body).not.toContain('attacker.example');
  });

  it('shows an error page for a redirect_uri that differs only in its path', async () => {
    const x = await setup();
    const res = await new Browser().request(authorizeUrl(x.as, { ...x.base, redirect_uri: x.redirectUri + '/evil' }));
    expect(res.status).toBe(400);
    expect(res.headers.get('location')).toBeNull();
  });

  it('shows an error page for an unknown client_id', async () => {
    const x = await setup();
    const res = await new Browser().request(authorizeUrl(x.as, { ...x.base, client_id: 'no-such-client' }));
    expect(res.status).toBe(400);
    expect(res.headers.get('location')).toBeNull();
    expect(res.body).toContain('invalid_client');
  });

  it('accepts another port on a loopback IP redirect URI (RFC 8252 §7.3)', async () => {
    const x = await setup('http://127.0.0.1:40000/callback');
    const res = await new Browser().request(authorizeUrl(x.as, { ...x.base, redirect_uri: 'http://127.0.0.1:41234/callback' }));
    expect(res.status).toBe(200);
    expect(res.body).toContain('name="password"');
  });

  it('refuses a resource that is not this MCP URL with invalid_target', async () => {
    const x = await setup();
    const res = await new Browser().request(authorizeUrl(x.as, { ...x.base, resource: 'https://other.example/mcp' }));
    expectErrorRedirect(res, x.redirectUri, 'invalid_target', x.p.state);
  });

  it('refuses an unknown scope with invalid_scope', async () => {
    const x = await setup();
    const res = await new Browser().request(authorizeUrl(x.as, { ...x.base, scope: 'read admin:everything' }));
    expectErrorRedirect(res, x.redirectUri, 'invalid_scope', x.p.state);
  });

  it('refuses response_type=token with unsupported_response_type', async () => {
    const x = await setup();
    const res = await new Browser().request(authorizeUrl(x.as, { ...x.base, response_type: 'token' }));
    expectErrorRedirect(res, x.redirectUri, 'unsupported_response_type', x.p.state);
  });

  it('sends the user back with access_denied and the state when they deny', async () => {
    const x = await setup();
    const back = await authorizeInBrowser(signedIn, authorizeUrl(x.as, x.base), t, 'deny');
    expect(back.origin + back.pathname).toBe(x.redirectUri);
    expect(back.searchParams.get('error')).toBe('access_denied');
    expect(back.searchParams.get('state')).toBe(x.p.state);
    expect(back.searchParams.get('code')).toBeNull();
    expect(() => oauth.validateAuthResponse(x.as, x.client, back, x.p.state)).toThrow(oauth.AuthorizationResponseError);
  });

  it('refuses a sign-in form posted without its CSRF token', async () => {
    const x = await setup();
    const browser = new Browser();
    const page = await browser.request(authorizeUrl(x.as, x.base));
    const res = await browser.submit(page, { email: t.email, password: t.password }, ['csrf_token']);
    expect(res.status).toBe(403);
    expect(res.headers.get('location')).toBeNull();
    expect(res.body).toContain('CSRF');
  });

  it('refuses a consent form posted without its CSRF token, and does not redirect', async () => {
    const x = await setup();
    const page = await signedIn.request(authorizeUrl(x.as, x.base));
    expect(page.body).toContain('name="decision"');
    const res = await signedIn.submit(page, { decision: 'allow' }, ['csrf_token']);
    expect(res.status).toBe(403);
    expect(res.headers.get('location')).toBeNull();
  });

  it('refuses a consent form carrying the CSRF token of another browser session', async () => {
    const x = await setup();
    const page = await signedIn.request(authorizeUrl(x.as, x.base));
    const { hidden } = parseForm(page.body);
    // An attacker's page posts the victim's request with the attacker's own session cookie.
    const attacker = new Browser();
    await attacker.request(authorizeUrl(x.as, x.base));
    const res = await attacker.request(new URL(parseForm(page.body).action, page.url).href, { form: { ...hidden, decision: 'allow' } });
    expect(res.status).toBe(403);
    expect(res.headers.get('location')).toBeNull();
  });

  it('shows the sign-in page again, with no session, for a wrong password', async () => {
    const x = await setup();
    const browser = new Browser();
    const page = await browser.request(authorizeUrl(x.as, x.base));
    const res = await browser.submit(page, { email: t.email, password: 'not-the-password' });
    expect(res.status).toBe(401);
    expect(res.body).toContain('The email or password is not correct.');
    expect(res.body).toContain('name="password"');
  });

  it('forbids framing and limits form targets on the sign-in, consent and error pages', async () => {
    const x = await setup();
    const signIn = await new Browser().request(authorizeUrl(x.as, x.base));
    const consent = await signedIn.request(authorizeUrl(x.as, x.base));
    const error = await new Browser().request(authorizeUrl(x.as, { ...x.base, redirect_uri: 'https://elsewhere.example/cb' }));
    for (const res of [signIn, consent, error]) {
      expect(res.headers.get('x-frame-options')).toBe('DENY');
      const csp = res.headers.get('content-security-policy')!;
      expect(csp).toContain("frame-ancestors 'none'");
      expect(csp).toContain("default-src 'none'");
      expect(res.headers.get('cache-control')).toBe('no-store');
    }
    expect(signIn.headers.get('content-security-policy')).toContain("form-action 'self';");
    expect(consent.headers.get('content-security-policy')).toContain(`form-action 'self' ${new URL(x.redirectUri).origin};`);
  });

  it('sets the session cookie HttpOnly and SameSite=Lax, scoped to the authorize pages', async () => {
    const x = await setup();
    const res = await fetch(authorizeUrl(x.as, x.base), { redirect: 'manual' });
    const cookie = res.headers.getSetCookie()[0]!;
    expect(cookie).toMatch(/HttpOnly/);
    expect(cookie).toMatch(/SameSite=Lax/);
    expect(cookie).toMatch(/Path=\/mcp\/authorize/);
  });

  it('names the client, its redirect host, the organization and its projects on the consent page', async () => {
    const x = await setup('http://127.0.0.1:45111/callback');
    const page = await signedIn.request(authorizeUrl(x.as, { ...x.base, scope: 'read errors:write' }));
    expect(page.body).toContain('Test IDE');
    expect(page.body).toContain('127.0.0.1:45111');
    expect(page.body).toContain('Acme');
    expect(page.body).toContain('web');
    expect(page.body).toContain('<code>errors:write</code>');
    expect(page.body).toContain(t.email);
  });

  it('refuses a consent posted after the pending request expired (10 minutes), with a page and no redirect', async () => {
    const x = await setup();
    const page = await signedIn.request(authorizeUrl(x.as, x.base));
    expect(page.body).toContain('name="decision"');
    t.advance(10 * 60_000 + 1);
    const res = await signedIn.submit(page, { decision: 'allow' });
    expect(res.status).toBe(400);
    expect(res.headers.get('location')).toBeNull();
    expect(res.body).toContain('expired');
  });

  it('answers a consent only once: a replayed Allow post is refused', async () => {
    const x = await setup();
    const page = await signedIn.request(authorizeUrl(x.as, x.base));
    const first = await signedIn.submit(page, { decision: 'allow' });
    expect(first.status).toBe(303);
    const second = await signedIn.submit(page, { decision: 'allow' });
    expect(second.status).toBe(400);
    expect(second.headers.get('location')).toBeNull();
  });
});
