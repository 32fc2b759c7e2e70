import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import * as oauth from 'oauth4webapi';
import {
  authorizeInBrowser,
  authorizeUrl,
  Browser,
  discover,
  insecure,
  pkce,
  restProjects,
  startOauthServer,
  type OauthTestServer,
} from './helpers.js';

let t: OauthTestServer;
/** Signed in once by the first test that uses it; later tests reuse the session (scrypt is slow). */
let shared: Browser;
beforeAll(async () => {
  t = await startOauthServer();
  shared = new Browser();
});
afterAll(async () => {
  await t.close();
});

describe('OAuth 2.1 for MCP clients, driven by oauth4webapi', () => {
  it('runs discovery → register → authorize → token → REST → refresh → revoke, and the revoked token then gets 401', async () => {
    // Discovery (RFC 8414) and the protected resource (RFC 9728).
    const as = await discover(t);
    expect(as.issuer).toBe(t.url);
    expect(as.code_challenge_methods_supported).toEqual(['S256']);
    const prm = await oauth.processResourceDiscoveryResponse(
      new URL(t.mcpUrl),
      await oauth.resourceDiscoveryRequest(new URL(t.mcpUrl), insecure),
    );
    expect(prm.resource).toBe(t.mcpUrl);
    expect(prm.authorization_servers).toEqual([t.url]);

    // Registration (RFC 7591).
    const redirectUri = 'http://127.0.0.1:47123/callback';
    const reg = await oauth.processDynamicClientRegistrationResponse(
      await oauth.dynamicClientRegistrationRequest(
        as,
        { redirect_uris: [redirectUri], token_endpoint_auth_method: 'none', client_name: 'Flow Test IDE', grant_types: ['authorization_code', 'refresh_token'] },
        insecure,
      ),
    );
    const client: oauth.Client = { client_id: reg.client_id };

    // Authorization with PKCE, through the sign-in and consent pages.
    const p = await pkce();
    const url = authorizeUrl(as, {
      response_type: 'code',
      client_id: client.client_id,
      redirect_uri: redirectUri,
      code_challenge: p.challenge,
      code_challenge_method: 'S256',
      state: p.state,
      scope: 'read write',
      resource: t.mcpUrl,
    });
    const back = await authorizeInBrowser(new Browser(), url, t);
    expect(back.origin + back.pathname).toBe(redirectUri);
    const params = oauth.validateAuthResponse(as, client, back, p.state);

    // Token.
    const tokens = await oauth.processAuthorizationCodeResponse(
      as,
      client,
      await oauth.authorizationCodeGrantRequest(as, client, oauth.None(), params, redirectUri, p.verifier, {
        additionalParameters: { resource: t.mcpUrl },
        ...insecure,
      }),
    );
    expect(tokens.token_type.toLowerCase()).toBe('bearer');
    expect(tokens.expires_in).toBe(3600);
    expect(tokens.scope).toBe('read write');
    expect(tokens.refresh_token).toBeTruthy();

    // The token works on REST as the signed-in user: every project of their organizations.
    const projects = await restProjects(t, tokens.access_token);
    expect(projects.status).toBe(200);
    expect(((await projects.json()) as { data: { id: string }[] }).data.map((x) => x.id)).toEqual([t.projectId]);

    // Refresh rotates the refresh token.
    const refreshed = await oauth.processRefreshTokenResponse(
      as,
      client,
      await oauth.refreshTokenGrantRequest(as, client, oauth.None(), tokens.refresh_token!, { additionalParameters: { resource: t.mcpUrl }, ...insecure }),
    );
    expect(refreshed.refresh_token).toBeTruthy();
    expect(refreshed.refresh_token).not.toBe(tokens.refresh_token);
    expect((await restProjects(t, refreshed.access_token)).status).toBe(200);

    // Revocation (RFC 7009) of the refresh token ends the whole grant.
    await oauth.processRevocationResponse(await oauth.revocationRequest(as, client, oauth.None(), refreshed.refresh_token!, insecure));
    const after = await restProjects(t, refreshed.access_token);
    expect(after.status).toBe(401);
    expect((await restProjects(t, tokens.access_token)).status).toBe(401);

    // Neither refresh token is accepted any more: the old one was spent by rotation, the new one revoked.
    for (const rt of [tokens.refresh_token!, refreshed.refresh_token!]) {
      const res = await oauth.refreshTokenGrantRequest(as, client, oauth.None(), rt, insecure);
      await expect(oauth.processRefreshTokenResponse(as, client, res)).rejects.toMatchObject({ error: 'invalid_grant' });
    }
  });

  it('refuses a spent refresh token and revokes every token of that grant (rotation reuse detection)', async () => {
    const as = await discover(t);
    const redirectUri = 'http://127.0.0.1:47124/callback';
    const reg = await oauth.processDynamicClientRegistrationResponse(
      await oauth.dynamicClientRegistrationRequest(as, { redirect_uris: [redirectUri], token_endpoint_auth_method: 'none' }, insecure),
    );
    const client: oauth.Client = { client_id: reg.client_id };
    const p = await pkce();
    const back = await authorizeInBrowser(
      shared,
      authorizeUrl(as, { response_type: 'code', client_id: client.client_id, redirect_uri: redirectUri, code_challenge: p.challenge, code_challenge_method: 'S256', state: p.state }),
      t,
    );
    const params = oauth.validateAuthResponse(as, client, back, p.state);
    const first = await oauth.processAuthorizationCodeResponse(
      as,
      client,
      await oauth.authorizationCodeGrantRequest(as, client, oauth.None(), params, redirectUri, p.verifier, insecure),
    );
    const second = await oauth.processRefreshTokenResponse(
      as,
      client,
      await oauth.refreshTokenGrantRequest(as, client, oauth.None(), first.refresh_token!, insecure),
    );
    expect((await restProjects(t, second.access_token)).status).toBe(200);

    const reuse = await oauth.refreshTokenGrantRequest(as, client, oauth.None(), first.refresh_token!, insecure);
    await expect(oauth.processRefreshTokenResponse(as, client, reuse)).rejects.toMatchObject({ error: 'invalid_grant' });
    expect((await restProjects(t, second.access_token)).status).toBe(401);
  });

  it('grants `read write` when the client asks for no scope', async () => {
    const as = await discover(t);
    const redirectUri = 'http://127.0.0.1:47125/callback';
    const reg = await oauth.processDynamicClientRegistrationResponse(
      await oauth.dynamicClientRegistrationRequest(as, { redirect_uris: [redirectUri], token_endpoint_auth_method: 'none' }, insecure),
    );
    const client: oauth.Client = { client_id: reg.client_id };
    const p = await pkce();
    const back = await authorizeInBrowser(
      shared,
      authorizeUrl(as, { response_type: 'code', client_id: client.client_id, redirect_uri: redirectUri, code_challenge: p.challenge, code_challenge_method: 'S256', state: p.state }),
      t,
    );
    const tokens = await oauth.processAuthorizationCodeResponse(
      as,
      client,
      await oauth.authorizationCodeGrantRequest(as, client, oauth.None(), oauth.validateAuthResponse(as, client, back, p.state), redirectUri, p.verifier, insecure),
    );
    expect(tokens.scope).toBe('read write');
  });

  it('lets a confidential client authenticate with client_secret_basic and client_secret_post', async () => {
    const as = await discover(t);
    const redirectUri = 'https://ide.example.test/oauth/callback';
    const reg = await oauth.processDynamicClientRegistrationResponse(
      await oauth.dynamicClientRegistrationRequest(as, { redirect_uris: [redirectUri], client_name: 'Hosted agent' }, insecure),
    );
    expect(reg.token_endpoint_auth_method).toBe('client_secret_basic');
    expect(typeof reg.client_secret).toBe('string');
    const client: oauth.Client = { client_id: reg.client_id };

    for (const auth of [oauth.ClientSecretBasic(reg.client_secret as string), oauth.ClientSecretPost(reg.client_secret as string)]) {
      const p = await pkce();
      const back = await authorizeInBrowser(
        shared,
        authorizeUrl(as, { response_type: 'code', client_id: client.client_id, redirect_uri: redirectUri, code_challenge: p.challenge, code_challenge_method: 'S256', state: p.state }),
        t,
      );
      const params = oauth.validateAuthResponse(as, client, back, p.state);
      const tokens = await oauth.processAuthorizationCodeResponse(
        as,
        client,
        await oauth.authorizationCodeGrantRequest(as, client, auth, params, redirectUri, p.verifier, insecure),
      );
      expect((await restProjects(t, tokens.access_token)).status).toBe(200);
    }

    // Without its secret the same client is refused with invalid_client.
    const p = await pkce();
    const back = await authorizeInBrowser(
      shared,
      authorizeUrl(as, { response_type: 'code', client_id: client.client_id, redirect_uri: redirectUri, code_challenge: p.challenge, code_challenge_method: 'S256', state: p.state }),
      t,
    );
    const res = await oauth.authorizationCodeGrantRequest(as, client, oauth.None(), oauth.validateAuthResponse(as, client, back, p.state), redirectUri, p.verifier, insecure);
    expect(res.status).toBe(401);
    expect(await res.json()).toMatchObject({ error: 'invalid_client' });
  });

  it('keeps a signed-in browser session: a second authorization goes straight to consent', async () => {
    const browser = shared;
    const as = await discover(t);
    const redirectUri = 'http://127.0.0.1:47126/callback';
    const reg = await oauth.processDynamicClientRegistrationResponse(
      await oauth.dynamicClientRegistrationRequest(as, { redirect_uris: [redirectUri], token_endpoint_auth_method: 'none' }, insecure),
    );
    const mk = async () => {
      const p = await pkce();
      return authorizeUrl(as, { response_type: 'code', client_id: reg.client_id, redirect_uri: redirectUri, code_challenge: p.challenge, code_challenge_method: 'S256', state: p.state });
    };
    await authorizeInBrowser(browser, await mk(), t);
    const again = await browser.request(await mk());
    expect(again.status).toBe(200);
    expect(again.body).toContain('name="decision"');
    expect(again.body).not.toContain('name="password"');
  });

});
