import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import * as oauth from 'oauth4webapi';
import { authenticate } from '../../src/core/authenticate.js';
import { Browser, exchange, obtainCode, restProjects, startOauthServer, type OauthTestServer } from './helpers.js';

let t: OauthTestServer;
let browser: Browser;
/** A second organization where the same user is only a member, and a third they do not belong to. */
let memberProject: string;
let strangerProject: string;

beforeAll(async () => {
  t = await startOauthServer();
  browser = new Browser();
  const { identity } = t.s.services;
  const user = identity.userByEmail(t.email)!;
  const memberOrg = identity.createOrganization('Beta', t.clock.t);
  identity.addMembership(memberOrg.id, user.id, 'member', t.clock.t);
  memberProject = identity.createProject(memberOrg.id, 'beta-api', t.clock.t).id;
  const strangerOrg = identity.createOrganization('Gamma', t.clock.t);
  strangerProject = identity.createProject(strangerOrg.id, 'gamma', t.clock.t).id;
});
afterAll(async () => {
  await t.close();
});

async function tokenFor(scope: string) {
  const x = await obtainCode(t, browser, scope);
  return oauth.processAuthorizationCodeResponse(x.as, x.client, await exchange(t, x));
}

const get = (token: string, path: string) => fetch(`${t.url}${path}`, { headers: { authorization: `Bearer ${token}` } });

describe('OAuth access tokens on the resource side', () => {
  it('resolve to a user principal with the granted scopes, the roles of every membership, the token and the client', async () => {
    const tokens = await tokenFor('read errors:write');
    const p = authenticate(t.s.services, tokens.access_token, t.clock.t);
    expect(p).toMatchObject({
      kind: 'user',
      email: t.email,
      scopes: ['read', 'errors:write'],
      roles: { [t.organizationId]: 'owner' },
      tokenId: expect.any(String),
      clientId: expect.any(String),
    });
    expect(Object.values((p as { roles: Record<string, string> }).roles).sort()).toEqual(['member', 'owner']);
  });

  it('reach the projects of the user’s organizations and nothing else', async () => {
    const tokens = await tokenFor('read');
    const res = await restProjects(t, tokens.access_token);
    const ids = ((await res.json()) as { data: { id: string }[] }).data.map((x) => x.id).sort();
    expect(ids).toEqual([t.projectId, memberProject].sort());
    // A project of an organization the user is not a member of: 403, "missing project access" (spec, Errors).
    const stranger = await get(tokens.access_token, `/v1/projects/${strangerProject}`);
    expect(stranger.status).toBe(403);
    expect(((await stranger.json()) as { code: string }).code).toBe('project_access_denied');
  });

  it('are limited by the granted scope: 403 for an operation needing a scope not granted', async () => {
    const tokens = await tokenFor('errors:read');
    expect((await get(tokens.access_token, `/v1/projects/${t.projectId}/feedback`)).status).toBe(200);
    const res = await get(tokens.access_token, `/v1/projects/${t.projectId}/deployments`);
    expect(res.status).toBe(403);
    expect(((await res.json()) as { code: string }).code).toBe('insufficient_scope');
  });

  it('are limited by the user’s role: a member cannot do what only owners and admins may, even with `*`', async () => {
    const tokens = await tokenFor('*');
    expect((await get(tokens.access_token, `/v1/projects/${t.projectId}/api-keys`)).status).toBe(200);
    expect((await get(tokens.access_token, `/v1/projects/${memberProject}/api-keys`)).status).toBe(403);
  });

  it('are refused when unknown, and an API-key-shaped or garbage bearer stays 401', async () => {
    for (const bad of ['slat_not-a-real-token', 'garbage']) {
      expect((await restProjects(t, bad)).status).toBe(401);
    }
  });

  it('on /mcp: a token without read is refused with 403 and WWW-Authenticate error="insufficient_scope"', async () => {
    const narrow = await tokenFor('events:ingest');
    const init = { jsonrpc: '2.0', id: 1, method: 'initialize', params: { protocolVersion: '2025-06-18', capabilities: {}, clientInfo: { name: 't', version: '1' } } };
    const post = (token: string) =>
      fetch(`${t.url}/mcp`, {
        method: 'POST',
        headers: { authorization: `Bearer ${token}`, 'content-type': 'application/json', accept: 'application/json, text/event-stream' },
        body: JSON.stringify(init),
      });
    const refused = await post(narrow.access_token);
    expect(refused.status).toBe(403);
    const header = refused.headers.get('www-authenticate') ?? '';
    expect(header).toMatch(/^Bearer /);
    expect(header).toContain('error="insufficient_scope"');
    expect(header).toContain('resource_metadata=');
    const wide = await tokenFor('read');
    expect((await post(wide.access_token)).status).toBe(200);
  });
});

