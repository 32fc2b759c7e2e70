import { afterEach, beforeEach, describe, expect, it, vi } from 'vitest';
import { mkdtempSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import Database from 'better-sqlite3';
import { createSightline } from '../../src/server.js';
import { bootstrapOrganization, type BootstrapResult } from '../../src/core/bootstrap.js';
import { ingestIdentity } from '../../src/ingest/auth.js';
import { authenticate } from '../../src/core/authenticate.js';
import { hashSecret } from '../../src/domain/identity/secrets.js';
import { AuthenticationError } from '../../src/core/errors.js';

/**
 * Ingest authentication goes through the short key cache (apiKeyIdentity): repeated requests do not
 * look the key up again, and a change made by this process or by another process sharing the database
 * file is seen on the very next request (the clock does not move in these tests, so the cache's TTL
 * never expires an entry here).
 */
describe('ingest key cache', () => {
  let s: ReturnType<typeof createSightline>;
  let boot: BootstrapResult;
  let dbFile: string;
  const now = Date.now();
  /** Another process: a second connection to the same file. */
  const otherProcess = (sql: string, ...args: unknown[]) => {
    const other = new Database(dbFile);
    try {
      other.prepare(sql).run(...args);
    } finally {
      other.close();
    }
  };

  beforeEach(() => {
    dbFile = join(mkdtempSync(join(tmpdir(), 'sl-key-cache-')), 'sightline.db');
    s = createSightline({ dbFile, port: 0, host: '127.0.0.1' });
    boot = bootstrapOrganization(s.services, { now });
  });
  afterEach(async () => {
    vi.restoreAllMocks();
    await s.close();
  });

  it('looks a key up once for repeated ingest requests', () => {
    const lookup = vi.spyOn(s.services.identity, 'apiKeyBySecretHash');
    for (let i = 0; i < 5; i++) expect(ingestIdentity(s.services, boot.ingest_key, now).project.id).toBe(boot.project_id);
    expect(lookup).toHaveBeenCalledTimes(1);
  });

  it('refuses a key revoked by another process on the next request', () => {
    expect(ingestIdentity(s.services, boot.ingest_key, now).project.id).toBe(boot.project_id);
    otherProcess('UPDATE api_keys SET revoked_at = ? WHERE secret_hash = ?', now, hashSecret(boot.ingest_key));
    expect(() => ingestIdentity(s.services, boot.ingest_key, now)).toThrow(AuthenticationError);
  });

  it('REST authentication also refuses a key revoked by another process on the next request', () => {
    expect(authenticate(s.services, boot.admin_key, now)?.kind).toBe('api_key');
    otherProcess('UPDATE api_keys SET revoked_at = ? WHERE secret_hash = ?', now, hashSecret(boot.admin_key));
    expect(authenticate(s.services, boot.admin_key, now)).toBeNull();
  });

  it('refuses a key revoked in this process on the next request', () => {
    expect(ingestIdentity(s.services, boot.ingest_key, now).principal.scopes).toContain('events:ingest');
    const key = s.services.identity.apiKeys(boot.project_id).find((k) => k.scopes.includes('events:ingest'))!;
    s.services.identity.revokeApiKey(boot.project_id, key.id, now);
    expect(() => ingestIdentity(s.services, boot.ingest_key, now)).toThrow(AuthenticationError);
  });

  it('gives the project settings as they are now, changed in this process or another', () => {
    expect(ingestIdentity(s.services, boot.ingest_key, now).project.spike_threshold_per_minute).not.toBe(77);
    s.services.identity.setSpikeProtection(boot.project_id, true, 77);
    expect(ingestIdentity(s.services, boot.ingest_key, now).project.spike_threshold_per_minute).toBe(77);
    otherProcess('UPDATE projects SET spike_threshold_per_minute = 88 WHERE id = ?', Number(boot.project_id));
    expect(ingestIdentity(s.services, boot.ingest_key, now).project.spike_threshold_per_minute).toBe(88);
  });

  it('does not reuse an entry whose key expired in the meantime', () => {
    otherProcess('UPDATE api_keys SET expires_at = ? WHERE secret_hash = ?', now + 1000, hashSecret(boot.ingest_key));
    expect(ingestIdentity(s.services, boot.ingest_key, now).project.id).toBe(boot.project_id);
    expect(() => ingestIdentity(s.services, boot.ingest_key, now + 1000)).toThrow(AuthenticationError);
  });
});
