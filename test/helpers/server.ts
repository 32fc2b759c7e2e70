/**
 * A real Sightline on a temp SQLite file, served over real HTTP on a free port.
 *
 *   const t = await startTestServer();            // or startTestServer({ now: () => clock, config: {...} })
 *   await fetch(`${t.url}/v1/projects/${t.projectId}/feedback`, { headers: { 'x-service-key': t.keys.admin } });
 *   await t.close();
 *
 * Two organizations are created: the main one (project `projectId`, keys `admin` = `*` and
 * `ingest` = `events:ingest`) and another one (`otherProject`) for cross-tenant checks.
 */
import http from 'node:http';
import { randomUUID } from 'node:crypto';
import type { AddressInfo } from 'node:net';
import { mkdtempSync, rmSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { createSightline, type Sightline, type SightlineOptions } from '../../src/server.js';
import type { AppConfig } from '../../src/core/config.js';
import { bootstrapOrganization } from '../../src/core/bootstrap.js';
import { hashSecret, newSecret } from '../../src/domain/identity/secrets.js';
import { createChdbEngine, dropDatabase } from '../support/clickhouse.js';
import { createPgDatabase } from '../support/postgres.js';

export interface TestServerOptions {
  /** Config overrides (rateLimit, bodyLimitBytes, ...). dbFile, port and host are set by the helper. */
  config?: Partial<AppConfig>;
  /** Injectable clock, passed to createSightline (quota windows, rate limits, key expiry use it). */
  now?: () => number;
  /** Other createSightline options (operations, logger, a ClickHouse engine). */
  options?: Omit<SightlineOptions, 'now'>;
  /** false: spans stay in SQLite even in the ClickHouse test projects. */
  clickhouse?: false;
}

export interface TestServer {
  s: Sightline;
  /** http://127.0.0.1:<port>, no trailing slash. */
  url: string;
  /** The temp SQLite file. */
  dbFile: string;
  keys: { admin: string; ingest: string };
  projectId: string;
  organizationId: string;
  otherProject: { projectId: string; organizationId: string; adminKey: string };
  /**
   * A user with `role` in `orgId` (the main organization by default) and an OAuth access token of
   * theirs for this server's MCP resource, inserted as the token endpoint would. `removeMembership`
   * takes the user out of the organization; `revoke` revokes the token's grant.
   */
  mintUserToken(opts?: { role?: 'owner' | 'admin' | 'member'; orgId?: string; scopes?: string[]; expiresAt?: number }): {
    token: string;
    userId: string;
    removeMembership(): void;
    revoke(): void;
  };
  /** Mint an API key (returns its secret) with these scopes, in `projectId` by default. */
  mintKey(scopes: string[], projectId?: string, opts?: { expiresAt?: number | null; label?: string }): string;
  close(): Promise<void>;
}

export async function startTestServer(opts: TestServerOptions = {}): Promise<TestServer> {
  const dir = mkdtempSync(join(tmpdir(), 'sightline-test-'));
  const dbFile = join(dir, 'test.db');
  const now = opts.now ?? Date.now;
  // The ClickHouse test projects (vitest.config.ts) run chosen files with spans in ClickHouse:
  // SIGHTLINE_TEST_CLICKHOUSE=server (a database of this server's own on the private
  // clickhouse-server, dropped at close) or chdb (the in-process engine).
  const chMode = opts.clickhouse === false || opts.options?.clickhouse ? undefined : process.env.SIGHTLINE_TEST_CLICKHOUSE;
  const chServer = chMode === 'server' ? process.env.SIGHTLINE_TEST_CLICKHOUSE_URL : undefined;
  if (chMode === 'server' && !chServer) throw new Error('SIGHTLINE_TEST_CLICKHOUSE=server needs SIGHTLINE_TEST_CLICKHOUSE_URL (the global setup sets it)');
  const chDatabase = chServer ? `t_${randomUUID().replace(/-/g, '')}` : null;
  // The PostgreSQL test project (vitest.config.ts): control data in a PostgreSQL database of this
  // server's own, created here and dropped at close.
  const pgDatabase = process.env.SIGHTLINE_TEST_POSTGRES && opts.config?.databaseUrl === undefined ? await createPgDatabase() : null;
  const s = createSightline(
    // Tests send many bad credentials from one address: the failed-authentication throttle is off
    // unless a test configures it (test/security/throttle.test.ts). ClickHouse inserts keep the default
    // pacing (test/storage/batch-buffer.test.ts checks the pacing itself).
    {
      logLevel: (process.env.SIGHTLINE_TEST_LOG_LEVEL as 'silent' | undefined) ?? 'silent', authFailureLimit: { limit: 1_000_000, windowSeconds: 60 },
      ...opts.config, dbFile, port: 0, host: '127.0.0.1',
      ...(chServer ? { clickhouseUrl: `${chServer}/${chDatabase}` } : {}),
      ...(pgDatabase ? { databaseUrl: pgDatabase.url } : {}),
    },
    { ...opts.options, now: opts.now, ...(chMode === 'chdb' ? { clickhouse: createChdbEngine() } : {}) },
  );
  const main = bootstrapOrganization(s.services, { org: 'Test org', project: 'test', email: 'owner@test.local', now: now() });
  const other = bootstrapOrganization(s.services, { org: 'Other org', project: 'other', email: 'other@test.local', now: now() });

  await s.redis?.ready(5_000); // as listen() does: shared rate-limit counters connected before the first request
  const server = http.createServer(s.app.callback());
  // No server-side keep-alive timeout: with chdb in the process a long query blocks the event loop,
  // and the server's 5 s timer then closed an idle socket just as fetch reused it (ECONNRESET).
  // fetch closes its idle sockets itself.
  server.keepAliveTimeout = 0;
  await new Promise<void>((resolve) => server.listen(0, '127.0.0.1', resolve));
  const url = `http://127.0.0.1:${(server.address() as AddressInfo).port}`;
  s.onClose.push(
    () =>
      new Promise<void>((resolve) => {
        server.close(() => resolve());
        server.closeAllConnections();
      }),
  );

  let closed = false;
  return {
    s,
    url,
    dbFile,
    keys: { admin: main.admin_key, ingest: main.ingest_key },
    projectId: main.project_id,
    organizationId: main.organization_id,
    otherProject: { projectId: other.project_id, organizationId: other.organization_id, adminKey: other.admin_key },
    mintUserToken(o = {}) {
      const orgId = o.orgId ?? main.organization_id;
      const t0 = now();
      const user = s.services.identity.createUser(`user-${randomUUID()}@test.local`, 'Test user', 'scrypt$1$1$1$x$x', t0);
      s.services.identity.addMembership(orgId, user.id, o.role ?? 'member', t0);
      const clientId = `client-${randomUUID()}`;
      const grantId = randomUUID();
      s.db
        .prepare("INSERT INTO oauth_clients (client_id, auth_method, redirect_uris, grant_types, metadata, created_at) VALUES (?, 'none', '[]', '[]', '{}', ?)")
        .run(clientId, t0);
      s.db
        .prepare('INSERT INTO oauth_grants (id, client_id, user_id, scopes, resource, created_at) VALUES (?, ?, ?, ?, ?, ?)')
        .run(grantId, clientId, user.id, JSON.stringify(o.scopes ?? ['read', 'write']), s.config.mcpUrl, t0);
      const token = `slat_${randomUUID()}${randomUUID()}`;
      s.db
        .prepare("INSERT INTO oauth_tokens (id, grant_id, kind, token_hash, scopes, created_at, expires_at) VALUES (?, ?, 'access', ?, ?, ?, ?)")
        .run(randomUUID(), grantId, hashSecret(token), JSON.stringify(o.scopes ?? ['read', 'write']), t0, o.expiresAt ?? t0 + 3600_000);
      return {
        token,
        userId: user.id,
        removeMembership: () => void s.db.prepare('DELETE FROM memberships WHERE org_id = ? AND user_id = ?').run(orgId, user.id),
        revoke: () => void s.db.prepare('UPDATE oauth_grants SET revoked_at = ? WHERE id = ?').run(now(), grantId),
      };
    },
    mintKey(scopes, projectId = main.project_id, o = {}) {
      const secret = newSecret('sl');
      s.services.identity.createApiKey(
        projectId,
        { label: o.label ?? `test ${scopes.join(' ')}`, prefix: secret.slice(0, 10), secretHash: hashSecret(secret), scopes, expiresAt: o.expiresAt ?? null },
        now(),
      );
      return secret;
    },
    async close() {
      if (closed) return;
      closed = true;
      await s.close();
      if (chServer) await dropDatabase(chServer, chDatabase!);
      if (pgDatabase) await pgDatabase.drop();
      rmSync(dir, { recursive: true, force: true });
    },
  };
}

/** A JSON request to the test server; returns status, headers and parsed body (null when empty). */
export async function api(
  t: Pick<TestServer, 'url'>,
  method: string,
  path: string,
  opts: { key?: string | null; body?: unknown; rawBody?: string; headers?: Record<string, string> } = {},
): Promise<{ status: number; headers: Headers; body: any }> {
  const headers: Record<string, string> = { ...opts.headers };
  if (opts.key) headers['x-service-key'] = opts.key;
  let body: string | undefined;
  if (opts.rawBody !== undefined) body = opts.rawBody;
  else if (opts.body !== undefined) body = JSON.stringify(opts.body);
  if (body !== undefined && !Object.keys(headers).some((h) => h.toLowerCase() === 'content-type')) headers['content-type'] = 'application/json';
  const res = await fetch(t.url + path, { method, headers, body });
  const text = await res.text();
  let parsed: any = null;
  if (text) {
    try {
      parsed = JSON.parse(text);
    } catch {
      parsed = text;
    }
  }
  return { status: res.status, headers: res.headers, body: parsed };
}
