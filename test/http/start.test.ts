/**
 * Smoke tests of the real entry points: `npm start` (node bin/sightline.mjs start) on an empty
 * database prints working keys, and the README's curl example works against it; `init --json`
 * prints one JSON object for scripts.
 */
import { spawn, type ChildProcess } from 'node:child_process';
import { mkdtempSync, rmSync } from 'node:fs';
import net from 'node:net';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { fileURLToPath } from 'node:url';
import { afterAll, describe, expect, it } from 'vitest';

const root = fileURLToPath(new URL('../..', import.meta.url));
const dirs: string[] = [];
const children: ChildProcess[] = [];

afterAll(() => {
  for (const c of children) if (c.exitCode === null && c.signalCode === null) c.kill('SIGKILL');
  for (const d of dirs) rmSync(d, { recursive: true, force: true });
});

function tempDb(): string {
  const dir = mkdtempSync(join(tmpdir(), 'sightline-start-'));
  dirs.push(dir);
  return join(dir, 'sightline.db');
}

async function freePort(): Promise<number> {
  const srv = net.createServer();
  await new Promise<void>((r) => srv.listen(0, '127.0.0.1', r));
  const port = (srv.address() as net.AddressInfo).port;
  await new Promise<void>((r) => srv.close(() => r()));
  return port;
}

function childEnv(extra: Record<string, string>): NodeJS.ProcessEnv {
  const env: NodeJS.ProcessEnv = { ...process.env, LOG_LEVEL: 'error', ...extra };
  for (const k of ['SIGHTLINE_BASE_URL', 'SIGHTLINE_MCP_URL', 'SIGHTLINE_INGEST_URL', 'SIGHTLINE_INGEST_PORT', 'NODE_OPTIONS']) delete env[k];
  return env;
}

/** Resolve with stdout once `pattern` has appeared in it; reject if the process exits first. */
function waitForOutput(child: ChildProcess, pattern: RegExp, timeoutMs = 25_000): Promise<string> {
  return new Promise((resolve, reject) => {
    let out = '';
    let err = '';
    const timer = setTimeout(() => reject(new Error(`timed out waiting for ${pattern}; stdout: ${out}; stderr: ${err}`)), timeoutMs);
    child.stdout!.on('data', (d) => {
      out += d;
      if (pattern.test(out)) {
        clearTimeout(timer);
        resolve(out);
      }
    });
    child.stderr!.on('data', (d) => (err += d));
    child.once('exit', (code) => {
      clearTimeout(timer);
      reject(new Error(`exited with ${code} before ${pattern}; stdout: ${out}; stderr: ${err}`));
    });
  });
}

describe('npm start', () => {
  it('starts on an empty database, prints the keys, and serves the README curl example', async () => {
    const port = await freePort();
    const child = spawn(process.execPath, ['bin/sightline.mjs', 'start'], {
      cwd: root,
      env: childEnv({ PORT: String(port), SIGHTLINE_DB: tempDb() }),
      stdio: ['ignore', 'pipe', 'pipe'],
    });
    children.push(child);
    const out = await waitForOutput(child, /admin key\s+\S+/);
    const key = /admin key\s+(\S+)/.exec(out)![1]!;
    const ingest = /ingest key\s+(\S+)/.exec(out)![1]!;
    const projectId = /project\s+(\d+)/.exec(out)![1]!;
    const url = `http://127.0.0.1:${port}`;
    expect(out).toContain(`http://localhost:${port}`);
    // README: curl -X POST -H "x-service-key: $KEY" -H 'content-type: application/json' $URL/v1/projects/1/feedback -d '{"message":"..."}'
    expect(projectId).toBe('1');
    const created = await fetch(`${url}/v1/projects/1/feedback`, {
      method: 'POST',
      headers: { 'x-service-key': key, 'content-type': 'application/json' },
      body: JSON.stringify({ message: 'It works from curl' }),
    });
    expect(created.status).toBe(201);
    const { id } = (await created.json()) as { id: string };
    const listed = await fetch(`${url}/v1/projects/1/feedback`, { headers: { 'x-service-key': key } });
    expect(listed.status).toBe(200);
    const body = (await listed.json()) as { data: { id: string; message: string }[] };
    expect(body.data).toEqual([expect.objectContaining({ id, message: 'It works from curl' })]);
    // The ingest key can send feedback but not read it.
    const viaIngest = await fetch(`${url}/v1/projects/1/feedback`, {
      method: 'POST',
      headers: { authorization: `Bearer ${ingest}`, 'content-type': 'application/json' },
      body: JSON.stringify({ message: 'from the widget' }),
    });
    expect(viaIngest.status).toBe(201);
    expect((await fetch(`${url}/v1/projects/1/feedback`, { headers: { 'x-service-key': ingest } })).status).toBe(403);

    const exited = new Promise<number | null>((r) => child.once('exit', (code) => r(code)));
    child.kill('SIGTERM');
    expect(await exited).toBe(0);
  });
});

describe('sightline init --json', () => {
  it('prints exactly one JSON object with the new organization, project, keys, owner and base URL', async () => {
    const child = spawn(process.execPath, ['bin/sightline.mjs', 'init', '--json', '--org', 'X', '--project', 'Y', '--email', 'e@x.io'], {
      cwd: root,
      env: childEnv({ SIGHTLINE_DB: tempDb(), PORT: '8931' }),
      stdio: ['ignore', 'pipe', 'pipe'],
    });
    children.push(child);
    let out = '';
    let err = '';
    child.stdout!.on('data', (d) => (out += d));
    child.stderr!.on('data', (d) => (err += d));
    const code = await new Promise<number | null>((r) => child.once('exit', (c) => r(c)));
    expect(code, err).toBe(0);
    const lines = out.trim().split('\n');
    expect(lines).toHaveLength(1);
    const r = JSON.parse(lines[0]!);
    expect(Object.keys(r).sort()).toEqual(['admin_key', 'base_url', 'ingest_key', 'organization_id', 'owner_email', 'owner_password', 'project_id'].sort());
    expect(r).toMatchObject({
      organization_id: expect.any(String),
      project_id: expect.stringMatching(/^\d+$/),
      ingest_key: expect.stringMatching(/^sl_/),
      admin_key: expect.stringMatching(/^sl_/),
      owner_email: 'e@x.io',
      owner_password: expect.any(String),
      base_url: 'http://localhost:8931',
    });
    expect(r.ingest_key).not.toBe(r.admin_key);
  });
});
