import type { Migration } from './index.js';

/**
 * OAuth 2.1 authorization server for MCP clients (spec, Authentication item 5).
 * Every secret (client secret, session id, authorization code, token) is stored as a SHA-256 hash:
 * they are 256-bit random values, so there is nothing to guess and the hash allows an indexed lookup.
 * A grant is what one consent produced; codes and tokens hang off it so a replayed code or a reused
 * refresh token can revoke the whole family at once.
 */
export const m003Oauth: Migration = {
  version: 3,
  name: 'oauth authorization server',
  sql: `
CREATE TABLE oauth_clients (
  client_id TEXT PRIMARY KEY,
  secret_hash TEXT,
  auth_method TEXT NOT NULL CHECK (auth_method IN ('none','client_secret_basic','client_secret_post')),
  redirect_uris TEXT NOT NULL,
  grant_types TEXT NOT NULL,
  scope TEXT,
  client_name TEXT,
  metadata TEXT NOT NULL,
  created_at INTEGER NOT NULL
);

CREATE TABLE oauth_sessions (
  id_hash TEXT PRIMARY KEY,
  user_id TEXT REFERENCES users(id) ON DELETE CASCADE,
  created_at INTEGER NOT NULL,
  expires_at INTEGER NOT NULL
);

CREATE TABLE oauth_requests (
  id TEXT PRIMARY KEY,
  client_id TEXT NOT NULL REFERENCES oauth_clients(client_id) ON DELETE CASCADE,
  redirect_uri TEXT NOT NULL,
  redirect_uri_given INTEGER NOT NULL,
  scopes TEXT NOT NULL,
  state TEXT,
  code_challenge TEXT NOT NULL,
  resource TEXT NOT NULL,
  created_at INTEGER NOT NULL,
  expires_at INTEGER NOT NULL
);

CREATE TABLE oauth_grants (
  id TEXT PRIMARY KEY,
  client_id TEXT NOT NULL REFERENCES oauth_clients(client_id) ON DELETE CASCADE,
  user_id TEXT NOT NULL REFERENCES users(id) ON DELETE CASCADE,
  scopes TEXT NOT NULL,
  resource TEXT NOT NULL,
  created_at INTEGER NOT NULL,
  revoked_at INTEGER
);

CREATE TABLE oauth_codes (
  code_hash TEXT PRIMARY KEY,
  grant_id TEXT NOT NULL REFERENCES oauth_grants(id) ON DELETE CASCADE,
  redirect_uri TEXT NOT NULL,
  redirect_uri_given INTEGER NOT NULL,
  code_challenge TEXT NOT NULL,
  created_at INTEGER NOT NULL,
  expires_at INTEGER NOT NULL,
  used_at INTEGER
);

CREATE TABLE oauth_tokens (
  id TEXT PRIMARY KEY,
  grant_id TEXT NOT NULL REFERENCES oauth_grants(id) ON DELETE CASCADE,
  kind TEXT NOT NULL CHECK (kind IN ('access','refresh')),
  token_hash TEXT NOT NULL UNIQUE,
  scopes TEXT NOT NULL,
  created_at INTEGER NOT NULL,
  expires_at INTEGER NOT NULL,
  rotated_at INTEGER,
  revoked_at INTEGER
);
CREATE INDEX oauth_tokens_grant ON oauth_tokens(grant_id);

CREATE TABLE oauth_keys (
  name TEXT PRIMARY KEY,
  value TEXT NOT NULL,
  created_at INTEGER NOT NULL
);
`,
};
