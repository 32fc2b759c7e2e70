import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { mkdtempSync, readFileSync, rmSync, statSync, writeFileSync, existsSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { credentialsPath, loadStoredToken, login, logout } from '../../src/cli/login.js';
import { authorizeInBrowser, Browser, restProjects, startOauthServer, type OauthTestServer } from './helpers.js';

let t: OauthTestServer;
let dir: string;
beforeAll(async () => {
  t = await startOauthServer();
  dir = mkdtempSync(join(tmpdir(), 'sightline-cli-'));
});
afterAll(async () => {
  await t.close();
  rmSync(dir, { recursive: true, force: true });
});

function sink() {
  let text = '';
  return { write: (c: string) => ((text += c), true), get text() { return text; } };
}

describe('sightline login / logout', () => {
  it('signs in through the browser pages, stores the tokens 0600, refreshes when expired, and logout revokes and deletes', async () => {
    const env = { SIGHTLINE_CONFIG_DIR: join(dir, 'conf') };
    const stdout = sink();
    const stderr = sink();
    const browser = new Browser();
    let authorizeUrl = '';
    const code = await login(['--url', t.url, '--scope', 'read write'], {
      env,
      stdout,
      stderr,
      timeoutMs: 20_000,
      async openBrowser(url) {
        authorizeUrl = url;
        // The "browser": sign in, allow, then follow the redirect to the CLI's loopback listener.
        const back = await authorizeInBrowser(browser, url, t);
        const res = await fetch(back);
        expect(res.status).toBe(200);
        expect(await res.text()).toContain('Signed in to Sightline');
      },
    });
    expect(code).toBe(0);
    expect(stderr.text).toContain(authorizeUrl);
    const url = new URL(authorizeUrl);
    expect(url.searchParams.get('code_challenge_method')).toBe('S256');
    expect(url.searchParams.get('resource')).toBe(t.mcpUrl);
    expect(new URL(url.searchParams.get('redirect_uri')!).hostname).toBe('127.0.0.1');

    const file = credentialsPath(env);
    expect(file).toBe(join(dir, 'conf', 'credentials.json'));
    expect(statSync(file).mode & 0o777).toBe(0o600);
    const stored = JSON.parse(readFileSync(file, 'utf8'));
    expect(stored).toMatchObject({ baseUrl: t.url, scope: 'read write', resource: t.mcpUrl, refresh_token: expect.stringMatching(/^slrt_/) });

    // loadStoredToken hands the token to later CLI calls.
    const first = await loadStoredToken(env);
    expect(first).toEqual({ accessToken: stored.access_token, baseUrl: t.url });
    expect((await restProjects(t, first!.accessToken)).status).toBe(200);

    // Expired on the client's side: it refreshes, rotates and stores the new pair.
    writeFileSync(file, JSON.stringify({ ...stored, expires_at: Date.now() - 1000 }));
    const second = await loadStoredToken(env);
    expect(second!.accessToken).not.toBe(stored.access_token);
    expect((await restProjects(t, second!.accessToken)).status).toBe(200);
    const rotated = JSON.parse(readFileSync(file, 'utf8'));
    expect(rotated.refresh_token).not.toBe(stored.refresh_token);
    expect(statSync(file).mode & 0o777).toBe(0o600);

    // Logout revokes the grant and forgets it.
    const out = sink();
    expect(await logout([], { env, stdout: out, stderr: sink() })).toBe(0);
    expect(out.text).toContain('Signed out');
    expect(existsSync(file)).toBe(false);
    expect((await restProjects(t, second!.accessToken)).status).toBe(401);
    expect(await loadStoredToken(env)).toBeNull();
  });

  it('fails with the reason when the user denies access in the browser', async () => {
    const env = { SIGHTLINE_CONFIG_DIR: join(dir, 'deny') };
    const browser = new Browser();
    await expect(
      login(['--url', t.url], {
        env,
        stdout: sink(),
        stderr: sink(),
        timeoutMs: 20_000,
        async openBrowser(url) {
          const back = await authorizeInBrowser(browser, url, t, 'deny');
          const res = await fetch(back);
          expect(res.status).toBe(400);
        },
      }),
    ).rejects.toThrow(/access_denied/);
    expect(existsSync(credentialsPath(env))).toBe(false);
  });

  it('says so when logging out while not signed in', async () => {
    const out = sink();
    expect(await logout([], { env: { SIGHTLINE_CONFIG_DIR: join(dir, 'none') }, stdout: out })).toBe(0);
    expect(out.text).toBe('Not signed in.\n');
  });
});
