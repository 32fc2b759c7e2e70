/**
 * Migration 034 backfills the group rollups (environments, services, releases, distinct users,
 * first/last release) from events stored before it, and ingest afterwards keeps counting on the same
 * keys (a user seen before the migration is not counted twice).
 */
import { mkdtempSync, rmSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import Database from 'better-sqlite3';
import { afterEach, describe, expect, it } from 'vitest';
import { migrate } from '../../src/storage/db.js';
import { MIGRATIONS } from '../../src/storage/migrations/index.js';
import { createErrorsIngestRepo } from '../../src/storage/errors-repo.js';
import { createErrorGroupsRepo } from '../../src/storage/error-groups-repo.js';
import type { ErrorEventRecord } from '../../src/domain/telemetry-types.js';

const dirs: string[] = [];
afterEach(() => {
  for (const d of dirs.splice(0)) rmSync(d, { recursive: true, force: true });
});

const T0 = Date.UTC(2026, 0, 1);

describe('migration 034', () => {
  it('backfills environments, services, releases and distinct users of existing groups', async () => {
    const dir = mkdtempSync(join(tmpdir(), 'sightline-034-'));
    dirs.push(dir);
    const raw = new Database(join(dir, 'db.sqlite'));
    raw.pragma('foreign_keys = ON');
    for (const m of MIGRATIONS.filter((x) => x.version < 34)) raw.exec(m.sql);
    raw.pragma(`user_version = ${Math.max(...MIGRATIONS.filter((x) => x.version < 34).map((m) => m.version))}`);
    raw.prepare("INSERT INTO organizations (id, name, created_at) VALUES ('o', 'Org', 0)").run();
    raw.prepare("INSERT INTO projects (id, org_id, name, slug, created_at) VALUES (1, 'o', 'web', 'web', 0)").run();
    raw.prepare(`INSERT INTO error_groups (id, project_id, seq, short_id, fingerprint, grouping_method, type, title, culprit, level, service_name, environment,
      first_seen, last_seen, event_count, updated_at) VALUES ('g1', 1, 1, 'WEB-1', 'fp1', 'message', 'Error', 'E', '', 'error', 'api', 'production', ?, ?, 4, 0),
      ('g2', 1, 2, 'WEB-2', 'fp2', 'message', 'Error', 'F', '', 'error', 'old', 'legacy', ?, ?, 7, 0)`).run(T0, T0 + 3000, T0, T0);
    const ev = raw.prepare(`INSERT INTO error_events (project_id, event_id, group_id, fingerprint_group_id, timestamp_ms, received_ms, source, platform, level, type, message, title,
      service_name, environment, release, transaction_name, server_name, trace_id, span_id, tags, user_json, payload)
      VALUES (1, ?, 'g1', 'g1', ?, 0, 'sentry', 'node', 'error', 'Error', '', 'E', ?, ?, ?, '', '', NULL, NULL, '{}', ?, '{}')`);
    ev.run('e1', T0, 'api', 'production', '1.0', JSON.stringify({ id: 42, email: 'a@x.io' }));
    ev.run('e2', T0 + 1000, 'api', 'production', '1.0', JSON.stringify({ id: '42' }));
    ev.run('e3', T0 + 2000, 'worker', 'staging', '1.1', JSON.stringify({ email: 'b@x.io' }));
    ev.run('e4', T0 + 3000, 'worker', 'staging', '', JSON.stringify({ ip_address: '{{auto}}' }));
    migrate(raw);

    const g = (id: string) => raw.prepare('SELECT first_release, last_release, user_count FROM error_groups WHERE id = ?').get(id);
    expect(g('g1')).toEqual({ first_release: '1.0', last_release: '1.1', user_count: 2 });
    const dims = (id: string) => raw.prepare('SELECT kind, value, event_count FROM error_group_dims WHERE group_id = ? ORDER BY kind, value').all(id);
    expect(dims('g1')).toEqual([
      { kind: 'environment', value: 'production', event_count: 2 },
      { kind: 'environment', value: 'staging', event_count: 2 },
      { kind: 'release', value: '1.0', event_count: 2 },
      { kind: 'release', value: '1.1', event_count: 1 },
      { kind: 'service', value: 'api', event_count: 2 },
      { kind: 'service', value: 'worker', event_count: 2 },
    ]);
    // A group whose events expired keeps its own environment and service.
    expect(dims('g2')).toEqual([
      { kind: 'environment', value: 'legacy', event_count: 7 },
      { kind: 'service', value: 'old', event_count: 7 },
    ]);

    // Ingest after the migration uses the same user keys: id 42 again is no new user; a new one is.
    const ingest = createErrorsIngestRepo(raw);
    const e = (id: string, user: Record<string, unknown>): ErrorEventRecord => ({
      event_id: id, timestamp_ms: T0 + 5000, received_ms: T0 + 5000, source: 'sentry', platform: 'node', level: 'error', message: 'E', exceptions: [],
      fingerprint: null, environment: 'preview', release: '1.2', service_name: 'api', server_name: '', transaction: '', tags: {}, user, trace_id: null, span_id: null, payload: {},
    });
    const key = { fingerprint: 'fp1', method: 'message', type: 'Error', title: 'E', culprit: '' } as never;
    ingest.ingest('1', 'web', [{ event: e('e5', { id: 42 }), key }, { event: e('e6', { id: 'u-7' }), key }], T0 + 6000);
    expect(g('g1')).toEqual({ first_release: '1.0', last_release: '1.2', user_count: 3 });
    const read = createErrorGroupsRepo(raw);
    expect(read.places(['g1']).get('g1')!.environments).toEqual(['preview', 'production', 'staging']); // most events first (2 each), then by name
    expect((await read.windowCounts('1', ['g1'], T0 + 500, T0 + 5000)).get('g1')).toEqual({ events: 5, users: 3 });
    raw.close();
  });
});
