/**
 * Issue 20: what system.status and /readyz say about the ClickHouse store. With spans in ClickHouse,
 * system.status reports it reachable, its version and schema, and the spans written (rows per table);
 * /readyz checks it; a server whose ClickHouse does not answer is not ready and says why. Runs in the
 * ClickHouse test projects only.
 */
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import http from 'node:http';
import type { AddressInfo } from 'node:net';
import type { SpanRecord } from '../../src/domain/telemetry-types.js';
import { createSightline } from '../../src/server.js';
import { api, startTestServer, type TestServer } from '../helpers/server.js';
import { mkdtempSync, rmSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';

const T0 = Date.now();
const span = (i: number): SpanRecord => ({
  trace_id: (i + 1).toString(16).padStart(32, '0'),
  span_id: (i + 1).toString(16).padStart(16, '0'),
  parent_span_id: null,
  trace_state: '',
  name: 'GET /status',
  kind: 2,
  start_ms: T0 - 1000 + i,
  end_ms: T0 - 900 + i,
  status_code: 0,
  status_message: '',
  attributes: {},
  events: [],
  links: [],
  resource: { 'service.name': 'api' },
  scope: { name: 'test', version: '1', attributes: {} },
  service_name: 'api',
});

let t: TestServer;
beforeAll(async () => {
  t = await startTestServer();
});
afterAll(() => t.close());

const mode = process.env.SIGHTLINE_TEST_CLICKHOUSE;

describe.skipIf(mode !== 'server' && mode !== 'chdb')('the ClickHouse store in system.status and /readyz', () => {
  it('reports it reachable with its version, schema and the spans written', async () => {
    await t.s.services.writeBatch(() => t.s.services.telemetry.insertSpans(t.projectId, [span(1), span(2), span(3)], 'otlp', T0));
    const r = await api(t, 'GET', `/v1/projects/${t.projectId}/system/status`, { key: t.keys.admin });
    expect(r.status).toBe(200);
    const ch = (r.body as { clickhouse: any }).clickhouse;
    expect(ch).toMatchObject({ reachable: true, mutations_pending: 0 });
    expect(ch.version).toMatch(/^\d+\.\d+/);
    expect(ch.schema.version).toBe(ch.schema.latest);
    expect(ch.tables.spans.rows).toBe(3);
    expect(ch.tables.spans.bytes).toBeGreaterThan(0);
    expect((r.body as { checks: Record<string, { ok: boolean }> }).checks.clickhouse).toEqual({ ok: true });
  });

  it('is not ready, and says why, when its ClickHouse does not answer', async () => {
    const dir = mkdtempSync(join(tmpdir(), 'sightline-chdown-'));
    const s = createSightline({ logLevel: 'silent', dbFile: join(dir, 'db.sqlite'), port: 0, host: '127.0.0.1', clickhouseUrl: 'http://127.0.0.1:1/nowhere' });
    const server = http.createServer(s.app.callback());
    await new Promise<void>((r) => server.listen(0, '127.0.0.1', r));
    try {
      const r = await fetch(`http://127.0.0.1:${(server.address() as AddressInfo).port}/readyz`);
      expect(r.status).toBe(503);
      const body = (await r.json()) as { checks: Record<string, { ok: boolean; detail?: string }> };
      expect(body.checks.clickhouse!.ok).toBe(false);
      expect(body.checks.clickhouse!.detail).toMatch(/^ClickHouse: /);
      expect(body.checks.database!.ok).toBe(true);
    } finally {
      await new Promise<void>((r) => (server.close(() => r()), server.closeAllConnections()));
      await s.close();
      rmSync(dir, { recursive: true, force: true });
    }
  });
});
