import { randomBytes } from 'node:crypto';
import type { Db } from './db.js';

export type ClientAuthMethod = 'none' | 'client_secret_basic' | 'client_secret_post';

export interface OauthClientRow {
  client_id: string;
  secret_hash: string | null;
  auth_method: ClientAuthMethod;
  redirect_uris: string[];
  grant_types: string[];
  scope: string | null;
  client_name: string | null;
  /** The registered metadata as returned to the client (RFC 7591 §3.2.1), without the secret. */
  metadata: Record<string, unknown>;
  created_at: number;
}

export interface AuthRequestRow {
  id: string;
  client_id: string;
  redirect_uri: string;
  redirect_uri_given: boolean;
  scopes: string[];
  state: string | null;
  code_challenge: string;
  resource: string;
  created_at: number;
  expires_at: number;
}

export interface SessionRow {
  id_hash: string;
  user_id: string | null;
  created_at: number;
  expires_at: number;
}

export interface GrantRow {
  id: string;
  client_id: string;
  user_id: string;
  scopes: string[];
  resource: string;
  created_at: number;
  revoked_at: number | null;
}

export interface CodeRow {
  code_hash: string;
  grant: GrantRow;
  redirect_uri: string;
  redirect_uri_given: boolean;
  code_challenge: string;
  created_at: number;
  expires_at: number;
  used_at: number | null;
}

export interface TokenRow {
  id: string;
  kind: 'access' | 'refresh';
  scopes: string[];
  created_at: number;
  expires_at: number;
  rotated_at: number | null;
  revoked_at: number | null;
  grant: GrantRow;
}

export interface AccessTokenInfo {
  tokenId: string;
  grantId: string;
  clientId: string;
  userId: string;
  email: string;
  scopes: string[];
  resource: string;
  expiresAt: number;
}

/* eslint-disable @typescript-eslint/no-explicit-any */
function clientFromRow(r: any): OauthClientRow {
  return {
    client_id: r.client_id,
    secret_hash: r.secret_hash ?? null,
    auth_method: r.auth_method,
    redirect_uris: JSON.parse(r.redirect_uris),
    grant_types: JSON.parse(r.grant_types),
    scope: r.scope ?? null,
    client_name: r.client_name ?? null,
    metadata: JSON.parse(r.metadata),
    created_at: r.created_at,
  };
}

function requestFromRow(r: any): AuthRequestRow {
  return {
    id: r.id,
    client_id: r.client_id,
    redirect_uri: r.redirect_uri,
    redirect_uri_given: !!r.redirect_uri_given,
    scopes: JSON.parse(r.scopes),
    state: r.state ?? null,
    code_challenge: r.code_challenge,
    resource: r.resource,
    created_at: r.created_at,
    expires_at: r.expires_at,
  };
}

function grantFromRow(r: any, prefix = ''): GrantRow {
  return {
    id: r[`${prefix}id`],
    client_id: r[`${prefix}client_id`],
    user_id: r[`${prefix}user_id`],
    scopes: JSON.parse(r[`${prefix}scopes`]),
    resource: r[`${prefix}resource`],
    created_at: r[`${prefix}created_at`],
    revoked_at: r[`${prefix}revoked_at`] ?? null,
  };
}

const GRANT_COLUMNS = 'g.id AS g_id, g.client_id AS g_client_id, g.user_id AS g_user_id, g.scopes AS g_scopes, g.resource AS g_resource, g.created_at AS g_created_at, g.revoked_at AS g_revoked_at';

/**
 * OAuth clients, sign-in sessions, pending authorization requests, grants, codes and tokens.
 * Callers pass hashes, never raw secrets (see src/domain/identity/secrets.ts hashSecret).
 */
export function createOauthRepo(db: Db) {
  const s = {
    keyByName: db.prepare('SELECT value FROM oauth_keys WHERE name = ?'),
    insertKey: db.prepare('INSERT OR IGNORE INTO oauth_keys (name, value, created_at) VALUES (?, ?, ?)'),
    insertClient: db.prepare(
      `INSERT INTO oauth_clients (client_id, secret_hash, auth_method, redirect_uris, grant_types, scope, client_name, metadata, created_at)
       VALUES (?, ?, ?, ?, ?, ?, ?, ?, ?)`,
    ),
    clientById: db.prepare('SELECT * FROM oauth_clients WHERE client_id = ?'),
    insertSession: db.prepare('INSERT INTO oauth_sessions (id_hash, user_id, created_at, expires_at) VALUES (?, ?, ?, ?)'),
    sessionByHash: db.prepare('SELECT * FROM oauth_sessions WHERE id_hash = ?'),
    deleteSession: db.prepare('DELETE FROM oauth_sessions WHERE id_hash = ?'),
    insertRequest: db.prepare(
      `INSERT INTO oauth_requests (id, client_id, redirect_uri, redirect_uri_given, scopes, state, code_challenge, resource, created_at, expires_at)
       VALUES (?, ?, ?, ?, ?, ?, ?, ?, ?, ?)`,
    ),
    requestById: db.prepare('SELECT * FROM oauth_requests WHERE id = ?'),
    deleteRequest: db.prepare('DELETE FROM oauth_requests WHERE id = ?'),
    insertGrant: db.prepare('INSERT INTO oauth_grants (id, client_id, user_id, scopes, resource, created_at) VALUES (?, ?, ?, ?, ?, ?)'),
    insertCode: db.prepare(
      `INSERT INTO oauth_codes (code_hash, grant_id, redirect_uri, redirect_uri_given, code_challenge, created_at, expires_at)
       VALUES (?, ?, ?, ?, ?, ?, ?)`,
    ),
    codeByHash: db.prepare(`SELECT c.*, ${GRANT_COLUMNS} FROM oauth_codes c JOIN oauth_grants g ON g.id = c.grant_id WHERE c.code_hash = ?`),
    useCode: db.prepare('UPDATE oauth_codes SET used_at = ? WHERE code_hash = ? AND used_at IS NULL'),
    revokeGrant: db.prepare('UPDATE oauth_grants SET revoked_at = ? WHERE id = ? AND revoked_at IS NULL'),
    revokeGrantTokens: db.prepare('UPDATE oauth_tokens SET revoked_at = ? WHERE grant_id = ? AND revoked_at IS NULL'),
    insertToken: db.prepare(
      'INSERT INTO oauth_tokens (id, grant_id, kind, token_hash, scopes, created_at, expires_at) VALUES (?, ?, ?, ?, ?, ?, ?)',
    ),
    tokenByHash: db.prepare(`SELECT t.*, ${GRANT_COLUMNS} FROM oauth_tokens t JOIN oauth_grants g ON g.id = t.grant_id WHERE t.token_hash = ?`),
    accessToken: db.prepare(
      `SELECT t.id, t.scopes, t.expires_at, g.id AS grant_id, g.client_id, g.user_id, g.resource, u.email
       FROM oauth_tokens t JOIN oauth_grants g ON g.id = t.grant_id JOIN users u ON u.id = g.user_id
       WHERE t.token_hash = ? AND t.kind = 'access' AND t.revoked_at IS NULL AND g.revoked_at IS NULL`,
    ),
    rotateToken: db.prepare('UPDATE oauth_tokens SET rotated_at = ? WHERE id = ? AND rotated_at IS NULL AND revoked_at IS NULL'),
    revokeToken: db.prepare('UPDATE oauth_tokens SET revoked_at = ? WHERE id = ? AND revoked_at IS NULL'),
    orgNames: db.prepare('SELECT id, name FROM organizations WHERE id IN (SELECT value FROM json_each(?))'),
    pruneSessions: db.prepare('DELETE FROM oauth_sessions WHERE expires_at <= ?'),
    pruneRequests: db.prepare('DELETE FROM oauth_requests WHERE expires_at <= ?'),
    pruneCodes: db.prepare('DELETE FROM oauth_codes WHERE expires_at <= ?'),
    pruneTokens: db.prepare('DELETE FROM oauth_tokens WHERE expires_at <= ?'),
  };

  let lastPrune = Number.NEGATIVE_INFINITY;
  const repo = {
    /** A server-side secret (cookie signing key), created on first use and kept across restarts. */
    secretKey(name: string, now: number): Buffer {
      s.insertKey.run(name, randomBytes(32).toString('base64url'), now);
      return Buffer.from((s.keyByName.get(name) as { value: string }).value, 'base64url');
    },

    createClient(c: OauthClientRow): void {
      s.insertClient.run(
        c.client_id,
        c.secret_hash,
        c.auth_method,
        JSON.stringify(c.redirect_uris),
        JSON.stringify(c.grant_types),
        c.scope,
        c.client_name,
        JSON.stringify(c.metadata),
        c.created_at,
      );
    },
    client(clientId: string): OauthClientRow | undefined {
      const r = s.clientById.get(clientId);
      return r ? clientFromRow(r) : undefined;
    },

    createSession(idHash: string, userId: string | null, now: number, expiresAt: number): void {
      s.insertSession.run(idHash, userId, now, expiresAt);
    },
    session(idHash: string): SessionRow | undefined {
      return s.sessionByHash.get(idHash) as SessionRow | undefined;
    },
    deleteSession(idHash: string): void {
      s.deleteSession.run(idHash);
    },

    createRequest(r: AuthRequestRow): void {
      s.insertRequest.run(
        r.id,
        r.client_id,
        r.redirect_uri,
        r.redirect_uri_given ? 1 : 0,
        JSON.stringify(r.scopes),
        r.state,
        r.code_challenge,
        r.resource,
        r.created_at,
        r.expires_at,
      );
    },
    request(id: string): AuthRequestRow | undefined {
      const r = s.requestById.get(id);
      return r ? requestFromRow(r) : undefined;
    },
    deleteRequest(id: string): boolean {
      return s.deleteRequest.run(id).changes > 0;
    },

    /** Consent given: the grant and its one authorization code, in one transaction. */
    createGrantWithCode: db.transaction(
      (g: { grantId: string; clientId: string; userId: string; scopes: string[]; resource: string; codeHash: string; redirectUri: string; redirectUriGiven: boolean; codeChallenge: string; now: number; codeExpiresAt: number }) => {
        s.insertGrant.run(g.grantId, g.clientId, g.userId, JSON.stringify(g.scopes), g.resource, g.now);
        s.insertCode.run(g.codeHash, g.grantId, g.redirectUri, g.redirectUriGiven ? 1 : 0, g.codeChallenge, g.now, g.codeExpiresAt);
      },
    ),
    code(codeHash: string): CodeRow | undefined {
      const r = s.codeByHash.get(codeHash) as any;
      if (!r) return undefined;
      return {
        code_hash: r.code_hash,
        grant: grantFromRow(r, 'g_'),
        redirect_uri: r.redirect_uri,
        redirect_uri_given: !!r.redirect_uri_given,
        code_challenge: r.code_challenge,
        created_at: r.created_at,
        expires_at: r.expires_at,
        used_at: r.used_at ?? null,
      };
    },
    /** Marks a code used; false when it already was (a replay). Atomic: only one caller wins. */
    useCode(codeHash: string, now: number): boolean {
      return s.useCode.run(now, codeHash).changes > 0;
    },

    /** Revokes a grant and every token issued under it. */
    revokeGrant: db.transaction((grantId: string, now: number) => {
      s.revokeGrant.run(now, grantId);
      s.revokeGrantTokens.run(now, grantId);
    }),

    insertToken(t: { id: string; grantId: string; kind: 'access' | 'refresh'; tokenHash: string; scopes: string[]; now: number; expiresAt: number }): void {
      s.insertToken.run(t.id, t.grantId, t.kind, t.tokenHash, JSON.stringify(t.scopes), t.now, t.expiresAt);
    },
    token(tokenHash: string): TokenRow | undefined {
      const r = s.tokenByHash.get(tokenHash) as any;
      if (!r) return undefined;
      return {
        id: r.id,
        kind: r.kind,
        scopes: JSON.parse(r.scopes),
        created_at: r.created_at,
        expires_at: r.expires_at,
        rotated_at: r.rotated_at ?? null,
        revoked_at: r.revoked_at ?? null,
        grant: grantFromRow(r, 'g_'),
      };
    },
    /** A live (not revoked, grant not revoked) access token; expiry is the caller's check. */
    accessToken(tokenHash: string): AccessTokenInfo | undefined {
      const r = s.accessToken.get(tokenHash) as any;
      if (!r) return undefined;
      return {
        tokenId: r.id,
        grantId: r.grant_id,
        clientId: r.client_id,
        userId: r.user_id,
        email: r.email,
        scopes: JSON.parse(r.scopes),
        resource: r.resource,
        expiresAt: r.expires_at,
      };
    },
    /** Marks a refresh token used (rotated); false when it already was. Atomic. */
    rotateToken(tokenId: string, now: number): boolean {
      return s.rotateToken.run(now, tokenId).changes > 0;
    },
    revokeToken(tokenId: string, now: number): void {
      s.revokeToken.run(now, tokenId);
    },

    orgNames(orgIds: string[]): Record<string, string> {
      const out: Record<string, string> = {};
      for (const r of s.orgNames.all(JSON.stringify(orgIds)) as { id: string; name: string }[]) out[r.id] = r.name;
      return out;
    },

    /**
     * Drops rows past their expiry. Codes and tokens are kept a day longer than they live so a late
     * replay is still recognised (and still revokes its grant) instead of looking unknown.
     * Runs at most once a minute.
     */
    prune(now: number): void {
      if (now - lastPrune < 60_000 && now >= lastPrune) return;
      lastPrune = now;
      s.pruneSessions.run(now);
      s.pruneRequests.run(now);
      s.pruneCodes.run(now - 86_400_000);
      s.pruneTokens.run(now - 86_400_000);
    },
  };
  return repo;
}

export type OauthRepo = ReturnType<typeof createOauthRepo>;
