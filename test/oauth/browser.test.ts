/**
 * The sign-in and consent pages in a real browser: headless Chromium driven by playwright-core
 * fills the real forms by clicking, the browser follows the redirect to the client's loopback
 * listener (a tiny node http server here), and the code is exchanged with oauth4webapi. This is
 * what checks that the pages work under their own CSP (form-action must allow the redirect).
 */
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import http from 'node:http';
import type { AddressInfo } from 'node:net';
import { existsSync, mkdtempSync, rmSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import * as oauth from 'oauth4webapi';
import { chromium, type BrowserContext } from 'playwright-core';
import { authorizeUrl, insecure, pkce, registerPublicClient, restProjects, startOauthServer, type OauthTestServer } from './helpers.js';

const CHROMIUM = '/usr/bin/chromium';
const hasChromium = existsSync(CHROMIUM);
const SKIP_REASON = `browser test skipped: ${CHROMIUM} not found; run scripts/install-chromium.sh`;

if (!hasChromium) {
  console.warn(SKIP_REASON);
  describe('OAuth sign-in in headless Chromium', () => {
    it(`is not run on this machine (${SKIP_REASON})`, () => {
      console.warn(SKIP_REASON);
    });
  });
} else {
  describe('OAuth sign-in in headless Chromium', () => {
    let t: OauthTestServer;
    let context: BrowserContext;
    let profile: string;
    /** The client's loopback redirect listener: records what the browser brought back. */
    let callback: http.Server;
    let callbackUrl: string;
    const arrivals: URL[] = [];

    beforeAll(async () => {
      t = await startOauthServer();
      callback = http.createServer((req, res) => {
        const u = new URL(req.url ?? '/', callbackUrl);
        if (u.pathname === '/callback') arrivals.push(u); // not /favicon.ico
        res.writeHead(200, { 'content-type': 'text/html' }).end('<!doctype html><title>done</title><p id="done">Signed in. You can close this tab.</p>');
      });
      await new Promise<void>((r) => callback.listen(0, '127.0.0.1', r));
      callbackUrl = `http://127.0.0.1:${(callback.address() as AddressInfo).port}/callback`;
      profile = mkdtempSync(join(tmpdir(), 'sightline-chromium-'));
      context = await chromium.launchPersistentContext(profile, {
        executablePath: CHROMIUM,
        headless: true,
        args: [
          '--headless',
          '--no-sandbox',
          '--disable-gpu',
          '--disable-quic',
          '--no-first-run',
          '--disable-background-networking',
          '--disable-component-update',
          '--disable-sync',
        ],
        timeout: 30_000,
      });
    });

    afterAll(async () => {
      await context?.close();
      callback?.closeAllConnections();
      await new Promise<void>((r) => (callback ? callback.close(() => r()) : r()));
      await t?.close();
      if (profile) rmSync(profile, { recursive: true, force: true });
    });

    it('signs in and consents by clicking, lands on the loopback redirect with a code, and the code exchanges for a working token', async () => {
      const { as, client } = await registerPublicClient(t, callbackUrl, { client_name: 'Chromium Test Client' });
      const p = await pkce();
      const url = authorizeUrl(as, {
        response_type: 'code',
        client_id: client.client_id,
        redirect_uri: callbackUrl,
        code_challenge: p.challenge,
        code_challenge_method: 'S256',
        state: p.state,
        scope: 'read',
        resource: t.mcpUrl,
      });

      const page = await context.newPage();
      const first = await page.goto(url);
      expect(first!.status()).toBe(200);
      expect(await first!.headerValue('x-frame-options')).toBe('DENY');
      await page.fill('#email', t.email);
      await page.fill('#password', t.password);
      await page.click('#sign-in');

      await page.waitForSelector('#allow');
      const consent = await page.textContent('main');
      expect(consent).toContain('Chromium Test Client');
      expect(consent).toContain(new URL(callbackUrl).host);
      expect(consent).toContain('Acme');
      expect(consent).toContain('web');

      await Promise.all([page.waitForURL((u) => u.href.startsWith(callbackUrl)), page.click('#allow')]);
      await page.waitForSelector('#done');
      expect(arrivals).toHaveLength(1);
      const back = arrivals[0]!;
      expect(back.searchParams.get('state')).toBe(p.state);
      const params = oauth.validateAuthResponse(as, client, back, p.state);

      const tokens = await oauth.processAuthorizationCodeResponse(
        as,
        client,
        await oauth.authorizationCodeGrantRequest(as, client, oauth.None(), params, callbackUrl, p.verifier, {
          additionalParameters: { resource: t.mcpUrl },
          ...insecure,
        }),
      );
      expect(tokens.scope).toBe('read');
      expect((await restProjects(t, tokens.access_token)).status).toBe(200);
      await page.close();
    });

    it('returns access_denied with the state to the loopback redirect when the user clicks Deny', async () => {
      arrivals.length = 0;
      const { as, client } = await registerPublicClient(t, callbackUrl);
      const p = await pkce();
      const page = await context.newPage();
      // Still signed in from the previous test: the consent page comes straight away.
      await page.goto(
        authorizeUrl(as, { response_type: 'code', client_id: client.client_id, redirect_uri: callbackUrl, code_challenge: p.challenge, code_challenge_method: 'S256', state: p.state }),
      );
      await Promise.all([page.waitForURL((u) => u.href.startsWith(callbackUrl)), page.click('#deny')]);
      await page.waitForSelector('#done');
      expect(arrivals).toHaveLength(1);
      expect(arrivals[0]!.searchParams.get('error')).toBe('access_denied');
      expect(arrivals[0]!.searchParams.get('state')).toBe(p.state);
      expect(arrivals[0]!.searchParams.get('code')).toBeNull();
      await page.close();
    });

    it('refuses to render the consent page inside a frame', async () => {
      const { as, client } = await registerPublicClient(t, callbackUrl);
      const p = await pkce();
      const target = authorizeUrl(as, { response_type: 'code', client_id: client.client_id, redirect_uri: callbackUrl, code_challenge: p.challenge, code_challenge_method: 'S256', state: p.state });
      // A page on another origin (the loopback listener's) tries to frame it.
      const page = await context.newPage();
      await page.goto(callbackUrl.replace('/callback', '/framer'));
      // setContent resolves on the load event, which waits for the iframe (or its blocked-page stand-in).
      await page.setContent(`<iframe id="f" src="${target}" width="600" height="400"></iframe>`, { waitUntil: 'load' });
      const frame = page.frames().find((f) => f !== page.mainFrame());
      expect(frame).toBeDefined();
      const html = await frame!.content().catch(() => '');
      expect(html).not.toContain('Sign in to Sightline');
      expect(html).not.toContain('name="csrf_token"');
      await page.close();
    });
  });
}
