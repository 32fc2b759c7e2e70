import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import * as oauth from 'oauth4webapi';
import { Browser, exchange, insecure, obtainCode, postForm, restProjects, startOauthServer, type OauthTestServer } from './helpers.js';

let t: OauthTestServer;
let browser: Browser;
beforeAll(async () => {
  t = await startOauthServer();
  browser = new Browser(); // signs in once, then stays signed in
});
afterAll(async () => {
  await t.close();
});

describe('POST {mcp_url}/token', () => {
  it('burns the code when the code_verifier is wrong: the right verifier afterwards is refused too', async () => {
    const x = await obtainCode(t, browser);
    const wrong = await exchange(t, x, oauth.generateRandomCodeVerifier());
    expect(wrong.status).toBe(400);
    expect(await wrong.json()).toMatchObject({ error: 'invalid_grant' });
    const right = await exchange(t, x);
    expect(right.status).toBe(400);
    expect(await right.json()).toMatchObject({ error: 'invalid_grant' });
  });

  it('refuses a replayed code and revokes the tokens issued from it', async () => {
    const x = await obtainCode(t, browser);
    const tokens = await oauth.processAuthorizationCodeResponse(x.as, x.client, await exchange(t, x));
    expect((await restProjects(t, tokens.access_token)).status).toBe(200);

    const replay = await exchange(t, x);
    expect(replay.status).toBe(400);
    expect(await replay.json()).toMatchObject({ error: 'invalid_grant' });
    expect((await restProjects(t, tokens.access_token)).status).toBe(401);
    const rt = await oauth.refreshTokenGrantRequest(x.as, x.client, oauth.None(), tokens.refresh_token!, insecure);
    expect(rt.status).toBe(400);
  });

  it('refuses a code used after its 60-second lifetime', async () => {
    const x = await obtainCode(t, browser);
    t.advance(61_000);
    const res = await exchange(t, x);
    expect(res.status).toBe(400);
    expect(await res.json()).toMatchObject({ error: 'invalid_grant', error_description: expect.stringMatching(/expired/) });
  });

  it('refuses an access token after its hour: 401 on REST', async () => {
    const x = await obtainCode(t, browser);
    const tokens = await oauth.processAuthorizationCodeResponse(x.as, x.client, await exchange(t, x));
    expect(tokens.expires_in).toBe(3600);
    t.advance(3_599_000);
    expect((await restProjects(t, tokens.access_token)).status).toBe(200);
    t.advance(2_000);
    const res = await restProjects(t, tokens.access_token);
    expect(res.status).toBe(401);
    // The refresh token still works and brings a fresh hour.
    const refreshed = await oauth.processRefreshTokenResponse(
      x.as,
      x.client,
      await oauth.refreshTokenGrantRequest(x.as, x.client, oauth.None(), tokens.refresh_token!, insecure),
    );
    expect((await restProjects(t, refreshed.access_token)).status).toBe(200);
  });

  it('refuses a redirect_uri that differs from the authorization request', async () => {
    const x = await obtainCode(t, browser);
    const res = await oauth.authorizationCodeGrantRequest(x.as, x.client, oauth.None(), x.params, 'http://127.0.0.1:45999/other', x.verifier, insecure);
    expect(res.status).toBe(400);
    expect(await res.json()).toMatchObject({ error: 'invalid_grant' });
  });

  it('refuses a resource other than this MCP URL with invalid_target', async () => {
    const x = await obtainCode(t, browser);
    const res = await oauth.authorizationCodeGrantRequest(x.as, x.client, oauth.None(), x.params, x.redirectUri, x.verifier, {
      additionalParameters: { resource: 'https://other.example/mcp' },
      ...insecure,
    });
    expect(res.status).toBe(400);
    expect(await res.json()).toMatchObject({ error: 'invalid_target' });
  });

  it('refuses a code presented by another client', async () => {
    const x = await obtainCode(t, browser);
    const other = await obtainCode(t, browser);
    const res = await oauth.authorizationCodeGrantRequest(x.as, other.client, oauth.None(), x.params, x.redirectUri, x.verifier, insecure);
    expect(res.status).toBe(400);
    expect(await res.json()).toMatchObject({ error: 'invalid_grant' });
  });

  it('answers errors in the RFC 6749 shape with no-store', async () => {
    const x = await obtainCode(t, browser);
    const tokenUrl = x.as.token_endpoint!;
    const noGrant = await postForm(tokenUrl, { client_id: x.client.client_id });
    expect(noGrant.status).toBe(400);
    expect(noGrant.body).toEqual({ error: 'invalid_request', error_description: expect.any(String) });
    expect(noGrant.headers.get('cache-control')).toBe('no-store');

    const password = await postForm(tokenUrl, { client_id: x.client.client_id, grant_type: 'password', username: 'a', password: 'b' });
    expect(password.body.error).toBe('unsupported_grant_type');

    const unknown = await postForm(tokenUrl, { client_id: 'nobody', grant_type: 'authorization_code', code: 'x' });
    expect(unknown.status).toBe(401);
    expect(unknown.body.error).toBe('invalid_client');

    const basic = await postForm(tokenUrl, { grant_type: 'authorization_code', code: 'x' }, { authorization: `Basic ${Buffer.from('nobody:secret').toString('base64')}` });
    expect(basic.status).toBe(401);
    expect(basic.headers.get('www-authenticate')).toMatch(/^Basic /);

    const twice = await fetch(tokenUrl, {
      method: 'POST',
      headers: { 'content-type': 'application/x-www-form-urlencoded' },
      body: `client_id=${x.client.client_id}&grant_type=authorization_code&code=a&code=b`,
    });
    expect(twice.status).toBe(400);
    expect(((await twice.json()) as { error: string }).error).toBe('invalid_request');
  });

  it('lets a refresh narrow the scope but never widen it', async () => {
    const x = await obtainCode(t, browser, 'read write');
    const tokens = await oauth.processAuthorizationCodeResponse(x.as, x.client, await exchange(t, x));
    const wider = await oauth.refreshTokenGrantRequest(x.as, x.client, oauth.None(), tokens.refresh_token!, { additionalParameters: { scope: 'read revenue:read' }, ...insecure });
    expect(wider.status).toBe(400);
    expect(await wider.json()).toMatchObject({ error: 'invalid_scope' });
    const narrower = await oauth.processRefreshTokenResponse(
      x.as,
      x.client,
      await oauth.refreshTokenGrantRequest(x.as, x.client, oauth.None(), tokens.refresh_token!, { additionalParameters: { scope: 'read' }, ...insecure }),
    );
    expect(narrower.scope).toBe('read');
  });
});

describe('POST {mcp_url}/revoke', () => {
  it('revokes one access token and leaves the refresh token usable', async () => {
    const x = await obtainCode(t, browser);
    const tokens = await oauth.processAuthorizationCodeResponse(x.as, x.client, await exchange(t, x));
    await oauth.processRevocationResponse(
      await oauth.revocationRequest(x.as, x.client, oauth.None(), tokens.access_token, { additionalParameters: { token_type_hint: 'access_token' }, ...insecure }),
    );
    expect((await restProjects(t, tokens.access_token)).status).toBe(401);
    const refreshed = await oauth.processRefreshTokenResponse(
      x.as,
      x.client,
      await oauth.refreshTokenGrantRequest(x.as, x.client, oauth.None(), tokens.refresh_token!, insecure),
    );
    expect((await restProjects(t, refreshed.access_token)).status).toBe(200);
  });

  it('answers 200 for an unknown token and refuses to revoke another client’s token', async () => {
    const x = await obtainCode(t, browser);
    const other = await obtainCode(t, browser);
    const tokens = await oauth.processAuthorizationCodeResponse(x.as, x.client, await exchange(t, x));
    const unknown = await postForm(x.as.revocation_endpoint!, { client_id: x.client.client_id, token: 'slat_nonsense' });
    expect(unknown.status).toBe(200);
    const foreign = await postForm(x.as.revocation_endpoint!, { client_id: other.client.client_id, token: tokens.access_token });
    expect(foreign.status).toBe(400);
    expect(foreign.body.error).toBe('unauthorized_client');
    expect((await restProjects(t, tokens.access_token)).status).toBe(200);
  });
});
