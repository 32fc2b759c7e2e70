import type { Logger } from 'pino';
import type { AppConfig } from '../core/config.js';
import type { IdentityRepo } from '../storage/identity-repo.js';
import type { OauthRepo } from '../storage/oauth-repo.js';

/** What the OAuth endpoints share: configuration, the two repositories, the clock, the log. */
export interface OauthContext {
  config: AppConfig;
  repo: OauthRepo;
  identity: IdentityRepo;
  now: () => number;
  log: Logger;
}

/** Lifetimes (spec, Limits: "access token lifetime one hour"). */
export const LIFETIMES = {
  /** Authorization codes are short-lived and single use (OAuth 2.1 §4.1.2). */
  codeMs: 60_000,
  accessTokenSeconds: 3600,
  refreshTokenMs: 30 * 86_400_000,
  /** A pending authorization request (between /authorize and consent). */
  requestMs: 10 * 60_000,
  /** A sign-in session cookie, once a user has signed in. */
  sessionMs: 8 * 3_600_000,
  /** A session before sign-in (it only carries the CSRF binding of the sign-in form). */
  anonymousSessionMs: 30 * 60_000,
} as const;
