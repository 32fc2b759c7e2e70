/**
 * Every script in examples/ runs as it is (a child process with only its documented env vars)
 * against a running server, and its effect is checked through the TypeScript client.
 */
import { spawn } from 'node:child_process';
import { fileURLToPath } from 'node:url';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { startTestServer, type TestServer } from './helpers/server.js';
import { createClient, type SightlineClient } from '../src/client/index.js';

const ROOT = fileURLToPath(new URL('..', import.meta.url));

function runExample(args: string[], env: Record<string, string>): Promise<{ code: number; stdout: string; stderr: string }> {
  return new Promise((resolve, reject) => {
    const child = spawn(process.execPath, args, { cwd: ROOT, env: { PATH: process.env.PATH, HOME: process.env.HOME, ...env } });
    let stdout = '';
    let stderr = '';
    child.stdout.setEncoding('utf8').on('data', (d: string) => (stdout += d));
    child.stderr.setEncoding('utf8').on('data', (d: string) => (stderr += d));
    child.on('error', reject);
    child.on('close', (code) => resolve({ code: code ?? -1, stdout, stderr }));
  });
}

let t: TestServer;
let client: SightlineClient;

beforeAll(async () => {
  t = await startTestServer();
  client = createClient({ baseUrl: t.url, apiKey: t.keys.admin });
});
afterAll(() => t.close());

describe('examples/', () => {
  it('query-with-client.ts records a deployment and a feedback record with the client', async () => {
    const r = await runExample(['--import', 'tsx', 'examples/query-with-client.ts'], {
      SIGHTLINE_URL: t.url,
      SIGHTLINE_API_KEY: t.keys.admin,
      EXAMPLE_DEPLOYMENT_ID: 'example-run-1',
      EXAMPLE_FEEDBACK: 'Example feedback from the client script',
    });
    expect(r.stderr).toBe('');
    expect(r.code).toBe(0);
    expect(r.stdout).toContain('as expected: 404 not_found');
    const deployments = await client.deployments.list({ service: 'example-api' });
    expect(deployments.data.map((d) => d.deployment_id)).toEqual(['example-run-1']);
    const feedback = await client.feedback.list({ q: 'Example feedback from the client script' });
    expect(feedback.data).toHaveLength(1);
    expect(feedback.data[0]!.contact_email).toBe('ana@example.com');
  });

  it('send-errors-sentry.mjs sends errors with @sentry/node that become error groups', async () => {
    const dsn = `http://${t.keys.ingest}@${new URL(t.url).host}/ingest/${t.projectId}`;
    const r = await runExample(['examples/send-errors-sentry.mjs'], { SIGHTLINE_DSN: dsn });
    expect(r.code, r.stderr).toBe(0);
    expect(r.stdout).toContain('sent');
    const groups = await client.errors.list({ status: ['all'], environment: 'example' });
    const declined = groups.data.find((g) => g.type === 'PaymentDeclinedError');
    expect(declined, JSON.stringify(groups.data)).toBeDefined();
    expect(declined!.event_count).toBe(2);
    expect(groups.data.some((g) => g.title.startsWith('Example: inventory sync is lagging'))).toBe(true);
  });

  it('send-otel.mjs sends traces, logs and metrics with the OpenTelemetry SDK', async () => {
    const r = await runExample(['examples/send-otel.mjs'], { SIGHTLINE_INGEST_URL: `${t.url}/ingest`, SIGHTLINE_INGEST_KEY: t.keys.ingest });
    expect(r.code, r.stderr).toBe(0);
    const traceId = /sent trace ([0-9a-f]{32})/.exec(r.stdout)?.[1];
    expect(traceId).toBeDefined();
    // traces.list is called by id so this test reads whatever the traces operation returns.
    const traces = await client.request('traces.list', { service_name: 'example-checkout' });
    expect(JSON.stringify(traces)).toContain('POST /checkout');
    const groups = await client.errors.list({ status: ['all'], service: 'example-checkout' });
    expect(groups.data.length).toBeGreaterThan(0);
  });

  it('mcp-session.mjs searches the catalogue, then executes code that calls the API', async () => {
    await client.deployments.create({ deployment_id: 'mcp-example', service: 'mcp-svc', version: '7.7.7' });
    const r = await runExample(['examples/mcp-session.mjs'], { SIGHTLINE_URL: t.url, SIGHTLINE_API_KEY: t.keys.admin });
    expect(r.code, r.stderr).toBe(0);
    expect(r.stdout).toMatch(/^tools: .*\bsearch\b.*\bexecute\b/m);
    expect(r.stdout).toContain('deployments.list');
    expect(r.stdout).toContain('mcp-svc@7.7.7');
  });
});
