import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { KNOWN_SCOPES } from '../../src/core/scopes.js';
import { wwwAuthenticate } from '../../src/oauth/www-authenticate.js';
import { startOauthServer, type OauthTestServer } from './helpers.js';

let t: OauthTestServer;
beforeAll(async () => {
  t = await startOauthServer({ createUser: false });
});
afterAll(async () => {
  await t.close();
});

describe('OAuth discovery documents', () => {
  it('publishes RFC 8414 metadata with S256 only, both grants, three client auth methods and the revocation endpoint', async () => {
    const res = await fetch(`${t.url}/.well-known/oauth-authorization-server`);
    expect(res.status).toBe(200);
    expect(res.headers.get('access-control-allow-origin')).toBe('*');
    expect(await res.json()).toEqual({
      issuer: t.url,
      authorization_endpoint: `${t.mcpUrl}/authorize`,
      token_endpoint: `${t.mcpUrl}/token`,
      registration_endpoint: `${t.mcpUrl}/register`,
      revocation_endpoint: `${t.mcpUrl}/revoke`,
      scopes_supported: [...KNOWN_SCOPES],
      response_types_supported: ['code'],
      response_modes_supported: ['query'],
      grant_types_supported: ['authorization_code', 'refresh_token'],
      code_challenge_methods_supported: ['S256'],
      token_endpoint_auth_methods_supported: ['none', 'client_secret_basic', 'client_secret_post'],
      revocation_endpoint_auth_methods_supported: ['none', 'client_secret_basic', 'client_secret_post'],
      authorization_response_iss_parameter_supported: true,
      service_documentation: expect.any(String),
    });
  });

  it('publishes RFC 9728 metadata at the root and at the /mcp path, whose resource is the MCP URL exactly', async () => {
    for (const path of ['/.well-known/oauth-protected-resource', '/.well-known/oauth-protected-resource/mcp']) {
      const res = await fetch(`${t.url}${path}`);
      expect(res.status).toBe(200);
      const doc = (await res.json()) as Record<string, unknown>;
      expect(doc.resource).toBe(t.mcpUrl);
      expect(doc.resource).toBe(`${t.url}/mcp`);
      expect(doc.authorization_servers).toEqual([t.url]);
      expect(doc.scopes_supported).toEqual(['read', 'write']);
      expect(doc.bearer_methods_supported).toEqual(['header']);
    }
  });
});

describe('wwwAuthenticate()', () => {
  const config = { mcpUrl: 'https://sightline.example.com/mcp' };

  it('points a 401 at the protected-resource metadata and names the default scopes', () => {
    expect(wwwAuthenticate(config)).toBe(
      'Bearer resource_metadata="https://sightline.example.com/.well-known/oauth-protected-resource/mcp", scope="read write"',
    );
  });

  it('carries error="insufficient_scope" and the needed scope for a 403', () => {
    expect(wwwAuthenticate(config, { error: 'insufficient_scope', scope: 'revenue:read' })).toBe(
      'Bearer resource_metadata="https://sightline.example.com/.well-known/oauth-protected-resource/mcp", scope="revenue:read", error="insufficient_scope"',
    );
  });
});
