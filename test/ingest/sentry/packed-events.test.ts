import { describe, expect, it } from 'vitest';
import { processJob } from '../../../src/ingest/process.js';
import { ingestLimitsFromEnv } from '../../../src/ingest/limits.js';
import { errorEventFromSentry } from '../../../src/ingest/sentry/normalize.js';
import { groupKeyFor } from '../../../src/domain/grouping/fingerprint.js';
import { createSightline } from '../../../src/server.js';
import { bootstrapOrganization } from '../../../src/core/bootstrap.js';
import { ingestErrorEvents, ingestKeyedErrorEvents, SpikeGuard } from '../../../src/ingest/pipeline.js';

const event = {
  event_id: 'a'.repeat(32),
  timestamp: 1_700_000_000,
  platform: 'node',
  level: 'error',
  environment: 'production',
  release: 'checkout@1.4.2',
  user: { id: 'u-1', email: 'ada@example.com' },
  tags: { 'service.name': 'checkout', region: 'eu' },
  exception: {
    values: [
      { type: 'ValueError', value: 'inner', stacktrace: { frames: [{ filename: '/app/a.js', function: 'f', lineno: 1, in_app: true }] } },
      { type: 'TypeError', value: "Cannot read properties of undefined (reading 'id')", stacktrace: { frames: [{ filename: '/app/src/orders.js', function: 'saveOrder', lineno: 100, in_app: true }] } },
    ],
  },
  extra: { nested: { deep: [1, 2, { x: 'é' }] } },
};
const body = Buffer.from(`${JSON.stringify({ event_id: event.event_id })}\n{"type":"event"}\n${JSON.stringify(event)}\n`);

describe('error events decoded with their JSON columns (decode worker hand-off)', () => {
  it('carries payload, tags and user as JSON text and the raised exception type, with the same key', () => {
    const received = 1_700_000_000_500;
    const r = processJob({ kind: 'envelope', body, receivedMs: received, limits: ingestLimitsFromEnv() });
    const [k] = r.slices.flatMap((s) => s.errors ?? []);
    const full = errorEventFromSentry(event, received);
    expect(k!.key).toEqual(groupKeyFor(full));
    expect(k!.json).toEqual({ type: 'TypeError', tags: JSON.stringify(full.tags), user: JSON.stringify(full.user), payload: JSON.stringify(full.payload) });
    expect(k!.event.payload).toBeNull(); // not cloned twice: the text is in json
  });

  it('stores the same event row as ingesting the full event', () => {
    const s = createSightline({ dbFile: ':memory:', port: 0, host: '127.0.0.1' });
    try {
      const boot = bootstrapOrganization(s.services, { now: Date.now() });
      const project = s.services.identity.projectById(boot.project_id)!;
      const received = Date.now();
      const r = processJob({ kind: 'envelope', body, receivedMs: received, limits: ingestLimitsFromEnv() });
      ingestKeyedErrorEvents(s.services, new SpikeGuard(), project, r.slices.flatMap((x) => x.errors ?? []), received);
      ingestErrorEvents(s.services, new SpikeGuard(), project, [{ ...errorEventFromSentry(event, received), event_id: 'b'.repeat(32) }], received);
      const rows = s.db
        .prepare('SELECT group_id, type, message, title, tags, user_json, payload, level, environment, release, service_name FROM error_events ORDER BY event_id')
        .all() as Record<string, unknown>[];
      expect(rows).toHaveLength(2);
      expect(rows[0]).toEqual({ ...rows[1], payload: rows[0]!.payload });
      expect(rows[0]!.type).toBe('TypeError');
      // The payloads differ only by the event id the second copy was given.
      expect(JSON.parse(rows[0]!.payload as string)).toEqual(event);
    } finally {
      void s.close();
    }
  });
});
