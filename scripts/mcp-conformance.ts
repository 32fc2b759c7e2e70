/**
 * MCP conformance: runs `@modelcontextprotocol/conformance` server scenarios against a real
 * Sightline (`sightline init --json` on a temp database, then `sightline start`).
 *
 *   npx tsx scripts/mcp-conformance.ts [scenario ...]        (or scripts/mcp-conformance.sh)
 *
 * The conformance CLI (0.1.13) takes only `--url`: it cannot send a credential, and /mcp requires
 * one on every request. So the script puts a small forwarding proxy on localhost that adds the admin
 * key (`x-service-key`) and passes every other header through unchanged — Host and Origin included,
 * so `dns-rebinding-protection` still exercises the server's own Origin check. The server's base URL
 * is the proxy's address (the public URL clients use), so its origin is the allowed one.
 *
 * Scenarios that need tools or features Code Mode does not have (test_* tools, prompts, resources,
 * logging, completion, elicitation, sampling) do not apply and are not run by default.
 * Not part of `npm test`.
 */
import { spawn, spawnSync, type ChildProcess } from 'node:child_process';
import http from 'node:http';
import type { AddressInfo } from 'node:net';
import { mkdtempSync, readFileSync, readdirSync, rmSync, statSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { fileURLToPath } from 'node:url';

const ROOT = fileURLToPath(new URL('..', import.meta.url));
const BIN = join(ROOT, 'bin', 'sightline.mjs');
// server-sse-polling needs the suite's own `test_reconnection` tool; pass it by name to see its (inapplicable) result.
const DEFAULT_SCENARIOS = ['server-initialize', 'ping', 'tools-list', 'dns-rebinding-protection', 'server-sse-multiple-streams'];

async function freePort(): Promise<number> {
  const srv = http.createServer();
  await new Promise<void>((r) => srv.listen(0, '127.0.0.1', r));
  const port = (srv.address() as AddressInfo).port;
  await new Promise<void>((r) => srv.close(() => r()));
  return port;
}

async function waitFor(url: string, ms: number): Promise<void> {
  const until = Date.now() + ms;
  while (Date.now() < until) {
    try {
      const res = await fetch(url);
      if (res.ok) return;
    } catch {
      /* not up yet */
    }
    await new Promise((r) => setTimeout(r, 200));
  }
  throw new Error(`${url} did not come up within ${ms} ms`);
}

function proxy(targetPort: number, key: string): http.Server {
  return http.createServer((req, res) => {
    const headers = { ...req.headers };
    if (!headers['x-service-key'] && !headers.authorization) headers['x-service-key'] = key;
    const up = http.request({ host: '127.0.0.1', port: targetPort, method: req.method, path: req.url, headers }, (r) => {
      res.writeHead(r.statusCode ?? 502, r.headers);
      r.pipe(res);
    });
    up.on('error', () => {
      if (!res.headersSent) res.writeHead(502);
      res.end();
    });
    req.pipe(up);
    res.on('close', () => up.destroy());
  });
}

function runAsync(cmd: string, args: string[], timeoutMs: number): Promise<{ status: number | null; stdout: string; stderr: string }> {
  return new Promise((resolve) => {
    const child = spawn(cmd, args, { cwd: ROOT, stdio: ['ignore', 'pipe', 'pipe'] });
    let stdout = '';
    let stderr = '';
    child.stdout.on('data', (d) => (stdout += String(d)));
    child.stderr.on('data', (d) => (stderr += String(d)));
    const timer = setTimeout(() => child.kill('SIGTERM'), timeoutMs);
    child.on('close', (status) => {
      clearTimeout(timer);
      resolve({ status, stdout, stderr });
    });
  });
}

interface Check {
  id: string;
  status: string;
  description?: string;
  errorMessage?: string;
}

function readChecks(dir: string): Check[] {
  const out: Check[] = [];
  const walk = (d: string) => {
    for (const f of readdirSync(d)) {
      const p = join(d, f);
      if (statSync(p).isDirectory()) walk(p);
      else if (f.endsWith('.json')) {
        try {
          const v = JSON.parse(readFileSync(p, 'utf8'));
          const list = Array.isArray(v) ? v : Array.isArray(v?.checks) ? v.checks : [];
          for (const c of list) if (c && typeof c.id === 'string' && typeof c.status === 'string') out.push(c);
        } catch {
          /* not a checks file */
        }
      }
    }
  };
  walk(dir);
  return out;
}

async function main(): Promise<number> {
  const scenarios = process.argv.slice(2).length ? process.argv.slice(2) : DEFAULT_SCENARIOS;
  const dir = mkdtempSync(join(tmpdir(), 'sightline-conformance-'));
  const serverPort = await freePort();
  const proxyPort = await freePort();
  const publicUrl = `http://localhost:${proxyPort}`;
  const env = { ...process.env, SIGHTLINE_DB: join(dir, 'conformance.db'), PORT: String(serverPort), HOST: '127.0.0.1', SIGHTLINE_BASE_URL: publicUrl, LOG_LEVEL: 'warn' };

  const init = spawnSync(process.execPath, [BIN, 'init', '--json'], { env, encoding: 'utf8' });
  if (init.status !== 0) throw new Error(`sightline init failed: ${init.stderr}`);
  const keys = JSON.parse(init.stdout.trim().split('\n').pop()!) as { admin_key: string; project_id: string };

  let server: ChildProcess | null = spawn(process.execPath, [BIN, 'start'], { env, stdio: ['ignore', 'ignore', 'inherit'] });
  const front = proxy(serverPort, keys.admin_key);
  try {
    await waitFor(`http://127.0.0.1:${serverPort}/`, 30_000);
    await new Promise<void>((r) => front.listen(proxyPort, 'localhost', r));
    console.log(`Sightline on 127.0.0.1:${serverPort}; conformance client → ${publicUrl}/mcp (proxy adds the admin key)\n`);

    const rows: Array<{ scenario: string; checks: Check[]; code: number | null }> = [];
    for (const scenario of scenarios) {
      const outDir = join(dir, 'results', scenario);
      // Asynchronous: the proxy lives in this process and must keep serving while the client runs.
      const run = await runAsync('npx', ['--no-install', 'conformance', 'server', '--url', `${publicUrl}/mcp`, '--scenario', scenario, '-o', outDir], 120_000);
      let checks: Check[] = [];
      try {
        checks = readChecks(outDir);
      } catch {
        /* no output dir */
      }
      if (!checks.length) process.stdout.write(run.stdout + run.stderr);
      rows.push({ scenario, checks, code: run.status });
    }

    console.log('| scenario | check | status | note |');
    console.log('|---|---|---|---|');
    let failures = 0;
    for (const r of rows) {
      const shown = r.checks.filter((c) => c.status !== 'INFO');
      if (!shown.length) {
        failures++;
        console.log(`| ${r.scenario} | (no checks recorded, exit ${r.code}) | ERROR | |`);
      }
      for (const c of shown) {
        if (c.status === 'FAILURE') failures++;
        console.log(`| ${r.scenario} | ${c.id} | ${c.status} | ${(c.errorMessage ?? '').replace(/\|/g, '/').slice(0, 160)} |`);
      }
    }
    const total = rows.reduce((n, r) => n + r.checks.filter((c) => c.status !== 'INFO').length, 0);
    console.log(`\n${total - failures}/${total} checks without failure across ${rows.length} scenarios.`);
    return failures ? 1 : 0;
  } finally {
    await new Promise<void>((r) => front.close(() => r()));
    front.closeAllConnections();
    if (server) {
      server.kill('SIGTERM');
      server = null;
    }
    rmSync(dir, { recursive: true, force: true });
  }
}

process.exitCode = await main();
