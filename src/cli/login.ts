/**
 * `sightline login` / `sightline logout`: the CLI as an OAuth 2.1 client of its own server
 * (spec, Authentication item 5), built on oauth4webapi — discovery (RFC 8414, RFC 9728), dynamic
 * registration as a public client (RFC 7591), a loopback redirect listener on 127.0.0.1 and a
 * random port (RFC 8252 §7.3), PKCE S256, code exchange, then refresh and revocation (RFC 7009).
 *
 * The token and its refresh token are stored in `$SIGHTLINE_CONFIG_DIR/credentials.json`, or
 * `~/.config/sightline/credentials.json`, readable by the user only (0600).
 */
import http from 'node:http';
import type { AddressInfo } from 'node:net';
import { spawn } from 'node:child_process';
import { chmod, mkdir, readFile, rename, rm, writeFile } from 'node:fs/promises';
import { homedir } from 'node:os';
import { dirname, join } from 'node:path';
import { parseArgs } from 'node:util';
import * as oauth from 'oauth4webapi';
import { DEFAULT_BASE_URL } from '../client/index.js';

type Env = Record<string, string | undefined>;

export interface LoginIO {
  stdout: { write(chunk: string): unknown };
  stderr: { write(chunk: string): unknown };
  env: Env;
  /** Opens the authorization URL (default: the system browser; tests drive the pages here). */
  openBrowser(url: string): Promise<void> | void;
  /** How long to wait for the browser to come back (default 5 minutes). */
  timeoutMs: number;
}

export interface StoredCredentials {
  version: 1;
  baseUrl: string;
  issuer: string;
  token_endpoint: string;
  revocation_endpoint?: string;
  client_id: string;
  resource?: string;
  access_token: string;
  refresh_token?: string;
  /** Epoch ms. */
  expires_at: number;
  scope?: string;
}

export function credentialsPath(env: Env = process.env): string {
  const dir = env.SIGHTLINE_CONFIG_DIR?.trim() || join(env.HOME?.trim() || homedir(), '.config', 'sightline');
  return join(dir, 'credentials.json');
}

async function readCredentials(env: Env): Promise<StoredCredentials | null> {
  let raw: string;
  try {
    raw = await readFile(credentialsPath(env), 'utf8');
  } catch (err) {
    if ((err as NodeJS.ErrnoException).code === 'ENOENT') return null;
    throw err;
  }
  try {
    const c = JSON.parse(raw) as StoredCredentials;
    return c && c.version === 1 && typeof c.access_token === 'string' ? c : null;
  } catch {
    return null;
  }
}

/** Written to a temp file created 0600, then renamed over the old one: never briefly world-readable. */
async function writeCredentials(env: Env, c: StoredCredentials): Promise<string> {
  const file = credentialsPath(env);
  const dir = dirname(file);
  await mkdir(dir, { recursive: true, mode: 0o700 });
  const tmp = `${file}.${process.pid}.tmp`;
  await writeFile(tmp, JSON.stringify(c, null, 2) + '\n', { mode: 0o600 });
  await chmod(tmp, 0o600);
  await rename(tmp, file);
  return file;
}

const isLoopback = (u: URL) => ['127.0.0.1', '[::1]', 'localhost'].includes(u.hostname);

/** oauth4webapi refuses plain http; allow it for a server the user named, warning unless it is local. */
function httpOptions(base: URL, io: Pick<LoginIO, 'stderr'>, warn: boolean) {
  if (base.protocol !== 'http:') return {};
  if (warn && !isLoopback(base)) io.stderr.write(`warning: ${base.origin} is plain http; tokens travel unencrypted.\n`);
  return { [oauth.allowInsecureRequests]: true } as const;
}

function defaultOpen(url: string): void {
  const [cmd, args] =
    process.platform === 'darwin' ? ['open', [url]] : process.platform === 'win32' ? ['cmd', ['/c', 'start', '""', url]] : ['xdg-open', [url]];
  try {
    const child = spawn(cmd as string, args as string[], { stdio: 'ignore', detached: true });
    child.on('error', () => {});
    child.unref();
  } catch {
    /* the URL is printed; the user can open it */
  }
}

function page(title: string, text: string): string {
  const esc = (s: string) => s.replace(/[&<>"']/g, (c) => `&#${c.charCodeAt(0)};`);
  return `<!doctype html><html lang="en"><head><meta charset="utf-8"><title>${esc(title)}</title></head><body style="font:16px system-ui,sans-serif;max-width:520px;margin:60px auto"><h1 style="font-size:20px">${esc(title)}</h1><p>${esc(text)}</p></body></html>`;
}

/** Waits for one request on the loopback listener carrying the authorization response. */
function awaitCallback(server: http.Server, path: string, as: oauth.AuthorizationServer, client: oauth.Client, state: string): Promise<URLSearchParams> {
  return new Promise((resolve, reject) => {
    server.on('request', (req, res) => {
      const url = new URL(req.url ?? '/', 'http://127.0.0.1');
      if (url.pathname !== path) {
        res.writeHead(404, { 'content-type': 'text/plain' }).end('Not found');
        return;
      }
      const headers = { 'content-type': 'text/html; charset=utf-8', 'cache-control': 'no-store' };
      try {
        const params = oauth.validateAuthResponse(as, client, url.searchParams, state);
        res.writeHead(200, headers).end(page('Signed in to Sightline', 'You can close this tab and return to the terminal.'));
        resolve(params);
      } catch (err) {
        const reason =
          err instanceof oauth.AuthorizationResponseError
            ? `${err.error}${err.error_description ? `: ${err.error_description}` : ''}`
            : (err as Error).message;
        res.writeHead(400, headers).end(page('Sign-in did not complete', reason));
        reject(new Error(`sign-in did not complete (${reason})`));
      }
    });
  });
}

/** `sightline login [--url URL] [--scope "read write"] [--no-browser]` */
export async function login(argv: string[], ioOverrides: Partial<LoginIO> = {}): Promise<number> {
  const io: LoginIO = {
    stdout: process.stdout,
    stderr: process.stderr,
    env: process.env,
    openBrowser: defaultOpen,
    timeoutMs: 5 * 60_000,
    ...ioOverrides,
  };
  const { values } = parseArgs({
    args: argv,
    options: { url: { type: 'string' }, scope: { type: 'string' }, 'no-browser': { type: 'boolean' } },
    strict: true,
  });
  const baseUrl = (values.url ?? io.env.SIGHTLINE_URL ?? DEFAULT_BASE_URL).trim().replace(/\/+$/, '');
  const base = new URL(baseUrl);
  const opts = httpOptions(base, io, true);

  const as = await oauth.processDiscoveryResponse(base, await oauth.discoveryRequest(base, { algorithm: 'oauth2', ...opts }));
  if (!as.code_challenge_methods_supported?.includes('S256')) throw new Error(`${baseUrl} does not support PKCE S256.`);
  // The MCP resource the token is for (RFC 9728 → RFC 8707 `resource`).
  let resource: string | undefined;
  try {
    const prm = await fetch(`${base.origin}/.well-known/oauth-protected-resource`, { headers: { accept: 'application/json' } });
    if (prm.ok) resource = ((await prm.json()) as { resource?: string }).resource;
  } catch {
    resource = undefined;
  }

  const server = http.createServer();
  await new Promise<void>((r) => server.listen(0, '127.0.0.1', r));
  const callbackPath = '/callback';
  const redirectUri = `http://127.0.0.1:${(server.address() as AddressInfo).port}${callbackPath}`;
  let timer: NodeJS.Timeout | undefined;
  try {
    const reg = await oauth.processDynamicClientRegistrationResponse(
      await oauth.dynamicClientRegistrationRequest(
        as,
        {
          redirect_uris: [redirectUri],
          token_endpoint_auth_method: 'none',
          grant_types: ['authorization_code', 'refresh_token'],
          response_types: ['code'],
          client_name: 'Sightline CLI',
          software_id: 'sightline-cli',
        },
        opts,
      ),
    );
    const client: oauth.Client = { client_id: reg.client_id };

    const verifier = oauth.generateRandomCodeVerifier();
    const state = oauth.generateRandomState();
    const authorize = new URL(as.authorization_endpoint!);
    authorize.searchParams.set('response_type', 'code');
    authorize.searchParams.set('client_id', client.client_id);
    authorize.searchParams.set('redirect_uri', redirectUri);
    authorize.searchParams.set('code_challenge', await oauth.calculatePKCECodeChallenge(verifier));
    authorize.searchParams.set('code_challenge_method', 'S256');
    authorize.searchParams.set('state', state);
    if (values.scope) authorize.searchParams.set('scope', values.scope);
    if (resource) authorize.searchParams.set('resource', resource);

    const callback = awaitCallback(server, callbackPath, as, client, state);
    const timeout = new Promise<never>((_, reject) => {
      timer = setTimeout(() => reject(new Error(`no answer from the browser within ${Math.round(io.timeoutMs / 1000)} s; run \`sightline login\` again.`)), io.timeoutMs);
    });
    io.stderr.write(`Open this URL to sign in to ${baseUrl}:\n\n  ${authorize.href}\n\nWaiting for the browser…\n`);
    const opened = values['no-browser'] ? Promise.resolve() : Promise.resolve().then(() => io.openBrowser(authorize.href));
    const params = await Promise.race([callback, timeout, opened.then(() => new Promise<never>(() => {}))]);

    const tokens = await oauth.processAuthorizationCodeResponse(
      as,
      client,
      await oauth.authorizationCodeGrantRequest(as, client, oauth.None(), params, redirectUri, verifier, {
        additionalParameters: resource ? { resource } : undefined,
        ...opts,
      }),
    );
    const file = await writeCredentials(io.env, {
      version: 1,
      baseUrl,
      issuer: as.issuer,
      token_endpoint: as.token_endpoint!,
      revocation_endpoint: as.revocation_endpoint,
      client_id: client.client_id,
      resource,
      access_token: tokens.access_token,
      refresh_token: tokens.refresh_token,
      expires_at: Date.now() + (tokens.expires_in ?? 3600) * 1000,
      scope: tokens.scope,
    });
    io.stdout.write(`Signed in to ${baseUrl}${tokens.scope ? ` (scope: ${tokens.scope})` : ''}. Token stored in ${file}.\n`);
    return 0;
  } finally {
    if (timer) clearTimeout(timer);
    server.closeAllConnections();
    server.close();
  }
}

/**
 * The stored login's access token, refreshed first when it has expired (or is about to). Null when
 * nobody is logged in or the refresh is refused (revoked, expired): `sightline login` again.
 */
export async function loadStoredToken(env: Env = process.env): Promise<{ accessToken: string; baseUrl: string } | null> {
  const c = await readCredentials(env);
  if (!c) return null;
  if (c.expires_at - 60_000 > Date.now()) return { accessToken: c.access_token, baseUrl: c.baseUrl };
  if (!c.refresh_token) return null;
  const as: oauth.AuthorizationServer = { issuer: c.issuer, token_endpoint: c.token_endpoint };
  const client: oauth.Client = { client_id: c.client_id };
  const opts = httpOptions(new URL(c.token_endpoint), { stderr: process.stderr }, false);
  let tokens: oauth.TokenEndpointResponse;
  try {
    tokens = await oauth.processRefreshTokenResponse(
      as,
      client,
      await oauth.refreshTokenGrantRequest(as, client, oauth.None(), c.refresh_token, {
        additionalParameters: c.resource ? { resource: c.resource } : undefined,
        ...opts,
      }),
    );
  } catch (err) {
    if (err instanceof oauth.ResponseBodyError) return null; // invalid_grant: revoked or expired
    throw err;
  }
  const next: StoredCredentials = {
    ...c,
    access_token: tokens.access_token,
    refresh_token: tokens.refresh_token ?? c.refresh_token,
    expires_at: Date.now() + (tokens.expires_in ?? 3600) * 1000,
    scope: tokens.scope ?? c.scope,
  };
  await writeCredentials(env, next);
  return { accessToken: next.access_token, baseUrl: next.baseUrl };
}

/** `sightline logout`: revoke the refresh token (ending the whole grant) and the access token, then forget them. */
export async function logout(argv: string[], ioOverrides: Partial<Pick<LoginIO, 'stdout' | 'stderr' | 'env'>> = {}): Promise<number> {
  const io = { stdout: process.stdout, stderr: process.stderr, env: process.env, ...ioOverrides };
  parseArgs({ args: argv, options: {}, strict: true });
  const c = await readCredentials(io.env);
  if (!c) {
    io.stdout.write('Not signed in.\n');
    return 0;
  }
  if (c.revocation_endpoint) {
    const as: oauth.AuthorizationServer = { issuer: c.issuer, revocation_endpoint: c.revocation_endpoint };
    const client: oauth.Client = { client_id: c.client_id };
    const opts = httpOptions(new URL(c.revocation_endpoint), io, false);
    for (const token of [c.refresh_token, c.access_token]) {
      if (!token) continue;
      try {
        await oauth.processRevocationResponse(await oauth.revocationRequest(as, client, oauth.None(), token, opts));
      } catch (err) {
        io.stderr.write(`warning: could not revoke a token at ${c.revocation_endpoint} (${(err as Error).message}); it will expire on its own.\n`);
      }
    }
  }
  await rm(credentialsPath(io.env), { force: true });
  io.stdout.write(`Signed out of ${c.baseUrl}.\n`);
  return 0;
}
