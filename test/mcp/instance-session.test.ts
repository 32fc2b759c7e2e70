/**
 * Issue 20, several processes behind a proxy: with SIGHTLINE_INSTANCE set, an MCP session id starts
 * with the instance's name and a dot, so a proxy can send a request carrying Mcp-Session-Id back to
 * the process holding the session (deploy/nginx.conf maps the prefix to its upstream).
 */
import { afterEach, describe, expect, it } from 'vitest';
import { startTestServer, type TestServer } from '../helpers/server.js';
import { execute, httpClient } from './helpers.js';

let t: TestServer | null = null;
afterEach(async () => {
  await t?.close();
  t = null;
});

describe('MCP session ids name their process', () => {
  it('start with SIGHTLINE_INSTANCE and a dot, and the session works', async () => {
    t = await startTestServer({ config: { instance: 'sightline-2' } });
    const { client, transport } = await httpClient(t, t.keys.admin);
    expect(transport.sessionId).toMatch(/^sightline-2\.[0-9a-f-]{36}$/);
    expect((await execute(client, 'return 1 + 1')).result).toBe(2);
  });

  it('are plain UUIDs without an instance name', async () => {
    t = await startTestServer();
    const { transport } = await httpClient(t, t.keys.admin);
    expect(transport.sessionId).toMatch(/^[0-9a-f-]{36}$/);
  });
});
