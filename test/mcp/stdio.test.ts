/**
 * `sightline mcp` over stdio, spawned as a real process and driven by the SDK's stdio client:
 * in-process on the local database, and as a REST proxy with SIGHTLINE_URL.
 */
import { fileURLToPath } from 'node:url';
import { afterAll, describe, expect, it } from 'vitest';
import { Client } from '@modelcontextprotocol/sdk/client/index.js';
import { StdioClientTransport } from '@modelcontextprotocol/sdk/client/stdio.js';
import { api, startTestServer } from '../helpers/server.js';
import { execute, search } from './helpers.js';

const BIN = fileURLToPath(new URL('../../bin/sightline.mjs', import.meta.url));
const t = await startTestServer();
afterAll(() => t.close());
const P = `/v1/projects/${t.projectId}`;

async function spawnMcp(env: Record<string, string>): Promise<{ client: Client; stderr: () => string }> {
  const transport = new StdioClientTransport({
    command: process.execPath,
    args: [BIN, 'mcp'],
    // LOG_LEVEL=info: log lines must still stay off stdout (the protocol stream).
    env: { ...(process.env as Record<string, string>), LOG_LEVEL: 'info', SIGHTLINE_URL: '', ...env },
    stderr: 'pipe',
  });
  let err = '';
  transport.stderr?.on('data', (d) => (err += String(d)));
  const client = new Client({ name: 'stdio-test', version: '1.0.0' });
  await client.connect(transport);
  t.s.onClose.push(() => client.close());
  return { client, stderr: () => err };
}

describe('sightline mcp (stdio)', () => {
  it('serves search and execute in-process on SIGHTLINE_DB as the key of SIGHTLINE_API_KEY', async () => {
    const { client } = await spawnMcp({ SIGHTLINE_DB: t.dbFile, SIGHTLINE_API_KEY: t.keys.admin });
    expect((await client.listTools()).tools.map((x) => x.name).sort()).toEqual(['execute', 'search']);
    expect((await search(client, 'list user feedback')).results[0].operationId).toBe('feedback.list');
    const r = await execute(client, `await api.feedback.create({ message: 'from stdio' }); return await api.feedback.list({ limit: 5 });`);
    expect(r.error).toBeNull();
    expect(r.result).toEqual((await api(t, 'GET', `${P}/feedback?limit=5`, { key: t.keys.admin })).body);
    const denied = await execute(client, `return await api.call('apiKeys.list', {})`);
    expect(denied.error).toMatchObject({ status: 404, code: 'unknown_operation' });
  });

  it('proxies each call over REST when SIGHTLINE_URL is set', async () => {
    const reader = t.mintKey(['read']);
    const { client } = await spawnMcp({ SIGHTLINE_URL: t.url, SIGHTLINE_API_KEY: reader, SIGHTLINE_DB: '/nonexistent/never-opened.db' });
    const r = await execute(
      client,
      `const list = await api.deployments.list({ limit: 5 });
       try { await api.deployments.create({ deployment_id: 'x' }); } catch (e) { return { list, status: e.status, code: e.code }; }`,
    );
    expect(r.error).toBeNull();
    expect(r.result.list).toEqual((await api(t, 'GET', `${P}/deployments?limit=5`, { key: reader })).body);
    expect(r.result).toMatchObject({ status: 403, code: 'insufficient_scope' });
    const hit = (await search(client, 'record a deployment')).results[0];
    expect(hit.operationId).toBe('deployments.create');
    expect(hit).not.toHaveProperty('missing_scopes'); // a proxy cannot tell which scopes the key holds
  });

  it('exits with a message on stderr when the key is not valid', async () => {
    const transport = new StdioClientTransport({
      command: process.execPath,
      args: [BIN, 'mcp'],
      env: { ...(process.env as Record<string, string>), SIGHTLINE_URL: '', SIGHTLINE_DB: t.dbFile, SIGHTLINE_API_KEY: 'sl_wrong' },
      stderr: 'pipe',
    });
    let err = '';
    transport.stderr?.on('data', (d) => (err += String(d)));
    const client = new Client({ name: 'stdio-test', version: '1.0.0' });
    await expect(client.connect(transport)).rejects.toThrow();
    await client.close().catch(() => {});
    expect(err).toContain('SIGHTLINE_API_KEY is not a valid key');
  });
});
