import { apiKeyIdentity } from '../core/authenticate.js';
import { holdsScope } from '../core/scopes.js';
import { AuthenticationError, ForbiddenError, RateLimitedError } from '../core/errors.js';
import type { ApiKeyPrincipal } from '../core/principal.js';
import type { Services } from '../core/services.js';
import type { ProjectRow } from '../storage/identity-repo.js';

export interface IngestIdentity {
  project: ProjectRow;
  principal: ApiKeyPrincipal;
}

/**
 * Ingestion accepts keys holding `events:ingest`; the project comes from the key. Keys are looked up
 * through the REST side's short key cache (apiKeyIdentity), which any key or project change, in this
 * process or another sharing the database, invalidates. Ingest does not touch `last_used_at`.
 */
export function ingestIdentity(services: Services, secret: string | undefined | null, now: number): IngestIdentity {
  if (!secret) throw new AuthenticationError('Send an ingest key: x-service-key / Authorization: Bearer (OTLP), or the DSN key (Sentry).');
  const id = apiKeyIdentity(services, secret, now);
  if (id === 'no_project') throw new AuthenticationError();
  if (typeof id !== 'object') throw new AuthenticationError('The ingest key is not valid (unknown, revoked or expired).');
  if (!holdsScope(id.principal.scopes, 'events:ingest')) throw new ForbiddenError('insufficient_scope', 'This key cannot send telemetry: it lacks the events:ingest scope.');
  return { project: id.project, principal: id.principal };
}

/** Per-project ingest quota in records per clock minute (configuration; 0 means none). */
export class IngestQuota {
  private counts = new Map<string, { minute: number; n: number }>();
  constructor(private perMinute: number) {}

  take(projectId: string, n: number, now: number): void {
    if (!this.perMinute) return;
    const minute = Math.floor(now / 60_000);
    let c = this.counts.get(projectId);
    if (!c || c.minute !== minute) {
      c = { minute, n: 0 };
      this.counts.set(projectId, c);
    }
    if (c.n + n > this.perMinute) {
      const wait = Math.ceil((60_000 - (now % 60_000)) / 1000);
      throw new RateLimitedError(wait, `Ingest quota of ${this.perMinute} records per minute reached for this project.`, 'ingest_quota_exceeded');
    }
    c.n += n;
  }
}
