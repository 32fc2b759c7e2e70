/**
 * The MCP TypeScript SDK's own OAuth client (`auth()` with an `OAuthClientProvider`) signing in
 * the way an IDE assistant does: protected-resource discovery from the MCP URL, authorization
 * server metadata, dynamic registration, PKCE, the user's browser (here: fetch through the real
 * sign-in and consent pages), code exchange with the RFC 8707 resource, then refresh.
 */
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { auth, type OAuthClientProvider } from '@modelcontextprotocol/sdk/client/auth.js';
import { Client } from '@modelcontextprotocol/sdk/client/index.js';
import { StreamableHTTPClientTransport } from '@modelcontextprotocol/sdk/client/streamableHttp.js';
import type { OAuthClientInformationMixed, OAuthClientMetadata, OAuthTokens } from '@modelcontextprotocol/sdk/shared/auth.js';
import { authorizeInBrowser, Browser, restProjects, startOauthServer, type OauthTestServer } from './helpers.js';

/** An in-memory provider; `redirectToAuthorization` plays the user in a browser and keeps the code. */
class IdeProvider implements OAuthClientProvider {
  client?: OAuthClientInformationMixed;
  saved?: OAuthTokens;
  verifier = '';
  authorizationUrl?: URL;
  code?: string;
  returnedState?: string | null;
  readonly browser = new Browser();
  constructor(
    private t: OauthTestServer,
    readonly redirectUrl = 'http://127.0.0.1:33418/callback',
  ) {}

  get clientMetadata(): OAuthClientMetadata {
    return {
      redirect_uris: [this.redirectUrl],
      client_name: 'IDE assistant (MCP SDK)',
      token_endpoint_auth_method: 'none',
      grant_types: ['authorization_code', 'refresh_token'],
      response_types: ['code'],
    };
  }
  state() {
    return 'ide-state-123';
  }
  clientInformation() {
    return this.client;
  }
  saveClientInformation(info: OAuthClientInformationMixed) {
    this.client = info;
  }
  tokens() {
    return this.saved;
  }
  saveTokens(tokens: OAuthTokens) {
    this.saved = tokens;
  }
  saveCodeVerifier(v: string) {
    this.verifier = v;
  }
  codeVerifier() {
    return this.verifier;
  }
  async redirectToAuthorization(url: URL) {
    this.authorizationUrl = url;
    const back = await authorizeInBrowser(this.browser, url.href, this.t);
    this.returnedState = back.searchParams.get('state');
    this.code = back.searchParams.get('code') ?? undefined;
  }
}

let t: OauthTestServer;
beforeAll(async () => {
  t = await startOauthServer();
});
afterAll(async () => {
  await t.close();
});

describe('the MCP SDK OAuth client provider against Sightline', () => {
  it('discovers from the MCP URL, registers, sends the user through sign-in and consent, and exchanges the code', async () => {
    const provider = new IdeProvider(t);
    expect(await auth(provider, { serverUrl: t.mcpUrl })).toBe('REDIRECT');

    const url = provider.authorizationUrl!;
    expect(url.origin + url.pathname).toBe(`${t.mcpUrl}/authorize`);
    expect(url.searchParams.get('code_challenge_method')).toBe('S256');
    expect(url.searchParams.get('resource')).toBe(t.mcpUrl);
    expect(url.searchParams.get('scope')).toBe('read write');
    expect(provider.returnedState).toBe('ide-state-123');
    expect(provider.code).toBeTruthy();

    expect(await auth(provider, { serverUrl: t.mcpUrl, authorizationCode: provider.code })).toBe('AUTHORIZED');
    expect(provider.saved).toMatchObject({ token_type: expect.stringMatching(/^bearer$/i), expires_in: 3600, scope: 'read write' });
    expect((await restProjects(t, provider.saved!.access_token)).status).toBe(200);

    // With a refresh token stored, the next auth() refreshes instead of sending the user again.
    const before = provider.saved!;
    provider.authorizationUrl = undefined;
    expect(await auth(provider, { serverUrl: t.mcpUrl })).toBe('AUTHORIZED');
    expect(provider.authorizationUrl).toBeUndefined();
    expect(provider.saved!.access_token).not.toBe(before.access_token);
    expect(provider.saved!.refresh_token).not.toBe(before.refresh_token);
    expect((await restProjects(t, provider.saved!.access_token)).status).toBe(200);
  });

  it('connects the Streamable HTTP transport after sign-in and lists tools', async () => {
    const provider = new IdeProvider(t);
    // First connection: 401 from /mcp → the SDK runs discovery and sends the user to authorize.
    const first = new StreamableHTTPClientTransport(new URL(t.mcpUrl), { authProvider: provider });
    await expect(new Client({ name: 'ide', version: '1.0.0' }).connect(first)).rejects.toThrow(/unauthorized/i);
    expect(provider.code).toBeTruthy();
    await first.finishAuth(provider.code!);
    await first.close().catch(() => {});

    const transport = new StreamableHTTPClientTransport(new URL(t.mcpUrl), { authProvider: provider });
    const client = new Client({ name: 'ide', version: '1.0.0' });
    await client.connect(transport);
    const { tools } = await client.listTools();
    expect(tools.map((x) => x.name)).toEqual(expect.arrayContaining(['search', 'execute']));
    await client.close();
  });
});
